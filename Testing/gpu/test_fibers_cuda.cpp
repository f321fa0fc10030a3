// The CUDA fiber backend against the CPU backend (label gpu; skips without a GPU).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "sshopm_test_util.h"
#include "tk_cuda_memory.h"
#include "tk_fibers.h"
#include "tk_sh_test_util.h"
#include "tk_test_util.h"

using namespace tk_test;

namespace {

struct Peaks {
    std::vector<float> dirs, amps;
    size_t bad = 0;
};

tk_status find(tk_fibers_options o, tk_backend backend, const std::vector<float> &sh,
               const std::vector<uint8_t> *mask, Peaks &out)
{
    o.backend = backend;
    size_t voxels = sh.size() / tk_sh_num_coeffs(o.lmax);
    out.dirs.assign(voxels * o.num_peaks * 3, -7.f);
    out.amps.assign(voxels * o.num_peaks, -7.f);
    return tk_fibers_find(&o, voxels, sh.data(), mask ? mask->data() : nullptr, out.dirs.data(), out.amps.data(),
                          &out.bad);
}

// The volume on the CPU (omp, which must work) and on the GPU: the GPU's status (a test skips on it).
tk_status find_cpu_and_gpu(const tk_fibers_options &o, const std::vector<float> &sh, Peaks &cpu, Peaks &gpu)
{
    EXPECT_EQ(find(o, TK_BACKEND_OMP, sh, nullptr, cpu), TK_OK) << tk_last_error();
    return find(o, TK_BACKEND_CUDA, sh, nullptr, gpu);
}

// Voxels whose peaks differ between the two runs: another count of peaks, a direction more
// than 1e-4 degrees off, or an amplitude off by more than 1e-5 relative.
size_t differing_voxels(const Peaks &a, const Peaks &b, int num_peaks, size_t voxel_stride_b = 0)
{
    size_t voxels = a.amps.size() / num_peaks, differ = 0;
    const double cos_tol = std::cos(1e-4 * 3.14159265358979323846 / 180);
    for (size_t v = 0; v < voxels; ++v) {
        size_t vb = voxel_stride_b ? v % voxel_stride_b : v;
        bool same = true;
        for (int p = 0; p < num_peaks && same; ++p) {
            float aa = a.amps[v * num_peaks + p], ab = b.amps[vb * num_peaks + p];
            if (std::isnan(aa) || std::isnan(ab)) {
                same = std::isnan(aa) && std::isnan(ab) && std::isnan(a.dirs[(v * num_peaks + p) * 3]) &&
                       std::isnan(b.dirs[(vb * num_peaks + p) * 3]);
                continue;
            }
            const float *da = &a.dirs[(v * num_peaks + p) * 3], *db = &b.dirs[(vb * num_peaks + p) * 3];
            double dot = std::fabs((double)da[0] * db[0] + (double)da[1] * db[1] + (double)da[2] * db[2]);
            same = dot >= cos_tol * (1 - 1e-6) && std::fabs(aa - ab) <= 1e-5 * (std::fabs(ab) + 1e-3);
        }
        differ += !same;
    }
    return differ;
}

}  // namespace

TEST(FibersCuda, MatchesCpuForEveryLmaxAndBasis)
{
    for (int lmax : {2, 4, 6, 8, 10, 12, 16})
        for (int basis = 0; basis < 2; ++basis) {
            const int legacy = lmax == 8 && basis == 1;
            auto sh = fod_like_volume(lmax, (tk_sh_basis)basis, legacy, lmax > 8 ? 300 : 1500, 40 + lmax + basis);
            tk_fibers_options o;
            tk_fibers_options_init(&o, lmax);
            o.basis = (tk_sh_basis)basis;
            o.legacy = legacy;
            o.num_peaks = 4;
            Peaks cpu, gpu;
            tk_status s = find_cpu_and_gpu(o, sh, cpu, gpu);
            TK_SKIP_IF_NO_GPU(s);
            ASSERT_EQ(s, TK_OK) << tk_last_error();
            size_t voxels = cpu.amps.size() / o.num_peaks, differ = differing_voxels(gpu, cpu, o.num_peaks);
            // The grids rank directions in float from different bases (SH on the CPU, monomials
            // on the GPU): a tie between two grid neighbours may tip, which can change the
            // candidates of a voxel with a tiny bump.  All but a few voxels must agree exactly.
            EXPECT_LE(differ, voxels / 200 + 1) << "lmax " << lmax << " basis " << basis;
            printf("lmax %2d basis %d: %zu of %zu voxels differ from the CPU\n", lmax, basis, differ, voxels);
        }
}

TEST(FibersCuda, RandomSeriesWithManyLobes)
{
    // Random coefficients: many small lobes per voxel, the hardest case for the candidates.
    const int lmax = 8, voxels = 2000, k = (int)tk_sh_num_coeffs(lmax);
    std::mt19937_64 rng(5);
    std::normal_distribution<double> gauss(0, 1);
    std::vector<float> sh((size_t)voxels * k);
    for (auto &x : sh) x = (float)gauss(rng);
    tk_fibers_options o;
    tk_fibers_options_init(&o, lmax);
    o.num_peaks = 6;
    Peaks cpu, gpu;
    tk_status s = find_cpu_and_gpu(o, sh, cpu, gpu);
    TK_SKIP_IF_NO_GPU(s);
    ASSERT_EQ(s, TK_OK) << tk_last_error();
    size_t differ = differing_voxels(gpu, cpu, o.num_peaks);
    EXPECT_LE(differ, (size_t)voxels / 50) << "voxels differing";
    printf("random lmax 8: %zu of %d voxels differ from the CPU\n", differ, voxels);
}

