// itk::FiberDirectionsImageFilter: peaks against tk_fibers_all_maxima, sh2peaks's layout,
// masks, streaming, the RAS frame of the DIPY basis, and bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "itkFiberDirectionsImageFilter.h"
#include "itkStreamingImageFilter.h"
#include "tk_device.h"
#include "tk_fibers.h"
#include "tkSHImageTestUtil.h"

namespace {

using SHImage = tk_test::SHImage;
using Filter = itk::FiberDirectionsImageFilter<>;

using tk_test::sh_image;
using tk_test::two_fibers;
const double *const kV = tk_test::kFiberV, *const kW = tk_test::kFiberW;

}  // namespace

TEST(FiberDirectionsImageFilter, WritesSh2peaksLayout)
{
    auto image = sh_image(two_fibers(TK_SH_TOURNIER, kV, kW));
    auto filter = Filter::New();
    filter->SetInput(image);
    filter->SetNumberOfPeaks(3);
    filter->Update();
    auto out = filter->GetOutput();
    auto amps = filter->GetAmplitudeOutput();
    ASSERT_EQ(out->GetNumberOfComponentsPerPixel(), 9u);
    ASSERT_EQ(amps->GetNumberOfComponentsPerPixel(), 3u);
    EXPECT_EQ(out->GetLargestPossibleRegion(), image->GetLargestPossibleRegion());
    auto p = out->GetPixel({{3, 2, 1}});
    auto a = amps->GetPixel({{3, 2, 1}});
    // direction times amplitude, as sh2peaks writes it; amplitudes 1 and 0.5 (the lobes are orthogonal)
    EXPECT_NEAR(a[0], 1.0, 1e-4);
    EXPECT_NEAR(a[1], 0.5, 1e-4);
    for (int i = 0; i < 3; ++i) EXPECT_NEAR(p[i], kV[i] * a[0], 1e-4);
    for (int i = 0; i < 3; ++i) EXPECT_NEAR(p[3 + i], kW[i] * a[1], 1e-4);
    EXPECT_TRUE(std::isnan(p[6]) && std::isnan(a[2]));
}

TEST(FiberDirectionsImageFilter, DipyBasisIsRotatedToWorldRas)
{
    // DIPY's SH live in voxel axes: with a direction matrix the peaks turn with the image.
    auto image = sh_image(two_fibers(TK_SH_DESCOTEAUX, kV, kW));
    const SHImage::DirectionType d = tk_test::turn_90_about_z(image.GetPointer());  // LPS: 90 degrees about z
    auto filter = Filter::New();
    filter->SetInput(image);
    filter->SetBasis(Filter::BasisType::Descoteaux);
    filter->Update();
    auto p = filter->GetOutput()->GetPixel({{0, 0, 0}});
    // RAS = diag(-1,-1,1) * LPS direction * voxel vector
    double expect[3];
    for (int r = 0; r < 3; ++r) expect[r] = (r < 2 ? -1 : 1) * (d[r][0] * kV[0] + d[r][1] * kV[1] + d[r][2] * kV[2]);
    double sign = (p[0] * expect[0] + p[1] * expect[1] + p[2] * expect[2]) < 0 ? -1 : 1;
    for (int i = 0; i < 3; ++i) EXPECT_NEAR(p[i], sign * expect[i], 1e-4);
    // MRtrix3's basis is already in world coordinates: the same direction matrix changes nothing.
    auto image2 = sh_image(two_fibers(TK_SH_TOURNIER, kV, kW));
    image2->SetDirection(d);
    auto f2 = Filter::New();
    f2->SetInput(image2);
    f2->Update();
    auto q = f2->GetOutput()->GetPixel({{0, 0, 0}});
    for (int i = 0; i < 3; ++i) EXPECT_NEAR(q[i], kV[i], 1e-4);
}

