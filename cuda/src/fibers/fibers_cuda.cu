/* CUDA backend of the fiber peak finder.
 *
 * A warp per voxel turns the voxel's SH coefficients into the monomial
 * coefficients of its degree-lmax polynomial (one small matrix-vector product), evaluates
 * the polynomial on the plan's hemisphere grid (homogeneous Horner in float: the grid only
 * ranks directions), keeps the grid directions not below any neighbour as candidates,
 * and appends them to one candidate list; a thread per candidate then polishes it with the
 * CPU's Newton code in double (fibers_newton.h), and a thread per voxel merges, sorts and
 * selects (fibers_select.h) exactly as the CPU does.  The host streams the volume through in chunks on two streams so that one
 * chunk's copies overlap the other's kernel.
 */
#include <cuda_runtime.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cuda_memory.h"
#include "fibers_internal.h"
#include "fibers_select.h"
#include "sshopm/sshopm_internal.h"

#define TK_FIB_WARPS 4
#define TK_FIB_THREADS (TK_FIB_WARPS * 32)
/* Candidates per voxel and kind, as many as the CPU keeps (the largest by grid value); a
 * voxel has up to two lists (grid maxima, then shoulder candidates). */
#define TK_FIB_CAP 64
#define TK_FIB_CAP2 (2 * TK_FIB_CAP)
#define TK_FIB_FULL 0xffffffffu

/* ---- the voxel's polynomial ------------------------------------------------------ */

/* f(x) = sum_i c_i x^a y^b z^c, monomials ordered by z power c, then y power b (see
 * tk_fibers_monomial_map).  Offset of the first monomial of z power c: */
__host__ __device__ constexpr int poly_offset(int m, int c) { return c * (m + 1) - c * (c - 1) / 2; }

template <int M> struct Poly {
    const double *c; /* shared memory: every lane of the warp reads the same entry */
};

/* f, its gradient and its Hessian at x, by Horner chains that carry the derivatives along:
 * in x over each z power's bivariate part (its y-derivatives through the y powers of the
 * coefficients), then in z over the z powers.  About thirty live doubles, whatever M.
 * Not inlined: inlined, the compiler hoists the coefficients and their scalings out of
 * the Newton loop into registers and spills. */
template <int M> __device__ __noinline__ void poly_derivs(const Poly<M> *t, const double *x, double *y, double *h)
{
    const double X = x[0], Y = x[1], Z = x[2];
    double f0 = 0, f1 = 0, f2 = 0, gx0 = 0, gx1 = 0, gy0 = 0, gy1 = 0, hxx = 0, hxy = 0, hyy = 0;
#pragma unroll
    for (int c = M; c >= 0; --c) {
        const double *k = t->c + poly_offset(M, c);
        double r0 = 0, r1 = 0, r2 = 0, s0 = 0, s1 = 0, u0 = 0, yb = 1, yb1 = 0, yb2 = 0;
#pragma unroll
        for (int b = 0; b <= M - c; ++b) {
            const double kb = k[b];
            r2 = r2 * X + 2 * r1, r1 = r1 * X + r0, r0 = r0 * X + kb * yb;
            s1 = s1 * X + s0, s0 = s0 * X + kb * b * yb1;
            u0 = u0 * X + kb * (b * (b - 1)) * yb2;
            yb2 = yb1, yb1 = yb, yb *= Y;
        }
        f2 = f2 * Z + 2 * f1, f1 = f1 * Z + f0, f0 = f0 * Z + r0;
        gx1 = gx1 * Z + gx0, gx0 = gx0 * Z + r1;
        gy1 = gy1 * Z + gy0, gy0 = gy0 * Z + s0;
        hxx = hxx * Z + r2, hxy = hxy * Z + s1, hyy = hyy * Z + u0;
    }
    /* y = grad f / M;  h = Hessian f / (M (M - 1)) */
    const double g = 1.0 / M, q = 1.0 / (M * (M - 1));
    y[0] = gx0 * g, y[1] = gy0 * g, y[2] = f1 * g;
    h[0] = hxx * q, h[1] = h[3] = hxy * q, h[2] = h[6] = gx1 * q;
    h[4] = hyy * q, h[5] = h[7] = gy1 * q, h[8] = f2 * q;
}

