/* The CUDA peak finder's kernels, templated on a launch policy (fibers_tuning.h) and the
 * series' order M; their device math is fibers_device.cuh's, their launches fibers_cuda.cu's.
 *
 * A warp per voxel turns the voxel's SH coefficients into the monomial coefficients of its
 * degree-lmax polynomial (one small matrix-vector product), evaluates the polynomial on the
 * tables' hemisphere grid (in float, divided through by each direction's largest coordinate:
 * poly_value_pivot; the grid only ranks directions), keeps
 * the grid directions not below any neighbour as candidates, and appends them to one
 * candidate list; a lane per candidate then polishes it with the CPU's Newton code in double
 * (fibers_newton.h), an iteration at a time, taking the next candidate when its climb ends,
 * and a thread per voxel merges, sorts and selects (fibers_select.h) exactly as the CPU does.
 * Axially symmetric voxels (noise-free single fibers) are answered before the grid pass by
 * their axis (fibers_axial_look_kernel lists them, fibers_axial_kernel answers them).
 *
 * As on the CPU, only the climbs that can change the output are made: a voxel's grid maxima
 * are listed largest first, its first num_peaks + 1 climbed (pass 1a), and what a further
 * maximum must then exceed (tk_fibers_output_bar, "the bar") is worked out a thread per voxel;
 * its other grid maxima climb (pass 1b) only where their hill can rise above the bar and they
 * are not next to a maximum found, and every later climb stops once its maximum provably stays
 * below it (nt_polish's cutoff).  The CPU's bar rises after every climb, so it is never below
 * this one: the GPU climbs a superset of what the CPU climbs. */
#ifndef TK_FIBERS_KERNELS_CUH
#define TK_FIBERS_KERNELS_CUH

#include "common/warp_reduce.cuh"
#include "fibers_device.cuh"
#include "fibers_select.h"

/* Candidates per voxel and kind, as many as the CPU keeps (the largest by grid value); a
 * voxel has up to two lists (grid maxima, then shoulder candidates). */
#define TK_FIB_CAP TK_FIBERS_MAX_CANDIDATES
#define TK_FIB_CAP2 (2 * TK_FIB_CAP)
/* Neighbours a grid direction has at most (the tables' lattice: 7 up to lmax 16): the packed
 * lists' room (FibArgs::nbr8) */
#define TK_FIB_NBR 7
/* ... and at lmax m: 7 at lmax 2, 4 and 12, 6 at the others (upload_tables checks it), so that
 * the grid pass's loops over the neighbours take no padding step at lmax 8 */
__host__ __device__ constexpr int fib_max_neighbours(int m) { return m == 2 || m == 4 || m == 12 ? 7 : 6; }

/* Kernels by kind of work, so that each runs at the occupancy its work wants: the grid pass
 * (light, float, a warp per voxel) compacts its candidates into one list; the climbs (heavy,
 * double) run a thread per candidate, every lane busy; the bar and the merge run a thread per
 * voxel over that voxel's stretch of the list. */
struct FibArgs {
    const float *sh;      /* chunk voxels x k */
    const uint8_t *mask;  /* chunk voxels, or NULL */
    float *dirs, *amps;   /* chunk voxels x num_peaks x 3, x num_peaks */
    unsigned long long *bad;
    const double *pt_val; /* the monomial map's nonzeros (parities: 79% of it is 0 at lmax 8), a row's
                           * pt_nz in column order, entry e of row i at [e * k + i] (padded with 0s) */
    const int *pt_col;    /* ... and their columns, laid out alike */
    int pt_nz;
    const float *gx, *gy, *gz;
    const float4 *grid_eval; /* the grid as the grid pass evaluates it (poly_value_pivot), grouped by
                              * pivot (x, y, z), each group padded to whole warps: per slot t, u,
                              * the pivot's M-th power and the direction (as int bits; -1: padding) */
    int eval_slots, eval_y, eval_z; /* slots, and where the y and the z pivots' groups start */
    const uint4 *nbr8;    /* per direction its neighbours (tables' nbr lists, in order) as byte
                           * offsets into the grid values (4 x index: no shift to unpack), padded
                           * to TK_FIB_NBR with the direction itself (a step of 0 changes no test
                           * below), then a mask of the nearest ones (nbr_near of them): 8 uint16 */
    const int *fit_nbr;   /* the plan's fit stencils (fibers_fit.c), grid_padded-strided */
    const float *fit_w;
    double *coef;         /* chunk voxels x (k + 2): the monomial coefficients of the series'
                           * anisotropic part scaled to unit size, then that scale and the
                           * constant term (tk_fibers_anisotropic_part) */
    int *first, *count;   /* per voxel: its stretch of the candidate list */
    int *num_cands;       /* length of the candidate list */
    int *num_kind1, *num_kind2; /* how many of them are grid maxima / shoulder candidates */
    int *num_climbs;      /* how many shoulder candidates the shoulder kernel keeps for a climb */
    int *num_kind1b;      /* how many grid maxima the bar kernel lists for pass 1b */
    int *climbs_taken;    /* per climbing pass (fibers_pass): how many of its climbs lanes have taken */
    int *grid_taken;      /* how many voxels the grid pass's warps have taken */
    int first_climbs;     /* a voxel's grid maxima climbed before its bar is known (pass 1a) */
    int *order;           /* the polish kernel's work order: grid maxima from the front, shoulder
                           * candidates from the back (order_cap entries), so that a warp's
                           * threads mostly do the same work: a whole climb, or one Newton step
                           * that most shoulder candidates fail */
    int order_cap;
    int *cand_voxel, *cand_dir;
    int *cand_local;      /* per grid maximum: 1 where a shoulder candidate next to it is on its hill
                           * (its climb stayed within the leash, or it was not climbed), as
                           * try_candidate's answer on the CPU */
    float *cand_high;     /* per candidate: the highest grid value on or around it (the CPU's
                           * grid_mark high) */
    float *cand_start;    /* per candidate: a grid maximum's model maximum to start its climb
                           * at (x, y, z), or NaN in x to start at the grid direction */
    double *res_dir, *res_amp; /* per candidate: the polished maximum (amplitude NaN if none) */
    size_t num_voxels;
    double axial_q[5][9];  /* the plan's l = 2 quadratic forms (tk_fibers_axial_axis) */
    int *axial_state;      /* chunk voxels: the axial kernel's answer (-1: the grid pass decides) */
    int *axial_list;       /* the voxels the axial kernel tests (fibers_axial_look_kernel) ... */
    int *num_axial;        /* ... and how many */
    double *axial_res;     /* chunk voxels x 4: its axis and unit-scaled amplitude */
    double *bar;           /* chunk voxels x 4: the bar after pass 1a, the bounds m2 and m3 (the
                            * climbs' cutoff) and the value margin (tk_fibers_value_margin) */
    tk_sh_basis basis;
    int legacy, lmax;
    int grid, grid_padded, k, num_peaks;
    double threshold, relative_threshold, min_separation_deg, cos_sep, spacing, cos_near;
};

