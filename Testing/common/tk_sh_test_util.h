// Test helper: the SH coefficients of a function on the sphere, by least squares on a
// Fibonacci lattice (exact for functions inside the span, such as sums of w (v.x)^lmax).
#pragma once

#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <tuple>
#include <vector>

#include "tk_fibers.h"
#include "tk_test_util.h"

namespace tk_test {

inline std::vector<double> fit_sh(int lmax, tk_sh_basis basis, int legacy,
                                  const std::function<double(const double *)> &f)
{
    const int k = (int)tk_sh_num_coeffs(lmax), rows = 8 * k + 40;
    std::vector<double> ata((size_t)k * k, 0), atb(k, 0), y(k);
    for (int r = 0; r < rows; ++r) {
        double z = 1 - (2.0 * r + 1) / rows, rho = std::sqrt(1 - z * z), a = r * 2.399963229728653;
        double g[3] = {rho * std::cos(a), rho * std::sin(a), z};
        tk_sh_eval(basis, legacy, lmax, g, y.data());
        double v = f(g);
        for (int i = 0; i < k; ++i) {
            atb[i] += y[i] * v;
            for (int j = 0; j < k; ++j) ata[(size_t)i * k + j] += y[i] * y[j];
        }
    }
    // normal equations by Gaussian elimination with partial pivoting
    for (int c = 0; c < k; ++c) {
        int piv = c;
        for (int r = c + 1; r < k; ++r)
            if (std::fabs(ata[(size_t)r * k + c]) > std::fabs(ata[(size_t)piv * k + c])) piv = r;
        for (int j = 0; j < k; ++j) std::swap(ata[(size_t)c * k + j], ata[(size_t)piv * k + j]);
        std::swap(atb[c], atb[piv]);
        for (int r = c + 1; r < k; ++r) {
            double m = ata[(size_t)r * k + c] / ata[(size_t)c * k + c];
            for (int j = c; j < k; ++j) ata[(size_t)r * k + j] -= m * ata[(size_t)c * k + j];
            atb[r] -= m * atb[c];
        }
    }
    std::vector<double> x(k);
    for (int r = k - 1; r >= 0; --r) {
        double s = atb[r];
        for (int j = r + 1; j < k; ++j) s -= ata[(size_t)r * k + j] * x[j];
        x[r] = s / ata[(size_t)r * k + r];
    }
    return x;
}

// Sum of fibers: f(x) = sum_q w_q (v_q . x)^lmax, v_q unit vectors.
inline std::vector<double> sh_of_fibers(int lmax, tk_sh_basis basis, int legacy,
                                        const std::vector<std::vector<double>> &v, const std::vector<double> &w)
{
    return fit_sh(lmax, basis, legacy, [&](const double *g) {
        double s = 0;
        for (size_t q = 0; q < v.size(); ++q) s += w[q] * std::pow(v[q][0] * g[0] + v[q][1] * g[1] + v[q][2] * g[2], lmax);
        return s;
    });
}

// tk_fibers_all_maxima through one plan per (lmax, basis, legacy) for the whole test process:
// the tests ask the oracle voxel by voxel, and a plan's tables cost milliseconds (lmax 8) to
// half a second (lmax 16) to build.
inline int all_maxima(int lmax, tk_sh_basis basis, int legacy, const double *sh, int max_peaks, double *directions,
                      double *amplitudes)
{
    using Plan = std::unique_ptr<tk_fibers_plan, void (*)(tk_fibers_plan *)>;
    static std::mutex lock;
    static std::map<std::tuple<int, int, int>, Plan> plans;
    const tk_fibers_plan *plan = nullptr;
    {
        std::lock_guard<std::mutex> hold(lock);
        auto it = plans.find({lmax, (int)basis, legacy});
        if (it == plans.end()) {
            tk_fibers_options o;
            tk_fibers_options_init(&o, lmax);
            o.basis = basis, o.legacy = legacy;
            tk_fibers_plan *made = nullptr;
            if (tk_fibers_plan_create(&o, 0, &made) != TK_OK) return -1;
            it = plans.emplace(std::make_tuple(lmax, (int)basis, legacy), Plan(made, tk_fibers_plan_destroy)).first;
        }
        plan = it->second.get();
    }
    return tk_fibers_plan_all_maxima(plan, sh, max_peaks, directions, amplitudes);
}

// FOD-like series: 1-3 fibers of random directions and weights plus a little noise.
inline std::vector<float> fod_like_volume(int lmax, tk_sh_basis basis, int legacy, int voxels, unsigned seed)
{
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> uni(0, 1);
    std::vector<float> sh;
    for (int v = 0; v < voxels; ++v) {
        std::vector<std::vector<double>> dirs;
        std::vector<double> w;
        for (int f = 0; f < 1 + v % 3; ++f) dirs.push_back(random_unit(3, rng)), w.push_back(0.3 + uni(rng));
        auto c = sh_of_fibers(lmax, basis, legacy, dirs, w);
        for (auto &x : c) sh.push_back((float)(x + 0.01 * (uni(rng) - 0.5)));
    }
    return sh;
}

// One plan's executes over several volumes (of other sizes than its max_voxels, masked and
// not, one with a NaN voxel) against one-shot tk_fibers_find calls: bit for bit the same
// peaks and bad-voxel counts.  Returns the plan's creation status (a GPU test skips on it).
inline tk_status expect_plan_reuse_equals_one_shot(const tk_fibers_options &o, size_t max_voxels)
{
    tk_fibers_plan *plan = nullptr;
    const tk_status created = tk_fibers_plan_create(&o, max_voxels, &plan);
    if (created != TK_OK) return created;
    const int np = o.num_peaks;
    unsigned seed = 11;
    for (int voxels : {120, 37, 400, 0, 120}) {
        std::vector<float> sh = fod_like_volume(o.lmax, o.basis, o.legacy, voxels, seed++);
        if (voxels > 5) sh[5 * tk_sh_num_coeffs(o.lmax) + 2] = NAN;
        std::vector<uint8_t> mask(voxels);
        for (int v = 0; v < voxels; ++v) mask[v] = v % 7 != 3;
        for (const uint8_t *m : {(const uint8_t *)nullptr, (const uint8_t *)mask.data()}) {
            std::vector<float> d1(voxels * np * 3, -7.f), a1(voxels * np, -7.f), d2(d1), a2(a1);
            size_t bad1 = 99, bad2 = 98;
            EXPECT_EQ(tk_fibers_plan_execute(plan, voxels, sh.data(), m, d1.data(), a1.data(), &bad1, nullptr), TK_OK)
                << tk_last_error();
            EXPECT_EQ(tk_fibers_find(&o, voxels, sh.data(), m, d2.data(), a2.data(), &bad2), TK_OK) << tk_last_error();
            // bytewise (NaN outputs compare equal); an empty volume's vectors may hold no buffer
            // at all, which memcmp must not be given
            EXPECT_TRUE(d1.empty() || std::memcmp(d1.data(), d2.data(), sizeof(float) * d1.size()) == 0)
                << voxels << " voxels";
            EXPECT_TRUE(a1.empty() || std::memcmp(a1.data(), a2.data(), sizeof(float) * a1.size()) == 0)
                << voxels << " voxels";
            EXPECT_EQ(bad1, bad2);
            EXPECT_EQ(bad1, voxels > 5 && (!m || m[5]) ? 1u : 0u);
        }
    }
    tk_fibers_plan_destroy(plan);
    return TK_OK;
}

}  // namespace tk_test
