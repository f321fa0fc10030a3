// SS-HOPM on the CPU backends: eigenpair equation, known cases, agreement, stability.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "plan_test_util.h"
#include "sshopm_test_util.h"
#include "tk_sshopm.h"
#include "tk_test_util.h"

using namespace tk_test;

namespace {

double residual(int m, int n, const double *packed, const double *x, double lambda)
{
    std::vector<double> y(n);
    tk_sym_axm1_d(m, n, packed, x, y.data());
    double r = 0;
    for (int i = 0; i < n; ++i) r += (y[i] - lambda * x[i]) * (y[i] - lambda * x[i]);
    return std::sqrt(r);
}

}  // namespace

TEST(Sshopm, ConvergedStartsSatisfyTheEigenpairEquationInDouble)
{
    for (auto mn : {std::pair{3, 3}, {4, 3}, {4, 5}, {5, 2}, {6, 3}, {8, 3}}) {
        const int m = mn.first, n = mn.second;
        auto packed = random_packed(m, n, 6, (uint64_t)(m * 10 + n));
        for (auto impl : {TK_IMPL_GENERAL, TK_IMPL_UNROLLED}) {
            if (impl == TK_IMPL_UNROLLED && !tk_sshopm_has_unrolled(m, n)) continue;
            for (auto shift : {TK_SHIFT_ADAPTIVE, TK_SHIFT_FIXED}) {
                auto o = options(m, n, true, TK_BACKEND_CPU, impl);
                o.shift_mode = shift;
                o.shift = shift == TK_SHIFT_FIXED ? 2.0 * m : 0.0;  // a large fixed shift converges (slowly)
                o.max_iter = 20000;
                o.tol = 1e-14;
                StartResults<double> r;
                ASSERT_EQ(solve(o, packed, r), TK_OK) << tk_last_error();
                size_t k = tk_sym_num_unique(m, n), converged = 0;
                for (size_t slot = 0; slot < r.lambda.size(); ++slot) {
                    if (!r.converged[slot]) continue;
                    ++converged;
                    const double *A = packed.data() + slot / o.num_starts * k, *x = r.x.data() + slot * n;
                    EXPECT_LT(residual(m, n, A, x, r.lambda[slot]), 1e-10) << "m=" << m << " n=" << n;
                    EXPECT_NEAR(r.lambda[slot], tk_sym_axm_d(m, n, A, x), 1e-12);
                    double norm = 0;
                    for (int i = 0; i < n; ++i) norm += x[i] * x[i];
                    EXPECT_NEAR(norm, 1.0, 1e-12);
                }
                EXPECT_GT(converged, r.lambda.size() * 9 / 10) << "m=" << m << " n=" << n << " shift " << shift;
            }
        }
    }
}

TEST(Sshopm, DiagonalTensorHasTheAxesAsMaxima)
{
    // A = sum_i d_i e_i^m: for m >= 3 and d_i > 0 every axis is a local maximum with lambda = d_i.
    const int m = 4, n = 3;
    const double d[3] = {3.0, 2.0, 1.0};
    std::vector<double> packed(tk_sym_num_unique(m, n), 0.0);
    for (int i = 0; i < n; ++i) {
        int idx[4] = {i, i, i, i};
        packed[tk_sym_rank(m, n, idx)] = d[i];
    }
    auto o = options(m, n, true);
    o.num_starts = 64;
    tk_eigenpairs pairs;
    ASSERT_EQ(solve_distinct(o, packed, &pairs), TK_OK);
    ASSERT_EQ(pairs.count, 3u);
    for (size_t p = 0; p < 3; ++p) {
        EXPECT_NEAR(pairs.lambda[p], d[p], 1e-12);  // sorted by lambda descending
        EXPECT_NEAR(pairs.x[p * 3 + p], 1.0, 1e-9);  // +e_p (largest entry positive)
        EXPECT_EQ(pairs.stability[p], TK_STABILITY_MAX);
    }
    tk_eigenpairs_free(&pairs);
}

