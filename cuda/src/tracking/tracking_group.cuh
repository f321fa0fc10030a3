/* The CUDA tracker's SD_STREAM at lmax <= 8 with several seeds a warp: G lanes a seed (G = 8
 * or 16, the plan's sd_lanes), 32 / G streamlines grown at once by one warp.
 *
 * Why: with a warp a seed (tracking_warp.cuh) the kernel was latency-bound (0.21-0.32
 * instructions issued a cycle, 16 warps an SM at 128 registers): every step waited on chains
 * of dependent shuffles (45 for the tensor, a five-level butterfly of six sums for each of
 * about eight Newton evaluations), and the climb's scalar logic, the same on all 32 lanes,
 * did one seed's work per instruction.  Here lane l of a group holds the series'
 * coefficients l, l + G, ... (ceil(45 / G) of them), the same entries of the tensor, and rows
 * l, l + G, ... of the monomial form (ceil(28 / G)): each Newton evaluation sums its rows in
 * the lane first and then over a log2(G)-level butterfly, the tensor's product reads the
 * anisotropic series from the group's shared slots (a broadcast load, no shuffle chain), and
 * each instruction of the scalar logic serves 32 / G seeds.  Groups of a warp whose
 * streamlines differ diverge and reconverge; their shuffles name only their own lanes.
 *
 * Same results as the CPU, bit for bit: each coefficient and tensor entry sums in the CPU's
 * order (corner by corner, column by column), and the CPU sums the rows as G lanes do
 * (tracking_tensor.h tk_tracking_rows_axm2_d with the plan's sd_lanes).  The streamline's
 * rules are tracking_streamline_body.h's, the CPU's text; tk_test_tracking_cuda compares the
 * two paths' streamlines. */
#ifndef TK_TRACKING_GROUP_CUH
#define TK_TRACKING_GROUP_CUH

#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "fibers/fibers_internal.h"
#include "tracking_streamline.h"
#include "tracking_warp.cuh" /* TK_WARP_CALL, tk_warp_power */

/* A group's shared slots: the anisotropic series, then the tensor (45 at lmax 8).  49 apart:
 * the groups of a warp read the same slot at once (their column products run in step), and
 * an odd count of doubles puts those reads in different banks (48 would make them a 4-way
 * conflict at 8 lanes a seed). */
#define TK_GROUP_VEC 49

/* Per lane: the series' coefficients and the tensor's entries it holds, and its rows. */
template <int G> struct tk_group_dims {
    static constexpr int coeffs = (TK_TRACK_POLY_MAX + G - 1) / G;
    static constexpr int rows = (TK_TRACK_ROWS_MAX + G - 1) / G;
};

/* Which lanes a group is: its lane (0..G-1), the warp's mask of its lanes, its shared slots. */
struct tk_group {
    int lane;
    unsigned int mask;
    double *vec;
};

/* A group's streamline scratch (tk_warp_work's, the series G lanes a seed). */
template <int G> struct tk_group_work {
    double *pts;
    size_t cap;
    uint8_t *visited;
    unsigned int ends[TK_END_COUNT];
    uint32_t step;
    double c[tk_group_dims<G>::coeffs]; /* the lane's coefficients of the series at the seed */
};

template <int G> __device__ static inline int tk_group_push_point(tk_group_work<G> *w, size_t *n, const double *p)
{
    if (*n == w->cap) return 0;
    for (int a = 0; a < 3; ++a) w->pts[3 * *n + a] = p[a];
    ++*n;
    return 1;
}

