/* The CUDA engine of PLTF: float buffers on the device, GTM steps as cuBLAS
 * strided-batched SGEMMs, element-wise kernels for the updates (pltf_kernels.cuh, launch
 * choices in pltf_tuning.h), and the fused KL-PARAFAC pass (pltf_cuda_fused.cu) where the
 * model allows it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cuda_check.cuh"
#include "pltf_cuda_internal.h"
#include "pltf_kernels.cuh"
#include "pltf_tuning.h"

typedef tk_pltf_policy policy;

/* Who a failed CUDA call's message names (common/cuda_check.cuh). */
#define WHO "PLTF on CUDA"

static tk_status blas_check(cublasStatus_t s, const char *what)
{
    if (s == CUBLAS_STATUS_SUCCESS) return TK_OK;
    if (s == CUBLAS_STATUS_ALLOC_FAILED)
        return tk_set_error(TK_ERR_MEMORY, "PLTF on CUDA: %s failed: cuBLAS could not allocate its GPU memory", what);
    return tk_set_error(TK_ERR_CUDA, "PLTF on CUDA: %s failed (cuBLAS status %d)", what, (int)s);
}

/* Blocks of threads covering n elements (at least one), at most policy::max_grid_blocks. */
static unsigned blocks_for(size_t n, unsigned threads)
{
    size_t b = (n + threads - 1) / threads;
    return (unsigned)(b < policy::max_grid_blocks ? (b ? b : 1) : policy::max_grid_blocks);
}

/* An element-wise launch: policy::elementwise_threads a block, enough blocks for count. */
#define ELEMENTWISE(count) blocks_for((count), policy::elementwise_threads), policy::elementwise_threads

/* The status of the kernel launch just made. */
static tk_status launched(const char *kernel) { return tk_cuda_status(cudaGetLastError(), WHO, kernel); }

/* The permute and broadcast kernels index at most TK_PLTF_CUDA_MAX_AXES axes. */
static tk_status too_many_axes(int ndim)
{
    return tk_set_error(TK_ERR_UNSUPPORTED, "PLTF on CUDA: a tensor of %d axes (at most %d)", ndim, TK_PLTF_CUDA_MAX_AXES);
}

/* ---- allocation with a reuse cache ------------------------------------------ */

static tk_status remember(cuda_ctx *c, void *p, size_t count)
{
    if (c->live_used == c->live_cap) {
        int cap = c->live_cap ? 2 * c->live_cap : 64;
        void **np = (void **)realloc(c->live_ptr, sizeof(void *) * (size_t)cap);
        if (!np) return tk_set_error(TK_ERR_MEMORY, "PLTF on CUDA: out of host memory");
        c->live_ptr = np;
        size_t *nc = (size_t *)realloc(c->live_count, sizeof(size_t) * (size_t)cap);
        if (!nc) return tk_set_error(TK_ERR_MEMORY, "PLTF on CUDA: out of host memory");
        c->live_count = nc;
        c->live_cap = cap;
    }
    c->live_ptr[c->live_used] = p, c->live_count[c->live_used++] = count;
    return TK_OK;
}

static tk_status cu_alloc(tk_pltf_engine *e, size_t count, void **out)
{
    cuda_ctx *c = (cuda_ctx *)e->ctx;
    if (!count) count = 1;
    for (int i = 0; i < c->cache_used; ++i)
        if (c->cache_count[i] >= count && c->cache_count[i] <= 2 * count) {
            *out = c->cache_ptr[i];
            size_t have = c->cache_count[i];
            c->cache_ptr[i] = c->cache_ptr[--c->cache_used], c->cache_count[i] = c->cache_count[c->cache_used];
            return remember(c, *out, have);
        }
    const size_t bytes = count * sizeof(float);
    cudaError_t err = tk_cuda_malloc(out, bytes);
    if (err == cudaErrorMemoryAllocation && c->cache_used) {
        /* the buffers kept for reuse are the first to go */
        for (int i = 0; i < c->cache_used; ++i) tk_cuda_free(c->cache_ptr[i]);
        c->cache_used = 0;
        err = tk_cuda_malloc(out, bytes);
    }
    if (err == cudaErrorMemoryAllocation) {
        size_t held = 0;
        for (int i = 0; i < c->live_used; ++i) held += c->live_count[i] * sizeof(float);
        char held_text[32], what[160];
        tk_cuda_format_bytes(held, held_text, sizeof held_text);
        snprintf(what, sizeof what,
                 "a buffer of %zu values, beside the %s this factorization holds (the whole model stays on the GPU),",
                 count, held_text);
        return tk_cuda_out_of_memory("PLTF on CUDA", what, bytes);
    }
    if (err != cudaSuccess) return tk_cuda_status(err, WHO, "cudaMalloc");
    tk_status st = remember(c, *out, count);
    if (st != TK_OK) {
        tk_cuda_free(*out);
        *out = NULL;
    }
    return st;
}

