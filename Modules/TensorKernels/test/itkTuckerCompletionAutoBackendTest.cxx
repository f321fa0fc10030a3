// BackendType::Auto, the default: the result of CUDA where tk_cuda_device_usable() finds a
// GPU, else of CPU (bit for bit); an explicit CUDA without a usable GPU throws.
#include <gtest/gtest.h>

#include <random>

#include "itkImage.h"
#include "itkTuckerCompletionImageFilter.h"
#include "tkAutoBackendTestUtil.h"

namespace {

using Image = itk::Image<float, 3>;
using Filter = itk::TuckerCompletionImageFilter<Image>;

Image::Pointer random_image()
{
    auto image = Image::New();
    Image::SizeType size = {{9, 8, 7}};
    image->SetRegions(size);
    image->Allocate();
    std::mt19937 rng(4);
    std::uniform_real_distribution<float> u(1, 2);
    for (size_t i = 0; i < 504; ++i) image->GetBufferPointer()[i] = u(rng);
    return image;
}


Filter::Pointer completion(const Image *image)
{
    auto f = Filter::New();
    f->SetInput(image);
    f->SetRankJ(4);
    f->SetRankR(4);
    f->SetNumberOfIterations(5);
    f->SetSeed(2);
    return f;
}

}  // namespace

TEST(TuckerCompletionAutoBackend, DefaultRunsOnCudaWhereUsableElseOnTheCpu)
{
    auto image = random_image();
    tk_test::expect_auto_backend_as_resolved(
        [&] { return completion(image); },
        [](const Filter::Pointer &f) { return tk_test::buffer_values(f->GetOutput()); }, Filter::BackendType::CPU);
}
