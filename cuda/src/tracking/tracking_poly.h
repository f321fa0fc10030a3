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

/* The powers 0..m of the coordinates of dir normalised (the polynomial equals the series on
 * the unit sphere only): p[a][e] = x_a^e, each from the one before. */
TK_HD static inline TK_ALWAYS_INLINE void tk_tracking_poly_powers(int m, const double *dir,
                                                                  double p[3][TK_TRACK_POLY_MAX_ORDER + 1])
{
    const double n = sqrt(dir[0] * dir[0] + dir[1] * dir[1] + dir[2] * dir[2]);
    const double x[3] = {dir[0] / n, dir[1] / n, dir[2] / n};
    for (int a = 0; a < 3; ++a) {
        p[a][0] = 1.0;
        for (int e = 1; e <= m; ++e) p[a][e] = p[a][e - 1] * x[a];
    }
}

/* The series at the direction of dir for order m (the plan's lmax): the monomials in the
 * recipe's order (tk_sym_hd_classes3: x0's power a from m down, then x1's power b from m - a
 * down; tk_tracking_plan_create checks the plan's table against it), the even-numbered terms
 * into one partial sum and the odd into another (half the chain of dependent additions).
 * Inlined with m a constant (tk_tracking_poly_value's switch), the loops unroll and every
 * power is a fixed register or stack slot, where the table's exponents were loads and
 * indexed reads at each of iFOD1's many samples a step. */
TK_HD static inline TK_ALWAYS_INLINE double tk_tracking_poly_value_m(int m, const double *coef, const double *dir)
{
    /* zeroed for the compiler's sake (an m not constant hides that slots past m go unread);
     * with m constant the stores are dead and dropped */
    double p[3][TK_TRACK_POLY_MAX_ORDER + 1] = {{0.0}};
    tk_tracking_poly_powers(m, dir, p);
    double s0 = 0.0, s1 = 0.0;
    int j = 0;
#if !defined(__CUDACC__)
#pragma GCC unroll 16
#endif
    for (int a = m; a >= 0; --a)
#if !defined(__CUDACC__)
#pragma GCC unroll 16
#endif
        for (int b = m - a; b >= 0; --b, ++j) {
            const double term = coef[j] * (p[0][a] * p[1][b] * p[2][m - a - b]);
            if (j & 1) s1 += term;
            else s0 += term;
        }
    return s0 + s1;
}

#ifdef TK_TRACK_HOST_V4
/* Host only: four directions' values at once, one a lane of GCC's vector extension (AVX2's
 * four doubles; TK_TRACK_HOST_V4: tracking_streamline_avx2.c only).  Each lane does
 * tk_tracking_poly_value_m's operations in its order (the norm, the powers from 1.0, each
 * term as coef times ((x0^a x1^b) x2^c), the even and odd sums, their sum), and vector
 * arithmetic rounds each lane as the scalar operation does, so every value is the scalar
 * walk's to the bit (no multiply-add is fused: the build has no FMA where these are
 * compiled, tracking_streamline_avx2.c).  iFOD1 evaluates the polynomial at every
 * calibration direction and at every trial, each independent of the others: four at a time
 * is where its step spent half its time (Documentation/tracking.md, "Speed on the CPU"). */
typedef double tk_tracking_v4 __attribute__((vector_size(32)));

