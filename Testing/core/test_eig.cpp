// Batched eigenvalues (cpu and omp backends) against LAPACK's dgeevx/sgeevx.
//
// Eigenvalue sets must match to c * n * eps * ||A||_F / s_k, where s_k is LAPACK's
// reciprocal condition number of eigenvalue k (1 for normal matrices, so there the
// bound is the plain c * n * eps * ||A||); a Jordan block of size k, where s = 0, gets
// the defective bound (n eps)^(1/k) ||A||.  Eigenvectors: ||A v - lambda v|| <=
// c * n * eps * ||A|| for unit v, which backward stability guarantees at any conditioning.
#include <gtest/gtest.h>
#include <lapacke.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "eig_test_util.h"
#include "plan_test_util.h"

using namespace tk_eig_test;

namespace {

constexpr double kC = 8;  // the c of the bounds

template <typename R> struct Lapack;
template <> struct Lapack<double> {
    static constexpr double eps = DBL_EPSILON;
    static lapack_int geevx(int n, double *a, double *wr, double *wi, double *vl, double *vr, double *scale,
                            double *abnrm, double *rconde, double *rcondv)
    {
        lapack_int ilo, ihi;
        return LAPACKE_dgeevx(LAPACK_COL_MAJOR, 'B', 'V', 'V', 'E', n, a, n, wr, wi, vl, n, vr, n, &ilo, &ihi, scale,
                              abnrm, rconde, rcondv);
    }
};
template <> struct Lapack<float> {
    static constexpr double eps = FLT_EPSILON;
    static lapack_int geevx(int n, float *a, float *wr, float *wi, float *vl, float *vr, float *scale, float *abnrm,
                            float *rconde, float *rcondv)
    {
        lapack_int ilo, ihi;
        return LAPACKE_sgeevx(LAPACK_COL_MAJOR, 'B', 'V', 'V', 'E', n, a, n, wr, wi, vl, n, vr, n, &ilo, &ihi, scale,
                              abnrm, rconde, rcondv);
    }
};

// LAPACK's eigenvalues of one row-major matrix, with their condition bounds.
template <typename R> struct Reference {
    std::vector<cd> values;
    std::vector<double> bound;
};

template <typename R> Reference<R> lapack_reference(const double *rowmajor, int n, double extra = 1)
{
    std::vector<R> a((size_t)n * n), wr(n), wi(n), vl((size_t)n * n), vr((size_t)n * n), scale(n), rce(n), rcv(n);
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) a[(size_t)j * n + i] = (R)rowmajor[(size_t)i * n + j];
    R abnrm;
    double anorm = 0;
    for (size_t e = 0; e < (size_t)n * n; ++e) anorm += rowmajor[e] * rowmajor[e];
    anorm = std::sqrt(anorm);
    Reference<R> ref;
    lapack_int info = Lapack<R>::geevx(n, a.data(), wr.data(), wi.data(), vl.data(), vr.data(), scale.data(), &abnrm,
                                       rce.data(), rcv.data());
    EXPECT_EQ(info, 0) << "LAPACK geevx failed";
    for (int k = 0; k < n; ++k) {
        ref.values.emplace_back(wr[k], wi[k]);
        // both solvers are backward stable: each is off by ~eps ||A|| / s_k
        double s = std::max((double)rce[k], 1e-300);
        double b = kC * n * Lapack<R>::eps * anorm / s * extra;
        ref.bound.push_back(anorm > 0 ? b : 1e-300);
    }
    return ref;
}

// Every matrix converged, its row sorted, its eigenvalues LAPACK's within the bounds.
template <typename R>
void expect_values_match_lapack(const Solved<R> &got, const std::vector<double> &batch, int n, const std::string &what)
{
    const size_t nn = (size_t)n * n, count = batch.size() / nn;
    for (size_t b = 0; b < count; ++b) {
        ASSERT_EQ(got.status[b], TK_EIG_CONVERGED) << what << " n=" << n << " matrix " << b;
        EXPECT_TRUE(sorted_row(got, b, n)) << what << " n=" << n;
        auto ref = lapack_reference<R>(batch.data() + b * nn, n);
        std::vector<cd> ours;
        for (int k = 0; k < n; ++k) ours.push_back(got.value(b, n, k));
        EXPECT_LE(match_ratio(ours, ref.values, ref.bound), 1.0) << what << " n=" << n << " matrix " << b;
    }
}

