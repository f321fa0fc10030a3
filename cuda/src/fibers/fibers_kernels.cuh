/* The CUDA peak finder's kernels, templated on a launch policy (fibers_tuning.h) and the
 * series' order M; their device math is fibers_device.cuh's, their launches fibers_cuda.cu's.
 *
 * A warp per voxel turns the voxel's SH coefficients into the monomial coefficients of its
 * degree-lmax polynomial (one small matrix-vector product), evaluates the polynomial on the
 * tables' hemisphere grid (homogeneous Horner in float: the grid only ranks directions), keeps
 * the grid directions not below any neighbour as candidates, and appends them to one
 * candidate list; a thread per candidate then polishes it with the CPU's Newton code in double
 * (fibers_newton.h), and a thread per voxel merges, sorts and selects (fibers_select.h)
 * exactly as the CPU does. */
#ifndef TK_FIBERS_KERNELS_CUH
#define TK_FIBERS_KERNELS_CUH

#include "common/warp_reduce.cuh"
#include "fibers_device.cuh"
#include "fibers_select.h"

/* Candidates per voxel and kind, as many as the CPU keeps (the largest by grid value); a
 * voxel has up to two lists (grid maxima, then shoulder candidates). */
#define TK_FIB_CAP TK_FIBERS_MAX_CANDIDATES
#define TK_FIB_CAP2 (2 * TK_FIB_CAP)

/* Three kernels per chunk, so that each runs at the occupancy its work wants: the grid
 * pass (light, float, a warp per voxel) compacts its candidates into one list; the polish
 * (heavy, double) runs a thread per candidate, every lane busy; the merge runs a thread
 * per voxel over that voxel's stretch of the list. */
struct FibArgs {
    const float *sh;      /* chunk voxels x k */
    const uint8_t *mask;  /* chunk voxels, or NULL */
    float *dirs, *amps;   /* chunk voxels x num_peaks x 3, x num_peaks */
    unsigned long long *bad;
    const double *pt;     /* monomial map, column-major: pt[col * k + row] */
    const float *gx, *gy, *gz;
    const int *nbr_start, *nbr, *nbr_near;
    const int *fit_nbr;   /* the plan's fit stencils (fibers_fit.c), grid_padded-strided */
    const float *fit_w;
    double *coef;         /* chunk voxels x (k + 2): the monomial coefficients of the series'
                           * anisotropic part scaled to unit size, then that scale and the
                           * constant term (tk_fibers_anisotropic_part) */
    int *first, *count;   /* per voxel: its stretch of the candidate list */
    int *num_cands;       /* length of the candidate list */
    int *num_kind1, *num_kind2; /* how many of them are grid maxima / shoulder candidates */
    int *num_climbs;      /* how many shoulder candidates the shoulder kernel keeps for a climb */
    int *order;           /* the polish kernel's work order: grid maxima from the front, shoulder
                           * candidates from the back (order_cap entries), so that a warp's
                           * threads mostly do the same work: a whole climb, or one Newton step
                           * that most shoulder candidates fail */
    int order_cap;
    int *cand_voxel, *cand_dir;
    float *cand_start;    /* per candidate: a grid maximum's model maximum to start its climb
                           * at (x, y, z), or NaN in x to start at the grid direction */
    double *res_dir, *res_amp; /* per candidate: the polished maximum (amplitude NaN if none) */
    size_t num_voxels;
    double axial_q[5][9];  /* the plan's l = 2 quadratic forms (tk_fibers_axial_axis) */
    int *axial_state;      /* chunk voxels: the axial kernel's answer (-1: the grid pass decides) */
    double *axial_res;     /* chunk voxels x 4: its axis and unit-scaled amplitude */
    tk_sh_basis basis;
    int legacy, lmax;
    int grid, grid_padded, k, num_peaks;
    double threshold, relative_threshold, min_separation_deg, cos_sep, spacing, cos_near;
};

