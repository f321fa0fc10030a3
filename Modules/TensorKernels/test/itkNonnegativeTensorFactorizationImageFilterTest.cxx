// itk::NonnegativeTensorFactorizationImageFilter: reconstruction of low-rank images
// against a brute-force einsum of the returned factors, the axis order, masks (never
// read, filled in), custom models and bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "itkNonnegativeTensorFactorizationImageFilter.h"
#include "pltf_test_util.h"

namespace {

template <unsigned D>
typename itk::Image<float, D>::Pointer make_image(const std::vector<size_t> &c_shape, const std::vector<double> &values)
{
    using ImageType = itk::Image<float, D>;
    auto image = ImageType::New();
    typename ImageType::RegionType region;
    typename ImageType::SizeType size;
    for (unsigned d = 0; d < D; ++d) size[d] = c_shape[D - 1 - d];  // C order: last axis is x
    region.SetSize(size);
    image->SetRegions(region);
    image->Allocate();
    float *buffer = image->GetBufferPointer();
    for (size_t i = 0; i < values.size(); ++i) buffer[i] = static_cast<float>(values[i]);
    return image;
}

template <typename Filter>
std::vector<std::vector<double>> factors_of(const Filter *f)
{
    std::vector<std::vector<double>> out;
    for (unsigned n = 0; n < f->GetNumberOfFactors(); ++n) out.push_back(f->GetFactor(n));
    return out;
}

}  // namespace

TEST(NonnegativeTensorFactorizationImageFilter, Parafac3DReconstructsLowRankImage)
{
    tk_pltf_model m = tk_test::pltf_model("parafac", "i=5,j=6,k=7,a=2");
    auto x = tk_test::brute_force_einsum(m, tk_test::random_factors(m, 4));
    auto image = make_image<3>({5, 6, 7}, x);
    using Filter = itk::NonnegativeTensorFactorizationImageFilter<itk::Image<float, 3>>;
    auto filter = Filter::New();
    filter->SetInput(image);
    filter->SetRank(2);
    filter->SetNumberOfIterations(1000);
    filter->Update();
    auto out = filter->GetOutput();
    EXPECT_EQ(filter->GetFittedModel(), "ijk=ia,ja,ka");
    ASSERT_EQ(filter->GetNumberOfFactors(), 3u);
    EXPECT_EQ(filter->GetFactorName(0), "ia");
    EXPECT_EQ(filter->GetFactorShape(0), (std::vector<size_t>{5, 2}));  // i is z, the slowest axis
    EXPECT_EQ(filter->GetFactorShape(2), (std::vector<size_t>{7, 2}));  // k is x
    auto want = tk_test::brute_force_einsum(m, factors_of(filter.GetPointer()));
    double err = 0, norm = 0;
    for (size_t z = 0; z < 5; ++z)
        for (size_t y = 0; y < 6; ++y)
            for (size_t xx = 0; xx < 7; ++xx) {
                const size_t flat = (z * 6 + y) * 7 + xx;
                const double v = out->GetPixel({{(long)xx, (long)y, (long)z}});
                EXPECT_NEAR(v, want[flat], 1e-5 * (1 + want[flat]));
                err += (v - x[flat]) * (v - x[flat]), norm += x[flat] * x[flat];
            }
    EXPECT_LT(std::sqrt(err / norm), 1e-2);
    const auto &h = filter->GetDivergenceHistory();
    ASSERT_EQ(h.size(), 1001u);
    // never increasing, up to the rounding of the sum once the fit is exact
    for (size_t t = 1; t < h.size(); ++t) EXPECT_LE(h[t], h[t - 1] * (1 + 1e-12) + 1e-12 * h[0]);
}

