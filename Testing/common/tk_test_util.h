// Shared test helpers: random symmetric tensors and dense brute-force oracles.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "tk_sshopm.h"

namespace tk_test {

inline std::vector<double> random_packed(int m, int n, size_t count, uint64_t seed, double lo = -1, double hi = 1)
{
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(lo, hi);
    std::vector<double> out(count * tk_sym_num_unique(m, n));
    for (auto &v : out) v = u(rng);
    return out;
}

inline size_t full_size(int m, int n)
{
    size_t s = 1;
    for (int i = 0; i < m; ++i) s *= (size_t)n;
    return s;
}

// Dense oracle: A x^p contracted over the last p... here all m modes: sum over n^m entries.
inline double dense_axm(int m, int n, const std::vector<double> &full, const double *x)
{
    double sum = 0;
    for (size_t e = 0; e < full.size(); ++e) {
        size_t off = e;
        double term = full[e];
        for (int p = 0; p < m; ++p) {
            term *= x[off % (size_t)n];
            off /= (size_t)n;
        }
        sum += term;
    }
    return sum;
}

// Dense oracle of A x^(m-1): y_i = sum over the other m-1 indices (first index is i).
inline std::vector<double> dense_axm1(int m, int n, const std::vector<double> &full, const double *x)
{
    std::vector<double> y(n, 0.0);
    size_t inner = full.size() / (size_t)n;
    for (int i = 0; i < n; ++i)
        for (size_t e = 0; e < inner; ++e) {
            size_t off = e;
            double term = full[(size_t)i * inner + e];
            for (int p = 1; p < m; ++p) {
                term *= x[off % (size_t)n];
                off /= (size_t)n;
            }
            y[i] += term;
        }
    return y;
}

// Dense oracle of A x^(m-2) (n x n).
inline std::vector<double> dense_axm2(int m, int n, const std::vector<double> &full, const double *x)
{
    std::vector<double> y((size_t)n * n, 0.0);
    size_t inner = full.size() / ((size_t)n * n);
    for (size_t ij = 0; ij < (size_t)n * n; ++ij)
        for (size_t e = 0; e < inner; ++e) {
            size_t off = e;
            double term = full[ij * inner + e];
            for (int p = 2; p < m; ++p) {
                term *= x[off % (size_t)n];
                off /= (size_t)n;
            }
            y[ij] += term;
        }
    return y;
}

inline std::vector<double> unpack(int m, int n, const double *packed)
{
    std::vector<double> full(full_size(m, n));
    tk_sym_unpack_d(m, n, packed, full.data());
    return full;
}

inline std::vector<double> random_unit(int n, std::mt19937_64 &rng)
{
    std::normal_distribution<double> g;
    std::vector<double> x(n);
    double s = 0;
    for (auto &v : x) v = g(rng), s += v * v;
    for (auto &v : x) v /= std::sqrt(s);
    return x;
}

// Packed entries of w * v^m (rank one).
inline std::vector<double> rank_one(int m, int n, const std::vector<double> &v, double w)
{
    std::vector<double> out(tk_sym_num_unique(m, n));
    std::vector<int> idx(m);
    tk_sym_index_first(m, idx.data());
    size_t k = 0;
    do {
        double p = w;
        for (int q = 0; q < m; ++q) p *= v[idx[q]];
        out[k++] = p;
    } while (tk_sym_index_next(m, n, idx.data()));
    return out;
}

}  // namespace tk_test
