// The CUDA warp kernel's batched walk (32 samples of the order a step, cuda/src/fixels/
// fixels_batch_walk.h) run on the host lane by lane (fixels_batch_walk_host.c) against the host's
// segmentation, which takes the samples one at a time: the labels, every lobe's table entry and
// all outputs bit for bit, on the real FODs the bench uses (dwi2fod's small_64D), noise-free
// crossings of smooth fibres, narrow lobes with their ringing, random series and samples that
// tie, on both direction sets and with merge ratios that merge; the voxels must include
// merges, bridges and voxels with more lobes than the warp's table (24).
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "fixels_batch_walk_host.h"
#include "tk_fibers.h"
#include "tk_fixels.h"
#include "tk_npy.h"

namespace {

const double kPi = 3.14159265358979323846;

std::vector<std::vector<double>> real_voxels(size_t *k_out)
{
    tk_npy_array arr;
    EXPECT_EQ(tk_npy_read(TK_FIXELS_FOD, &arr), TK_OK) << tk_last_error();
    const size_t k = arr.shape[arr.ndim - 1], have = arr.count / k;
    std::vector<std::vector<double>> out(have, std::vector<double>(k));
    for (size_t v = 0; v < have; ++v)
        for (size_t j = 0; j < k; ++j) out[v][j] = ((const float *)arr.data)[v * k + j];
    tk_npy_free(&arr);
    *k_out = k;
    return out;
}

std::array<double, 3> random_unit(std::mt19937 &rng)
{
    std::normal_distribution<double> g(0.0, 1.0);
    std::array<double, 3> u{g(rng), g(rng), g(rng)};
    const double n = std::sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);
    for (double &x : u) x /= n;
    return u;
}

// The series of point masses at dirs with weights wt, band l scaled by exp(-soft l (l + 1)):
// soft > 0 smooth fibres (a response's roll-off), soft 0 narrow lobes with their ringing.
std::vector<double> lobes_series(int lmax, const std::vector<std::array<double, 3>> &dirs, const std::vector<double> &wt,
                                 double soft)
{
    const size_t k = tk_sh_num_coeffs(lmax);
    std::vector<double> c(k, 0.0), y(k);
    for (size_t i = 0; i < dirs.size(); ++i) {
        EXPECT_EQ(tk_sh_eval(TK_SH_TOURNIER, 0, lmax, dirs[i].data(), y.data()), TK_OK);
        for (int l = 0, j = 0; l <= lmax; l += 2)
            for (int m = -l; m <= l; ++m, ++j) c[j] += wt[i] * y[j] * std::exp(-soft * l * (l + 1));
    }
    c[0] += 0.05;  // a little isotropic part: a positive mean
    return c;
}

std::vector<std::vector<double>> synthetic_voxels(int lmax, size_t nv, unsigned seed)
{
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> u01(0.0, 1.0);
    std::normal_distribution<double> g(0.0, 1.0);
    std::vector<std::vector<double>> out;
    const size_t k = tk_sh_num_coeffs(lmax);
    for (size_t v = 0; v < nv; ++v) {
        const int kind = (int)(v % 4);
        if (kind == 3) {
            // a random series: many small lobes of every shape
            std::vector<double> c(k);
            for (size_t j = 0; j < k; ++j) c[j] = g(rng) * (j ? 0.3 : 0.0);
            c[0] = 0.2 + u01(rng);
            out.push_back(c);
            continue;
        }
        // noise-free crossings of 1 to 3 smooth fibres (kind 0, 1), or 2 to 12 narrow lobes
        const int m = kind < 2 ? 1 + (int)(v / 4 % 3) : 2 + (int)(u01(rng) * 11);
        std::vector<std::array<double, 3>> dirs;
        std::vector<double> wt;
        for (int i = 0; i < m; ++i) dirs.push_back(random_unit(rng)), wt.push_back(0.3 + u01(rng));
        out.push_back(lobes_series(lmax, dirs, wt, kind < 2 ? 0.02 + 0.02 * kind : 0.0));
    }
    // samples that tie: a constant FOD and zonal ones (rings of equal samples)
    for (int i = 0; i < 6; ++i) {
        std::vector<double> c(k, 0.0);
        c[0] = 1.0 + 0.1 * i;
        if (i >= 2) c[3] = 0.3 * (i - 1);      // l = 2, m = 0
        if (i >= 4) c[10] = -0.2 * (i - 3);    // l = 4, m = 0
        out.push_back(c);
    }
    return out;
}