TEST(FibersCuda, OptionsMaskNanAndChunkedVolume)
{
    // 600,000 voxels (more than two device chunks) tiled from 600 distinct series, with a
    // mask, a NaN voxel and every selection option: each tile must equal the CPU's answer.
    const int lmax = 8, distinct = 600, k = (int)tk_sh_num_coeffs(lmax);
    const size_t voxels = 600000;
    auto base = fod_like_volume(lmax, TK_SH_TOURNIER, 0, distinct, 9);
    base[(size_t)17 * k + 3] = NAN;
    std::vector<uint8_t> base_mask(distinct, 1);
    base_mask[5] = base_mask[6] = 0;
    std::vector<float> sh(voxels * k);
    std::vector<uint8_t> mask(voxels);
    for (size_t v = 0; v < voxels; ++v) {
        std::memcpy(&sh[v * k], &base[(v % distinct) * k], sizeof(float) * k);
        mask[v] = base_mask[v % distinct];
    }
    tk_fibers_options o;
    tk_fibers_options_init(&o, lmax);
    o.num_peaks = 2;
    o.threshold = 0.05;
    o.relative_threshold = 0.2;
    o.min_separation_deg = 25;
    Peaks cpu, gpu;
    ASSERT_EQ(find(o, TK_BACKEND_CPU, base, &base_mask, cpu), TK_OK) << tk_last_error();
    EXPECT_EQ(cpu.bad, 1u);
    tk_timing timing;
    o.backend = TK_BACKEND_CUDA;
    gpu.dirs.assign(voxels * o.num_peaks * 3, -7.f);
    gpu.amps.assign(voxels * o.num_peaks, -7.f);
    tk_status s = tk_fibers_find_timed(&o, voxels, sh.data(), mask.data(), gpu.dirs.data(), gpu.amps.data(), &gpu.bad,
                                       &timing);
    TK_SKIP_IF_NO_GPU(s);
    ASSERT_EQ(s, TK_OK) << tk_last_error();
    EXPECT_EQ(gpu.bad, voxels / distinct);
    EXPECT_GT(timing.kernel_ms, 0);
    EXPECT_GE(timing.total_ms, timing.kernel_ms * 0.5);
    EXPECT_LE(differing_voxels(gpu, cpu, o.num_peaks, distinct), voxels / 200);
    for (size_t v : {(size_t)5, (size_t)17, voxels - distinct + 6})
        for (int p = 0; p < o.num_peaks; ++p) EXPECT_TRUE(std::isnan(gpu.amps[v * o.num_peaks + p])) << v;
    // directions only: amplitudes may be left out
    std::vector<float> dirs_only(voxels * o.num_peaks * 3);
    ASSERT_EQ(tk_fibers_find(&o, voxels, sh.data(), mask.data(), dirs_only.data(), nullptr, nullptr), TK_OK);
    EXPECT_EQ(std::memcmp(dirs_only.data(), gpu.dirs.data(), sizeof(float) * dirs_only.size()), 0);
}

TEST(FibersCuda, EmptyVolumeAndBadDevice)
{
    tk_fibers_options o;
    tk_fibers_options_init(&o, 8);
    o.backend = TK_BACKEND_CUDA;
    tk_status s = tk_fibers_find(&o, 0, nullptr, nullptr, nullptr, nullptr, nullptr);
    TK_SKIP_IF_NO_GPU(s);
    EXPECT_EQ(s, TK_OK) << tk_last_error();
    o.cuda_device = 99;
    std::vector<float> sh(45, 1.f), d(9), a(3);
    EXPECT_EQ(tk_fibers_find(&o, 1, sh.data(), nullptr, d.data(), a.data(), nullptr), TK_ERR_ARGUMENT);
    EXPECT_NE(std::strstr(tk_last_error(), "device 99"), nullptr) << tk_last_error();
}

TEST(FibersCuda, PlanReuseEqualsOneShotAndFreesItsMemory)
{
    // One plan, several volumes, chunked (max_voxels below the volumes) and not: the same
    // peaks as one-shot calls, bit for bit; destroy gives every byte of device memory back.
    const size_t before = tk_cuda_memory_in_use();
    for (size_t max_voxels : {(size_t)100, (size_t)5000, (size_t)0}) {
        tk_fibers_options o;
        tk_fibers_options_init(&o, 8);
        o.backend = TK_BACKEND_CUDA;
        o.num_peaks = 4;
        const tk_status s = expect_plan_reuse_equals_one_shot(o, max_voxels);
        TK_SKIP_IF_NO_GPU(s);
        ASSERT_EQ(s, TK_OK) << tk_last_error();
        EXPECT_EQ(tk_cuda_memory_in_use(), before) << "max_voxels " << max_voxels;
    }
    // a plan that holds memory, then gives it back
    tk_fibers_options o;
    tk_fibers_options_init(&o, 6);
    o.backend = TK_BACKEND_CUDA;
    tk_fibers_plan *plan = nullptr;
    ASSERT_EQ(tk_fibers_plan_create(&o, 1000, &plan), TK_OK) << tk_last_error();
    EXPECT_GT(tk_cuda_memory_in_use(), before);
    tk_fibers_plan_destroy(plan);
    EXPECT_EQ(tk_cuda_memory_in_use(), before);
    // a bad device: no plan, a clear error
    o.cuda_device = 99;
    EXPECT_EQ(tk_fibers_plan_create(&o, 10, &plan), TK_ERR_ARGUMENT);
    EXPECT_EQ(plan, nullptr);
    EXPECT_EQ(tk_cuda_memory_in_use(), before);
}
