// The device-array entry points' refusals that need no GPU (label cpu): a cpu or omp plan never
// takes device arrays (nothing is copied to the host behind the caller's back), and a build
// without CUDA says so in the words every core uses ("no CUDA backend"); the CPU backends copy
// none of the caller's bytes to a device (the transfer probe stays still).  The device paths
// themselves: Testing/gpu/test_device_arrays_cuda.cpp.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tk_bench_hooks.h"
#include "tk_device.h"
#include "tk_eig.h"
#include "tk_fibers.h"
#include "tk_sshopm.h"
#include "tk_types.h"

namespace {

// The refusal of a device-array execute on a CPU plan: which status and words depend on the build.
void expect_cpu_plan_refused(tk_status st)
{
    const std::string msg = tk_last_error();
    if (tk_has_cuda()) {
        EXPECT_EQ(st, TK_ERR_ARGUMENT) << msg;
        EXPECT_NE(msg.find("device arrays need a plan on the cuda backend"), std::string::npos) << msg;
    } else {
        EXPECT_EQ(st, TK_ERR_UNSUPPORTED) << msg;
        EXPECT_NE(msg.find("no CUDA backend"), std::string::npos) << msg;
    }
}

// Pointers that are never dereferenced: every refusal comes before any access.
float g_floats[64 * 45];
uint8_t g_bytes[64 * 32];

TEST(DeviceArrays, FibersCpuPlanRefusesThemAndCopiesNothing)
{
    tk_fibers_options o;
    tk_fibers_options_init(&o, 8);
    o.backend = TK_BACKEND_OMP;
    tk_fibers_plan *plan = nullptr;
    ASSERT_EQ(tk_fibers_plan_create(&o, 0, &plan), TK_OK) << tk_last_error();
    float dirs[4 * 3 * 3], amps[4 * 3];
    expect_cpu_plan_refused(
        tk_fibers_plan_execute_device(plan, 4, g_floats, nullptr, dirs, amps, nullptr, nullptr, nullptr));
    std::vector<float> sh(4 * 45, 0.f);
    sh[0] = 1;
    const unsigned long long before = tk_test_array_transfer_bytes();
    ASSERT_EQ(tk_fibers_plan_execute(plan, 4, sh.data(), nullptr, dirs, amps, nullptr, nullptr), TK_OK);
    EXPECT_EQ(tk_test_array_transfer_bytes(), before);
    tk_fibers_plan_destroy(plan);
    EXPECT_EQ(tk_fibers_plan_execute_device(nullptr, 4, g_floats, nullptr, dirs, amps, nullptr, nullptr, nullptr),
              TK_ERR_ARGUMENT);
}

TEST(DeviceArrays, SshopmCpuPlanRefusesThem)
{
    tk_sshopm_options o;
    tk_sshopm_options_init(&o, 4, 3);
    o.precision = TK_PRECISION_SINGLE;
    o.num_starts = 4;
    tk_sshopm_plan *plan = nullptr;
    ASSERT_EQ(tk_sshopm_plan_create(&o, 0, &plan), TK_OK) << tk_last_error();
    tk_sshopm_starts_result out{g_floats, g_floats + 16, nullptr, g_bytes};
    expect_cpu_plan_refused(tk_sshopm_plan_execute_device(plan, 2, g_floats, &out, nullptr, nullptr));
    EXPECT_EQ(tk_sshopm_plan_execute_device(plan, 2, g_floats, nullptr, nullptr, nullptr), TK_ERR_ARGUMENT);
    tk_sshopm_plan_destroy(plan);
}

TEST(DeviceArrays, EigCpuPlanRefusesThem)
{
    tk_eig_options o;
    tk_eig_options_init(&o, 3);
    tk_eig_plan *plan = nullptr;
    ASSERT_EQ(tk_eig_plan_create(&o, 0, &plan), TK_OK) << tk_last_error();
    tk_eig_result out{g_floats, nullptr, reinterpret_cast<int8_t *>(g_bytes)};
    expect_cpu_plan_refused(tk_eig_plan_execute_device(plan, 2, g_floats, &out, nullptr, nullptr));
    tk_eig_plan_destroy(plan);
}

}  // namespace
