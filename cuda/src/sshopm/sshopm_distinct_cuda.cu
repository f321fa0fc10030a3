/* The distinct-pairs pipeline of SS-HOPM on one GPU (sshopm_pipeline.h).  Chunk c runs on
 * stream c % 2 with buffer set c % 2: its tensors staged into pinned memory and uploaded,
 * the solve kernel, the device merge (sshopm_merge_kernels.cu), the pair count downloaded;
 * while it runs, the host finishes chunk c - 1 (its pairs downloaded through pinned memory
 * and appended to the caller's arrays) and then stages chunk c + 1, whose upload overlaps
 * chunk c's kernels.  Per-start results never leave the device. */
#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cuda_check.cuh"
#include "common/cuda_memory.h"
#include "sshopm_merge_cuda.h"
#include "sshopm_pipeline.h"

#define TK_WHO "SS-HOPM distinct pairs on CUDA"

/* At most this many tensors a chunk: enough threads to fill the GPU many times over, and
 * enough chunks in a dMRI batch for the overlap. */
#define TK_PIPELINE_MAX_CHUNK ((size_t)65536)
/* Pairs a chunk's pinned download buffers hold per tensor; a chunk with more pairs is
 * downloaded in several rounds. */
#define TK_PIPELINE_PAIRS_PER_TENSOR ((size_t)16)

struct pipeline_set {
    cudaStream_t stream;
    cudaEvent_t ev0, ev1, ev_total;
    /* device */
    void *d_packed, *d_lambda, *d_x;
    double *d_packed_d;
    int *d_iter;
    unsigned char *d_conv;
    double *d_unit;
    int *d_rep, *d_cnt, *d_ord;
    unsigned long long *d_offset;
    size_t *d_tensor;
    double *d_plambda, *d_px;
    tk_stability *d_stab;
    int32_t *d_pcnt;
    /* pinned host */
    void *h_in;
    unsigned long long *h_total;
    size_t *h_tensor;
    double *h_plambda, *h_px;
    tk_stability *h_stab;
    int32_t *h_pcnt;
    /* the chunk it holds */
    size_t first, todo;
};

struct tk_sshopm_pipeline {
    size_t chunk, out_cap; /* tensors a chunk, pairs a download round */
    int device, dim, starts, order, dbl;
    void *d_starts;
    pipeline_set sets[2];
    /* The solve kernels' time: the union of the chunks' kernel spans, each measured from
     * ev_start (a sum would count twice what the two streams overlap). */
    cudaEvent_t ev_start;
    float covered_until, kernel_ms;
};

static void free_set(pipeline_set *s)
{
    if (s->d_packed_d == (double *)s->d_packed) s->d_packed_d = NULL; /* double input: one buffer, freed once */
    tk_cuda_buffer bufs[] = {{&s->d_packed, 1},         {(void **)&s->d_packed_d, 1}, {&s->d_lambda, 1},
                             {&s->d_x, 1},              {(void **)&s->d_iter, 1},     {(void **)&s->d_conv, 1},
                             {(void **)&s->d_unit, 1},  {(void **)&s->d_rep, 1},      {(void **)&s->d_cnt, 1},
                             {(void **)&s->d_ord, 1},   {(void **)&s->d_offset, 1},   {(void **)&s->d_tensor, 1},
                             {(void **)&s->d_plambda, 1}, {(void **)&s->d_px, 1},    {(void **)&s->d_stab, 1},
                             {(void **)&s->d_pcnt, 1}};
    tk_cuda_free_all(bufs, (int)(sizeof bufs / sizeof bufs[0]));
    void *pinned[] = {s->h_in, s->h_total, s->h_tensor, s->h_plambda, s->h_px, s->h_stab, s->h_pcnt};
    for (void *p : pinned)
        if (p) cudaFreeHost(p);
    if (s->stream) cudaStreamDestroy(s->stream);
    for (cudaEvent_t e : {s->ev0, s->ev1, s->ev_total})
        if (e) cudaEventDestroy(e);
    memset(s, 0, sizeof *s);
}

void tk_sshopm_pipeline_destroy(tk_sshopm_pipeline *p)
{
    if (!p) return;
    for (pipeline_set &s : p->sets) {
        if (s.stream) cudaStreamSynchronize(s.stream);
        free_set(&s);
    }
    tk_cuda_free(p->d_starts);
    if (p->ev_start) cudaEventDestroy(p->ev_start);
    free(p);
}

