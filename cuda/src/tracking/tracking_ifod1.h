/* iFOD1's method (MRtrix3's algorithms/iFOD1.h): each step's direction is drawn from the
 * interpolated FOD (raised to fod_power) restricted to the cone of max_angle about the
 * current direction, by rejection sampling: a direction uniform on the cone is accepted with
 * probability FOD / bound, the bound being the largest FOD over the calibration directions
 * times the calibration ratio (tracking_calibrate.c); FOD values at or below the cutoff are
 * never accepted.  No peak search and no separate curvature test: the cone is the limit. */
#ifndef TK_TRACKING_IFOD1_H
#define TK_TRACKING_IFOD1_H

/* Host and device (TK_HD): the CPU tracker and the CUDA tracker compile this one text. */
#include <math.h>
#include <string.h>

#include "common/tk_hd.h"
#include "tracking_directions.h"
#include "tracking_field.h"
#include "tracking_internal.h"
#include "tracking_poly.h"
#include "tracking_tensor.h"
#ifdef TK_TRACK_HOST_V4
#include "tracking_trials_host.h"
#endif

/* MRtrix3's seeders' max_attempts (seeding/base.h MAX_TRACKING_SEED_ATTEMPTS_FIXED and
 * _RANDOM): random first directions tried at a seed before it is rejected. */
#define TK_IFOD1_SEED_ATTEMPTS 1000

TK_HD static inline int tk_tracking_ifod1_init(const tk_tracking_field *f, tk_tracking_work *w, double *dir, int given, tk_philox *rng)
{
    const tk_tracking_plan *plan = f->plan;
    const double threshold = plan->opts.cutoff; /* init_threshold = threshold (set_cutoff) */
    /* the series' polynomial (tracking_poly.h) in the peak scratch, which iFOD1 has no other
     * use for: no further per-thread stack on the device */
    double *coef = w->peak.tensor;
    if (tk_tracking_poly_used(plan)) tk_tracking_poly_coeffs(plan, w->values, coef);
    if (given) {
        const double v = tk_tracking_fod_value(plan, w->values, coef, dir);
        return isfinite(v) && v > threshold;
    }
    for (int n = 0; n < TK_IFOD1_SEED_ATTEMPTS; ++n) {
        tk_tracking_random_direction(rng, dir);
        const double v = tk_tracking_fod_value(plan, w->values, coef, dir);
        if (isfinite(v) && v > threshold) return 1;
    }
    return 0;
}

/* v^power, with power 1 (the default) taken as the identity pow is for it: a double pow costs
 * about a hundred instructions on the GPU, a trial's value a few dozen. */
TK_HD static inline double tk_tracking_fod_pow(double v, double power)
{
    return power == 1.0 ? v : pow(v, power);
}

/* Trial n of a step: a direction uniform on the cone about dir (d), drawn from the trial's
 * own stream (tk_philox_trial: the step's trials do not depend on one another, so a GPU warp
 * draws 32 at once and takes the first accepted, as the CPU does drawing them in turn). */
TK_HD static inline void tk_tracking_ifod1_candidate(const tk_tracking_plan *plan, const tk_philox *rng, uint32_t step,
                                                    int n, const tk_tracking_rotation *rot, tk_philox *trial, double *d)
{
    double cone[3];
    tk_philox_trial(trial, rng, step, (uint32_t)n);
    tk_tracking_random_cone(trial, plan->cone_radius, plan->cone_radius2, cone);
    tk_tracking_rotate(rot, cone, d);
}

/* Whether the trial whose FOD value is v is taken: above the cutoff, then with probability
 * v^power / bound (a value above the bound, a truncation, is taken at once, as in MRtrix3). */
TK_HD static inline int tk_tracking_ifod1_accept(const tk_tracking_plan *plan, tk_philox *trial, double v, double bound)
{
    if (!(v > plan->opts.cutoff)) return 0;
    v = tk_tracking_fod_pow(v, plan->opts.fod_power);
    return tk_philox_uniform32(trial) < v / bound;
}

/* The step along accepted direction d. */
TK_HD static inline void tk_tracking_ifod1_move(const tk_tracking_plan *plan, const double *d, double *pos, double *dir)
{
    const double n2 = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
    for (int a = 0; a < 3; ++a) dir[a] = d[a] / n2, pos[a] += plan->opts.step_mm * dir[a];
}

#ifdef TK_TRACK_HOST_V4
/* The host's step where the plan uses the polynomial: tk_tracking_ifod1_next's, the values
 * four at a time (tk_tracking_poly_value4, each the scalar value to the bit).  The bound is
 * the largest of the same values (a NaN among them ends the step as there); the trials go in
 * fours, their directions drawn from their own streams (which no earlier trial's outcome
 * touches: tk_philox_trial), then tested in order, the first taken as the scalar loop takes
 * it, the rest of its four drawn for nothing: the same direction and the same streamline. */
