// Two itk::FiberDirectionsImageFilter pipelines updated at once on two threads of one
// process, each split over several work units, give bit for bit what they give one after
// the other: on different inputs (another order, basis, mask and frame) and on two copies
// of one input.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "concurrency_test_util.h"
#include "itkFiberDirectionsImageFilter.h"
#include "tkPipelineTestUtil.h"

namespace {

using SHImage = itk::VectorImage<float, 3>;
using Filter = itk::FiberDirectionsImageFilter<>;

struct Input {
    SHImage::Pointer image;
    Filter::MaskImageType::Pointer mask; // may be null
    Filter::BasisType basis = Filter::BasisType::Tournier;
};

// The FOD-like voxels of the core's concurrency tests (a few sums of fibers, each voxel one
// of them plus its own noise, one voxel not finite), on a 14 x 11 x 9 grid.  The filter
// reads the coefficients in the basis the input names: any SH function serves the check.
Input make_input(int lmax, tk_sh_basis basis, uint64_t seed, bool with_mask, bool rotated)
{
    SHImage::RegionType region;
    region.SetSize({{14, 11, 9}});
    const tk_test::FibersInput fod = tk_test::fibers_input(TK_BACKEND_CPU, lmax, region.GetNumberOfPixels(), seed, with_mask);
    Input in;
    in.basis = basis == TK_SH_TOURNIER ? Filter::BasisType::Tournier : Filter::BasisType::Descoteaux;
    in.image = SHImage::New();
    in.image->SetRegions(region);
    in.image->SetNumberOfComponentsPerPixel((unsigned)tk_sh_num_coeffs(lmax));
    in.image->Allocate();
    if (rotated) {
        SHImage::DirectionType d;
        d.Fill(0);
        d[0][1] = -1, d[1][0] = 1, d[2][2] = 1;
        in.image->SetDirection(d);
    }
    std::copy(fod.sh.begin(), fod.sh.end(), in.image->GetBufferPointer());
    if (with_mask) {
        in.mask = Filter::MaskImageType::New();
        in.mask->SetRegions(region);
        in.mask->SetDirection(in.image->GetDirection()); // the SH image's frame
        in.mask->Allocate();
        std::copy(fod.mask.begin(), fod.mask.end(), in.mask->GetBufferPointer());
    }
    return in;
}

Input copy_of(const Input &in)
{
    Input c = in;
    c.image = tk_test::deep_copy<SHImage>(in.image);
    c.mask = tk_test::deep_copy<Filter::MaskImageType>(in.mask);
    return c;
}

// A pipeline of one input, split over several work units: both outputs and the invalid-voxel count.
std::function<tk_test::FilterOutput()> pipeline(const Input &in)
{
    auto f = Filter::New();
    f->SetInput(in.image);
    if (in.mask) f->SetMaskImage(in.mask);
    f->SetBasis(in.basis);
    f->SetNumberOfPeaks(3);
    return tk_test::pipeline_of(f, Filter::BackendType::CPU, 6, [](Filter &g, tk_test::FilterOutput &out) {
        tk_test::append_buffer(out, g.GetAmplitudeOutput());
        out.values.push_back((double)g.GetNumberOfInvalidVoxels());
    });
}

} // namespace

TEST(FiberDirectionsImageFilterConcurrency, TwoPipelinesOnDifferentInputs)
{
    const Input in[2] = {make_input(8, TK_SH_TOURNIER, 1, true, false), make_input(6, TK_SH_DESCOTEAUX, 2, false, true)};
    tk_test::expect_pipelines_concurrent_equal_sequential([&](int i) { return pipeline(in[i]); });
}

TEST(FiberDirectionsImageFilterConcurrency, TwoPipelinesOnCopiesOfOneInput)
{
    const Input a = make_input(8, TK_SH_TOURNIER, 3, true, true);
    const Input in[2] = {a, copy_of(a)};
    tk_test::expect_pipelines_concurrent_equal_sequential([&](int i) { return pipeline(in[i]); });
}
