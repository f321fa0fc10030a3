// BackendType::Auto, the default: the result of CUDA where tk_cuda_device_usable() finds a
// GPU, else of OpenMP (bit for bit); an explicit CUDA without a usable GPU throws.
#include <gtest/gtest.h>

#include <random>
#include <utility>

#include "itkImage.h"
#include "itkNonnegativeTensorFactorizationImageFilter.h"
#include "tkAutoBackendTestUtil.h"

namespace {

using Image = itk::Image<float, 3>;
using Filter = itk::NonnegativeTensorFactorizationImageFilter<Image>;

Image::Pointer random_counts()
{
    auto image = Image::New();
    Image::SizeType size = {{7, 6, 5}};
    image->SetRegions(size);
    image->Allocate();
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> u(0, 4);
    for (size_t i = 0; i < 210; ++i) image->GetBufferPointer()[i] = u(rng);
    return image;
}


Filter::Pointer fit(const Image *image)
{
    auto f = Filter::New();
    f->SetInput(image);
    f->SetRank(2);
    f->SetNumberOfIterations(10);
    return f;
}

}  // namespace

TEST(NonnegativeTensorFactorizationAutoBackend, DefaultRunsOnCudaWhereUsableElseOnOpenMP)
{
    auto image = random_counts();
    tk_test::expect_auto_backend_as_resolved(
        [&] { return fit(image); },
        [](const Filter::Pointer &f) {
            return std::make_pair(tk_test::buffer_values(f->GetOutput()), f->GetDivergenceHistory());
        },
        Filter::BackendType::OpenMP);
}