TEST(FiberDirectionsImageFilter, MaskAndStreaming)
{
    auto image = sh_image(two_fibers(TK_SH_TOURNIER, kV, kW));
    auto mask = Filter::MaskImageType::New();
    mask->SetRegions(image->GetLargestPossibleRegion());
    mask->Allocate();
    mask->FillBuffer(1);
    mask->SetPixel({{1, 1, 1}}, 0);
    auto filter = Filter::New();
    filter->SetInput(image);
    filter->SetMaskImage(mask);
    auto streamer = itk::StreamingImageFilter<SHImage, SHImage>::New();
    streamer->SetInput(filter->GetOutput());
    streamer->SetNumberOfStreamDivisions(3);
    streamer->Update();
    auto out = streamer->GetOutput();
    EXPECT_TRUE(std::isnan(out->GetPixel({{1, 1, 1}})[0]));
    EXPECT_NEAR(out->GetPixel({{2, 2, 1}})[2], 0.8, 1e-4);
}

TEST(FiberDirectionsImageFilter, RejectsANonShComponentCount)
{
    auto image = sh_image({}, 44);
    auto filter = Filter::New();
    filter->SetInput(image);
    try {
        filter->Update();
        FAIL() << "expected an exception";
    } catch (const itk::ExceptionObject &e) {
        EXPECT_NE(std::string(e.GetDescription()).find("44 components"), std::string::npos) << e.GetDescription();
    }
}

namespace {

// A volume whose every voxel differs: random coefficients about a positive mean.
SHImage::Pointer random_image(unsigned nx, unsigned ny, unsigned nz)
{
    auto image = SHImage::New();
    SHImage::RegionType region;
    region.SetSize({{nx, ny, nz}});
    image->SetRegions(region);
    image->SetNumberOfComponentsPerPixel(45);
    image->Allocate();
    std::mt19937 rng(3);
    std::normal_distribution<float> g(0.f, 0.3f);
    float *data = image->GetBufferPointer();
    const size_t voxels = region.GetNumberOfPixels();
    for (size_t v = 0; v < voxels; ++v)
        for (unsigned j = 0; j < 45; ++j) data[v * 45 + j] = j ? g(rng) : 1.f + std::fabs(g(rng));
    return image;
}

// The peaks of `image` on `backend` over `devices` GPUs (the filter's setting), as raw floats.
std::vector<float> peaks_of(SHImage *image, Filter::BackendType backend, unsigned devices)
{
    auto filter = Filter::New();
    filter->SetInput(image);
    filter->SetBackend(backend);
    filter->SetNumberOfCudaDevices(devices);
    filter->Update();
    const auto *out = filter->GetOutput();
    const size_t n = out->GetLargestPossibleRegion().GetNumberOfPixels() * out->GetNumberOfComponentsPerPixel();
    return std::vector<float>(out->GetBufferPointer(), out->GetBufferPointer() + n);
}

}  // namespace

// One GPU unless told (a library must not take every GPU); the count is ignored on the CPU;
// on CUDA every visible GPU (0) gives one GPU's peaks bit for bit.
TEST(FiberDirectionsImageFilter, CudaDevicesAreOneByDefaultAndSplitExactly)
{
    auto defaults = Filter::New();
    EXPECT_EQ(defaults->GetCudaDevice(), 0u);
    EXPECT_EQ(defaults->GetNumberOfCudaDevices(), 1u);
    auto image = random_image(17, 13, 11);
    const auto cpu = peaks_of(image, Filter::BackendType::CPU, 1);
    const auto cpu_four = peaks_of(image, Filter::BackendType::CPU, 4);
    EXPECT_EQ(std::memcmp(cpu.data(), cpu_four.data(), cpu.size() * sizeof(float)), 0);
    if (!tk_cuda_device_usable(0, nullptr, 0)) {
        std::printf("no usable GPU here: the CUDA half of this test did not run\n");
        return;
    }
    const auto one = peaks_of(image, Filter::BackendType::CUDA, 1);
    const auto all = peaks_of(image, Filter::BackendType::CUDA, 0);
    ASSERT_EQ(one.size(), all.size());
    EXPECT_EQ(std::memcmp(one.data(), all.data(), one.size() * sizeof(float)), 0)
        << tk_cuda_device_count() << " GPUs against one";
}
