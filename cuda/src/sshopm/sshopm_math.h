/* Per-start SS-HOPM building blocks shared by the CPU and CUDA backends (the device
 * layer: sshopm_kernels.cuh builds the GPU kernels on it, sshopm_cpu_body.h the CPU loops).
 * No include guard: included once per precision between common/precision_<p>.h and
 * common/precision_end.h (sshopm_device.h does both).  Everything here is TK_HD static
 * inline and allocation free.  The generated unrolled kernels of the same precision
 * come with it, and a file that compiles a per-precision text of its own on top names it
 * in TK_SSHOPM_BODY. */
#include "common/tk_hd.h"

/* Prescaled table of one tensor: c[j*K1 + t] = A[map[j*K1 + t]] * mult1[t], so that
 * (A x^(m-1))_j = sum_t c[j*K1 + t] x^t over the degree-(m-1) classes t. */
TK_HD static inline void TK_SFX(tk_k_prescale)(int dim, int k1, const unsigned *map, const double *mult1,
                                               const TK_REAL *a, TK_REAL *c)
{
    for (int j = 0; j < dim; ++j)
        for (int t = 0; t < k1; ++t) c[j * k1 + t] = a[map[j * k1 + t]] * (TK_REAL)mult1[t];
}

/* General A x^(m-1) from the prescaled table; idx1 holds each class's m-1 indices. */
TK_HD static inline void TK_SFX(tk_k_axm1_general)(int order, int dim, int k1, const unsigned char *idx1,
                                                   const TK_REAL *c, const TK_REAL *x, TK_REAL *y)
{
    for (int j = 0; j < dim; ++j) y[j] = 0;
    for (int t = 0; t < k1; ++t) {
        const unsigned char *ix = idx1 + t * (order - 1);
        TK_REAL mono = x[ix[0]];
        for (int q = 1; q < order - 1; ++q) mono *= x[ix[q]];
        for (int j = 0; j < dim; ++j) y[j] = TK_FMA(c[j * k1 + t], mono, y[j]);
    }
}

TK_HD static inline TK_REAL TK_SFX(tk_k_dot)(int dim, const TK_REAL *a, const TK_REAL *b)
{
    TK_REAL s = 0;
    for (int i = 0; i < dim; ++i) s = TK_FMA(a[i], b[i], s);
    return s;
}

/* The shifted power step x_new = sign (y + alpha x) / |...|.  Returns |x_new - x|^2
 * (squared: callers compare with tol^2 and save a square root per iteration), or -1
 * when the step is zero or not finite (the start cannot go on). */
TK_HD static inline TK_REAL TK_SFX(tk_k_step)(int dim, TK_REAL sign, TK_REAL alpha, const TK_REAL *x,
                                              const TK_REAL *y, TK_REAL *x_new)
{
    TK_REAL norm2 = 0;
    for (int i = 0; i < dim; ++i) {
        x_new[i] = sign * TK_FMA(alpha, x[i], y[i]);
        norm2 = TK_FMA(x_new[i], x_new[i], norm2);
    }
    if (!(norm2 > 0) || !(norm2 < (TK_REAL)INFINITY)) return -1;
    TK_REAL inv = TK_RSQRT(norm2), d2 = 0;
    for (int i = 0; i < dim; ++i) {
        x_new[i] *= inv;
        TK_REAL d = x_new[i] - x[i];
        d2 = TK_FMA(d, d, d2);
    }
    return d2;
}

/* A x^(m-2) (dim x dim, row major) by the index walk over the packed entries. */
TK_HD static inline void TK_SFX(tk_k_axm2)(int order, int dim, const TK_REAL *a, const TK_REAL *x, TK_REAL *out)
{
    int index[TK_KERNEL_MAX_ORDER];
    for (int e = 0; e < dim * dim; ++e) out[e] = 0;
    for (int p = 0; p < order; ++p) index[p] = 0;
    int k = 0;
    for (;;) {
        /* multiplicity m!/prod(k_i!) of the class, by runs of equal indices */
        TK_REAL mult = 1;
        int run = 0;
        for (int p = 0; p < order; ++p) {
            run = (p > 0 && index[p] == index[p - 1]) ? run + 1 : 1;
            mult = mult * (TK_REAL)(p + 1) / (TK_REAL)run;
        }
        for (int p = 0; p < order; ++p) {
            if (p > 0 && index[p] == index[p - 1]) continue;
            for (int q = p + 1; q < order; ++q) {
                if (q > p + 1 && index[q] == index[q - 1]) continue;
                int i = index[p], j = index[q], ki = 0, kj = 0;
                TK_REAL term = a[k];
                for (int r = 0; r < order; ++r) {
                    ki += index[r] == i;
                    kj += index[r] == j;
                    if (r != p && r != q) term *= x[index[r]];
                }
                term *= mult * (TK_REAL)ki * (TK_REAL)(kj - (i == j)) / ((TK_REAL)order * (TK_REAL)(order - 1));
                out[i * dim + j] += term;
                if (i != j) out[j * dim + i] += term;
            }
        }
        ++k;
        int p = order - 1;
        while (p >= 0 && index[p] == dim - 1) --p;
        if (p < 0) break;
        int v = index[p] + 1;
        for (int q = p; q < order; ++q) index[q] = v;
    }
}

