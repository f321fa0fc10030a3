/* Internal: iFOD1's FOD value at a direction as a polynomial, host and device (one text for
 * the CPU and the CUDA tracker).
 *
 * The SH series of order lmax equals A x^lmax on the unit sphere, A the packed symmetric
 * tensor plan->map gives (tk_sh_to_tensor_map), and A x^lmax is the sum over A's unique
 * entries of A_class times the class's multiplicity times the monomial x^class.  Once per
 * step the series becomes those lmax-degree monomial coefficients; each sampled direction
 * (the calibration directions, then up to max_trials draws) then costs the powers of its
 * coordinates and one multiply-add per coefficient (45 at lmax 8), where the SH basis
 * (tk_sh_eval_unchecked) costs an atan2, a sine and cosine per order m and the Legendre
 * recurrences.  The values agree with the basis's to rounding, not bit for bit.  Up to
 * lmax TK_TRACK_POLY_MAX_ORDER; above, the basis (the high-degree monomials' cancellation
 * grows, and the coefficients would crowd the device's per-thread stack). */
#ifndef TK_TRACKING_POLY_H
#define TK_TRACKING_POLY_H

#include <math.h>

#include "common/sym_tensor_hd.h"
#include "common/tk_hd.h"
#include "tracking_field.h"
#include "tracking_internal.h"

/* The recipe, once per plan (lmax <= TK_TRACK_POLY_MAX_ORDER): packed entry k's monomial
 * exponents and its multiplicity, in the walk's packed order. */
TK_HD static inline void tk_tracking_poly_recipe(int order, unsigned char (*exp)[3], double *mult)
{
    tk_sym_hd_classes3(order, exp, mult);
}

/* 1 where the plan evaluates its series as a polynomial. */
TK_HD static inline int tk_tracking_poly_used(const tk_tracking_plan *plan)
{
    return plan->opts.lmax <= TK_TRACK_POLY_MAX_ORDER;
}

/* coef (k) = the monomial coefficients of the series sh: the tensor map sh (column by
 * column, the plan's map being column-major), each entry times its multiplicity. */
TK_HD static inline void tk_tracking_poly_coeffs(const tk_tracking_plan *plan, const double *sh, double *coef)
{
    const int k = plan->k;
    for (int r = 0; r < k; ++r) coef[r] = 0.0;
    for (int c = 0; c < k; ++c) {
        const double s = sh[c], *col = plan->map + (size_t)c * k;
        for (int r = 0; r < k; ++r) coef[r] += col[r] * s;
    }
    for (int r = 0; r < k; ++r) coef[r] *= plan->poly_mult[r];
}

/* The series at the direction of dir (normalised here: the polynomial equals the series on
 * the unit sphere only) from tk_tracking_poly_coeffs's coef. */
TK_HD static inline double tk_tracking_poly_value(const tk_tracking_plan *plan, const double *coef, const double *dir)
{
    const int m = plan->opts.lmax, k = plan->k;
    const double n = sqrt(dir[0] * dir[0] + dir[1] * dir[1] + dir[2] * dir[2]);
    const double x[3] = {dir[0] / n, dir[1] / n, dir[2] / n};
    double p[3][TK_TRACK_POLY_MAX_ORDER + 1];
    for (int a = 0; a < 3; ++a) {
        p[a][0] = 1.0;
        for (int e = 1; e <= m; ++e) p[a][e] = p[a][e - 1] * x[a];
    }
    /* two partial sums: half the chain of dependent additions */
    double s0 = 0.0, s1 = 0.0;
    int j = 0;
    for (; j + 1 < k; j += 2) {
        const unsigned char *e0 = plan->poly_exp[j], *e1 = plan->poly_exp[j + 1];
        s0 += coef[j] * (p[0][e0[0]] * p[1][e0[1]] * p[2][e0[2]]);
        s1 += coef[j + 1] * (p[0][e1[0]] * p[1][e1[1]] * p[2][e1[2]]);
    }
    if (j < k) {
        const unsigned char *e0 = plan->poly_exp[j];
        s0 += coef[j] * (p[0][e0[0]] * p[1][e0[1]] * p[2][e0[2]]);
    }
    return s0 + s1;
}

/* iFOD1's value at dir: the polynomial where the plan uses it (coef from
 * tk_tracking_poly_coeffs), else the SH basis on sh. */
TK_HD static inline double tk_tracking_fod_value(const tk_tracking_plan *plan, const double *sh, const double *coef,
                                                 const double *dir)
{
    return tk_tracking_poly_used(plan) ? tk_tracking_poly_value(plan, coef, dir) : tk_tracking_sh_value(plan, sh, dir);
}

#endif