/* One warp's shared memory in the grid pass. */
__host__ __device__ static size_t warp_shared_bytes(int k, int grid_padded)
{
    size_t bytes = 4 * ((size_t)grid_padded + 2 * (size_t)k + TK_FIB_CAP2);
    return (bytes + 15) / 16 * 16;
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
 * steepest fall to another; 0: neither.  As grid_local_maxima on the CPU. */
/* floor: where v0 + rise (the highest grid value on or around d) is below it, d's hill cannot
 * rise above the threshold: no candidate (the CPU's output bound, in the part that depends on
 * nothing found: maxima_from_grid). */
__device__ static int grid_candidate_kind(const FibArgs &p, const float *vals, int d, float floor)
{
    const float v0 = vals[d];
    bool ok_near = true;
    int higher = 0;
    float rise = 0.f, fall = 0.f;
    const int first = __ldg(p.nbr_start + d), end = __ldg(p.nbr_start + d + 1), near = __ldg(p.nbr_near + d);
    for (int e = first; e < end; ++e) {
        const float step = vals[__ldg(p.nbr + e)] - v0;
        const bool not_below = step <= 0.f;
        higher += !not_below;
        ok_near &= not_below | (e - first >= near);
        rise = fmaxf(rise, step), fall = fmaxf(fall, -step);
    }
    if (v0 + rise < floor) return 0;
    if (higher == 0) return 1;
    if (!(ok_near || (higher == 1 && rise < TK_RIDGE_RISE * fall))) return 0;
    /* a shoulder candidate whose neighbours' quadratic model has no maximum within reach
     * is none (as shoulder_fit_reaches on the CPU) */
    float th[5];
    grid_fit_model(p, vals, d, th);
    return tk_fibers_fit_reaches(th, (float)p.spacing) ? 2 : 0;
}

/* The axial test (fibers_internal.h; the CPU's axial_maxima), a thread per voxel, before the
 * grid pass: axial_state[v] = -1 where the voxel goes to the grid pass (not finite, masked,
 * constant: the grid kernel says so; or no axially symmetric series), else 1 with its axis
 * and amplitude (unit-scaled) in axial_res[4 v ...] where that axis is a strict maximum, or 0.
 * A kernel of its own so that the grid kernel's registers stay those of its float pass. */
template <class Policy, int M> __global__ void __launch_bounds__(Policy::block_threads) fibers_axial_kernel(FibArgs p)
{
    constexpr int K = (M + 1) * (M + 2) / 2;
    for (size_t v = (size_t)blockIdx.x * blockDim.x + threadIdx.x; v < p.num_voxels; v += (size_t)gridDim.x * blockDim.x) {
        int state = -1;
        double sh[K], aniso[K], x[3], amp = 0;
        bool ok = !p.mask || p.mask[v];
        for (int j = 0; j < K && ok; ++j) ok = isfinite(sh[j] = (double)__ldg(p.sh + v * K + j));
        double big = 0, iso = 0;
        if (ok) big = tk_fibers_anisotropic_part(K, sh, aniso, &iso);
        if (big > 0 && tk_fibers_axial_axis(p.axial_q, K, aniso, x)) {
            double coef[K]; /* the unit-scaled polynomial, as the grid kernel makes it */
            for (int i = 0; i < K; ++i) {
                double c = 0;
                for (int j = 1; j < K; ++j) c = fma(__ldg(p.pt + (size_t)j * K + i), aniso[j], c);
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
    constexpr int K = (M + 1) * (M + 2) / 2;
    /* 64-bit words of kind bits a lane needs for the plan's grid */
    constexpr int KIND_WORDS = (TK_FIBERS_GRID_SIZE(M) + 32 * 64 - 1) / (32 * 64);
    extern __shared__ float fsmem[];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    float *vals = (float *)((char *)fsmem + warp_shared_bytes(K, p.grid_padded) * warp);
    float *cf = vals + p.grid_padded, *shv = cf + K;
    int *cand = (int *)(shv + K);
    const int G = p.grid;

    constexpr int WARPS = Policy::warps_per_block;
    for (size_t v = (size_t)blockIdx.x * WARPS + warp; v < p.num_voxels; v += (size_t)gridDim.x * WARPS) {
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
        for (int i = lane; i < K; i += 32) {
            double s = 0;
            for (int j = 1; j < K; ++j) s = fma(__ldg(p.pt + (size_t)j * K + i), (double)shv[j] * inv, s);
            coef[i] = s;
            cf[i] = (float)s;
        }
        __syncwarp();
        for (int d = lane; d < G; d += 32) vals[d] = poly_value_f<M>(cf, __ldg(p.gx + d), __ldg(p.gy + d), __ldg(p.gz + d));
        __syncwarp();

        /* each direction's kind once, as bits: lane l's bit b is direction 32 b + l */
        unsigned long long kind1[KIND_WORDS], kind2[KIND_WORDS];
#pragma unroll
        for (int w = 0; w < KIND_WORDS; ++w) kind1[w] = kind2[w] = 0;
        for (int first = 0, b = 0; first < G; first += 32, ++b) {
            const int d = first + lane, kd = d < G ? grid_candidate_kind(p, vals, d, floor) : 0;
            const unsigned long long bit = 1ull << (b & 63);
#pragma unroll
            for (int w = 0; w < KIND_WORDS; ++w)
                if (w == b >> 6) kind1[w] |= kd == 1 ? bit : 0, kind2[w] |= kd == 2 ? bit : 0;
        }

        /* candidates: grid directions not below any neighbour, then shoulder candidates
         * (encoded -(d + 1) for the polish kernel's test); each list in index order */
        int count = 0, count1 = 0;
        for (int kind = 1; kind <= 2; ++kind) {
            int *list = cand + count, n = 0;
            unsigned long long hits[KIND_WORDS]; /* this lane's hits, as the kind bits */
#pragma unroll
            for (int w = 0; w < KIND_WORDS; ++w) hits[w] = 0;
            for (int first = 0, b = 0; first < G; first += 32, ++b) {
                const int d = first + lane;
                unsigned long long word = 0;
#pragma unroll
                for (int w = 0; w < KIND_WORDS; ++w)
                    if (w == b >> 6) word = kind == 1 ? kind1[w] : kind2[w];
                /* (a shoulder candidate next to a grid maximum whose climb stays on its hill is
                 * on that hill: the polish kernel's second pass decides, as the CPU does) */
                bool hit = d < G && ((word >> (b & 63)) & 1ull);
#pragma unroll
                for (int w = 0; w < KIND_WORDS; ++w)
                    if (w == b >> 6 && hit) hits[w] |= 1ull << (b & 63);
                const unsigned ballot = __ballot_sync(TK_WARP_ALL_LANES, hit);
                const int pos = n + __popc(ballot & ((1u << lane) - 1u));
                if (hit && pos < TK_FIB_CAP) list[pos] = d;
                n += __popc(ballot);
            }
            __syncwarp();
            if (n > TK_FIB_CAP) {
                /* Rare but for noise-free phantoms' rings: keep the CAP largest, as the CPU does,
                 * largest first, taken one at a time by a warp-wide arg-max over the hit bits
                 * (ties to the lower direction). */
                for (int c = 0; c < TK_FIB_CAP; ++c) {
                    float best = -INFINITY;
                    int best_d = 0x7fffffff;
#pragma unroll
                    for (int w = 0; w < KIND_WORDS; ++w)
                        for (unsigned long long rest = hits[w]; rest; rest &= rest - 1) {
                            const int d = (w * 64 + __ffsll((long long)rest) - 1) * 32 + lane;
                            if (vals[d] > best || (vals[d] == best && d < best_d)) best = vals[d], best_d = d;
                        }
                    for (int o = 16; o > 0; o >>= 1) {
                        const float ov = __shfl_xor_sync(TK_WARP_ALL_LANES, best, o);
                        const int od = __shfl_xor_sync(TK_WARP_ALL_LANES, best_d, o);
                        if (ov > best || (ov == best && od < best_d)) best = ov, best_d = od;
                    }
                    if ((best_d & 31) == lane) {
                        const int bit = best_d >> 5;
#pragma unroll
                        for (int w = 0; w < KIND_WORDS; ++w)
                            if (w == bit >> 6) hits[w] &= ~(1ull << (bit & 63));
                    }
                    if (lane == 0) list[c] = best_d;
                }
                n = TK_FIB_CAP;
                __syncwarp();
            }
            if (kind == 2)
                for (int c = lane; c < n; c += 32) list[c] = -(list[c] + 1);
            count += n;
            if (kind == 1) count1 = n;
            __syncwarp();
        }
        int first = 0, first1 = 0, first2 = 0;
        if (lane == 0) {
            first = atomicAdd(p.num_cands, count), p.first[v] = first, p.count[v] = count;
            first1 = atomicAdd(p.num_kind1, count1), first2 = atomicAdd(p.num_kind2, count - count1);
        }
        first = __shfl_sync(TK_WARP_ALL_LANES, first, 0);
        first1 = __shfl_sync(TK_WARP_ALL_LANES, first1, 0), first2 = __shfl_sync(TK_WARP_ALL_LANES, first2, 0);
        for (int c = lane; c < count; c += 32) {
            p.cand_voxel[first + c] = (int)v, p.cand_dir[first + c] = cand[c];
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
            if (c < count1) p.order[first1 + c] = first + c;
            else p.order[p.order_cap - 1 - (first2 + c - count1)] = first + c;
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

/* The climbing passes' start: candidate i's voxel's polynomial, and its grid direction in x. */
template <int M> __device__ __forceinline__ Poly<M> candidate_start(const FibArgs &p, int i, double *x)
{
    constexpr int K = (M + 1) * (M + 2) / 2;
    const Poly<M> poly = {p.coef + (size_t)p.cand_voxel[i] * (K + 2)};
    grid_direction(p, i, x);
    return poly;
}

/* A grid maximum's climb (pass 1): from its model's maximum, else from itself, as on the CPU
 * (try_candidate); x: its grid direction, then the maximum reached. */
template <int M>
__device__ __forceinline__ int climb_grid_maximum(const FibArgs &p, int i, const Poly<M> *poly, double *x, double *amp)
{
    int good = -1;
    const float *start = p.cand_start + (size_t)i * 3;
    if (!isnan(start[0])) {
        double y[3] = {start[0], start[1], start[2]};
        nt_normalize3_gpu(y);
        good = nt_polish_gpu<M>(poly, y, amp, NULL, 0.25 * p.spacing, 0, 0, NULL);
        if (good >= 0) x[0] = y[0], x[1] = y[1], x[2] = y[2];
    }
    if (good < 0) good = nt_polish_gpu<M>(poly, x, amp, NULL, 0, 0, 0, NULL);
    return good;
}

/* Passes 1 and 3, a thread per candidate of the work order's front: the grid maxima's climbs
 * (GridMaxima), or the climbs on the leash of the shoulder candidates pass 2 kept. */
template <class Policy, int M, bool GridMaxima>
__global__ void __launch_bounds__(Policy::block_threads, Policy::climb_min_blocks) fibers_climb_kernel(FibArgs p)
{
    const int total = GridMaxima ? *p.num_kind1 : *p.num_climbs;
    for (int t = blockIdx.x * blockDim.x + threadIdx.x; t < total; t += gridDim.x * blockDim.x) {
        const int i = p.order[t];
        double x[3], amp = 0;
        const Poly<M> poly = candidate_start<M>(p, i, x);
        int good;
        if constexpr (GridMaxima) good = climb_grid_maximum<M>(p, i, &poly, x, &amp);
        else good = nt_polish_gpu<M>(&poly, x, &amp, NULL, 0, TK_CLIMB_LEASH * p.spacing, 0, NULL);
        put_result(p, i, good, x, amp);
    }
}

/* Pass 2, a thread per shoulder candidate, light: a shoulder next to a grid maximum of its
 * voxel whose climb (pass 1's) stayed on its own hill, within the leash, is on that hill too;
 * one whose Newton step puts its hill's maximum beyond the leash is a larger lobe's
 * (nt_shoulder_reaches).  The others are listed from the front of the work order (pass 1's
 * part of it is done; the shoulders, at most TK_FIB_CAP a voxel, half the order's room, are
 * read from its back) for pass 3, so that its warps only climb.  The voxel's grid maxima come
 * first in its stretch. */
template <class Policy, int M> __global__ void __launch_bounds__(Policy::block_threads) fibers_shoulder_kernel(FibArgs p)
{
    constexpr int K = (M + 1) * (M + 2) / 2;
    const int total = *p.num_kind2;
    const double leash = TK_CLIMB_LEASH * p.spacing, cos_leash = cos(leash);
    for (int t = blockIdx.x * blockDim.x + threadIdx.x; t < total; t += gridDim.x * blockDim.x) {
        const int i = p.order[p.order_cap - 1 - t], v = p.cand_voxel[i], end = p.first[v] + p.count[v];
        double x[3];
        grid_direction(p, i, x);
        bool by_max = false;
        for (int c = p.first[v]; c < end && !by_max; ++c) {
            const int e = p.cand_dir[c];
            if (e < 0) break;
            const double ge[3] = {__ldg(p.gx + e), __ldg(p.gy + e), __ldg(p.gz + e)};
            const double *r = p.res_dir + (size_t)c * 3;
            by_max = fabs(x[0] * ge[0] + x[1] * ge[1] + x[2] * ge[2]) > p.cos_near && !isnan(p.res_amp[c]) &&
                     fabs(r[0] * ge[0] + r[1] * ge[1] + r[2] * ge[2]) >=
                         cos_leash * sqrt(ge[0] * ge[0] + ge[1] * ge[1] + ge[2] * ge[2]);
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
