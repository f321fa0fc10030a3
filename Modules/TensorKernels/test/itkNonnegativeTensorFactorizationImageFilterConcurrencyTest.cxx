// Two itk::NonnegativeTensorFactorizationImageFilter pipelines updated at once on two
// threads of one process give bit for bit what they give one after the other, on the cpu
// and the OpenMP backend (whose BLAS thread count is process-wide): on different inputs
// (KL PARAFAC; masked Euclidean Tucker-3) and on two copies of one input.
#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <string>

#include "itkNonnegativeTensorFactorizationImageFilter.h"
#include "tkPipelineTestUtil.h"

namespace {

using ImageType = itk::Image<float, 3>;
using Filter = itk::NonnegativeTensorFactorizationImageFilter<ImageType>;

struct Input {
    ImageType::Pointer image;
    Filter::MaskImageType::Pointer mask; // may be null
    std::string model, latent;
    Filter::DivergenceType divergence = Filter::DivergenceType::KL;
};

Input make_input(const ImageType::SizeType &size, uint64_t seed, bool with_mask)
{
    Input in;
    in.image = ImageType::New();
    in.image->SetRegions(ImageType::RegionType(size));
    in.image->Allocate();
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(0.2, 2.0);
    float *p = in.image->GetBufferPointer();
    const size_t voxels = in.image->GetPixelContainer()->Size();
    for (size_t v = 0; v < voxels; ++v) p[v] = (float)u(rng);
    if (with_mask) {
        in.mask = Filter::MaskImageType::New();
        in.mask->SetRegions(in.image->GetLargestPossibleRegion());
        in.mask->Allocate();
        unsigned char *m = in.mask->GetBufferPointer();
        for (size_t v = 0; v < voxels; ++v) m[v] = v % 6 != 0;
    }
    return in;
}

std::function<tk_test::FilterOutput()> pipeline(const Input &in, Filter::BackendType backend)
{
    auto f = Filter::New();
    f->SetInput(in.image);
    if (in.mask) f->SetMaskImage(in.mask);
    f->SetModel(in.model);
    f->SetLatentSizes(in.latent);
    f->SetRank(4);
    f->SetDivergence(in.divergence);
    f->SetNumberOfIterations(30);
    f->SetSeed(5);
    return tk_test::pipeline_of(f, backend, 3, [](Filter &g, tk_test::FilterOutput &out) {
        for (unsigned n = 0; n < g.GetNumberOfFactors(); ++n)
            out.values.insert(out.values.end(), g.GetFactor(n).begin(), g.GetFactor(n).end());
        const auto &trace = g.GetDivergenceHistory();
        out.values.insert(out.values.end(), trace.begin(), trace.end());
    });
}

} // namespace

TEST(NonnegativeTensorFactorizationImageFilterConcurrency, TwoPipelinesOnDifferentInputs)
{
    Input in[2] = {make_input({{24, 20, 16}}, 1, false), make_input({{20, 18, 22}}, 2, true)};
    in[1].model = "ijk=ip,jq,kr,pqr";
    in[1].latent = "p=3,q=4,r=2";
    in[1].divergence = Filter::DivergenceType::Euclidean;
    for (auto backend : {Filter::BackendType::CPU, Filter::BackendType::OpenMP})
        tk_test::expect_pipelines_concurrent_equal_sequential([&](int i) { return pipeline(in[i], backend); });
}

TEST(NonnegativeTensorFactorizationImageFilterConcurrency, TwoPipelinesOnCopiesOfOneInput)
{
    Input a = make_input({{22, 19, 17}}, 3, true), b = a;
    b.image = tk_test::deep_copy<ImageType>(a.image);
    b.mask = tk_test::deep_copy<Filter::MaskImageType>(a.mask);
    const Input in[2] = {a, b};
    for (auto backend : {Filter::BackendType::CPU, Filter::BackendType::OpenMP})
        tk_test::expect_pipelines_concurrent_equal_sequential([&](int i) { return pipeline(in[i], backend); });
}
