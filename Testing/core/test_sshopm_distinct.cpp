// tk_sshopm_plan_execute_distinct / tk_sshopm_solve_distinct on the CPU backends: the same
// pairs, counts and stabilities, in the same order, as a per-start solve of the whole batch
// followed by tk_sshopm_distinct (the oracle), over batches the path cuts into chunks.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "sshopm_distinct_test_util.h"
#include "sshopm_test_util.h"
#include "tk_sshopm.h"
#include "tk_test_util.h"

using namespace tk_test;

namespace {

struct Shape {
    int m, n;
    tk_impl impl;
};

template <typename R>
void expect_matches_oracle(tk_sshopm_options o, size_t T, uint64_t seed, double merge_tol, const char *what)
{
    auto packed_d = random_packed(o.order, o.dim, T, seed);
    std::vector<R> packed(packed_d.begin(), packed_d.end());
    tk_eigenpairs expected{}, actual{};
    StartResults<R> starts;
    ASSERT_EQ(oracle_pairs(o, packed, merge_tol, &expected, &starts), TK_OK) << tk_last_error();
    tk_timing t{};
    ASSERT_EQ(tk_sshopm_solve_distinct(&o, T, packed.data(), merge_tol, &actual, &t), TK_OK) << tk_last_error();
    expect_same_pairs(expected, actual, what);
    EXPECT_GE(t.total_ms, t.kernel_ms);
    // the case is not trivial: pairs found, and some starts left out as not converged
    size_t unconverged = 0;
    for (uint8_t c : starts.converged) unconverged += !c;
    EXPECT_GT(expected.count, 0u) << what;
    EXPECT_GT(unconverged, 0u) << what;
    tk_eigenpairs_free(&expected);
    tk_eigenpairs_free(&actual);
}

}  // namespace

TEST(SshopmDistinct, SolveDistinctIsSolveThenMerge)
{
    const Shape shapes[] = {{4, 3, TK_IMPL_UNROLLED}, {6, 3, TK_IMPL_UNROLLED}, {8, 3, TK_IMPL_UNROLLED},
                            {4, 3, TK_IMPL_GENERAL},  {3, 5, TK_IMPL_GENERAL}};
    for (const Shape &sh : shapes)
        for (bool dbl : {false, true})
            for (auto shift : {TK_SHIFT_FIXED, TK_SHIFT_ADAPTIVE}) {
                auto o = options(sh.m, sh.n, dbl, TK_BACKEND_CPU, sh.impl);
                o.num_starts = 16;
                o.max_iter = 60;  // short: many starts do not converge and are left out
                o.shift_mode = shift;
                o.shift = shift == TK_SHIFT_FIXED ? 0.0 : (sh.m == 3 ? -1.0 : 1.0);
                std::string what = "(" + std::to_string(sh.m) + "," + std::to_string(sh.n) + ") impl " +
                                   std::to_string(sh.impl) + (dbl ? " double" : " float") +
                                   (shift ? " adaptive" : " fixed");
                // (4,3) fixed crosses the CPU path's chunk of 1024 tensors; the rest stay small for CI
                const size_t T = sh.m == 4 && sh.n == 3 && shift == TK_SHIFT_FIXED ? 1030 : 150;
                if (dbl) expect_matches_oracle<double>(o, T, 11 + sh.m, 0, what.c_str());
                else expect_matches_oracle<float>(o, T, 11 + sh.m, 0, what.c_str());
                if (HasFatalFailure()) return;
            }
}

TEST(SshopmDistinct, OmpAndExplicitMergeToleranceMatchTheOracle)
{
    auto o = options(4, 3, false, TK_BACKEND_OMP, TK_IMPL_UNROLLED);
    o.num_starts = 16, o.max_iter = 80;
    o.num_threads = 2;
    expect_matches_oracle<float>(o, 1030, 5, 0, "omp default tolerance");
    // a loose tolerance merges more starts into each pair, a tight one splits them
    expect_matches_oracle<float>(o, 1030, 5, 0.3, "omp tolerance 0.3");
    expect_matches_oracle<float>(o, 1030, 5, 1e-7, "omp tolerance 1e-7");
}

