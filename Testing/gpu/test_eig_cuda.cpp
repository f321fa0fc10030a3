// The CUDA backend of the batched eigensolver (label gpu; skips without a GPU).
//
// Oracles: the eigenpair residual ||A v - lambda v|| <= c n eps ||A|| (backward
// stability, no reference needed), the cpu backend's eigenvalues, and LAPACK's
// dgeev where LAPACKE was found at configure time (the GPU machine may lack it).
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <string>

#include "eig_test_util.h"
#include "gpu_skip.h"
#include "tk_bench_hooks.h"
#include "tk_cuda_memory.h"
#ifdef TK_HAVE_LAPACKE
#include <lapacke.h>
#endif

using namespace tk_eig_test;

namespace {

constexpr double kC = 8;

// CUDA against cpu: same status, eigenvalues within a loose multiple of the bound
// (rounding differs: FMA contraction), eigenpair residuals at the backward-stable level.
template <typename R>
void expect_cuda_matches_cpu(int n, int count, bool vectors, size_t chunk = 0, int lanes = 0, int qr_grid = 0)
{
    auto batch = random_batch(n, count, 5000 + (uint64_t)n);
    tk_eig_options o;
    tk_eig_options_init(&o, n);
    o.cuda_chunk = chunk;
    o.cuda_lanes = lanes;
    o.cuda_qr_grid = qr_grid;
    Solved<R> cpu, gpu;
    ASSERT_EQ(solve<R>(o, batch, cpu, vectors), TK_OK) << tk_last_error();
    o.backend = TK_BACKEND_CUDA;
    tk_status s = solve<R>(o, batch, gpu, vectors);
    TK_SKIP_IF_NO_GPU(s);
    ASSERT_EQ(s, TK_OK) << tk_last_error();
    const double eps = sizeof(R) == sizeof(double) ? DBL_EPSILON : FLT_EPSILON;
    const size_t nn = (size_t)n * n;
    for (int b = 0; b < count; ++b) {
        ASSERT_EQ(gpu.status[b], cpu.status[b]) << "n=" << n << " lanes " << lanes << " matrix " << b;
        EXPECT_TRUE(sorted_row(gpu, b, n));
        std::vector<cd> g, c;
        for (int k = 0; k < n; ++k) g.push_back(gpu.value(b, n, k)), c.push_back(cpu.value(b, n, k));
        // random Gaussian matrices: eigenvalue condition numbers stay far below 1e4 here
        std::vector<double> bound(n, 1e4 * kC * n * eps * frobenius(batch, b * nn, n));
        EXPECT_LE(match_ratio(g, c, bound), 1.0) << "n=" << n << " lanes " << lanes << " matrix " << b;
        if (vectors) {
            EXPECT_LE(residual(batch, b, n, gpu), kC * n * eps) << "n=" << n << " lanes " << lanes << " matrix " << b;
        }
    }
}

}  // namespace

TEST(EigCuda, EveryOrderAndSchemeDouble)
{
    // thread-per-matrix for small n, warp for n <= 32, block above
    for (int n = 1; n <= 64; n += (n < 16 ? 1 : 7)) {
        expect_cuda_matches_cpu<double>(n, 300, false);
        if (HasFatalFailure() || IsSkipped()) return;
    }
}

TEST(EigCuda, EveryOrderAndSchemeSingle)
{
    for (int n : {1, 2, 3, 5, 8, 12, 16, 20, 31, 32, 33, 47, 64}) {
        expect_cuda_matches_cpu<float>(n, 200, false);
        if (HasFatalFailure() || IsSkipped()) return;
    }
}

TEST(EigCuda, EigenvectorsOnWarpAndBlockSchemes)
{
    for (int n : {2, 5, 10, 17, 30, 32, 40, 64}) {
        expect_cuda_matches_cpu<double>(n, 100, true);
        if (HasFatalFailure() || IsSkipped()) return;
        expect_cuda_matches_cpu<float>(n, 50, true);
        if (HasFatalFailure() || IsSkipped()) return;
    }
}