/* f at x in double (the backtracking test). */
template <int M> __device__ __noinline__ double poly_value(const Poly<M> *t, const double *x)
{
    double p = 0;
#pragma unroll
    for (int c = M; c >= 0; --c) {
        const double *k = t->c + poly_offset(M, c);
        double s = 0, yb = 1;
#pragma unroll
        for (int b = 0; b <= M - c; ++b) s = s * x[0] + k[b] * yb, yb *= x[1];
        p = p * x[2] + s;
    }
    return p;
}

/* f at a grid direction, in float: Horner in x with y powers inside each z power, then
 * Horner in z. */
template <int M> __device__ __forceinline__ float poly_value_f(const float *cf, float x, float y, float z)
{
    float py[M + 1];
    py[0] = 1.f;
#pragma unroll
    for (int i = 1; i <= M; ++i) py[i] = py[i - 1] * y;
    float p = 0.f;
#pragma unroll
    for (int c = M; c >= 0; --c) {
        const int o = poly_offset(M, c);
        float s = cf[o];
#pragma unroll
        for (int b = 1; b <= M - c; ++b) s = fmaf(s, x, cf[o + b] * py[b]);
        p = fmaf(p, z, s);
    }
    return p;
}

#define TK_NEWTON_FN template <int M> static __device__
#define TK_NEWTON_UTIL static __device__ __forceinline__
#define TK_NEWTON_CTX Poly<M>
#define TK_NEWTON_SFX(name) name##_gpu
#define TK_NEWTON_ORDER(t) (M)
#define TK_NEWTON_DERIVS(t, x, y, h) poly_derivs<M>(t, x, y, h)
#define TK_NEWTON_VALUE(t, x) poly_value<M>(t, x)
#include "fibers_newton.h"

/* ---- the kernels ----------------------------------------------------------------- */

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
template <int M> __global__ void __launch_bounds__(TK_FIB_THREADS) fibers_axial_kernel(FibArgs p)
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
                /* x and -x are one fiber: the largest-magnitude entry positive, as on the CPU */
                int top = fabs(x[1]) > fabs(x[0]) ? 1 : 0;
                if (fabs(x[2]) > fabs(x[top])) top = 2;
                const double sign = x[top] < 0 ? -1.0 : 1.0;
                for (int j = 0; j < 3; ++j) p.axial_res[v * 4 + j] = sign * x[j];
                p.axial_res[v * 4 + 3] = amp;
            }
        }
        p.axial_state[v] = state;
    }
}

