// The fixels' CUDA backend against the CPU's on real FOD voxels (dwi2fod's small_64D, tiled
// past one device chunk) with a mask, a NaN voxel, maxnum, the lobe masks and the dense
// direction set (5121); skipped without a GPU.  Both run the host's segmentation (the warp
// kernel step for step, the one-thread kernel its very text); only contractions to FMA differ,
// which may move a sample's amplitude by an ulp: counts must agree in all but a few voxels,
// AFDs to 1e-5.  Then the warp-a-voxel kernel against the one-thread kernel on the device (the
// same arithmetic: every output bit for bit) on real voxels and on the hard cases: samples
// that tie (a constant and zonal FODs), voxels with more lobes than the warp kernel's shared
// table (passed on to the one-thread kernel), NaN, masked, zero and negative-mean voxels.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <array>
#include <random>
#include <vector>

#include "gpu_skip.h"
#include "tk_bench_hooks.h"
#include "tk_cuda_memory.h"
#include "tk_fixels.h"
#include "tk_npy.h"

namespace {

struct Out {
    std::vector<uint8_t> count, lut;
    std::vector<float> afd, amp, mean, peak;
    size_t bad = 0, truncated = 0, redone = 0;
};

// The kernels a cuda plan may run its voxels through: the default (the samples as a matrix
// product, then the slim kernel), every voxel by the one-thread kernel (the reference), the fused
// warp kernel (a block's voxels sampled together), the pull kernel (the slim kernel's A/B
// reference: the samples copied into shared memory), the slim kernel's split form (the lobes'
// climbs a thread a lobe in a kernel of their own).
enum Kernel { SLIM = 0, ONE_THREAD = 1, FUSED = 2, PULL = 3, SPLIT = 4 };

// One execute of a plan for o by kernel; the arrays start as garbage, so that a slot the backend
// leaves unwritten shows.
tk_status run(tk_fixels_options o, const std::vector<float> &sh, const std::vector<uint8_t> &mask, size_t nv, Out &r,
              double *seconds, Kernel kernel = SLIM)
{
    // the kernel hooks are the cuda plan's (an omp plan refuses them): a cpu or omp run only
    // with the default
    if (o.backend != TK_BACKEND_CUDA && kernel != SLIM) return TK_ERR_ARGUMENT;
    tk_fixels_plan *p = nullptr;
    tk_status s = tk_fixels_plan_create(&o, &p);
    if (s != TK_OK) return s;
    if (o.backend == TK_BACKEND_CUDA &&
        ((kernel == ONE_THREAD && (s = tk_fixels_plan_set_one_thread(p, 1)) != TK_OK) ||
         (s = tk_fixels_plan_set_fused(p, kernel == FUSED)) != TK_OK ||
         (s = tk_fixels_plan_set_slim(p, kernel != PULL)) != TK_OK ||
         (s = tk_fixels_plan_set_split(p, kernel == SPLIT)) != TK_OK)) {
        tk_fixels_plan_destroy(p);
        return s;
    }
    const size_t S = (size_t)tk_fixels_plan_slots(p);
    r.count.assign(nv, 77), r.afd.assign(nv * S, -7.f), r.amp.assign(nv * S, -7.f);
    r.mean.assign(nv * S * 3, -7.f), r.peak.assign(nv * S * 3, -7.f);
    r.lut.assign(nv * (size_t)tk_fixels_plan_directions(p), 77);
    tk_fixels_output out{r.count.data(), r.afd.data(), r.amp.data(), r.mean.data(), r.peak.data(), r.lut.data(), 0, 0};
    const auto t0 = std::chrono::steady_clock::now();
    s = tk_fixels_plan_execute(p, nv, sh.data(), mask.empty() ? nullptr : mask.data(), &out, nullptr);
    *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    r.bad = out.bad_voxels, r.truncated = out.truncated, r.redone = tk_fixels_plan_redone(p);
    tk_fixels_plan_destroy(p);
    return s;
}

template <typename T> size_t bits_differ(const std::vector<T> &a, const std::vector<T> &b, size_t per_voxel)
{
    if (a.size() != b.size()) return (size_t)-1;
    size_t voxels = 0;
    for (size_t i = 0; i < a.size(); i += per_voxel)
        voxels += std::memcmp(&a[i], &b[i], sizeof(T) * per_voxel) != 0;
    return voxels;
}

// Every output of the warp kernel's run (a) against the one-thread kernel's (b), bit for bit:
// the voxels that differ in each.
void expect_same_bits(const Out &a, const Out &b, size_t nv, const char *what)
{
    const size_t S = a.afd.size() / nv, D = a.lut.size() / nv;
    EXPECT_EQ(bits_differ(a.count, b.count, 1), 0u) << what << ": voxels whose count differs";
    EXPECT_EQ(bits_differ(a.afd, b.afd, S), 0u) << what << ": voxels whose AFDs differ";
    EXPECT_EQ(bits_differ(a.amp, b.amp, S), 0u) << what << ": voxels whose peak amplitudes differ";
    EXPECT_EQ(bits_differ(a.mean, b.mean, 3 * S), 0u) << what << ": voxels whose mean directions differ";
    EXPECT_EQ(bits_differ(a.peak, b.peak, 3 * S), 0u) << what << ": voxels whose peak directions differ";
    EXPECT_EQ(bits_differ(a.lut, b.lut, D), 0u) << what << ": voxels whose lobe masks differ";
    EXPECT_EQ(a.bad, b.bad) << what;
    EXPECT_EQ(a.truncated, b.truncated) << what;
}

std::vector<float> real_voxels(size_t nv, size_t *k_out)
{
    tk_npy_array arr;
    EXPECT_EQ(tk_npy_read(TK_FIXELS_FOD, &arr), TK_OK) << tk_last_error();
    const size_t k = arr.shape[arr.ndim - 1], have = arr.count / k;
    std::vector<float> sh(nv * k);
    for (size_t v = 0; v < nv; ++v) std::memcpy(&sh[v * k], (const float *)arr.data + (v % have) * k, sizeof(float) * k);
    tk_npy_free(&arr);
    *k_out = k;
    return sh;
}

// Voxels whose FOD is a sum of m narrow lobes (the series of m point masses at random directions
// at least 14 degrees apart, antipodes included), with their ringing: at lmax 16 many more
// lobes than the warp kernel's shared table holds (24); every fourth a smooth two-fibre crossing,
// which it holds.
std::vector<float> many_lobes(int lmax, size_t nv, unsigned seed)
{
    const size_t k = tk_sh_num_coeffs(lmax);
    std::mt19937 rng(seed);
    std::normal_distribution<double> g(0.0, 1.0);
    std::uniform_int_distribution<int> count(30, 70);
    std::vector<float> sh(nv * k);
    std::vector<double> y(k), c(k);
    for (size_t v = 0; v < nv; ++v) {
        // every fourth voxel a smooth crossing of two fibres (its bands rolled off as a response
        // does): a few lobes, so that some voxels stay in the warp kernel
        const bool smooth = v % 4 == 3;
        const int m = smooth ? 2 : count(rng);
        std::vector<std::array<double, 3>> dirs;
        for (int tries = 0; (int)dirs.size() < m && tries < 100000; ++tries) {
            std::array<double, 3> u{g(rng), g(rng), g(rng)};
            const double n = std::sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);
            for (double &x : u) x /= n;
            bool far = true;
            for (const auto &d : dirs) far &= std::fabs(u[0] * d[0] + u[1] * d[1] + u[2] * d[2]) < std::cos(14 * std::acos(-1.0) / 180);
            if (far) dirs.push_back(u);
        }
        std::fill(c.begin(), c.end(), 0.0);
        for (const auto &d : dirs) {
            EXPECT_EQ(tk_sh_eval(TK_SH_TOURNIER, 0, lmax, d.data(), y.data()), TK_OK);
            const double wt = (0.5 + 0.5 * std::fabs(g(rng)) / 3) / dirs.size() * 4;
            for (int l = 0, j = 0; l <= lmax; l += 2)
                for (int mm = -l; mm <= l; ++mm, ++j) c[j] += y[j] * wt * (smooth ? std::exp(-0.03 * l * (l + 1)) : 1.0);
        }
        for (size_t j = 0; j < k; ++j) sh[v * k + j] = (float)c[j];
    }
    return sh;
}

}  // namespace

