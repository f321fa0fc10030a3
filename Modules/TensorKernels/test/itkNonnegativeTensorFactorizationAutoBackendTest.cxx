// BackendType::Auto, the default: the result of CUDA where tk_cuda_device_usable() finds a
// GPU, else of OpenMP (bit for bit); an explicit CUDA without a usable GPU throws.
#include <gtest/gtest.h>

#include <utility>

#include "itkImage.h"
#include "itkNonnegativeTensorFactorizationImageFilter.h"
#include "tkAutoBackendTestUtil.h"

namespace {

using Image = itk::Image<float, 3>;
using Filter = itk::NonnegativeTensorFactorizationImageFilter<Image>;

}  // namespace

TEST(NonnegativeTensorFactorizationAutoBackend, DefaultRunsOnCudaWhereUsableElseOnOpenMP)
{
    const auto counts = tk_test::uniform_image<Image>({{7, 6, 5}}, 3, 0, 4);
    tk_test::expect_auto_backend_as_resolved<Filter>(
        counts.GetPointer(),
        [](Filter &f) {
            f.SetRank(2);
            f.SetNumberOfIterations(10);
        },
        [](const Filter::Pointer &f) {
            return std::make_pair(tk_test::buffer_values(f->GetOutput()), f->GetDivergenceHistory());
        },
        Filter::BackendType::OpenMP);
}