template <int M> __global__ void __launch_bounds__(TK_FIB_THREADS) fibers_grid_kernel(FibArgs p)
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

    for (size_t v = (size_t)blockIdx.x * TK_FIB_WARPS + warp; v < p.num_voxels; v += (size_t)gridDim.x * TK_FIB_WARPS) {
        bool ok = !p.mask || p.mask[v], finite = true;
        if (ok)
            for (int j = lane; j < K; j += 32) {
                const float s = __ldg(p.sh + v * K + j);
                shv[j] = s;
                finite &= isfinite(s);
            }
        if (ok && __any_sync(TK_FIB_FULL, !finite)) {
            ok = false;
            if (lane == 0) atomicAdd(p.bad, 1ull);
        }
        /* as tk_fibers_anisotropic_part: a constant voxel has no maxima and stops here */
        float big = 0.f;
        for (int j = lane + 1; j < K && ok; j += 32) big = fmaxf(big, fabsf(shv[j]));
        for (int o = 16; o > 0; o >>= 1) big = fmaxf(big, __shfl_xor_sync(TK_FIB_FULL, big, o));
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
            double m2 = 0, sup = 0;
            for (int l = 2; l <= M; l += 2) {
                double cc = 0;
                for (int j = l * (l - 1) / 2; j <= l * (l + 3) / 2; ++j) cc += (double)shv[j] * shv[j];
                const double band = sqrt((2.0 * l + 1.0) / (4.0 * 3.14159265358979323846) * cc) / big;
                m2 += (double)(l * l) * band, sup += band;
            }
            const double margin = 0.5 * m2 * (TK_FIBERS_COVER * p.spacing) * (TK_FIBERS_COVER * p.spacing) + 1e-4 * sup;
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
                const unsigned ballot = __ballot_sync(TK_FIB_FULL, hit);
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
                        const float ov = __shfl_xor_sync(TK_FIB_FULL, best, o);
                        const int od = __shfl_xor_sync(TK_FIB_FULL, best_d, o);
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
        first = __shfl_sync(TK_FIB_FULL, first, 0);
        first1 = __shfl_sync(TK_FIB_FULL, first1, 0), first2 = __shfl_sync(TK_FIB_FULL, first2, 0);
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
    /* x and -x are one fiber: the largest-magnitude entry positive, as on the CPU */
    int big = fabs(x[1]) > fabs(x[0]) ? 1 : 0;
    if (fabs(x[2]) > fabs(x[big])) big = 2;
    const double sign = x[big] < 0 ? -1.0 : 1.0;
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

/* Pass 1, a thread per grid maximum: its climb from its model's maximum, else from itself, as
 * on the CPU (try_candidate). */
template <int M> __global__ void __launch_bounds__(TK_FIB_THREADS, 4) fibers_polish_kernel(FibArgs p)
{
    constexpr int K = (M + 1) * (M + 2) / 2;
    const int total = *p.num_kind1;
    for (int t = blockIdx.x * blockDim.x + threadIdx.x; t < total; t += gridDim.x * blockDim.x) {
        const int i = p.order[t];
        const Poly<M> poly = {p.coef + (size_t)p.cand_voxel[i] * (K + 2)};
        double x[3], amp = 0;
        grid_direction(p, i, x);
        int good = -1;
        const float *start = p.cand_start + (size_t)i * 3;
        if (!isnan(start[0])) {
            double y[3] = {start[0], start[1], start[2]};
            nt_normalize3_gpu(y);
            good = nt_polish_gpu<M>(&poly, y, &amp, NULL, 0.25 * p.spacing, 0, 0, NULL);
            if (good >= 0) x[0] = y[0], x[1] = y[1], x[2] = y[2];
        }
        if (good < 0) good = nt_polish_gpu<M>(&poly, x, &amp, NULL, 0, 0, 0, NULL);
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
template <int M> __global__ void __launch_bounds__(TK_FIB_THREADS) fibers_shoulder_kernel(FibArgs p)
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

/* Pass 3, a thread per shoulder candidate pass 2 kept: its climb on the leash. */
template <int M> __global__ void __launch_bounds__(TK_FIB_THREADS, 4) fibers_climb_kernel(FibArgs p)
{
    constexpr int K = (M + 1) * (M + 2) / 2;
    const int total = *p.num_climbs;
    for (int t = blockIdx.x * blockDim.x + threadIdx.x; t < total; t += gridDim.x * blockDim.x) {
        const int i = p.order[t];
        const Poly<M> poly = {p.coef + (size_t)p.cand_voxel[i] * (K + 2)};
        double x[3], amp = 0;
        grid_direction(p, i, x);
        const int good = nt_polish_gpu<M>(&poly, x, &amp, NULL, 0, TK_CLIMB_LEASH * p.spacing, 0, NULL);
        put_result(p, i, good, x, amp);
    }
}

/* Merge duplicates and sort by amplitude, in place over one voxel's candidates; returns
 * the number of distinct maxima.  Candidates keep the grid's index order, as on the CPU. */
__device__ static int merge_maxima(double *dir, double *amp, int count)
{
    int found = 0;
    for (int c = 0; c < count; ++c) {
        const double a = amp[c], x0 = dir[c * 3], x1 = dir[c * 3 + 1], x2 = dir[c * 3 + 2];
        if (isnan(a)) continue;
        bool dup = false;
        for (int f = 0; f < found && !dup; ++f)
            dup = fabs(dir[f * 3] * x0 + dir[f * 3 + 1] * x1 + dir[f * 3 + 2] * x2) > 1.0 - 1e-10;
        if (dup) continue;
        int pos = found++;
        while (pos > 0 && amp[pos - 1] < a) {
            amp[pos] = amp[pos - 1];
            for (int i = 0; i < 3; ++i) dir[pos * 3 + i] = dir[(pos - 1) * 3 + i];
            --pos;
        }
        amp[pos] = a, dir[pos * 3] = x0, dir[pos * 3 + 1] = x1, dir[pos * 3 + 2] = x2;
    }
    return found;
}

__global__ void __launch_bounds__(TK_FIB_THREADS) fibers_select_kernel(FibArgs p)
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

/* ---- host --------------------------------------------------------------------------- */

#define CUDA_TRY(call)                                                                                          \
    do {                                                                                                        \
        cudaError_t err_ = (call);                                                                              \
        if (err_ != cudaSuccess) {                                                                              \
            status = tk_set_error(err_ == cudaErrorMemoryAllocation ? TK_ERR_MEMORY : TK_ERR_CUDA,              \
                                  "CUDA fiber backend: %s failed: %s", #call, cudaGetErrorString(err_));        \
            goto cleanup;                                                                                       \
        }                                                                                                       \
    } while (0)

typedef void (*fibers_kernel_fn)(FibArgs);
typedef struct {
    fibers_kernel_fn axial, grid, polish, shoulder, climb;
} fibers_kernels;

static fibers_kernels kernels_for(int lmax)
{
    fibers_kernels none = {NULL, NULL, NULL, NULL, NULL};
    switch (lmax) {
#define TK_FIB_CASE(M)                                                                                            \
    case M: {                                                                                                     \
        fibers_kernels k = {fibers_axial_kernel<M>, fibers_grid_kernel<M>, fibers_polish_kernel<M>,                \
                            fibers_shoulder_kernel<M>, fibers_climb_kernel<M>};                                   \
        return k;                                                                                                 \
    }
        TK_FIB_CASE(2) TK_FIB_CASE(4) TK_FIB_CASE(6) TK_FIB_CASE(8)
        TK_FIB_CASE(10) TK_FIB_CASE(12) TK_FIB_CASE(14) TK_FIB_CASE(16)
#undef TK_FIB_CASE
    default: return none;
    }
}

extern "C" tk_status tk_fibers_find_cuda(const tk_fibers_options *o, const tk_fibers_plan *plan, size_t num_voxels,
                                         const float *sh, const uint8_t *mask, float *directions, float *amplitudes,
                                         size_t *bad_voxels, tk_timing *timing)
{
    tk_status status = TK_OK;
    const double start_ms = tk_now_ms();
    const int k = plan->k, G = plan->grid, np = o->num_peaks;
    const fibers_kernels kernels = kernels_for(plan->lmax);
    const size_t smem = warp_shared_bytes(k, plan->grid_padded) * TK_FIB_WARPS;
    double *P = NULL, *d_pt = NULL;
    float *d_fit_w = NULL;
    const size_t fit_entries = (size_t)TK_FIBERS_FIT_WIDTH * plan->grid_padded;
    float *h_grid = NULL, *d_grid = NULL, *d_sh[2] = {NULL, NULL}, *d_dirs[2] = {NULL, NULL}, *d_amps[2] = {NULL, NULL};
    int *d_nbr_start = NULL, *d_nbr = NULL, *d_nbr_near = NULL, *d_fit_nbr = NULL, sm_count = 0, blocks_per_sm = 0;
    uint8_t *d_mask[2] = {NULL, NULL};
    double *d_coef[2] = {NULL, NULL}, *d_res[2] = {NULL, NULL};
    int *d_voxel_list[2] = {NULL, NULL}, *d_cand_list[2] = {NULL, NULL}, *d_axial_state[2] = {NULL, NULL};
    double *d_axial_res[2] = {NULL, NULL};
    float *d_cand_start[2] = {NULL, NULL};
    int polish_blocks = 0, select_blocks = 0, axial_blocks = 0, shoulder_blocks = 0;
    unsigned long long *d_bad = NULL, bad = 0;
    cudaStream_t stream[2] = {NULL, NULL};
    cudaEvent_t ev_start[2] = {NULL, NULL}, ev_stop[2] = {NULL, NULL}, ev_grid[2] = {NULL, NULL}, ev_polish[2] = {NULL, NULL};
    /* TK_FIBERS_CUDA_TIMELINE set (and not 0): each chunk's kernels on stderr, in ms, with its
     * candidate count (where the GPU's time goes, with no profiler on the lent machine) */
    const char *timeline_knob = getenv("TK_FIBERS_CUDA_TIMELINE");
    const int timeline = timeline_knob && strcmp(timeline_knob, "0") != 0;
    size_t chunk = 0, free_bytes = 0, total_bytes = 0, per_voxel = 0;
    float kernel_ms = 0;
    FibArgs a;
    memset(&a, 0, sizeof a);

    if (!kernels.grid) return tk_set_error(TK_ERR_UNSUPPORTED, "the CUDA fiber backend has no kernel for lmax %d", plan->lmax);
    if ((status = tk_cuda_require_device(o->cuda_device)) != TK_OK) return status; /* the reason --backend auto gives */
    if (bad_voxels) *bad_voxels = 0;

    CUDA_TRY(cudaSetDevice(o->cuda_device));
    CUDA_TRY(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, o->cuda_device));
    CUDA_TRY(cudaFuncSetAttribute(kernels.grid, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, kernels.grid, TK_FIB_THREADS, smem));
    CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&polish_blocks, kernels.polish, TK_FIB_THREADS, 0));
    CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&axial_blocks, kernels.axial, TK_FIB_THREADS, 0));
    CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&shoulder_blocks, kernels.shoulder, TK_FIB_THREADS, 0));
    CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&select_blocks, fibers_select_kernel, TK_FIB_THREADS, 0));
    if (blocks_per_sm < 1) {
        status = tk_set_error(TK_ERR_UNSUPPORTED, "lmax %d needs %zu bytes of shared memory per block, more than the device has",
                              plan->lmax, smem);
        goto cleanup;
    }

    /* The plan on the device: the monomial map, the grid, its neighbours. */
    P = (double *)malloc(sizeof(double) * (size_t)k * k);
    h_grid = (float *)malloc(sizeof(float) * 3 * (size_t)G);
    if (!P || !h_grid) {
        status = tk_set_error(TK_ERR_MEMORY, "out of host memory for the CUDA fiber plan");
        goto cleanup;
    }
    if ((status = tk_fibers_monomial_map(plan, P)) != TK_OK) goto cleanup;
    for (int d = 0; d < G; ++d)
        for (int i = 0; i < 3; ++i) h_grid[(size_t)i * G + d] = (float)plan->dirs[(size_t)d * 3 + i];
    {
        tk_cuda_buffer plan_bufs[] = {{(void **)&d_pt, sizeof(double) * (size_t)k * k},
                                      {(void **)&d_grid, sizeof(float) * 3 * (size_t)G},
                                      {(void **)&d_nbr_start, sizeof(int) * ((size_t)G + 1)},
                                      {(void **)&d_nbr, sizeof(int) * (size_t)plan->nbr_start[G] + sizeof(int)},
                                      {(void **)&d_nbr_near, sizeof(int) * (size_t)G},
                                      {(void **)&d_fit_nbr, sizeof(int) * fit_entries},
                                      {(void **)&d_fit_w, sizeof(float) * 5 * fit_entries},
                                      {(void **)&d_bad, sizeof(unsigned long long)}};
        const int count = (int)(sizeof plan_bufs / sizeof plan_bufs[0]);
        cudaError_t err = tk_cuda_malloc_all(plan_bufs, count);
        if (err == cudaErrorMemoryAllocation) {
            size_t bytes = 0;
            for (int b = 0; b < count; ++b) bytes += plan_bufs[b].bytes;
            char what[96];
            snprintf(what, sizeof what, "the peak finder's plan for lmax %d", plan->lmax);
            status = tk_cuda_out_of_memory("Fibers on CUDA", what, bytes);
            goto cleanup;
        }
        if (err != cudaSuccess) {
            status = tk_set_error(TK_ERR_CUDA, "CUDA fiber backend: cudaMalloc failed: %s", cudaGetErrorString(err));
            goto cleanup;
        }
    }
    CUDA_TRY(cudaMemcpy(d_pt, P, sizeof(double) * (size_t)k * k, cudaMemcpyHostToDevice));
    CUDA_TRY(cudaMemcpy(d_grid, h_grid, sizeof(float) * 3 * (size_t)G, cudaMemcpyHostToDevice));
    CUDA_TRY(cudaMemcpy(d_nbr_start, plan->nbr_start, sizeof(int) * ((size_t)G + 1), cudaMemcpyHostToDevice));
    CUDA_TRY(cudaMemcpy(d_nbr, plan->nbr, sizeof(int) * (size_t)plan->nbr_start[G], cudaMemcpyHostToDevice));
    CUDA_TRY(cudaMemcpy(d_nbr_near, plan->nbr_near, sizeof(int) * (size_t)G, cudaMemcpyHostToDevice));
    CUDA_TRY(cudaMemcpy(d_fit_nbr, plan->fit_nbr, sizeof(int) * fit_entries, cudaMemcpyHostToDevice));
    CUDA_TRY(cudaMemcpy(d_fit_w, plan->fit_w, sizeof(float) * 5 * fit_entries, cudaMemcpyHostToDevice));
    CUDA_TRY(cudaMemset(d_bad, 0, sizeof(unsigned long long)));

    /* Two chunk buffers (one per stream), each at most 2^18 voxels and together within the
     * free memory less headroom; buffers that still do not fit (another thread or process
     * took memory meanwhile) are retried with half the chunk, down to one voxel. */
    /* per voxel: SH in, peaks out, coefficients, the axial answer, list stretch, and room for
     * CAP candidates */
    per_voxel = sizeof(float) * ((size_t)k + 4 * (size_t)np) + (mask ? 1 : 0) + sizeof(double) * ((size_t)k + 2) +
                sizeof(int) + 4 * sizeof(double) + 2 * sizeof(int) +
                (size_t)TK_FIB_CAP2 * (3 * sizeof(int) + 3 * sizeof(float) + 4 * sizeof(double));
    if (num_voxels == 0) goto cleanup;
    if ((status = tk_cuda_memory_get(&free_bytes, &total_bytes)) != TK_OK) goto cleanup;
    chunk = tk_cuda_budget(free_bytes) / 2 / per_voxel;
    if (chunk > ((size_t)1 << 18)) chunk = (size_t)1 << 18;
    if (chunk > num_voxels) chunk = num_voxels;
    if (chunk == 0) chunk = 1; /* the allocation below decides, and words the error */
    for (;;) {
        tk_cuda_buffer bufs[22];
        for (int s = 0; s < 2; ++s) {
            tk_cuda_buffer *b = bufs + 11 * s;
            b[0] = {(void **)&d_sh[s], sizeof(float) * (size_t)k * chunk};
            b[1] = {(void **)&d_dirs[s], sizeof(float) * 3 * (size_t)np * chunk};
            b[2] = {(void **)&d_amps[s], sizeof(float) * (size_t)np * chunk};
            b[3] = {(void **)&d_mask[s], mask ? chunk : 0};
            /* coefficients, then first/count/num_cands, then the candidate list and results */
            b[4] = {(void **)&d_coef[s], sizeof(double) * ((size_t)k + 2) * chunk};
            b[5] = {(void **)&d_voxel_list[s], sizeof(int) * (2 * chunk + 4)};
            b[6] = {(void **)&d_cand_list[s], sizeof(int) * 3 * TK_FIB_CAP2 * chunk};
            b[7] = {(void **)&d_res[s], sizeof(double) * 4 * TK_FIB_CAP2 * chunk};
            b[8] = {(void **)&d_cand_start[s], sizeof(float) * 3 * TK_FIB_CAP2 * chunk};
            b[9] = {(void **)&d_axial_state[s], sizeof(int) * chunk};
            b[10] = {(void **)&d_axial_res[s], sizeof(double) * 4 * chunk};
        }
        cudaError_t err = tk_cuda_malloc_all(bufs, 22);
        if (err == cudaSuccess) break;
        if (err != cudaErrorMemoryAllocation) {
            status = tk_set_error(TK_ERR_CUDA, "CUDA fiber backend: cudaMalloc failed: %s", cudaGetErrorString(err));
            goto cleanup;
        }
        if (chunk == 1) {
            status = tk_cuda_out_of_memory("Fibers on CUDA", "the buffers of one voxel on each of two streams",
                                           2 * (per_voxel + sizeof(int)));
            goto cleanup;
        }
        chunk = (chunk + 1) / 2;
    }
    for (int s = 0; s < 2; ++s) {
        CUDA_TRY(cudaStreamCreateWithFlags(&stream[s], cudaStreamNonBlocking));
        CUDA_TRY(cudaEventCreate(&ev_start[s]));
        CUDA_TRY(cudaEventCreate(&ev_stop[s]));
        CUDA_TRY(cudaEventCreate(&ev_grid[s]));
        CUDA_TRY(cudaEventCreate(&ev_polish[s]));
    }

    a.bad = d_bad;
    a.pt = d_pt;
    a.gx = d_grid, a.gy = d_grid + G, a.gz = d_grid + 2 * (size_t)G;
    a.nbr_start = d_nbr_start, a.nbr = d_nbr, a.nbr_near = d_nbr_near;
    a.fit_nbr = d_fit_nbr, a.fit_w = d_fit_w;
    a.spacing = sqrt(2.0 * 3.14159265358979323846 / G);
    a.cos_near = cos(TK_SHOULDER_GAP * a.spacing);
    a.grid = G, a.grid_padded = plan->grid_padded, a.k = k, a.num_peaks = np;
    memcpy(a.axial_q, plan->axial_q, sizeof a.axial_q);
    a.basis = plan->basis, a.legacy = plan->legacy, a.lmax = plan->lmax;
    a.threshold = o->threshold, a.relative_threshold = o->relative_threshold;
    a.min_separation_deg = o->min_separation_deg;
    a.cos_sep = cos(o->min_separation_deg * 3.14159265358979323846 / 180.0);

    {
        /* Issue order H2D(i), kernel(i), then D2H(i-1): copies to pageable memory return
         * only when done, so the next chunk's kernel is queued before the host waits. */
        const size_t chunks = (num_voxels + chunk - 1) / chunk;
        const int grid_blocks_cap = sm_count * blocks_per_sm * 8;
        for (size_t i = 0; i <= chunks; ++i) {
            if (i < chunks) {
                const int s = (int)(i & 1);
                const size_t first = i * chunk, todo = num_voxels - first < chunk ? num_voxels - first : chunk;
                CUDA_TRY(cudaMemcpyAsync(d_sh[s], sh + first * k, sizeof(float) * k * todo, cudaMemcpyHostToDevice,
                                         stream[s]));
                if (mask) CUDA_TRY(cudaMemcpyAsync(d_mask[s], mask + first, todo, cudaMemcpyHostToDevice, stream[s]));
                FibArgs args = a;
                args.sh = d_sh[s], args.mask = mask ? d_mask[s] : NULL, args.dirs = d_dirs[s], args.amps = d_amps[s];
                args.coef = d_coef[s];
                args.first = d_voxel_list[s], args.count = d_voxel_list[s] + chunk, args.num_cands = d_voxel_list[s] + 2 * chunk;
                args.cand_voxel = d_cand_list[s], args.cand_dir = d_cand_list[s] + (size_t)TK_FIB_CAP2 * chunk;
                args.cand_start = d_cand_start[s];
                args.order = d_cand_list[s] + (size_t)2 * TK_FIB_CAP2 * chunk, args.order_cap = (int)(TK_FIB_CAP2 * chunk);
                args.num_kind1 = args.num_cands + 1, args.num_kind2 = args.num_cands + 2;
                args.num_climbs = args.num_cands + 3;
                args.res_dir = d_res[s], args.res_amp = d_res[s] + (size_t)3 * TK_FIB_CAP2 * chunk;
                args.axial_state = d_axial_state[s], args.axial_res = d_axial_res[s];
                args.num_voxels = todo;
                size_t want = (todo + TK_FIB_WARPS - 1) / TK_FIB_WARPS;
                int blocks = want < (size_t)grid_blocks_cap ? (int)want : grid_blocks_cap;
                CUDA_TRY(cudaEventRecord(ev_start[s], stream[s]));
                CUDA_TRY(cudaMemsetAsync(args.num_cands, 0, 4 * sizeof(int), stream[s]));
                {
                    const size_t axial_want = (todo + TK_FIB_THREADS - 1) / TK_FIB_THREADS;
                    const int axial_cap = sm_count * (axial_blocks > 0 ? axial_blocks : 1);
                    kernels.axial<<<axial_want < (size_t)axial_cap ? (int)axial_want : axial_cap, TK_FIB_THREADS, 0,
                                    stream[s]>>>(args);
                    CUDA_TRY(cudaGetLastError());
                }
                kernels.grid<<<blocks, TK_FIB_THREADS, smem, stream[s]>>>(args);
                CUDA_TRY(cudaGetLastError());
                CUDA_TRY(cudaEventRecord(ev_grid[s], stream[s]));
                /* the grid maxima's climbs, then the shoulder candidates (which read them) */
                kernels.polish<<<sm_count * polish_blocks, TK_FIB_THREADS, 0, stream[s]>>>(args);
                CUDA_TRY(cudaGetLastError());
                kernels.shoulder<<<sm_count * shoulder_blocks, TK_FIB_THREADS, 0, stream[s]>>>(args);
                CUDA_TRY(cudaGetLastError());
                kernels.climb<<<sm_count * polish_blocks, TK_FIB_THREADS, 0, stream[s]>>>(args);
                CUDA_TRY(cudaGetLastError());
                CUDA_TRY(cudaEventRecord(ev_polish[s], stream[s]));
                want = (todo + TK_FIB_THREADS - 1) / TK_FIB_THREADS;
                blocks = want < (size_t)(sm_count * select_blocks) ? (int)want : sm_count * select_blocks;
                fibers_select_kernel<<<blocks, TK_FIB_THREADS, 0, stream[s]>>>(args);
                CUDA_TRY(cudaGetLastError());
                CUDA_TRY(cudaEventRecord(ev_stop[s], stream[s]));
            }
            if (i > 0) {
                const size_t j = i - 1;
                const int s = (int)(j & 1);
                const size_t first = j * chunk, todo = num_voxels - first < chunk ? num_voxels - first : chunk;
                if (directions)
                    CUDA_TRY(cudaMemcpyAsync(directions + first * np * 3, d_dirs[s], sizeof(float) * 3 * np * todo,
                                             cudaMemcpyDeviceToHost, stream[s]));
                if (amplitudes)
                    CUDA_TRY(cudaMemcpyAsync(amplitudes + first * np, d_amps[s], sizeof(float) * np * todo,
                                             cudaMemcpyDeviceToHost, stream[s]));
                CUDA_TRY(cudaStreamSynchronize(stream[s]));
                float ms = 0;
                CUDA_TRY(cudaEventElapsedTime(&ms, ev_start[s], ev_stop[s]));
                kernel_ms += ms;
                if (timeline) {
                    float grid_ms = 0, polish_ms = 0;
                    int cands = 0;
                    CUDA_TRY(cudaEventElapsedTime(&grid_ms, ev_start[s], ev_grid[s]));
                    CUDA_TRY(cudaEventElapsedTime(&polish_ms, ev_grid[s], ev_polish[s]));
                    CUDA_TRY(cudaMemcpy(&cands, d_voxel_list[s] + 2 * chunk, sizeof cands, cudaMemcpyDeviceToHost));
                    fprintf(stderr, "fibers chunk %zu: %zu voxels, grid %.3f ms, polish %.3f ms (%d candidates, %.1f a voxel), "
                            "select %.3f ms\n", j, todo, grid_ms, polish_ms, cands, (double)cands / todo,
                            ms - grid_ms - polish_ms);
                }
            }
        }
    }
    CUDA_TRY(cudaMemcpy(&bad, d_bad, sizeof bad, cudaMemcpyDeviceToHost));
    if (bad_voxels) *bad_voxels = (size_t)bad;