namespace {

// The warp kernel against the one-thread kernel on nv real voxels with the hard ones among them,
// both direction sets, maxnum 0 and 2, merge ratios 1 and below.
void check_warp_against_one_thread(size_t nv)
{
    size_t k = 0;
    std::vector<float> sh = real_voxels(nv, &k);
    std::vector<uint8_t> mask(nv, 1);
    // the hard voxels among the real ones: a constant FOD (every sample ties), zonal FODs (rings
    // of equal samples), a NaN, masked, zero and negative-mean voxels
    for (size_t v = 100; v < 110; ++v) {
        std::fill(&sh[v * k], &sh[v * k] + k, 0.f);
        sh[v * k] = 1.f + 0.1f * (float)(v - 100);
        if (v >= 103) sh[v * k + 3] = 0.3f * (float)(v - 102); // l = 2, m = 0
        if (v >= 106) sh[v * k + 10] = -0.2f * (float)(v - 105); // l = 4, m = 0
    }
    sh[7 * k + 3] = NAN, sh[8 * k] = INFINITY;
    mask[11] = mask[12] = 0;
    std::fill(&sh[20 * k], &sh[21 * k], 0.f);
    sh[21 * k] = -1.f;
    size_t bad = 0;  // the unmasked voxels with a coefficient not finite
    for (size_t v = 0; v < nv; ++v) {
        bool finite = true;
        for (size_t j = 0; j < k; ++j) finite &= std::isfinite(sh[v * k + j]);
        bad += mask[v] && !finite;
    }
    ASSERT_GE(bad, 2u);  // the NaN and the infinity at least
    // (directions, maxnum, merge ratio): a ratio below 1 merges lobes (fod2fixel's default of 1
    // never does)
    const struct {
        int dirs, maxnum;
        double ratio;
    } runs[] = {{0, 0, 1.0}, {0, 2, 1.0}, {TK_FIXELS_DIRECTIONS_DENSE, 0, 1.0}, {TK_FIXELS_DIRECTIONS_DENSE, 2, 1.0},
                {0, 0, 0.5}, {TK_FIXELS_DIRECTIONS_DENSE, 0, 0.3}};
    for (const auto &r : runs) {
        const int dirs = r.dirs, maxnum = r.maxnum;
        tk_fixels_options o;
        tk_fixels_options_init(&o, tk_sh_lmax_for_count(k));
        o.max_fixels = maxnum, o.directions = dirs, o.backend = TK_BACKEND_CUDA, o.lobe_merge_ratio = r.ratio;
        Out warp, one;
        double ws = 0, os = 0;
        const tk_status s = run(o, sh, mask, nv, warp, &ws);
        TK_SKIP_IF_NO_GPU(s);
        ASSERT_EQ(s, TK_OK) << tk_last_error();
        ASSERT_EQ(run(o, sh, mask, nv, one, &os, ONE_THREAD), TK_OK) << tk_last_error();
        char what[96];
        std::snprintf(what, sizeof what, "%zu voxels, %d directions, maxnum %d, merge ratio %.1f", nv,
                      dirs ? dirs : TK_FIXELS_DIRECTIONS, maxnum, r.ratio);
        expect_same_bits(warp, one, nv, what);
        // the fused kernel (the default's A/B reference) too, and both pass on the same voxels
        Out fused;
        double fs = 0;
        ASSERT_EQ(run(o, sh, mask, nv, fused, &fs, FUSED), TK_OK) << tk_last_error();
        char fwhat[128];
        std::snprintf(fwhat, sizeof fwhat, "%s, fused kernel", what);
        expect_same_bits(fused, one, nv, fwhat);
        EXPECT_EQ(fused.redone, warp.redone) << what;
        // the pull kernel (the slim kernel's A/B reference) too
        Out pull;
        double ps = 0;
        ASSERT_EQ(run(o, sh, mask, nv, pull, &ps, PULL), TK_OK) << tk_last_error();
        std::snprintf(fwhat, sizeof fwhat, "%s, pull kernel", what);
        expect_same_bits(pull, one, nv, fwhat);
        EXPECT_EQ(pull.redone, warp.redone) << what;
        // the split form (the climbs in a kernel of their own, on global copies of the slim
        // kernel's tables) too
        Out split;
        double ss = 0;
        ASSERT_EQ(run(o, sh, mask, nv, split, &ss, SPLIT), TK_OK) << tk_last_error();
        std::snprintf(fwhat, sizeof fwhat, "%s, split slim kernel", what);
        expect_same_bits(split, one, nv, fwhat);
        EXPECT_EQ(split.redone, warp.redone) << what;
        EXPECT_EQ(warp.bad, bad) << what;
        EXPECT_EQ(warp.count[11], 0) << what;
        EXPECT_EQ(warp.count[20], 0) << what;
        EXPECT_EQ(warp.count[21], 0) << what;
        // a constant FOD still has lobes (ties by index): 321 on the 1281 directions, 1281 on the
        // 5121, more than the one-thread kernel held before (256; it failed them as bad)
        EXPECT_GT(warp.count[100], 0) << what;
        if (maxnum == 0 && r.ratio == 1.0) {
            EXPECT_GT(warp.truncated, 0u) << what;  // more lobes than the 64 slots (none merge)
        }
        // the bad, masked, empty and constant voxels against the CPU's (the constant FOD has no
        // climb: its anisotropic part is zero; the real voxels are held to the CPU by
        // MatchesTheCpuOnRealVoxels, within its FMA tolerance)
        Out cpu;
        double cs = 0;
        o.backend = TK_BACKEND_OMP;
        ASSERT_EQ(run(o, sh, mask, nv, cpu, &cs), TK_OK) << tk_last_error();
        for (size_t v : {7, 8, 11, 12, 20, 21, 100, 101, 102})
            EXPECT_EQ(warp.count[v], cpu.count[v]) << what << " voxel " << v;
        EXPECT_EQ(warp.bad, cpu.bad) << what;
        EXPECT_EQ(tk_cuda_memory_in_use(), 0u);
        std::printf("%s: slim kernel %.0f voxels/s (split %.0f, pull %.0f, fused %.0f), one-thread kernel %.0f "
                    "voxels/s (transfers included); %zu voxels passed on\n", what, nv / ws, nv / ss, nv / ps, nv / fs,
                    nv / os, warp.redone);
    }
}

}  // namespace