TEST(EigCuda, EveryLanesPerMatrixChoice)
{
    // sub-warp groups sync only their own lanes; odd n leave lanes idle in every loop
    for (int lanes : {1, 2, 4, 8, 16, 32, 64})
        for (int n : {2, 7, 8, 13, 30}) {
            if (lanes == 1 && n > 13) continue;  // a thread per matrix holds small matrices only
            expect_cuda_matches_cpu<double>(n, 150, false, 0, lanes);
            if (HasFatalFailure() || IsSkipped()) return;
            if (lanes == 1 && n <= 8) {  // the register kernel in single precision too
                expect_cuda_matches_cpu<float>(n, 150, false, 0, lanes);
                if (HasFatalFailure() || IsSkipped()) return;
            }
            // 16 double matrices with vectors of order 30 per warp outgrow shared memory
            if (lanes > 1 && !(lanes == 2 && n == 30)) {
                expect_cuda_matches_cpu<double>(n, 70, true, 0, lanes);
                if (HasFatalFailure() || IsSkipped()) return;
                expect_cuda_matches_cpu<float>(n, 70, true, 0, lanes);
                if (HasFatalFailure() || IsSkipped()) return;
            }
        }
    tk_eig_options o = eig_options(4, TK_BACKEND_CUDA);
    o.cuda_lanes = 3;
    Solved<double> r;
    EXPECT_EQ(solve<double>(o, random_batch(4, 2, 1), r, false), TK_ERR_ARGUMENT);
    o.cuda_lanes = 1;
    EXPECT_EQ(solve<double>(o, random_batch(4, 2, 1), r, true), TK_ERR_ARGUMENT);
    EXPECT_NE(std::strstr(tk_last_error(), "eigenvalues only"), nullptr) << tk_last_error();
    tk_eig_options_init(&o, 64);
    o.backend = TK_BACKEND_CUDA;
    o.cuda_lanes = 2;
    EXPECT_EQ(solve<double>(o, random_batch(64, 2, 1), r, true), TK_ERR_UNSUPPORTED);
    EXPECT_NE(std::strstr(tk_last_error(), "use more lanes per matrix"), nullptr) << tk_last_error();
}

// The structured matrices of test_eig.cpp (checked there against LAPACK on the cpu
// backend) on every values-only scheme: balancing's permutations (triangular,
// diagonal, zero), its scaling (D A D^-1), companion and repeated eigenvalues, a
// defective Jordan block, 1e-150 and 1e+150 scales, with balancing on and off.
TEST(EigCuda, StructuredMatricesOnEveryValuesScheme)
{
    for (int n : {2, 3, 4, 5, 6, 7, 8, 13, 17, 30, 33, 64}) {
        std::vector<std::vector<double>> family;
        family.push_back(random_matrix(n, 31));
        family.push_back(symmetric_matrix(n, 32));
        family.push_back(triangular_matrix(n, 33, true));
        family.push_back(triangular_matrix(n, 34, false));
        family.push_back(companion_matrix(n, 35));
        std::vector<double> diag((size_t)n * n, 0.0), zero((size_t)n * n, 0.0), rep;
        for (int i = 0; i < n; ++i) diag[(size_t)i * n + i] = (double)((i * 7) % n) - n / 2.0;
        family.push_back(diag);
        family.push_back(zero);
        for (double scale : {1e-150, 1e+150}) family.push_back(random_matrix(n, 36, scale));
        auto graded = random_matrix(n, 37);
        for (int i = 0; i < n; ++i)
            for (int j = 0; j < n; ++j) graded[(size_t)i * n + j] *= std::ldexp(1.0, 6 * ((i - j) % 9));
        family.push_back(graded);
        for (int i = 0; i < n; ++i) rep.push_back((double)(i % 3));
        family.push_back(orthogonal_similar(rep, 38));
        const bool jordan = n <= 8;  // beyond, eps^(1/n) says little
        if (jordan) family.push_back(jordan_block(n, 2.5));
        std::vector<double> batch;
        for (auto &m : family) batch.insert(batch.end(), m.begin(), m.end());
        const size_t nn = (size_t)n * n, count = family.size();
        for (int balance : {1, 0})
            for (int lanes : {0, 1, 8, 16, 32}) {
                if (lanes == 1 && n > 8) continue;  // the register kernel; above, the older per-thread kernel
                tk_eig_options o;
                tk_eig_options_init(&o, n);
                o.balance = balance;
                Solved<double> cpu, gpu;
                ASSERT_EQ(solve<double>(o, batch, cpu, false), TK_OK) << tk_last_error();
                o.backend = TK_BACKEND_CUDA;
                o.cuda_lanes = lanes;
                tk_status s = solve<double>(o, batch, gpu, false);
                TK_SKIP_IF_NO_GPU(s);
                ASSERT_EQ(s, TK_OK) << tk_last_error();
                for (size_t b = 0; b < count; ++b) {
                    // unbalanced, the lower triangular and the graded matrices have
                    // eigenvalue condition numbers far beyond this bound on any solver
                    if (!balance && (b == 3 || b == 9)) continue;
                    const std::string where = "n=" + std::to_string(n) + " lanes " + std::to_string(lanes) +
                                              " balance " + std::to_string(balance) + " matrix " + std::to_string(b);
                    ASSERT_EQ(gpu.status[b], cpu.status[b]) << where;
                    ASSERT_EQ(gpu.status[b], TK_EIG_CONVERGED) << where;
                    EXPECT_TRUE(sorted_row(gpu, b, n)) << where;
                    std::vector<cd> g, c;
                    for (int k = 0; k < n; ++k) g.push_back(gpu.value(b, n, k)), c.push_back(cpu.value(b, n, k));
                    const double anorm = frobenius(batch, b * nn, n);
                    const bool defective = jordan && b + 1 == count;
                    const double tol = defective ? 2 * kC * std::pow(n * DBL_EPSILON, 1.0 / n) * anorm
                                                 : 1e4 * kC * n * DBL_EPSILON * anorm;
                    EXPECT_LE(match_ratio(g, c, std::vector<double>(n, tol)), 1.0) << where;
                    if (b == 5 || b == 6) {  // diagonal and zero: exact
                        for (int k = 0; k < n; ++k) EXPECT_EQ(g[k], c[k]) << where;
                    }
                }
                if (HasFatalFailure()) return;
            }
    }
}

