// Helpers for SS-HOPM tests: run a solve and keep the per-start results.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <vector>

#include "tk_sshopm.h"
#include "gpu_skip.h"

namespace tk_test {

template <typename R> struct StartResults {
    std::vector<R> lambda, x;
    std::vector<int32_t> iterations;
    std::vector<uint8_t> converged;
    tk_sshopm_starts_result view()
    {
        return {lambda.data(), x.data(), iterations.data(), converged.data()};
    }
};

// Sizes the arrays for T tensors of o's shape.
template <typename R> void resize(const tk_sshopm_options &o, size_t T, StartResults<R> &r)
{
    const size_t S = (size_t)o.num_starts;
    r.lambda.assign(T * S, 0);
    r.x.assign(T * S * (size_t)o.dim, 0);
    r.iterations.assign(T * S, 0);
    r.converged.assign(T * S, 0);
}

template <typename R>
tk_status solve(const tk_sshopm_options &o, const std::vector<R> &packed, StartResults<R> &r)
{
    size_t T = packed.size() / tk_sym_num_unique(o.order, o.dim);
    resize(o, T, r);
    auto v = r.view();
    return tk_sshopm_solve(&o, T, packed.data(), &v, nullptr);
}

// One plan over several batches (each of max_batch tensors or fewer, the last batch
// larger than max_batch: chunked), against one tk_sshopm_solve of each batch: the same
// bits.
template <typename R>
void expect_plan_matches_solve(const tk_sshopm_options &o, const std::vector<R> &packed, size_t max_batch)
{
    const size_t K = tk_sym_num_unique(o.order, o.dim), T = packed.size() / K;
    tk_sshopm_plan *plan = nullptr;
    tk_status s = tk_sshopm_plan_create(&o, max_batch, &plan);
    TK_SKIP_IF_NO_GPU(s);
    ASSERT_EQ(s, TK_OK) << tk_last_error();
    // batches: the first tensor alone, then all of them (more than max_batch), then the first again
    for (size_t count : {(size_t)1, T, (size_t)1}) {
        std::vector<R> batch(packed.begin(), packed.begin() + (std::ptrdiff_t)(count * K));
        StartResults<R> once, planned;
        ASSERT_EQ(solve(o, batch, once), TK_OK) << tk_last_error();
        resize(o, count, planned);
        auto v = planned.view();
        tk_timing t{};
        ASSERT_EQ(tk_sshopm_plan_execute(plan, count, batch.data(), &v, &t), TK_OK) << tk_last_error();
        EXPECT_EQ(0, std::memcmp(once.lambda.data(), planned.lambda.data(), sizeof(R) * once.lambda.size()));
        EXPECT_EQ(0, std::memcmp(once.x.data(), planned.x.data(), sizeof(R) * once.x.size()));
        EXPECT_EQ(once.iterations, planned.iterations);
        EXPECT_EQ(once.converged, planned.converged);
        EXPECT_GE(t.total_ms, t.kernel_ms);
    }
    tk_sshopm_plan_destroy(plan);
}

// Solve (double), then merge the converged starts into distinct pairs (default merge tolerance).
inline tk_status solve_distinct(const tk_sshopm_options &o, const std::vector<double> &packed, tk_eigenpairs *pairs)
{
    StartResults<double> r;
    const tk_status s = solve(o, packed, r);
    if (s != TK_OK) return s;
    auto v = r.view();
    return tk_sshopm_distinct(&o, packed.size() / tk_sym_num_unique(o.order, o.dim), packed.data(), &v, 0, pairs);
}

inline tk_sshopm_options options(int m, int n, bool dbl, tk_backend b = TK_BACKEND_CPU, tk_impl impl = TK_IMPL_GENERAL)
{
    tk_sshopm_options o;
    tk_sshopm_options_init(&o, m, n);
    o.precision = dbl ? TK_PRECISION_DOUBLE : TK_PRECISION_SINGLE;
    o.tol = tk_sshopm_default_tol(o.precision);
    o.backend = b;
    o.impl = impl;
    o.num_starts = 32;
    o.seed = 3;
    return o;
}

}  // namespace tk_test