// Small enough for compute-sanitizer's memcheck and racecheck (scripts/device/fixels_check.sh).
TEST(FixelsCuda, WarpKernelGivesTheOneThreadKernelsFixelsBitForBitSmall)
{
    check_warp_against_one_thread(600);
}

// Past one chunk of each of the two streams.
TEST(FixelsCuda, WarpKernelGivesTheOneThreadKernelsFixelsBitForBit)
{
    check_warp_against_one_thread(40000);
}

TEST(FixelsCuda, VoxelsWithMoreLobesThanTheWarpTableGiveTheCpusFixels)
{
    const int lmax = 16;
    const size_t nv = 3000;
    const std::vector<float> sh = many_lobes(lmax, nv, 2468);
    const std::vector<uint8_t> mask;
    for (int dirs : {0, TK_FIXELS_DIRECTIONS_DENSE}) {
        tk_fixels_options o;
        tk_fixels_options_init(&o, lmax);
        o.directions = dirs, o.backend = TK_BACKEND_CUDA;
        Out warp, one, cpu;
        double ws = 0, os = 0, cs = 0;
        const tk_status s = run(o, sh, mask, nv, warp, &ws);
        TK_SKIP_IF_NO_GPU(s);
        ASSERT_EQ(s, TK_OK) << tk_last_error();
        ASSERT_EQ(run(o, sh, mask, nv, one, &os, ONE_THREAD), TK_OK) << tk_last_error();
        // the split form on voxels of up to the table's lobes, at lmax 16 (no monomial rows)
        Out split;
        double ss = 0;
        ASSERT_EQ(run(o, sh, mask, nv, split, &ss, SPLIT), TK_OK) << tk_last_error();
        o.backend = TK_BACKEND_OMP;
        ASSERT_EQ(run(o, sh, mask, nv, cpu, &cs), TK_OK) << tk_last_error();
        char what[64];
        std::snprintf(what, sizeof what, "%d directions, lmax %d", dirs ? dirs : TK_FIXELS_DIRECTIONS, lmax);
        expect_same_bits(warp, one, nv, what);
        char swhat[96];
        std::snprintf(swhat, sizeof swhat, "%s, split slim kernel", what);
        expect_same_bits(split, one, nv, swhat);
        EXPECT_EQ(split.redone, warp.redone) << what;
        // the case is what it claims: voxels with more lobes than the warp kernel's table, all
        // passed on (the kept ones alone show it; the table holds every lobe, kept or not)
        size_t over = 0;
        for (size_t v = 0; v < nv; ++v) over += cpu.count[v] > 32;
        EXPECT_GT(over, nv / 10) << what;
        EXPECT_GE(warp.redone, over) << what;
        EXPECT_LT(warp.redone, nv) << what << ": some voxels stay in the warp kernel";
        size_t differ = 0, lut_differ = 0;
        const size_t S = cpu.afd.size() / nv, D = cpu.lut.size() / nv;
        for (size_t v = 0; v < nv; ++v) {
            if (warp.count[v] != cpu.count[v]) {
                ++differ;
                continue;
            }
            for (size_t f = 0; f < warp.count[v]; ++f) {
                const size_t i = v * S + f;
                EXPECT_NEAR(warp.afd[i], cpu.afd[i], 1e-5 * cpu.afd[i]) << what << " voxel " << v;
                EXPECT_NEAR(warp.amp[i], cpu.amp[i], 1e-5 * cpu.amp[i]) << what << " voxel " << v;
            }
            lut_differ += std::memcmp(&warp.lut[v * D], &cpu.lut[v * D], D) != 0;
        }
        EXPECT_LE(differ, nv / 100) << what << ": voxels whose fixel count differs";
        EXPECT_LE(lut_differ, nv / 100) << what << ": voxels whose lobe masks differ";
        std::printf("%s: %zu of %zu voxels over 32 kept lobes, %zu passed on; %zu differ from omp\n", what, over, nv,
                    warp.redone, differ);
    }
}

