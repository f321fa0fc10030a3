// Helpers of the concurrency and GPU-memory tests: each core run once through its C API
// with its outputs flattened into one Result, two runs started together on two threads,
// and the comparison of results (bit for bit, or within a tolerance where a backend's
// atomics make the rounding vary from run to run).
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "pltf_test_util.h"
#include "tk_eig.h"
#include "tk_fibers.h"
#include "tk_sh_test_util.h"
#include "tk_sshopm.h"
#include "tk_thread_test_util.h"
#include "tk_tucker.h"
#include "tucker_test_util.h"

namespace tk_test {

// What one call produced: its status and message, and every output value in one array
// (floats and integers are exact in double, so bitwise equality survives the widening).
struct Result {
    tk_status status = TK_OK;
    std::string error;
    std::vector<double> values;
};

inline Result failed(tk_status s)
{
    Result r;
    r.status = s;
    r.error = tk_last_error();
    return r;
}

template <typename T> void append(Result &r, const T *data, size_t count)
{
    for (size_t i = 0; i < count; ++i) r.values.push_back((double)data[i]);
}

// Both results OK and the same bit for bit (tol 0) or within tol relative to 1 + |value|.
inline ::testing::AssertionResult same_result(const Result &a, const Result &b, double tol = 0)
{
    if (a.status != TK_OK || b.status != TK_OK)
        return ::testing::AssertionFailure() << "status " << a.status << " (" << a.error << ") and " << b.status << " ("
                                             << b.error << ")";
    if (a.values.size() != b.values.size())
        return ::testing::AssertionFailure() << a.values.size() << " values against " << b.values.size();
    if (tol == 0) {
        if (std::memcmp(a.values.data(), b.values.data(), sizeof(double) * a.values.size()) == 0)
            return ::testing::AssertionSuccess();
        for (size_t i = 0; i < a.values.size(); ++i)
            if (std::memcmp(&a.values[i], &b.values[i], sizeof(double)))
                return ::testing::AssertionFailure() << "value " << i << ": " << a.values[i] << " against " << b.values[i];
    }
    for (size_t i = 0; i < a.values.size(); ++i) {
        const double x = a.values[i], y = b.values[i];
        if (std::isnan(x) && std::isnan(y)) continue;
        if (!(std::fabs(x - y) <= tol * (1 + std::fabs(y))))
            return ::testing::AssertionFailure() << "value " << i << ": " << x << " against " << y << " (tolerance " << tol
                                                 << ")";
    }
    return ::testing::AssertionSuccess();
}

// The same call on two inputs, one after the other and then (rounds times) on two
// threads at once: every concurrent result equals its sequential one.
template <typename Input>
void expect_concurrent_equals_sequential(const Input &in_a, const Input &in_b, const std::function<Result(const Input &)> &run,
                                         double tol = 0, int rounds = 3)
{
    const Result seq_a = run(in_a), seq_b = run(in_b);
    ASSERT_EQ(seq_a.status, TK_OK) << seq_a.error;
    ASSERT_EQ(seq_b.status, TK_OK) << seq_b.error;
    for (int round = 0; round < rounds; ++round) {
        Result par_a, par_b;
        run_concurrently([&] { par_a = run(in_a); }, [&] { par_b = run(in_b); });
        EXPECT_TRUE(same_result(par_a, seq_a, tol)) << "first thread, round " << round;
        EXPECT_TRUE(same_result(par_b, seq_b, tol)) << "second thread, round " << round;
    }
}

// ---- SS-HOPM ---------------------------------------------------------------------------

struct SshopmInput {
    tk_sshopm_options opts;
    std::vector<double> packed; // converted to opts.precision at the call
};

inline SshopmInput sshopm_input(tk_backend backend, tk_impl impl, bool dbl, size_t tensors, uint64_t seed)
{
    SshopmInput in;
    tk_sshopm_options_init(&in.opts, 4, 3);
    in.opts.precision = dbl ? TK_PRECISION_DOUBLE : TK_PRECISION_SINGLE;
    in.opts.tol = tk_sshopm_default_tol(in.opts.precision);
    in.opts.backend = backend;
    in.opts.impl = impl;
    in.opts.shift = 2; /* fixed: converges for these random tensors in a few dozen steps */
    in.opts.max_iter = 300;
    in.opts.num_starts = 24;
    in.opts.seed = seed;
    in.opts.num_threads = 2;
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(-1, 1);
    in.packed.resize(tensors * tk_sym_num_unique(4, 3));
    for (auto &v : in.packed) v = u(rng);
    return in;
}

template <typename R> Result sshopm_run_typed(const SshopmInput &in)
{
    const tk_sshopm_options &o = in.opts;
    const size_t T = in.packed.size() / tk_sym_num_unique(o.order, o.dim), S = (size_t)o.num_starts;
    std::vector<R> packed(in.packed.begin(), in.packed.end()), lambda(T * S), x(T * S * (size_t)o.dim);
    std::vector<int32_t> iterations(T * S);
    std::vector<uint8_t> converged(T * S);
    tk_sshopm_starts_result out = {lambda.data(), x.data(), iterations.data(), converged.data()};
    tk_status s = tk_sshopm_solve(&o, T, packed.data(), &out, nullptr);
    if (s != TK_OK) return failed(s);
    Result r;
    append(r, lambda.data(), lambda.size());
    append(r, x.data(), x.size());
    append(r, iterations.data(), iterations.size());
    append(r, converged.data(), converged.size());
    return r;
}

inline Result sshopm_run(const SshopmInput &in)
{
    return in.opts.precision == TK_PRECISION_DOUBLE ? sshopm_run_typed<double>(in) : sshopm_run_typed<float>(in);
}

// ---- fiber directions ------------------------------------------------------------------

struct FibersInput {
    tk_fibers_options opts;
    std::vector<float> sh;
    std::vector<uint8_t> mask; // empty: none
};

// FOD-like voxels: a few exact sums of fibers, each voxel one of them plus its own noise
// (fitting a series per voxel would cost more than the peak finding under test).
inline FibersInput fibers_input(tk_backend backend, int lmax, size_t voxels, uint64_t seed, bool with_mask)
{
    FibersInput in;
    tk_fibers_options_init(&in.opts, lmax);
    in.opts.backend = backend;
    in.opts.num_peaks = 3;
    in.opts.num_threads = 2;
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> uni(0, 1);
    std::normal_distribution<double> g(0, 1);
    std::vector<std::vector<double>> bases;
    for (int b = 0; b < 6; ++b) {
        std::vector<std::vector<double>> dirs;
        std::vector<double> w;
        for (int f = 0; f < 1 + b % 3; ++f) {
            std::vector<double> v = {g(rng), g(rng), g(rng)};
            const double n = std::sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
            for (auto &c : v) c /= n;
            dirs.push_back(v), w.push_back(0.3 + uni(rng));
        }
        bases.push_back(sh_of_fibers(lmax, TK_SH_TOURNIER, 0, dirs, w));
    }
    for (size_t v = 0; v < voxels; ++v)
        for (double c : bases[v % bases.size()]) in.sh.push_back((float)(c + 0.02 * (uni(rng) - 0.5)));
    in.sh[3 * tk_sh_num_coeffs(lmax) + 1] = NAN; // one voxel the finder must count as invalid
    if (with_mask) {
        in.mask.resize(voxels);
        for (auto &m : in.mask) m = uni(rng) < 0.9;
    }
    return in;
}

inline Result fibers_run(const FibersInput &in)
{
    const size_t voxels = in.sh.size() / tk_sh_num_coeffs(in.opts.lmax), np = (size_t)in.opts.num_peaks;
    std::vector<float> dirs(voxels * np * 3), amps(voxels * np);
    size_t bad = 0;
    tk_status s = tk_fibers_find(&in.opts, voxels, in.sh.data(), in.mask.empty() ? nullptr : in.mask.data(),
                                 dirs.data(), amps.data(), &bad);
    if (s != TK_OK) return failed(s);
    Result r;
    append(r, dirs.data(), dirs.size());
    append(r, amps.data(), amps.size());
    r.values.push_back((double)bad);
    return r;
}

// ---- batched eigenvalues ---------------------------------------------------------------

struct EigInput {
    tk_eig_options opts;
    std::vector<double> matrices; // converted to opts.precision at the call
    bool vectors = false;
};

inline EigInput eig_input(tk_backend backend, int n, bool dbl, bool vectors, size_t count, uint64_t seed)
{
    EigInput in;
    tk_eig_options_init(&in.opts, n);
    in.opts.backend = backend;
    in.opts.precision = dbl ? TK_PRECISION_DOUBLE : TK_PRECISION_SINGLE;
    in.opts.num_threads = 2;
    in.vectors = vectors;
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> g(0, 1);
    in.matrices.resize(count * (size_t)n * (size_t)n);
    for (auto &v : in.matrices) v = g(rng);
    in.matrices[5] = NAN; // matrix 0 fails alone (status non-finite)
    return in;
}

template <typename R> Result eig_run_typed(const EigInput &in, tk_eig_plan *plan)
{
    const size_t nn = (size_t)in.opts.n * (size_t)in.opts.n, count = in.matrices.size() / nn;
    std::vector<R> a(in.matrices.begin(), in.matrices.end()), values(count * 2 * (size_t)in.opts.n);
    std::vector<R> vectors(in.vectors ? count * 2 * nn : 0);
    std::vector<int8_t> status(count);
    tk_eig_result out = {values.data(), in.vectors ? vectors.data() : nullptr, status.data()};
    size_t failures = 0;
    tk_status s = plan ? tk_eig_plan_execute(plan, count, a.data(), &out, nullptr, &failures)
                       : tk_eig_solve(&in.opts, count, a.data(), &out, nullptr, &failures);
    if (s != TK_OK) return failed(s);
    Result r;
    append(r, values.data(), values.size());
    append(r, vectors.data(), vectors.size());
    append(r, status.data(), status.size());
    r.values.push_back((double)failures);
    return r;
}

// Through plan where one is given (made for in.opts), else through tk_eig_solve.
inline Result eig_plan_run(tk_eig_plan *plan, const EigInput &in)
{
    return in.opts.precision == TK_PRECISION_DOUBLE ? eig_run_typed<double>(in, plan) : eig_run_typed<float>(in, plan);
}

inline Result eig_run(const EigInput &in) { return eig_plan_run(nullptr, in); }

// ---- FastTucker ------------------------------------------------------------------------

struct TuckerInput {
    tk_tucker_options opts;
    tk_tucker_synth_options synth;
    int iterations = 3;
};

inline TuckerInput tucker_input(tk_backend backend, uint64_t seed, size_t nnz = 30000)
{
    TuckerInput in;
    // The seed's SGD (rates 0.05 and 1): the comparison is of parameters, which ALS leaves free
    // along directions that change no prediction (tucker_test_util.h), where the GPU's atomics
    // of another order move them.
    tk_tucker_options_init_sgd(&in.opts);
    in.opts.backend = backend;
    in.opts.num_threads = 2;
    in.opts.fiber_threshold = 16;
    in.synth = synth_options(3, {120, 90, 40}, nnz, 6, 0.1, seed);
    return in;
}

// Data and start are made inside the call, from the seeds: each thread owns everything it touches.
inline Result tucker_run(const TuckerInput &in)
{
    Coo data;
    Model init, fit;
    Solver solver;
    tk_status s = tk_tucker_synth(&in.synth, &data.t, nullptr);
    if (s == TK_OK) s = tk_tucker_model_alloc(&init.m, in.synth.order, in.synth.dims, 8, 8);
    if (s != TK_OK) return failed(s);
    tk_tucker_model_init(&init.m, in.synth.seed + 1, 0);
    if ((s = tk_tucker_solver_create(&in.opts, &data.t, &init.m, &solver.s)) != TK_OK) return failed(s);
    for (int it = 0; it < in.iterations; ++it)
        if ((s = tk_tucker_update_factors(solver.s)) != TK_OK || (s = tk_tucker_update_core(solver.s)) != TK_OK)
            return failed(s);
    if ((s = tk_tucker_model_copy(&fit.m, &init.m)) != TK_OK || (s = tk_tucker_solver_model(solver.s, &fit.m)) != TK_OK)
        return failed(s);
    Result r;
    for (int n = 0; n < fit.m.order; ++n) {
        append(r, fit.m.a[n], (size_t)fit.m.dims[n] * (size_t)fit.m.rank_j);
        append(r, fit.m.b[n], (size_t)fit.m.rank_j * (size_t)fit.m.rank_r);
    }
    return r;
}

// ---- PLTF --------------------------------------------------------------------------------

struct PltfInput {
    tk_pltf_model model;
    tk_pltf_options opts;
    std::vector<double> x;
    std::vector<uint8_t> mask; // empty: none
};

inline PltfInput pltf_input(tk_backend backend, const std::string &text, const std::string &dims,
                            tk_pltf_divergence d, uint64_t seed, bool with_mask)
{
    PltfInput in;
    in.model = pltf_model(text, dims);
    tk_pltf_options_init(&in.opts);
    in.opts.backend = backend;
    in.opts.divergence = d;
    in.opts.iterations = 15;
    in.opts.seed = seed;
    in.opts.num_threads = 2;
    in.x = uniform(tk_pltf_out_count(&in.model), seed + 7, 0.2, 2.0);
    if (with_mask) {
        auto u = uniform(in.x.size(), seed + 8, 0, 1);
        in.mask.resize(in.x.size());
        for (size_t i = 0; i < u.size(); ++i) in.mask[i] = u[i] < 0.8;
    }
    return in;
}

inline Result pltf_run(const PltfInput &in)
{
    auto fit = pltf_fit(in.model, in.opts, in.x, in.mask.empty() ? nullptr : &in.mask);
    if (fit.status != TK_OK) return failed(fit.status);
    Result r;
    for (auto &f : fit.factors) append(r, f.data(), f.size());
    append(r, fit.xhat.data(), fit.xhat.size());
    append(r, fit.divergence.data(), fit.divergence.size());
    return r;
}

} // namespace tk_test
