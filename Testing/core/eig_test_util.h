// Shared helpers of the eigenvalue tests: test matrices, solving through the C API,
// eigenvalue-set matching and eigenpair residuals.
#pragma once

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstddef>
#include <cstring>
#include <cstdint>
#include <random>
#include <vector>

#include "gpu_skip.h"
#include "tk_eig.h"

namespace tk_eig_test {

using cd = std::complex<double>;

// Row-major n x n matrices.
inline std::vector<double> random_matrix(int n, uint64_t seed, double scale = 1)
{
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> g(0, 1);
    std::vector<double> a((size_t)n * n);
    for (auto &v : a) v = g(rng) * scale;
    return a;
}

// count matrices of order n made by make(n, seed), make(n, seed + 1), ..., one after another.
inline std::vector<double> batch_of(int n, int count, uint64_t seed, std::vector<double> (*make)(int, uint64_t))
{
    std::vector<double> out;
    for (int b = 0; b < count; ++b) {
        auto a = make(n, seed + (uint64_t)b);
        out.insert(out.end(), a.begin(), a.end());
    }
    return out;
}

// count random_matrix(n, ...) matrices, seeds seed, seed + 1, ...
inline std::vector<double> random_batch(int n, int count, uint64_t seed)
{
    return batch_of(n, count, seed, [](int order, uint64_t s) { return random_matrix(order, s); });
}

// tk_eig_options_init's defaults for order n, on backend b.
inline tk_eig_options eig_options(int n, tk_backend b)
{
    tk_eig_options o;
    tk_eig_options_init(&o, n);
    o.backend = b;
    return o;
}

inline std::vector<double> symmetric_matrix(int n, uint64_t seed)
{
    auto a = random_matrix(n, seed);
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < i; ++j) a[(size_t)i * n + j] = a[(size_t)j * n + i];
    return a;
}

inline std::vector<double> triangular_matrix(int n, uint64_t seed, bool upper)
{
    auto a = random_matrix(n, seed);
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j)
            if (upper ? j < i : j > i) a[(size_t)i * n + j] = 0;
    return a;
}

// Companion matrix of a monic polynomial with random coefficients.
inline std::vector<double> companion_matrix(int n, uint64_t seed)
{
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(-1, 1);
    std::vector<double> a((size_t)n * n, 0.0);
    for (int j = 0; j < n; ++j) a[j] = -u(rng);
    for (int i = 1; i < n; ++i) a[(size_t)i * n + i - 1] = 1;
    return a;
}

// One Jordan block of size n for eigenvalue lambda (defective).
inline std::vector<double> jordan_block(int n, double lambda)
{
    std::vector<double> a((size_t)n * n, 0.0);
    for (int i = 0; i < n; ++i) {
        a[(size_t)i * n + i] = lambda;
        if (i + 1 < n) a[(size_t)i * n + i + 1] = 1;
    }
    return a;
}

// Q diag(d) Q^T with a random orthogonal Q (Gram-Schmidt of a Gaussian matrix).
inline std::vector<double> orthogonal_similar(const std::vector<double> &d, uint64_t seed)
{
    const int n = (int)d.size();
    auto q = random_matrix(n, seed);
    for (int j = 0; j < n; ++j) {
        for (int k = 0; k < j; ++k) {
            double dot = 0;
            for (int i = 0; i < n; ++i) dot += q[(size_t)i * n + j] * q[(size_t)i * n + k];
            for (int i = 0; i < n; ++i) q[(size_t)i * n + j] -= dot * q[(size_t)i * n + k];
        }
        double nrm = 0;
        for (int i = 0; i < n; ++i) nrm += q[(size_t)i * n + j] * q[(size_t)i * n + j];
        nrm = std::sqrt(nrm);
        for (int i = 0; i < n; ++i) q[(size_t)i * n + j] /= nrm;
    }
    std::vector<double> a((size_t)n * n, 0.0);
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j)
            for (int k = 0; k < n; ++k) a[(size_t)i * n + j] += q[(size_t)i * n + k] * d[k] * q[(size_t)j * n + k];
    return a;
}

inline double frobenius(const std::vector<double> &a, size_t offset, int n)
{
    double s = 0;
    for (size_t e = 0; e < (size_t)n * n; ++e) s += a[offset + e] * a[offset + e];
    return std::sqrt(s);
}

template <typename R> struct Solved {
    std::vector<R> values, vectors;
    std::vector<int8_t> status;
    cd value(size_t b, int n, int k) const { return cd(values[2 * (b * n + k)], values[2 * (b * n + k) + 1]); }
    cd vector(size_t b, int n, int i, int k) const
    {
        size_t e = 2 * (b * (size_t)n * n + (size_t)i * n + k);
        return cd(vectors[e], vectors[e + 1]);
    }
};

template <typename R>
tk_status solve(tk_eig_options o, const std::vector<double> &batch, Solved<R> &out, bool vectors)
{
    const size_t nn = (size_t)o.n * o.n, count = batch.size() / nn;
    o.precision = sizeof(R) == sizeof(double) ? TK_PRECISION_DOUBLE : TK_PRECISION_SINGLE;
    std::vector<R> in(batch.begin(), batch.end());
    out.values.assign(2 * count * o.n, R(-7));
    out.vectors.assign(vectors ? 2 * count * nn : 0, R(-7));
    out.status.assign(count, int8_t(-1));
    tk_eig_result r = {out.values.data(), vectors ? out.vectors.data() : nullptr, out.status.data()};
    return tk_eig_solve(&o, count, in.data(), &r, nullptr, nullptr);
}

