/* CUDA backend of SS-HOPM.
 *
 * general:  the seed's design: one block per tensor, threads over its starts, the
 *           prescaled tensor in shared memory, the index tables in constant memory.
 * unrolled: one thread per (tensor, start); the tensor's prescaled table lives in
 *           registers and A x^(m-1) is the generated straight-line code, so an
 *           iteration is a few dozen FMAs with no memory traffic at all.
 */
#include <cuda_runtime.h>

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cuda_memory.h"
#include "sshopm_internal.h"
#include "common/tk_hd.h"

#define TK_REAL float
#define TK_SFX(name) name##_f
#define TK_FMA fmaf
#define TK_SQRT sqrtf
#define TK_RSQRT rsqrtf
#include "sshopm_kernels.h"
#include "sshopm/sshopm_unrolled_gen.h"
#undef TK_REAL
#undef TK_SFX
#undef TK_FMA
#undef TK_SQRT
#undef TK_RSQRT

#define TK_REAL double
#define TK_SFX(name) name##_d
#define TK_FMA fma
#define TK_SQRT sqrt
#define TK_RSQRT rsqrt
#include "sshopm_kernels.h"
#include "sshopm/sshopm_unrolled_gen.h"
#undef TK_REAL
#undef TK_SFX
#undef TK_FMA
#undef TK_SQRT
#undef TK_RSQRT

/* ---- tables in constant memory ------------------------------------------------ */

#define TK_CONST_IDX1 16384
#define TK_CONST_MAP 6144
#define TK_CONST_MULT 1024
__constant__ unsigned char c_idx1[TK_CONST_IDX1];
__constant__ unsigned c_map[TK_CONST_MAP];
__constant__ double c_mult1[TK_CONST_MULT];

/* Constant memory is per process: solves from several host threads take turns. */
static pthread_mutex_t cuda_solve_lock = PTHREAD_MUTEX_INITIALIZER;

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

template <int M, bool ADAPTIVE, typename R>
__global__ void __launch_bounds__(128) sshopm_unrolled_kernel(Args<R> p)
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

/* ---- host side ----------------------------------------------------------------- */