template <typename R>
void expect_matches_lapack(const std::vector<double> &batch, int n, const char *what, tk_backend backend = TK_BACKEND_CPU,
                           bool check_vectors = true, int balance = 1)
{
    tk_eig_options o = eig_options(n, backend);
    o.balance = balance;
    Solved<R> got;
    ASSERT_EQ(solve<R>(o, batch, got, check_vectors), TK_OK) << tk_last_error();
    expect_values_match_lapack(got, batch, n, what);
    if (!check_vectors) return;
    const size_t count = batch.size() / ((size_t)n * n);
    const double eps = sizeof(R) == sizeof(double) ? DBL_EPSILON : FLT_EPSILON;
    for (size_t b = 0; b < count; ++b)
        EXPECT_LE(residual(batch, b, n, got), kC * n * eps) << what << " eigenvectors, n=" << n << " matrix " << b;
    // values alone take the lockstep SIMD path (several matrices per vector): the same oracle
    Solved<R> alone;
    ASSERT_EQ(solve<R>(o, batch, alone, false), TK_OK) << tk_last_error();
    expect_values_match_lapack(alone, batch, n, std::string(what) + " values only,");
}

}  // namespace

TEST(Eig, RandomDoubleEveryOrderTo64)
{
    for (int n = 1; n <= 64; ++n) {
        expect_matches_lapack<double>(random_batch(n, n <= 16 ? 6 : 2, 100 + (uint64_t)n), n, "random");
        if (HasFatalFailure()) return;
    }
}

TEST(Eig, RandomSingleAgainstSgeev)
{
    for (int n : {1, 2, 3, 4, 5, 7, 10, 16, 25, 32, 48, 64}) {
        expect_matches_lapack<float>(random_batch(n, 4, 200 + (uint64_t)n), n, "random float");
        if (HasFatalFailure()) return;
    }
}

TEST(Eig, Symmetric)
{
    for (int n : {2, 3, 6, 13, 30, 64}) expect_matches_lapack<double>(batch_of(n, 3, 300, symmetric_matrix), n, "symmetric");
}

TEST(Eig, TriangularUpperAndLower)
{
    for (int n : {2, 5, 17, 40}) {
        std::vector<double> batch;
        for (bool upper : {true, false}) {
            auto a = triangular_matrix(n, 400 + (uint64_t)n, upper);
            batch.insert(batch.end(), a.begin(), a.end());
        }
        expect_matches_lapack<double>(batch, n, "triangular");
        // exact diagonal: the eigenvalues are the diagonal entries
        tk_eig_options o;
        tk_eig_options_init(&o, n);
        Solved<double> got;
        ASSERT_EQ(solve<double>(o, batch, got, false), TK_OK);
        std::vector<double> diag;
        for (int i = 0; i < n; ++i) diag.push_back(batch[(size_t)i * n + i]);
        std::sort(diag.begin(), diag.end());
        for (int k = 0; k < n; ++k) {
            EXPECT_NEAR(got.value(0, n, k).real(), diag[k], 1e-14 * (1 + std::fabs(diag[k])));
            EXPECT_EQ(got.value(0, n, k).imag(), 0.0);
        }
    }
}

TEST(Eig, Companion)
{
    for (int n : {2, 3, 5, 8, 12, 20, 30}) expect_matches_lapack<double>(batch_of(n, 3, 500, companion_matrix), n, "companion");
}