TEST(SshopmDistinct, PlanReusesTheCallersArrays)
{
    auto o = options(4, 3, true, TK_BACKEND_CPU, TK_IMPL_UNROLLED);
    o.num_starts = 16, o.max_iter = 200;
    auto packed = random_packed(4, 3, 300, 9);
    tk_sshopm_plan *plan = nullptr;
    ASSERT_EQ(tk_sshopm_plan_create(&o, 0, &plan), TK_OK) << tk_last_error();
    tk_eigenpairs out{};
    ASSERT_EQ(tk_sshopm_plan_execute_distinct(plan, 300, packed.data(), 0, &out, nullptr), TK_OK) << tk_last_error();
    const double *lambda = out.lambda;
    const size_t capacity = out.capacity;
    ASSERT_GE(capacity, out.count);
    // a smaller batch into the same arrays: no new ones, and the pairs of that batch alone
    std::vector<double> small(packed.begin(), packed.begin() + 100 * 15);
    ASSERT_EQ(tk_sshopm_plan_execute_distinct(plan, 100, small.data(), 0, &out, nullptr), TK_OK);
    EXPECT_EQ(out.lambda, lambda);
    EXPECT_EQ(out.capacity, capacity);
    tk_eigenpairs expected{};
    ASSERT_EQ(oracle_pairs(o, small, 0, &expected), TK_OK);
    expect_same_pairs(expected, out, "second batch");
    tk_eigenpairs_free(&expected);
    tk_sshopm_plan_destroy(plan);

    // a plan of another dimension into the same struct: the arrays are remade for it
    auto o5 = options(3, 5, true, TK_BACKEND_CPU, TK_IMPL_GENERAL);
    o5.num_starts = 16, o5.max_iter = 200;
    auto packed5 = random_packed(3, 5, 40, 4);
    ASSERT_EQ(tk_sshopm_solve_distinct(&o5, 40, packed5.data(), 0, &out, nullptr), TK_OK) << tk_last_error();
    ASSERT_EQ(oracle_pairs(o5, packed5, 0, &expected), TK_OK);
    expect_same_pairs(expected, out, "dimension 5");
    tk_eigenpairs_free(&expected);
    tk_eigenpairs_free(&out);
}

TEST(SshopmDistinct, EmptyBatchHasNoPairs)
{
    auto o = options(4, 3, false);
    tk_eigenpairs out{};
    ASSERT_EQ(tk_sshopm_solve_distinct(&o, 0, nullptr, 0, &out, nullptr), TK_OK) << tk_last_error();
    EXPECT_EQ(out.count, 0u);
    EXPECT_EQ(out.dim, 3);
    tk_eigenpairs_free(&out);
}

TEST(SshopmDistinct, BadInputIsRefusedWithNoPairs)
{
    auto o = options(4, 3, true);
    auto packed = random_packed(4, 3, 20, 1);
    tk_eigenpairs out{};
    ASSERT_EQ(tk_sshopm_solve_distinct(&o, 20, packed.data(), 0, &out, nullptr), TK_OK);
    ASSERT_GT(out.count, 0u);
    packed[7 * 15 + 3] = NAN;
    EXPECT_EQ(tk_sshopm_solve_distinct(&o, 20, packed.data(), 0, &out, nullptr), TK_ERR_DATA);
    EXPECT_NE(std::string(tk_last_error()).find("tensor 7"), std::string::npos) << tk_last_error();
    EXPECT_EQ(out.count, 0u);
    EXPECT_EQ(tk_sshopm_solve_distinct(&o, 20, packed.data(), 0, nullptr, nullptr), TK_ERR_ARGUMENT);
    EXPECT_EQ(tk_sshopm_plan_execute_distinct(nullptr, 20, packed.data(), 0, &out, nullptr), TK_ERR_ARGUMENT);
    EXPECT_EQ(tk_sshopm_solve_distinct(&o, 20, nullptr, 0, &out, nullptr), TK_ERR_ARGUMENT);
    o.num_starts = 0;
    EXPECT_EQ(tk_sshopm_solve_distinct(&o, 20, packed.data(), 0, &out, nullptr), TK_ERR_ARGUMENT);
    tk_eigenpairs_free(&out);
}

// A batch large enough for the non-finite check to run on threads: the first bad entry in the
// packed order is the one named, whichever thread finds which.
TEST(SshopmDistinct, FirstNonFiniteEntryOfALargeBatchIsNamed)
{
    auto o = options(4, 3, false, TK_BACKEND_OMP, TK_IMPL_UNROLLED);
    o.num_threads = 4;
    const size_t T = 80000;
    std::vector<float> packed(T * 15, 0.5f);
    packed[61234 * 15 + 2] = INFINITY;
    packed[50001 * 15 + 14] = NAN;
    packed[79999 * 15] = NAN;
    tk_eigenpairs out{};
    EXPECT_EQ(tk_sshopm_solve_distinct(&o, T, packed.data(), 0, &out, nullptr), TK_ERR_DATA);
    EXPECT_NE(std::string(tk_last_error()).find("tensor 50001 has a non-finite entry (packed position 14)"),
              std::string::npos)
        << tk_last_error();
    EXPECT_EQ(out.count, 0u);
    tk_eigenpairs_free(&out);
}