/* One warp's shared memory in the grid pass. */
__host__ __device__ static size_t warp_shared_bytes(int k, int grid_padded)
{
    /* grid values, coefficients (float), SH coefficients, candidate room, two kind masks */
    size_t bytes = 4 * ((size_t)grid_padded + 2 * (size_t)k + TK_FIB_CAP2 + 2 * ((size_t)grid_padded / 32));
    return (bytes + 15) / 16 * 16;
}

/* A direction's packed neighbour list (FibArgs::nbr8) unpacked: the neighbours' byte offsets
 * into the grid values and the mask of the nearest ones (bit e: neighbour e is). */
__device__ __forceinline__ void unpack_neighbours(const uint4 q, unsigned *off, unsigned *near)
{
    const unsigned w[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
    for (int e = 0; e < TK_FIB_NBR; ++e) off[e] = e & 1 ? w[e >> 1] >> 16 : w[e >> 1] & 0xffffu;
    *near = q.w >> 16;
}

/* Grid direction d's neighbours (byte offsets) and the mask of the nearest ones. */
__device__ __forceinline__ void grid_neighbours(const FibArgs &p, int d, unsigned *off, unsigned *near)
{
    unpack_neighbours(__ldg(p.nbr8 + d), off, near);
}

/* The grid value at a byte offset (a neighbour's, unpack_neighbours). */
__device__ __forceinline__ float value_at(const float *vals, unsigned off)
{
    return *(const float *)((const char *)vals + off);
}

/* Grid direction d's quadratic model from its fit stencil (fibers_fit.c) over the warp's
 * grid values: th = tangent gradient (2) and Hessian (3). */
__device__ static void grid_fit_model(const FibArgs &p, const float *vals, int d, float *th)
{
    const int *fn = p.fit_nbr + (size_t)d * TK_FIBERS_FIT_WIDTH;
    const float *fw = p.fit_w + (size_t)d * 5 * TK_FIBERS_FIT_WIDTH, v0 = vals[d];
#pragma unroll
    for (int r = 0; r < 5; ++r) th[r] = 0.f;
#pragma unroll
    for (int j = 0; j < TK_FIBERS_FIT_WIDTH; ++j) {
        const float step = vals[__ldg(fn + j)] - v0;
#pragma unroll
        for (int r = 0; r < 5; ++r) th[r] = fmaf(__ldg(fw + r * TK_FIBERS_FIT_WIDTH + j), step, th[r]);
    }
}

__device__ static void tk_fibers_fit_start_model(const FibArgs &p, const float *vals, int d, double *x)
{
    float th[5];
    grid_fit_model(p, vals, d, th);
    tk_fibers_fit_start(th, p.spacing, x);
}

/* 1: not below any neighbour; 2: a shoulder candidate, not below the nearest ones (within
 * 1.05 spacings: they come first), or below one only and by less than TK_RIDGE_RISE of the
 * steepest fall to another, still to be fitted (shoulder_tests); 0: neither.  As
 * grid_local_maxima on the CPU. */
/* floor: where v0 + rise (the highest grid value on or around d) is below it, d's hill cannot
 * rise above the threshold: no candidate (the CPU's output bound, in the part that depends on
 * nothing found: maxima_from_grid). */
template <int NB> __device__ static int grid_candidate_kind(const FibArgs &p, const float *vals, int d, float floor)
{
    const float v0 = vals[d];
    bool ok_near = true;
    int higher = 0;
    float rise = 0.f, fall = 0.f;
    unsigned n[TK_FIB_NBR], near;
    grid_neighbours(p, d, n, &near);
#pragma unroll
    for (int e = 0; e < NB; ++e) {
        const float step = value_at(vals, n[e]) - v0;
        const bool not_below = step <= 0.f;
        higher += !not_below;
        ok_near &= not_below | !((near >> e) & 1u);
        rise = fmaxf(rise, step), fall = fmaxf(fall, -step);
    }
    if (v0 + rise < floor) return 0;
    if (higher == 0) return 1;
    return ok_near || (higher == 1 && rise < TK_RIDGE_RISE * fall) ? 2 : 0;
}

/* The grid pass's first look at direction d, marking only higher neighbours: 1 where none is
 * higher (a grid maximum, as grid_candidate_kind: its hill's highest value is its own), 3 where
 * it might be a shoulder candidate (one higher, or none of the nearest: grid_candidate_kind
 * decides), 0 where it is neither.  (a > b is a - b > 0 for finite floats, the full test's.)
 * nbr: d's packed neighbour list.  The higher neighbours as bits, a compare and an or each,
 * where two counts took more (this loop is a third of the grid pass's instructions). */
template <int NB> __device__ __forceinline__ int grid_quick_kind(const uint4 nbr, const float *vals, int d, float floor)
{
    const float v0 = vals[d];
    unsigned up = 0u;
    unsigned n[TK_FIB_NBR], near;
    unpack_neighbours(nbr, n, &near);
#pragma unroll
    for (int e = 0; e < NB; ++e) up |= (value_at(vals, n[e]) > v0 ? 1u : 0u) << e;
    if (up == 0u) return v0 < floor ? 0 : 1;
    return (up & (up - 1u)) == 0u || (up & near) == 0u ? 3 : 0;
}

/* The queued directions of the grid pass (grid_quick_kind's 3s), a lane each: a shoulder
 * candidate (grid_candidate_kind's 2) whose neighbours' quadratic model has a maximum within
 * reach (as shoulder_fit_reaches on the CPU) gets its bit in mask2.  Queued, since they are
 * few and scattered: tested where found, they held most of the warp's iterations over the grid. */
template <int NB>
__device__ __forceinline__ void shoulder_tests(const FibArgs &p, const float *vals, const int *queue, int n, int lane,
                                               float floor, unsigned *mask2)
{
    __syncwarp();
    for (int q = lane; q < n; q += 32) {
        const int d = queue[q];
        if (grid_candidate_kind<NB>(p, vals, d, floor) != 2) continue;
        float th[5];
        grid_fit_model(p, vals, d, th);
        if (tk_fibers_fit_reaches(th, (float)p.spacing)) atomicOr(mask2 + (d >> 5), 1u << (d & 31));
    }
    __syncwarp();
}

/* The directions whose bits are set in mask (words of 32 directions), in index order, into
 * list (at most TK_FIB_CAP of them); returns how many are set. */
__device__ __forceinline__ int list_from_bits(const unsigned *mask, int words, int lane, int *list)
{
    int n = 0;
    for (int w0 = 0; w0 < words; w0 += 32) {
        const int w = w0 + lane;
        const unsigned bits = w < words ? mask[w] : 0u;
        const int c = __popc(bits);
        int upto = c; /* inclusive prefix sum over the lanes */
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
            const int t = __shfl_up_sync(TK_WARP_ALL_LANES, upto, o);
            if (lane >= o) upto += t;
        }
        int pos = n + upto - c;
        for (unsigned rest = bits; rest; rest &= rest - 1, ++pos)
            if (pos < TK_FIB_CAP) list[pos] = 32 * w + __ffs((int)rest) - 1;
        n += __shfl_sync(TK_WARP_ALL_LANES, upto, 31);
    }
    return n;
}