static void cu_release(tk_pltf_engine *e, void *p)
{
    cuda_ctx *c = (cuda_ctx *)e->ctx;
    if (!p) return; /* a failed allocation's slot */
    size_t count = 0;
    for (int i = 0; i < c->live_used; ++i)
        if (c->live_ptr[i] == p) {
            count = c->live_count[i];
            c->live_ptr[i] = c->live_ptr[--c->live_used], c->live_count[i] = c->live_count[c->live_used];
            break;
        }
    if (c->cache_used < TK_PLTF_CUDA_CACHE) {
        c->cache_ptr[c->cache_used] = p, c->cache_count[c->cache_used++] = count;
    } else {
        tk_cuda_free(p);
    }
}

static tk_status cu_upload(tk_pltf_engine *e, void *dst, const double *src, size_t count)
{
    (void)e;
    float *tmp = (float *)malloc((count ? count : 1) * sizeof(float));
    if (!tmp) return tk_set_error(TK_ERR_MEMORY, "PLTF on CUDA: out of host memory for %zu values", count);
    for (size_t i = 0; i < count; ++i) tmp[i] = (float)src[i];
    cudaError_t err = cudaMemcpy(dst, tmp, count * sizeof(float), cudaMemcpyHostToDevice);
    free(tmp);
    return tk_cuda_status(err, WHO, "cudaMemcpy (upload)");
}

static tk_status cu_download(tk_pltf_engine *e, double *dst, const void *src, size_t count)
{
    (void)e;
    float *tmp = (float *)malloc((count ? count : 1) * sizeof(float));
    if (!tmp) return tk_set_error(TK_ERR_MEMORY, "PLTF on CUDA: out of host memory for %zu values", count);
    cudaError_t err = cudaMemcpy(tmp, src, count * sizeof(float), cudaMemcpyDeviceToHost);
    for (size_t i = 0; err == cudaSuccess && i < count; ++i) dst[i] = tmp[i];
    free(tmp);
    return tk_cuda_status(err, WHO, "cudaMemcpy (download)");
}

static tk_status cu_fill(tk_pltf_engine *e, void *dst, double value, size_t count)
{
    (void)e;
    fill_kernel<<<ELEMENTWISE(count)>>>((float *)dst, (float)value, count);
    return launched("fill kernel");
}

/* ---- permute and reduce --------------------------------------------------------- */

/* The strides of a row-major tensor whose axis d is axes[d] (d itself where axes is NULL) of
 * shape: stride[axes[d]] for d < ndim. */
static void row_major_strides(int ndim, const int *axes, const size_t *shape, unsigned long long *stride)
{
    unsigned long long s = 1;
    for (int d = ndim - 1; d >= 0; --d) {
        const int axis = axes ? axes[d] : d;
        stride[axis] = s, s *= shape[axis];
    }
}

