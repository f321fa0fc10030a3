// The fixels' CUDA backend against the CPU's on real FOD voxels (dwi2fod's small_64D, tiled
// past one device chunk) with a mask, a NaN voxel, maxnum, the lobe masks and the dense
// direction set (5121); skipped without a GPU.  Both run fixels_segment.h; only contractions to FMA differ, which may move a sample's
// amplitude by an ulp: counts must agree in all but a few voxels, AFDs to 1e-5.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "gpu_skip.h"
#include "tk_fixels.h"
#include "tk_npy.h"

namespace {

struct Out {
    std::vector<uint8_t> count, lut;
    std::vector<float> afd, amp, mean;
};

tk_status run(tk_fixels_options o, const std::vector<float> &sh, const std::vector<uint8_t> &mask, size_t nv, Out &r,
              double *seconds)
{
    tk_fixels_plan *p = nullptr;
    tk_status s = tk_fixels_plan_create(&o, &p);
    if (s != TK_OK) return s;
    const size_t S = (size_t)tk_fixels_plan_slots(p);
    r.count.resize(nv), r.afd.resize(nv * S), r.amp.resize(nv * S), r.mean.resize(nv * S * 3), r.lut.resize(nv * (size_t)tk_fixels_plan_directions(p));
    tk_fixels_output out{r.count.data(), r.afd.data(), r.amp.data(), r.mean.data(), nullptr, r.lut.data(), 0, 0};
    const auto t0 = std::chrono::steady_clock::now();
    s = tk_fixels_plan_execute(p, nv, sh.data(), mask.data(), &out, nullptr);
    *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    tk_fixels_plan_destroy(p);
    return s;
}

}  // namespace

TEST(FixelsCuda, MatchesTheCpuOnRealVoxels)
{
    tk_npy_array arr;
    ASSERT_EQ(tk_npy_read(TK_FIXELS_FOD, &arr), TK_OK) << tk_last_error();
    const size_t k = arr.shape[arr.ndim - 1], have = arr.count / k, nv = 150000;
    std::vector<float> sh(nv * k);
    for (size_t v = 0; v < nv; ++v) std::memcpy(&sh[v * k], (const float *)arr.data + (v % have) * k, sizeof(float) * k);
    tk_npy_free(&arr);
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