/* The TK_FIB_CAP largest grid values among the directions set in mask, largest first, ties to
 * the lower direction (the CPU's insert_by_value keeps the same), into list, taken one at a
 * time by a warp-wide arg-max; their bits are cleared. */
__device__ static void take_largest(const float *vals, unsigned *mask, int words, int lane, int *list)
{
    for (int c = 0; c < TK_FIB_CAP; ++c) {
        float best = -INFINITY;
        int best_d = 0x7fffffff;
        for (int w = lane; w < words; w += 32)
            for (unsigned rest = mask[w]; rest; rest &= rest - 1) {
                const int d = 32 * w + __ffs((int)rest) - 1;
                if (vals[d] > best || (vals[d] == best && d < best_d)) best = vals[d], best_d = d;
            }
        for (int o = 16; o > 0; o >>= 1) {
            const float ov = __shfl_xor_sync(TK_WARP_ALL_LANES, best, o);
            const int od = __shfl_xor_sync(TK_WARP_ALL_LANES, best_d, o);
            if (ov > best || (ov == best && od < best_d)) best = ov, best_d = od;
        }
        __syncwarp();
        if (lane == 0) list[c] = best_d, mask[best_d >> 5] &= ~(1u << (best_d & 31));
        __syncwarp();
    }
}

/* The axial test (fibers_internal.h; the CPU's axial_maxima) in two kernels before the grid
 * pass.  The first look, a thread per voxel: axial_state[v] = -1 (the grid pass decides) for
 * every voxel, and the voxels whose l = 2 band is that of an axially symmetric series
 * (tk_fibers_axial_band_axis: a third of the noise-free phantom's voxels, next to none of a
 * real FOD's) listed for the axial kernel.  Listed, so that the axial kernel's lanes all do its
 * heavy double work: a thread per voxel, it had every warp with one such voxel wait for it. */