/* Device bytes of one tensor in one set. */
static size_t device_bytes_per_tensor(const tk_sshopm_options *o, size_t k)
{
    const size_t S = (size_t)o->num_starts, n = (size_t)o->dim;
    const size_t elem = o->precision == TK_PRECISION_DOUBLE ? sizeof(double) : sizeof(float);
    const size_t packed = elem * k + (elem == sizeof(double) ? 0 : sizeof(double) * k);
    const size_t starts = S * (elem * (n + 1) + sizeof(int) + 1);
    const size_t merge = S * (sizeof(double) * n + 3 * sizeof(int)) + sizeof(unsigned long long);
    const size_t pairs = S * (sizeof(size_t) + sizeof(double) * (n + 1) + sizeof(tk_stability) + sizeof(int32_t));
    return packed + starts + merge + pairs;
}

static cudaError_t alloc_set(pipeline_set *s, const tk_sshopm_options *o, size_t k, size_t chunk, size_t out_cap)
{
    const size_t S = (size_t)o->num_starts, n = (size_t)o->dim, slots = chunk * S;
    const int dbl = o->precision == TK_PRECISION_DOUBLE;
    const size_t elem = dbl ? sizeof(double) : sizeof(float);
    tk_cuda_buffer bufs[] = {{&s->d_packed, elem * k * chunk},
                             {(void **)&s->d_packed_d, dbl ? 0 : sizeof(double) * k * chunk},
                             {&s->d_lambda, elem * slots},
                             {&s->d_x, elem * slots * n},
                             {(void **)&s->d_iter, sizeof(int) * slots},
                             {(void **)&s->d_conv, slots},
                             {(void **)&s->d_unit, sizeof(double) * slots * n},
                             {(void **)&s->d_rep, sizeof(int) * slots},
                             {(void **)&s->d_cnt, sizeof(int) * slots},
                             {(void **)&s->d_ord, sizeof(int) * slots},
                             {(void **)&s->d_offset, sizeof(unsigned long long) * (chunk + 1)},
                             {(void **)&s->d_tensor, sizeof(size_t) * slots},
                             {(void **)&s->d_plambda, sizeof(double) * slots},
                             {(void **)&s->d_px, sizeof(double) * slots * n},
                             {(void **)&s->d_stab, sizeof(tk_stability) * slots},
                             {(void **)&s->d_pcnt, sizeof(int32_t) * slots}};
    cudaError_t err = tk_cuda_malloc_all(bufs, (int)(sizeof bufs / sizeof bufs[0]));
    if (err != cudaSuccess) return err;
    if (dbl) s->d_packed_d = (double *)s->d_packed;
    struct {
        void **slot;
        size_t bytes;
    } pinned[] = {{&s->h_in, elem * k * chunk},
                  {(void **)&s->h_total, sizeof(unsigned long long)},
                  {(void **)&s->h_tensor, sizeof(size_t) * out_cap},
                  {(void **)&s->h_plambda, sizeof(double) * out_cap},
                  {(void **)&s->h_px, sizeof(double) * out_cap * n},
                  {(void **)&s->h_stab, sizeof(tk_stability) * out_cap},
                  {(void **)&s->h_pcnt, sizeof(int32_t) * out_cap}};
    for (auto &p : pinned)
        if ((err = cudaHostAlloc(p.slot, p.bytes, cudaHostAllocDefault)) != cudaSuccess) return err;
    if ((err = cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking)) != cudaSuccess) return err;
    for (cudaEvent_t *e : {&s->ev0, &s->ev1, &s->ev_total})
        if ((err = cudaEventCreate(e)) != cudaSuccess) return err;
    return cudaSuccess;
}

/* A pipeline for chunks of up to `want` tensors, within the device's free memory (two sets);
 * halved down to one tensor while the buffers do not fit. */
