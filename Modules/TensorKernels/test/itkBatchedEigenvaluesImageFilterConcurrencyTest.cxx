// Two itk::BatchedEigenvaluesImageFilter pipelines updated at once on two threads of one
// process, each split over several work units, give bit for bit what they give one after
// the other: on different inputs (other orders, a non-finite pixel) and on two copies of
// one input.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

#include "itkBatchedEigenvaluesImageFilter.h"
#include "itkVectorImage.h"
#include "tkPipelineTestUtil.h"

namespace {

using MatrixImage = itk::VectorImage<double, 3>;
using Filter = itk::BatchedEigenvaluesImageFilter<MatrixImage>;

MatrixImage::Pointer random_matrices(unsigned n, uint64_t seed)
{
    auto image = MatrixImage::New();
    image->SetRegions(MatrixImage::RegionType(MatrixImage::SizeType{{23, 17, 11}}));
    image->SetNumberOfComponentsPerPixel(n * n);
    image->Allocate();
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> g(0, 1);
    double *p = image->GetBufferPointer();
    const size_t count = image->GetPixelContainer()->Size();
    for (size_t i = 0; i < count; ++i) p[i] = g(rng);
    p[5 * n * n + 1] = NAN; // one failing pixel, counted
    return image;
}

std::function<tk_test::FilterOutput()> pipeline(const MatrixImage::Pointer &image, bool balance)
{
    auto f = Filter::New();
    f->SetInput(image);
    f->SetBalance(balance);
    return tk_test::pipeline_of(f, Filter::BackendType::CPU, 7, [](Filter &g, tk_test::FilterOutput &out) {
        out.values.push_back((double)g.GetNumberOfFailedPixels());
    });
}

} // namespace

TEST(BatchedEigenvaluesImageFilterConcurrency, TwoPipelinesOnDifferentInputs)
{
    const MatrixImage::Pointer in[2] = {random_matrices(5, 1), random_matrices(9, 2)};
    tk_test::expect_pipelines_concurrent_equal_sequential([&](int i) { return pipeline(in[i], i == 0); });
}

TEST(BatchedEigenvaluesImageFilterConcurrency, TwoPipelinesOnCopiesOfOneInput)
{
    const auto a = random_matrices(6, 3);
    const MatrixImage::Pointer in[2] = {a, tk_test::deep_copy<MatrixImage>(a)};
    tk_test::expect_pipelines_concurrent_equal_sequential([&](int i) { return pipeline(in[i], true); });
}
