/* The CUDA tracker's kernels: one thread grows one seed's streamline with the CPU's own code
 * (tracking_streamline.h and the headers it includes, compiled for the device), and a
 * gather packs the kept streamlines' points, in seed order, as floats.  No launch choices
 * here (tracking_tuning.h) and no buffers (tracking_cuda.cu). */
#ifndef TK_TRACKING_KERNELS_CUH
#define TK_TRACKING_KERNELS_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include "tracking_streamline.h"
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
