/* Dispatch of FastTucker on CUDA: the solver's device state (model, every mode's B-CSF,
 * pass scratch), uploads, launches and timing.  The kernels are in tucker_kernels.cuh, their
 * device math in tucker_device.cuh, their launch choices in tucker_tuning.h.
 *
 * Several GPUs: tk_tucker_bcsf_row_split cuts each mode's sub-slices at row
 * boundaries; each device would run these kernels on its range (disjoint rows
 * of A(n)), all-gather A(n)/C(n) after the mode, and all-reduce G (J x R).
 */
#include <cuda_runtime.h>

#include <new>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cuda_check.cuh"
#include "common/cuda_memory.h"
#include "tucker_kernels.cuh"
#include "tucker_tuning.h"

typedef tk_tucker_policy policy;

struct dev_state {
    int device = 0, sms = 0;
    tk_tucker_tuning tuning = {};
    float *a[TK_TUCKER_MAX_ORDER] = {}, *b[TK_TUCKER_MAX_ORDER] = {}, *c[TK_TUCKER_MAX_ORDER] = {};
    float *delta = nullptr, *z = nullptr, *g = nullptr;
    unsigned long long *counter = nullptr;
    dev_mode mode[TK_TUCKER_MAX_ORDER];
    cudaEvent_t start = nullptr, stop = nullptr;
};

/* The one CUDA check (common/cuda_check.cuh): on failure, return its status. */
#define CK(call) TK_CUDA_TRY_RETURN("FastTucker on CUDA", call)

/* ---- host side ------------------------------------------------------------------------ */

static dev_state *state(const tk_tucker_solver *s) { return static_cast<dev_state *>(s->cuda); }

/* Device bytes of an array of count T (16 bytes of slack keep empty arrays allocatable). */
template <typename T> static size_t dev_bytes(size_t count) { return count * sizeof(T) + 16; }

/* Everything tk_tucker_cuda_create puts on the device: the model (A, B, C of every mode),
 * every mode's B-CSF storage, and the pass scratch.  None of it is chunked. */
static size_t resident_bytes(const tk_tucker_solver *s)
{
    const size_t J = (size_t)s->rank_j, R = (size_t)s->rank_r;
    size_t bytes = 0, maxdim = 0;
    for (int n = 0; n < s->order; ++n) {
        const size_t rows = s->dims[n];
        const tk_tucker_bcsf *b = &s->bcsf[n];
        if (rows > maxdim) maxdim = rows;
        bytes += dev_bytes<float>(rows * J) + dev_bytes<float>(J * R) + dev_bytes<float>(rows * R);
        bytes += dev_bytes<unsigned long long>(b->num_parts + 1) + 2 * dev_bytes<uint32_t>(b->num_parts);
        bytes += dev_bytes<uint32_t>(b->nnz * (size_t)(s->order - 1)) + dev_bytes<float>(b->nnz);
    }
    return bytes + dev_bytes<float>(maxdim * J) + dev_bytes<float>(maxdim * R) + J * R * sizeof(float) +
           sizeof(unsigned long long);
}

/* The whole model must be resident: a refusal names all of it, not the one buffer that
 * did not fit. */
static tk_status out_of_memory(const tk_tucker_solver *s)
{
    char what[192];
    snprintf(what, sizeof what,
             "the resident model and tensor (order %d, ranks %d and %d, %zu entries; FastTucker does not chunk)",
             s->order, s->rank_j, s->rank_r, s->nnz);
    return tk_cuda_out_of_memory("FastTucker on CUDA", what, resident_bytes(s));
}

static tk_status dev_alloc(const tk_tucker_solver *s, void **dst, size_t bytes)
{
    cudaError_t err = tk_cuda_malloc(dst, bytes);
    if (err == cudaErrorMemoryAllocation) return out_of_memory(s);
    return tk_cuda_status(err, "FastTucker on CUDA", "cudaMalloc");
}