TEST(EigCuda, ChunksAndStreamsCoverTheWholeBatch)
{
    // 10,007 matrices in chunks of 1,000: 11 chunks over three streams, the last partial
    expect_cuda_matches_cpu<double>(6, 10007, false, 1000);
    if (HasFatalFailure() || IsSkipped()) return;
    expect_cuda_matches_cpu<double>(20, 2003, true, 300);
}

TEST(EigCuda, PinnedAndPageableHostArraysGiveTheSameResults)
{
    const int n = 9, count = 5000;
    auto batch = random_batch(n, count, 77);
    tk_eig_options o = eig_options(n, TK_BACKEND_CUDA);
    o.cuda_chunk = 1024;
    const size_t in_b = batch.size() * sizeof(double), val_b = 2 * (size_t)count * n * sizeof(double);
    double *pin_in = (double *)tk_eig_host_alloc(in_b), *pin_val = (double *)tk_eig_host_alloc(val_b);
    int8_t *pin_st = (int8_t *)tk_eig_host_alloc(count);
    ASSERT_TRUE(pin_in && pin_val && pin_st);
    std::memcpy(pin_in, batch.data(), in_b);
    tk_eig_result r = {pin_val, nullptr, pin_st};
    tk_status s = tk_eig_solve(&o, count, pin_in, &r, nullptr, nullptr);
    if (s != TK_OK) {
        tk_eig_host_free(pin_in), tk_eig_host_free(pin_val), tk_eig_host_free(pin_st);
    }
    TK_SKIP_IF_NO_GPU(s);
    ASSERT_EQ(s, TK_OK) << tk_last_error();
    Solved<double> pageable;
    ASSERT_EQ(solve<double>(o, batch, pageable, false), TK_OK) << tk_last_error();
    EXPECT_EQ(0, std::memcmp(pin_val, pageable.values.data(), val_b));
    EXPECT_EQ(0, std::memcmp(pin_st, pageable.status.data(), count));
    tk_eig_host_free(pin_in), tk_eig_host_free(pin_val), tk_eig_host_free(pin_st);
}

