/* iFOD1's calibration (MRtrix3's algorithms/calibrator.h calibrate() with iFOD1's Calibrate
 * functor): how to bound the FOD over the sampling cone cheaply.  The FOD's sharpest
 * possible lobe at lmax is the truncated delta, whose profile at angle el from its axis is
 * d(el) = sum over even l of (2l+1)/(4 pi) P_l(cos el) (raised to fod_power).  For a grid of
 * directions of spacing sqrt(3) theta covering the cone widened by theta, every direction of
 * the cone lies within theta of a grid direction, so the FOD's maximum over the cone is at
 * most the grid's maximum times d(0) / d(theta).  theta is chosen (in steps of 0.001 rad)
 * to minimise the expected samples of a step: the grid's size plus the rejection sampler's
 * expected trials, max_angle^2 (1 + d(0)/d(theta)) / (2 zero^2), zero the angle where the
 * profile reaches zero (or the cone's edge). */
#include <math.h>
#include <stdlib.h>

#include "tracking_internal.h"

/* The truncated delta's profile at el, to the power. */
static double delta_profile(int lmax, double el, double power)
{
    const double x = cos(el);
    double p0 = 1.0, p1 = x, sum = 1.0 / (4.0 * 3.14159265358979323846);
    for (int l = 2; l <= lmax; ++l) {
        const double p2 = ((2.0 * l - 1.0) * x * p1 - (l - 1.0) * p0) / l;
        if (l % 2 == 0) sum += (2.0 * l + 1.0) / (4.0 * 3.14159265358979323846) * p2;
        p0 = p1, p1 = p2;
    }
    return pow(sum, power);
}

/* MRtrix3's direction_grid(): a hexagonal lattice of the given spacing in the tangent plane
 * at +z, points within max_angle of the origin, mapped to the sphere by the azimuthal
 * equidistant projection (distance from the origin = angle from +z).  out may be NULL
 * (count only). */
static size_t direction_grid(double max_angle, double spacing, double *out)
{
    const double max_r2 = (max_angle / spacing) * (max_angle / spacing);
    const long extent = (long)ceil(max_angle / spacing);
    size_t count = 0;
    for (long i = -extent; i <= extent; ++i)
        for (long j = -extent; j <= extent; ++j) {
            const double x = i + 0.5 * j, y = 0.86602540378443864676 * j, r2 = x * x + y * y;
            if (r2 > max_r2) continue;
            if (out) {
                const double angle = spacing * sqrt(r2), s = angle > 0 ? spacing * sin(angle) / angle : 0.0;
                out[3 * count] = s * x, out[3 * count + 1] = s * y, out[3 * count + 2] = cos(angle);
            }
            ++count;
        }
    return count;
}

tk_status tk_tracking_calibrate(tk_tracking_plan *plan)
{
    const int lmax = plan->opts.lmax;
    const double power = plan->opts.fod_power, max_angle = plan->max_angle_rad, sqrt3 = sqrt(3.0);
    /* the profile every 0.001 rad over the cone, up to its first zero */
    const size_t cap = (size_t)(max_angle / 0.001) + 2;
    double *el = malloc(cap * sizeof *el), *amp = malloc(cap * sizeof *amp);
    if (!el || !amp) {
        free(el), free(amp);
        return tk_set_error(TK_ERR_MEMORY, "out of memory calibrating iFOD1");
    }
    size_t n = 0;
    for (size_t i = 0; n < cap && 0.001 * (double)i < max_angle; ++i) {
        el[n] = 0.001 * (double)i, amp[n] = delta_profile(lmax, el[n], power);
        ++n;
        if (!isfinite(amp[n - 1]) || amp[n - 1] <= 0.0) break;
    }
    const double zero = el[n - 1];
    double best = INFINITY, theta = NAN, ratio = NAN;
    for (size_t i = 1; i < n; ++i) {
        const double samples = max_angle * max_angle * (1.0 + amp[0] / amp[i]) / (2.0 * zero * zero);
        const double total = samples + (double)direction_grid(max_angle + el[i], sqrt3 * el[i], NULL);
        if (total > 0 && total < best) best = total, theta = el[i], ratio = amp[0] / amp[i];
    }
    free(el), free(amp);
    if (!isfinite(theta))
        return tk_set_error(TK_ERR_ARGUMENT, "iFOD1 cannot calibrate its sampling for a %g-degree cone at lmax %d",
                            plan->opts.max_angle_deg, lmax);
    plan->num_calib = direction_grid(max_angle + theta, sqrt3 * theta, NULL);
    plan->calib_dirs = malloc(plan->num_calib * 3 * sizeof *plan->calib_dirs);
    if (!plan->calib_dirs) return tk_set_error(TK_ERR_MEMORY, "out of memory for iFOD1's calibration directions");
    direction_grid(max_angle + theta, sqrt3 * theta, plan->calib_dirs);
    plan->calib_ratio = ratio;
    return TK_OK;
}