static tk_status cu_reduce_permute(tk_pltf_engine *e, const void *src, int src_ndim, const size_t *src_shape, void *dst,
                                   int dst_ndim, const int *dst_axes)
{
    (void)e;
    if (src_ndim > TK_PLTF_CUDA_MAX_AXES) return too_many_axes(src_ndim);
    permute_params p = {};
    unsigned long long stride[TK_PLTF_CUDA_MAX_AXES];
    int listed[TK_PLTF_CUDA_MAX_AXES] = {0};
    row_major_strides(src_ndim, NULL, src_shape, stride);
    p.dst_ndim = dst_ndim, p.dst_count = 1, p.red_count = 1;
    for (int d = 0; d < dst_ndim; ++d) {
        p.dshape[d] = src_shape[dst_axes[d]], p.dstride[d] = stride[dst_axes[d]], listed[dst_axes[d]] = 1;
        p.dst_count *= p.dshape[d];
    }
    for (int d = 0; d < src_ndim; ++d)
        if (!listed[d]) {
            p.rshape[p.red_ndim] = src_shape[d], p.rstride[p.red_ndim++] = stride[d];
            p.red_count *= src_shape[d];
        }
    reduce_permute_kernel<<<ELEMENTWISE(p.dst_count)>>>((const float *)src, (float *)dst, p);
    return launched("permute kernel");
}

static tk_status cu_broadcast(tk_pltf_engine *e, const void *src, int src_ndim, const int *src_axes, void *dst,
                              int dst_ndim, const size_t *dst_shape)
{
    (void)e;
    if (dst_ndim > TK_PLTF_CUDA_MAX_AXES) return too_many_axes(dst_ndim);
    broadcast_params p = {}; /* stride 0 along the axes src lacks */
    p.dst_ndim = dst_ndim, p.count = 1;
    row_major_strides(src_ndim, src_axes, dst_shape, p.sstride);
    for (int d = 0; d < dst_ndim; ++d) p.shape[d] = dst_shape[d], p.count *= dst_shape[d];
    broadcast_kernel<<<ELEMENTWISE(p.count)>>>((const float *)src, (float *)dst, p);
    return launched("broadcast kernel");
}

/* ---- GEMM ------------------------------------------------------------------------- */

static tk_status cu_gemm(tk_pltf_engine *e, size_t batch, size_t m, size_t n, size_t k, const void *a, int trans_a,
                         const void *b, int trans_b, void *c)
{
    cuda_ctx *ctx = (cuda_ctx *)e->ctx;
    if (m > 2147483647u || n > 2147483647u || k > 2147483647u || batch > 2147483647u)
        return tk_set_error(TK_ERR_UNSUPPORTED, "PLTF on CUDA: a GEMM dimension exceeds 2^31");
    const float one = 1.0f, zero = 0.0f;
    /* Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: the row-major
     * buffers read as column-major are already the transposes cuBLAS wants. */
    cublasStatus_t s = cublasSgemmStridedBatched(
        ctx->blas, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, (int)n, (int)m, (int)k, &one,
        (const float *)b, trans_b ? (int)k : (int)n, (long long)(k * n), (const float *)a, trans_a ? (int)m : (int)k,
        (long long)(m * k), &zero, (float *)c, (int)n, (long long)(m * n), (int)batch);
    return blas_check(s, "cublasSgemmStridedBatched");
}

/* ---- element-wise steps of the updates -------------------------------------------- */

static tk_status cu_mu_terms(tk_pltf_engine *e, tk_pltf_divergence d, const void *x, const void *mask,
                             const void *xhat, size_t count, void *num, void *den)
{
    (void)e;
    mu_terms_kernel<<<ELEMENTWISE(count)>>>((int)d, (const float *)x, (const float *)mask, (const float *)xhat,
                                                     count, (float *)num, (float *)den);
    return launched("update-terms kernel");
}

static tk_status cu_add(tk_pltf_engine *e, void *dst, const void *src, size_t count)
{
    (void)e;
    add_kernel<<<ELEMENTWISE(count)>>>((float *)dst, (const float *)src, count);
    return launched("add kernel");
}

static tk_status cu_mu_apply(tk_pltf_engine *e, void *z, const void *num, const void *den, size_t count,
                             double exponent)
{
    (void)e;
    mu_apply_kernel<<<ELEMENTWISE(count)>>>((float *)z, (const float *)num, (const float *)den, count,
                                                     (float)exponent);
    return launched("update kernel");
}