TEST(Sshopm, RankOneTensorsLargestPairIsItsVector)
{
    std::mt19937_64 rng(2);
    for (int m : {3, 4, 6, 8}) {
        const int n = 3;
        auto v = random_unit(n, rng);
        auto packed = rank_one(m, n, v, 2.5);
        for (bool dbl : {false, true}) {
            auto o = options(m, n, dbl);
            StartResults<double> rd;
            StartResults<float> rf;
            tk_eigenpairs pairs;
            if (dbl) {
                ASSERT_EQ(solve(o, packed, rd), TK_OK);
                auto view = rd.view();
                ASSERT_EQ(tk_sshopm_distinct(&o, 1, packed.data(), &view, 0, &pairs), TK_OK);
            } else {
                std::vector<float> pf(packed.begin(), packed.end());
                ASSERT_EQ(solve(o, pf, rf), TK_OK);
                auto view = rf.view();
                ASSERT_EQ(tk_sshopm_distinct(&o, 1, pf.data(), &view, 0, &pairs), TK_OK);
            }
            ASSERT_GE(pairs.count, 1u);
            EXPECT_NEAR(pairs.lambda[0], 2.5, dbl ? 1e-10 : 1e-5) << "m=" << m;
            double dot = 0;
            for (int i = 0; i < n; ++i) dot += pairs.x[i] * v[i];
            EXPECT_NEAR(std::fabs(dot), 1.0, dbl ? 1e-10 : 1e-5);
            if (m % 2) {  // odd m: -v has lambda -2.5
                EXPECT_NEAR(dot, 1.0, dbl ? 1e-10 : 1e-5);
            }
            EXPECT_EQ(pairs.stability[0], TK_STABILITY_MAX);
            tk_eigenpairs_free(&pairs);
        }
    }
}

TEST(Sshopm, IdentityLikeTensorFixesEveryUnitVector)
{
    // E x^4 = (x.x)^2: A x^3 = x for every unit x, so each start is an eigenvector, lambda 1.
    const int m = 4, n = 3;
    std::vector<double> full(81, 0.0);
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j)
            for (int k = 0; k < 3; ++k)
                for (int l = 0; l < 3; ++l)
                    full[((i * 3 + j) * 3 + k) * 3 + l] = ((i == j && k == l) + (i == k && j == l) + (i == l && j == k)) / 3.0;
    std::vector<double> packed(15);
    ASSERT_EQ(tk_sym_pack_d(m, n, full.data(), 1e-15, packed.data(), nullptr), TK_OK);
    auto o = options(m, n, true, TK_BACKEND_CPU, TK_IMPL_UNROLLED);
    o.shift_mode = TK_SHIFT_FIXED;
    o.shift = 1.0;
    StartResults<double> r;
    ASSERT_EQ(solve(o, packed, r), TK_OK);
    std::vector<double> starts((size_t)o.num_starts * n);
    ASSERT_EQ(tk_sshopm_make_starts(&o, starts.data()), TK_OK);
    for (int s = 0; s < o.num_starts; ++s) {
        EXPECT_TRUE(r.converged[s]);
        EXPECT_NEAR(r.lambda[s], 1.0, 1e-14);
        EXPECT_LE(r.iterations[s], 1);
        for (int i = 0; i < n; ++i) EXPECT_NEAR(r.x[(size_t)s * n + i], starts[(size_t)s * n + i], 1e-14);
    }
    EXPECT_EQ(tk_sym_stability_d(m, n, packed.data(), r.x.data(), 1.0, 1e-8), TK_STABILITY_DEGENERATE);
}

