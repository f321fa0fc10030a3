// The check every filter's Auto backend test makes: BackendType::Auto, the default, gives
// the result of CUDA where tk_cuda_device_usable() finds a GPU, else of the filter's CPU
// backend; an explicit CUDA without a usable GPU throws.
#pragma once

#include <gtest/gtest.h>

#include <vector>

#include "itkMacro.h"
#include "itkTensorKernelsEnums.h"
#include "tk_device.h"

namespace tk_test {

// The whole buffer of an image (every component of every pixel), to compare by value.
template <typename Image> std::vector<typename Image::InternalPixelType> buffer_values(const Image *image)
{
    const auto *p = image->GetBufferPointer();
    return std::vector<typename Image::InternalPixelType>(p, p + image->GetPixelContainer()->Size());
}

// make(): a fresh filter, inputs and settings given, backend left alone; outputs(filter):
// what must agree after Update (anything ==-comparable); without_gpu: the backend Auto
// must equal on a machine without a usable GPU.
template <typename MakeFilter, typename Outputs>
void expect_auto_backend_as_resolved(const MakeFilter &make, const Outputs &outputs,
                                     itk::TensorKernelsEnums::Backend without_gpu)
{
    using Backend = itk::TensorKernelsEnums::Backend;
    auto automatic = make();
    EXPECT_EQ(automatic->GetBackend(), Backend::Auto);
    automatic->Update();
    char reason[256] = "";
    const bool gpu = tk_cuda_device_usable(0, reason, sizeof reason);
    auto forced = make();
    forced->SetBackend(gpu ? Backend::CUDA : without_gpu);
    forced->Update();
    EXPECT_TRUE(outputs(automatic) == outputs(forced)) << (gpu ? "CUDA" : reason);
    if (!gpu) {
        auto cuda = make();
        cuda->SetBackend(Backend::CUDA);
        EXPECT_THROW(cuda->Update(), itk::ExceptionObject);
    }
}

}  // namespace tk_test
