/* CUDA backend of SS-HOPM: the dispatch layer.  A plan's device state (buffers, events,
 * the SM count) is made once and reused by every execute; the kernels are
 * sshopm_kernels.cuh's, their launch shapes sshopm_tuning.h's. */
#include <cuda_runtime.h>

#include <mutex>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cuda_check.cuh"
#include "common/cuda_memory.h"
#include "common/device_arrays.h"
#include "common/multi_device.h"
#include "sshopm_internal.h"
#include "sshopm_kernels.cuh"
#include "sshopm_merge_cuda.h"
#include "sshopm_pipeline.h"
#include "sshopm_tuning.h"

#define TK_WHO "SS-HOPM on CUDA"

typedef tk_sshopm_policy_all Policy;

/* Constant memory is per device: executes on one device from several host threads (of
 * different plans, or one plan's devices) take turns, and each execute uploads its plan's
 * tables again; executes on different devices run at once (a plan over several devices
 * runs one host thread a device).  Devices beyond the array share a lock: slower, not wrong. */
static std::mutex cuda_solve_lock[TK_MAX_CUDA_DEVICES];
static std::mutex &device_lock(int device) { return cuda_solve_lock[(unsigned)device % TK_MAX_CUDA_DEVICES]; }

/* A plan's device state.  The buffers hold `chunk` tensors (0: none yet). */
struct tk_sshopm_cuda {
    tk_sshopm_options opts; /* the plan's, for this state's device */
    const tk_sshopm_options *o; /* &opts */
    const tk_sshopm_tables *tb;
    const void *starts; /* host, num_starts * dim in the precision */
    size_t elem, max_batch, wanted, chunk; /* the buffers were sized for batches of `wanted` */
    int sm_count;
    void *d_packed, *d_starts, *d_lambda, *d_x;
    int *d_iter;
    unsigned char *d_conv;
    unsigned long long *d_first; /* the device-array execute's first non-finite entry (made at its first call) */
    int device_arrays;           /* this execute's arrays are in device memory (copies device to device) */
    cudaEvent_t ev0, ev1;
    tk_sshopm_pipeline *pipe; /* the distinct-pairs pipeline, made at its first execute */
};

/* The kind of a copy between the caller's arrays and the buffers, counting the bytes that
 * cross between host and device (the transfer probe, device_arrays.h). */
static cudaMemcpyKind caller_copy(const tk_sshopm_cuda *c, cudaMemcpyKind across, size_t bytes)
{
    if (c->device_arrays) return cudaMemcpyDeviceToDevice;
    tk_count_array_transfer(bytes);
    return across;
}

/* The smallest index of a non-finite entry of a[0 .. n) into *first (left as it was where all are finite). */
template <typename R> __global__ void sshopm_first_nonfinite_kernel(const R *a, size_t n, unsigned long long *first)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        if (!isfinite(a[i])) atomicMin(first, (unsigned long long)i);
}

template <typename R>
static cudaError_t launch(const tk_sshopm_options *o, const Args<R> &p, int sm_count, cudaStream_t stream = 0)
{
    const int adaptive = o->shift_mode == TK_SHIFT_ADAPTIVE;
    if (o->impl == TK_IMPL_UNROLLED) {
        constexpr int block = Policy::unrolled_block;
        size_t threads = p.num_tensors * (size_t)p.num_starts;
        unsigned blocks = (unsigned)((threads + block - 1) / block);
#define TK_LAUNCH_UNROLLED(M)                                                                    \
    if (o->order == M) {                                                                         \
        if (adaptive) sshopm_unrolled_kernel<Policy, M, true, R><<<blocks, block, 0, stream>>>(p); \
        else sshopm_unrolled_kernel<Policy, M, false, R><<<blocks, block, 0, stream>>>(p);         \
        return cudaGetLastError();                                                               \
    }
        TK_LAUNCH_UNROLLED(4)
        TK_LAUNCH_UNROLLED(6)
        TK_LAUNCH_UNROLLED(8)
#undef TK_LAUNCH_UNROLLED
        return cudaErrorInvalidValue;
    }
    int block = tk_sshopm_general_block<Policy>(p.num_starts);
    int stride = 3 * p.dim | 1;
    size_t shared = sizeof(R) * ((size_t)p.dim * p.k1 + p.k + (size_t)stride * block);
    size_t grid = tk_sshopm_general_grid<Policy>(p.num_tensors, sm_count);
    if (grid == 0) return cudaSuccess;
    if (adaptive) sshopm_general_kernel<true, R><<<(unsigned)grid, block, shared, stream>>>(p, stride);
    else sshopm_general_kernel<false, R><<<(unsigned)grid, block, shared, stream>>>(p, stride);
    return cudaGetLastError();
}