// One plan over several batches (the first matrix alone, the whole batch, larger than
// max_batch: chunked, then the whole batch with vectors, which sets the plan up again),
// against one tk_eig_solve of each: the same bits, statuses and failure counts.
template <typename R>
void expect_plan_matches_solve(tk_eig_options o, const std::vector<double> &batch, size_t max_batch)
{
    o.precision = sizeof(R) == sizeof(double) ? TK_PRECISION_DOUBLE : TK_PRECISION_SINGLE;
    const size_t nn = (size_t)o.n * o.n, count = batch.size() / nn;
    tk_eig_plan *plan = nullptr;
    tk_status s = tk_eig_plan_create(&o, max_batch, &plan);
    TK_SKIP_IF_NO_GPU(s);
    ASSERT_EQ(s, TK_OK) << tk_last_error();
    struct Run {
        size_t matrices;
        bool vectors;
    };
    for (Run run : {Run{1, false}, Run{count, false}, Run{count, true}, Run{1, false}}) {
        if (run.vectors && o.cuda_lanes == 1) continue;
        std::vector<double> part(batch.begin(), batch.begin() + (std::ptrdiff_t)(run.matrices * nn));
        Solved<R> once;
        ASSERT_EQ(solve<R>(o, part, once, run.vectors), TK_OK) << tk_last_error();
        std::vector<R> in(part.begin(), part.end());
        Solved<R> planned;
        planned.values.assign(once.values.size(), R(-7));
        planned.vectors.assign(once.vectors.size(), R(-7));
        planned.status.assign(run.matrices, int8_t(-1));
        tk_eig_result r = {planned.values.data(), run.vectors ? planned.vectors.data() : nullptr,
                           planned.status.data()};
        size_t failed = 99;
        tk_timing t{};
        ASSERT_EQ(tk_eig_plan_execute(plan, run.matrices, in.data(), &r, &t, &failed), TK_OK) << tk_last_error();
        EXPECT_EQ(0, std::memcmp(once.values.data(), planned.values.data(), sizeof(R) * once.values.size()))
            << "n=" << o.n << " matrices " << run.matrices << " vectors " << run.vectors;
        if (run.vectors) {
            EXPECT_EQ(0, std::memcmp(once.vectors.data(), planned.vectors.data(), sizeof(R) * once.vectors.size()));
        }
        EXPECT_EQ(once.status, planned.status);
        EXPECT_EQ(failed, (size_t)std::count_if(once.status.begin(), once.status.end(), [](int8_t v) { return v != 0; }));
        // kernel_ms sums the chunks' kernel times over the plan's streams, which overlap: it may
        // exceed the wall time of the call, so only both being measured is checked.
        EXPECT_GT(t.kernel_ms, 0.0);
        EXPECT_GT(t.total_ms, 0.0);
    }
    tk_eig_plan_destroy(plan);
}

// max over k of ||A v_k - lambda_k v_k|| / (||A||_F) for matrix b (vectors have unit norm).
template <typename R>
double residual(const std::vector<double> &batch, size_t b, int n, const Solved<R> &s)
{
    const double *a = batch.data() + b * (size_t)n * n;
    double anorm = 0, worst = 0;
    for (size_t e = 0; e < (size_t)n * n; ++e) anorm += a[e] * a[e];
    anorm = std::sqrt(anorm);
    for (int k = 0; k < n; ++k) {
        cd lambda = s.value(b, n, k);
        double r2 = 0, v2 = 0;
        for (int i = 0; i < n; ++i) {
            cd sum = 0;
            for (int j = 0; j < n; ++j) sum += a[(size_t)i * n + j] * s.vector(b, n, j, k);
            sum -= lambda * s.vector(b, n, i, k);
            r2 += std::norm(sum);
            v2 += std::norm(s.vector(b, n, i, k));
        }
        worst = std::max(worst, std::sqrt(r2) / (anorm > 0 ? anorm : 1) / std::sqrt(v2));
    }
    return worst;
}

// Match `got` to `ref` greedily, the most tightly bounded reference first; returns the
// largest ratio |got - ref| / bound (<= 1 passes).
inline double match_ratio(const std::vector<cd> &got, const std::vector<cd> &ref, const std::vector<double> &bound)
{
    const size_t n = ref.size();
    std::vector<size_t> order(n);
    for (size_t i = 0; i < n; ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t x, size_t y) { return bound[x] < bound[y]; });
    std::vector<bool> used(got.size(), false);
    double worst = 0;
    for (size_t r : order) {
        size_t best = got.size();
        double bd = INFINITY;
        for (size_t g = 0; g < got.size(); ++g)
            if (!used[g] && std::abs(got[g] - ref[r]) < bd) bd = std::abs(got[g] - ref[r]), best = g;
        if (best == got.size()) return INFINITY;
        used[best] = true;
        worst = std::max(worst, bd / bound[r]);
    }
    return worst;
}

template <typename R> bool sorted_row(const Solved<R> &s, size_t b, int n)
{
    for (int k = 1; k < n; ++k) {
        cd p = s.value(b, n, k - 1), q = s.value(b, n, k);
        if (p.real() > q.real() || (p.real() == q.real() && p.imag() > q.imag())) return false;
    }
    return true;
}

}  // namespace tk_eig_test
