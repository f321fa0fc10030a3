// The distinct pairs merged on the GPU (tk_sshopm_plan_execute_distinct on CUDA) against the
// host's merge, tk_sshopm_distinct, of the same per-start results: the CUDA solve of the
// whole batch downloaded (the solve is deterministic, one thread or block a tensor's starts,
// so the chunked pipeline's starts are these bits).  Pairs, counts, stabilities and order
// must be the same bit for bit: the device runs the host's merge text in double without FMA
// contraction.  Label gpu; skipped without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "gpu_skip.h"
#include "sshopm_distinct_test_util.h"
#include "sshopm_test_util.h"
#include "tk_device.h"
#include "tk_sshopm.h"
#include "tk_test_util.h"

using namespace tk_test;

namespace {

// The CUDA pipeline on a plan made for max_batch (0: none) against the oracle; returns the
// oracle's pairs in *kept when asked.  Skips the test without a GPU.
template <typename R>
void expect_device_merge_matches(const tk_sshopm_options &o, const std::vector<R> &packed, double merge_tol,
                                 size_t max_batch, const std::string &what, tk_eigenpairs *kept = nullptr,
                                 StartResults<R> *starts = nullptr)
{
    const size_t T = packed.size() / tk_sym_num_unique(o.order, o.dim);
    tk_eigenpairs expected{}, actual{};
    tk_status s = oracle_pairs(o, packed, merge_tol, &expected, starts);
    TK_SKIP_IF_NO_GPU(s);
    ASSERT_EQ(s, TK_OK) << tk_last_error();
    tk_sshopm_plan *plan = nullptr;
    ASSERT_EQ(tk_sshopm_plan_create(&o, max_batch, &plan), TK_OK) << tk_last_error();
    tk_timing t{};
    s = tk_sshopm_plan_execute_distinct(plan, T, packed.data(), merge_tol, &actual, &t);
    ASSERT_EQ(s, TK_OK) << what << ": " << tk_last_error();
    expect_same_pairs(expected, actual, what.c_str());
    EXPECT_GT(t.kernel_ms, 0.0) << what;
    EXPECT_GE(t.total_ms, t.kernel_ms) << what;
    // again on the same plan and arrays: the same pairs (buffers reused, nothing left over)
    ASSERT_EQ(tk_sshopm_plan_execute_distinct(plan, T, packed.data(), merge_tol, &actual, nullptr), TK_OK);
    expect_same_pairs(expected, actual, (what + ", second execute").c_str());
    tk_sshopm_plan_destroy(plan);
    tk_eigenpairs_free(&actual);
    if (kept) *kept = expected;
    else tk_eigenpairs_free(&expected);
}

struct Shape {
    int m, n;
    tk_impl impl;
};

std::string name(const tk_sshopm_options &o)
{
    return "(" + std::to_string(o.order) + "," + std::to_string(o.dim) + ") " +
           (o.impl == TK_IMPL_UNROLLED ? "unrolled" : "general") +
           (o.precision == TK_PRECISION_DOUBLE ? " double" : " float") +
           (o.shift_mode == TK_SHIFT_ADAPTIVE ? " adaptive" : " fixed");
}

template <typename R> std::vector<R> as(const std::vector<double> &v) { return std::vector<R>(v.begin(), v.end()); }

}  // namespace

