// BackendType::Auto, the default: the result of CUDA where tk_cuda_device_usable() finds a
// GPU, else of CPU (bit for bit); an explicit CUDA without a usable GPU throws.
#include <gtest/gtest.h>

#include "itkImage.h"
#include "itkTuckerCompletionImageFilter.h"
#include "tkAutoBackendTestUtil.h"

namespace {

using Image = itk::Image<float, 3>;
using Filter = itk::TuckerCompletionImageFilter<Image>;

}  // namespace

TEST(TuckerCompletionAutoBackend, DefaultRunsOnCudaWhereUsableElseOnTheCpu)
{
    const auto image = tk_test::uniform_image<Image>({{9, 8, 7}}, 4, 1, 2);
    tk_test::expect_auto_backend_as_resolved<Filter>(
        image.GetPointer(),
        [](Filter &f) {
            f.SetRankJ(4);
            f.SetRankR(4);
            f.SetNumberOfIterations(5);
            f.SetSeed(2);
        },
        tk_test::MainOutputValues(), Filter::BackendType::CPU);
}