static inline int tk_tracking_ifod1_next_poly4(const tk_tracking_plan *plan, tk_tracking_work *w, double *pos,
                                               double *dir, tk_philox *rng, uint32_t step)
{
    const tk_tracking_options *o = &plan->opts;
    double bound = 0.0, d[12], v[4], *coef = w->peak.tensor;
    tk_tracking_rotation rot;
    tk_tracking_rotation_to(dir, &rot);
    tk_tracking_plan_map_times(plan, 0, w->values, coef); /* tk_tracking_poly_coeffs's sums */
    for (int r = 0; r < plan->k; ++r) coef[r] *= plan->poly_mult[r];
    for (size_t i0 = 0; i0 < plan->num_calib; i0 += 4) {
        const int cnt = plan->num_calib - i0 < 4 ? (int)(plan->num_calib - i0) : 4;
        for (int l = 0; l < 4; ++l) tk_tracking_rotate(&rot, plan->calib_dirs + 3 * (i0 + (l < cnt ? l : 0)), d + 3 * l);
        tk_tracking_poly_value4(plan, coef, d, v);
        for (int l = 0; l < cnt; ++l) {
            if (isnan(v[l])) return TK_END_EXIT_IMAGE;
            if (v[l] > bound) bound = v[l];
        }
    }
    if (!(bound > 0.0)) return TK_END_CALIBRATOR;
    bound = tk_tracking_fod_pow(bound, o->fod_power) * plan->calib_ratio;
    for (int n0 = 0; n0 < o->max_trials; n0 += 4) {
        const int cnt = o->max_trials - n0 < 4 ? o->max_trials - n0 : 4;
        tk_trial_pre trial[4]; /* tk_tracking_ifod1_candidate's streams, their first blocks at once */
        tk_trial_pre_init4(trial, rng, step, (uint32_t)n0);
        tk_trial_pre_cones4(trial, cnt, &rot, plan->cone_radius, plan->cone_radius2, d);
        tk_tracking_poly_value4(plan, coef, d, v);
        for (int l = 0; l < cnt; ++l) {
            /* tk_tracking_ifod1_accept on the trial's stream */
            if (!(v[l] > o->cutoff)) continue;
            if (tk_trial_pre_uniform32(&trial[l]) < tk_tracking_fod_pow(v[l], o->fod_power) / bound) {
                tk_tracking_ifod1_move(plan, d + 3 * l, pos, dir);
                return -1;
            }
        }
    }
    return TK_END_MODEL;
}
#endif

TK_HD static inline int tk_tracking_ifod1_next(const tk_tracking_field *f, tk_tracking_work *w, double *pos, double *dir, tk_philox *rng)
{
    const tk_tracking_plan *plan = f->plan;
    const tk_tracking_options *o = &plan->opts;
    if (!tk_tracking_interpolate(f, pos, w->values)) return TK_END_EXIT_IMAGE;
    const uint32_t step = w->step++;
#ifdef TK_TRACK_HOST_V4
    if (tk_tracking_poly_used(plan)) return tk_tracking_ifod1_next_poly4(plan, w, pos, dir, rng, step);
#endif
    double bound = 0.0, d[3], *coef = w->peak.tensor;
    tk_tracking_rotation rot;
    tk_tracking_rotation_to(dir, &rot);
    if (tk_tracking_poly_used(plan)) tk_tracking_poly_coeffs(plan, w->values, coef);
    for (size_t i = 0; i < plan->num_calib; ++i) {
        tk_tracking_rotate(&rot, plan->calib_dirs + 3 * i, d);
        const double v = tk_tracking_fod_value(plan, w->values, coef, d);
        if (isnan(v)) return TK_END_EXIT_IMAGE;
        if (v > bound) bound = v;
    }
    if (!(bound > 0.0)) return TK_END_CALIBRATOR;
    bound = tk_tracking_fod_pow(bound, o->fod_power) * plan->calib_ratio;
    for (int n = 0; n < o->max_trials; ++n) {
        tk_philox trial;
        tk_tracking_ifod1_candidate(plan, rng, step, n, &rot, &trial, d);
        if (tk_tracking_ifod1_accept(plan, &trial, tk_tracking_fod_value(plan, w->values, coef, d), bound)) {
            tk_tracking_ifod1_move(plan, d, pos, dir);
            return -1;
        }
    }
    return TK_END_MODEL;
}

#endif
