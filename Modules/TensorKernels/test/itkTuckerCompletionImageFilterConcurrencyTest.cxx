// Two itk::TuckerCompletionImageFilter pipelines updated at once on two threads of one
// process, each fitting with several work units (OpenMP threads), give bit for bit what
// they give one after the other: on different inputs (another size, mask and ranks) and on
// two copies of one input.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

#include "itkTuckerCompletionImageFilter.h"
#include "tkPipelineTestUtil.h"

namespace {

using ImageType = itk::Image<float, 3>;
using Filter = itk::TuckerCompletionImageFilter<ImageType>;

struct Input {
    ImageType::Pointer image;
    Filter::MaskImageType::Pointer mask;
    unsigned rank = 6;
};

// A smooth image around 1000 with a few percent of noise, a fifth of its voxels masked out.
Input make_input(const ImageType::SizeType &size, unsigned rank, uint64_t seed)
{
    Input in;
    in.rank = rank;
    in.image = ImageType::New();
    in.image->SetRegions(ImageType::RegionType(size));
    in.image->Allocate();
    in.mask = Filter::MaskImageType::New();
    in.mask->SetRegions(in.image->GetLargestPossibleRegion());
    in.mask->Allocate();
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(0, 1);
    float *p = in.image->GetBufferPointer();
    unsigned char *m = in.mask->GetBufferPointer();
    size_t v = 0;
    for (unsigned z = 0; z < size[2]; ++z)
        for (unsigned y = 0; y < size[1]; ++y)
            for (unsigned x = 0; x < size[0]; ++x, ++v) {
                p[v] = (float)(1000 + 150 * std::sin(0.3 * x + seed) * std::cos(0.2 * y) + 80 * std::cos(0.25 * z) +
                               20 * (u(rng) - 0.5));
                m[v] = u(rng) < 0.8;
            }
    return in;
}

std::function<tk_test::FilterOutput()> pipeline(const Input &in)
{
    auto f = Filter::New();
    f->SetInput(in.image);
    f->SetMaskImage(in.mask);
    f->SetRankJ(in.rank);
    f->SetRankR(in.rank);
    f->SetNumberOfIterations(25);
    f->SetSeed(7);
    return tk_test::pipeline_of(f, Filter::BackendType::CPU, 3, [](Filter &g, tk_test::FilterOutput &out) {
        out.values.push_back(g.GetTrainingRMSE());
        out.values.push_back((double)g.GetNumberOfObservedVoxels());
    });
}

} // namespace

TEST(TuckerCompletionImageFilterConcurrency, TwoPipelinesOnDifferentInputs)
{
    const Input in[2] = {make_input({{30, 24, 18}}, 6, 1), make_input({{22, 26, 20}}, 8, 2)};
    tk_test::expect_pipelines_concurrent_equal_sequential([&](int i) { return pipeline(in[i]); });
}

TEST(TuckerCompletionImageFilterConcurrency, TwoPipelinesOnCopiesOfOneInput)
{
    const Input a = make_input({{28, 20, 16}}, 6, 3);
    Input b = a;
    b.image = tk_test::deep_copy<ImageType>(a.image);
    b.mask = tk_test::deep_copy<Filter::MaskImageType>(a.mask);
    const Input in[2] = {a, b};
    tk_test::expect_pipelines_concurrent_equal_sequential([&](int i) { return pipeline(in[i]); });
}