TEST(FixelsCuda, MatchesTheCpuOnRealVoxels)
{
    size_t k = 0;
    const size_t nv = 150000;
    std::vector<float> sh = real_voxels(nv, &k);
    sh[7 * k + 3] = NAN;
    std::vector<uint8_t> mask(nv, 1);
    mask[11] = mask[12] = 0;
    for (int run_no = 0; run_no < 3; ++run_no) {
        const int maxnum = run_no == 1 ? 2 : 0, dirs = run_no == 2 ? TK_FIXELS_DIRECTIONS_DENSE : 0;
        tk_fixels_options o;
        tk_fixels_options_init(&o, tk_sh_lmax_for_count(k));
        o.max_fixels = maxnum, o.directions = dirs, o.backend = TK_BACKEND_CUDA;
        Out gpu, cpu;
        double gs = 0, cs = 0;
        tk_status s = run(o, sh, mask, nv, gpu, &gs);
        TK_SKIP_IF_NO_GPU(s);
        ASSERT_EQ(s, TK_OK) << tk_last_error();
        o.backend = TK_BACKEND_OMP;
        ASSERT_EQ(run(o, sh, mask, nv, cpu, &cs), TK_OK) << tk_last_error();
        const size_t S = gpu.afd.size() / nv;
        size_t differ = 0, fixels = 0;
        for (size_t v = 0; v < nv; ++v) {
            if (gpu.count[v] != cpu.count[v]) {
                ++differ;
                continue;
            }
            for (size_t f = 0; f < gpu.count[v]; ++f, ++fixels) {
                const size_t i = v * S + f;
                EXPECT_NEAR(gpu.afd[i], cpu.afd[i], 1e-5 * cpu.afd[i]) << v;
                EXPECT_NEAR(gpu.amp[i], cpu.amp[i], 1e-5 * cpu.amp[i]) << v;
            }
        }
        EXPECT_EQ(gpu.count[7], 0);
        EXPECT_EQ(gpu.count[11], 0);
        EXPECT_LE(differ, nv / 1000) << "voxels whose fixel count differs";
        size_t lut_differ = 0;
        for (size_t i = 0; i < gpu.lut.size(); ++i) lut_differ += gpu.lut[i] != cpu.lut[i];
        EXPECT_LE(lut_differ, gpu.lut.size() / 1000);
        std::printf("maxnum %d, %d directions: %zu voxels, %zu fixels; %zu voxels differ; cuda %.0f voxels/s "
                    "(transfers included), omp %.0f voxels/s\n", maxnum, dirs ? dirs : TK_FIXELS_DIRECTIONS, nv, fixels,
                    differ, nv / gs, nv / cs);
    }
}
