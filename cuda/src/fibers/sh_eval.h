/* Internal: the real SH basis functions at one direction, one text for the host (tk_sh_eval,
 * which checks its arguments first) and for device code (the fiber finder's axial test). */
#ifndef TK_SH_EVAL_H
#define TK_SH_EVAL_H

#include <math.h>

#include "tk_fibers.h"
#include "common/tk_hd.h"

/* out[tk_sh_num_coeffs(lmax)]: the basis functions of (basis, legacy) at the direction of
 * the nonzero, finite dir, for even lmax from 0 to TK_SH_MAX_LMAX (unchecked). */
TK_HD static inline void tk_sh_eval_unchecked(tk_sh_basis basis, int legacy, int lmax, const double *dir, double *out)
{
    const double pi = 3.14159265358979323846;
    double r = sqrt(dir[0] * dir[0] + dir[1] * dir[1] + dir[2] * dir[2]);
    double ct = dir[2] / r, st = sqrt(fmax(0.0, 1.0 - ct * ct)), phi = atan2(dir[1], dir[0]);
    /* p[l][m]: associated Legendre P_l^m(cos theta) with the Condon-Shortley phase, m >= 0 */
    double p[TK_SH_MAX_LMAX + 1][TK_SH_MAX_LMAX + 1];
    for (int m = 0; m <= lmax; ++m) {
        double pmm = 1.0;
        for (int k = 1; k <= m; ++k) pmm *= -(2.0 * k - 1.0) * st;
        p[m][m] = pmm;
        if (m + 1 <= lmax) p[m + 1][m] = ct * (2.0 * m + 1.0) * pmm;
        for (int l = m + 2; l <= lmax; ++l)
            p[l][m] = ((2.0 * l - 1.0) * ct * p[l - 1][m] - (l + m - 1.0) * p[l - 2][m]) / (double)(l - m);
    }
    const double sqrt2 = sqrt(2.0);
    for (int l = 0; l <= lmax; l += 2) {
        const int centre = l * (l + 1) / 2;
        for (int m = 0; m <= l; ++m) {
            /* orthonormal factor sqrt((2l+1)/(4 pi) (l-m)!/(l+m)!) */
            double ratio = 1.0;
            for (int k = l - m + 1; k <= l + m; ++k) ratio /= (double)k;
            double y = sqrt((2.0 * l + 1.0) / (4.0 * pi) * ratio) * p[l][m];
            if (m == 0) {
                out[centre] = y;
                continue;
            }
            double re = y * cos(m * phi), im = y * sin(m * phi); /* Y_l^m, m > 0 */
            double neg_sign = (m % 2) ? -1.0 : 1.0;              /* Y_l^-m = (-1)^m conj(Y_l^m) */
            if (basis == TK_SH_TOURNIER) {
                double s = legacy ? 1.0 : sqrt2;
                out[centre + m] = s * re;
                out[centre - m] = s * im;
            } else {
                out[centre + m] = sqrt2 * im;
                out[centre - m] = sqrt2 * (legacy ? re : neg_sign * re);
            }
        }
    }
}

/* The factor that turns coefficient j of (basis, legacy) into the coefficient of an
 * orthonormal basis function (both real bases of DIPY and MRtrix3 are orthonormal but
 * MRtrix 0.2's legacy tournier, which drops the sqrt 2 of its m != 0 functions). */
TK_HD static inline double tk_sh_orthonormal_weight(tk_sh_basis basis, int legacy, int m)
{
    return basis == TK_SH_TOURNIER && legacy && m != 0 ? 0.70710678118654752440 : 1.0;
}

#endif
