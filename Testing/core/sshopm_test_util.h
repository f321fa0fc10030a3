// Helpers for SS-HOPM tests: run a solve and keep the per-start results.
#pragma once

#include <gtest/gtest.h>

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

template <typename R>
tk_status solve(const tk_sshopm_options &o, const std::vector<R> &packed, StartResults<R> &r)
{
    size_t T = packed.size() / tk_sym_num_unique(o.order, o.dim), S = (size_t)o.num_starts;
    r.lambda.assign(T * S, 0);
    r.x.assign(T * S * (size_t)o.dim, 0);
    r.iterations.assign(T * S, 0);
    r.converged.assign(T * S, 0);
    auto v = r.view();
    return tk_sshopm_solve(&o, T, packed.data(), &v, nullptr);
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
