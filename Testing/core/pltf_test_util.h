// PLTF test helpers: models, random data and the brute-force einsum oracle.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "tk_pltf.h"

namespace tk_test {

// A model and its index sizes: one row of a table-driven test (pltf_model's arguments).
struct ModelCase {
    const char *model, *dims;
};

inline tk_pltf_model pltf_model(const std::string &text, const std::string &dims)
{
    tk_pltf_model m;
    EXPECT_EQ(tk_pltf_parse(text.c_str(), &m), TK_OK) << tk_last_error();
    if (!dims.empty()) {
        EXPECT_EQ(tk_pltf_set_dims(&m, dims.c_str()), TK_OK) << tk_last_error();
    }
    return m;
}

// |got - want| / |want| (Euclidean norms).
inline double relative_error(const std::vector<double> &got, const std::vector<double> &want)
{
    double err = 0, norm = 0;
    for (size_t i = 0; i < want.size(); ++i) err += (got[i] - want[i]) * (got[i] - want[i]), norm += want[i] * want[i];
    return std::sqrt(err / norm);
}

inline std::vector<double> uniform(size_t n, uint64_t seed, double lo = 0.1, double hi = 1.0)
{
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(lo, hi);
    std::vector<double> v(n);
    for (auto &x : v) x = u(rng);
    return v;
}

inline std::vector<std::vector<double>> random_factors(const tk_pltf_model &m, uint64_t seed)
{
    std::vector<std::vector<double>> f;
    for (int i = 0; i < m.num_factors; ++i) f.push_back(uniform(tk_pltf_factor_count(&m, i), seed + (uint64_t)i));
    return f;
}

// Dense einsum, written independently of the library: visit every assignment of
// every index of the model, multiply the operands' entries, add into the output.
inline std::vector<double> brute_force_einsum(const tk_pltf_model &m, const std::vector<std::vector<double>> &ops)
{
    std::vector<int> ids;
    auto add = [&](int id) {
        for (int x : ids)
            if (x == id) return;
        ids.push_back(id);
    };
    for (int d = 0; d < m.out_ndim; ++d) add(m.out[d]);
    for (int f = 0; f < m.num_factors; ++f)
        for (int d = 0; d < m.factor_ndim[f]; ++d) add(m.factor[f][d]);
    std::vector<size_t> value(TK_PLTF_MAX_INDICES, 0);
    auto offset = [&](const int *idx, int ndim) {
        size_t off = 0;
        for (int d = 0; d < ndim; ++d) off = off * m.dims[idx[d]] + value[idx[d]];
        return off;
    };
    std::vector<double> out(tk_pltf_out_count(&m), 0.0);
    size_t total = 1;
    for (int id : ids) total *= m.dims[id];
    for (size_t e = 0; e < total; ++e) {
        size_t rest = e;
        for (int id : ids) value[id] = rest % m.dims[id], rest /= m.dims[id];
        double prod = 1;
        for (int f = 0; f < m.num_factors; ++f) prod *= ops[f][offset(m.factor[f], m.factor_ndim[f])];
        out[offset(m.out, m.out_ndim)] += prod;
    }
    return out;
}

inline std::vector<const double *> pointers(const std::vector<std::vector<double>> &v)
{
    std::vector<const double *> p;
    for (auto &x : v) p.push_back(x.data());
    return p;
}

// Data from the model itself (random factors, seed) plus positive relative noise up to
// noise and 0.01, so every divergence is finite.
inline std::vector<double> model_data(const tk_pltf_model &m, uint64_t seed, double noise = 0.2)
{
    auto truth = random_factors(m, seed);
    auto x = brute_force_einsum(m, truth);
    auto n = uniform(x.size(), seed + 100, 0.0, noise);
    for (size_t i = 0; i < x.size(); ++i) x[i] += n[i] * x[i] + 0.01;
    return x;
}

// tk_pltf_gtm on backend b, naive and planned, of c's model on random operands (seed),
// against their brute-force einsum within tol relative to 1 + |value|.  *status: the first
// status of a call that did not run (the checks stop there; a GPU test skips on it), else TK_OK.
inline void expect_gtm_equals_einsum(const ModelCase &c, tk_backend b, uint64_t seed, double tol, tk_status *status)
{
    *status = TK_OK;
    tk_pltf_model m = pltf_model(c.model, c.dims);
    auto ops = random_factors(m, seed);
    auto want = brute_force_einsum(m, ops);
    for (int naive = 0; naive < 2; ++naive) {
        std::vector<double> got(want.size(), -1);
        *status = tk_pltf_gtm(&m, b, naive, pointers(ops).data(), got.data());
        if (*status != TK_OK) return;
        for (size_t i = 0; i < want.size(); ++i)
            ASSERT_NEAR(got[i], want[i], tol * (1 + std::fabs(want[i]))) << c.model << " naive " << naive;
    }
}

// A fit with the given start; factors and divergence trace come back.
struct PltfFit {
    std::vector<std::vector<double>> factors;
    std::vector<double> xhat, divergence;
    tk_status status = TK_OK;
};

inline PltfFit pltf_fit(const tk_pltf_model &m, const tk_pltf_options &o, const std::vector<double> &x,
                        const std::vector<uint8_t> *mask = nullptr)
{
    PltfFit fit;
    tk_pltf_result r{};
    for (int f = 0; f < m.num_factors; ++f) fit.factors.emplace_back(tk_pltf_factor_count(&m, f));
    for (int f = 0; f < m.num_factors; ++f) r.factors[f] = fit.factors[f].data();
    fit.xhat.resize(tk_pltf_out_count(&m));
    fit.divergence.resize((size_t)o.iterations + 1);
    r.xhat = fit.xhat.data();
    r.divergence = fit.divergence.data();
    fit.status = tk_pltf_factorize(&m, &o, x.data(), mask ? mask->data() : nullptr, &r);
    return fit;
}

}  // namespace tk_test