TEST(Eig, DiagonalAndZeroAreExact)
{
    for (int n : {1, 4, 33, 64}) {
        std::vector<double> batch((size_t)2 * n * n, 0.0);
        for (int i = 0; i < n; ++i) batch[(size_t)n * n + (size_t)i * n + i] = (double)((i * 7) % n) - n / 2.0;
        tk_eig_options o;
        tk_eig_options_init(&o, n);
        Solved<double> got;
        ASSERT_EQ(solve<double>(o, batch, got, true), TK_OK);
        std::vector<double> diag;
        for (int i = 0; i < n; ++i) diag.push_back(batch[(size_t)n * n + (size_t)i * n + i]);
        std::sort(diag.begin(), diag.end());
        for (int k = 0; k < n; ++k) {
            EXPECT_EQ(got.value(0, n, k), cd(0, 0)) << "zero matrix, n=" << n;
            EXPECT_EQ(got.value(1, n, k), cd(diag[k], 0)) << "diagonal, n=" << n;
        }
        EXPECT_LE(residual(batch, 1, n, got), 1e-15);
        // zero matrix: any unit vector is an eigenvector; they must be finite unit vectors
        for (int k = 0; k < n; ++k) {
            double v2 = 0;
            for (int i = 0; i < n; ++i) v2 += std::norm(got.vector(0, n, i, k));
            EXPECT_NEAR(v2, 1.0, 1e-12);
        }
    }
}

TEST(Eig, RepeatedEigenvalues)
{
    for (int n : {4, 9, 20, 50}) {
        std::vector<double> d;
        for (int i = 0; i < n; ++i) d.push_back((double)(i % 3));  // each value ~n/3 times
        auto a = orthogonal_similar(d, 600 + (uint64_t)n);
        expect_matches_lapack<double>(a, n, "repeated (symmetric)");
        // and against the exact values
        tk_eig_options o;
        tk_eig_options_init(&o, n);
        Solved<double> got;
        ASSERT_EQ(solve<double>(o, a, got, false), TK_OK);
        std::sort(d.begin(), d.end());
        for (int k = 0; k < n; ++k) EXPECT_NEAR(std::abs(got.value(0, n, k) - d[k]), 0.0, kC * n * DBL_EPSILON * 2 * n);
    }
}

TEST(Eig, JordanBlockMeetsTheDefectiveBound)
{
    for (int k : {2, 3, 4, 6, 8}) {
        auto a = jordan_block(k, 2.5);
        // a similarity by a well-conditioned random matrix keeps it defective but not triangular
        auto s = random_matrix(k, 700 + (uint64_t)k, 0.1);
        for (int i = 0; i < k; ++i) s[(size_t)i * k + i] += 1;
        std::vector<double> sinv((size_t)k * k, 0.0), m((size_t)2 * k * k);
        {
            std::vector<double> t(s);
            for (int i = 0; i < k; ++i) sinv[(size_t)i * k + i] = 1;
            for (int col = 0; col < k; ++col) {  // Gauss-Jordan, diagonally dominant
                double p = t[(size_t)col * k + col];
                for (int j = 0; j < k; ++j) t[(size_t)col * k + j] /= p, sinv[(size_t)col * k + j] /= p;
                for (int r = 0; r < k; ++r)
                    if (r != col) {
                        double f = t[(size_t)r * k + col];
                        for (int j = 0; j < k; ++j)
                            t[(size_t)r * k + j] -= f * t[(size_t)col * k + j], sinv[(size_t)r * k + j] -= f * sinv[(size_t)col * k + j];
                    }
            }
        }
        std::vector<double> sj((size_t)k * k, 0.0);
        for (int i = 0; i < k; ++i)
            for (int j = 0; j < k; ++j)
                for (int q = 0; q < k; ++q) sj[(size_t)i * k + j] += s[(size_t)i * k + q] * a[(size_t)q * k + j];
        for (int i = 0; i < k; ++i)
            for (int j = 0; j < k; ++j) {
                double v = 0;
                for (int q = 0; q < k; ++q) v += sj[(size_t)i * k + q] * sinv[(size_t)q * k + j];
                m[(size_t)k * k + (size_t)i * k + j] = v;
            }
        std::copy(a.begin(), a.end(), m.begin());
        tk_eig_options o;
        tk_eig_options_init(&o, k);
        Solved<double> got;
        ASSERT_EQ(solve<double>(o, m, got, true), TK_OK);
        for (size_t b = 0; b < 2; ++b) {
            ASSERT_EQ(got.status[b], TK_EIG_CONVERGED);
            const double anorm = frobenius(m, b * (size_t)k * k, k);
            const double bound = kC * std::pow(k * DBL_EPSILON, 1.0 / k) * anorm;
            for (int q = 0; q < k; ++q)
                EXPECT_LE(std::abs(got.value(b, k, q) - 2.5), bound) << "Jordan block of size " << k << " matrix " << b;
            EXPECT_LE(residual(m, b, k, got), kC * k * DBL_EPSILON) << "Jordan block eigenvectors, size " << k;
        }
    }
}

