/* The CUDA tracker at lmax <= 8 (TK_TRACK_ROWS_MAX_ORDER, TK_TRACK_POLY_MAX_ORDER): a warp a
 * streamline, SD_STREAM and iFOD1.
 *
 * Why: with one thread a seed (tracking_kernels.cuh) a thread's scratch (the series, the
 * tensor, its 28 x 6 monomial rows) lives in local memory, its 45 coefficients are read one
 * thread at a time, and a warp waits for its longest streamline.  Here the 32 lanes of a
 * warp grow one streamline together: lane j holds coefficients j and j + 32 of the
 * interpolated series (coalesced loads), tensor entries j and j + 32, and row j of the
 * monomial form; the Newton climb's A x^(m-2) is the lanes' products summed by an xor
 * butterfly, which leaves every lane the same sum.  Everything else (the climb's logic, the
 * masks, the random stream, the points) every lane runs alike on equal values, so the
 * control flow never splits; a warp takes its next seed from a counter when its streamline
 * ends.  iFOD1's lanes each evaluate the series' polynomial (its coefficients in the block's
 * shared memory, each lane's coordinate powers there too, where a thread's would sit in local
 * memory) at a calibration direction or a trial of their own: 32 trials at once, each from
 * its own random stream (tk_philox_trial), the first accepted taken, as the CPU takes the
 * first accepted drawing them in turn.
 *
 * Same results as the CPU, bit for bit: each lane's sums run in the CPU's order (the series
 * corner by corner, each tensor entry column by column), and the CPU sums the rows in the
 * butterfly's order (tracking_tensor.h tk_tracking_rows_axm2 at 32 lanes).  The streamline's rules are
 * tracking_streamline_body.h's, the CPU's text, with the warp's interpolation, peak and
 * iFOD1 step in place of the thread's; tk_test_tracking_cuda compares the two paths'
 * streamlines. */
#ifndef TK_TRACKING_WARP_CUH
#define TK_TRACKING_WARP_CUH

#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "fibers/fibers_internal.h"
#include "tracking_streamline.h"

#define TK_WARP_FULL 0xffffffffu

/* The step's large pieces are called, not inlined at each call site: inlined everywhere, the
 * kernel's code outgrew the instruction cache and its warps waited on instruction fetches
 * more than on anything else (Nsight Compute; Documentation/benchmarks.md).  A compile-time
 * knob for the tuning runs. */
#ifndef TK_WARP_CALL
#define TK_WARP_CALL __noinline__
#endif

/* A warp's streamline scratch: its slot of the chunk's points and include flags, and how its
 * halves ended (tk_tracking_work less the thread's peak scratch, which the lanes hold in
 * registers instead). */
typedef struct {
    double *pts;
    size_t cap;
    uint8_t *visited;
    unsigned int ends[TK_END_COUNT];
    uint32_t step; /* iFOD1's steps so far (tk_tracking_work's) */
    double c0, c1; /* the lane's two coefficients of the series at the seed */
} tk_warp_work;

/* tk_tracking_push_point into the slot; every lane stores the same point at the same place
 * (one store for the warp). */
__device__ static inline int tk_warp_push_point(tk_warp_work *w, size_t *n, const double *p)
{
    if (*n == w->cap) return 0;
    for (int a = 0; a < 3; ++a) w->pts[3 * *n + a] = p[a];
    ++*n;
    return 1;
}

/* ---- the interpolated series, two coefficients a lane ------------------------------ */

/* tk_tracking_interpolate (tracking_field.h) with lane j computing coefficients j (*c0) and
 * j + 32 (*c1); every lane returns the same answer. */