/* Eigenvalues of a symmetric s x s matrix (row major, destroyed) by cyclic Jacobi. */
TK_HD static inline void TK_SFX(tk_k_sym_eigenvalues)(int s, TK_REAL *mat, TK_REAL *eig)
{
    for (int sweep = 0; sweep < 60; ++sweep) {
        TK_REAL off = 0, diag = 0;
        for (int i = 0; i < s; ++i) {
            diag += mat[i * s + i] * mat[i * s + i];
            for (int j = i + 1; j < s; ++j) off += mat[i * s + j] * mat[i * s + j];
        }
        if (off <= (TK_REAL)1e-30 * diag || off == 0) break;
        for (int p = 0; p < s; ++p)
            for (int q = p + 1; q < s; ++q) {
                TK_REAL apq = mat[p * s + q];
                if (apq == 0) continue;
                TK_REAL theta = (mat[q * s + q] - mat[p * s + p]) / (2 * apq);
                TK_REAL at = theta >= 0 ? theta : -theta;
                TK_REAL t = at > (TK_REAL)1e15 ? 1 / (2 * theta)
                                               : (theta >= 0 ? 1 : -1) / (at + TK_SQRT(theta * theta + 1));
                TK_REAL cs = 1 / TK_SQRT(t * t + 1), sn = t * cs;
                for (int r = 0; r < s; ++r) {
                    TK_REAL rp = mat[r * s + p], rq = mat[r * s + q];
                    mat[r * s + p] = cs * rp - sn * rq;
                    mat[r * s + q] = sn * rp + cs * rq;
                }
                for (int r = 0; r < s; ++r) {
                    TK_REAL pr = mat[p * s + r], qr = mat[q * s + r];
                    mat[p * s + r] = cs * pr - sn * qr;
                    mat[q * s + r] = sn * pr + cs * qr;
                }
            }
    }
    for (int i = 0; i < s; ++i) eig[i] = mat[i * s + i];
}

/* Eigenvalues of U^T M U, U an orthonormal basis of the tangent space at unit x:
 * the last dim-1 rows/columns of H M H for the Householder H that maps e_0 to +-x.
 * work holds 2 dim^2 + dim values; eig gets dim-1 values. */
TK_HD static inline void TK_SFX(tk_k_tangent_eigenvalues)(int dim, const TK_REAL *m, const TK_REAL *x,
                                                          TK_REAL *work, TK_REAL *eig)
{
    TK_REAL *v = work, *hm = work + dim, *t = work + dim + dim * dim;
    for (int i = 0; i < dim; ++i) v[i] = x[i];
    v[0] += x[0] >= 0 ? 1 : -1;
    TK_REAL vv = 0;
    for (int i = 0; i < dim; ++i) vv += v[i] * v[i];
    TK_REAL beta = 2 / vv;
    /* hm = H M = M - beta v (v^T M) */
    for (int j = 0; j < dim; ++j) {
        TK_REAL s = 0;
        for (int i = 0; i < dim; ++i) s += v[i] * m[i * dim + j];
        for (int i = 0; i < dim; ++i) hm[i * dim + j] = m[i * dim + j] - beta * v[i] * s;
    }
    /* (H M) H = hm - beta (hm v) v^T; keep rows/cols 1.. into t */
    int s1 = dim - 1;
    for (int i = 1; i < dim; ++i) {
        TK_REAL s = 0;
        for (int j = 0; j < dim; ++j) s += hm[i * dim + j] * v[j];
        for (int j = 1; j < dim; ++j) t[(i - 1) * s1 + (j - 1)] = hm[i * dim + j] - beta * s * v[j];
    }
    /* symmetrize against rounding */
    for (int i = 0; i < s1; ++i)
        for (int j = i + 1; j < s1; ++j) {
            TK_REAL avg = (t[i * s1 + j] + t[j * s1 + i]) / 2;
            t[i * s1 + j] = t[j * s1 + i] = avg;
        }
    TK_SFX(tk_k_sym_eigenvalues)(s1, t, eig);
}

/* The adaptive shift: the smallest alpha >= 0 (maximize) that makes the shifted
 * function A x^m + alpha |x|^m locally convex at x, plus a margin tau: by Kolda and
 * Mayo's convexity bound, alpha > -(m-1) times the smallest eigenvalue of A x^(m-2).
 * Convexity on the whole space, not only the tangent space, keeps lambda + alpha > 0,
 * so the step always climbs; minimizing is the mirror image.  work: 3 dim^2 + 2 dim. */
TK_HD static inline TK_REAL TK_SFX(tk_k_adaptive_shift)(int order, int dim, const TK_REAL *a, const TK_REAL *x,
                                                        int maximize, TK_REAL *work)
{
    const TK_REAL tau = (TK_REAL)1e-6;
    TK_REAL *m2 = work, *eig = work + dim * dim;
    TK_SFX(tk_k_axm2)(order, dim, a, x, m2);
    TK_SFX(tk_k_sym_eigenvalues)(dim, m2, eig);
    TK_REAL lo = eig[0], hi = eig[0];
    for (int i = 1; i < dim; ++i) {
        lo = eig[i] < lo ? eig[i] : lo;
        hi = eig[i] > hi ? eig[i] : hi;
    }
    TK_REAL scale = (TK_REAL)(order - 1);
    if (maximize) {
        TK_REAL alpha = tau - scale * lo;
        return alpha > 0 ? alpha : 0;
    }
    TK_REAL alpha = -tau - scale * hi;
    return alpha < 0 ? alpha : 0;
}

#include "sshopm/sshopm_unrolled_gen.h"
#ifdef TK_SSHOPM_BODY
#include TK_SSHOPM_BODY
#endif
