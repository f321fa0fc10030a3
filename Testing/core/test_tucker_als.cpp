// FastTucker's exact row solves of the factors (ALS, TK_TUCKER_FACTOR_ALS): the solve against
// the loss gradient it must zero, storage and thread-count independence, resumption, and ALS
// with a fixed core reaching a planted model's noise floor without tuning (issue 26).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "tucker_test_util.h"

using namespace tk_test;

namespace {

tk_tucker_options als(tk_backend backend)
{
    tk_tucker_options o;
    tk_tucker_options_init(&o);
    o.backend = backend;
    o.factor_update = TK_TUCKER_FACTOR_ALS;
    o.lr_b = 0;  // the core as it starts, as tk-tucker train --als runs it
    return o;
}

double max_abs(const std::vector<double> &v)
{
    double m = 0;
    for (double x : v) m = std::fmax(m, std::fabs(x));
    return m;
}

}  // namespace

TEST(TuckerAls, TheDefaultsStayTheSeedsSgd)
{
    tk_tucker_options o;
    tk_tucker_options_init(&o);
    EXPECT_EQ(o.factor_update, TK_TUCKER_FACTOR_SGD);
    EXPECT_EQ(o.lr_a, 0.05);
    EXPECT_EQ(o.lr_b, 1.0);
}

// The last mode's rows are solved with every other factor final, so the solution they were
// relaxed towards, a* = a + (a' - a) / omega, must zero the gradient of
// f = sum e^2 + lambda_a |A|^2 with respect to A(N): checked against tk_tucker_gradient (itself
// checked against finite differences of the dense Tucker loss in test_tucker.cpp).
TEST(TuckerAls, RowSolvesZeroTheLossGradientOfTheirRows)
{
    for (int dbl : {1, 0}) {
        auto so = synth_options(3, {12, 10, 8}, 300, 4, 0.2, 4);
        so.unique = 1;
        Coo t;
        Model init, after;
        ASSERT_NO_FATAL_FAILURE(synth_with_start(so, 4, 5, 6, &t, &init));
        auto o = als(TK_BACKEND_CPU);
        o.lambda_a = 0.03;
        o.fiber_threshold = 7;  // rows split into sub-slices: the solve sums them all
        o.precision = dbl ? TK_PRECISION_DOUBLE : TK_PRECISION_SINGLE;
        ASSERT_NO_FATAL_FAILURE(factors_once(o, t.t, init.m, &after.m));
        const int last = 2, J = 4;
        const double omega = 1.0;  // TK_TUCKER_ALS_OMEGA (tucker_internal.h)
        const size_t na = (size_t)so.dims[last] * J;
        Model star;
        ASSERT_EQ(tk_tucker_model_copy(&star.m, &after.m), TK_OK);
        for (size_t k = 0; k < na; ++k)
            star.m.a[last][k] = (float)(init.m.a[last][k] + (after.m.a[last][k] - (double)init.m.a[last][k]) / omega);
        std::vector<std::vector<double>> ga(3), gb(3), g0a(3);
        std::vector<double *> pa(3), pb(3);
        for (int n = 0; n < 3; ++n) {
            ga[n].resize((size_t)so.dims[n] * J), gb[n].resize((size_t)J * 5);
            pa[n] = ga[n].data(), pb[n] = gb[n].data();
        }
        // The scale: the same gradient where the row started (every other factor final).
        Model before;
        ASSERT_EQ(tk_tucker_model_copy(&before.m, &after.m), TK_OK);
        for (size_t k = 0; k < na; ++k) before.m.a[last][k] = init.m.a[last][k];
        ASSERT_EQ(tk_tucker_gradient(&before.m, &t.t, o.lambda_a, 0, pa.data(), pb.data()), TK_OK);
        const double start = max_abs(ga[last]);
        ASSERT_EQ(tk_tucker_gradient(&star.m, &t.t, o.lambda_a, 0, pa.data(), pb.data()), TK_OK);
        EXPECT_GT(start, 1e-2);
        EXPECT_LT(max_abs(ga[last]), (dbl ? 1e-6 : 1e-3) * start) << (dbl ? "double" : "float");
        // The other modes moved too, and the row moved by omega times the solve's step.
        EXPECT_GT(max_abs_diff(after.m, init.m), 1e-2);
    }
}

TEST(TuckerAls, CooAndSplitBcsfSolveTheSameRows)
{
    auto so = synth_options(3, {60, 40, 30}, 6000, 8, 0.1, 21);
    Coo t;
    Model init, coo, bcsf;
    ASSERT_NO_FATAL_FAILURE(synth_with_start(so, 8, 8, 1, &t, &init));
    auto o = als(TK_BACKEND_CPU);
    o.precision = TK_PRECISION_DOUBLE;
    o.lr_b = 0.5;  // the core pass too
    o.fiber_threshold = 5;
    train(o, t.t, init.m, 3, &bcsf.m);
    o.storage = TK_TUCKER_COO;
    train(o, t.t, init.m, 3, &coo.m);
    // The same equations summed in another order.
    EXPECT_LT(max_abs_diff(bcsf.m, coo.m), 1e-8);
    EXPECT_GT(max_abs_diff(bcsf.m, init.m), 1e-2);
}

TEST(TuckerAls, OmpEqualsCpuBitForBitAndResumesExactly)
{
    auto so = synth_options(4, {50, 40, 30, 20}, 20000, 8, 0.1, 5);
    Coo t;
    Model init, cpu, omp, half, resumed;
    ASSERT_NO_FATAL_FAILURE(synth_with_start(so, 8, 6, 8, &t, &init));
    auto o = als(TK_BACKEND_CPU);
    o.fiber_threshold = 16;
    train(o, t.t, init.m, 4, &cpu.m);
    o.backend = TK_BACKEND_OMP;
    o.num_threads = 3;
    train(o, t.t, init.m, 4, &omp.m);
    EXPECT_TRUE(models_identical(cpu.m, omp.m)) << max_abs_diff(cpu.m, omp.m);
    train(o, t.t, init.m, 2, &half.m);
    train(o, t.t, half.m, 2, &resumed.m);
    EXPECT_TRUE(models_identical(omp.m, resumed.m)) << max_abs_diff(omp.m, resumed.m);
}

// Issue 26: row solves and a fixed core, no rate to tune, train a planted model until the
// held-out RMSE is within 5% of the noise the data was drawn with; eight data sets and starts (they get there
// in 5-33 iterations, in float and in double).  Not every start of every shape does:
// Documentation/benchmarks.md, "Time to accuracy".
TEST(TuckerAls, ReachesThePlantedNoiseFloorWithoutTuning)
{
    auto o = als(TK_BACKEND_OMP);
    o.num_threads = 2;
    expect_als_reaches_planted_floor(o);
}