__device__ static TK_WARP_CALL int tk_warp_interpolate(const tk_tracking_field *f, const double *p, int lane, double *c0,
                                                 double *c1)
{
    const int k = f->plan->k, j0 = lane, j1 = lane + TK_TRACK_LANES;
    *c0 = 0.0, *c1 = 0.0;
    size_t nearest, offset[8];
    double weight[8];
    if (!tk_tracking_corners(f->plan, p, &nearest, offset, weight)) return 0;
    const float *c = f->sh + nearest * (size_t)k;
    const int mine = (j0 < k && c[j0] != 0.f) || (j1 < k && c[j1] != 0.f);
    if (!__any_sync(TK_WARP_FULL, mine)) return 0;
    double o0 = 0.0, o1 = 0.0;
    for (int corner = 0; corner < 8; ++corner) {
        const float *s = f->sh + offset[corner];
        if (j0 < k) o0 += weight[corner] * (double)__ldg(s + j0);
        if (j1 < k) o1 += weight[corner] * (double)__ldg(s + j1);
    }
    *c0 = o0, *c1 = o1;
    return !isnan(__shfl_sync(TK_WARP_FULL, o0, 0));
}

/* Lane j's entries j (*t0) and j + 32 (*t1) of map * v, map k x k column-major, v's entry c
 * held by lane c % 32 (v0 below 32, else v1), over the columns from `first`: each entry summed
 * column by column from 0.0, as the CPU sums it (tracking_peak.h, tracking_poly.h). */
__device__ static inline void tk_warp_map_product(const double *map, int k, int first, double v0, double v1, int lane,
                                                  double *t0, double *t1)
{
    const int j0 = lane, j1 = lane + TK_TRACK_LANES;
    double s0 = 0.0, s1 = 0.0;
    for (int c = first; c < k; ++c) {
        const double a = __shfl_sync(TK_WARP_FULL, c < TK_TRACK_LANES ? v0 : v1, c & (TK_TRACK_LANES - 1));
        const double *col = map + (size_t)c * k;
        if (j0 < k) s0 += __ldg(col + j0) * a;
        if (j1 < k) s1 += __ldg(col + j1) * a;
    }
    *t0 = s0, *t1 = s1;
}

/* ---- the tensor's monomial form, a row a lane --------------------------------------- */

/* The climb's evaluator (fibers_newton.h's context): this lane's row of the monomial form
 * and its monomial's exponents, with the last point's derivatives kept as tt_derivs keeps
 * them (tracking_peak.h). */
typedef struct {
    int m, d, a, b;          /* order; row degree m - 2; this lane's x0 and x1 powers */
    int live;                /* this lane holds a row (lane < rows) */
    const double *map;       /* the SH-to-tensor map (the plan's) */
    double row[6];
    double last_x[3], last_y[3], last_h[9];
    int has_last;
} tk_warp_tensor;

/* x^e by products from 1, as the CPU's power tables (tracking_tensor.h) form it. */
__device__ static inline double tk_warp_power(double x, int e)
{
    double p = 1.0;
#pragma unroll
    for (int i = 1; i <= TK_TRACK_ROWS_MAX_ORDER - 2; ++i)
        if (i <= e) p = p * x;
    return p;
}