template <class Policy, int M> __global__ void __launch_bounds__(Policy::block_threads) fibers_axial_look_kernel(FibArgs p)
{
    constexpr int K = (M + 1) * (M + 2) / 2;
    const int lane = threadIdx.x & 31;
    /* whole warps run each round (the list's places are taken a warp at a time) */
    for (size_t first = (size_t)blockIdx.x * blockDim.x; first < p.num_voxels; first += (size_t)gridDim.x * blockDim.x) {
        const size_t v = first + threadIdx.x;
        bool listed = false;
        if (v < p.num_voxels) {
            p.axial_state[v] = -1;
            bool ok = !p.mask || p.mask[v];
            float sh[K];
            for (int j = 0; j < K && ok; ++j) ok = isfinite(sh[j] = __ldg(p.sh + v * K + j));
            /* tk_fibers_anisotropic_part's scale and tk_fibers_axial_axis's norm, the same
             * doubles, keeping aniso[1 .. 5] only */
            double scale = 0;
            for (int j = 1; j < K && ok; ++j) scale = fabs((double)sh[j]) > scale ? fabs((double)sh[j]) : scale;
            if (ok && scale >= TK_FLT_MIN) {
                double band[6] = {0, 0, 0, 0, 0, 0}, norm2 = 0, u[3];
                for (int j = 1; j < K; ++j) {
                    const double a = (double)sh[j] / scale;
                    norm2 += a * a;
                    if (j < 6) band[j] = a;
                }
                listed = tk_fibers_axial_band_axis(p.axial_q, norm2, band, u);
            }
        }
        const unsigned take = __ballot_sync(TK_WARP_ALL_LANES, listed);
        if (!take) continue;
        const int leader = __ffs((int)take) - 1;
        int at = 0;
        if (lane == leader) at = atomicAdd(p.num_axial, __popc(take));
        at = __shfl_sync(TK_WARP_ALL_LANES, at, leader);
        if (listed) p.axial_list[at + __popc(take & ((1u << lane) - 1u))] = (int)v;
    }
}

/* The axial kernel, a thread per listed voxel (fibers_axial_look_kernel): axial_state[v] = 1
 * with its axis and amplitude (unit-scaled) in axial_res[4 v ...] where that axis is a strict
 * maximum, 0 where it is none, and -1 (the grid pass decides) where the series is not
 * axially symmetric after all.  A kernel of its own so that the grid kernel's registers stay
 * those of its float pass. */
template <class Policy, int M> __global__ void __launch_bounds__(Policy::block_threads) fibers_axial_kernel(FibArgs p)
{
    constexpr int K = (M + 1) * (M + 2) / 2;
    const int listed = *p.num_axial;
    for (int t = blockIdx.x * blockDim.x + threadIdx.x; t < listed; t += gridDim.x * blockDim.x) {
        const size_t v = (size_t)p.axial_list[t];
        int state = -1;
        double sh[K], aniso[K], x[3], amp = 0;
        for (int j = 0; j < K; ++j) sh[j] = (double)__ldg(p.sh + v * K + j);
        double iso = 0;
        const double big = tk_fibers_anisotropic_part(K, sh, aniso, &iso);
        if (big > 0 && tk_fibers_axial_axis(p.axial_q, K, aniso, x)) {
            double coef[K]; /* the unit-scaled polynomial, as the grid kernel makes it */
            for (int i = 0; i < K; ++i) {
                double c = 0;
                for (int e = 0; e < p.pt_nz; ++e)
                    c = fma(__ldg(p.pt_val + (size_t)e * K + i), aniso[__ldg(p.pt_col + (size_t)e * K + i)], c);
                coef[i] = c;
            }
            const Poly<M> poly = {coef};
            const int strict = nt_axis_point_gpu<M>(&poly, x, &amp);
            if (strict >= 0 && tk_fibers_axial_residual_ok(p.basis, p.legacy, M, aniso, x)) {
                state = strict;
                const double sign = fiber_sign(x);
                for (int j = 0; j < 3; ++j) p.axial_res[v * 4 + j] = sign * x[j];
                p.axial_res[v * 4 + 3] = amp;
            }
        }
        p.axial_state[v] = state;
    }
}