/* Device bytes per tensor (its values and its starts' results) and for the whole plan (the starts). */
static size_t bytes_per_tensor(const tk_sshopm_cuda *c)
{
    const size_t S = (size_t)c->o->num_starts, n = (size_t)c->o->dim;
    return c->elem * c->tb->k + S * (c->elem * (n + 1) + sizeof(int) + 1);
}

/* The buffers for chunks of up to `want` tensors, sized to the free device memory less
 * headroom; buffers that still do not fit (another thread or process took memory
 * meanwhile) are retried with half the chunk, down to one tensor.  The starts are
 * uploaded once, here. */
static tk_status allocate(tk_sshopm_cuda *c, size_t want)
{
    size_t free_bytes = 0, total_bytes = 0;
    tk_status status = tk_cuda_memory_get(&free_bytes, &total_bytes);
    if (status != TK_OK) return status;
    const size_t S = (size_t)c->o->num_starts, n = (size_t)c->o->dim, k = c->tb->k, elem = c->elem;
    const size_t per_tensor = bytes_per_tensor(c), fixed = elem * S * n, budget = tk_cuda_budget(free_bytes);
    size_t chunk = budget > fixed ? (budget - fixed) / per_tensor : 0;
    if (chunk > want) chunk = want;
    if (chunk == 0) chunk = 1; /* the allocation below decides, and words the error */
    for (;;) {
        tk_cuda_buffer bufs[] = {{&c->d_packed, elem * k * chunk},          {&c->d_starts, fixed},
                                 {&c->d_lambda, elem * S * chunk},          {&c->d_x, elem * S * n * chunk},
                                 {(void **)&c->d_iter, sizeof(int) * S * chunk}, {(void **)&c->d_conv, S * chunk}};
        cudaError_t err = tk_cuda_malloc_all(bufs, (int)(sizeof bufs / sizeof bufs[0]));
        if (err == cudaSuccess) break;
        if (err != cudaErrorMemoryAllocation) return tk_cuda_status(err, TK_WHO, "cudaMalloc");
        if (chunk == 1) {
            char what[96];
            snprintf(what, sizeof what, "one tensor with its %d starts", c->o->num_starts);
            return tk_cuda_out_of_memory(TK_WHO, what, fixed + per_tensor);
        }
        chunk = (chunk + 1) / 2;
    }
    c->chunk = chunk, c->wanted = want;
    TK_CUDA_TRY_RETURN(TK_WHO, cudaMemcpy(c->d_starts, c->starts, fixed, cudaMemcpyHostToDevice));
    return TK_OK;
}

/* The kernels' checks of the shape, before any device work. */
static tk_status check_shape(const tk_sshopm_options *o, const tk_sshopm_tables *tb, size_t elem)
{
    if (o->impl != TK_IMPL_GENERAL) return TK_OK;
    const int n = o->dim;
    if ((size_t)tb->k1 * (size_t)(o->order - 1) > TK_CONST_IDX1 || (size_t)tb->k1 * n > TK_CONST_MAP ||
        (size_t)tb->k1 > TK_CONST_MULT)
        return tk_set_error(TK_ERR_UNSUPPORTED,
                            "order %d, dimension %d: index tables exceed the CUDA kernel's constant memory; "
                            "use the cpu or omp backend",
                            o->order, n);
    size_t shared = elem * ((size_t)n * tb->k1 + tb->k + (size_t)(3 * n | 1) * Policy::general_block_max);
    if (shared > 48 * 1024)
        return tk_set_error(TK_ERR_UNSUPPORTED,
                            "order %d, dimension %d: a tensor needs %zu bytes of shared memory, above 48 KiB; "
                            "use the cpu or omp backend",
                            o->order, n, shared);
    return TK_OK;
}