#define CUDA_TRY(call)                                                                                             \
    do {                                                                                                           \
        cudaError_t err_ = (call);                                                                                 \
        if (err_ != cudaSuccess) {                                                                                 \
            status = tk_set_error(err_ == cudaErrorMemoryAllocation ? TK_ERR_MEMORY : TK_ERR_CUDA,                 \
                                  "SS-HOPM on CUDA: %s failed: %s", #call, cudaGetErrorString(err_));              \
            goto cleanup;                                                                                          \
        }                                                                                                          \
    } while (0)

template <typename R> static cudaError_t launch(const tk_sshopm_options *o, const Args<R> &p, int sm_count)
{
    const int adaptive = o->shift_mode == TK_SHIFT_ADAPTIVE;
    if (o->impl == TK_IMPL_UNROLLED) {
        size_t threads = p.num_tensors * (size_t)p.num_starts;
        unsigned blocks = (unsigned)((threads + 127) / 128);
#define TK_LAUNCH_UNROLLED(M)                                                                                       \
    if (o->order == M) {                                                                                            \
        if (adaptive) sshopm_unrolled_kernel<M, true, R><<<blocks, 128>>>(p);                                       \
        else sshopm_unrolled_kernel<M, false, R><<<blocks, 128>>>(p);                                               \
        return cudaGetLastError();                                                                                  \
    }
        TK_LAUNCH_UNROLLED(4)
        TK_LAUNCH_UNROLLED(6)
        TK_LAUNCH_UNROLLED(8)
#undef TK_LAUNCH_UNROLLED
        return cudaErrorInvalidValue;
    }
    int block = p.num_starts >= 128 ? 128 : ((p.num_starts + 31) / 32) * 32;
    int stride = 3 * p.dim | 1;
    size_t shared = sizeof(R) * ((size_t)p.dim * p.k1 + p.k + (size_t)stride * block);
    size_t grid = p.num_tensors < (size_t)sm_count * 64 ? p.num_tensors : (size_t)sm_count * 64;
    if (grid == 0) return cudaSuccess;
    if (adaptive) sshopm_general_kernel<true, R><<<(unsigned)grid, block, shared>>>(p, stride);
    else sshopm_general_kernel<false, R><<<(unsigned)grid, block, shared>>>(p, stride);
    return cudaGetLastError();
}

template <typename R>
static tk_status solve(const tk_sshopm_options *o, const tk_sshopm_tables *tb, size_t T, const R *packed,
                       const R *starts, tk_sshopm_starts_result *out, tk_timing *timing)
{
    tk_status status = TK_OK;
    const int n = o->dim, S = o->num_starts;
    const size_t k = tb->k;
    R *d_packed = NULL, *d_starts = NULL, *d_lambda = NULL, *d_x = NULL;
    int *d_iter = NULL;
    unsigned char *d_conv = NULL;
    cudaEvent_t ev0 = NULL, ev1 = NULL;
    size_t free_bytes = 0, total_bytes = 0, chunk = 0;
    int sm_count = 0;
    float kernel_ms = 0;
    Args<R> p;

    if (o->impl == TK_IMPL_GENERAL) {
        if ((size_t)tb->k1 * (size_t)(o->order - 1) > TK_CONST_IDX1 || (size_t)tb->k1 * n > TK_CONST_MAP ||
            (size_t)tb->k1 > TK_CONST_MULT)
            return tk_set_error(TK_ERR_UNSUPPORTED,
                                "order %d, dimension %d: index tables exceed the CUDA kernel's constant memory; "
                                "use the cpu or omp backend",
                                o->order, n);
        size_t shared = sizeof(R) * ((size_t)n * tb->k1 + k + (size_t)(3 * n | 1) * 128);
        if (shared > 48 * 1024)
            return tk_set_error(TK_ERR_UNSUPPORTED,
                                "order %d, dimension %d: a tensor needs %zu bytes of shared memory, above 48 KiB; "
                                "use the cpu or omp backend",
                                o->order, n, shared);
    }
    const tk_status usable = tk_cuda_require_device(o->cuda_device);
    if (usable != TK_OK) return usable;

    pthread_mutex_lock(&cuda_solve_lock);
    CUDA_TRY(cudaSetDevice(o->cuda_device));
    CUDA_TRY(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, o->cuda_device));
    if (o->impl == TK_IMPL_GENERAL) {
        unsigned char idx1[TK_CONST_IDX1];
        memcpy(idx1, tb->idx1, (size_t)tb->k1 * (size_t)(o->order - 1));
        CUDA_TRY(cudaMemcpyToSymbol(c_idx1, idx1, (size_t)tb->k1 * (size_t)(o->order - 1)));
        CUDA_TRY(cudaMemcpyToSymbol(c_map, tb->map, sizeof(unsigned) * (size_t)tb->k1 * n));
        CUDA_TRY(cudaMemcpyToSymbol(c_mult1, tb->mult1, sizeof(double) * (size_t)tb->k1));
    }
    /* Chunks of tensors sized to the free device memory less headroom; buffers that
     * still do not fit (another thread or process took memory meanwhile) are retried
     * with half the chunk, down to one tensor. */
    if (T == 0) goto cleanup;
    if ((status = tk_cuda_memory_get(&free_bytes, &total_bytes)) != TK_OK) goto cleanup;
    {
        const size_t per_tensor = sizeof(R) * k + (size_t)S * (sizeof(R) * (n + 1) + sizeof(int) + 1);
        const size_t fixed = sizeof(R) * (size_t)S * n, budget = tk_cuda_budget(free_bytes);
        chunk = budget > fixed ? (budget - fixed) / per_tensor : 0;
        if (chunk > T) chunk = T;
        if (chunk == 0) chunk = 1; /* the allocation below decides, and words the error */
        for (;;) {
            tk_cuda_buffer bufs[] = {{(void **)&d_packed, sizeof(R) * k * chunk},
                                     {(void **)&d_starts, fixed},
                                     {(void **)&d_lambda, sizeof(R) * (size_t)S * chunk},
                                     {(void **)&d_x, sizeof(R) * (size_t)S * n * chunk},
                                     {(void **)&d_iter, sizeof(int) * (size_t)S * chunk},
                                     {(void **)&d_conv, (size_t)S * chunk}};
            cudaError_t err = tk_cuda_malloc_all(bufs, (int)(sizeof bufs / sizeof bufs[0]));
            if (err == cudaSuccess) break;
            if (err != cudaErrorMemoryAllocation) {
                status = tk_set_error(TK_ERR_CUDA, "SS-HOPM on CUDA: cudaMalloc failed: %s", cudaGetErrorString(err));
                goto cleanup;
            }
            if (chunk == 1) {
                char what[96];
                snprintf(what, sizeof what, "one tensor with its %d starts", S);
                status = tk_cuda_out_of_memory("SS-HOPM on CUDA", what, fixed + per_tensor);
                goto cleanup;
            }
            chunk = (chunk + 1) / 2;
        }
    }
    CUDA_TRY(cudaMemcpy(d_starts, starts, sizeof(R) * (size_t)S * n, cudaMemcpyHostToDevice));
    CUDA_TRY(cudaEventCreate(&ev0));
    CUDA_TRY(cudaEventCreate(&ev1));

    p.starts = d_starts;
    p.lambda = d_lambda;
    p.x = d_x;
    p.iterations = d_iter;
    p.converged = d_conv;
    p.order = o->order;
    p.dim = n;
    p.k = (int)k;
    p.k1 = tb->k1;
    p.num_starts = S;
    p.max_iter = o->max_iter;
    p.fixed_iterations = o->fixed_iterations;
    p.maximize = o->shift >= 0;
    p.shift = (R)o->shift;
    p.tol2 = (R)(o->tol * o->tol);
    for (size_t first = 0; first < T; first += chunk) {
        size_t todo = T - first < chunk ? T - first : chunk, slots = todo * (size_t)S;
        CUDA_TRY(cudaMemcpy(d_packed, packed + first * k, sizeof(R) * k * todo, cudaMemcpyHostToDevice));
        p.packed = d_packed;
        p.num_tensors = todo;
        CUDA_TRY(cudaEventRecord(ev0));
        CUDA_TRY(launch<R>(o, p, sm_count));
        CUDA_TRY(cudaEventRecord(ev1));
        CUDA_TRY(cudaEventSynchronize(ev1));
        float ms = 0;
        CUDA_TRY(cudaEventElapsedTime(&ms, ev0, ev1));
        kernel_ms += ms;
        size_t base = first * (size_t)S;
        if (out->lambda)
            CUDA_TRY(cudaMemcpy((R *)out->lambda + base, d_lambda, sizeof(R) * slots, cudaMemcpyDeviceToHost));
        if (out->x)
            CUDA_TRY(cudaMemcpy((R *)out->x + base * n, d_x, sizeof(R) * slots * n, cudaMemcpyDeviceToHost));
        if (out->iterations)
            CUDA_TRY(cudaMemcpy(out->iterations + base, d_iter, sizeof(int) * slots, cudaMemcpyDeviceToHost));
        if (out->converged)
            CUDA_TRY(cudaMemcpy(out->converged + base, d_conv, slots, cudaMemcpyDeviceToHost));
    }
    timing->kernel_ms = kernel_ms;
cleanup:
    tk_cuda_free(d_packed);
    tk_cuda_free(d_starts);
    tk_cuda_free(d_lambda);
    tk_cuda_free(d_x);
    tk_cuda_free(d_iter);
    tk_cuda_free(d_conv);
    if (ev0) cudaEventDestroy(ev0);
    if (ev1) cudaEventDestroy(ev1);
    pthread_mutex_unlock(&cuda_solve_lock);
    return status;
}

extern "C" tk_status tk_sshopm_solve_cuda(const tk_sshopm_options *o, const tk_sshopm_tables *tables,
                                          size_t num_tensors, const void *packed, const void *starts,
                                          tk_sshopm_starts_result *out, tk_timing *timing)
{
    if (o->precision == TK_PRECISION_DOUBLE)
        return solve<double>(o, tables, num_tensors, (const double *)packed, (const double *)starts, out, timing);
    return solve<float>(o, tables, num_tensors, (const float *)packed, (const float *)starts, out, timing);
}