TEST(EigCuda, NonFiniteAndNotConvergedArePerMatrix)
{
    for (int n : {4, 24, 50}) {
        auto batch = random_batch(n, 6, 99);
        const size_t nn = (size_t)n * n;
        batch[1 * nn + 3] = NAN;
        batch[4 * nn + nn - 1] = -INFINITY;
        tk_eig_options o = eig_options(n, TK_BACKEND_CUDA);
        Solved<double> gpu;
        tk_status s = solve<double>(o, batch, gpu, n > 10);
        TK_SKIP_IF_NO_GPU(s);
        ASSERT_EQ(s, TK_OK) << tk_last_error();
        EXPECT_EQ(gpu.status, (std::vector<int8_t>{0, 2, 0, 0, 2, 0})) << "n=" << n;
        EXPECT_TRUE(std::isnan(gpu.values[2 * 1 * n]));
        if (n > 10) {
            EXPECT_LE(residual(batch, 2, n, gpu), kC * n * DBL_EPSILON);
        }
        o.max_iter = 1;
        ASSERT_EQ(solve<double>(o, batch, gpu, false), TK_OK);
        EXPECT_EQ(gpu.status, (std::vector<int8_t>{1, 2, 1, 1, 2, 1})) << "n=" << n;
    }
}

// The persistent QR kernel (n > 16, or at any n with tk_eig_options.cuda_qr_grid > 0) hands
// matrices out from a counter once the grid's first round is taken.  A grid of one block
// makes nearly every matrix come from the counter, into warps whose groups finished at
// different times.
constexpr int kOneQrBlock = 1;

TEST(EigCuda, PersistentQrHandsOutEveryMatrixOnce)
{
    for (int n : {12, 20, 30, 45}) {
        expect_cuda_matches_cpu<double>(n, 700, false, 0, 0, kOneQrBlock);
        if (HasFatalFailure() || IsSkipped()) return;
    }
    expect_cuda_matches_cpu<float>(25, 700, false, 0, 0, kOneQrBlock);
}

// ... and the statuses of non-finite and unconverged matrices among the refills
TEST(EigCuda, PersistentQrKeepsStatusesPerMatrix)
{
    const int n = 30, count = 300;
    auto batch = random_batch(n, count, 123);
    const size_t nn = (size_t)n * n;
    for (int b = 7; b < count; b += 37) batch[(size_t)b * nn + (size_t)(b % n)] = b % 2 ? NAN : INFINITY;
    tk_eig_options o;
    tk_eig_options_init(&o, n);
    o.cuda_qr_grid = kOneQrBlock;
    Solved<double> cpu, gpu;
    for (int max_iter : {0, 1}) {
        o.max_iter = max_iter;
        o.backend = TK_BACKEND_CPU;
        ASSERT_EQ(solve<double>(o, batch, cpu, false), TK_OK) << tk_last_error();
        o.backend = TK_BACKEND_CUDA;
        tk_status s = solve<double>(o, batch, gpu, false);
        TK_SKIP_IF_NO_GPU(s);
        ASSERT_EQ(s, TK_OK) << tk_last_error();
        EXPECT_EQ(gpu.status, cpu.status) << "max_iter " << max_iter;
        for (int b = 0; b < count; ++b) {
            std::vector<cd> g, c;
            for (int k = 0; k < n; ++k) g.push_back(gpu.value(b, n, k)), c.push_back(cpu.value(b, n, k));
            if (cpu.status[b]) {
                for (const cd &v : g) EXPECT_TRUE(std::isnan(v.real()) && std::isnan(v.imag())) << "matrix " << b;
            } else {
                std::vector<double> bound(n, 1e4 * kC * n * DBL_EPSILON * frobenius(batch, b * nn, n));
                EXPECT_LE(match_ratio(g, c, bound), 1.0) << "max_iter " << max_iter << " matrix " << b;
            }
        }
    }
}

// A plan's buffers, streams and staging are made once and reused: every execute equals a
// one-shot solve bit for bit (chunked past max_batch, and set up again for vectors), on
// each kernel family, and destroy gives back every byte of device memory.
TEST(EigCuda, PlanReuseMatchesOneShotAndFreesItsMemory)
{
    const size_t before = tk_cuda_memory_in_use();
    struct Case {
        int n, lanes, qr_grid;
    };
    for (Case k : {Case{5, 1, 0}, Case{5, 0, 0}, Case{12, 4, 0}, Case{25, 0, 0}, Case{20, 0, -1}, Case{40, 64, 0}}) {
        auto batch = random_batch(k.n, 300, 4000 + (uint64_t)k.n);
        batch[7 * (size_t)k.n * k.n] = NAN;
        tk_eig_options o = eig_options(k.n, TK_BACKEND_CUDA);
        o.cuda_lanes = k.lanes;
        o.cuda_qr_grid = k.qr_grid;
        o.cuda_slots = 2;
        o.cuda_chunk = 64;  // the one-shot solves chunk their batches as the plan does
        expect_plan_matches_solve<double>(o, batch, 100);
        if (HasFatalFailure() || IsSkipped()) return;
        expect_plan_matches_solve<float>(o, batch, 0);
        if (HasFatalFailure()) return;
    }
    tk_eig_options o = eig_options(8, TK_BACKEND_CUDA);
    tk_eig_plan *plan = nullptr;
    ASSERT_EQ(tk_eig_plan_create(&o, 1000, &plan), TK_OK) << tk_last_error();
    EXPECT_GT(tk_eig_plan_device_bytes(plan), 0u);
    EXPECT_GE(tk_cuda_memory_in_use(), before + tk_eig_plan_device_bytes(plan));
    tk_eig_plan_destroy(plan);
    EXPECT_EQ(tk_cuda_memory_in_use(), before);
}