extern "C" tk_status tk_sshopm_cuda_create(const tk_sshopm_options *o, const tk_sshopm_tables *tb, const void *starts,
                                           size_t max_batch, tk_sshopm_cuda **out)
{
    *out = NULL;
    const size_t elem = o->precision == TK_PRECISION_DOUBLE ? sizeof(double) : sizeof(float);
    tk_status status = check_shape(o, tb, elem);
    if (status != TK_OK) return status;
    if ((status = tk_cuda_require_device(o->cuda_device)) != TK_OK) return status;
    tk_sshopm_cuda *c = (tk_sshopm_cuda *)calloc(1, sizeof *c);
    if (!c) return tk_set_error(TK_ERR_MEMORY, "out of memory for an SS-HOPM plan");
    c->opts = *o, c->o = &c->opts, c->tb = tb, c->starts = starts, c->elem = elem, c->max_batch = max_batch;
    device_lock(o->cuda_device).lock();
    TK_CUDA_TRY_GOTO(status, done, TK_WHO, cudaSetDevice(o->cuda_device));
    TK_CUDA_TRY_GOTO(status, done, TK_WHO,
                     cudaDeviceGetAttribute(&c->sm_count, cudaDevAttrMultiProcessorCount, o->cuda_device));
    TK_CUDA_TRY_GOTO(status, done, TK_WHO, cudaEventCreate(&c->ev0));
    TK_CUDA_TRY_GOTO(status, done, TK_WHO, cudaEventCreate(&c->ev1));
    if (max_batch) status = allocate(c, max_batch);
done:
    device_lock(o->cuda_device).unlock();
    if (status != TK_OK) {
        tk_sshopm_cuda_destroy(c);
        return status;
    }
    *out = c;
    return TK_OK;
}

/* The buffers back to the device (a plan made for no batch size grows them). */
static void free_buffers(tk_sshopm_cuda *c)
{
    tk_cuda_buffer bufs[] = {{&c->d_packed, 1}, {&c->d_starts, 1}, {&c->d_lambda, 1},
                             {&c->d_x, 1},      {(void **)&c->d_iter, 1}, {(void **)&c->d_conv, 1}};
    tk_cuda_free_all(bufs, (int)(sizeof bufs / sizeof bufs[0]));
    c->chunk = c->wanted = 0;
}

extern "C" void tk_sshopm_cuda_destroy(tk_sshopm_cuda *c)
{
    if (!c) return;
    /* the state's device current while its buffers and events go (a plan over several
     * devices destroys them all from one thread); the caller's device is kept */
    int previous = -1;
    if (cudaGetDevice(&previous) != cudaSuccess || cudaSetDevice(c->o->cuda_device) != cudaSuccess) {
        cudaGetLastError();
        previous = -1;
    }
    free_buffers(c);
    tk_sshopm_pipeline_destroy(c->pipe);
    tk_cuda_free(c->d_first);
    for (cudaEvent_t e : {c->ev0, c->ev1})
        if (e) cudaEventDestroy(e);
    if (previous >= 0) cudaSetDevice(previous);
    free(c);
}

/* The kernels' arguments but for the tensors and their count. */
template <typename R>
static Args<R> make_args(const tk_sshopm_cuda *c, const void *d_starts, void *d_lambda, void *d_x, int *d_iter,
                         unsigned char *d_conv)
{
    const tk_sshopm_options *o = c->o;
    const tk_sshopm_tables *tb = c->tb;
    Args<R> p;
    p.packed = NULL;
    p.num_tensors = 0;
    p.starts = (const R *)d_starts;
    p.lambda = (R *)d_lambda;
    p.x = (R *)d_x;
    p.iterations = d_iter;
    p.converged = d_conv;
    p.order = o->order;
    p.dim = o->dim;
    p.k = (int)tb->k;
    p.k1 = tb->k1;
    p.num_starts = o->num_starts;
    p.max_iter = o->max_iter;
    p.fixed_iterations = o->fixed_iterations;
    p.maximize = o->shift >= 0;
    p.shift = (R)o->shift;
    p.tol2 = (R)(o->tol * o->tol);
    return p;
}

cudaError_t tk_sshopm_cuda_solve_async(const tk_sshopm_cuda *c, const void *d_packed, const void *d_starts,
                                       void *d_lambda, void *d_x, int *d_iter, unsigned char *d_conv, size_t T,
                                       cudaStream_t stream)
{
    if (c->o->precision == TK_PRECISION_DOUBLE) {
        Args<double> p = make_args<double>(c, d_starts, d_lambda, d_x, d_iter, d_conv);
        p.packed = (const double *)d_packed, p.num_tensors = T;
        return launch<double>(c->o, p, c->sm_count, stream);
    }
    Args<float> p = make_args<float>(c, d_starts, d_lambda, d_x, d_iter, d_conv);
    p.packed = (const float *)d_packed, p.num_tensors = T;
    return launch<float>(c->o, p, c->sm_count, stream);
}

