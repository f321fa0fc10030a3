// BackendType::Auto, the default: the result of CUDA where tk_cuda_device_usable() finds a
// GPU, else of CPU (bit for bit); an explicit CUDA without a usable GPU throws.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "itkFiberDirectionsImageFilter.h"
#include "tkAutoBackendTestUtil.h"

namespace {

using SHImage = itk::VectorImage<float, 3>;
using Filter = itk::FiberDirectionsImageFilter<>;

SHImage::Pointer random_sh()
{
    auto image = SHImage::New();
    SHImage::SizeType size = {{5, 4, 3}};
    image->SetRegions(size);
    image->SetNumberOfComponentsPerPixel(15);
    image->Allocate();
    std::mt19937 rng(5);
    std::normal_distribution<float> g(0, 1);
    float *p = image->GetBufferPointer();
    for (size_t v = 0; v < 60; ++v)
        for (size_t c = 0; c < 15; ++c) p[v * 15 + c] = c == 0 ? 2 + std::abs(g(rng)) : g(rng);
    return image;
}

std::vector<char> bytes(const SHImage *image)
{
    const size_t n = image->GetBufferedRegion().GetNumberOfPixels() * image->GetNumberOfComponentsPerPixel();
    const char *p = reinterpret_cast<const char *>(image->GetBufferPointer());
    return std::vector<char>(p, p + n * sizeof(float));
}

}  // namespace

TEST(FiberDirectionsAutoBackend, DefaultRunsOnCudaWhereUsableElseOnTheCpu)
{
    tk_test::expect_auto_backend_as_resolved<Filter>(
        random_sh().GetPointer(), tk_test::DefaultSettings(),
        [](const Filter::Pointer &f) {  // bytes: NaN marks missing peaks
            std::vector<char> out = bytes(f->GetOutput()), amplitudes = bytes(f->GetAmplitudeOutput());
            out.insert(out.end(), amplitudes.begin(), amplitudes.end());
            return out;
        },
        Filter::BackendType::CPU);
}
