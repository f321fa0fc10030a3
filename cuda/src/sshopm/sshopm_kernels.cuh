/* The SS-HOPM kernels (the kernel layer): the per-start math of sshopm_math.h (the device
 * layer, instantiated by sshopm_device.h) run by
 *   general:  the seed's design: one block per tensor, threads over its starts, the
 *             prescaled tensor in shared memory, the index tables in constant memory;
 *   unrolled: one thread per (tensor, start); the tensor's prescaled table lives in
 *             registers and A x^(m-1) is the generated straight-line code, so an
 *             iteration is a few dozen FMAs with no memory traffic at all.
 * Launch shapes come from a policy (sshopm_tuning.h); the launches, buffers and errors are
 * sshopm_cuda.cu's.  Included by sshopm_cuda.cu alone (it defines constant memory). */
#ifndef TK_SSHOPM_KERNELS_CUH
#define TK_SSHOPM_KERNELS_CUH

#include "common/tk_hd.h"
#include "sshopm_device.h"

/* ---- tables in constant memory ------------------------------------------------ */

#define TK_CONST_IDX1 16384
#define TK_CONST_MAP 6144
#define TK_CONST_MULT 1024
__constant__ unsigned char c_idx1[TK_CONST_IDX1];
__constant__ unsigned c_map[TK_CONST_MAP];
__constant__ double c_mult1[TK_CONST_MULT];

/* ---- per-precision dispatch of the shared building blocks ---------------------- */