template <typename R>
static tk_status run(tk_sshopm_cuda *c, size_t T, const R *packed, tk_sshopm_starts_result *out, tk_timing *timing)
{
    const tk_sshopm_options *o = c->o;
    const tk_sshopm_tables *tb = c->tb;
    const int n = o->dim, S = o->num_starts;
    const size_t k = tb->k, chunk = c->chunk;
    float kernel_ms = 0;
    Args<R> p = make_args<R>(c, c->d_starts, c->d_lambda, c->d_x, c->d_iter, c->d_conv);
    for (size_t first = 0; first < T; first += chunk) {
        size_t todo = T - first < chunk ? T - first : chunk, slots = todo * (size_t)S;
        TK_CUDA_TRY_RETURN(TK_WHO, cudaMemcpy(c->d_packed, packed + first * k, sizeof(R) * k * todo,
                                              caller_copy(c, cudaMemcpyHostToDevice, sizeof(R) * k * todo)));
        p.packed = (const R *)c->d_packed;
        p.num_tensors = todo;
        TK_CUDA_TRY_RETURN(TK_WHO, cudaEventRecord(c->ev0));
        TK_CUDA_TRY_RETURN(TK_WHO, launch<R>(o, p, c->sm_count));
        TK_CUDA_TRY_RETURN(TK_WHO, cudaEventRecord(c->ev1));
        TK_CUDA_TRY_RETURN(TK_WHO, cudaEventSynchronize(c->ev1));
        float ms = 0;
        TK_CUDA_TRY_RETURN(TK_WHO, cudaEventElapsedTime(&ms, c->ev0, c->ev1));
        kernel_ms += ms;
        size_t base = first * (size_t)S;
        if (out->lambda)
            TK_CUDA_TRY_RETURN(TK_WHO, cudaMemcpy((R *)out->lambda + base, p.lambda, sizeof(R) * slots,
                                                  caller_copy(c, cudaMemcpyDeviceToHost, sizeof(R) * slots)));
        if (out->x)
            TK_CUDA_TRY_RETURN(TK_WHO, cudaMemcpy((R *)out->x + base * n, p.x, sizeof(R) * slots * n,
                                                  caller_copy(c, cudaMemcpyDeviceToHost, sizeof(R) * slots * n)));
        if (out->iterations)
            TK_CUDA_TRY_RETURN(TK_WHO, cudaMemcpy(out->iterations + base, p.iterations, sizeof(int) * slots,
                                                  caller_copy(c, cudaMemcpyDeviceToHost, sizeof(int) * slots)));
        if (out->converged)
            TK_CUDA_TRY_RETURN(TK_WHO, cudaMemcpy(out->converged + base, p.converged, slots,
                                                  caller_copy(c, cudaMemcpyDeviceToHost, slots)));
    }
    timing->kernel_ms = kernel_ms;
    return TK_OK;
}

/* Uploads the plan's tables to constant memory (another plan may have replaced them
 * since), makes the buffers where the plan was made for no batch size (growing them with
 * its batches), and runs the chunks. */
static tk_status upload_tables(tk_sshopm_cuda *c)
{
    const tk_sshopm_options *o = c->o;
    const tk_sshopm_tables *tb = c->tb;
    TK_CUDA_TRY_RETURN(TK_WHO, cudaSetDevice(o->cuda_device));
    if (o->impl == TK_IMPL_GENERAL) {
        const size_t idx_bytes = (size_t)tb->k1 * (size_t)(o->order - 1);
        TK_CUDA_TRY_RETURN(TK_WHO, cudaMemcpyToSymbol(c_idx1, tb->idx1, idx_bytes));
        TK_CUDA_TRY_RETURN(TK_WHO, cudaMemcpyToSymbol(c_map, tb->map, sizeof(unsigned) * (size_t)tb->k1 * o->dim));
        TK_CUDA_TRY_RETURN(TK_WHO, cudaMemcpyToSymbol(c_mult1, tb->mult1, sizeof(double) * (size_t)tb->k1));
    }
    return TK_OK;
}

