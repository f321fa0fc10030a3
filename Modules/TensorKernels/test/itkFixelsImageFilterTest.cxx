// itk::FixelsImageFilter: fixels of lobes of known axes and weights (their directions, peak
// amplitudes and the integral of the whole nonnegative FOD), the core's own numbers passed
// through unchanged, masks, non-finite voxels, streaming, the RAS frame of the DIPY basis,
// -dirpeak and -maxnum, the dense direction set, Auto staying on the CPU, Backend CUDA (the
// CPU's fixels on a GPU; an error without one), and bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "itkFixelsImageFilter.h"
#include "itkStreamingImageFilter.h"
#include "tk_device.h"
#include "tk_fixels.h"
#include "tkSHImageTestUtil.h"

namespace {

using SHImage = tk_test::SHImage;
using Filter = itk::FixelsImageFilter<>;
const double kPi = 3.14159265358979323846;

using tk_test::sh_image;
using tk_test::two_fibers;
const double *const kV = tk_test::kFiberV, *const kW = tk_test::kFiberW;

double abs_cos(const SHImage::PixelType &p, unsigned f, const double *axis)
{
    return std::fabs(p[3 * f] * axis[0] + p[3 * f + 1] * axis[1] + p[3 * f + 2] * axis[2]);
}

bool same_images(SHImage *a, SHImage *b)
{
    const size_t n = a->GetPixelContainer()->Size();
    if (n != b->GetPixelContainer()->Size()) return false;
    for (size_t i = 0; i < n; ++i) {
        const float x = a->GetBufferPointer()[i], y = b->GetBufferPointer()[i];
        if (!(x == y || (std::isnan(x) && std::isnan(y)))) return false;
    }
    return true;
}

}  // namespace

TEST(FixelsImageFilter, KnownLobesAndTheCoresNumbers)
{
    const auto c = two_fibers(TK_SH_TOURNIER, kV, kW);
    auto image = sh_image(c);
    auto filter = Filter::New();
    filter->SetInput(image);
    filter->Update();
    ASSERT_EQ(filter->GetOutput()->GetNumberOfComponentsPerPixel(), 12u);
    ASSERT_EQ(filter->GetAFDOutput()->GetNumberOfComponentsPerPixel(), 4u);
    const itk::Index<3> at{{3, 2, 1}};
    auto dirs = filter->GetOutput()->GetPixel(at);
    auto afd = filter->GetAFDOutput()->GetPixel(at);
    auto amp = filter->GetPeakAmplitudeOutput()->GetPixel(at);
    ASSERT_EQ(filter->GetFixelCountOutput()->GetPixel(at)[0], 2.f);
    // the larger lobe first: its axis, peak 1 (the other term vanishes there), the second 0.5
    EXPECT_GT(abs_cos(dirs, 0, kV), std::cos(1.0 * kPi / 180));
    EXPECT_GT(abs_cos(dirs, 1, kW), std::cos(1.0 * kPi / 180));
    EXPECT_NEAR(amp[0], 1.0, 1e-4);
    EXPECT_NEAR(amp[1], 0.5, 1e-4);
    // a nonnegative FOD: its two lobes hold all of it, the sphere's integral sqrt(4 pi) c00
    const double total = std::sqrt(4 * kPi) * static_cast<float>(c[0]);
    EXPECT_NEAR(afd[0] + afd[1], total, 1e-4 * total);
    // equal shapes, weights 1 and 0.5; the lobes meet where both are positive and the
    // larger, grown first, takes the border: a few percent over the weights' ratio
    EXPECT_GT(afd[0] / afd[1], 2.0);
    EXPECT_LT(afd[0] / afd[1], 2.15);
    EXPECT_TRUE(std::isnan(afd[2]) && std::isnan(amp[3]) && std::isnan(dirs[6]));
    // the core's own numbers for the same coefficients, unchanged
    tk_fixels_options o;
    tk_fixels_options_init(&o, 8);
    o.max_fixels = 4;
    tk_fixels_plan *plan = nullptr;
    ASSERT_EQ(tk_fixels_plan_create(&o, &plan), TK_OK) << tk_last_error();
    std::vector<float> sh(c.begin(), c.end()), a(4), p(4), m(12);
    uint8_t n = 0;
    tk_fixels_output out{&n, a.data(), p.data(), m.data(), nullptr, nullptr, 0, 0};
    ASSERT_EQ(tk_fixels_plan_execute(plan, 1, sh.data(), nullptr, &out, nullptr), TK_OK);
    tk_fixels_plan_destroy(plan);
    ASSERT_EQ(n, 2);
    for (int f = 0; f < 2; ++f) {
        EXPECT_EQ(afd[f], a[f]);
        EXPECT_EQ(amp[f], p[f]);
        for (int i = 0; i < 3; ++i) EXPECT_EQ(dirs[3 * f + i], m[3 * f + i]);
    }
}

