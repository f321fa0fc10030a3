// itk::TuckerCompletionImageFilter: fills masked voxels of low-rank 3-D and 4-D images
// (known FastTucker models), keeps observed values on request, and rejects bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "itkTuckerCompletionImageFilter.h"
#include "tk_tucker.h"

namespace {

// A low-rank image: a random FastTucker model on the grid, mapped to intensities
// around 1000 so the filter's standardization is exercised.
template <unsigned D>
typename itk::Image<float, D>::Pointer low_rank_image(const std::vector<uint32_t> &size, int rank, uint64_t seed)
{
    tk_tucker_model m;
    EXPECT_EQ(tk_tucker_model_alloc(&m, (int)D, size.data(), rank, rank), TK_OK);
    tk_tucker_model_init(&m, seed, 0);
    size_t voxels = 1;
    for (auto s : size) voxels *= s;
    std::vector<float> dense(voxels);
    EXPECT_EQ(tk_tucker_predict_dense(&m, dense.data()), TK_OK);
    tk_tucker_model_free(&m);
    auto image = itk::Image<float, D>::New();
    typename itk::Image<float, D>::RegionType region;
    typename itk::Image<float, D>::SizeType sz;
    for (unsigned n = 0; n < D; ++n) sz[n] = size[n];
    region.SetSize(sz);
    image->SetRegions(region);
    image->Allocate();
    float *buf = image->GetBufferPointer();
    for (size_t v = 0; v < voxels; ++v) buf[v] = 1000.0f + 200.0f * dense[v];
    return image;
}

template <unsigned D>
typename itk::Image<unsigned char, D>::Pointer mask_like(const itk::Image<float, D> *image)
{
    auto mask = itk::Image<unsigned char, D>::New();
    mask->SetRegions(image->GetLargestPossibleRegion());
    mask->Allocate();
    mask->FillBuffer(1);
    return mask;
}

double stddev(const float *x, size_t n)
{
    double m = 0, s = 0;
    for (size_t k = 0; k < n; ++k) m += x[k];
    m /= (double)n;
    for (size_t k = 0; k < n; ++k) s += (x[k] - m) * (x[k] - m);
    return std::sqrt(s / (double)n);
}

}  // namespace

TEST(TuckerCompletionImageFilter, Fills3DVoxelsMissingAtRandom)
{
    auto image = low_rank_image<3>({20, 18, 16}, 4, 3);
    auto mask = mask_like<3>(image.GetPointer());
    const size_t voxels = 20 * 18 * 16;
    std::mt19937 rng(5);
    unsigned char *mb = mask->GetBufferPointer();
    for (size_t v = 0; v < voxels; ++v) mb[v] = rng() % 2;  // half the voxels observed
    auto filter = itk::TuckerCompletionImageFilter<itk::Image<float, 3>>::New();
    filter->SetInput(image);
    filter->SetMaskImage(mask);
    filter->SetNumberOfIterations(300);  // defaults otherwise: ranks 8 over the true 4
    filter->Update();
    const float *in = image->GetBufferPointer(), *out = filter->GetOutput()->GetBufferPointer();
    double sse = 0;
    size_t missing = 0;
    for (size_t v = 0; v < voxels; ++v)
        if (!mb[v]) sse += (out[v] - in[v]) * (out[v] - in[v]), ++missing;
    const double spread = stddev(in, voxels);
    EXPECT_LT(std::sqrt(sse / (double)missing), 0.1 * spread) << "intensity spread " << spread;
    EXPECT_EQ(filter->GetNumberOfObservedVoxels(), voxels - missing);
    EXPECT_LT(filter->GetTrainingRMSE(), 0.1 * spread);
}

TEST(TuckerCompletionImageFilter, Fills4DDroppedSlicesAndKeepsObservedValues)
{
    const std::vector<uint32_t> size = {12, 12, 8, 10};  // x, y, z, volume (a DWI series)
    auto image = low_rank_image<4>(size, 4, 8);
    auto mask = mask_like<4>(image.GetPointer());
    using Index = itk::Image<unsigned char, 4>::IndexType;
    // Slice z = 3 dropped in volume 2, slice z = 5 in volume 7 (motion-corrupted slices).
    for (auto [z, t] : {std::pair<int, int>{3, 2}, {5, 7}})
        for (int y = 0; y < 12; ++y)
            for (int x = 0; x < 12; ++x) mask->SetPixel(Index{{x, y, z, t}}, 0);
    // Garbage in the dropped slices must not matter.
    image->SetPixel(Index{{1, 1, 3, 2}}, NAN);
    auto filter = itk::TuckerCompletionImageFilter<itk::Image<float, 4>>::New();
    filter->SetInput(image);
    filter->SetMaskImage(mask);
    filter->SetNumberOfIterations(400);  // defaults otherwise: ranks 8 over the true 4
    filter->KeepObservedValuesOn();
    filter->Update();
    auto truth = low_rank_image<4>(size, 4, 8);  // the same image without the NaN
    const float *in = image->GetBufferPointer(), *out = filter->GetOutput()->GetBufferPointer(),
                *tr = truth->GetBufferPointer();
    const unsigned char *mb = mask->GetBufferPointer();
    const size_t voxels = 12 * 12 * 8 * 10;
    double sse = 0;
    size_t dropped = 0;
    for (size_t v = 0; v < voxels; ++v) {
        if (mb[v]) {
            ASSERT_EQ(out[v], in[v]) << v;
        } else {
            ASSERT_TRUE(std::isfinite(out[v]));
            sse += (out[v] - tr[v]) * (out[v] - tr[v]), ++dropped;
        }
    }
    ASSERT_EQ(dropped, 2u * 144u);
    EXPECT_LT(std::sqrt(sse / (double)dropped), 0.1 * stddev(tr, voxels));
}

TEST(TuckerCompletionImageFilter, RejectsBadInput)
{
    auto image = low_rank_image<3>({6, 5, 4}, 4, 1);
    auto filter = itk::TuckerCompletionImageFilter<itk::Image<float, 3>>::New();
    filter->SetInput(image);
    auto empty = mask_like<3>(image.GetPointer());
    empty->FillBuffer(0);
    filter->SetMaskImage(empty);
    EXPECT_THROW(filter->Update(), itk::ExceptionObject);
    auto small = itk::Image<unsigned char, 3>::New();
    itk::Image<unsigned char, 3>::RegionType region;
    region.SetSize({{6, 5, 3}});
    small->SetRegions(region);
    small->Allocate();
    small->FillBuffer(1);
    filter->SetMaskImage(small);
    EXPECT_THROW(filter->Update(), itk::ExceptionObject);
    auto full = mask_like<3>(image.GetPointer());
    filter->SetMaskImage(full);
    image->SetPixel({{2, 2, 2}}, NAN);
    image->Modified();
    try {
        filter->Update();
        FAIL() << "a NaN in an observed voxel was accepted";
    } catch (const itk::ExceptionObject &e) {
        EXPECT_NE(std::string(e.GetDescription()).find("not finite"), std::string::npos) << e.GetDescription();
    }
}
