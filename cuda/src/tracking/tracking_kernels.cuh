/* The CUDA tracker's kernels: one thread grows one seed's streamline with the CPU's own code
 * (tracking_streamline.h and the headers it includes, compiled for the device), and a
 * gather packs the kept streamlines' points, in seed order, as floats.  No launch choices
 * here (tracking_tuning.h) and no buffers (tracking_cuda.cu). */
#ifndef TK_TRACKING_KERNELS_CUH
#define TK_TRACKING_KERNELS_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include "tracking_streamline.h"
#include "tracking_group.cuh"
#include "tracking_warp.cuh"

/* Coefficients of the largest series (lmax TK_SH_MAX_LMAX): a thread's interpolated series. */
#define TK_TRACK_MAX_COEFFS ((TK_SH_MAX_LMAX + 1) * (TK_SH_MAX_LMAX + 2) / 2)

/* One chunk's launch: the plan and regions are their device copies (device pointers inside). */
struct TrackArgs {
    const tk_tracking_plan *plan;
    const tk_tracking_regions *regions;
    const float *sh;
    const double *seed;        /* 3 a seed: the world point, or (mask seeding) the voxel's i, j, k */
    int mask_seeding;
    uint64_t first;            /* the chunk's first seed index: its random streams' counters */
    size_t count;              /* seeds in the chunk */
    size_t stride;             /* points a seed's slot holds: max_points + 1 */
    double *pts;               /* 3 stride doubles a seed */
    uint8_t *visited;          /* visited_stride bytes a seed: the include regions it reached */
    size_t visited_stride;
    int *outcome;              /* a seed's TK_TRACK_* (or -1: its slot was too small, a bug) */
    unsigned int *num_points;  /* a kept seed's points, else 0 */
    unsigned long long *ends;  /* TK_END_COUNT: how the halves ended, over the run */
};

/* Seed i of the chunk: its random stream, keyed and counted as on the CPU
 * (tracking_execute.c), and its world position (mask seeding: drawn in its voxel). */
__device__ static inline void tk_tracking_kernel_seed(const TrackArgs &a, size_t i, tk_philox *rng, double *seed)
{
    tk_philox_init(rng, a.plan->opts.rng_seed, a.first + i);
    const double *s = a.seed + 3 * i;
    if (a.mask_seeding) {
        const size_t ijk[3] = {(size_t)s[0], (size_t)s[1], (size_t)s[2]};
        tk_tracking_voxel_seed(a.plan, ijk, rng, seed);
    } else {
        seed[0] = s[0], seed[1] = s[1], seed[2] = s[2];
    }
}

template <class Policy> __global__ void __launch_bounds__(Policy::block_threads) tracking_kernel(TrackArgs a)
{
    const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= a.count) return;
    const tk_tracking_plan *plan = a.plan;
    tk_philox rng;
    double seed[3];
    tk_tracking_kernel_seed(a, i, &rng, seed);
    double values[TK_TRACK_MAX_COEFFS];
    tk_tracking_work w;
    w.pts = a.pts + i * a.stride * 3, w.cap = a.stride;
    w.visited = a.visited + i * a.visited_stride, w.values = values;
    for (int e = 0; e < TK_END_COUNT; ++e) w.ends[e] = 0;
    tk_tracking_field f;
    f.plan = plan, f.sh = a.sh, f.regions = a.regions;
    size_t n = 0;
    const int outcome = tk_tracking_streamline(&f, seed, &rng, &w, &n);
    a.outcome[i] = outcome;
    a.num_points[i] = outcome == TK_TRACK_KEPT ? (unsigned int)n : 0u;
    for (int e = 0; e < TK_END_COUNT; ++e)
        if (w.ends[e]) atomicAdd(&a.ends[e], (unsigned long long)w.ends[e]);
}

/* SD_STREAM and iFOD1 at lmax <= 8 (tracking_warp.cuh): a warp a seed, the
 * warps taking seeds from *next (zero at the launch) until the chunk's are gone, so that no
 * warp idles while another has a long streamline left; the outputs as tracking_kernel's. */
