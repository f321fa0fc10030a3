// Two itk::FiberDirectionsImageFilter pipelines updated at once on two threads of one
// process, each split over several work units, give bit for bit what they give one after
// the other: on different inputs (another order, basis, mask and frame) and on two copies
// of one input.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "itkFiberDirectionsImageFilter.h"
#include "tk_itk_concurrency_test_util.h"
#include "tk_sh_test_util.h"

namespace {

using SHImage = itk::VectorImage<float, 3>;
using Filter = itk::FiberDirectionsImageFilter<>;

struct Input {
    SHImage::Pointer image;
    Filter::MaskImageType::Pointer mask; // may be null
    Filter::BasisType basis = Filter::BasisType::Tournier;
};

// FOD-like voxels: a few sums of fibers, each voxel one of them plus its own noise.
Input make_input(int lmax, tk_sh_basis basis, uint64_t seed, bool with_mask, bool rotated)
{
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> uni(0, 1);
    std::normal_distribution<double> g(0, 1);
    std::vector<std::vector<double>> bases;
    for (int b = 0; b < 5; ++b) {
        std::vector<std::vector<double>> dirs;
        std::vector<double> w;
        for (int f = 0; f < 1 + b % 3; ++f) {
            std::vector<double> v = {g(rng), g(rng), g(rng)};
            const double n = std::sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
            for (auto &c : v) c /= n;
            dirs.push_back(v), w.push_back(0.3 + uni(rng));
        }
        bases.push_back(tk_test::sh_of_fibers(lmax, basis, 0, dirs, w));
    }
    Input in;
    in.basis = basis == TK_SH_TOURNIER ? Filter::BasisType::Tournier : Filter::BasisType::Descoteaux;
    in.image = SHImage::New();
    SHImage::RegionType region;
    region.SetSize({{14, 11, 9}});
    in.image->SetRegions(region);
    const unsigned k = (unsigned)tk_sh_num_coeffs(lmax);
    in.image->SetNumberOfComponentsPerPixel(k);
    in.image->Allocate();
    if (rotated) {
        SHImage::DirectionType d;
        d.Fill(0);
        d[0][1] = -1, d[1][0] = 1, d[2][2] = 1;
        in.image->SetDirection(d);
    }
    float *buf = in.image->GetBufferPointer();
    const size_t voxels = region.GetNumberOfPixels();
    for (size_t v = 0; v < voxels; ++v)
        for (unsigned c = 0; c < k; ++c) buf[v * k + c] = (float)(bases[v % bases.size()][c] + 0.02 * (uni(rng) - 0.5));
    buf[7 * k + 2] = NAN; // an invalid voxel, counted
    if (with_mask) {
        in.mask = Filter::MaskImageType::New();
        in.mask->SetRegions(region);
        in.mask->SetDirection(in.image->GetDirection()); // the SH image's frame
        in.mask->Allocate();
        unsigned char *m = in.mask->GetBufferPointer();
        for (size_t v = 0; v < voxels; ++v) m[v] = uni(rng) < 0.85;
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
    f->SetBackend(Filter::BackendType::CPU);
    f->SetNumberOfWorkUnits(6);
    return [f] {
        return tk_test::update_and_collect(f, [&f](tk_test::FilterOutput &out) {
            tk_test::append_buffer(out, f->GetOutput());
            tk_test::append_buffer(out, f->GetAmplitudeOutput());
            out.values.push_back((double)f->GetNumberOfInvalidVoxels());
        });
    };
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
