/* The FOD peak nearest a direction: the fiber core's Newton climb on the sphere
 * (fibers/fibers_newton.h, the one that polishes tk_fibers_find's peaks) started at the
 * current direction, on the series' anisotropic part as the fiber core climbs it.
 *
 * MRtrix3's SD_STREAM does the same job with Math::SH::get_peak (core/math/SH.h): a Newton
 * step along the gradient's great circle, at most MAX_DIR_CHANGE = 0.2 rad, until a step is
 * below 1e-4 rad, at most 50 steps, else no peak.  Here the climb is the exact one (the full
 * 2-D tangent Newton step, backtracking so the value never falls, a strict maximum proved
 * by the Hessian) with the same longest step, so both end on the same local maximum, the one
 * whose basin holds the start; ours to about 1e-9 rad. */
#ifndef TK_TRACKING_PEAK_H
#define TK_TRACKING_PEAK_H

/* Host and device (TK_HD): the CPU tracker and the CUDA tracker compile this one text. */
#include <math.h>
#include <string.h>

#include "common/tk_hd.h"
#include "fibers/fibers_internal.h"
#include "tracking_internal.h"
#include "tracking_tensor.h"

/* The evaluator of fibers_newton.h: the packed symmetric tensor A of order m whose A x^m is
 * the series on the sphere, with the last point's derivatives kept (the backtracking test
 * evaluates the value where the next iteration differentiates). */
typedef struct {
    int m;
    const double *a;
    const double (*rows)[6]; /* a's monomial form where m <= TK_TRACK_ROWS_MAX_ORDER, else NULL */
    int lanes;               /* the rows' sums in the order of this many GPU lanes (plan's sd_lanes) */
    double last_x[3], last_y[3], last_h[9];
    int has_last;
} track_tensor;

TK_HD static inline void tt_derivs(const track_tensor *tc, const double *x, double *y, double *h)
{
    track_tensor *t = (track_tensor *)tc; /* the cache is no part of the tensor's value */
    if (!(t->has_last && x[0] == t->last_x[0] && x[1] == t->last_x[1] && x[2] == t->last_x[2])) {
        if (t->rows)
            tk_tracking_rows_axm2(t->m, t->lanes, t->rows, x, t->last_h);
        else
            tk_tracking_axm2_3(t->m, t->a, x, t->last_h);
        const double *lh = t->last_h;
        /* A x^(m-1) = (A x^(m-2)) x */
        for (int i = 0; i < 3; ++i) t->last_y[i] = lh[i * 3] * x[0] + lh[i * 3 + 1] * x[1] + lh[i * 3 + 2] * x[2];
        memcpy(t->last_x, x, sizeof t->last_x);
        t->has_last = 1;
    }
    memcpy(y, t->last_y, sizeof t->last_y);
    memcpy(h, t->last_h, sizeof t->last_h);
}

#define TK_NEWTON_FN TK_HD static inline
#define TK_NEWTON_UTIL TK_HD static inline
#define TK_NEWTON_CTX track_tensor
#define TK_NEWTON_SFX(name) name##_track
#define TK_NEWTON_ORDER(t) ((t)->m)
#define TK_NEWTON_DERIVS(t, x, y, h) tt_derivs(t, x, y, h)
#include "fibers/fibers_newton.h"

/* MRtrix3's MAX_DIR_CHANGE (core/math/SH.h): the longest step of the climb, in radians. */
#define TK_TRACK_PEAK_MAX_STEP 0.2
/* Climbs that run out of fibers_newton.h's iteration budget go on from where they stopped,
 * this many times in all: a random first direction may lie up to 90 degrees (eight longest
 * steps) from its peak, and near a flat shoulder the steps are halved. */
#define TK_TRACK_PEAK_CLIMBS 3

/* The end of every peak search (the thread's, the warp's, the group's): a strict maximum whose
 * amplitude iso + scale * value is finite gives that amplitude, its direction x into dir;
 * anything else 0 (no peak). */
TK_HD static inline double tk_tracking_peak_found(int strict, double iso, double scale, double value,
                                                  const double *x, double *dir)
{
    if (strict != 1) return 0;
    const double amplitude = iso + scale * value;
    if (!isfinite(amplitude)) return 0;
    dir[0] = x[0], dir[1] = x[1], dir[2] = x[2];
    return amplitude;
}

/* tk_tracking_plan_peak with caller scratch. */
TK_HD static inline double tk_tracking_peak(const tk_tracking_plan *plan, const double *sh, double *dir,
                                            tk_tracking_peak_work *work)
{
    const int k = plan->k;
    double iso;
    const double scale = tk_fibers_anisotropic_part(k, sh, work->aniso, &iso);
    if (!(scale > 0)) return 0; /* constant on the sphere (or not finite): no peak */
    /* tensor = map aniso, column by column: each entry still sums its products in column
     * order from 0 (the row-by-row dot product's rounding, bit for bit), but the k entries'
     * sums are independent, so the host runs them side by side instead of waiting on one
     * chain of k dependent additions per entry (the step's longest wait after the climb);
     * the plan keeps the map column-major for it */
#ifndef __CUDA_ARCH__
    tk_tracking_plan_map_times(plan, 1, work->aniso, work->tensor); /* the same sums, in registers */
#else
    for (int r = 0; r < k; ++r) work->tensor[r] = 0.0;
    for (int c = 1; c < k; ++c) {
        const double a = work->aniso[c], *col = plan->map + (size_t)c * k;
        for (int r = 0; r < k; ++r) work->tensor[r] += col[r] * a;
    }
#endif
    double n = sqrt(dir[0] * dir[0] + dir[1] * dir[1] + dir[2] * dir[2]);
    if (!(n > 0) || !isfinite(n)) return 0;
    double x[3] = {dir[0] / n, dir[1] / n, dir[2] / n}, value = 0;
    track_tensor t;
    t.m = plan->opts.lmax, t.a = work->tensor, t.has_last = 0, t.rows = NULL, t.lanes = plan->sd_lanes;
    if (t.m <= TK_TRACK_ROWS_MAX_ORDER) {
        tk_tracking_rows_build(t.m, (const int(*)[6])plan->rows_src, (const double(*)[6])plan->rows_weight,
                               work->tensor, work->rows);
        t.rows = (const double(*)[6])work->rows;
    }
    int strict = 0;
    for (int climb = 0; climb < TK_TRACK_PEAK_CLIMBS; ++climb) {
        int iterations = 0;
        strict = nt_polish_track(&t, x, &value, &iterations, 0.0, 0.0, TK_TRACK_PEAK_MAX_STEP, NULL);
        if (strict == 1 || iterations < TK_NEWTON_MAX_ITERATIONS) break;
    }
    return tk_tracking_peak_found(strict, iso, scale, value, x, dir);
}

#endif