TEST(Sshopm, BackendsAndImplementationsAgree)
{
    for (int m : {4, 6, 8}) {
        const int n = 3;
        auto packed = random_packed(m, n, 40, (uint64_t)m);
        for (bool dbl : {false, true}) {
            auto base = options(m, n, dbl);
            base.shift_mode = TK_SHIFT_ADAPTIVE;
            std::vector<float> pf(packed.begin(), packed.end());
            StartResults<double> refd, gotd;
            StartResults<float> reff, gotf;
            ASSERT_EQ(dbl ? solve(base, packed, refd) : solve(base, pf, reff), TK_OK);
            for (auto backend : {TK_BACKEND_CPU, TK_BACKEND_OMP})
                for (auto impl : {TK_IMPL_GENERAL, TK_IMPL_UNROLLED}) {
                    auto o = base;
                    o.backend = backend, o.impl = impl, o.num_threads = 2;
                    ASSERT_EQ(dbl ? solve(o, packed, gotd) : solve(o, pf, gotf), TK_OK);
                    size_t slots = dbl ? refd.lambda.size() : reff.lambda.size(), agree = 0;
                    for (size_t s = 0; s < slots; ++s) {
                        double l0 = dbl ? refd.lambda[s] : reff.lambda[s], l1 = dbl ? gotd.lambda[s] : gotf.lambda[s];
                        bool c0 = dbl ? refd.converged[s] : reff.converged[s], c1 = dbl ? gotd.converged[s] : gotf.converged[s];
                        if (c0 && c1 && std::fabs(l0 - l1) <= (dbl ? 1e-10 : 2e-5) * (1 + std::fabs(l0))) ++agree;
                        if (backend == TK_BACKEND_OMP && impl == TK_IMPL_GENERAL) {  // same code, same bits
                            EXPECT_EQ(l0, l1);
                        }
                    }
                    // Rounding can send a start near a ridge to another pair; nearly all must agree.
                    EXPECT_GE(agree, slots * 97 / 100) << "m=" << m << " dbl=" << dbl << " impl=" << impl;
                }
        }
    }
}

TEST(Sshopm, AdaptiveShiftFindsMaximaAndMinima)
{
    const int m = 4, n = 3;
    auto packed = random_packed(m, n, 10, 99);
    for (double sign : {1.0, -1.0}) {
        auto o = options(m, n, true);
        o.shift_mode = TK_SHIFT_ADAPTIVE;
        o.shift = sign;
        tk_eigenpairs pairs;
        ASSERT_EQ(solve_distinct(o, packed, &pairs), TK_OK);
        ASSERT_GT(pairs.count, 0u);
        for (size_t p = 0; p < pairs.count; ++p)
            EXPECT_EQ(pairs.stability[p], sign > 0 ? TK_STABILITY_MAX : TK_STABILITY_MIN) << "pair " << p;
        // The largest maximum of each tensor is the global maximum of A x^m on a dense sphere sampling.
        if (sign > 0) {
            std::mt19937_64 rng(1);
            for (size_t t = 0; t < 10; ++t) {
                double best = -1e300;
                for (int s = 0; s < 20000; ++s) {
                    auto x = random_unit(n, rng);
                    best = std::max(best, tk_sym_axm_d(m, n, packed.data() + t * 15, x.data()));
                }
                double top = -1e300;
                for (size_t p = 0; p < pairs.count; ++p)
                    if (pairs.tensor[p] == t) top = std::max(top, pairs.lambda[p]);
                EXPECT_GE(top, best - 1e-9);
                EXPECT_LE(top - best, 0.05 * (1 + std::fabs(best)));
            }
        }
        tk_eigenpairs_free(&pairs);
    }
}