template <typename T>
static tk_status upload(const tk_tucker_solver *s, T **dst, const T *src, size_t count)
{
    tk_status st = dev_alloc(s, reinterpret_cast<void **>(dst), dev_bytes<T>(count));
    if (st != TK_OK) return st;
    if (count) CK(cudaMemcpy(*dst, src, count * sizeof(T), cudaMemcpyHostToDevice));
    return TK_OK;
}

static int refresh_blocks(const dev_state *d, uint32_t rows)
{
    size_t need = ((size_t)rows + policy::warps_per_block - 1) / policy::warps_per_block;
    size_t cap = (size_t)d->sms * d->tuning.refresh_blocks_per_sm;
    return (int)(need < cap ? (need ? need : 1) : cap);
}

static tk_status refresh(const tk_tucker_solver *s, int n, bool with_delta)
{
    dev_state *d = state(s);
    const size_t b_bytes = (size_t)s->rank_j * s->rank_r * sizeof(float); /* B(n), staged in shared memory */
    refresh_kernel<policy><<<refresh_blocks(d, s->dims[n]), policy::threads_per_block, b_bytes>>>(
        d->a[n], with_delta ? d->delta : nullptr, d->b[n], d->c[n], s->dims[n], s->rank_j, s->rank_r);
    CK(cudaGetLastError());
    return TK_OK;
}

extern "C" tk_status tk_tucker_cuda_create(tk_tucker_solver *s, const tk_tucker_model *m)
{
    const tk_status usable = tk_cuda_require_device(s->opts.cuda_device);
    if (usable != TK_OK) return usable;
    dev_state *d = new (std::nothrow) dev_state;
    if (!d) return tk_set_error(TK_ERR_MEMORY, "cannot allocate the CUDA state");
    s->cuda = d;
    d->device = s->opts.cuda_device;
    CK(cudaSetDevice(d->device));
    CK(cudaDeviceGetAttribute(&d->sms, cudaDevAttrMultiProcessorCount, d->device));
    int cc_major = 0, cc_minor = 0;
    CK(cudaDeviceGetAttribute(&cc_major, cudaDevAttrComputeCapabilityMajor, d->device));
    CK(cudaDeviceGetAttribute(&cc_minor, cudaDevAttrComputeCapabilityMinor, d->device));
    d->tuning = tk_tucker_tuning_for(cc_major * 10 + cc_minor);
    /* Refused up front when it cannot fit, before any upload; a partial set-up is freed
     * by tk_tucker_cuda_destroy (the front end calls it on every failure). */
    size_t free_b = 0, total_b = 0;
    tk_status st = tk_cuda_memory_get(&free_b, &total_b);
    if (st != TK_OK) return st;
    if (resident_bytes(s) > free_b) return out_of_memory(s);
    const size_t J = (size_t)s->rank_j, R = (size_t)s->rank_r;
    size_t maxdim = 0;
    for (int n = 0; n < s->order; ++n) {
        size_t rows = s->dims[n];
        if (rows > maxdim) maxdim = rows;
        if ((st = upload(s, &d->a[n], m->a[n], rows * J)) != TK_OK) return st;
        if ((st = upload(s, &d->b[n], m->b[n], J * R)) != TK_OK) return st;
        if ((st = dev_alloc(s, (void **)&d->c[n], dev_bytes<float>(rows * R))) != TK_OK) return st;
        const tk_tucker_bcsf *b = &s->bcsf[n];
        dev_mode &dm = d->mode[n];
        dm.parts = b->num_parts;
        unsigned long long *ptr = (unsigned long long *)malloc((b->num_parts + 1) * sizeof *ptr);
        if (!ptr) return tk_set_error(TK_ERR_MEMORY, "out of memory");
        for (size_t k = 0; k <= b->num_parts; ++k) ptr[k] = b->part_ptr[k];
        st = upload(s, &dm.part_ptr, ptr, b->num_parts + 1);
        free(ptr);
        if (st != TK_OK) return st;
        if ((st = upload(s, &dm.part_row, b->part_row, b->num_parts)) != TK_OK) return st;
        if ((st = upload(s, &dm.part_count, b->part_count, b->num_parts)) != TK_OK) return st;
        if ((st = upload(s, &dm.idx, b->idx, b->nnz * (size_t)(s->order - 1))) != TK_OK) return st;
        if ((st = upload(s, &dm.val, b->val, b->nnz)) != TK_OK) return st;
    }
    if ((st = dev_alloc(s, (void **)&d->delta, dev_bytes<float>(maxdim * J))) != TK_OK) return st;
    CK(cudaMemset(d->delta, 0, maxdim * J * sizeof(float)));
    if ((st = dev_alloc(s, (void **)&d->z, dev_bytes<float>(maxdim * R))) != TK_OK) return st;
    if ((st = dev_alloc(s, (void **)&d->g, J * R * sizeof(float))) != TK_OK) return st;
    if ((st = dev_alloc(s, (void **)&d->counter, sizeof(unsigned long long))) != TK_OK) return st;
    CK(cudaEventCreate(&d->start));
    CK(cudaEventCreate(&d->stop));
    for (int n = 0; n < s->order; ++n)
        if ((st = refresh(s, n, false)) != TK_OK) return st;
    CK(cudaDeviceSynchronize());
    /* The device copy is what the passes use; the host B-CSF is no longer needed. */
    for (int n = 0; n < s->order; ++n) tk_tucker_bcsf_free(&s->bcsf[n]);
    return TK_OK;
}