TEST(Eig, ExtremeScalesKeepTheirEigenvalues)
{
    for (int n : {3, 10, 31}) {
        auto a = random_matrix(n, 800 + (uint64_t)n);
        tk_eig_options o;
        tk_eig_options_init(&o, n);
        Solved<double> base;
        ASSERT_EQ(solve<double>(o, a, base, false), TK_OK);
        auto ref = lapack_reference<double>(a.data(), n);
        for (double scale : {1e-150, 1e+150}) {
            std::vector<double> s(a);
            for (auto &v : s) v *= scale;
            Solved<double> got;
            ASSERT_EQ(solve<double>(o, s, got, true), TK_OK);
            ASSERT_EQ(got.status[0], TK_EIG_CONVERGED);
            std::vector<cd> ours;
            for (int k = 0; k < n; ++k) {
                ours.push_back(got.value(0, n, k) / scale);
                EXPECT_GT(std::abs(got.value(0, n, k)), 0.0) << "underflowed at scale " << scale;
            }
            EXPECT_LE(match_ratio(ours, ref.values, ref.bound), 1.0) << "scale " << scale << " n=" << n;
            EXPECT_LE(residual(s, 0, n, got), kC * n * DBL_EPSILON) << "scale " << scale;
            // against LAPACK on the scaled matrix itself too
            expect_matches_lapack<double>(s, n, "scaled");
        }
    }
}

TEST(Eig, BalancingRescuesABadlyScaledMatrixAndCanBeSwitchedOff)
{
    const int n = 8;
    auto a = random_matrix(n, 900);
    std::vector<double> d(n);
    for (int i = 0; i < n; ++i) d[i] = std::ldexp(1.0, 12 * i);  // D A D^-1: same eigenvalues
    std::vector<double> s(a);
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) s[(size_t)i * n + j] *= d[i] / d[j];
    auto ref = lapack_reference<double>(a.data(), n);
    tk_eig_options o;
    tk_eig_options_init(&o, n);
    Solved<double> on, off;
    ASSERT_EQ(solve<double>(o, s, on, true), TK_OK);
    std::vector<cd> ours;
    for (int k = 0; k < n; ++k) ours.push_back(on.value(0, n, k));
    EXPECT_LE(match_ratio(ours, ref.values, ref.bound), 1.0) << "balanced";
    o.balance = 0;
    ASSERT_EQ(solve<double>(o, s, off, true), TK_OK);
    ASSERT_EQ(off.status[0], TK_EIG_CONVERGED);
    EXPECT_LE(residual(s, 0, n, off), kC * n * DBL_EPSILON) << "unbalanced: still a backward-stable eigenpair";
    expect_matches_lapack<double>(a, n, "unbalanced", TK_BACKEND_CPU, true, 0);
}