/* tk_tracking_interpolate (tracking_field.h): lane l computes coefficients l, l + G, ... */
template <int G>
__device__ static TK_WARP_CALL int tk_group_interpolate(const tk_tracking_field *f, const double *p, const tk_group &g,
                                                        double *c)
{
    constexpr int NC = tk_group_dims<G>::coeffs;
    const int k = f->plan->k;
#pragma unroll
    for (int i = 0; i < NC; ++i) c[i] = 0.0;
    size_t nearest, offset[8];
    double weight[8];
    if (!tk_tracking_corners(f->plan, p, &nearest, offset, weight)) return 0;
    const float *cn = f->sh + nearest * (size_t)k;
    int mine = 0;
#pragma unroll
    for (int i = 0; i < NC; ++i) {
        const int j = g.lane + G * i;
        mine |= j < k && cn[j] != 0.f;
    }
    if (!__any_sync(g.mask, mine)) return 0;
    double o[NC];
#pragma unroll
    for (int i = 0; i < NC; ++i) o[i] = 0.0;
    for (int corner = 0; corner < 8; ++corner) {
        const float *s = f->sh + offset[corner];
#pragma unroll
        for (int i = 0; i < NC; ++i) {
            const int j = g.lane + G * i;
            if (j < k) o[i] += weight[corner] * (double)__ldg(s + j);
        }
    }
#pragma unroll
    for (int i = 0; i < NC; ++i) c[i] = o[i];
    return !isnan(__shfl_sync(g.mask, o[0], 0, G));
}

/* The climb's evaluator (fibers_newton.h's context): this lane's rows of the monomial form and
 * their monomials' exponents, with the last point's derivatives kept (tracking_peak.h). */
template <int G> struct tk_group_tensor {
    int m, d;
    int nrows;                        /* rows of the form: (d + 1)(d + 2) / 2 */
    unsigned char a[tk_group_dims<G>::rows], b[tk_group_dims<G>::rows]; /* x0, x1 powers */
    double row[tk_group_dims<G>::rows][6];
    double last_x[3], last_y[3], last_h[9];
    int has_last;
    int lane;
    unsigned int mask;
};

/* Lane's rows l, l + G, ...: their x0 and x1 powers (rows ordered as
 * tk_tracking_monomial_row orders them). */
template <int G> __device__ static inline void tk_group_tensor_init(tk_group_tensor<G> *t, int m, const tk_group &g)
{
    constexpr int NR = tk_group_dims<G>::rows;
    t->m = m, t->d = m - 2, t->nrows = (t->d + 1) * (t->d + 2) / 2, t->has_last = 0;
    t->lane = g.lane, t->mask = g.mask;
#pragma unroll
    for (int q = 0; q < NR; ++q) t->a[q] = 0, t->b[q] = 0;
    int r = 0;
    for (int a = t->d; a >= 0; --a)
        for (int b = t->d - a; b >= 0; --b, ++r)
#pragma unroll
            for (int q = 0; q < NR; ++q)
                if (r == g.lane + G * q) t->a[q] = (unsigned char)a, t->b[q] = (unsigned char)b;
}

template <int G>
__device__ static TK_WARP_CALL void tk_group_derivs(const tk_group_tensor<G> *tc, const double *x, double *y, double *h)
{
    constexpr int NR = tk_group_dims<G>::rows;
    tk_group_tensor<G> *t = (tk_group_tensor<G> *)tc; /* the cache is no part of the tensor's value */
    if (!(t->has_last && x[0] == t->last_x[0] && x[1] == t->last_x[1] && x[2] == t->last_x[2])) {
        double s[6];
#pragma unroll
        for (int e = 0; e < 6; ++e) s[e] = 0.0;
        /* the lane's rows one after another from the first, as tk_tracking_rows_axm2_d */
#pragma unroll
        for (int q = 0; q < NR; ++q) {
            if (t->lane + G * q < t->nrows) {
                const int a = t->a[q], b = t->b[q];
                const double mono = tk_warp_power(x[0], a) * tk_warp_power(x[1], b) * tk_warp_power(x[2], t->d - a - b);
#pragma unroll
                for (int e = 0; e < 6; ++e) s[e] = q == 0 ? t->row[q][e] * mono : s[e] + t->row[q][e] * mono;
            }
        }
#pragma unroll
        for (int off = G / 2; off >= 1; off /= 2)
#pragma unroll
            for (int e = 0; e < 6; ++e) s[e] = s[e] + __shfl_xor_sync(t->mask, s[e], off, G);
        double *lh = t->last_h;
        lh[0] = s[0], lh[1] = lh[3] = s[1], lh[2] = lh[6] = s[2];
        lh[4] = s[3], lh[5] = lh[7] = s[4], lh[8] = s[5];
        for (int i = 0; i < 3; ++i) t->last_y[i] = lh[i * 3] * x[0] + lh[i * 3 + 1] * x[1] + lh[i * 3 + 2] * x[2];
        t->last_x[0] = x[0], t->last_x[1] = x[1], t->last_x[2] = x[2];
        t->has_last = 1;
    }
    for (int i = 0; i < 3; ++i) y[i] = t->last_y[i];
    for (int i = 0; i < 9; ++i) h[i] = t->last_h[i];
}