template <class Policy>
__global__ void __launch_bounds__(Policy::warp_block_threads, Policy::warp_min_blocks) tracking_warp_kernel(TrackArgs a, unsigned long long *next)
{
    const int lane = (int)(threadIdx.x & (TK_TRACK_LANES - 1)), warp = (int)(threadIdx.x / TK_TRACK_LANES);
    constexpr int warps = Policy::warp_block_threads / TK_TRACK_LANES;
    __shared__ double coef[warps][TK_TRACK_POLY_MAX];
    __shared__ double powers[warps][TK_WARP_POWERS * TK_TRACK_LANES];
    const tk_tracking_plan *plan = a.plan;
    /* the SH-to-tensor map through the L1 cache (a shared-memory copy a block measured 10%
     * slower on SD_STREAM: the cache it takes serves the SH corners) */
    const double *map = plan->map;
    tk_warp_poly wp;
    wp.coef = coef[warp], wp.pw = powers[warp] + lane, wp.map = map;
    tk_warp_tensor t;
    tk_warp_tensor_init(&t, plan->opts.lmax, lane);
    t.map = map;
    tk_tracking_field f;
    f.plan = plan, f.sh = a.sh, f.regions = a.regions;
    tk_warp_work w; /* its end counts add up over the warp's seeds */
    w.cap = a.stride;
    for (int e = 0; e < TK_END_COUNT; ++e) w.ends[e] = 0;
    for (;;) {
        unsigned long long i = 0;
        if (lane == 0) i = atomicAdd(next, 1ull);
        i = __shfl_sync(TK_WARP_FULL, i, 0);
        if (i >= a.count) break;
        tk_philox rng;
        double seed[3];
        tk_tracking_kernel_seed(a, (size_t)i, &rng, seed);
        w.pts = a.pts + i * a.stride * 3, w.visited = a.visited + i * a.visited_stride;
        size_t n = 0;
        const int outcome = tk_warp_streamline(&f, seed, &rng, &w, &t, &wp, lane, &n);
        if (lane == 0) {
            a.outcome[i] = outcome;
            a.num_points[i] = outcome == TK_TRACK_KEPT ? (unsigned int)n : 0u;
        }
    }
    if (lane == 0)
        for (int e = 0; e < TK_END_COUNT; ++e)
            if (w.ends[e]) atomicAdd(&a.ends[e], (unsigned long long)w.ends[e]);
}

/* SD_STREAM at lmax <= 8 with G lanes a seed (tracking_group.cuh, G = 8 or 16): each group of
 * a warp takes seeds from *next until the chunk's are gone; the outputs as tracking_kernel's.
 *
 * The streamline (tracking_streamline_body.h's pieces: begin, iterate, after_step,
 * has_second_half, finish) runs a step at a time in one loop whose every turn all the warp's
 * lanes take (its test is the warp's vote): in a turn each group begins its next seed or
 * takes one step.  Grown as tk_tracking_streamline nests it (a loop of seeds around a loop
 * of steps), a group that began a new seed while another was mid-streamline stayed apart
 * from it to the end of the chunk, the groups' steps then taking turns instead of running
 * side by side; here they meet again at the end of every turn. */
