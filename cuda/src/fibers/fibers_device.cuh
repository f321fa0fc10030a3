/* The CUDA peak finder's device math: a voxel's polynomial and its derivatives, the Newton
 * code on it (fibers_newton.h, shared with the CPU), and the merge of a voxel's maxima.  No
 * kernels and no launch choices here (fibers_kernels.cuh, fibers_tuning.h). */
#ifndef TK_FIBERS_DEVICE_CUH
#define TK_FIBERS_DEVICE_CUH

#include <cuda_runtime.h>

#include <math.h>

#include "fibers_internal.h"

/* ---- the voxel's polynomial ------------------------------------------------------ */

/* f(x) = sum_i c_i x^a y^b z^c, monomials ordered by z power c, then y power b (see
 * tk_fibers_monomial_map).  Offset of the first monomial of z power c: */
__host__ __device__ constexpr int poly_offset(int m, int c) { return c * (m + 1) - c * (c - 1) / 2; }

template <int M> struct Poly {
    const double *c; /* shared memory: every lane of the warp reads the same entry */
};

/* f, its gradient and its Hessian at x, by Horner chains that carry the derivatives along:
 * in x over each z power's bivariate part (its y-derivatives through the y powers of the
 * coefficients), then in z over the z powers.  About thirty live doubles, whatever M.
 * Not inlined: inlined, the compiler hoists the coefficients and their scalings out of
 * the Newton loop into registers and spills. */
template <int M> __device__ __noinline__ void poly_derivs(const Poly<M> *t, const double *x, double *y, double *h)
{
    const double X = x[0], Y = x[1], Z = x[2];
    double f0 = 0, f1 = 0, f2 = 0, gx0 = 0, gx1 = 0, gy0 = 0, gy1 = 0, hxx = 0, hxy = 0, hyy = 0;
#pragma unroll
    for (int c = M; c >= 0; --c) {
        const double *k = t->c + poly_offset(M, c);
        double r0 = 0, r1 = 0, r2 = 0, s0 = 0, s1 = 0, u0 = 0, yb = 1, yb1 = 0, yb2 = 0;
#pragma unroll
        for (int b = 0; b <= M - c; ++b) {
            const double kb = k[b];
            r2 = r2 * X + 2 * r1, r1 = r1 * X + r0, r0 = r0 * X + kb * yb;
            s1 = s1 * X + s0, s0 = s0 * X + kb * b * yb1;
            u0 = u0 * X + kb * (b * (b - 1)) * yb2;
            yb2 = yb1, yb1 = yb, yb *= Y;
        }
        f2 = f2 * Z + 2 * f1, f1 = f1 * Z + f0, f0 = f0 * Z + r0;
        gx1 = gx1 * Z + gx0, gx0 = gx0 * Z + r1;
        gy1 = gy1 * Z + gy0, gy0 = gy0 * Z + s0;
        hxx = hxx * Z + r2, hxy = hxy * Z + s1, hyy = hyy * Z + u0;
    }
    /* y = grad f / M;  h = Hessian f / (M (M - 1)) */
    const double g = 1.0 / M, q = 1.0 / (M * (M - 1));
    y[0] = gx0 * g, y[1] = gy0 * g, y[2] = f1 * g;
    h[0] = hxx * q, h[1] = h[3] = hxy * q, h[2] = h[6] = gx1 * q;
    h[4] = hyy * q, h[5] = h[7] = gy1 * q, h[8] = f2 * q;
}

/* f at x in double (the backtracking test). */
template <int M> __device__ __noinline__ double poly_value(const Poly<M> *t, const double *x)
{
    double p = 0;
#pragma unroll
    for (int c = M; c >= 0; --c) {
        const double *k = t->c + poly_offset(M, c);
        double s = 0, yb = 1;
#pragma unroll
        for (int b = 0; b <= M - c; ++b) s = s * x[0] + k[b] * yb, yb *= x[1];
        p = p * x[2] + s;
    }
    return p;
}

/* f at any direction, in float (a climb's start, against its grid value): Horner in x with y
 * powers inside each z power, then Horner in z. */
