// tk_cuda_device_usable: the one "can CUDA run here?" query behind --backend auto.  Its
// oracle is the CUDA backend itself: where the query says yes a CUDA solve runs, where it
// says no one fails, and the reason is never empty.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "concurrency_test_util.h"
#include "tk_cuda_memory.h"
#include "tk_device.h"
#include "tk_eig.h"

namespace {

// A 2x2 eigenproblem on the CUDA backend of device `device`: does it run?
tk_status cuda_solve(int device)
{
    tk_eig_options o;
    tk_eig_options_init(&o, 2);
    o.backend = TK_BACKEND_CUDA;
    o.cuda_device = device;
    const double m[4] = {2, 1, 1, 3};
    double values[4];
    tk_eig_result r = {values, nullptr, nullptr};
    return tk_eig_solve(&o, 1, m, &r, nullptr, nullptr);
}

}  // namespace

TEST(CudaDevice, AgreesWithTheCudaBackend)
{
    char reason[512] = "unchanged";
    const int usable = tk_cuda_device_usable(0, reason, sizeof reason);
    const tk_status solved = cuda_solve(0);
    if (!tk_has_cuda()) {
        EXPECT_EQ(usable, 0);
        EXPECT_NE(std::string(reason).find("no CUDA backend"), std::string::npos) << reason;
        EXPECT_EQ(solved, TK_ERR_UNSUPPORTED);
        return;
    }
    if (usable) {
        EXPECT_EQ(solved, TK_OK) << "the query found a usable GPU, the backend failed: " << tk_last_error();
    } else {
        EXPECT_NE(solved, TK_OK) << "the query found no usable GPU (" << reason << "), yet a CUDA solve ran";
        EXPECT_GT(std::strlen(reason), 0u);
        EXPECT_STRNE(reason, "unchanged");
    }
}

TEST(CudaDevice, NoDeviceOutOfRangeAndNoReasonBuffer)
{
    char reason[256];
    EXPECT_EQ(tk_cuda_device_usable(-1, reason, sizeof reason), 0);
    EXPECT_GT(std::strlen(reason), 0u);
    EXPECT_EQ(tk_cuda_device_usable(1 << 20, reason, sizeof reason), 0);
    EXPECT_GT(std::strlen(reason), 0u);
    // A NULL reason (or size 0) is allowed; the answer is the same.
    EXPECT_EQ(tk_cuda_device_usable(0, nullptr, 0), tk_cuda_device_usable(0, reason, sizeof reason));
    // A short buffer is filled and terminated.
    char tiny[8];
    std::memset(tiny, 'x', sizeof tiny);
    EXPECT_EQ(tk_cuda_device_usable(1 << 20, tiny, sizeof tiny), 0);
    EXPECT_EQ(std::strlen(tiny), sizeof tiny - 1);
}

// Without an NVIDIA driver (its library cannot be loaded: this machine has no NVIDIA GPU) the
// reason says so, not the CUDA runtime's "driver version is insufficient", which sends the
// user after a driver upgrade that cannot help.  With a driver the reason never claims none.
TEST(CudaDevice, SaysWhenThereIsNoNvidiaDriver)
{
    if (!tk_has_cuda()) GTEST_SKIP() << "SKIPPED: this build has no CUDA backend";
    char reason[512] = "";
    const int usable = tk_cuda_device_usable(0, reason, sizeof reason);
    void *driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (driver) {
        dlclose(driver);
        EXPECT_EQ(std::string(reason).find("no NVIDIA driver"), std::string::npos) << reason;
        return;
    }
    EXPECT_EQ(usable, 0);
    EXPECT_EQ(std::string(reason).rfind("no NVIDIA driver (libcuda.so.1", 0), 0u) << reason;
}

// Each CUDA core checks the device itself before its work (tk_cuda_require_device) and gives
// the query's reason: called through the C API on the CUDA backend, on a machine without an
// NVIDIA driver, every one says "no NVIDIA driver (...)" -- before, they passed on the CUDA
// runtime's "CUDA driver version is insufficient for CUDA runtime version".
TEST(CudaDevice, EveryCoreSaysWhenThereIsNoNvidiaDriver)
{
    if (!tk_has_cuda()) GTEST_SKIP() << "SKIPPED: this build has no CUDA backend";
    if (void *driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL)) {
        dlclose(driver);
        GTEST_SKIP() << "SKIPPED: an NVIDIA driver is installed here";
    }
    using namespace tk_test;
    size_t free_bytes = 0, total_bytes = 0;
    const Result info = failed(tk_cuda_memory_info(0, &free_bytes, &total_bytes)); // its message, now
    const std::vector<std::pair<std::string, Result>> runs = {
        {"tk_eig_solve", eig_run(eig_input(TK_BACKEND_CUDA, 3, false, false, 4, 1))},
        {"tk_sshopm_solve", sshopm_run(sshopm_input(TK_BACKEND_CUDA, TK_IMPL_GENERAL, false, 2, 1))},
        {"tk_fibers_find", fibers_run(fibers_input(TK_BACKEND_CUDA, 4, 8, 1, false))},
        {"tk_tucker_solver_create", tucker_run(tucker_input(TK_BACKEND_CUDA, 1, 2000))},
        {"tk_pltf_factorize", pltf_run(pltf_input(TK_BACKEND_CUDA, "ijk=ia,ja,ka", "i=4,j=3,k=2,a=2", TK_PLTF_KL, 1, false))},
        {"tk_cuda_memory_info", info},
    };
    for (const auto &run : runs) {
        EXPECT_EQ(run.second.status, TK_ERR_CUDA) << run.first << ": " << run.second.error;
        EXPECT_NE(run.second.error.find("no usable CUDA GPU (no NVIDIA driver (libcuda.so.1"), std::string::npos)
            << run.first << ": " << run.second.error;
        EXPECT_EQ(run.second.error.find("insufficient"), std::string::npos) << run.first << ": " << run.second.error;
        EXPECT_NE(run.second.error.find("; use the cpu or omp backend"), std::string::npos) << run.first;
    }
}