/* The device arrays of one mode's B-CSF. */
static void free_mode(dev_mode &m)
{
    tk_cuda_free(m.part_row);
    tk_cuda_free(m.part_count);
    tk_cuda_free(m.part_ptr);
    tk_cuda_free(m.idx);
    tk_cuda_free(m.val);
    m = dev_mode();
}

extern "C" void tk_tucker_cuda_destroy(tk_tucker_solver *s)
{
    dev_state *d = state(s);
    if (!d) return;
    cudaSetDevice(d->device);
    for (int n = 0; n < TK_TUCKER_MAX_ORDER; ++n) {
        tk_cuda_free(d->a[n]);
        tk_cuda_free(d->b[n]);
        tk_cuda_free(d->c[n]);
        free_mode(d->mode[n]);
    }
    tk_cuda_free(d->delta);
    tk_cuda_free(d->z);
    tk_cuda_free(d->g);
    tk_cuda_free(d->counter);
    if (d->start) cudaEventDestroy(d->start);
    if (d->stop) cudaEventDestroy(d->stop);
    delete d;
    s->cuda = nullptr;
}

static pass_args make_args(const tk_tucker_solver *s, int n)
{
    const dev_state *d = state(s);
    const dev_mode &dm = d->mode[n];
    pass_args p = {};
    p.levels = s->order - 1;
    p.J = s->rank_j;
    p.R = s->rank_r;
    for (int k = 0, m = 0; m < s->order; ++m)
        if (m != n) p.cother[k++] = d->c[m];
    p.mode = dm;
    p.a = d->a[n];
    p.b = d->b[n];
    p.cn = d->c[n];
    p.delta = d->delta;
    p.z = d->z;
    p.counter = d->counter;
    return p;
}

/* The passes' time on the device, from d->start (recorded before their first launch). */
static tk_status stop_timer(dev_state *d, double *ms)
{
    CK(cudaEventRecord(d->stop));
    CK(cudaEventSynchronize(d->stop));
    float t = 0;
    CK(cudaEventElapsedTime(&t, d->start, d->stop));
    *ms = t;
    return TK_OK;
}