TEST(FixelsImageFilter, MaskInvalidVoxelsAndStreaming)
{
    auto image = sh_image(two_fibers(TK_SH_TOURNIER, kV, kW));
    SHImage::PixelType bad = image->GetPixel({{2, 0, 0}});
    bad[5] = NAN;
    image->SetPixel({{2, 0, 0}}, bad);
    auto mask = Filter::MaskImageType::New();
    mask->SetRegions(image->GetLargestPossibleRegion());
    mask->Allocate();
    mask->FillBuffer(1);
    mask->SetPixel({{1, 1, 1}}, 0);
    auto whole = Filter::New();
    whole->SetInput(image);
    whole->SetMaskImage(mask);
    whole->Update();
    EXPECT_EQ(whole->GetNumberOfInvalidVoxels(), 1u);
    EXPECT_EQ(whole->GetFixelCountOutput()->GetPixel({{1, 1, 1}})[0], 0.f);
    EXPECT_EQ(whole->GetFixelCountOutput()->GetPixel({{2, 0, 0}})[0], 0.f);
    EXPECT_TRUE(std::isnan(whole->GetAFDOutput()->GetPixel({{1, 1, 1}})[0]));
    EXPECT_EQ(whole->GetFixelCountOutput()->GetPixel({{0, 0, 0}})[0], 2.f);
    // three stream divisions: every output as the whole request's
    auto filter = Filter::New();
    filter->SetInput(image);
    filter->SetMaskImage(mask);
    for (unsigned o = 0; o < 4; ++o) {
        auto streamer = itk::StreamingImageFilter<SHImage, SHImage>::New();
        streamer->SetInput(o == 0 ? filter->GetOutput() : o == 1 ? filter->GetAFDOutput()
                                                : o == 2 ? filter->GetPeakAmplitudeOutput()
                                                         : filter->GetFixelCountOutput());
        streamer->SetNumberOfStreamDivisions(3);
        streamer->Update();
        SHImage *want = o == 0 ? whole->GetOutput() : o == 1 ? whole->GetAFDOutput()
                                                : o == 2 ? whole->GetPeakAmplitudeOutput()
                                                         : whole->GetFixelCountOutput();
        EXPECT_TRUE(same_images(streamer->GetOutput(), want)) << "output " << o;
    }
}

TEST(FixelsImageFilter, DipyBasisIsRotatedToWorldRas)
{
    auto image = sh_image(two_fibers(TK_SH_DESCOTEAUX, kV, kW));
    const SHImage::DirectionType d = tk_test::turn_90_about_z(image.GetPointer());  // LPS: 90 degrees about z
    auto filter = Filter::New();
    filter->SetInput(image);
    filter->SetBasis(Filter::BasisType::Descoteaux);
    filter->UsePeakDirectionOn();
    filter->Update();
    auto p = filter->GetOutput()->GetPixel({{0, 0, 0}});
    double expect[3];  // RAS = diag(-1,-1,1) * LPS direction * voxel vector
    for (int r = 0; r < 3; ++r) expect[r] = (r < 2 ? -1 : 1) * (d[r][0] * kV[0] + d[r][1] * kV[1] + d[r][2] * kV[2]);
    EXPECT_GT(abs_cos(p, 0, expect), 1 - 1e-8);
}

