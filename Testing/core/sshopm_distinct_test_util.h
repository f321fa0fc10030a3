// Helpers for the distinct-pairs path: the oracle (per-start solve, then tk_sshopm_distinct
// on the host) and the comparison of two sets of pairs, bit for bit.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "sshopm_test_util.h"
#include "tk_sshopm.h"

namespace tk_test {

// The pairs of `expected` and `actual` are the same: count, and per pair tensor, lambda and
// x (the same bits), stability and starts.
inline void expect_same_pairs(const tk_eigenpairs &expected, const tk_eigenpairs &actual, const char *what)
{
    ASSERT_EQ(expected.count, actual.count) << what;
    ASSERT_EQ(expected.dim, actual.dim) << what;
    const size_t n = (size_t)expected.dim;
    size_t shown = 0;
    for (size_t p = 0; p < expected.count; ++p) {
        const bool same = expected.tensor[p] == actual.tensor[p] &&
                          std::memcmp(&expected.lambda[p], &actual.lambda[p], sizeof(double)) == 0 &&
                          std::memcmp(expected.x + p * n, actual.x + p * n, sizeof(double) * n) == 0 &&
                          expected.stability[p] == actual.stability[p] &&
                          expected.num_starts[p] == actual.num_starts[p];
        if (!same && shown++ < 5)
            ADD_FAILURE() << what << ": pair " << p << " differs: tensor " << expected.tensor[p] << " vs "
                          << actual.tensor[p] << ", lambda " << expected.lambda[p] << " vs " << actual.lambda[p]
                          << ", x0 " << expected.x[p * n] << " vs " << actual.x[p * n] << ", stability "
                          << expected.stability[p] << " vs " << actual.stability[p] << ", starts "
                          << expected.num_starts[p] << " vs " << actual.num_starts[p];
    }
    EXPECT_EQ(shown, 0u) << what << ": " << shown << " of " << expected.count << " pairs differ";
}

// The oracle: a plan's per-start results of the whole batch (on o's backend), then the
// host's merge.  Returns the execute's or the merge's status.
template <typename R>
tk_status oracle_pairs(const tk_sshopm_options &o, const std::vector<R> &packed, double merge_tol,
                       tk_eigenpairs *pairs, StartResults<R> *starts = nullptr)
{
    const size_t T = packed.size() / tk_sym_num_unique(o.order, o.dim);
    StartResults<R> local;
    StartResults<R> &r = starts ? *starts : local;
    resize(o, T, r);
    auto v = r.view();
    tk_status s = tk_sshopm_solve(&o, T, packed.data(), &v, nullptr);
    if (s != TK_OK) return s;
    return tk_sshopm_distinct(&o, T, packed.data(), &v, merge_tol, pairs);
}

// Counts of the pairs: how many tensors have none, and the most any tensor has.
inline void pair_spread(const tk_eigenpairs &p, size_t T, size_t *without, size_t *most)
{
    std::vector<size_t> per(T, 0);
    for (size_t i = 0; i < p.count; ++i) ++per[p.tensor[i]];
    *without = 0, *most = 0;
    for (size_t c : per) {
        *without += c == 0;
        *most = c > *most ? c : *most;
    }
}

}  // namespace tk_test