template <class Policy, int M> __global__ void __launch_bounds__(Policy::block_threads) fibers_grid_kernel(FibArgs p)
{
    constexpr int K = (M + 1) * (M + 2) / 2, NB = fib_max_neighbours(M);
    extern __shared__ float fsmem[];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    float *vals = (float *)((char *)fsmem + warp_shared_bytes(K, p.grid_padded) * warp);
    float *cf = vals + p.grid_padded, *shv = cf + K;
    int *cand = (int *)(shv + K);
    unsigned *mask1 = (unsigned *)(cand + TK_FIB_CAP2), *mask2 = mask1 + p.grid_padded / 32;
    const int G = p.grid;

    /* Each warp takes the next voxel when it is done with one (one atomic a voxel, asked for a
     * voxel ahead): voxels differ in work by more than ten times (an axial one, answered
     * already, against a crossing with rings of grid maxima), and with voxels dealt out in a
     * fixed stride a block's warps waited for its slowest: 26% of the SM's warps were active
     * on the phantom where 44% fit (ncu). */
    int next = 0;
    if (lane == 0) next = atomicAdd(p.grid_taken, 1);
    for (size_t v = (size_t)__shfl_sync(TK_WARP_ALL_LANES, next, 0); v < p.num_voxels;
         v = (size_t)__shfl_sync(TK_WARP_ALL_LANES, next, 0)) {
        if (lane == 0) next = atomicAdd(p.grid_taken, 1);
        bool ok = !p.mask || p.mask[v], finite = true;
        if (ok)
            for (int j = lane; j < K; j += 32) {
                const float s = __ldg(p.sh + v * K + j);
                shv[j] = s;
                finite &= isfinite(s);
            }
        if (ok && __any_sync(TK_WARP_ALL_LANES, !finite)) {
            ok = false;
            if (lane == 0) atomicAdd(p.bad, 1ull);
        }
        /* as tk_fibers_anisotropic_part: a constant voxel has no maxima and stops here */
        float big = 0.f;
        for (int j = lane + 1; j < K && ok; j += 32) big = fmaxf(big, fabsf(shv[j]));
        big = tk_warp_allreduce<32>(big, tk_op_max());
        double *coef = p.coef + v * (K + 2);
        if (ok && lane == 0) coef[K] = big, coef[K + 1] = shv[0] * TK_SH_Y00;
        if (!ok || !(big >= (float)TK_FLT_MIN)) {
            if (lane == 0) p.count[v] = 0, p.first[v] = 0;
            continue;
        }
        /* an axially symmetric voxel (a noise-free fiber) is answered by its axis (the axial
         * kernel's), with no grid pass: one candidate, already polished */
        const int axial = p.axial_state[v];
        if (axial >= 0) {
            if (lane == 0) {
                const int first = atomicAdd(p.num_cands, 1);
                p.first[v] = first, p.count[v] = 1;
                p.cand_voxel[first] = (int)v, p.cand_dir[first] = -1;
                for (int j = 0; j < 3; ++j) p.res_dir[(size_t)first * 3 + j] = p.axial_res[v * 4 + j];
                p.res_amp[first] = axial ? p.axial_res[v * 4 + 3] : NAN;
            }
            continue;
        }
        /* A hill that cannot rise above the threshold changes no output: the grid value that
         * its highest grid direction needs, less the margin a maximum may rise above it
         * (tk_fibers_value_margin, from the unit-scaled coefficients), unit-scaled.  (The
         * CPU also drops what falls below its count's and relative threshold's bars, which
         * depend on the maxima found in order.) */
        float floor = -INFINITY;
        if (p.threshold > -INFINITY) {
            double m2, m3, sup; /* (m3 unused here: the compiler drops it) */
            tk_fibers_derivative_bounds_f(M, shv, (double)big, &sup, &m2, &m3);
            const double margin = tk_fibers_value_margin(sup, m2, TK_FIBERS_COVER * p.spacing);
            floor = (float)((p.threshold - shv[0] * TK_SH_Y00) / big - margin);
        }
        __syncwarp();
        const double inv = 1.0 / (double)big;
        /* the product over the map's nonzeros only: a partial sum from +0.0 is never -0.0, so the
         * terms 0 x finite left out change no bit of it */
        for (int i = lane; i < K; i += 32) {
            double s = 0;
            for (int e = 0; e < p.pt_nz; ++e)
                s = fma(__ldg(p.pt_val + (size_t)e * K + i), (double)shv[__ldg(p.pt_col + (size_t)e * K + i)] * inv, s);
            coef[i] = s;
            cf[i] = (float)s;
        }
        __syncwarp();
        {
            /* the coefficients in registers: read from shared memory at every direction they
             * were half the pass's instructions */
            float creg[K <= 45 ? K : 1];
            const float *cv = cf;
            if constexpr (K <= 45) { /* (above lmax 8 they no longer fit) */
#pragma unroll
                for (int i = 0; i < K; ++i) creg[i] = cf[i];
                cv = creg;
            }
            /* a direction a lane, in the pivots' groups (each warp-uniform), each entry loaded
             * one round ahead */
            float4 e = __ldg(p.grid_eval + lane);
            for (int s = lane; s < p.eval_slots; s += 32) {
                const float4 next = s + 32 < p.eval_slots ? __ldg(p.grid_eval + s + 32) : e;
                const int group_first = s - lane;
                float value;
                if (group_first >= p.eval_z) value = poly_value_pivot<M, 2>(cv, e.x, e.y, e.z);
                else if (group_first >= p.eval_y) value = poly_value_pivot<M, 1>(cv, e.x, e.y, e.z);
                else value = poly_value_pivot<M, 0>(cv, e.x, e.y, e.z);
                const int d = __float_as_int(e.w);
                if (d >= 0) vals[d] = value;
                e = next;
            }
        }
        __syncwarp();

        /* Each direction's kind once, as one bit a direction (mask1: grid maxima, mask2: shoulder
         * candidates; word b holds directions 32 b .. 32 b + 31).  The pass over the grid only
         * counts higher neighbours (grid_quick_kind); the few directions that might be shoulder
         * candidates are queued in the warp's (still unused) candidate room and tested in full,
         * a lane each, whenever another 32 might not fit (shoulder_tests). */
        const int blocks = (G + 31) / 32;
        int queued = 0;
        /* each block's neighbour lists are loaded one block ahead: waiting on them was the pass's
         * largest stall (ncu) */
        uint4 nbr = __ldg(p.nbr8 + (lane < G ? lane : 0));
        for (int first = 0, b = 0; first < G; first += 32, ++b) {
            const int d = first + lane;
            const uint4 next = d + 32 < G ? __ldg(p.nbr8 + d + 32) : nbr;
            const int kq = d < G ? grid_quick_kind<NB>(nbr, vals, d, floor) : 0;
            nbr = next;
            const unsigned top = __ballot_sync(TK_WARP_ALL_LANES, kq == 1), maybe = __ballot_sync(TK_WARP_ALL_LANES, kq == 3);
            if (lane == 0) mask1[b] = top, mask2[b] = 0u;
            if (kq == 3) cand[queued + __popc(maybe & ((1u << lane) - 1u))] = d;
            queued += __popc(maybe);
            if (queued > TK_FIB_CAP2 - 32 || (first + 32 >= G && queued)) {
                shoulder_tests<NB>(p, vals, cand, queued, lane, floor, mask2);
                queued = 0;
            }
        }
        __syncwarp();

        /* candidates: grid directions not below any neighbour, then shoulder candidates
         * (encoded -(d + 1) for the polish kernel's test); each list in index order */
        int count = 0, count1 = 0;
        for (int kind = 1; kind <= 2; ++kind) {
            int *list = cand + count;
            unsigned *mask = kind == 1 ? mask1 : mask2;
            /* (a shoulder candidate next to a grid maximum whose climb stays on its hill is on
             * that hill: the polish kernel's second pass decides, as the CPU does) */
            const int n = list_from_bits(mask, blocks, lane, list);
            __syncwarp();
            if (n > TK_FIB_CAP) {
                /* Rare but for noise-free phantoms' rings: keep the CAP largest, as the CPU does,
                 * largest first (take_largest) */
                take_largest(vals, mask, blocks, lane, list);
            }
            const int kept = n < TK_FIB_CAP ? n : TK_FIB_CAP;
            if (kind == 1 && n > 1 && n <= TK_FIB_CAP) {
                /* largest grid value first, ties in index order, as the CPU lists them
                 * (insert_by_value; the capped path above already yields that order): each
                 * lane places its entries by their rank, through the shoulders' still empty
                 * room */
                int *sorted = list + n;
                for (int c = lane; c < n; c += 32) {
                    const int d = list[c];
                    const float vd = vals[d];
                    int rank = 0;
                    for (int e = 0; e < n; ++e) {
                        const float ve = vals[list[e]];
                        rank += ve > vd || (ve == vd && e < c);
                    }
                    sorted[rank] = d;
                }
                __syncwarp();
                for (int c = lane; c < n; c += 32) list[c] = sorted[c];
                __syncwarp();
            }
            if (kind == 2)
                for (int c = lane; c < kept; c += 32) list[c] = -(list[c] + 1);
            count += kept;
            if (kind == 1) count1 = kept;
            __syncwarp();
        }
        int first = 0, first1 = 0, first2 = 0;
        if (lane == 0) {
            first = atomicAdd(p.num_cands, count), p.first[v] = first, p.count[v] = count;
            first1 = atomicAdd(p.num_kind1, min(count1, p.first_climbs));
            first2 = atomicAdd(p.num_kind2, count - count1);
        }
        first = __shfl_sync(TK_WARP_ALL_LANES, first, 0);
        first1 = __shfl_sync(TK_WARP_ALL_LANES, first1, 0), first2 = __shfl_sync(TK_WARP_ALL_LANES, first2, 0);
        for (int c = lane; c < count; c += 32) {
            p.cand_voxel[first + c] = (int)v, p.cand_dir[first + c] = cand[c];
            {
                /* the highest grid value on or around it, as the CPU's grid_marks */
                const int d = cand[c] >= 0 ? cand[c] : -cand[c] - 1;
                const float v0 = vals[d];
                unsigned n[TK_FIB_NBR], near;
                grid_neighbours(p, d, n, &near);
                float rise = 0.f;
#pragma unroll
                for (int e = 0; e < NB; ++e) rise = fmaxf(rise, value_at(vals, n[e]) - v0);
                p.cand_high[first + c] = v0 + rise;
            }
            /* a grid maximum's climb starts at its model's maximum where that is uphill (as
             * on the CPU; the polish kernel falls back to the grid direction) */
            float *start = p.cand_start + (size_t)(first + c) * 3;
            start[0] = NAN;
            if (cand[c] >= 0) {
                const int d = cand[c];
                double x[3] = {__ldg(p.gx + d), __ldg(p.gy + d), __ldg(p.gz + d)};
                nt_normalize3_gpu(x);
                const double x0 = x[0], x1 = x[1], x2 = x[2];
                tk_fibers_fit_start_model(p, vals, d, x);
                if ((x[0] != x0 || x[1] != x1 || x[2] != x2) &&
                    poly_value_f<M>(cf, (float)x[0], (float)x[1], (float)x[2]) >= vals[d])
                    start[0] = (float)x[0], start[1] = (float)x[1], start[2] = (float)x[2];
            }
            /* pass 1a's work: the voxel's first grid maxima (the bar kernel lists the others
             * that can still matter); the shoulder candidates from the back */
            if (c >= count1) p.order[p.order_cap - 1 - (first2 + c - count1)] = first + c;
            else if (c < p.first_climbs) p.order[first1 + c] = first + c;
        }
        __syncwarp();
    }
}

