/* The device layer of the CUDA eigensolver: the per-matrix solver of eig_body.h (the CPU's
 * own text) compiled for lanes of the GPU in both precisions, bound per precision in Eig<R>,
 * and the GPU's own QR iteration (eig_cuda_hqr.cuh) with the values-only solve built on it.
 * The kernels are eig_kernels.cuh's.  Included once, by eig_cuda.cu. */
#ifndef TK_EIG_DEVICE_CUH
#define TK_EIG_DEVICE_CUH

#include <math.h>

#include "common/tk_hd.h"
#include "eig_internal.h"

/* host-device because the shared body is; it only ever runs on the device.  A group
 * within a warp waits for its own lanes only: the other groups of the warp work on
 * other matrices along other paths. */
__host__ __device__ __forceinline__ void tk_eig_sync(int stride, unsigned mask)
{
#ifdef __CUDA_ARCH__
    if (stride > 32) __syncthreads();
    else if (stride > 1) __syncwarp(mask);
#else
    (void)stride, (void)mask;
#endif
}

#define EIG_LANE(c) ((c)->lane)
#define EIG_STRIDE(c) ((c)->stride)
#define EIG_ES(c) ((c)->es)
#define EIG_SYNC(c) tk_eig_sync((c)->stride, (c)->mask)

#define EIG_DOUBLE 1
#include "eig_precision.h"
#include "eig_body.h"
#undef EIG_DOUBLE
#define EIG_DOUBLE 0
#include "eig_precision.h"
#include "eig_body.h"

template <typename R> struct Eig;
#define TK_EIG_BIND(R, S)                                                                                      \
    template <> struct Eig<R> {                                                                                \
        typedef eig_ctx_##S ctx;                                                                               \
        static __device__ int solve(ctx *c, const R *a, R *v, R *x, int bal, int it)                           \
        {                                                                                                      \
            return eig_solve_one_##S(c, a, v, x, bal, it);                                                     \
        }                                                                                                      \
        static __device__ int prepare(ctx *c, const R *a, int bal, int *expo, int *ilo, int *ihi)              \
        {                                                                                                      \
            return eig_prepare_##S(c, a, bal, expo, ilo, ihi);                                                 \
        }                                                                                                      \
        static __device__ void hessenberg(ctx *c, int ilo, int ihi) { eig_hessenberg_##S(c, ilo, ihi); }      \
        static __device__ void sort(ctx *c) { eig_sort_##S(c); }                                               \
        static __device__ R scale2(R x, int e) { return eig_scale2_##S(x, e); }                                \
        static __device__ void lanv2(R *a, R *b, R *c, R *d, R *r1r, R *r1i, R *r2r, R *r2i, R *cs, R *sn)     \
        {                                                                                                      \
            eig_lanv2_##S(a, b, c, d, r1r, r1i, r2r, r2i, cs, sn);                                             \
        }                                                                                                      \
        static __device__ __forceinline__ void double_shift(R h11, R h12, R h21, R h22, R rt[4])               \
        {                                                                                                      \
            eig_double_shift_##S(h11, h12, h21, h22, rt);                                                      \
        }                                                                                                      \
        static __device__ __forceinline__ void shift_column(const R rt[4], R a, R b, R c, R d, R e, R v[3])    \
        {                                                                                                      \
            eig_shift_column_##S(rt, a, b, c, d, e, v);                                                        \
        }                                                                                                      \
    };
TK_EIG_BIND(double, d)
TK_EIG_BIND(float, f)
#undef TK_EIG_BIND
#include "eig_cuda_hqr.cuh"

/* Eigenvalues only, by lanes of one warp (stride <= 32): eig_solve_one's steps with
 * the GPU's own QR iteration (eig_cuda_hqr.cuh). */
template <typename R>
__device__ int eig_gpu_solve_values(typename Eig<R>::ctx *c, const R *a, R *values, int balance, int max_iter)
{
    const int n = c->n;
    int expo = 0, ilo = 0, ihi = n - 1;
    int status = Eig<R>::prepare(c, a, balance, &expo, &ilo, &ihi);
    if (!status) {
        Eig<R>::hessenberg(c, ilo, ihi);
        if (eig_gpu_hqr_values<R>(c, ilo, ihi, max_iter)) status = 1;
    }
    if (status) {
        for (int e = c->lane; e < 2 * n; e += c->stride) values[e] = (R)NAN;
        return status;
    }
    if (c->lane == 0) Eig<R>::sort(c);
    if (c->stride > 1) __syncwarp(c->mask);
    const int es = c->es;
    for (int s = c->lane; s < n; s += c->stride) {
        values[2 * s] = Eig<R>::scale2(c->wr[s * es], expo);
        values[2 * s + 1] = Eig<R>::scale2(c->wi[s * es], expo);
    }
    return 0;
}

#endif