static tk_status cu_divergence(tk_pltf_engine *e, tk_pltf_divergence d, const void *x, const void *mask,
                               const void *xhat, size_t count, double *out)
{
    cuda_ctx *c = (cuda_ctx *)e->ctx;
    TK_CUDA_TRY_RETURN(WHO, cudaMemset(c->reduce_slot, 0, sizeof(double)));
    unsigned blocks = blocks_for(count, policy::elementwise_threads);
    const unsigned most = (unsigned)c->sm_count * policy::divergence_blocks_per_sm;
    if (blocks > most) blocks = most;
    divergence_kernel<<<blocks, policy::elementwise_threads>>>((int)d, (const float *)x, (const float *)mask, (const float *)xhat, count,
                                       c->reduce_slot);
    TK_CUDA_TRY_RETURN(WHO, cudaGetLastError());
    TK_CUDA_TRY_RETURN(WHO, cudaMemcpy(out, c->reduce_slot, sizeof(double), cudaMemcpyDeviceToHost));
    return TK_OK;
}

static tk_status cu_sync(tk_pltf_engine *e)
{
    (void)e;
    TK_CUDA_TRY_RETURN(WHO, cudaDeviceSynchronize());
    return TK_OK;
}

static tk_status cu_check_fit(tk_pltf_engine *e, size_t count, const char *what)
{
    cuda_ctx *c = (cuda_ctx *)e->ctx;
    TK_CUDA_TRY_RETURN(WHO, cudaSetDevice(c->device));
    size_t free_b = 0, total_b = 0;
    tk_status st = tk_cuda_memory_get(&free_b, &total_b);
    if (st != TK_OK) return st;
    if (count > free_b / sizeof(float)) return tk_cuda_out_of_memory("PLTF on CUDA", what, count * sizeof(float));
    return TK_OK;
}

static void cu_destroy(tk_pltf_engine *e)
{
    cuda_ctx *c = (cuda_ctx *)e->ctx;
    if (!c) return;
    for (int i = 0; i < c->cache_used; ++i) tk_cuda_free(c->cache_ptr[i]);
    for (int i = 0; i < c->live_used; ++i) tk_cuda_free(c->live_ptr[i]);
    tk_cuda_free(c->fused_num), tk_cuda_free(c->fused_den), tk_cuda_free(c->reduce_slot);
    if (c->blas) cublasDestroy(c->blas);
    free(c->live_ptr), free(c->live_count);
    free(c);
    e->ctx = NULL;
}

extern "C" tk_status tk_pltf_engine_cuda(tk_pltf_engine *e, int device)
{
    memset(e, 0, sizeof *e);
    const tk_status usable = tk_cuda_require_device(device);
    if (usable != TK_OK) return usable;
    cuda_ctx *c = (cuda_ctx *)calloc(1, sizeof *c);
    if (!c) return tk_set_error(TK_ERR_MEMORY, "PLTF on CUDA: out of host memory");
    e->ctx = c;
    e->destroy = cu_destroy;
    c->device = device;
    tk_status st = tk_cuda_status(cudaSetDevice(device), WHO, "cudaSetDevice");
    if (st == TK_OK)
        st = tk_cuda_status(cudaDeviceGetAttribute(&c->sm_count, cudaDevAttrMultiProcessorCount, device), WHO,
                            "cudaDeviceGetAttribute");
    if (st == TK_OK) st = blas_check(cublasCreate(&c->blas), "cublasCreate");
    if (st == TK_OK) {
        const cudaError_t err = tk_cuda_malloc((void **)&c->reduce_slot, sizeof(double));
        st = err == cudaErrorMemoryAllocation
                 ? tk_cuda_out_of_memory("PLTF on CUDA", "the divergence's reduction slot", sizeof(double))
                 : tk_cuda_status(err, WHO, "cudaMalloc");
    }
    if (st != TK_OK) {
        cu_destroy(e);
        return st;
    }
    e->alloc = cu_alloc, e->release = cu_release, e->upload = cu_upload, e->download = cu_download;
    e->fill = cu_fill, e->reduce_permute = cu_reduce_permute, e->broadcast = cu_broadcast, e->gemm = cu_gemm, e->mu_terms = cu_mu_terms;
    e->add = cu_add, e->mu_apply = cu_mu_apply, e->divergence = cu_divergence, e->naive_gtm = tk_pltf_cuda_naive_gtm;
    e->fused_update = tk_pltf_cuda_fused_update, e->sync = cu_sync, e->check_fit = cu_check_fit;
    return TK_OK;
}