// num_failed over a batch long enough for the word-at-a-time count: failures alone and
// side by side in one eight-byte word, at the batch's start and in its tail.
TEST(Eig, FailedCountCoversTheWholeBatch)
{
    const int n = 3, count = 1003;
    auto batch = random_batch(n, count, 4000);
    const std::vector<size_t> bad = {0, 9, 10, 11, 512, 999, 1000, 1002};
    for (size_t b : bad) batch[b * 9 + 4] = NAN;
    tk_eig_options o;
    tk_eig_options_init(&o, n);
    std::vector<double> values(2 * (size_t)count * n);
    std::vector<int8_t> status(count);
    tk_eig_result r = {values.data(), nullptr, status.data()};
    size_t failed = 0;
    ASSERT_EQ(tk_eig_solve(&o, count, batch.data(), &r, nullptr, &failed), TK_OK) << tk_last_error();
    EXPECT_EQ(failed, bad.size());
    r.status = nullptr; /* the library's own status array */
    failed = 0;
    ASSERT_EQ(tk_eig_solve(&o, count, batch.data(), &r, nullptr, &failed), TK_OK) << tk_last_error();
    EXPECT_EQ(failed, bad.size());
}

TEST(Eig, NonFiniteMatricesAreReportedPerMatrix)
{
    const int n = 6;
    auto batch = random_batch(n, 5, 1000);
    batch[2 * 36 + 7] = NAN;
    batch[3 * 36 + 35] = INFINITY;
    for (auto backend : {TK_BACKEND_CPU, TK_BACKEND_OMP}) {
        tk_eig_options o = eig_options(n, backend);
        Solved<double> got;
        size_t failed = 0;
        std::vector<double> in(batch);
        std::vector<double> values(2 * 5 * n), vectors(2 * 5 * 36);
        std::vector<int8_t> status(5);
        tk_eig_result r = {values.data(), vectors.data(), status.data()};
        ASSERT_EQ(tk_eig_solve(&o, 5, in.data(), &r, nullptr, &failed), TK_OK);
        EXPECT_EQ(failed, 2u);
        EXPECT_EQ(status, (std::vector<int8_t>{0, 0, 2, 2, 0}));
        for (int k = 0; k < 2 * n; ++k) EXPECT_TRUE(std::isnan(values[2 * 2 * n + k]) && std::isnan(values[3 * 2 * n + k]));
        // the input is untouched and the good matrices are solved as alone
        EXPECT_TRUE(std::isnan(in[2 * 36 + 7]));
        got.values.assign(values.begin(), values.end());
        got.vectors.assign(vectors.begin(), vectors.end());
        for (size_t b : {0u, 1u, 4u}) EXPECT_LE(residual(batch, b, n, got), kC * n * DBL_EPSILON);
    }
    EXPECT_STREQ(tk_eig_status_name(TK_EIG_NONFINITE), "non-finite");
}

TEST(Eig, IterationCapReportsNotConverged)
{
    const int n = 12;
    auto batch = random_batch(n, 3, 1100);
    std::vector<double> diag((size_t)n * n, 0.0);
    for (int i = 0; i < n; ++i) diag[(size_t)i * n + i] = i;
    batch.insert(batch.end(), diag.begin(), diag.end());  // converges with no iteration at all
    tk_eig_options o;
    tk_eig_options_init(&o, n);
    o.max_iter = 1;
    Solved<double> got;
    ASSERT_EQ(solve<double>(o, batch, got, false), TK_OK);
    for (int b = 0; b < 3; ++b) {
        EXPECT_EQ(got.status[b], TK_EIG_NOT_CONVERGED);
        EXPECT_TRUE(std::isnan(got.values[2 * b * n]));
    }
    EXPECT_EQ(got.status[3], TK_EIG_CONVERGED);
    EXPECT_EQ(got.value(3, n, n - 1), cd(n - 1, 0));
}

TEST(Eig, OmpMatchesCpuBitForBit)
{
    for (int n : {3, 17, 64}) {
        auto batch = random_batch(n, 40, 1200);
        tk_eig_options o;
        tk_eig_options_init(&o, n);
        Solved<double> cpu, omp;
        ASSERT_EQ(solve<double>(o, batch, cpu, true), TK_OK);
        o.backend = TK_BACKEND_OMP;
        o.num_threads = 2;
        ASSERT_EQ(solve<double>(o, batch, omp, true), TK_OK);
        EXPECT_EQ(cpu.values, omp.values);
        EXPECT_EQ(cpu.vectors, omp.vectors);
        EXPECT_EQ(cpu.status, omp.status);
    }
}

