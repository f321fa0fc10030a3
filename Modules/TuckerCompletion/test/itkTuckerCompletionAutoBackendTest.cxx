// BackendType::Auto, the default: the result of CUDA where tk_cuda_device_usable() finds a
// GPU, else of CPU (bit for bit); an explicit CUDA without a usable GPU throws.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "itkImage.h"
#include "itkTuckerCompletionImageFilter.h"
#include "tk_device.h"

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

std::vector<float> voxels(const Image *image)
{
    return std::vector<float>(image->GetBufferPointer(),
                              image->GetBufferPointer() + image->GetBufferedRegion().GetNumberOfPixels());
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
    auto automatic = completion(image);
    EXPECT_EQ(automatic->GetBackend(), Filter::BackendType::Auto);
    automatic->Update();
    char reason[256] = "";
    const bool gpu = tk_cuda_device_usable(0, reason, sizeof reason);
    auto forced = completion(image);
    forced->SetBackend(gpu ? Filter::BackendType::CUDA : Filter::BackendType::CPU);
    forced->Update();
    EXPECT_EQ(voxels(automatic->GetOutput()), voxels(forced->GetOutput())) << (gpu ? "CUDA" : reason);
    if (!gpu) {
        auto cuda = completion(image);
        cuda->SetBackend(Filter::BackendType::CUDA);
        EXPECT_THROW(cuda->Update(), itk::ExceptionObject);
    }
}
