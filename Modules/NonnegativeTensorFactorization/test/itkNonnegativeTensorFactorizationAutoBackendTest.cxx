// BackendType::Auto, the default: the result of CUDA where tk_cuda_device_usable() finds a
// GPU, else of OpenMP (bit for bit); an explicit CUDA without a usable GPU throws.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "itkImage.h"
#include "itkNonnegativeTensorFactorizationImageFilter.h"
#include "tk_device.h"

namespace {

using Image = itk::Image<float, 3>;
using Filter = itk::NonnegativeTensorFactorizationImageFilter<Image>;

Image::Pointer random_counts()
{
    auto image = Image::New();
    Image::SizeType size = {{7, 6, 5}};
    image->SetRegions(size);
    image->Allocate();
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> u(0, 4);
    for (size_t i = 0; i < 210; ++i) image->GetBufferPointer()[i] = u(rng);
    return image;
}

std::vector<float> voxels(const Image *image)
{
    return std::vector<float>(image->GetBufferPointer(),
                              image->GetBufferPointer() + image->GetBufferedRegion().GetNumberOfPixels());
}

Filter::Pointer fit(const Image *image)
{
    auto f = Filter::New();
    f->SetInput(image);
    f->SetRank(2);
    f->SetNumberOfIterations(10);
    return f;
}

}  // namespace

TEST(NonnegativeTensorFactorizationAutoBackend, DefaultRunsOnCudaWhereUsableElseOnOpenMP)
{
    auto image = random_counts();
    auto automatic = fit(image);
    EXPECT_EQ(automatic->GetBackend(), Filter::BackendType::Auto);
    automatic->Update();
    char reason[256] = "";
    const bool gpu = tk_cuda_device_usable(0, reason, sizeof reason);
    auto forced = fit(image);
    forced->SetBackend(gpu ? Filter::BackendType::CUDA : Filter::BackendType::OpenMP);
    forced->Update();
    EXPECT_EQ(voxels(automatic->GetOutput()), voxels(forced->GetOutput())) << (gpu ? "CUDA" : reason);
    EXPECT_EQ(automatic->GetDivergenceHistory(), forced->GetDivergenceHistory());
    if (!gpu) {
        auto cuda = fit(image);
        cuda->SetBackend(Filter::BackendType::CUDA);
        EXPECT_THROW(cuda->Update(), itk::ExceptionObject);
    }
}