/* Writes candidate i's result: the strict maximum x (amplitude amp) where good is 1, else none. */
__device__ static void put_result(const FibArgs &p, int i, int good, const double *x, double amp)
{
    if (good <= 0) {
        p.res_amp[i] = NAN;
        for (int j = 0; j < 3; ++j) p.res_dir[(size_t)i * 3 + j] = 0;
        return;
    }
    const double sign = fiber_sign(x);
    for (int j = 0; j < 3; ++j) p.res_dir[(size_t)i * 3 + j] = sign * x[j];
    p.res_amp[i] = amp;
}

/* Candidate i's grid direction, as a unit vector in double. */
__device__ static void grid_direction(const FibArgs &p, int i, double *x)
{
    const int coded = p.cand_dir[i], d = coded < 0 ? -coded - 1 : coded;
    x[0] = __ldg(p.gx + d), x[1] = __ldg(p.gy + d), x[2] = __ldg(p.gz + d);
    nt_normalize3_gpu(x);
}

/* The climbing passes, a lane per climb: the first grid maxima of each voxel (pass 1a, no
 * cutoff: the bar is not known yet), the others the bar kernel kept (1b), or the shoulder
 * candidates the shoulder kernel kept (pass 3, on the leash), taken from the work order in
 * turn.  Climbs take 1 to 25 iterations (the phantom's ring maxima the most), so a warp that
 * climbed 32 candidates to their ends waited for its longest: each lane runs its climb an
 * iteration at a time (nt_climb_step, the CPU's climb to the bit) and takes the next
 * candidate as soon as its climb ends.  A grid maximum's climb starts at its model's maximum
 * where that is uphill, else (or where that start proves wrong) at the grid direction, as on
 * the CPU (try_candidate); its answer for the shoulder kernel (cand_local): whether it reached
 * a maximum, or stopped below the bar, within the leash of its grid direction. */