TEST(FixelsImageFilter, PeakDirectionMaxnumAndDenseSet)
{
    auto image = sh_image(two_fibers(TK_SH_TOURNIER, kV, kW));
    auto filter = Filter::New();
    filter->SetInput(image);
    filter->UsePeakDirectionOn();
    filter->SetMaximumNumberOfFixels(1);
    filter->Update();
    ASSERT_EQ(filter->GetOutput()->GetNumberOfComponentsPerPixel(), 3u);
    auto p = filter->GetOutput()->GetPixel({{0, 1, 0}});
    EXPECT_GT(abs_cos(p, 0, kV), 1 - 1e-8);  // the exact peak
    EXPECT_EQ(filter->GetFixelCountOutput()->GetPixel({{0, 1, 0}})[0], 1.f);
    auto coarse = Filter::New(), dense = Filter::New();
    coarse->SetInput(image), dense->SetInput(image);
    dense->SetNumberOfDirections(TK_FIXELS_DIRECTIONS_DENSE);
    coarse->Update(), dense->Update();
    EXPECT_TRUE(same_images(coarse->GetFixelCountOutput(), dense->GetFixelCountOutput()));
    // the same whole integral; the border between the lobes moves by a few samples (~0.4%)
    const auto a = coarse->GetAFDOutput()->GetPixel({{0, 0, 0}}), b = dense->GetAFDOutput()->GetPixel({{0, 0, 0}});
    EXPECT_NEAR(a[0] + a[1], b[0] + b[1], 1e-4 * (a[0] + a[1]));
    EXPECT_NEAR(a[0], b[0], 0.01 * a[0]);
    EXPECT_NEAR(a[1], b[1], 0.02 * a[1]);
}

TEST(FixelsImageFilter, AutoStaysOnTheCpu)
{
    // until the fixels' CUDA backend has run on a GPU, Auto is the CPU's run bit for bit
    // (on a GPU machine too: the CUDA backend's FMA contractions would differ in ulps)
    auto image = sh_image(two_fibers(TK_SH_TOURNIER, kV, kW));
    auto autof = Filter::New(), cpu = Filter::New();
    autof->SetInput(image), cpu->SetInput(image);
    cpu->SetBackend(Filter::BackendType::CPU);
    autof->Update(), cpu->Update();
    EXPECT_TRUE(same_images(autof->GetAFDOutput(), cpu->GetAFDOutput()));
    EXPECT_TRUE(same_images(autof->GetOutput(), cpu->GetOutput()));
}

TEST(FixelsImageFilter, RejectsBadInputAndSettings)
{
    for (int c = 0; c < 2; ++c) {
        auto filter = Filter::New();
        filter->SetInput(sh_image({1.0}, c == 0 ? 44 : 45));
        if (c == 1) filter->SetNumberOfDirections(2000);
        try {
            filter->Update();
            FAIL() << "expected an exception";
        } catch (const itk::ExceptionObject &e) {
            const std::string what = e.GetDescription();
            EXPECT_NE(what.find(c == 0 ? "44 components" : "NumberOfDirections is 2000"), std::string::npos) << what;
        }
    }
}

TEST(FixelsImageFilter, CudaGivesTheCpusFixels)
{
    auto image = sh_image(two_fibers(TK_SH_TOURNIER, kV, kW));
    SHImage::PixelType other = image->GetPixel({{1, 2, 0}});
    for (unsigned c = 1; c < 45; ++c) other[c] *= -0.5f;  // another FOD in one voxel
    image->SetPixel({{1, 2, 0}}, other);
    auto cuda = Filter::New(), cpu = Filter::New();
    cuda->SetInput(image), cpu->SetInput(image);
    cuda->SetBackend(Filter::BackendType::CUDA);
    cpu->SetBackend(Filter::BackendType::CPU);
    char reason[256] = "";
    if (!tk_cuda_device_usable(0, reason, sizeof reason)) {
        EXPECT_THROW(cuda->Update(), itk::ExceptionObject);
        GTEST_SKIP() << "SKIPPED: no usable CUDA GPU (" << reason << ")";
    }
    cuda->Update(), cpu->Update();
    EXPECT_TRUE(same_images(cuda->GetFixelCountOutput(), cpu->GetFixelCountOutput()));
    const size_t n = cpu->GetAFDOutput()->GetPixelContainer()->Size();
    for (size_t i = 0; i < n; ++i) {
        const float a = cuda->GetAFDOutput()->GetBufferPointer()[i], b = cpu->GetAFDOutput()->GetBufferPointer()[i];
        if (std::isnan(b)) {
            EXPECT_TRUE(std::isnan(a)) << i;
        } else {
            EXPECT_NEAR(a, b, 1e-5 * b) << i;
        }
    }
}