cleanup:
    for (int s = 0; s < 2; ++s) {
        if (stream[s]) cudaStreamSynchronize(stream[s]);
        tk_cuda_free(d_sh[s]);
        tk_cuda_free(d_dirs[s]);
        tk_cuda_free(d_amps[s]);
        tk_cuda_free(d_mask[s]);
        tk_cuda_free(d_coef[s]);
        tk_cuda_free(d_voxel_list[s]);
        tk_cuda_free(d_cand_list[s]);
        tk_cuda_free(d_cand_start[s]);
        tk_cuda_free(d_axial_state[s]);
        tk_cuda_free(d_axial_res[s]);
        tk_cuda_free(d_res[s]);
        if (stream[s]) cudaStreamDestroy(stream[s]);
        if (ev_start[s]) cudaEventDestroy(ev_start[s]);
        if (ev_stop[s]) cudaEventDestroy(ev_stop[s]);
        if (ev_grid[s]) cudaEventDestroy(ev_grid[s]);
        if (ev_polish[s]) cudaEventDestroy(ev_polish[s]);
    }
    tk_cuda_free(d_pt);
    tk_cuda_free(d_grid);
    tk_cuda_free(d_nbr_start);
    tk_cuda_free(d_nbr_near);
    tk_cuda_free(d_nbr);
    tk_cuda_free(d_fit_nbr);
    tk_cuda_free(d_fit_w);
    tk_cuda_free(d_bad);
    free(P);
    free(h_grid);
    if (timing) {
        timing->total_ms = tk_now_ms() - start_ms;
        timing->kernel_ms = kernel_ms;
    }
    return status;
}