TEST(Eig, VectorsAreUnitWithLargestComponentRealPositive)
{
    const int n = 9;
    auto a = random_matrix(n, 1300);
    tk_eig_options o;
    tk_eig_options_init(&o, n);
    Solved<double> got;
    ASSERT_EQ(solve<double>(o, a, got, true), TK_OK);
    for (int k = 0; k < n; ++k) {
        double v2 = 0, best = -1;
        cd big;
        for (int i = 0; i < n; ++i) {
            cd v = got.vector(0, n, i, k);
            v2 += std::norm(v);
            if (std::norm(v) > best * (1 + 1e-12)) best = std::norm(v), big = v;
        }
        EXPECT_NEAR(v2, 1.0, 1e-13);
        EXPECT_GT(big.real(), 0.0);
        EXPECT_EQ(big.imag(), 0.0);
        // a conjugate pair has conjugate vectors
        if (got.value(0, n, k).imag() < 0) {
            ASSERT_LT(k + 1, n);
            EXPECT_EQ(got.value(0, n, k + 1), std::conj(got.value(0, n, k)));
        }
    }
}

TEST(Eig, RejectsBadArguments)
{
    tk_eig_options o;
    double a = 1, v[2];
    tk_eig_result r = {v, nullptr, nullptr};
    tk_eig_options_init(&o, 0);
    EXPECT_EQ(tk_eig_solve(&o, 1, &a, &r, nullptr, nullptr), TK_ERR_UNSUPPORTED);
    EXPECT_NE(std::strstr(tk_last_error(), "order 0"), nullptr) << tk_last_error();
    tk_eig_options_init(&o, TK_EIG_MAX_N + 1);
    EXPECT_EQ(tk_eig_solve(&o, 1, &a, &r, nullptr, nullptr), TK_ERR_UNSUPPORTED);
    tk_eig_options_init(&o, 1);
    tk_eig_result none = {nullptr, nullptr, nullptr};
    EXPECT_EQ(tk_eig_solve(&o, 1, &a, &none, nullptr, nullptr), TK_ERR_ARGUMENT);
    EXPECT_EQ(tk_eig_solve(&o, 1, nullptr, &r, nullptr, nullptr), TK_ERR_ARGUMENT);
    o.backend = (tk_backend)9;
    EXPECT_EQ(tk_eig_solve(&o, 1, &a, &r, nullptr, nullptr), TK_ERR_ARGUMENT);
    tk_eig_options_init(&o, 1);
    EXPECT_EQ(tk_eig_solve(&o, 1, &a, &r, nullptr, nullptr), TK_OK);
    EXPECT_EQ(v[0], 1.0);
    EXPECT_EQ(v[1], 0.0);
    EXPECT_EQ(tk_eig_solve(&o, 0, nullptr, &none, nullptr, nullptr), TK_OK);
}

TEST(EigPlan, ReusedOverSeveralBatchesMatchesOneShotSolvesBitwise)
{
    for (int n : {2, 5, 12}) {
        std::vector<double> batch = random_batch(n, 40, 900);
        batch[3 * (size_t)n * n] = NAN;  // a failure among them
        for (auto backend : {TK_BACKEND_CPU, TK_BACKEND_OMP}) {
            tk_eig_options o = eig_options(n, backend);
            expect_plan_matches_solve<double>(o, batch, 16);
            expect_plan_matches_solve<float>(o, batch, 0);
        }
    }
}

