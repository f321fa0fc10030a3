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
    tk_test::expect_auto_backend_as_resolved<Filter>(random_matrices(4).GetPointer(), tk_test::DefaultSettings(),
                                                     tk_test::MainOutputValues(), Filter::BackendType::CPU);
}