TEST(Sshopm, StabilityMatchesFiniteDifferenceHessianOnTheSphere)
{
    // Oracle: second differences of f along great circles through x, in a tangent basis.
    const int m = 4, n = 3;
    auto packed = random_packed(m, n, 8, 1234);
    auto o = options(m, n, true);
    o.shift_mode = TK_SHIFT_FIXED;
    o.shift = 0;
    o.max_iter = 5000;
    int checked = 0;
    for (double shift : {8.0, -8.0}) {
        o.shift = shift;
        tk_eigenpairs pairs;
        ASSERT_EQ(solve_distinct(o, packed, &pairs), TK_OK);
        for (size_t p = 0; p < pairs.count; ++p) {
            const double *A = packed.data() + pairs.tensor[p] * 15, *x = pairs.x + p * 3;
            // tangent basis u, w
            double a[3] = {1, 0, 0};
            if (std::fabs(x[0]) > 0.9) a[0] = 0, a[1] = 1;
            double d = a[0] * x[0] + a[1] * x[1] + a[2] * x[2];
            double u[3], w[3];
            for (int i = 0; i < 3; ++i) u[i] = a[i] - d * x[i];
            double nu = std::sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);
            for (double &e : u) e /= nu;
            w[0] = x[1] * u[2] - x[2] * u[1], w[1] = x[2] * u[0] - x[0] * u[2], w[2] = x[0] * u[1] - x[1] * u[0];
            auto f = [&](double s, double t) {
                double y[3];
                for (int i = 0; i < 3; ++i) y[i] = x[i] + s * u[i] + t * w[i];
                double nn = std::sqrt(y[0] * y[0] + y[1] * y[1] + y[2] * y[2]);
                for (double &e : y) e /= nn;
                return tk_sym_axm_d(m, n, A, y);
            };
            const double h = 1e-4, f0 = f(0, 0);
            double huu = (f(h, 0) - 2 * f0 + f(-h, 0)) / (h * h), hww = (f(0, h) - 2 * f0 + f(0, -h)) / (h * h);
            double huw = (f(h, h) - f(h, -h) - f(-h, h) + f(-h, -h)) / (4 * h * h);
            double mean = (huu + hww) / 2, rad = std::sqrt((huu - hww) * (huu - hww) / 4 + huw * huw);
            double e1 = mean - rad, e2 = mean + rad, scale = std::max(std::fabs(e1), std::fabs(e2));
            if (std::min(std::fabs(e1), std::fabs(e2)) < 1e-3 * scale) continue;  // too close to call by FD
            tk_stability expect = e2 < 0 ? TK_STABILITY_MAX : e1 > 0 ? TK_STABILITY_MIN : TK_STABILITY_SADDLE;
            EXPECT_EQ(pairs.stability[p], expect) << "pair " << p << " e=" << e1 << "," << e2;
            ++checked;
        }
        tk_eigenpairs_free(&pairs);
    }
    EXPECT_GT(checked, 10);
}

TEST(Sshopm, CallerStartsAreUsedAndBadOptionsAreRejected)
{
    const int m = 4, n = 3;
    auto packed = random_packed(m, n, 1, 4);
    auto o = options(m, n, true);
    std::vector<double> starts = {0, 0, 2, 1, 0, 0};
    o.starts = starts.data();
    o.num_starts = 2;
    o.max_iter = 0;
    StartResults<double> r;
    ASSERT_EQ(solve(o, packed, r), TK_OK);
    EXPECT_DOUBLE_EQ(r.x[2], 1.0);  // normalized, unchanged with no iterations
    EXPECT_DOUBLE_EQ(r.x[3], 1.0);

    auto bad = options(m, n, true);
    bad.order = 1;
    EXPECT_EQ(solve(bad, packed, r), TK_ERR_ARGUMENT);
    bad = options(5, 3, true, TK_BACKEND_CPU, TK_IMPL_UNROLLED);
    auto p5 = random_packed(5, 3, 1, 1);
    EXPECT_EQ(solve(bad, p5, r), TK_ERR_UNSUPPORTED);
    EXPECT_NE(std::string(tk_last_error()).find("unrolled"), std::string::npos);
    auto nan = packed;
    nan[3] = NAN;
    EXPECT_EQ(solve(options(m, n, true), nan, r), TK_ERR_DATA);
    std::vector<double> zero = {0, 0, 0};
    o.starts = zero.data();
    o.num_starts = 1;
    EXPECT_EQ(solve(o, packed, r), TK_ERR_DATA);
}