#define TK_NEWTON_FN template <int G> __device__ static inline
#define TK_NEWTON_UTIL __device__ static inline
#define TK_NEWTON_CTX tk_group_tensor<G>
#define TK_NEWTON_SFX(name) name##_group
#define TK_NEWTON_ORDER(t) ((t)->m)
#define TK_NEWTON_DERIVS(t, x, y, h) tk_group_derivs<G>(t, x, y, h)
#include "fibers/fibers_newton.h"

/* tk_tracking_peak (tracking_peak.h) on the group's series c (tk_group_interpolate's); t:
 * the lane's evaluator (tk_group_tensor_init done).  Same value and direction on every lane
 * of the group. */
template <int G>
__device__ static TK_WARP_CALL double tk_group_peak(const tk_tracking_plan *plan, const double *map, const double *c,
                                                    double *dir, tk_group_tensor<G> *t, const tk_group &g)
{
    constexpr int NC = tk_group_dims<G>::coeffs, NR = tk_group_dims<G>::rows;
    const int k = plan->k;
    /* tk_fibers_anisotropic_part: the largest |coefficient| past the first (a NaN never wins
     * the comparison, on the CPU neither), then the coefficients over it */
    double scale = 0.0;
#pragma unroll
    for (int i = 0; i < NC; ++i) {
        const int j = g.lane + G * i;
        if (j >= 1 && j < k) scale = fabs(c[i]) > scale ? fabs(c[i]) : scale;
    }
#pragma unroll
    for (int off = G / 2; off >= 1; off /= 2) {
        const double other = __shfl_xor_sync(g.mask, scale, off, G);
        scale = other > scale ? other : scale;
    }
    if (scale < TK_FLT_MIN) scale = 0;
    const double iso = __shfl_sync(g.mask, c[0], 0, G) * TK_SH_Y00;
    if (!(scale > 0)) return 0;
    /* the anisotropic series into the group's slots, for every lane's column products */
    __syncwarp(g.mask); /* the last peak's readers of the slots are done */
#pragma unroll
    for (int i = 0; i < NC; ++i) {
        const int j = g.lane + G * i;
        if (j < k) g.vec[j] = j >= 1 ? c[i] / scale : 0.0;
    }
    __syncwarp(g.mask);
    /* tensor entries l, l + G, ... = map * aniso, column by column from 1 as on the CPU */
    double te[NC];
#pragma unroll
    for (int i = 0; i < NC; ++i) te[i] = 0.0;
    for (int col = 1; col < k; ++col) {
        const double a = g.vec[col];
        const double *mc = map + (size_t)col * k;
#pragma unroll
        for (int i = 0; i < NC; ++i) {
            const int j = g.lane + G * i;
            if (j < k) te[i] += __ldg(mc + j) * a;
        }
    }
    __syncwarp(g.mask);
#pragma unroll
    for (int i = 0; i < NC; ++i) {
        const int j = g.lane + G * i;
        if (j < k) g.vec[j] = te[i];
    }
    __syncwarp(g.mask);
    double n = sqrt(dir[0] * dir[0] + dir[1] * dir[1] + dir[2] * dir[2]);
    if (!(n > 0) || !isfinite(n)) return 0;
    double x[3] = {dir[0] / n, dir[1] / n, dir[2] / n}, value = 0;
    /* the lane's rows: entry e = tensor[src] * weight (tk_tracking_rows_build) */
#pragma unroll
    for (int q = 0; q < NR; ++q) {
        const int r = g.lane + G * q;
        const int live = r < t->nrows, rr = live ? r : 0;
#pragma unroll
        for (int e = 0; e < 6; ++e) {
            const int src = plan->rows_src[rr][e];
            t->row[q][e] = live && src >= 0 ? g.vec[src] * plan->rows_weight[rr][e] : 0.0;
        }
    }
    t->has_last = 0;
    int strict = 0;
    for (int climb = 0; climb < TK_TRACK_PEAK_CLIMBS; ++climb) {
        int iterations = 0;
        strict = nt_polish_group(t, x, &value, &iterations, 0.0, 0.0, TK_TRACK_PEAK_MAX_STEP, NULL);
        if (strict == 1 || iterations < TK_NEWTON_MAX_ITERATIONS) break;
    }
    return tk_tracking_peak_found(strict, iso, scale, value, x, dir);
}