// Every voxel of sh through the host check; returns the walks' statistics.
fx_bw_stats check_voxels(const std::vector<std::vector<double>> &sh, int lmax, int directions, double ratio,
                         const char *what)
{
    tk_fixels_options o;
    tk_fixels_options_init(&o, lmax);
    o.directions = directions, o.lobe_merge_ratio = ratio;
    tk_fixels_plan *plan = nullptr;
    EXPECT_EQ(tk_fixels_plan_create(&o, &plan), TK_OK) << tk_last_error();
    fx_bw_stats st;
    std::memset(&st, 0, sizeof st);
    if (!plan) return st;
    size_t differ = 0;
    for (size_t v = 0; v < sh.size(); ++v) {
        char why[128];
        if (!fx_bw_check_voxel(plan, sh[v].data(), &st, why, sizeof why) && differ++ < 5)
            ADD_FAILURE() << what << ", voxel " << v << ": the batched walk differs from the host's in " << why;
    }
    EXPECT_EQ(differ, 0u) << what << ": voxels that differ";
    tk_fixels_plan_destroy(plan);
    const double b = st.batches ? (double)st.batches : 1.0, vx = st.voxels ? (double)st.voxels : 1.0;
    std::printf("%s: %ld voxels, %.1f samples, %.1f batches, %.1f windows, %.1f rounds, %.1f join steps, %.1f sure sides a "
                "voxel (%.2f rounds a window); a voxel's specials: %.2f new lobes, %.3f merges, %.2f bridges; %ld voxels with more "
                "than 24 lobes, %ld more than 32\n",
                what, st.voxels, st.samples / vx, st.batches / vx, st.windows / vx, st.rounds / vx, st.join_steps / vx, st.sure / vx,
                st.windows ? (double)st.rounds / (double)st.windows : 0.0, st.new_lobes / vx, st.merges / vx,
                st.bridges / vx, st.over_24, st.over_32);
    (void)b;
    return st;
}

}  // namespace

TEST(FixelsBatchWalk, RealVoxelsGiveTheHostsLobesBitForBit)
{
    size_t k = 0;
    const auto sh = real_voxels(&k);
    const int lmax = tk_sh_lmax_for_count(k);
    ASSERT_GT(sh.size(), 500u);
    const fx_bw_stats a = check_voxels(sh, lmax, TK_FIXELS_DIRECTIONS, 1.0, "real, 1281 directions");
    EXPECT_GT(a.bridges, 0);
    const fx_bw_stats b = check_voxels(sh, lmax, TK_FIXELS_DIRECTIONS, 0.5, "real, 1281 directions, merge ratio 0.5");
    EXPECT_GT(b.merges, 0);
    const std::vector<std::vector<double>> some(sh.begin(), sh.begin() + 200);
    check_voxels(some, lmax, TK_FIXELS_DIRECTIONS_DENSE, 1.0, "real, 5121 directions");
    check_voxels(some, lmax, TK_FIXELS_DIRECTIONS_DENSE, 0.3, "real, 5121 directions, merge ratio 0.3");
}

TEST(FixelsBatchWalk, SyntheticVoxelsGiveTheHostsLobesBitForBit)
{
    for (int lmax : {8, 12}) {
        const auto sh = synthetic_voxels(lmax, 400, 11u + (unsigned)lmax);
        char what[96];
        fx_bw_stats total;
        std::memset(&total, 0, sizeof total);
        for (double ratio : {1.0, 0.5, 0.2}) {
            std::snprintf(what, sizeof what, "synthetic, lmax %d, 1281 directions, merge ratio %.1f", lmax, ratio);
            const fx_bw_stats s = check_voxels(sh, lmax, TK_FIXELS_DIRECTIONS, ratio, what);
            total.merges += s.merges, total.bridges += s.bridges, total.over_32 += s.over_32;
        }
        EXPECT_GT(total.merges, 0) << "lmax " << lmax;
        EXPECT_GT(total.bridges, 0) << "lmax " << lmax;
        EXPECT_GT(total.over_32, 0) << "lmax " << lmax;  // the constant FOD at least
        const std::vector<std::vector<double>> some(sh.begin(), sh.begin() + 60);
        std::snprintf(what, sizeof what, "synthetic, lmax %d, 5121 directions", lmax);
        check_voxels(some, lmax, TK_FIXELS_DIRECTIONS_DENSE, 0.5, what);
    }
    (void)kPi;
}