TEST(NonnegativeTensorFactorizationImageFilter, MaskedVoxelsAreNeverReadAndFilledIn)
{
    tk_pltf_model m = tk_test::pltf_model("ijkl=ia,ja,ka,la", "i=5,j=3,k=4,l=6,a=2");
    auto x = tk_test::brute_force_einsum(m, tk_test::random_factors(m, 2));
    std::vector<double> corrupted = x;
    std::vector<double> mask_values(x.size(), 1.0);
    for (size_t i = 0; i < x.size(); i += 7) {  // 7: no whole slice goes unobserved
        mask_values[i] = 0;
        corrupted[i] = i % 2 ? -1e6 : std::numeric_limits<double>::quiet_NaN();
    }
    using ImageType = itk::Image<float, 4>;
    using Filter = itk::NonnegativeTensorFactorizationImageFilter<ImageType>;
    auto mask = Filter::MaskImageType::New();
    mask->SetRegions(make_image<4>({5, 3, 4, 6}, x)->GetLargestPossibleRegion());
    mask->Allocate();
    for (size_t i = 0; i < x.size(); ++i) mask->GetBufferPointer()[i] = mask_values[i] != 0;
    std::vector<std::vector<float>> outputs;
    for (const auto *data : {&x, &corrupted}) {
        auto filter = Filter::New();
        filter->SetInput(make_image<4>({5, 3, 4, 6}, *data));
        filter->SetMaskImage(mask);
        filter->SetRank(2);
        filter->SetNumberOfIterations(1500);
        filter->Update();
        auto out = filter->GetOutput();
        outputs.emplace_back(out->GetBufferPointer(), out->GetBufferPointer() + x.size());
    }
    EXPECT_EQ(outputs[0], outputs[1]);
    // The unobserved voxels of an exactly low-rank image are recovered.
    double err = 0, norm = 0;
    for (size_t i = 0; i < x.size(); i += 7) err += (outputs[0][i] - x[i]) * (outputs[0][i] - x[i]), norm += x[i] * x[i];
    EXPECT_LT(std::sqrt(err / norm), 5e-2);
}

TEST(NonnegativeTensorFactorizationImageFilter, CustomModelAndDivergence)
{
    // A spatial map times a time course per component: "tzyx=tp,zyxp".
    tk_pltf_model m = tk_test::pltf_model("tzyx=tp,zyxp", "t=6,z=2,y=3,x=4,p=2");
    auto x = tk_test::brute_force_einsum(m, tk_test::random_factors(m, 5));
    using Filter = itk::NonnegativeTensorFactorizationImageFilter<itk::Image<float, 4>>;
    auto filter = Filter::New();
    filter->SetInput(make_image<4>({6, 2, 3, 4}, x));
    filter->SetModel("tzyx=tp,zyxp");
    filter->SetLatentSizes("p=2");
    filter->SetDivergence(Filter::DivergenceType::Euclidean);
    filter->SetNumberOfIterations(50);
    filter->Update();
    ASSERT_EQ(filter->GetNumberOfFactors(), 2u);
    EXPECT_EQ(filter->GetFactorName(1), "zyxp");
    EXPECT_EQ(filter->GetFactorShape(1), (std::vector<size_t>{2, 3, 4, 2}));
    const auto &h = filter->GetDivergenceHistory();
    EXPECT_LT(h.back(), 0.5 * h.front());
}

TEST(NonnegativeTensorFactorizationImageFilter, BadInputThrowsClearly)
{
    using Filter = itk::NonnegativeTensorFactorizationImageFilter<itk::Image<float, 3>>;
    std::vector<double> x(60, 1.0);
    x[7] = -3;
    auto expect_throw = [](Filter *f, const std::string &message) {
        try {
            f->Update();
            ADD_FAILURE() << "no exception; expected: " << message;
        } catch (const itk::ExceptionObject &e) {
            EXPECT_NE(std::string(e.GetDescription()).find(message), std::string::npos) << e.GetDescription();
        }
    };
    auto f = Filter::New();
    f->SetInput(make_image<3>({3, 4, 5}, x));
    expect_throw(f, "entry 7 is negative");
    auto g = Filter::New();
    x[7] = 1;
    g->SetInput(make_image<3>({3, 4, 5}, x));
    g->SetModel("ij=ia,ja");
    g->SetLatentSizes("a=2");
    expect_throw(g, "has 2 observed axes, the data has 3");
    auto h = Filter::New();
    h->SetInput(make_image<3>({3, 4, 5}, x));
    h->SetModel("ijk=ia,ja,kb");
    expect_throw(h, "no size given for index 'a'");
    auto mask = Filter::MaskImageType::New();
    mask->SetRegions(make_image<3>({3, 4, 6}, std::vector<double>(72, 1.0))->GetLargestPossibleRegion());
    mask->Allocate();
    mask->FillBuffer(1);
    auto k = Filter::New();
    k->SetInput(make_image<3>({3, 4, 5}, x));
    k->SetMaskImage(mask);
    expect_throw(k, "the mask's size");
}
