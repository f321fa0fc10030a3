// The CUDA backend against the CPU backend (label gpu; skips without a GPU).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "sshopm_test_util.h"
#include "tk_cuda_memory.h"
#include "tk_sshopm.h"
#include "tk_test_util.h"

using namespace tk_test;

namespace {

template <typename R>
void expect_agreement(tk_sshopm_options o, const std::vector<double> &packed_d, double tol)
{
    std::vector<R> packed(packed_d.begin(), packed_d.end());
    StartResults<R> cpu, gpu;
    o.backend = TK_BACKEND_CPU;
    ASSERT_EQ(solve(o, packed, cpu), TK_OK) << tk_last_error();
    o.backend = TK_BACKEND_CUDA;
    tk_status s = solve(o, packed, gpu);
    TK_SKIP_IF_NO_GPU(s);
    ASSERT_EQ(s, TK_OK) << tk_last_error();
    size_t agree = 0, slots = cpu.lambda.size();
    for (size_t i = 0; i < slots; ++i) {
        bool same = cpu.converged[i] == gpu.converged[i] &&
                    std::fabs((double)cpu.lambda[i] - (double)gpu.lambda[i]) <= tol * (1 + std::fabs((double)cpu.lambda[i]));
        for (int d = 0; d < o.dim && same; ++d)
            same = std::fabs((double)cpu.x[i * o.dim + d] - (double)gpu.x[i * o.dim + d]) <= 100 * tol;
        agree += same;
    }
    // Rounding may tip a start near a ridge between basins; all but a few must agree.
    EXPECT_GE(agree, slots * 97 / 100) << "order " << o.order << " impl " << o.impl << " adaptive " << o.shift_mode;
}

}  // namespace

TEST(SshopmCuda, MatchesCpuForEveryKernel)
{
    for (int m : {4, 6, 8})
        for (auto impl : {TK_IMPL_GENERAL, TK_IMPL_UNROLLED})
            for (auto shift : {TK_SHIFT_FIXED, TK_SHIFT_ADAPTIVE}) {
                auto packed = random_packed(m, 3, 300, (uint64_t)m * 7);
                auto o = options(m, 3, false, TK_BACKEND_CPU, impl);
                o.shift_mode = shift;
                o.shift = shift == TK_SHIFT_FIXED ? 1.5 * m : 0.0;
                o.num_starts = 64;
                o.max_iter = 3000;
                expect_agreement<float>(o, packed, 2e-5);
                if (HasFatalFailure() || IsSkipped()) return;
                o.precision = TK_PRECISION_DOUBLE;
                o.tol = 1e-12;
                expect_agreement<double>(o, packed, 1e-10);
                if (HasFatalFailure() || IsSkipped()) return;
            }
}

TEST(SshopmCuda, GeneralKernelHandlesOtherShapes)
{
    for (auto mn : {std::pair{3, 3}, {4, 5}, {5, 2}, {3, 8}}) {
        auto packed = random_packed(mn.first, mn.second, 50, 5);
        auto o = options(mn.first, mn.second, true);
        o.shift_mode = TK_SHIFT_ADAPTIVE;
        o.num_starts = 40;  // not a multiple of the warp size
        expect_agreement<double>(o, packed, 1e-10);
        if (HasFatalFailure() || IsSkipped()) return;
    }
}

TEST(SshopmCuda, FixedIterationsRunExactlyMaxIter)
{
    auto packed = random_packed(4, 3, 1000, 9);
    std::vector<float> pf(packed.begin(), packed.end());
    auto o = options(4, 3, false, TK_BACKEND_CUDA, TK_IMPL_UNROLLED);
    o.fixed_iterations = 1;
    o.max_iter = 37;
    o.tol = 0;
    StartResults<float> r;
    tk_status s = solve(o, pf, r);
    TK_SKIP_IF_NO_GPU(s);
    ASSERT_EQ(s, TK_OK) << tk_last_error();
    for (int32_t it : r.iterations) ASSERT_EQ(it, 37);
}

TEST(SshopmCuda, EmptyBatchAndBadDeviceAreHandled)
{
    std::vector<float> none;
    auto o = options(4, 3, false, TK_BACKEND_CUDA, TK_IMPL_UNROLLED);
    StartResults<float> r;
    tk_status s = solve(o, none, r);
    TK_SKIP_IF_NO_GPU(s);
    EXPECT_EQ(s, TK_OK) << tk_last_error();
    o.cuda_device = 999;
    std::vector<float> one(15, 1.0f);
    EXPECT_EQ(solve(o, one, r), TK_ERR_ARGUMENT);
}

// A plan's device buffers are made once and reused: results equal the one-shot solves
// bit for bit (the same kernels on the same chunks), and destroy gives every byte back.
TEST(SshopmCuda, PlanReuseMatchesOneShotAndFreesItsMemory)
{
    const size_t before = tk_cuda_memory_in_use();
    for (auto impl : {TK_IMPL_UNROLLED, TK_IMPL_GENERAL}) {
        auto packed = random_packed(4, 3, 50, 77);
        std::vector<float> pf(packed.begin(), packed.end());
        auto o = options(4, 3, false, TK_BACKEND_CUDA, impl);
        expect_plan_matches_solve(o, pf, 16);
        if (HasFatalFailure() || IsSkipped()) return;
        o = options(4, 3, true, TK_BACKEND_CUDA, impl);
        o.shift_mode = TK_SHIFT_ADAPTIVE;
        expect_plan_matches_solve(o, packed, 0);
        if (HasFatalFailure() || IsSkipped()) return;
    }
    EXPECT_EQ(tk_cuda_memory_in_use(), before);
}