// Every kernel shape (dimensions 3, 4-8 and 9-16 take differently sized device merges), both
// precisions, both shifts; a short iteration cap leaves many starts
// unconverged (fixed shift 0) while the adaptive shift converges most.  The plan's chunk of
// 700 tensors cuts the 2000 into three pipeline chunks.
TEST(SshopmDistinctCuda, DeviceMergeMatchesHostMerge)
{
    const Shape shapes[] = {{4, 3, TK_IMPL_UNROLLED}, {6, 3, TK_IMPL_UNROLLED}, {8, 3, TK_IMPL_UNROLLED},
                            {4, 3, TK_IMPL_GENERAL},  {8, 3, TK_IMPL_GENERAL},  {3, 5, TK_IMPL_GENERAL},
                            {4, 4, TK_IMPL_GENERAL},  {3, 10, TK_IMPL_GENERAL}};
    for (const Shape &sh : shapes)
        for (bool dbl : {false, true})
            for (auto shift : {TK_SHIFT_FIXED, TK_SHIFT_ADAPTIVE}) {
                auto o = options(sh.m, sh.n, dbl, TK_BACKEND_CUDA, sh.impl);
                o.num_starts = 48;
                o.max_iter = 80;
                o.shift_mode = shift;
                o.shift = shift == TK_SHIFT_FIXED ? 0.0 : (sh.m % 2 ? -1.0 : 1.0);
                auto packed = random_packed(sh.m, sh.n, 2000, 31 + (uint64_t)sh.m * 3 + (uint64_t)sh.n);
                StartResults<double> sd;
                StartResults<float> sf;
                tk_eigenpairs kept{};
                if (dbl) expect_device_merge_matches(o, packed, 0, 700, name(o), &kept, &sd);
                else expect_device_merge_matches(o, as<float>(packed), 0, 700, name(o), &kept, &sf);
                if (HasFatalFailure() || IsSkipped()) return;
                size_t unconverged = 0;
                for (uint8_t c : dbl ? sd.converged : sf.converged) unconverged += !c;
                EXPECT_GT(kept.count, 0u) << name(o);
                if (shift == TK_SHIFT_FIXED) {
                    EXPECT_GT(unconverged, 0u) << name(o);
                }
                tk_eigenpairs_free(&kept);
            }
}

// Many pairs a tensor (a tolerance so tight that only equal vectors merge: more pairs than
// the pinned download holds per tensor, so chunks come back in several rounds) and few (a
// loose tolerance merging nearly everything).
TEST(SshopmDistinctCuda, ManyAndFewPairs)
{
    for (bool dbl : {false, true}) {
        auto o = options(4, 3, dbl, TK_BACKEND_CUDA, TK_IMPL_UNROLLED);
        o.num_starts = 64, o.max_iter = 300;
        o.shift_mode = TK_SHIFT_ADAPTIVE, o.shift = 1.0;
        o.tol = dbl ? 1e-3 : 1e-2; /* loose: starts stop early, spread around each pair */
        auto packed = random_packed(4, 3, 3000, 77);
        tk_eigenpairs many{}, few{};
        if (dbl) expect_device_merge_matches(o, packed, 1e-200, 1000, name(o) + " many", &many);
        else expect_device_merge_matches(o, as<float>(packed), 1e-200, 1000, name(o) + " many", &many);
        if (HasFatalFailure() || IsSkipped()) return;
        size_t without = 0, most = 0;
        pair_spread(many, 3000, &without, &most);
        EXPECT_GT(most, 16u) << "the many-pairs case should pass the download's 16 pairs a tensor";
        if (dbl) expect_device_merge_matches(o, packed, 1.5, 1000, name(o) + " few", &few);
        else expect_device_merge_matches(o, as<float>(packed), 1.5, 1000, name(o) + " few", &few);
        if (HasFatalFailure()) return;
        pair_spread(few, 3000, &without, &most);
        EXPECT_LE(most, 2u);
        tk_eigenpairs_free(&many);
        tk_eigenpairs_free(&few);
    }
}

