// itk::TensorKernelsEnums::Backend and its resolution, shared by every filter: the values
// are the core's (tools cast a tk_backend to it), the names print, and Auto resolves to CUDA
// exactly where tk_cuda_device_usable() says so, else to the fallback given.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <type_traits>

#include "itkBatchedEigenvaluesImageFilter.h"
#include "itkFiberDirectionsImageFilter.h"
#include "itkNonnegativeTensorFactorizationImageFilter.h"
#include "itkTensorKernelsBackend.h"
#include "itkTuckerCompletionImageFilter.h"
#include "tk_device.h"

using Backend = itk::TensorKernelsEnums::Backend;

namespace {

std::string printed(Backend b)
{
    std::ostringstream out;
    out << b;
    return out.str();
}

}  // namespace

TEST(TensorKernelsBackend, ValuesAreTheCoresBackends)
{
    EXPECT_EQ(itk::ToCoreBackend(Backend::CPU), TK_BACKEND_CPU);
    EXPECT_EQ(itk::ToCoreBackend(Backend::OMP), TK_BACKEND_OMP);
    EXPECT_EQ(itk::ToCoreBackend(Backend::CUDA), TK_BACKEND_CUDA);
    EXPECT_EQ(static_cast<Backend>(TK_BACKEND_AUTO), Backend::Auto);
    EXPECT_EQ(Backend::OpenMP, Backend::OMP);
}

TEST(TensorKernelsBackend, Prints)
{
    EXPECT_EQ(printed(Backend::Auto), "Auto");
    EXPECT_EQ(printed(Backend::CPU), "CPU");
    EXPECT_EQ(printed(Backend::OMP), "OpenMP");
    EXPECT_EQ(printed(Backend::CUDA), "CUDA");
}

TEST(TensorKernelsBackend, EveryFilterSharesTheOneEnum)
{
    using Vector3 = itk::VectorImage<float, 3>;
    using Image3 = itk::Image<float, 3>;
    EXPECT_TRUE((std::is_same<itk::BatchedEigenvaluesImageFilter<Vector3>::BackendType, Backend>::value));
    EXPECT_TRUE((std::is_same<itk::FiberDirectionsImageFilter<>::BackendType, Backend>::value));
    EXPECT_TRUE((std::is_same<itk::NonnegativeTensorFactorizationImageFilter<Image3>::BackendType, Backend>::value));
    EXPECT_TRUE((std::is_same<itk::TuckerCompletionImageFilter<Image3>::BackendType, Backend>::value));
}

TEST(TensorKernelsBackend, ExplicitSettingsAreKept)
{
    for (Backend b : {Backend::CPU, Backend::OMP, Backend::CUDA})
        EXPECT_EQ(itk::ResolveTensorKernelsBackend(b, Backend::CPU).backend, b) << b;
}

TEST(TensorKernelsBackend, AutoIsCudaWhereUsableElseTheFallback)
{
    char reason[256] = "";
    const bool gpu = tk_cuda_device_usable(0, reason, sizeof reason);
    for (Backend fallback : {Backend::CPU, Backend::OMP}) {
        const itk::TensorKernelsBackendChoice choice = itk::ResolveTensorKernelsBackend(Backend::Auto, fallback);
        EXPECT_EQ(choice.backend, gpu ? Backend::CUDA : fallback) << reason;
        if (!gpu) {
            EXPECT_NE(choice.reason.find(reason), std::string::npos) << choice.reason;
        }
    }
}