/* tk_tracking_sd_find_peak's test on the group's peak. */
template <int G>
__device__ static inline int tk_group_sd_find_peak(const tk_tracking_plan *plan, const double *map, const double *c,
                                                   double *dir, tk_group_tensor<G> *t, const tk_group &g)
{
    const double amp = tk_group_peak<G>(plan, map, c, dir, t, g);
    return isfinite(amp) && amp >= plan->opts.cutoff && amp != 0.0;
}

/* tk_tracking_iterate with SD_STREAM's next() (tracking_sdstream.h) on the group. */
template <int G>
__device__ static inline int tk_group_sd_stream_next(const tk_tracking_field *f, const double *map, double *pos,
                                                     double *dir, tk_group_tensor<G> *t, const tk_group &g)
{
    const tk_tracking_plan *plan = f->plan;
    double c[tk_group_dims<G>::coeffs];
    if (!tk_group_interpolate<G>(f, pos, g, c)) return TK_END_EXIT_IMAGE;
    const double prev[3] = {dir[0], dir[1], dir[2]};
    if (!tk_group_sd_find_peak<G>(plan, map, c, dir, t, g)) return TK_END_MODEL;
    if (prev[0] * dir[0] + prev[1] * dir[1] + prev[2] * dir[2] < plan->cos_max_angle) return TK_END_CURVATURE;
    for (int a = 0; a < 3; ++a) pos[a] += dir[a] * plan->opts.step_mm;
    return -1;
}

/* tk_tracking_reverse_points with the pairs shared among the group's lanes. */
template <int G> __device__ static inline void tk_group_reverse_points(double *p, size_t n, const tk_group &g)
{
    __syncwarp(g.mask);
    for (size_t i = (size_t)g.lane; i < n / 2; i += G) {
        const size_t j = n - 1 - i;
        for (int a = 0; a < 3; ++a) {
            const double s = p[3 * i + a];
            p[3 * i + a] = p[3 * j + a], p[3 * j + a] = s;
        }
    }
    __syncwarp(g.mask);
}

/* SD_STREAM's init() on the series at the seed (w->c): sd_stream_init's one draw. */
template <int G>
__device__ static inline int tk_group_init(const tk_tracking_field *f, const tk_group_work<G> *w, const double *map,
                                           double *dir, int given, tk_philox *rng, tk_group_tensor<G> *t,
                                           const tk_group &g)
{
    if (!given) tk_tracking_random_direction(rng, dir);
    return tk_group_sd_find_peak<G>(f->plan, map, w->c, dir, t, g);
}

/* The streamline (tracking_streamline_body.h) on the group: its lanes run it alike, sharing
 * out the series, the tensor, the rows and the reversal. */
#define TK_SL_FN template <int G> __device__ static inline
#define TK_SL_SFX(name) tk_group_##name
#define TK_SL_WORK tk_group_work<G>
#define TK_SL_CTX_PARAMS , tk_group_tensor<G> *t, const double *map, const tk_group &g
#define TK_SL_CTX_ARGS , t, map, g
#define TK_SL_SERIES(f, w, p) tk_group_interpolate<G>(f, p, g, (w)->c)
#define TK_SL_INIT(f, w, dir, given, rng) tk_group_init<G>(f, w, map, dir, given, rng, t, g)
#define TK_SL_NEXT(f, w, pos, dir, rng) tk_group_sd_stream_next<G>(f, map, pos, dir, t, g)
#define TK_SL_PUSH(w, n, p) tk_group_push_point<G>(w, n, p)
#define TK_SL_REVERSE(w, n) tk_group_reverse_points<G>((w)->pts, n, g)
#include "tracking_streamline_body.h"

#endif