template <class Policy, int G>
__global__ void __launch_bounds__(Policy::warp_block_threads, Policy::warp_min_blocks)
    tracking_group_kernel(TrackArgs a, unsigned long long *next)
{
    static_assert(G == 8 || G == 16, "a group is 8 or 16 lanes");
    constexpr int groups = Policy::warp_block_threads / G;
    __shared__ double vec[groups][TK_GROUP_VEC];
    const int group = (int)(threadIdx.x / G);
    tk_group g;
    g.lane = (int)(threadIdx.x & (G - 1));
    g.mask = ((1u << G) - 1u) << (threadIdx.x & (TK_TRACK_LANES - 1) & ~(unsigned int)(G - 1));
    g.vec = vec[group];
    const tk_tracking_plan *plan = a.plan;
    const double *map = plan->map; /* through the L1 cache, as the warp kernel reads it */
    tk_group_tensor<G> t;
    tk_group_tensor_init<G>(&t, plan->opts.lmax, g);
    tk_tracking_field f;
    f.plan = plan, f.sh = a.sh, f.regions = a.regions;
    tk_group_work<G> w; /* its end counts add up over the group's seeds */
    w.cap = a.stride;
    for (int e = 0; e < TK_END_COUNT; ++e) w.ends[e] = 0;
    enum { NEED_SEED, FIRST_HALF, SECOND_HALF, NO_SEEDS_LEFT };
    int phase = NEED_SEED;
    unsigned long long i = 0;
    tk_philox rng;
    double seed[3], seed_dir[3], pos[3], dir[3];
    size_t n = 0;
    for (;;) {
        int outcome = TK_TRACK_KEPT, ended = 0; /* ended: the seed's outcome is known */
        if (phase == NEED_SEED) {
            if (g.lane == 0) i = atomicAdd(next, 1ull);
            i = __shfl_sync(g.mask, i, 0, G);
            if (i >= a.count) {
                phase = NO_SEEDS_LEFT;
            } else {
                tk_tracking_kernel_seed(a, (size_t)i, &rng, seed);
                w.pts = a.pts + i * a.stride * 3, w.visited = a.visited + i * a.visited_stride;
                const int bad = tk_group_begin(&f, seed, &rng, &w, &t, map, g, dir, &n);
                if (bad != -1) {
                    outcome = bad, ended = 1, n = 0;
                } else {
                    for (int c = 0; c < 3; ++c) seed_dir[c] = dir[c], pos[c] = seed[c];
                    phase = FIRST_HALF;
                }
            }
        } else if (phase != NO_SEEDS_LEFT) {
            const int end = tk_group_after_step(&f, &w, pos, tk_group_iterate(&f, &w, pos, dir, &rng, &t, map, g), &n);
            if (end == -2) {
                outcome = -1, ended = 1; /* out of room: a bug, reported as such */
            } else if (end != -1) {
                ++w.ends[end];
                if (phase == FIRST_HALF && tk_group_has_second_half(&f, &w, end)) {
                    tk_group_reverse_points<G>(w.pts, n, g);
                    for (int c = 0; c < 3; ++c) pos[c] = seed[c], dir[c] = -seed_dir[c];
                    phase = SECOND_HALF;
                } else {
                    outcome = tk_group_finish(&f, &w, n, end == TK_END_EXCLUDE), ended = 1;
                }
            }
        }
        if (ended) {
            if (g.lane == 0) {
                a.outcome[i] = outcome;
                a.num_points[i] = outcome == TK_TRACK_KEPT ? (unsigned int)n : 0u;
            }
            phase = NEED_SEED;
        }
        if (!__any_sync(TK_WARP_FULL, phase != NO_SEEDS_LEFT)) break;
    }
    if (g.lane == 0)
        for (int e = 0; e < TK_END_COUNT; ++e)
            if (w.ends[e]) atomicAdd(&a.ends[e], (unsigned long long)w.ends[e]);
}

/* The kept streamlines' points one after another (offset: each seed's first point there),
 * rounded to float as the CPU rounds them; a block a seed, its threads along the points. */
__global__ void tracking_gather_kernel(const double *pts, size_t stride, const unsigned int *num_points,
                                       const size_t *offset, size_t count, float *out)
{
    for (size_t i = blockIdx.x; i < count; i += gridDim.x) {
        const size_t values = 3 * (size_t)num_points[i];
        const double *src = pts + i * stride * 3;
        float *dst = out + 3 * offset[i];
        for (size_t j = threadIdx.x; j < values; j += blockDim.x) dst[j] = (float)src[j];
    }
}

#endif