enum fibers_pass { FIB_PASS_1A, FIB_PASS_1B, FIB_PASS_SHOULDERS };
template <class Policy, int M, int Pass>
__global__ void __launch_bounds__(Policy::block_threads, Policy::climb_min_blocks) fibers_climb_kernel(FibArgs p)
{
    constexpr int K = (M + 1) * (M + 2) / 2;
    const int offset = Pass == FIB_PASS_1B ? *p.num_kind1 : 0;
    const int total = Pass == FIB_PASS_1A ? *p.num_kind1 : Pass == FIB_PASS_1B ? *p.num_kind1b : *p.num_climbs;
    const int lane = threadIdx.x & 31;
    const double leash = TK_CLIMB_LEASH * p.spacing;
    int i = -1;        /* this lane's candidate; -1: none yet, -2: none left */
    int from_grid = 0; /* its climb starts at its grid direction (not at its model's maximum) */
    tk_newton_climb climb;
    double grid[3] = {0, 0, 0}, cutoff[3] = {0, 0, 0}, amp = 0;
    Poly<M> poly = {NULL};
    for (;;) {
        /* the lanes without a climb take the next candidates, one atomic a warp */
        const unsigned want = __ballot_sync(TK_WARP_ALL_LANES, i == -1);
        if (want) {
            const int leader = __ffs((int)want) - 1;
            int first = 0;
            if (lane == leader) first = atomicAdd(p.climbs_taken + Pass, __popc(want));
            first = __shfl_sync(TK_WARP_ALL_LANES, first, leader);
            if (i == -1) {
                const int t = first + __popc(want & ((1u << lane) - 1u));
                i = t < total ? p.order[offset + t] : -2;
                if (i >= 0) {
                    const int v = p.cand_voxel[i];
                    poly.c = p.coef + (size_t)v * (K + 2);
                    grid_direction(p, i, grid);
                    if (Pass != FIB_PASS_1A)
                        for (int j = 0; j < 3; ++j) cutoff[j] = p.bar[(size_t)v * 4 + j];
                    amp = 0;
                    const float *start = p.cand_start + (size_t)i * 3;
                    from_grid = Pass == FIB_PASS_SHOULDERS || isnan(start[0]);
                    if (from_grid) {
                        nt_climb_begin_gpu(&climb, grid, 0, Pass == FIB_PASS_SHOULDERS ? leash : 0, 0);
                    } else {
                        double y[3] = {start[0], start[1], start[2]};
                        nt_normalize3_gpu(y);
                        nt_climb_begin_gpu(&climb, y, 0.25 * p.spacing, 0, 0);
                    }
                }
            }
        }
        if (__all_sync(TK_WARP_ALL_LANES, i == -2)) break;
        if (i < 0) continue;
        int good = nt_climb_step_gpu<M>(&poly, &climb, &amp, NULL, Pass == FIB_PASS_1A ? NULL : cutoff);
        if (good == TK_NEWTON_CLIMBING) continue;
        if (good == TK_NEWTON_ENDED) good = nt_climb_end_gpu<M>(&poly, &climb, &amp, NULL);
        if (good == -1 && !from_grid) {
            /* the model's maximum was no start near a maximum: again from the grid direction */
            nt_climb_begin_gpu(&climb, grid, 0, 0, 0);
            from_grid = 1;
            continue;
        }
        const double *x = climb.x;
        if (Pass != FIB_PASS_SHOULDERS)
            p.cand_local[i] = (good > 0 || good == -2) && x[0] * grid[0] + x[1] * grid[1] + x[2] * grid[2] >= cos(leash);
        put_result(p, i, good, x, amp);
        i = -1;
    }
}

/* After pass 1a, a thread per voxel: its bar (tk_fibers_output_bar over the maxima pass 1a
 * found, merged as the CPU's add_maximum does), the bounds its later climbs' cutoff needs, and
 * the work order's pass-1b part: its other grid maxima, but for those whose hill cannot rise
 * above the bar (high + margin below it) and those within 1.5 spacings of a maximum found (the
 * same hill: try_candidate's tests), which are answered here as not climbed. */
