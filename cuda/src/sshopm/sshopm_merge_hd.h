/* The merge rule of distinct eigenpairs and the stability test, one text for the host
 * (sshopm_distinct.c) and the device (sshopm_merge_kernels.cu).  Everything is in double,
 * and the device file is compiled without FMA contraction (-fmad=false), so that both
 * sides do the same IEEE operations in the same order and reach the same pairs, counts and
 * stabilities bit for bit, ties at the merge tolerance included.  Needs the double
 * instantiation of sshopm_math.h (tk_k_tangent_eigenvalues_d) included before. */
#ifndef TK_SSHOPM_MERGE_HD_H
#define TK_SSHOPM_MERGE_HD_H

#include <math.h>
#include <stddef.h>

#include "common/sym_tensor_hd.h"
#include "common/tk_hd.h"
#include "tk_sshopm.h"

/* x and -x as one direction: flip x so its largest-magnitude entry is positive (the
 * first such entry on ties). */
TK_HD static inline void tk_merge_canonical_sign(int dim, double *x)
{
    int big = 0;
    for (int i = 1; i < dim; ++i)
        if (fabs(x[i]) > fabs(x[big])) big = i;
    if (x[big] < 0)
        for (int i = 0; i < dim; ++i) x[i] = -x[i];
}

/* Start `slot`'s vector (float or double results) made unit in double, and for even
 * order given its canonical sign: the vector a pair is compared and reported by. */
TK_HD static inline void tk_merge_unit(int dim, int order, int dbl, const void *xs, size_t slot, double *x)
{
    double norm2 = 0;
    for (int i = 0; i < dim; ++i) {
        x[i] = dbl ? ((const double *)xs)[slot * dim + i] : (double)((const float *)xs)[slot * dim + i];
        norm2 += x[i] * x[i];
    }
    for (int i = 0; i < dim; ++i) x[i] /= sqrt(norm2);
    if (order % 2 == 0) tk_merge_canonical_sign(dim, x);
}

TK_HD static inline double tk_merge_distance(int dim, const double *a, const double *b, double sign)
{
    double d2 = 0;
    for (int i = 0; i < dim; ++i) d2 += (a[i] - sign * b[i]) * (a[i] - sign * b[i]);
    return sqrt(d2);
}

/* Whether unit vectors x and y are one pair: within merge_tol, or for even order x within
 * merge_tol of -y. */
TK_HD static inline int tk_merge_same(int dim, int order, const double *x, const double *y, double merge_tol)
{
    double d = tk_merge_distance(dim, x, y, 1.0);
    if (order % 2 == 0) d = fmin(d, tk_merge_distance(dim, x, y, -1.0));
    return d <= merge_tol;
}

/* The merge tolerance a precision gets for merge_tol <= 0, and the relative tolerance of
 * the stability test. */
TK_HD static inline double tk_merge_default_tol(int dbl) { return dbl ? 1e-5 : 1e-3; }
TK_HD static inline double tk_merge_stability_tol(int dbl) { return dbl ? 1e-8 : 1e-4; }

/* Stability of eigenpair (lambda, x) from m2 = A x^(m-2) (dim x dim, destroyed): on the
 * sphere the Hessian of A x^m at an eigenpair is, up to the factor m,
 * U^T ((m-1) A x^(m-2) - lambda I) U with U a basis of the tangent space.  work holds
 * 2 dim^2 + dim values, eig dim. */
TK_HD static inline tk_stability tk_merge_stability_of_m2(int order, int dim, double *m2, const double *x,
                                                          double lambda, double rel_tol, double *work, double *eig)
{
    tk_k_tangent_eigenvalues_d(dim, m2, x, work, eig);
    double scale = fabs(lambda);
    for (int i = 0; i < dim - 1; ++i) {
        eig[i] = (order - 1) * eig[i] - lambda;
        scale = fmax(scale, fabs(eig[i] + lambda));
    }
    double threshold = rel_tol * fmax(scale, 1e-300);
    int negative = 0, positive = 0;
    for (int i = 0; i < dim - 1; ++i) {
        negative += eig[i] < -threshold;
        positive += eig[i] > threshold;
    }
    if (negative == dim - 1) return TK_STABILITY_MAX;
    if (positive == dim - 1) return TK_STABILITY_MIN;
    if (negative && positive) return TK_STABILITY_SADDLE;
    return TK_STABILITY_DEGENERATE;
}

#endif