template <typename R> struct K;
#define TK_BIND(R, SFX)                                                                                          \
    template <> struct K<R> {                                                                                    \
        static __device__ R dot(int n, const R *a, const R *b) { return tk_k_dot##SFX(n, a, b); }                 \
        static __device__ R step(int n, R sign, R alpha, const R *x, const R *y, R *xn)                         \
        {                                                                                                        \
            return tk_k_step##SFX(n, sign, alpha, x, y, xn);                                                    \
        }                                                                                                        \
        static __device__ R shift(int m, int n, const R *a, const R *x, int maximize, R *work)                  \
        {                                                                                                        \
            return tk_k_adaptive_shift##SFX(m, n, a, x, maximize, work);                                        \
        }                                                                                                        \
        static __device__ void axm1_general(int m, int n, int k1, const unsigned char *idx1, const R *c,         \
                                            const R *x, R *y)                                                    \
        {                                                                                                        \
            tk_k_axm1_general##SFX(m, n, k1, idx1, c, x, y);                                                     \
        }                                                                                                        \
    };
TK_BIND(float, _f)
TK_BIND(double, _d)

/* The generated straight-line kernels for (order, 3). */
template <int M, typename R> struct Unrolled;
#define TK_UNROLLED(M, R, SFX)                                                                                    \
    template <> struct Unrolled<M, R> {                                                                           \
        static constexpr int k1 = TK_UNROLLED_K1_##M##_3;                                                         \
        static __device__ void prescale(const R *a, R *c) { tk_unrolled_prescale_##M##_3##SFX(a, c); }           \
        static __device__ void axm1(const R *c, const R *x, R *y)                                                 \
        {                                                                                                         \
            tk_unrolled_axm1_##M##_3##SFX(c, x[0], x[1], x[2], &y[0], &y[1], &y[2]);                              \
        }                                                                                                         \
    };
TK_UNROLLED(4, float, _f)
TK_UNROLLED(6, float, _f)
TK_UNROLLED(8, float, _f)
TK_UNROLLED(4, double, _d)
TK_UNROLLED(6, double, _d)
TK_UNROLLED(8, double, _d)

template <typename R> struct Args {
    const R *packed;     /* T * K */
    const R *starts;     /* S * n */
    R *lambda;           /* T * S */
    R *x;                /* T * S * n */
    int *iterations;     /* T * S */
    unsigned char *converged;
    size_t num_tensors;
    int order, dim, k, k1, num_starts, max_iter, fixed_iterations, maximize;
    R shift, tol2; /* tol^2: steps report squared distances */
};

/* Record one start's result. */
template <typename R>
__device__ __forceinline__ void store(const Args<R> &p, size_t slot, int n, const R *x, R lambda, int it, R moved2)
{
    p.lambda[slot] = lambda;
    for (int i = 0; i < n; ++i) p.x[slot * n + i] = x[i];
    p.iterations[slot] = it;
    p.converged[slot] = moved2 >= 0 && moved2 <= p.tol2;
}

/* ---- unrolled: one thread per (tensor, start), everything in registers --------- */

template <class Policy, int M, bool ADAPTIVE, typename R>
__global__ void __launch_bounds__(Policy::unrolled_block) sshopm_unrolled_kernel(Args<R> p)
{
    constexpr int N = 3, KK = (M + 1) * (M + 2) / 2, K1 = Unrolled<M, R>::k1;
    const size_t g = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= p.num_tensors * (size_t)p.num_starts) return;
    const size_t t = g / (size_t)p.num_starts;
    const int s = (int)(g - t * (size_t)p.num_starts);
    R a[KK], c[N * K1];
#pragma unroll
    for (int e = 0; e < KK; ++e) a[e] = __ldg(p.packed + t * KK + e);
    Unrolled<M, R>::prescale(a, c);
    R x[N], y[N], xn[N];
#pragma unroll
    for (int i = 0; i < N; ++i) x[i] = __ldg(p.starts + s * N + i);
    Unrolled<M, R>::axm1(c, x, y);
    R lambda = K<R>::dot(N, x, y), moved2 = (R)INFINITY;
    const R sign = p.maximize ? 1 : -1;
    int it = 0;
    while (it < p.max_iter) {
        R alpha = p.shift;
        if (ADAPTIVE) {
            R work[3 * N * N + 2 * N];
            alpha = K<R>::shift(M, N, a, x, p.maximize, work);
        }
        moved2 = K<R>::step(N, sign, alpha, x, y, xn);
        if (moved2 < 0) break;
        ++it;
#pragma unroll
        for (int i = 0; i < N; ++i) x[i] = xn[i];
        Unrolled<M, R>::axm1(c, x, y);
        lambda = K<R>::dot(N, x, y);
        if (!p.fixed_iterations && moved2 <= p.tol2) break;
    }
    store(p, g, N, x, lambda, it, moved2);
}

/* ---- general: one block per tensor (the seed's design) ------------------------- */

template <bool ADAPTIVE, typename R>
__global__ void sshopm_general_kernel(Args<R> p, int stride)
{
    extern __shared__ __align__(16) unsigned char smem[];
    const int n = p.dim, k1 = p.k1;
    R *c = (R *)smem, *a = c + n * k1;
    /* each thread's x, y, x_new; an odd stride keeps threads on distinct banks */
    R *mine = a + p.k + threadIdx.x * stride;
    R *x = mine, *y = mine + n, *xn = mine + 2 * n;
    const R sign = p.maximize ? 1 : -1;
    for (size_t t = blockIdx.x; t < p.num_tensors; t += gridDim.x) {
        for (int e = threadIdx.x; e < p.k; e += blockDim.x) a[e] = p.packed[t * p.k + e];
        __syncthreads();
        for (int e = threadIdx.x; e < n * k1; e += blockDim.x) c[e] = a[c_map[e]] * (R)c_mult1[e % k1];
        __syncthreads();
        for (int s = threadIdx.x; s < p.num_starts; s += blockDim.x) {
            for (int i = 0; i < n; ++i) x[i] = p.starts[s * n + i];
            K<R>::axm1_general(p.order, n, k1, c_idx1, c, x, y);
            R lambda = K<R>::dot(n, x, y), moved2 = (R)INFINITY;
            int it = 0;
            while (it < p.max_iter) {
                R alpha = p.shift;
                if (ADAPTIVE) {
                    R work[3 * TK_KERNEL_MAX_DIM * TK_KERNEL_MAX_DIM + 2 * TK_KERNEL_MAX_DIM];
                    alpha = K<R>::shift(p.order, n, a, x, p.maximize, work);
                }
                moved2 = K<R>::step(n, sign, alpha, x, y, xn);
                if (moved2 < 0) break;
                ++it;
                for (int i = 0; i < n; ++i) x[i] = xn[i];
                K<R>::axm1_general(p.order, n, k1, c_idx1, c, x, y);
                lambda = K<R>::dot(n, x, y);
                if (!p.fixed_iterations && moved2 <= p.tol2) break;
            }
            store(p, t * (size_t)p.num_starts + s, n, x, lambda, it, moved2);
        }
        __syncthreads();
    }
}

#endif