// Ties at the merge tolerance: the tolerance set to the exact distance between two starts'
// vectors of one tensor (as the merge computes it), and to the double just below it, so the
// comparison d <= merge_tol is decided at its boundary on both sides.
TEST(SshopmDistinctCuda, TiesAtTheMergeTolerance)
{
    for (int m : {4, 3}) {
        auto o = options(m, 3, false, TK_BACKEND_CUDA, m == 4 ? TK_IMPL_UNROLLED : TK_IMPL_GENERAL);
        o.num_starts = 32, o.max_iter = 400;
        o.shift_mode = TK_SHIFT_ADAPTIVE, o.shift = 1.0;
        o.tol = 1e-2;
        auto packed = as<float>(random_packed(m, 3, 500, 5));
        StartResults<float> r;
        tk_status s = solve(o, packed, r);
        TK_SKIP_IF_NO_GPU(s);
        ASSERT_EQ(s, TK_OK) << tk_last_error();
        // tensor 0's first two converged starts, made unit (canonical sign for even m) as the merge does
        std::vector<std::vector<double>> units;
        for (int st = 0; st < o.num_starts && units.size() < 2; ++st) {
            if (!r.converged[st]) continue;
            std::vector<double> x(3);
            double norm2 = 0;
            for (int i = 0; i < 3; ++i) x[i] = r.x[st * 3 + i], norm2 += x[i] * x[i];
            for (int i = 0; i < 3; ++i) x[i] /= std::sqrt(norm2);
            if (m % 2 == 0) {
                int big = 0;
                for (int i = 1; i < 3; ++i)
                    if (std::fabs(x[i]) > std::fabs(x[big])) big = i;
                if (x[big] < 0)
                    for (double &v : x) v = -v;
            }
            units.push_back(x);
        }
        ASSERT_EQ(units.size(), 2u);
        double d2 = 0, e2 = 0;
        for (int i = 0; i < 3; ++i) {
            d2 += (units[0][i] - 1.0 * units[1][i]) * (units[0][i] - 1.0 * units[1][i]);
            e2 += (units[0][i] - -1.0 * units[1][i]) * (units[0][i] - -1.0 * units[1][i]);
        }
        double d = std::sqrt(d2);
        if (m % 2 == 0) d = std::fmin(d, std::sqrt(e2));
        ASSERT_GT(d, 0.0);
        for (double tol : {d, std::nextafter(d, 0.0), std::nextafter(d, 1.0)}) {
            expect_device_merge_matches(o, packed, tol, 200, "m " + std::to_string(m) + " tie " + std::to_string(tol));
            if (HasFatalFailure()) return;
        }
    }
}

// A batch larger than the pipeline's largest chunk (65536 tensors) on a plan made for no
// size: two chunks, the second partial.
TEST(SshopmDistinctCuda, BatchOverSeveralFullChunks)
{
    auto o = options(4, 3, false, TK_BACKEND_CUDA, TK_IMPL_UNROLLED);
    o.num_starts = 16, o.max_iter = 100;
    auto packed = as<float>(random_packed(4, 3, 70000, 12));
    expect_device_merge_matches(o, packed, 0, 0, "70000 tensors");
}

// Above dimension 16 the GPU solves and the host merges (the device merge's stack arrays stop
// at 16): the same pairs all the same.
TEST(SshopmDistinctCuda, WideTensorsMergeOnTheHost)
{
    auto o = options(3, 17, false, TK_BACKEND_CUDA, TK_IMPL_GENERAL);
    o.num_starts = 32, o.max_iter = 200, o.shift = 2.0;
    auto packed = as<float>(random_packed(3, 17, 300, 8));
    tk_eigenpairs kept{};
    expect_device_merge_matches(o, packed, 0, 100, "(3,17) general float", &kept);
    if (HasFatalFailure() || IsSkipped()) return;
    EXPECT_GT(kept.count, 0u);
    tk_eigenpairs_free(&kept);
}

// Over every visible GPU (each merging its share): the pairs of one merge of the batch.
TEST(SshopmDistinctCuda, SeveralDevices)
{
    const int devices = tk_cuda_device_count();
    if (devices < 2) GTEST_SKIP() << "SKIPPED: " << devices << " CUDA device(s) visible; a split needs 2";
    auto o = options(8, 3, false, TK_BACKEND_CUDA, TK_IMPL_UNROLLED);
    o.num_starts = 32, o.max_iter = 100;
    auto packed = as<float>(random_packed(8, 3, 5001, 3));
    tk_eigenpairs expected{};
    ASSERT_EQ(oracle_pairs(o, packed, 0, &expected), TK_OK) << tk_last_error();
    o.cuda_device_count = devices;
    tk_eigenpairs actual{};
    ASSERT_EQ(tk_sshopm_solve_distinct(&o, 5001, packed.data(), 0, &actual, nullptr), TK_OK) << tk_last_error();
    expect_same_pairs(expected, actual, "several devices");
    tk_eigenpairs_free(&expected);
    tk_eigenpairs_free(&actual);
}