TEST(SshopmPlan, ReusedOverSeveralBatchesMatchesOneShotSolvesBitwise)
{
    for (int m : {4, 5}) {
        const int n = 3;
        auto packed = random_packed(m, n, 9, (uint64_t)m + 20);
        std::vector<float> pf(packed.begin(), packed.end());
        for (auto backend : {TK_BACKEND_CPU, TK_BACKEND_OMP}) {
            auto o = options(m, n, true, backend, m == 4 ? TK_IMPL_UNROLLED : TK_IMPL_GENERAL);
            o.shift_mode = TK_SHIFT_ADAPTIVE;
            expect_plan_matches_solve(o, packed, 4);
            o.precision = TK_PRECISION_SINGLE;
            o.tol = tk_sshopm_default_tol(o.precision);
            expect_plan_matches_solve(o, pf, 0);
        }
    }
}

TEST(SshopmPlan, CallerStartsAreCopiedIntoThePlan)
{
    auto packed = random_packed(4, 3, 2, 8);
    auto o = options(4, 3, true);
    std::vector<double> starts = {0, 0, 2, 1, 1, 0};
    o.starts = starts.data();
    o.num_starts = 2;
    StartResults<double> once;
    ASSERT_EQ(solve(o, packed, once), TK_OK);
    tk_sshopm_plan *plan = nullptr;
    ASSERT_EQ(tk_sshopm_plan_create(&o, 2, &plan), TK_OK) << tk_last_error();
    starts.assign(6, 0.0);  // the plan holds its own copy
    StartResults<double> planned;
    resize(o, 2, planned);
    auto v = planned.view();
    ASSERT_EQ(tk_sshopm_plan_execute(plan, 2, packed.data(), &v, nullptr), TK_OK) << tk_last_error();
    EXPECT_EQ(once.lambda, planned.lambda);
    EXPECT_EQ(once.x, planned.x);
    tk_sshopm_plan_destroy(plan);
}

TEST(SshopmPlan, BadArgumentsGiveClearErrors)
{
    auto o = options(4, 3, true);
    expect_create_refuses_missing_arguments(tk_sshopm_plan_create, o);
    tk_sshopm_plan *plan = nullptr;
    auto bad = o;
    bad.order = 1;
    EXPECT_EQ(tk_sshopm_plan_create(&bad, 1, &plan), TK_ERR_ARGUMENT);
    EXPECT_NE(std::string(tk_last_error()).find("order"), std::string::npos);
    bad = o;
    bad.backend = (tk_backend)42;
    EXPECT_EQ(tk_sshopm_plan_create(&bad, 1, &plan), TK_ERR_ARGUMENT);
    EXPECT_NE(std::string(tk_last_error()).find("backend"), std::string::npos);

    ASSERT_EQ(tk_sshopm_plan_create(&o, 1, &plan), TK_OK) << tk_last_error();
    auto packed = random_packed(4, 3, 1, 5);
    StartResults<double> r;
    resize(o, 1, r);
    auto v = r.view();
    EXPECT_EQ(tk_sshopm_plan_execute(nullptr, 1, packed.data(), &v, nullptr), TK_ERR_ARGUMENT);
    EXPECT_EQ(tk_sshopm_plan_execute(plan, 1, nullptr, &v, nullptr), TK_ERR_ARGUMENT);
    EXPECT_EQ(tk_sshopm_plan_execute(plan, 1, packed.data(), nullptr, nullptr), TK_ERR_ARGUMENT);
    packed[2] = NAN;
    EXPECT_EQ(tk_sshopm_plan_execute(plan, 1, packed.data(), &v, nullptr), TK_ERR_DATA);
    EXPECT_EQ(tk_sshopm_plan_execute(plan, 0, nullptr, &v, nullptr), TK_OK);  // an empty batch
    tk_sshopm_plan_destroy(plan);
    tk_sshopm_plan_destroy(nullptr);
}

TEST(Sshopm, FlopCountIsTheSeedsFor43)
{
    EXPECT_DOUBLE_EQ(tk_sshopm_flops_per_iteration(4, 3), 140.0);
    EXPECT_DOUBLE_EQ(tk_sshopm_flops_per_iteration(8, 3), 3 * (8 * 36 + 35));
}