TEST(EigPlan, BadArgumentsGiveClearErrors)
{
    tk_eig_options o;
    tk_eig_options_init(&o, 3);
    tk_test::expect_create_refuses_missing_arguments(tk_eig_plan_create, o);
    tk_eig_plan *plan = nullptr;
    tk_eig_options bad = o;
    bad.n = 0;
    EXPECT_EQ(tk_eig_plan_create(&bad, 4, &plan), TK_ERR_UNSUPPORTED);
    EXPECT_NE(std::strstr(tk_last_error(), "order 0"), nullptr) << tk_last_error();
    bad = o;
    bad.cuda_slots = 17;
    EXPECT_EQ(tk_eig_plan_create(&bad, 4, &plan), TK_ERR_ARGUMENT);
    EXPECT_NE(std::strstr(tk_last_error(), "cuda_slots"), nullptr) << tk_last_error();
    bad = o;
    bad.cuda_reduce_lanes = 3;
    EXPECT_EQ(tk_eig_plan_create(&bad, 4, &plan), TK_ERR_ARGUMENT);
    EXPECT_NE(std::strstr(tk_last_error(), "cuda_reduce_lanes"), nullptr) << tk_last_error();

    ASSERT_EQ(tk_eig_plan_create(&o, 4, &plan), TK_OK) << tk_last_error();
    EXPECT_EQ(tk_eig_plan_device_bytes(plan), 0u);  // the cpu backend holds no device memory
    std::vector<double> a(9, 1.0), v(6);
    tk_eig_result r = {v.data(), nullptr, nullptr}, none = {nullptr, nullptr, nullptr};
    EXPECT_EQ(tk_eig_plan_execute(nullptr, 1, a.data(), &r, nullptr, nullptr), TK_ERR_ARGUMENT);
    EXPECT_EQ(tk_eig_plan_execute(plan, 1, nullptr, &r, nullptr, nullptr), TK_ERR_ARGUMENT);
    EXPECT_EQ(tk_eig_plan_execute(plan, 1, a.data(), &none, nullptr, nullptr), TK_ERR_ARGUMENT);
    EXPECT_EQ(tk_eig_plan_execute(plan, 0, nullptr, &none, nullptr, nullptr), TK_OK);  // an empty batch
    EXPECT_EQ(tk_eig_plan_execute(plan, 1, a.data(), &r, nullptr, nullptr), TK_OK) << tk_last_error();
    tk_eig_plan_destroy(plan);
    tk_eig_plan_destroy(nullptr);
}

TEST(Eig, LockstepGroupsMixPathsAndFailuresPerMatrix)
{
    // values only: matrices go through the SIMD lockstep kernel in groups; a NaN, a
    // triangular one (balancing isolates its eigenvalues: the one-matrix path), a zero
    // one and a partial last group must each come out as when solved alone
    for (auto backend : {TK_BACKEND_CPU, TK_BACKEND_OMP})
        for (int n : {3, 8, 21}) {
            const size_t nn = (size_t)n * n;
            std::vector<double> batch;
            for (int b = 0; b < 37; ++b) {
                std::vector<double> a;
                if (b % 9 == 4) a = triangular_matrix(n, 50 + (uint64_t)b, true);
                else if (b % 11 == 6) a.assign(nn, 0.0);
                else a = random_matrix(n, 70 + (uint64_t)b);
                if (b == 10) a[nn / 2] = NAN;
                batch.insert(batch.end(), a.begin(), a.end());
            }
            tk_eig_options o = eig_options(n, backend);
            Solved<double> group, alone;
            ASSERT_EQ(solve<double>(o, batch, group, false), TK_OK);
            ASSERT_EQ(solve<double>(o, batch, alone, true), TK_OK);  // with vectors: one matrix at a time
            for (size_t b = 0; b < 37; ++b) {
                ASSERT_EQ(group.status[b], b == 10 ? TK_EIG_NONFINITE : TK_EIG_CONVERGED) << "n=" << n << " matrix " << b;
                EXPECT_EQ(alone.status[b], group.status[b]);
                if (b == 10) continue;
                std::vector<cd> g, a;
                for (int k = 0; k < n; ++k) g.push_back(group.value(b, n, k)), a.push_back(alone.value(b, n, k));
                auto ref = lapack_reference<double>(batch.data() + b * nn, n);
                EXPECT_LE(match_ratio(g, ref.values, ref.bound), 1.0) << "n=" << n << " matrix " << b;
            }
        }
}