/* Enough resident warps to cover the GPU; each loops over sub-slices. */
static int pass_blocks(const dev_state *d, unsigned long long parts)
{
    unsigned long long need = (parts + policy::warps_per_block - 1) / policy::warps_per_block;
    unsigned long long cap = (unsigned long long)d->sms * d->tuning.pass_blocks_per_sm;
    return (int)(need < cap ? (need ? need : 1) : cap);
}

extern "C" tk_status tk_tucker_cuda_factors(tk_tucker_solver *s, double *ms)
{
    dev_state *d = state(s);
    CK(cudaSetDevice(d->device));
    CK(cudaEventRecord(d->start));
    for (int n = 0; n < s->order; ++n) {
        pass_args p = make_args(s, n);
        p.lr = (float)s->opts.lr_a;
        p.lambda = (float)s->opts.lambda_a;
        CK(cudaMemsetAsync(d->counter, 0, sizeof *d->counter));
        int blocks = pass_blocks(d, p.mode.parts), threads = policy::threads_per_block;
        bool wide_j = s->rank_j > 32, wide_r = s->rank_r > 32;
        if (!wide_j && !wide_r)
            factor_kernel<policy, 1, 32><<<blocks, threads>>>(p);
        else if (!wide_j)
            factor_kernel<policy, 1, 64><<<blocks, threads>>>(p);
        else if (!wide_r)
            factor_kernel<policy, 2, 32><<<blocks, threads>>>(p);
        else
            factor_kernel<policy, 2, 64><<<blocks, threads>>>(p);
        CK(cudaGetLastError());
        tk_status st = refresh(s, n, true);
        if (st != TK_OK) return st;
    }
    return stop_timer(d, ms);
}

extern "C" tk_status tk_tucker_cuda_core(tk_tucker_solver *s, double *ms)
{
    dev_state *d = state(s);
    CK(cudaSetDevice(d->device));
    CK(cudaEventRecord(d->start));
    const int J = s->rank_j, R = s->rank_r;
    for (int n = 0; n < s->order; ++n) {
        pass_args p = make_args(s, n);
        CK(cudaMemsetAsync(d->counter, 0, sizeof *d->counter));
        CK(cudaMemsetAsync(d->z, 0, (size_t)s->dims[n] * R * sizeof(float)));
        CK(cudaMemsetAsync(d->g, 0, (size_t)J * R * sizeof(float)));
        int blocks = pass_blocks(d, p.mode.parts), threads = policy::threads_per_block;
        if (R > 32)
            core_kernel<policy, 2><<<blocks, threads>>>(p);
        else
            core_kernel<policy, 1><<<blocks, threads>>>(p);
        CK(cudaGetLastError());
        unsigned gram_blocks = (unsigned)((s->dims[n] + policy::gram_rows_per_block - 1) / policy::gram_rows_per_block);
        gram_kernel<policy><<<gram_blocks, policy::gram_threads>>>(d->a[n], d->z, s->dims[n], J, R, d->g);
        CK(cudaGetLastError());
        update_core_kernel<<<1, policy::core_update_threads>>>(d->b[n], d->g, J * R, (float)s->opts.lr_b,
                                        s->nnz ? (float)(1.0 / (double)s->nnz) : 0.0f, (float)s->opts.lambda_b);
        CK(cudaGetLastError());
        tk_status st = refresh(s, n, false);
        if (st != TK_OK) return st;
    }
    return stop_timer(d, ms);
}

extern "C" tk_status tk_tucker_cuda_model(const tk_tucker_solver *s, tk_tucker_model *out)
{
    const dev_state *d = state(s);
    CK(cudaSetDevice(d->device));
    for (int n = 0; n < s->order; ++n) {
        CK(cudaMemcpy(out->a[n], d->a[n], (size_t)s->dims[n] * s->rank_j * sizeof(float), cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(out->b[n], d->b[n], (size_t)s->rank_j * s->rank_r * sizeof(float), cudaMemcpyDeviceToHost));
    }
    return TK_OK;
}
