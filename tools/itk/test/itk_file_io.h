// Writing and reading a whole ITK image file in one call, for the CLI tests.
#pragma once

#include <string>

#include "itkImageFileReader.h"
#include "itkImageFileWriter.h"

namespace tk_test {

template <typename TImage> void write(const TImage *image, const std::string &path)
{
    auto w = itk::ImageFileWriter<TImage>::New();
    w->SetInput(image);
    w->SetFileName(path);
    w->Update();
}

template <typename TImage> typename TImage::Pointer read(const std::string &path)
{
    auto r = itk::ImageFileReader<TImage>::New();
    r->SetFileName(path);
    r->Update();
    return r->GetOutput();
}

}  // namespace tk_test