static tk_status execute_locked(tk_sshopm_cuda *c, size_t T, const void *packed, tk_sshopm_starts_result *out,
                                tk_timing *timing)
{
    tk_status status = upload_tables(c);
    if (status != TK_OK || T == 0) return status;
    if (!c->chunk || (!c->max_batch && T > c->wanted)) { /* no buffers yet, or grown */
        free_buffers(c);
        if ((status = allocate(c, T)) != TK_OK) return status;
    }
    if (c->o->precision == TK_PRECISION_DOUBLE) return run<double>(c, T, (const double *)packed, out, timing);
    return run<float>(c, T, (const float *)packed, out, timing);
}

extern "C" tk_status tk_sshopm_cuda_execute(tk_sshopm_cuda *c, size_t num_tensors, const void *packed,
                                            tk_sshopm_starts_result *out, tk_timing *timing)
{
    std::lock_guard<std::mutex> hold(device_lock(c->o->cuda_device));
    return execute_locked(c, num_tensors, packed, out, timing);
}

extern "C" int tk_sshopm_cuda_merges_on_device(const tk_sshopm_options *o)
{
    return o->dim <= tk_sshopm_merge_max_dim() && o->order <= TK_KERNEL_MAX_ORDER;
}

extern "C" tk_status tk_sshopm_cuda_execute_distinct(tk_sshopm_cuda *c, size_t num_tensors, const void *packed,
                                                     double merge_tol, tk_eigenpairs *out, double *kernel_ms)
{
    std::lock_guard<std::mutex> hold(device_lock(c->o->cuda_device));
    tk_status status = upload_tables(c);
    if (status != TK_OK) return status;
    const tk_sshopm_pipeline_host host = {c, c->o, c->tb, c->starts, c->sm_count, c->max_batch};
    return tk_sshopm_pipeline_run(&c->pipe, &host, num_tensors, packed, merge_tol, out, kernel_ms);
}

/* The host execute's check of the data, on the device: the first non-finite entry of the
 * batch's packed tensors, refused in the host execute's words (validate_batch, sshopm.c). */
static tk_status check_finite_on_device(tk_sshopm_cuda *c, size_t T, const void *packed)
{
    const size_t k = c->tb->k, total = T * k;
    if (!c->d_first) {
        const cudaError_t err = tk_cuda_malloc((void **)&c->d_first, sizeof *c->d_first);
        if (err != cudaSuccess) return tk_cuda_status(err, TK_WHO, "cudaMalloc");
    }
    unsigned long long first = ~0ull;
    TK_CUDA_TRY_RETURN(TK_WHO, cudaMemcpy(c->d_first, &first, sizeof first, cudaMemcpyHostToDevice));
    const unsigned block = 256, grid = (unsigned)((total + block - 1) / block < 4096 ? (total + block - 1) / block : 4096);
    if (c->o->precision == TK_PRECISION_DOUBLE)
        sshopm_first_nonfinite_kernel<double><<<grid, block>>>((const double *)packed, total, c->d_first);
    else
        sshopm_first_nonfinite_kernel<float><<<grid, block>>>((const float *)packed, total, c->d_first);
    TK_CUDA_TRY_RETURN(TK_WHO, cudaGetLastError());
    TK_CUDA_TRY_RETURN(TK_WHO, cudaMemcpy(&first, c->d_first, sizeof first, cudaMemcpyDeviceToHost));
    if (first != ~0ull)
        return tk_set_error(TK_ERR_DATA, "tensor %zu has a non-finite entry (packed position %zu)",
                            (size_t)(first / k), (size_t)(first % k));
    return TK_OK;
}

extern "C" tk_status tk_sshopm_cuda_execute_device(tk_sshopm_cuda *c, size_t num_tensors, const void *packed,
                                                   tk_sshopm_starts_result *out, tk_timing *timing)
{
    std::lock_guard<std::mutex> hold(device_lock(c->o->cuda_device));
    TK_CUDA_TRY_RETURN(TK_WHO, cudaSetDevice(c->o->cuda_device));
    if (num_tensors) {
        const tk_status status = check_finite_on_device(c, num_tensors, packed);
        if (status != TK_OK) return status;
    }
    c->device_arrays = 1;
    const tk_status status = execute_locked(c, num_tensors, packed, out, timing);
    c->device_arrays = 0;
    return status;
}