template <int M> __device__ __forceinline__ float poly_value_f(const float *cf, float x, float y, float z)
{
    float py[M + 1];
    py[0] = 1.f;
#pragma unroll
    for (int i = 1; i <= M; ++i) py[i] = py[i - 1] * y;
    float p = 0.f;
#pragma unroll
    for (int c = M; c >= 0; --c) {
        const int o = poly_offset(M, c);
        float s = cf[o];
#pragma unroll
        for (int b = 1; b <= M - c; ++b) s = fmaf(s, x, cf[o + b] * py[b]);
        p = fmaf(p, z, s);
    }
    return p;
}

/* The monomial index (the order above) of t^r u^q times the pivot's (M - r - q)th power, where
 * the pivot is coordinate Piv (0 x, 1 y, 2 z) and t, u are the other two in order. */
template <int M, int Piv> __host__ __device__ constexpr int pivot_monomial(int r, int q)
{
    return Piv == 0 ? poly_offset(M, q) + r : Piv == 1 ? poly_offset(M, q) + (M - r - q) : poly_offset(M, M - r - q) + q;
}

/* f at a grid direction divided through by its largest coordinate p (the pivot, coordinate
 * Piv), in float: f(x) = p^M R(t, u) with t, u the other coordinates over p, both in [-1, 1],
 * and R a polynomial of degree M in them, one multiply-add a coefficient (Horner in t inside
 * Horner in u) where the homogeneous Horner takes a multiply and a multiply-add; pm = p^M.
 * Its float rounding matches the homogeneous Horner's (scripts/fibers_horner_rounding.py: at
 * lmax 4 to 16, largest errors 3e-7 to 1e-6 of the largest value against 2e-7 to 7e-7). */
template <int M, int Piv> __device__ __forceinline__ float poly_value_pivot(const float *cf, float t, float u, float pm)
{
    float acc = 0.f;
#pragma unroll
    for (int q = M; q >= 0; --q) {
        float s = cf[pivot_monomial<M, Piv>(M - q, q)];
#pragma unroll
        for (int r = M - q - 1; r >= 0; --r) s = fmaf(s, t, cf[pivot_monomial<M, Piv>(r, q)]);
        acc = q == M ? s : fmaf(acc, u, s);
    }
    return acc * pm;
}

#define TK_NEWTON_FN template <int M> static __device__
#define TK_NEWTON_UTIL static __device__ __forceinline__
#define TK_NEWTON_CTX Poly<M>
#define TK_NEWTON_SFX(name) name##_gpu
#define TK_NEWTON_ORDER(t) (M)
#define TK_NEWTON_DERIVS(t, x, y, h) poly_derivs<M>(t, x, y, h)
#define TK_NEWTON_VALUE(t, x) poly_value<M>(t, x)
#include "fibers_newton.h"

/* x and -x are one fiber: the sign that makes x's largest-magnitude entry positive, as on
 * the CPU. */
__device__ __forceinline__ double fiber_sign(const double *x)
{
    return x[tk_fibers_largest_axis(x)] < 0 ? -1.0 : 1.0;
}

/* Merge duplicates and sort by amplitude, in place over one voxel's candidates; returns
 * the number of distinct maxima.  Candidates keep the grid's index order, as on the CPU. */
__device__ static int merge_maxima(double *dir, double *amp, int count)
{
    int found = 0;
    for (int c = 0; c < count; ++c) {
        const double a = amp[c], x0 = dir[c * 3], x1 = dir[c * 3 + 1], x2 = dir[c * 3 + 2];
        if (isnan(a)) continue;
        bool dup = false;
        for (int f = 0; f < found && !dup; ++f)
            dup = fabs(dir[f * 3] * x0 + dir[f * 3 + 1] * x1 + dir[f * 3 + 2] * x2) > 1.0 - 1e-10;
        if (dup) continue;
        int pos = found++;
        while (pos > 0 && amp[pos - 1] < a) {
            amp[pos] = amp[pos - 1];
            for (int i = 0; i < 3; ++i) dir[pos * 3 + i] = dir[(pos - 1) * 3 + i];
            --pos;
        }
        amp[pos] = a, dir[pos * 3] = x0, dir[pos * 3 + 1] = x1, dir[pos * 3 + 2] = x2;
    }
    return found;
}

#endif
