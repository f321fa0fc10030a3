// BackendType::Auto, the default: the result of CUDA where tk_cuda_device_usable() finds a
// GPU, else of CPU (bit for bit); an explicit CUDA without a usable GPU throws.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "itkBatchedEigenvaluesImageFilter.h"
#include "itkVectorImage.h"
#include "tk_device.h"

namespace {

using Image = itk::VectorImage<double, 3>;
using Filter = itk::BatchedEigenvaluesImageFilter<Image>;

Image::Pointer random_matrices(unsigned n)
{
    auto image = Image::New();
    Image::SizeType size = {{6, 5, 4}};
    image->SetRegions(size);
    image->SetNumberOfComponentsPerPixel(n * n);
    image->Allocate();
    std::mt19937_64 rng(9);
    std::normal_distribution<double> g(0, 1);
    double *p = image->GetBufferPointer();
    for (size_t i = 0; i < 120u * n * n; ++i) p[i] = g(rng);
    return image;
}

std::vector<double> values(const Image *image)
{
    const size_t n = image->GetBufferedRegion().GetNumberOfPixels() * image->GetNumberOfComponentsPerPixel();
    return std::vector<double>(image->GetBufferPointer(), image->GetBufferPointer() + n);
}

}  // namespace

TEST(BatchedEigenvaluesAutoBackend, DefaultRunsOnCudaWhereUsableElseOnTheCpu)
{
    auto image = random_matrices(4);
    auto automatic = Filter::New();
    EXPECT_EQ(automatic->GetBackend(), Filter::BackendType::Auto);
    automatic->SetInput(image);
    automatic->Update();
    char reason[256] = "";
    const bool gpu = tk_cuda_device_usable(0, reason, sizeof reason);
    auto forced = Filter::New();
    forced->SetInput(image);
    forced->SetBackend(gpu ? Filter::BackendType::CUDA : Filter::BackendType::CPU);
    forced->Update();
    EXPECT_EQ(values(automatic->GetOutput()), values(forced->GetOutput())) << (gpu ? "CUDA" : reason);
    if (!gpu) {
        auto cuda = Filter::New();
        cuda->SetInput(image);
        cuda->SetBackend(Filter::BackendType::CUDA);
        EXPECT_THROW(cuda->Update(), itk::ExceptionObject);
    }
}
