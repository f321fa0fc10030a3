// BackendType::Auto, the default: the result of CUDA where tk_cuda_device_usable() finds a
// GPU, else of CPU (bit for bit); an explicit CUDA without a usable GPU throws.
#include <gtest/gtest.h>

#include <random>

#include "itkBatchedEigenvaluesImageFilter.h"
#include "itkVectorImage.h"
#include "tkAutoBackendTestUtil.h"

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


}  // namespace

TEST(BatchedEigenvaluesAutoBackend, DefaultRunsOnCudaWhereUsableElseOnTheCpu)
{
    auto image = random_matrices(4);
    tk_test::expect_auto_backend_as_resolved(
        [&] {
            auto f = Filter::New();
            f->SetInput(image);
            return f;
        },
        [](const Filter::Pointer &f) { return tk_test::buffer_values(f->GetOutput()); }, Filter::BackendType::CPU);
}