__device__ static TK_WARP_CALL void tk_warp_derivs(const tk_warp_tensor *tc, const double *x, double *y, double *h)
{
    tk_warp_tensor *t = (tk_warp_tensor *)tc; /* the cache is no part of the tensor's value */
    if (!(t->has_last && x[0] == t->last_x[0] && x[1] == t->last_x[1] && x[2] == t->last_x[2])) {
        double s[6];
        if (t->live) {
            const double mono = tk_warp_power(x[0], t->a) * tk_warp_power(x[1], t->b) *
                                tk_warp_power(x[2], t->d - t->a - t->b);
#pragma unroll
            for (int e = 0; e < 6; ++e) s[e] = t->row[e] * mono;
        } else {
#pragma unroll
            for (int e = 0; e < 6; ++e) s[e] = 0.0;
        }
#pragma unroll
        for (int off = TK_TRACK_LANES / 2; off >= 1; off /= 2)
#pragma unroll
            for (int e = 0; e < 6; ++e) s[e] = s[e] + __shfl_xor_sync(TK_WARP_FULL, s[e], off);
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

#define TK_NEWTON_FN __device__ static inline
#define TK_NEWTON_UTIL __device__ static inline
#define TK_NEWTON_CTX tk_warp_tensor
#define TK_NEWTON_SFX(name) name##_warp
#define TK_NEWTON_ORDER(t) ((t)->m)
#define TK_NEWTON_DERIVS(t, x, y, h) tk_warp_derivs(t, x, y, h)
#include "fibers/fibers_newton.h"

/* Lane's place in the monomial form: its row's x0 and x1 powers (rows ordered as
 * tk_tracking_monomial_row orders them), or live = 0 past the last row. */
__device__ static inline void tk_warp_tensor_init(tk_warp_tensor *t, int m, int lane)
{
    t->m = m, t->d = m - 2, t->a = 0, t->b = 0, t->live = 0, t->has_last = 0;
    int r = 0;
    for (int a = t->d; a >= 0; --a)
        for (int b = t->d - a; b >= 0; --b, ++r)
            if (r == lane) t->a = a, t->b = b, t->live = 1;
}

/* ---- the peak nearest a direction ---------------------------------------------------- */

/* tk_tracking_peak (tracking_peak.h) on the lanes' series (c0, c1 as tk_warp_interpolate
 * left them); t: the lane's evaluator (tk_warp_tensor_init done).  Same value and direction
 * on every lane. */
__device__ static TK_WARP_CALL double tk_warp_peak(const tk_tracking_plan *plan, double c0, double c1, double *dir,
                                                   tk_warp_tensor *t, int lane)
{
    const int k = plan->k, j0 = lane, j1 = lane + TK_TRACK_LANES;
    /* tk_fibers_anisotropic_part: the largest |coefficient| past the first (a NaN never
     * wins the comparison, on the CPU neither), then the coefficients over it */
    double scale = 0.0;
    if (j0 >= 1 && j0 < k) scale = fabs(c0) > scale ? fabs(c0) : scale;
    if (j1 < k) scale = fabs(c1) > scale ? fabs(c1) : scale;
    for (int off = TK_TRACK_LANES / 2; off >= 1; off /= 2) {
        const double other = __shfl_xor_sync(TK_WARP_FULL, scale, off);
        scale = other > scale ? other : scale;
    }
    if (scale < TK_FLT_MIN) scale = 0;
    const double iso = __shfl_sync(TK_WARP_FULL, c0, 0) * TK_SH_Y00;
    const double a0 = j0 >= 1 && scale > 0 ? c0 / scale : 0.0, a1 = scale > 0 ? c1 / scale : 0.0;
    if (!(scale > 0)) return 0;
    /* tensor entries j0 and j1 = map * aniso, column by column from 1 as on the CPU */
    double t0, t1;
    tk_warp_map_product(t->map, k, 1, a0, a1, lane, &t0, &t1);
    double n = sqrt(dir[0] * dir[0] + dir[1] * dir[1] + dir[2] * dir[2]);
    if (!(n > 0) || !isfinite(n)) return 0;
    double x[3] = {dir[0] / n, dir[1] / n, dir[2] / n}, value = 0;
    /* this lane's row: entry e = tensor[src] * weight, tensor[src] from the lane holding it */
    const int r = t->live ? lane : 0;
#pragma unroll
    for (int e = 0; e < 6; ++e) {
        const int src = plan->rows_src[r][e], from = src < 0 ? 0 : src;
        const double e0 = __shfl_sync(TK_WARP_FULL, t0, from & (TK_TRACK_LANES - 1));
        const double e1 = __shfl_sync(TK_WARP_FULL, t1, from & (TK_TRACK_LANES - 1));
        const double entry = from < TK_TRACK_LANES ? e0 : e1;
        t->row[e] = t->live && src >= 0 ? entry * plan->rows_weight[r][e] : 0.0;
    }
    t->has_last = 0;
    int strict = 0;
    for (int climb = 0; climb < TK_TRACK_PEAK_CLIMBS; ++climb) {
        int iterations = 0;
        strict = nt_polish_warp(t, x, &value, &iterations, 0.0, 0.0, TK_TRACK_PEAK_MAX_STEP, NULL);
        if (strict == 1 || iterations < TK_NEWTON_MAX_ITERATIONS) break;
    }
    return tk_tracking_peak_found(strict, iso, scale, value, x, dir);
}

/* ---- iFOD1: the polynomial in shared memory, the trials across the lanes ------------- */

/* A warp's share of the block's shared memory: the series' monomial coefficients, and this
 * lane's coordinate powers (3 x (TK_TRACK_POLY_MAX_ORDER + 1), TK_TRACK_LANES apart). */
typedef struct {
    double *coef;
    double *pw;
    const double *map; /* the SH-to-tensor map (the plan's) */
} tk_warp_poly;

#define TK_WARP_POWERS (3 * (TK_TRACK_POLY_MAX_ORDER + 1))

/* tk_tracking_poly_coeffs on the lanes' series: lane j computes coefficients j and j + 32,
 * column by column as the CPU does, into the shared coefficients. */
__device__ static inline void tk_warp_poly_coeffs(const tk_tracking_plan *plan, double c0, double c1,
                                                  const tk_warp_poly *wp, int lane)
{
    const int k = plan->k, j0 = lane, j1 = lane + TK_TRACK_LANES;
    double t0, t1;
    tk_warp_map_product(wp->map, k, 0, c0, c1, lane, &t0, &t1);
    __syncwarp();
    if (j0 < k) wp->coef[j0] = t0 * plan->poly_mult[j0];
    if (j1 < k) wp->coef[j1] = t1 * plan->poly_mult[j1];
    __syncwarp();
}

/* tk_tracking_poly_value with the powers in this lane's shared slots. */
__device__ static TK_WARP_CALL double tk_warp_poly_value(const tk_tracking_plan *plan, const tk_warp_poly *wp,
                                                   const double *dir)
{
    const int m = plan->opts.lmax, k = plan->k;
    const double n = sqrt(dir[0] * dir[0] + dir[1] * dir[1] + dir[2] * dir[2]);
    const double x[3] = {dir[0] / n, dir[1] / n, dir[2] / n};
    double *p = wp->pw;
#define TK_WARP_P(a, e) p[((a) * (TK_TRACK_POLY_MAX_ORDER + 1) + (e)) * TK_TRACK_LANES]
    for (int a = 0; a < 3; ++a) {
        double v = 1.0;
        TK_WARP_P(a, 0) = v;
        for (int e = 1; e <= m; ++e) v = v * x[a], TK_WARP_P(a, e) = v;
    }
    double s0 = 0.0, s1 = 0.0;
    int j = 0;
    for (; j + 1 < k; j += 2) {
        const unsigned char *e0 = plan->poly_exp[j], *e1 = plan->poly_exp[j + 1];
        s0 += wp->coef[j] * (TK_WARP_P(0, e0[0]) * TK_WARP_P(1, e0[1]) * TK_WARP_P(2, e0[2]));
        s1 += wp->coef[j + 1] * (TK_WARP_P(0, e1[0]) * TK_WARP_P(1, e1[1]) * TK_WARP_P(2, e1[2]));
    }
    if (j < k) {
        const unsigned char *e0 = plan->poly_exp[j];
        s0 += wp->coef[j] * (TK_WARP_P(0, e0[0]) * TK_WARP_P(1, e0[1]) * TK_WARP_P(2, e0[2]));
    }
#undef TK_WARP_P
    return s0 + s1;
}

/* tk_tracking_ifod1_init (tracking_ifod1.h) on the warp: every lane tries the same
 * directions (the streamline's own stream). */
__device__ static TK_WARP_CALL int tk_warp_ifod1_init(const tk_tracking_plan *plan, double c0, double c1,
                                                const tk_warp_poly *wp, double *dir, int given, tk_philox *rng,
                                                int lane)
{
    const double threshold = plan->opts.cutoff;
    tk_warp_poly_coeffs(plan, c0, c1, wp, lane);
    if (given) {
        const double v = tk_warp_poly_value(plan, wp, dir);
        return isfinite(v) && v > threshold;
    }
    for (int n = 0; n < TK_IFOD1_SEED_ATTEMPTS; ++n) {
        tk_tracking_random_direction(rng, dir);
        const double v = tk_warp_poly_value(plan, wp, dir);
        if (isfinite(v) && v > threshold) return 1;
    }
    return 0;
}

/* tk_tracking_ifod1_next on the warp: the calibration directions and the trials shared out
 * among the lanes, 32 at a time. */
__device__ static TK_WARP_CALL int tk_warp_ifod1_next(const tk_tracking_field *f, tk_warp_work *w, double *pos, double *dir,
                                                const tk_philox *rng, const tk_warp_poly *wp, int lane)
{
    const tk_tracking_plan *plan = f->plan;
    const tk_tracking_options *o = &plan->opts;
    double c0, c1, d[3];
    if (!tk_warp_interpolate(f, pos, lane, &c0, &c1)) return TK_END_EXIT_IMAGE;
    const uint32_t step = w->step++;
    tk_warp_poly_coeffs(plan, c0, c1, wp, lane);
    /* the bound: the largest value over the calibration directions (any NaN: outside) */
    double bound = 0.0;
    int nan = 0;
    for (size_t i = (size_t)lane; i < plan->num_calib; i += TK_TRACK_LANES) {
        tk_tracking_rotate_from_z(dir, plan->calib_dirs + 3 * i, d);
        const double v = tk_warp_poly_value(plan, wp, d);
        if (isnan(v)) nan = 1;
        else if (v > bound) bound = v;
    }
    if (__any_sync(TK_WARP_FULL, nan)) return TK_END_EXIT_IMAGE;
    for (int off = TK_TRACK_LANES / 2; off >= 1; off /= 2) {
        const double other = __shfl_xor_sync(TK_WARP_FULL, bound, off);
        bound = other > bound ? other : bound;
    }
    if (!(bound > 0.0)) return TK_END_CALIBRATOR;
    bound = tk_tracking_fod_pow(bound, o->fod_power) * plan->calib_ratio;
    for (int first = 0; first < o->max_trials; first += TK_TRACK_LANES) {
        const int n = first + lane;
        int taken = 0;
        if (n < o->max_trials) {
            tk_philox trial;
            tk_tracking_rotation rot; /* made for each trial: tk_tracking_rotate_from_z's note */
            tk_tracking_rotation_to(dir, &rot);
            tk_tracking_ifod1_candidate(plan, rng, step, n, &rot, &trial, d);
            taken = tk_tracking_ifod1_accept(plan, &trial, tk_warp_poly_value(plan, wp, d), bound);
        }
        const unsigned int ballot = __ballot_sync(TK_WARP_FULL, taken);
        if (ballot) {
            const int src = __ffs(ballot) - 1; /* the first trial taken, as the CPU's loop */
            for (int a = 0; a < 3; ++a) d[a] = __shfl_sync(TK_WARP_FULL, d[a], src);
            tk_tracking_ifod1_move(plan, d, pos, dir);
            return -1;
        }
    }
    return TK_END_MODEL;
}

/* ---- SD_STREAM's method and one streamline ------------------------------------------ */

/* tk_tracking_sd_find_peak's test on the warp's peak. */
__device__ static inline int tk_warp_sd_find_peak(const tk_tracking_plan *plan, double c0, double c1, double *dir,
                                                  tk_warp_tensor *t, int lane)
{
    const double amp = tk_warp_peak(plan, c0, c1, dir, t, lane);
    return isfinite(amp) && amp >= plan->opts.cutoff && amp != 0.0;
}

/* tk_tracking_iterate with SD_STREAM's next() (tracking_sdstream.h) on the warp. */
__device__ static inline int tk_warp_sd_stream_next(const tk_tracking_field *f, double *pos, double *dir,
                                                    tk_warp_tensor *t, int lane)
{
    const tk_tracking_plan *plan = f->plan;
    double c0, c1;
    if (!tk_warp_interpolate(f, pos, lane, &c0, &c1)) return TK_END_EXIT_IMAGE;
    const double prev[3] = {dir[0], dir[1], dir[2]};
    if (!tk_warp_sd_find_peak(plan, c0, c1, dir, t, lane)) return TK_END_MODEL;
    if (prev[0] * dir[0] + prev[1] * dir[1] + prev[2] * dir[2] < plan->cos_max_angle) return TK_END_CURVATURE;
    for (int a = 0; a < 3; ++a) pos[a] += dir[a] * plan->opts.step_mm;
    return -1;
}

/* tk_tracking_reverse_points with the pairs shared among the lanes. */
__device__ static inline void tk_warp_reverse_points(double *p, size_t n, int lane)
{
    __syncwarp();
    for (size_t i = (size_t)lane; i < n / 2; i += TK_TRACK_LANES) {
        const size_t j = n - 1 - i;
        for (int a = 0; a < 3; ++a) {
            const double s = p[3 * i + a];
            p[3 * i + a] = p[3 * j + a], p[3 * j + a] = s;
        }
    }
    __syncwarp();
}

/* The method's init() on the series at the seed (w->c0, w->c1). */
__device__ static inline int tk_warp_init(const tk_tracking_field *f, const tk_warp_work *w, double *dir, int given,
                                          tk_philox *rng, tk_warp_tensor *t, const tk_warp_poly *wp, int lane)
{
    const tk_tracking_plan *plan = f->plan;
    if (plan->opts.algorithm == TK_TRACK_IFOD1) return tk_warp_ifod1_init(plan, w->c0, w->c1, wp, dir, given, rng, lane);
    if (!given) tk_tracking_random_direction(rng, dir); /* sd_stream_init's one draw */
    return tk_warp_sd_find_peak(plan, w->c0, w->c1, dir, t, lane);
}

/* The streamline (tracking_streamline_body.h) on the warp: every lane runs it alike; the
 * lanes share out the series, the peak, the trials and the reversal. */
#define TK_SL_FN __device__ static inline
#define TK_SL_SFX(name) tk_warp_##name
#define TK_SL_WORK tk_warp_work
#define TK_SL_CTX_PARAMS , tk_warp_tensor *t, const tk_warp_poly *wp, int lane
#define TK_SL_CTX_ARGS , t, wp, lane
#define TK_SL_SERIES(f, w, p) tk_warp_interpolate(f, p, lane, &(w)->c0, &(w)->c1)
#define TK_SL_INIT(f, w, dir, given, rng) tk_warp_init(f, w, dir, given, rng, t, wp, lane)
#define TK_SL_NEXT(f, w, pos, dir, rng)                                                                    \
    ((f)->plan->opts.algorithm == TK_TRACK_IFOD1 ? tk_warp_ifod1_next(f, w, pos, dir, rng, wp, lane)       \
                                                 : tk_warp_sd_stream_next(f, pos, dir, t, lane))
#define TK_SL_PUSH(w, n, p) tk_warp_push_point(w, n, p)
#define TK_SL_REVERSE(w, n) tk_warp_reverse_points((w)->pts, n, lane)
#include "tracking_streamline_body.h"

#endif