template <class Policy, int M> __global__ void __launch_bounds__(Policy::block_threads) fibers_bar_kernel(FibArgs p)
{
    constexpr int K = (M + 1) * (M + 2) / 2;
    for (size_t v = (size_t)blockIdx.x * blockDim.x + threadIdx.x; v < p.num_voxels; v += (size_t)gridDim.x * blockDim.x) {
        const int count = p.count[v], first = p.first[v];
        if (count == 0 || p.axial_state[v] >= 0) continue;
        /* its grid maxima (listed before its shoulder candidates): counted with loads that do
         * not wait on each other (a loop to the first shoulder candidate waited on each) */
        int n1 = 0;
        for (int c = 0; c < count; ++c) n1 += p.cand_dir[first + c] >= 0;
        /* the CPU's bounds to the last bit (tk_fibers_derivative_bounds_d over the unit-scaled
         * series in double, tk_fibers_anisotropic_part's), each coefficient scaled as it is
         * summed: the series as an array of doubles took 44 registers (125 in all) */
        const double scale = p.coef[v * (K + 2) + K], iso = p.coef[v * (K + 2) + K + 1];
        const float *sh = p.sh + v * K;
        double sup = 0, m2 = 0, m3 = 0;
        for (int l = 2; l <= M; l += 2) {
            double cc = 0;
            for (int j = l * (l - 1) / 2; j <= l * (l + 3) / 2; ++j) {
                const double a = (double)__ldg(sh + j) / scale;
                cc += a * a;
            }
            tk_fibers_band_bound_add(l, cc, 1.0, &sup, &m2, &m3);
        }
        const double margin = tk_fibers_value_margin(sup, m2, TK_FIBERS_COVER * p.spacing);
        double dir[TK_FIB_CAP][3], amp[TK_FIB_CAP], out[TK_FIB_CAP];
        int kept[TK_FIB_CAP];
        const int climbed = n1 < p.first_climbs ? n1 : p.first_climbs;
        /* pass 1a's maxima merged as the select kernel merges them (the CPU's add_maximum),
         * from local copies: the list keeps its results for the select kernel */
        for (int c = 0; c < climbed; ++c) {
            amp[c] = p.res_amp[first + c];
            for (int j = 0; j < 3; ++j) dir[c][j] = p.res_dir[(size_t)(first + c) * 3 + j];
        }
        const int found = merge_maxima(dir[0], amp, climbed);
        const double bar = tk_fibers_output_bar(p.num_peaks, p.threshold, p.relative_threshold, p.min_separation_deg,
                                                scale, iso, found, dir[0], amp, out, kept);
        double *b = p.bar + v * 4;
        b[0] = bar, b[1] = m2, b[2] = m3, b[3] = margin;
        for (int c = first + climbed; c < first + n1; ++c) {
            bool skip = (double)p.cand_high[c] + margin < bar;
            if (!skip) {
                double x[3];
                grid_direction(p, c, x);
                for (int f = 0; f < found && !skip; ++f)
                    skip = fabs(dir[f][0] * x[0] + dir[f][1] * x[1] + dir[f][2] * x[2]) > p.cos_near;
            }
            if (skip) {
                const double none[3] = {0, 0, 0};
                p.cand_local[c] = 1;
                put_result(p, c, 0, none, 0);
                continue;
            }
            p.order[*p.num_kind1 + atomicAdd(p.num_kind1b, 1)] = c;
        }
    }
}

/* Pass 2, a thread per shoulder candidate, light: one whose hill cannot rise above its voxel's
 * bar is none; a shoulder next to a grid maximum of its voxel whose climb stayed on its own
 * hill (or that was not climbed: cand_local) is on that hill too; one whose Newton step puts
 * its hill's maximum beyond the leash is a larger lobe's (nt_shoulder_reaches).  The others
 * are listed from the front of the work order (pass 1's part of it is done; the shoulders, at
 * most TK_FIB_CAP a voxel, half the order's room, are read from its back) for pass 3, so that
 * its warps only climb.  The voxel's grid maxima come first in its stretch. */
template <class Policy, int M> __global__ void __launch_bounds__(Policy::block_threads) fibers_shoulder_kernel(FibArgs p)
{
    constexpr int K = (M + 1) * (M + 2) / 2;
    const int total = *p.num_kind2;
    const double leash = TK_CLIMB_LEASH * p.spacing;
    for (int t = blockIdx.x * blockDim.x + threadIdx.x; t < total; t += gridDim.x * blockDim.x) {
        const int i = p.order[p.order_cap - 1 - t], v = p.cand_voxel[i], end = p.first[v] + p.count[v];
        double x[3];
        grid_direction(p, i, x);
        const double *b = p.bar + (size_t)v * 4;
        bool by_max = (double)p.cand_high[i] + b[3] < b[0];
        for (int c = p.first[v]; c < end && !by_max; ++c) {
            const int e = p.cand_dir[c];
            if (e < 0) break;
            const double ge[3] = {__ldg(p.gx + e), __ldg(p.gy + e), __ldg(p.gz + e)};
            by_max = p.cand_local[c] && fabs(x[0] * ge[0] + x[1] * ge[1] + x[2] * ge[2]) > p.cos_near;
        }
        const Poly<M> poly = {p.coef + (size_t)v * (K + 2)};
        if (by_max || !nt_shoulder_reaches_gpu<M>(&poly, x, leash)) {
            put_result(p, i, 0, x, 0);
            continue;
        }
        p.order[atomicAdd(p.num_climbs, 1)] = i;
    }
}

template <class Policy> __global__ void __launch_bounds__(Policy::block_threads) fibers_select_kernel(FibArgs p)
{
    const int np = p.num_peaks;
    for (size_t v = (size_t)blockIdx.x * blockDim.x + threadIdx.x; v < p.num_voxels; v += (size_t)gridDim.x * blockDim.x) {
        const int first = p.first[v], count = p.count[v];
        int kept[TK_FIB_CAP];
        const int found = merge_maxima(p.res_dir + (size_t)first * 3, p.res_amp + first, count);
        /* back from the unit-size anisotropic part to the series' own values */
        const double scale = found ? p.coef[v * (p.k + 2) + p.k] : 0, iso = found ? p.coef[v * (p.k + 2) + p.k + 1] : 0;
        for (int f = 0; f < found; ++f) p.res_amp[first + f] = p.res_amp[first + f] * scale + iso;
        tk_fibers_select(np, p.threshold, p.relative_threshold, p.min_separation_deg, p.cos_sep, found,
                         p.res_dir + (size_t)first * 3, p.res_amp + first, kept, p.dirs + v * np * 3, p.amps + v * np);
    }
}

#endif