static tk_status create(const tk_sshopm_pipeline_host *h, size_t want, tk_sshopm_pipeline **out)
{
    const tk_sshopm_options *o = h->o;
    const size_t k = h->tb->k, elem = o->precision == TK_PRECISION_DOUBLE ? sizeof(double) : sizeof(float);
    const size_t starts_bytes = elem * (size_t)o->num_starts * (size_t)o->dim;
    size_t free_bytes = 0, total_bytes = 0;
    tk_status status = tk_cuda_memory_get(&free_bytes, &total_bytes);
    if (status != TK_OK) return status;
    const size_t per_tensor = device_bytes_per_tensor(o, k), budget = tk_cuda_budget(free_bytes);
    size_t chunk = budget > starts_bytes ? (budget - starts_bytes) / (2 * per_tensor) : 0;
    if (chunk > want) chunk = want;
    if (chunk > TK_PIPELINE_MAX_CHUNK) chunk = TK_PIPELINE_MAX_CHUNK;
    if (chunk == 0) chunk = 1;
    tk_sshopm_pipeline *p = (tk_sshopm_pipeline *)calloc(1, sizeof *p);
    if (!p) return tk_set_error(TK_ERR_MEMORY, "out of memory for an SS-HOPM pipeline");
    p->device = o->cuda_device, p->dim = o->dim, p->starts = o->num_starts, p->order = o->order;
    p->dbl = o->precision == TK_PRECISION_DOUBLE;
    cudaError_t err = cudaEventCreate(&p->ev_start);
    if (err == cudaSuccess) err = tk_cuda_malloc(&p->d_starts, starts_bytes);
    if (err == cudaSuccess) err = cudaMemcpy(p->d_starts, h->starts, starts_bytes, cudaMemcpyHostToDevice);
    while (err == cudaSuccess) {
        const size_t per_round = (size_t)o->num_starts < TK_PIPELINE_PAIRS_PER_TENSOR ? (size_t)o->num_starts
                                                                                      : TK_PIPELINE_PAIRS_PER_TENSOR;
        p->chunk = chunk, p->out_cap = chunk * per_round;
        err = alloc_set(&p->sets[0], o, k, chunk, p->out_cap);
        if (err == cudaSuccess) err = alloc_set(&p->sets[1], o, k, chunk, p->out_cap);
        if (err == cudaSuccess) break;
        free_set(&p->sets[0]), free_set(&p->sets[1]);
        if (err != cudaErrorMemoryAllocation || chunk == 1) break;
        cudaGetLastError();
        err = cudaSuccess;
        chunk = (chunk + 1) / 2;
    }
    if (err != cudaSuccess) {
        tk_sshopm_pipeline_destroy(p);
        if (err == cudaErrorMemoryAllocation) {
            char what[96];
            snprintf(what, sizeof what, "the distinct pairs of one tensor with its %d starts", o->num_starts);
            return tk_cuda_out_of_memory(TK_WHO, what, starts_bytes + 2 * per_tensor);
        }
        return tk_cuda_status(err, TK_WHO, "allocating the pipeline");
    }
    *out = p;
    return TK_OK;
}

static tk_merge_chunk chunk_view(const pipeline_set &s)
{
    tk_merge_chunk b;
    b.packed = s.d_packed, b.packed_d = s.d_packed_d;
    b.lambda = s.d_lambda, b.x = s.d_x, b.converged = s.d_conv;
    b.unit = s.d_unit, b.rep = s.d_rep, b.cnt = s.d_cnt, b.ord = s.d_ord, b.offset = s.d_offset;
    b.tensor = s.d_tensor, b.pair_lambda = s.d_plambda, b.pair_x = s.d_px, b.stability = s.d_stab;
    b.num_starts = s.d_pcnt;
    return b;
}

/* Stage and enqueue the set's chunk: upload, solve, merge, the pair count's download. */
static tk_status start_chunk(const tk_sshopm_pipeline *p, const tk_sshopm_pipeline_host *h, pipeline_set &s,
                             const void *packed, double merge_tol)
{
    const size_t k = h->tb->k, elem = p->dbl ? sizeof(double) : sizeof(float);
    const size_t bytes = elem * k * s.todo;
    memcpy(s.h_in, (const char *)packed + elem * k * s.first, bytes);
    TK_CUDA_TRY_RETURN(TK_WHO, cudaMemcpyAsync(s.d_packed, s.h_in, bytes, cudaMemcpyHostToDevice, s.stream));
    TK_CUDA_TRY_RETURN(TK_WHO, cudaEventRecord(s.ev0, s.stream));
    TK_CUDA_TRY_RETURN(TK_WHO, tk_sshopm_cuda_solve_async(h->cuda, s.d_packed, p->d_starts, s.d_lambda, s.d_x,
                                                          s.d_iter, s.d_conv, s.todo, s.stream));
    TK_CUDA_TRY_RETURN(TK_WHO, cudaEventRecord(s.ev1, s.stream));
    TK_CUDA_TRY_RETURN(TK_WHO, tk_sshopm_merge_enqueue(chunk_view(s), p->order, p->dim, p->starts, p->dbl, s.todo,
                                                       s.first, merge_tol, h->sm_count, s.stream));
    TK_CUDA_TRY_RETURN(TK_WHO, cudaMemcpyAsync(s.h_total, s.d_offset + s.todo, sizeof(unsigned long long),
                                               cudaMemcpyDeviceToHost, s.stream));
    TK_CUDA_TRY_RETURN(TK_WHO, cudaEventRecord(s.ev_total, s.stream));
    return TK_OK;
}

/* Wait for the set's pair count, then download its pairs in rounds of the pinned buffers'
 * size and append them to out. */