/* out[l] = the series at the direction dirs[3 l .. 3 l + 2], l = 0..3. */
static inline TK_ALWAYS_INLINE void tk_tracking_poly_value4_m(int m, const double *coef, const double *dirs,
                                                              double *out)
{
    tk_tracking_v4 x[3];
    for (int a = 0; a < 3; ++a) x[a] = (tk_tracking_v4){dirs[a], dirs[3 + a], dirs[6 + a], dirs[9 + a]};
    const tk_tracking_v4 n2 = x[0] * x[0] + x[1] * x[1] + x[2] * x[2];
    tk_tracking_v4 n;
    for (int l = 0; l < 4; ++l) n[l] = sqrt(n2[l]);
    tk_tracking_v4 p[3][TK_TRACK_POLY_MAX_ORDER + 1];
    for (int a = 0; a < 3; ++a) {
        const tk_tracking_v4 xa = x[a] / n;
        p[a][0] = (tk_tracking_v4){1.0, 1.0, 1.0, 1.0};
        for (int e = 1; e <= m; ++e) p[a][e] = p[a][e - 1] * xa;
    }
    tk_tracking_v4 s0 = {0.0, 0.0, 0.0, 0.0}, s1 = s0;
    int j = 0;
#pragma GCC unroll 16
    for (int a = m; a >= 0; --a)
#pragma GCC unroll 16
        for (int b = m - a; b >= 0; --b, ++j) {
            const tk_tracking_v4 term = coef[j] * (p[0][a] * p[1][b] * p[2][m - a - b]);
            if (j & 1) s1 += term;
            else s0 += term;
        }
    const tk_tracking_v4 s = s0 + s1;
    for (int l = 0; l < 4; ++l) out[l] = s[l];
}

/* tk_tracking_poly_value at four directions (the plan uses the polynomial). */
static inline void tk_tracking_poly_value4(const tk_tracking_plan *plan, const double *coef, const double *dirs,
                                           double *out)
{
    switch (plan->opts.lmax) {
    case 8: tk_tracking_poly_value4_m(8, coef, dirs, out); break;
    case 6: tk_tracking_poly_value4_m(6, coef, dirs, out); break;
    default:
        for (int l = 0; l < 4; ++l) out[l] = tk_tracking_poly_value_m(plan->opts.lmax, coef, dirs + 3 * l);
    }
}
#endif

/* Whether exp (the plan's poly_exp, k rows) lists the monomials in tk_tracking_poly_value_m's
 * order. */
TK_HD static inline int tk_tracking_poly_order_matches(int m, const unsigned char (*exp)[3])
{
    int j = 0;
    for (int a = m; a >= 0; --a)
        for (int b = m - a; b >= 0; --b, ++j)
            if (exp[j][0] != a || exp[j][1] != b || exp[j][2] != m - a - b) return 0;
    return 1;
}

/* The series at the direction of dir (normalised here: the polynomial equals the series on
 * the unit sphere only) from tk_tracking_poly_coeffs's coef.  The device keeps the table's
 * walk (its text as the GPU was last measured and checked with; the CUDA tracker's lmax <= 8
 * kernels evaluate the polynomial themselves, tracking_warp.cuh, so the device reaches this
 * only through the thread kernel, which runs above lmax 8 where no polynomial is used); the
 * host takes the unrolled walk, the same terms in the same order. */
TK_HD static inline double tk_tracking_poly_value(const tk_tracking_plan *plan, const double *coef, const double *dir)
{
#ifndef __CUDA_ARCH__
    switch (plan->opts.lmax) {
    case 8: return tk_tracking_poly_value_m(8, coef, dir);
    case 6: return tk_tracking_poly_value_m(6, coef, dir);
    default: return tk_tracking_poly_value_m(plan->opts.lmax, coef, dir);
    }
#else
    const int m = plan->opts.lmax, k = plan->k;
    double p[3][TK_TRACK_POLY_MAX_ORDER + 1];
    tk_tracking_poly_powers(m, dir, p);
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
#endif
}

/* iFOD1's value at dir: the polynomial where the plan uses it (coef from
 * tk_tracking_poly_coeffs), else the SH basis on sh. */
TK_HD static inline double tk_tracking_fod_value(const tk_tracking_plan *plan, const double *sh, const double *coef,
                                                 const double *dir)
{
    return tk_tracking_poly_used(plan) ? tk_tracking_poly_value(plan, coef, dir) : tk_tracking_sh_value(plan, sh, dir);
}

#endif