TEST(EigCuda, MeasureReportsKernelAndCopyTimes)
{
    const int n = 10, count = 20000;
    auto batch = random_batch(n, count, 3);
    tk_eig_options o = eig_options(n, TK_BACKEND_CUDA);
    tk_eig_cuda_profile prof;
    tk_status s = tk_eig_cuda_measure(&o, count, batch.data(), &prof);
    TK_SKIP_IF_NO_GPU(s);
    ASSERT_EQ(s, TK_OK) << tk_last_error();
    EXPECT_GT(prof.kernel_ms, 0.0);
    EXPECT_GT(prof.copy_ms, 0.0);
    EXPECT_STREQ(prof.scheme, "4 lanes lockstep");  // the automatic choice at n = 10 (eig_cuda.cu's table)
    o.cuda_lanes = 1;
    ASSERT_EQ(tk_eig_cuda_measure(&o, count, batch.data(), &prof), TK_OK) << tk_last_error();
    EXPECT_STREQ(prof.scheme, "thread");
    auto small = random_batch(5, count, 4);
    tk_eig_options_init(&o, 5);
    o.backend = TK_BACKEND_CUDA;
    ASSERT_EQ(tk_eig_cuda_measure(&o, count, small.data(), &prof), TK_OK) << tk_last_error();
    EXPECT_STREQ(prof.scheme, "thread registers");  // the automatic choice at n = 5
}

#ifdef TK_HAVE_LAPACKE
TEST(EigCuda, MatchesLapackDgeev)
{
    for (int n : {3, 7, 15, 30, 45}) {
        auto batch = random_batch(n, 20, 4242 + (uint64_t)n);
        tk_eig_options o = eig_options(n, TK_BACKEND_CUDA);
        Solved<double> gpu;
        tk_status s = solve<double>(o, batch, gpu, false);
        TK_SKIP_IF_NO_GPU(s);
        ASSERT_EQ(s, TK_OK) << tk_last_error();
        const size_t nn = (size_t)n * n;
        for (int b = 0; b < 20; ++b) {
            std::vector<double> a(nn), wr(n), wi(n), vl(nn), vr(nn), scale(n), rce(n), rcv(n);
            for (int i = 0; i < n; ++i)
                for (int j = 0; j < n; ++j) a[(size_t)j * n + i] = batch[b * nn + (size_t)i * n + j];
            double abnrm;
            lapack_int ilo, ihi;
            ASSERT_EQ(LAPACKE_dgeevx(LAPACK_COL_MAJOR, 'B', 'V', 'V', 'E', n, a.data(), n, wr.data(), wi.data(),
                                     vl.data(), n, vr.data(), n, &ilo, &ihi, scale.data(), &abnrm, rce.data(),
                                     rcv.data()),
                      0);
            std::vector<cd> ref, got;
            std::vector<double> bound;
            const double anorm = frobenius(batch, b * nn, n);
            for (int k = 0; k < n; ++k) {
                ref.emplace_back(wr[k], wi[k]);
                got.push_back(gpu.value(b, n, k));
                bound.push_back(kC * n * DBL_EPSILON * anorm / std::max(rce[k], 1e-300));
            }
            EXPECT_LE(match_ratio(got, ref, bound), 1.0) << "n=" << n << " matrix " << b;
        }
    }
}
#else
TEST(EigCuda, MatchesLapackDgeev)
{
    GTEST_SKIP() << "SKIPPED: LAPACKE was not found at configure time; CUDA is compared with the cpu backend "
                    "and by eigenpair residuals in the other tests";
}
#endif