static tk_status finish_chunk(tk_sshopm_pipeline *p, pipeline_set &s, tk_eigenpairs *out)
{
    TK_CUDA_TRY_RETURN(TK_WHO, cudaEventSynchronize(s.ev_total));
    float from = 0, to = 0;
    TK_CUDA_TRY_RETURN(TK_WHO, cudaEventElapsedTime(&from, p->ev_start, s.ev0));
    TK_CUDA_TRY_RETURN(TK_WHO, cudaEventElapsedTime(&to, p->ev_start, s.ev1));
    if (from < p->covered_until) from = p->covered_until;
    if (to > from) p->kernel_ms += to - from;
    if (to > p->covered_until) p->covered_until = to;
    const size_t total = (size_t)*s.h_total, n = (size_t)p->dim;
    tk_status status = tk_eigenpairs_reserve(out, out->count + total);
    if (status != TK_OK) return status;
    for (size_t done = 0; done < total;) {
        const size_t round = total - done < p->out_cap ? total - done : p->out_cap, at = out->count;
        TK_CUDA_TRY_RETURN(TK_WHO, cudaMemcpyAsync(s.h_tensor, s.d_tensor + done, sizeof(size_t) * round,
                                                   cudaMemcpyDeviceToHost, s.stream));
        TK_CUDA_TRY_RETURN(TK_WHO, cudaMemcpyAsync(s.h_plambda, s.d_plambda + done, sizeof(double) * round,
                                                   cudaMemcpyDeviceToHost, s.stream));
        TK_CUDA_TRY_RETURN(TK_WHO, cudaMemcpyAsync(s.h_px, s.d_px + done * n, sizeof(double) * round * n,
                                                   cudaMemcpyDeviceToHost, s.stream));
        TK_CUDA_TRY_RETURN(TK_WHO, cudaMemcpyAsync(s.h_stab, s.d_stab + done, sizeof(tk_stability) * round,
                                                   cudaMemcpyDeviceToHost, s.stream));
        TK_CUDA_TRY_RETURN(TK_WHO, cudaMemcpyAsync(s.h_pcnt, s.d_pcnt + done, sizeof(int32_t) * round,
                                                   cudaMemcpyDeviceToHost, s.stream));
        TK_CUDA_TRY_RETURN(TK_WHO, cudaStreamSynchronize(s.stream));
        memcpy(out->tensor + at, s.h_tensor, sizeof(size_t) * round);
        memcpy(out->lambda + at, s.h_plambda, sizeof(double) * round);
        memcpy(out->x + at * n, s.h_px, sizeof(double) * round * n);
        memcpy(out->stability + at, s.h_stab, sizeof(tk_stability) * round);
        memcpy(out->num_starts + at, s.h_pcnt, sizeof(int32_t) * round);
        out->count += round;
        done += round;
    }
    return TK_OK;
}

tk_status tk_sshopm_pipeline_run(tk_sshopm_pipeline **pipe, const tk_sshopm_pipeline_host *h, size_t T,
                                 const void *packed, double merge_tol, tk_eigenpairs *out, double *kernel_ms)
{
    *kernel_ms = 0;
    if (T == 0) return TK_OK;
    /* made for the plan's batch (or this one's), and again larger for a larger batch of a
     * plan made for no size */
    size_t want = h->max_batch ? h->max_batch : T;
    if (want > TK_PIPELINE_MAX_CHUNK) want = TK_PIPELINE_MAX_CHUNK;
    if (*pipe && !h->max_batch && (*pipe)->chunk < want) {
        tk_sshopm_pipeline_destroy(*pipe);
        *pipe = NULL;
    }
    tk_status status = TK_OK;
    if (!*pipe && (status = create(h, want, pipe)) != TK_OK) return status;
    tk_sshopm_pipeline *p = *pipe;
    const size_t chunks = (T + p->chunk - 1) / p->chunk;
    p->covered_until = 0, p->kernel_ms = 0;
    TK_CUDA_TRY_RETURN(TK_WHO, cudaEventRecord(p->ev_start, p->sets[0].stream));
    for (size_t c = 0; c <= chunks && status == TK_OK; ++c) {
        if (c < chunks) {
            pipeline_set &s = p->sets[c % 2];
            s.first = c * p->chunk;
            s.todo = T - s.first < p->chunk ? T - s.first : p->chunk;
            status = start_chunk(p, h, s, packed, merge_tol);
        }
        if (status == TK_OK && c >= 1) status = finish_chunk(p, p->sets[(c - 1) % 2], out);
    }
    *kernel_ms = p->kernel_ms;
    if (status != TK_OK) /* nothing of this call may still be running when it returns */
        for (pipeline_set &s : p->sets) cudaStreamSynchronize(s.stream);
    return status;
}
