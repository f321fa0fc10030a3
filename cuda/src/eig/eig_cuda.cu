/* CUDA backend of the batched eigensolver: the dispatch layer (plans, the streamed
 * pipeline, launches, errors).  The layers below: eig_device.cuh (device math),
 * eig_kernels.cuh (kernels and their pickers), eig_layout.cuh (layouts fitted to the
 * device), eig_tuning.h (the automatic choices, as data).
 *
 * Eigenvalues only: orders up to TK_EIG_SMALL_MAX_N on one thread per matrix run the
 * register kernel (eig_cuda_small.cuh: the whole matrix in registers, one kernel for
 * every phase); 2 to 32 lanes per matrix (lockstep_elems says which) run the lockstep
 * pair of eig_cuda_lockstep.cuh: every phase lane-parallel, the groups of a warp in
 * lockstep, the reduction and the QR on lanes of their own, the QR on the Hessenberg
 * band.  Otherwise the per-matrix solver is the CPU's own text (eig_body.h), except that values-only
 * solves on up to 32 lanes run the GPU's own QR iteration (eig_cuda_hqr.cuh: no
 * search for a lower bulge start, a parallel deflation scan, fewer barriers); what
 * changes is who runs it and where the matrix lives.  G threads share a matrix, G picked from n
 * (tk_eig_options.cuda_lanes overrides it, for tuning):
 *   G = 1:     one thread per matrix: the register kernel up to TK_EIG_SMALL_MAX_N, above
 *              it the matrices of a block in shared memory
 *              interleaved element by element (the seed's EW layout: consecutive
 *              threads touch consecutive words, no bank conflicts), values only;
 *   G = 2..32: a group of G lanes of one warp per matrix (matrix-wise layout, rows
 *              padded by one word), the row and column updates of every reflector
 *              split across the lanes, the scalar work (norms, shifts, deflation
 *              tests) done by all of them alike, so G below 32 spends fewer lanes
 *              on that redundant part; the seed's single-warp scheme is G = 32;
 *   G = 64:    one block of 64 threads per matrix (the seed's multi-warp scheme).
 * The block size is the one that keeps the most matrices resident per SM (shared
 * memory bounds it; pack_layout).  Batches run in chunks through a pipeline of streams
 * (see run_pipeline), so the copies overlap the kernels; pinned caller arrays are
 * copied directly, others through pinned staging buffers.
 */
#include <cuda_runtime.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/cuda_check.cuh"
#include "common/cuda_memory.h"
#include "common/device_arrays.h"
#include "eig_internal.h"
#include "eig_layout.cuh"
#include "tk_bench_hooks.h"

/* scratch: scratch_size(p, count) bytes, 8-byte aligned.  A batch runs in two stages: stage 0 reads the
 * matrices (the register kernel, the older kernel, or the lockstep reduction), stage 1
 * is the lockstep QR on the reduction's bands (nothing for the other schemes).  The
 * pipeline issues them apart (see run_pipeline). */
template <typename R>
static cudaError_t launch(const eig_layout &p, int stage, int n, size_t count, const void *a, void *values, void *vectors,
                          int8_t *status, int balance, int max_iter, void *scratch, cudaStream_t stream)
{
    const size_t blocks = (count + (size_t)p.groups - 1) / (size_t)p.groups;
    R *band = (R *)scratch;
    EigLsMeta *meta = (EigLsMeta *)(band + count * (size_t)eig_band_reals(n));
    if (stage == 1) {
        if (!p.elems) return cudaSuccess;
        size_t qr_blocks = (count + (size_t)p.qr_groups - 1) / (size_t)p.qr_groups;
        if (p.qr_grid > 0 && qr_blocks > (size_t)p.qr_grid) qr_blocks = (size_t)p.qr_grid;
        unsigned long long *taken = qr_counter(p, count, scratch);
        const cudaError_t err = cudaMemsetAsync(taken, 0, sizeof *taken, stream);
        if (err != cudaSuccess) return err;
        lockstep_qr<R>(p)<<<(unsigned)qr_blocks, p.qr_threads, p.qr_smem, stream>>>(
            n, p.qr_groups, (int)p.qr_group_reals, count, band, meta, (R *)values, status, max_iter, taken);
        return cudaGetLastError();
    }
    if (p.small) {
        small_kernel<R>(n)<<<(unsigned)blocks, p.threads, p.smem, stream>>>(count, (const R *)a, (R *)values, status,
                                                                           balance, max_iter);
    } else if (p.elems) {
        lockstep_reduce<R>(p.red_lanes, p.red_elems)<<<(unsigned)blocks, p.threads, p.smem, stream>>>(
            n, p.ld, p.groups, (int)p.group_reals, count, (const R *)a, band, meta, balance);
    } else {
        eig_kernel<R><<<(unsigned)blocks, p.threads, p.smem, stream>>>(p, n, count, (const R *)a, (R *)values,
                                                                       (R *)vectors, status, balance, max_iter);
    }
    return cudaGetLastError();
}

static cudaError_t launch_stage(int dbl, const eig_layout &p, int stage, int n, size_t count, const void *a, void *values,
                                void *vectors, int8_t *status, int balance, int max_iter, void *scratch,
                                cudaStream_t stream)
{
    if (dbl) return launch<double>(p, stage, n, count, a, values, vectors, status, balance, max_iter, scratch, stream);
    return launch<float>(p, stage, n, count, a, values, vectors, status, balance, max_iter, scratch, stream);
}

/* Both stages, one after the other in one stream. */
static cudaError_t launch_any(int dbl, const eig_layout &p, int n, size_t count, const void *a, void *values, void *vectors,
                              int8_t *status, int balance, int max_iter, void *scratch, cudaStream_t stream)
{
    cudaError_t err = cudaSuccess;
    for (int stage = 0; stage < 2 && err == cudaSuccess; ++stage)
        err = launch_stage(dbl, p, stage, n, count, a, values, vectors, status, balance, max_iter, scratch, stream);
    return err;
}

/* The streamed pipeline.  A chunk holds one of the plan's slots, device buffers (its
 * matrices, results and the lockstep kernels' scratch; with pageable caller arrays also
 * a pinned staging buffer) from its H2D copy until its results are back on the host.
 * The H2D copies go one after another through one stream, each slot's kernels through
 * a stream of its own (waiting for the chunk's copy by an event; the slots' kernels
 * overlap, which fills each launch's tail), and the D2H copies through a third: so the
 * copy engine is never held up behind a kernel.  How many slots: the tuning table's
 * (eig_tuning.h), or tk_eig_options.cuda_slots. */
#define TK_EIG_MAX_SLOTS 16

/* Matrices in the next chunk, the one starting at `first` (prev: the previous chunk's
 * size, 0 for the first; buffers hold `chunk`).  Chunks start at a sixteenth of a
 * chunk (at least 4096 matrices: fewer fill the GPU poorly) so that the GPU starts
 * early, grow to `chunk`, and shrink back toward the end so that the host waits little
 * for the last chunk's computation and results.  They double where the kernels outrun
 * the copies; where the copies are faster (`gentle`, the tuning table's) a chunk twice
 * the previous one would arrive after the GPU has finished everything before it, so they
 * grow by 30% (Documentation/benchmarks.md). */
static size_t next_chunk(size_t prev, size_t first, size_t count, size_t chunk, int gentle)
{
    const size_t left = count - first, floor = chunk < 4096 ? chunk : 4096;
    size_t m = !prev ? chunk / 16 : gentle ? prev + prev * 3 / 10 : 2 * prev;
    if (m > chunk) m = chunk;
    if (left / 2 < m) m = left / 2;
    if (m < floor) m = floor;
    return m < left ? m : left;
}

static size_t chunks_in(size_t count, size_t chunk, int gentle)
{
    size_t c = 0;
    for (size_t first = 0, m = 0; first < count; ++c) first += m = next_chunk(m, first, count, chunk, gentle);
    return c;
}

/* One slot of the pipeline: its buffers, its stream, the chunk it holds, and that
 * chunk's events: copy started and done, kernels started and done, results out. */
struct eig_slot {
    unsigned char *dev, *host;
    cudaStream_t stream;
    size_t first, count;
    cudaEvent_t in0, arrived, k0, mid, k1, freed;
};

static double ms_between(const struct timespec &a, const struct timespec &b)
{
    return (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) * 1e-6;
}

#define TK_WHO "Eigenvalues on CUDA"

/* A plan's device state.  What depends on whether vectors are wanted (the layout, the
 * chunk, the slots and their buffers) is set up for one kind of solve at a time
 * (set_up); the copy streams and the batch's start event live as long as the plan. */
struct tk_eig_cuda {
    tk_eig_options o;
    int dbl, cc, timeline;
    size_t elem, max_batch;
    cudaStream_t copy_in, copy_out;
    cudaEvent_t t0;
    /* set up for `want` (ready) */
    int ready, want, gentle, slots;
    eig_layout p;
    size_t setup_count, chunk, per_matrix, slot_b; /* set up for batches of setup_count */
    void *dev_all;
    eig_slot slot[TK_EIG_MAX_SLOTS];
    int device_arrays; /* this execute's arrays are in device memory (copies device to device) */
};

/* Device `o->cuda_device` made current, and its compute capability (10 * major + minor). */
static tk_status open_device(const tk_eig_options *o, int *cc)
{
    const tk_status usable = tk_cuda_require_device(o->cuda_device);
    if (usable != TK_OK) return usable;
    int major = 0, minor = 0;
    TK_CUDA_TRY_RETURN(TK_WHO, cudaSetDevice(o->cuda_device));
    TK_CUDA_TRY_RETURN(TK_WHO, cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, o->cuda_device));
    TK_CUDA_TRY_RETURN(TK_WHO, cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, o->cuda_device));
    *cc = 10 * major + minor;
    return TK_OK;
}

/* Streams wait for what they were given; nothing of the set-up is in use afterwards. */
static void drain(tk_eig_cuda *c)
{
    if (c->copy_in) cudaStreamSynchronize(c->copy_in);
    for (int s = 0; s < TK_EIG_MAX_SLOTS; ++s)
        if (c->slot[s].stream) cudaStreamSynchronize(c->slot[s].stream);
    if (c->copy_out) cudaStreamSynchronize(c->copy_out);
    for (int s = 0; s < TK_EIG_MAX_SLOTS; ++s) c->slot[s].count = 0;
}

static void tear_down(tk_eig_cuda *c)
{
    drain(c);
    for (int s = 0; s < TK_EIG_MAX_SLOTS; ++s) {
        eig_slot &sl = c->slot[s];
        if (sl.host) cudaFreeHost(sl.host);
        for (cudaEvent_t e : {sl.in0, sl.arrived, sl.k0, sl.mid, sl.k1, sl.freed})
            if (e) cudaEventDestroy(e);
        if (sl.stream) cudaStreamDestroy(sl.stream);
        sl = eig_slot{};
    }
    tk_cuda_free(c->dev_all);
    c->dev_all = NULL;
    c->ready = 0;
}

/* The layout, chunk and slots for `want` and batches of `count`, their device buffers
 * (one allocation: at n = 5 the host's set-up and clean-up are a fifth of a whole
 * one-shot solve), streams and events. */
static tk_status set_up(tk_eig_cuda *c, int want, size_t count)
{
    tear_down(c);
    struct timespec host_t[4]; /* start, kernels prepared, device memory, streams and events */
    clock_gettime(CLOCK_MONOTONIC, &host_t[0]);
    const tk_eig_options *o = &c->o;
    const int n = o->n;
    const tk_eig_tuning t = tk_eig_tuning_pick(c->cc, n, want);
    const int lanes = choose_lanes(o, want, t);
    if (!lanes) return TK_ERR_ARGUMENT;
    eig_layout p = make_layout(o, want, c->elem, lanes, t);
    tk_status st = check_smem(p, o->cuda_device);
    if (st != TK_OK) return st;
    pack_layout_any(c->dbl, &p, o->cuda_device);
    const size_t nn = (size_t)n * (size_t)n;
    const size_t per_matrix = nn * c->elem + 2 * (size_t)n * c->elem + (want ? 2 * nn * c->elem : 0) + 1;
    /* on the device each matrix also has the lockstep kernels' scratch */
    const size_t dev_per_matrix = per_matrix + p.scratch_bytes;
    size_t chunk = o->cuda_chunk;
    int slots = o->cuda_slots ? o->cuda_slots : t.slots;
    if (!chunk) {
        size_t free_b = 0, total_b = 0;
        if ((st = tk_cuda_memory_get(&free_b, &total_b)) != TK_OK) return st;
        size_t fit = tk_cuda_budget(free_b) / (size_t)slots / dev_per_matrix;
        /* several chunks per batch so that copies overlap compute, none too small to
         * fill the GPU, none so large that the pinned staging buffers take long to
         * allocate (the cap: the tuning table's) */
        chunk = (count + 7) / 8;
        if (chunk < 8192) chunk = 8192;
        const size_t cap = ((size_t)t.chunk_cap_mb << 20) / per_matrix;
        if (chunk > cap) chunk = cap > 1024 ? cap : 1024;
        if (chunk > fit) chunk = fit;
        if (chunk < 1) chunk = 1; /* the allocation below decides, and words the error */
    }
    if (chunk > count) chunk = count;
    const size_t chunks = chunks_in(count, chunk, t.gentle);
    if ((size_t)slots > chunks) slots = (int)chunks;
    TK_CUDA_TRY_RETURN(TK_WHO, prepare_kernel<double>(p));
    TK_CUDA_TRY_RETURN(TK_WHO, prepare_kernel<float>(p));
    clock_gettime(CLOCK_MONOTONIC, &host_t[1]);
    /* An automatic chunk whose buffers do not fit (another thread or process took memory
     * since the query) is halved; a cuda_chunk the caller chose is kept, and its failure
     * reported. */
    size_t slot_b = 0;
    for (;;) {
        slot_b = (scratch_offset(chunk, per_matrix) + scratch_size(p, chunk) + 255) & ~(size_t)255;
        cudaError_t err = tk_cuda_malloc(&c->dev_all, (size_t)slots * slot_b);
        if (err == cudaSuccess) break;
        if (err != cudaErrorMemoryAllocation) return tk_cuda_status(err, TK_WHO, "cudaMalloc");
        if (o->cuda_chunk || chunk == 1) {
            char what[160];
            snprintf(what, sizeof what, "a chunk of %zu matrices of order %d in each of %d buffers%s", chunk, n, slots,
                     o->cuda_chunk ? " (cuda_chunk; 0 picks a chunk that fits)" : "");
            return tk_cuda_out_of_memory(TK_WHO, what, (size_t)slots * chunk * dev_per_matrix);
        }
        chunk = (chunk + 1) / 2;
    }
    clock_gettime(CLOCK_MONOTONIC, &host_t[2]);
    /* events the host only waits on, or only orders streams by, keep no time (cheaper to
     * record), unless the timeline reads them */
    const unsigned untimed = c->timeline ? cudaEventDefault : cudaEventDisableTiming;
    for (int s = 0; s < slots; ++s) {
        eig_slot &sl = c->slot[s];
        sl.dev = (unsigned char *)c->dev_all + (size_t)s * slot_b;
        TK_CUDA_TRY_RETURN(TK_WHO, cudaStreamCreateWithFlags(&sl.stream, cudaStreamNonBlocking));
        TK_CUDA_TRY_RETURN(TK_WHO, cudaEventCreateWithFlags(&sl.in0, untimed));
        TK_CUDA_TRY_RETURN(TK_WHO, cudaEventCreateWithFlags(&sl.arrived, untimed));
        TK_CUDA_TRY_RETURN(TK_WHO, cudaEventCreate(&sl.k0));
        TK_CUDA_TRY_RETURN(TK_WHO, cudaEventCreateWithFlags(&sl.mid, untimed));
        TK_CUDA_TRY_RETURN(TK_WHO, cudaEventCreate(&sl.k1));
        TK_CUDA_TRY_RETURN(TK_WHO, cudaEventCreateWithFlags(&sl.freed, untimed));
    }
    clock_gettime(CLOCK_MONOTONIC, &host_t[3]);
    c->p = p, c->want = want, c->gentle = t.gentle, c->slots = slots;
    c->setup_count = count, c->chunk = chunk, c->per_matrix = per_matrix, c->slot_b = slot_b, c->ready = 1;
    if (c->timeline)
        fprintf(stderr,
                "eig timeline: plan set-up %.3f ms (layout and kernels %.3f, device memory %.3f, streams and events "
                "%.3f; %d buffers of %zu matrices)\n",
                ms_between(host_t[0], host_t[3]), ms_between(host_t[0], host_t[1]), ms_between(host_t[1], host_t[2]),
                ms_between(host_t[2], host_t[3]), slots, chunk);
    return TK_OK;
}

extern "C" void tk_eig_cuda_destroy(tk_eig_cuda *c)
{
    if (!c) return;
    struct timespec t[3]; /* start, buffers and slots gone, all gone (the timeline's) */
    clock_gettime(CLOCK_MONOTONIC, &t[0]);
    /* the state's device current while its streams and buffers go (a plan over several
     * devices destroys them all from one thread); the caller's device is kept */
    int previous = -1;
    if (cudaGetDevice(&previous) != cudaSuccess || cudaSetDevice(c->o.cuda_device) != cudaSuccess) {
        cudaGetLastError();
        previous = -1;
    }
    tear_down(c);
    clock_gettime(CLOCK_MONOTONIC, &t[1]);
    if (c->t0) cudaEventDestroy(c->t0);
    if (c->copy_in) cudaStreamDestroy(c->copy_in);
    if (c->copy_out) cudaStreamDestroy(c->copy_out);
    if (previous >= 0) cudaSetDevice(previous);
    clock_gettime(CLOCK_MONOTONIC, &t[2]);
    if (c->timeline)
        fprintf(stderr, "eig timeline: plan destroy %.3f ms (buffers and slots %.3f)\n", ms_between(t[0], t[2]),
                ms_between(t[0], t[1]));
    free(c);
}

extern "C" tk_status tk_eig_cuda_create(const tk_eig_options *o, size_t max_batch, int want, tk_eig_cuda **out)
{
    *out = NULL;
    tk_eig_cuda *c = (tk_eig_cuda *)calloc(1, sizeof *c);
    if (!c) return tk_set_error(TK_ERR_MEMORY, "out of memory for an eigenvalue plan");
    c->o = *o;
    c->dbl = o->precision == TK_PRECISION_DOUBLE;
    c->elem = c->dbl ? sizeof(double) : sizeof(float);
    c->timeline = o->cuda_timeline != 0;
    c->max_batch = max_batch;
    struct timespec t[3]; /* start, device open, plan-wide streams made (the timeline's) */
    clock_gettime(CLOCK_MONOTONIC, &t[0]);
    tk_status st = open_device(o, &c->cc);
    clock_gettime(CLOCK_MONOTONIC, &t[1]);
    if (st == TK_OK) st = tk_cuda_status(cudaStreamCreateWithFlags(&c->copy_in, cudaStreamNonBlocking), TK_WHO,
                                         "cudaStreamCreateWithFlags");
    if (st == TK_OK) st = tk_cuda_status(cudaStreamCreateWithFlags(&c->copy_out, cudaStreamNonBlocking), TK_WHO,
                                         "cudaStreamCreateWithFlags");
    if (st == TK_OK) st = tk_cuda_status(cudaEventCreate(&c->t0), TK_WHO, "cudaEventCreate");
    clock_gettime(CLOCK_MONOTONIC, &t[2]);
    if (c->timeline)
        fprintf(stderr, "eig timeline: plan create: device %.3f ms, plan-wide streams %.3f ms\n", ms_between(t[0], t[1]),
                ms_between(t[1], t[2]));
    if (st == TK_OK && max_batch) st = set_up(c, want, max_batch);
    if (st != TK_OK) {
        tk_eig_cuda_destroy(c);
        return st;
    }
    *out = c;
    return TK_OK;
}

extern "C" size_t tk_eig_cuda_device_bytes(const tk_eig_cuda *c)
{
    return c && c->ready ? (size_t)c->slots * c->slot_b : 0;
}

/* Pinned staging buffers for pageable caller arrays, made at the first execute that needs
 * them and kept with the set-up. */
static tk_status stage_buffers(tk_eig_cuda *c)
{
    for (int s = 0; s < c->slots; ++s)
        if (!c->slot[s].host)
            TK_CUDA_TRY_RETURN(TK_WHO, cudaMallocHost(&c->slot[s].host, c->chunk * c->per_matrix));
    return TK_OK;
}

/* The pipeline over a batch, on a set-up plan. */
static tk_status run_pipeline(tk_eig_cuda *cu, size_t count, const void *matrices, void *values, void *vectors,
                              int8_t *status, double *kernel_ms)
{
    const tk_eig_options *o = &cu->o;
    const eig_layout &p = cu->p;
    const int n = o->n, dbl = cu->dbl, want = cu->want, timeline = cu->timeline, gentle = cu->gentle;
    const size_t elem = cu->elem, nn = (size_t)n * (size_t)n, per_matrix = cu->per_matrix;
    const size_t in_b = nn * elem, val_b = 2 * (size_t)n * elem, vec_b = want ? 2 * nn * elem : 0;
    const int balance = o->balance != 0, max_iter = tk_eig_max_iter(o);
    /* device arrays are copied device to device, as pinned ones are copied in and out directly */
    const int on_device = cu->device_arrays;
    const int direct = on_device || (tk_cuda_is_pinned(matrices) && tk_cuda_is_pinned(values) &&
                                     tk_cuda_is_pinned(vectors) && tk_cuda_is_pinned(status));
    const cudaMemcpyKind in_kind = on_device ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice;
    const cudaMemcpyKind out_kind = on_device ? cudaMemcpyDeviceToDevice : cudaMemcpyDeviceToHost;
    const size_t chunk = cu->chunk < count ? cu->chunk : count;
    const size_t chunks = chunks_in(count, chunk, gentle);
    const int slots = (size_t)cu->slots > chunks ? (int)chunks : cu->slots;
    eig_slot *slot = cu->slot;
    cudaStream_t copy_in = cu->copy_in, copy_out = cu->copy_out;
    cudaEvent_t t0 = cu->t0;
    double kms = 0;
    tk_status st = TK_OK;
    struct timespec host_t[3]; /* start, pipeline done, drained */
    clock_gettime(CLOCK_MONOTONIC, &host_t[0]);
    if (!direct && (st = stage_buffers(cu)) != TK_OK) return st;
    TK_CUDA_TRY_GOTO(st, cleanup, TK_WHO, cudaEventRecord(t0, copy_in));
    {
        /* The slot's chunk is done (the host waited for its `freed`): its kernel time,
         * its line of the timeline, and (staged) its results to the caller's arrays. */
        const size_t scratch_at = scratch_offset(chunk, per_matrix);
        auto retire = [&](eig_slot &sl, size_t c) -> cudaError_t {
            float ms = 0;
            const cudaError_t err = cudaEventElapsedTime(&ms, sl.k0, sl.k1);
            if (err != cudaSuccess) return err;
            kms += ms;
            if (timeline) {
                float in0 = 0, in1 = 0, k0 = 0, mid = 0, k1 = 0, out = 0;
                cudaEventElapsedTime(&in0, t0, sl.in0), cudaEventElapsedTime(&in1, t0, sl.arrived);
                cudaEventElapsedTime(&k0, t0, sl.k0), cudaEventElapsedTime(&mid, t0, sl.mid);
                cudaEventElapsedTime(&k1, t0, sl.k1), cudaEventElapsedTime(&out, t0, sl.freed);
                fprintf(stderr,
                        "eig timeline: chunk %zu (%zu matrices from %zu): h2d %.3f-%.3f, kernels %.3f-%.3f (stage 0 done "
                        "%.3f), d2h done %.3f ms\n",
                        c, sl.count, sl.first, in0, in1, k0, k1, mid, out);
            }
            if (!direct) {
                unsigned char *h_val = sl.host + chunk * in_b, *h_vec = h_val + chunk * val_b;
                memcpy((unsigned char *)values + sl.first * val_b, h_val, sl.count * val_b);
                if (want) memcpy((unsigned char *)vectors + sl.first * vec_b, h_vec, sl.count * vec_b);
                memcpy(status + sl.first, h_vec + chunk * vec_b, sl.count);
            }
            sl.count = 0;
            return cudaSuccess;
        };
        /* The host issues a chunk in two halves: the front (its H2D copy, then stage 0 in
         * the slot's stream) and the back (stage 1 in the same stream, then the D2H
         * copies).  A chunk's back is issued after the next chunk's front, so that every
         * QR launch finds the reduction it depends on already queued ahead of it, and the
         * GPU can fill one launch's tail with the next launch's blocks. */
        auto front = [&](eig_slot &sl, size_t first, size_t m) -> cudaError_t {
            const unsigned char *src = (const unsigned char *)matrices + first * in_b;
            if (!direct) {
                memcpy(sl.host, src, m * in_b);
                src = sl.host;
            }
            if (!on_device) tk_count_array_transfer(m * in_b); /* the transfer probe (device_arrays.h) */
            cudaError_t err;
            if ((err = cudaEventRecord(sl.in0, copy_in)) != cudaSuccess ||
                (err = cudaMemcpyAsync(sl.dev, src, m * in_b, in_kind, copy_in)) != cudaSuccess ||
                (err = cudaEventRecord(sl.arrived, copy_in)) != cudaSuccess ||
                (err = cudaStreamWaitEvent(sl.stream, sl.arrived, 0)) != cudaSuccess ||
                (err = cudaEventRecord(sl.k0, sl.stream)) != cudaSuccess)
                return err;
            unsigned char *d_val = sl.dev + chunk * in_b, *d_vec = d_val + chunk * val_b;
            if ((err = launch_stage(dbl, p, 0, n, m, sl.dev, d_val, want ? d_vec : NULL, (int8_t *)(d_vec + chunk * vec_b),
                                    balance, max_iter, sl.dev + scratch_at, sl.stream)) != cudaSuccess)
                return err;
            sl.first = first, sl.count = m;
            return cudaEventRecord(sl.mid, sl.stream);
        };
        auto back = [&](eig_slot &sl) -> cudaError_t {
            const size_t first = sl.first, m = sl.count;
            unsigned char *d_val = sl.dev + chunk * in_b, *d_vec = d_val + chunk * val_b, *d_st = d_vec + chunk * vec_b;
            cudaError_t err;
            if ((err = launch_stage(dbl, p, 1, n, m, sl.dev, d_val, want ? d_vec : NULL, (int8_t *)d_st, balance, max_iter,
                                    sl.dev + scratch_at, sl.stream)) != cudaSuccess ||
                (err = cudaEventRecord(sl.k1, sl.stream)) != cudaSuccess ||
                (err = cudaStreamWaitEvent(copy_out, sl.k1, 0)) != cudaSuccess)
                return err;
            unsigned char *dst_val = direct ? (unsigned char *)values + first * val_b : sl.host + chunk * in_b;
            unsigned char *dst_vec = direct ? (want ? (unsigned char *)vectors + first * vec_b : NULL) : dst_val + chunk * val_b;
            unsigned char *dst_st = direct ? (unsigned char *)(status + first) : sl.host + chunk * (in_b + val_b + vec_b);
            if (!on_device) tk_count_array_transfer(m * (val_b + vec_b + 1));
            if ((err = cudaMemcpyAsync(dst_val, d_val, m * val_b, out_kind, copy_out)) != cudaSuccess ||
                (want && (err = cudaMemcpyAsync(dst_vec, d_vec, m * vec_b, out_kind, copy_out)) != cudaSuccess) ||
                (err = cudaMemcpyAsync(dst_st, d_st, m, out_kind, copy_out)) != cudaSuccess)
                return err;
            return cudaEventRecord(sl.freed, copy_out);
        };
        size_t c = 0, m = 0;
        eig_slot *pending = NULL; /* the chunk whose back is still to be issued */
        for (size_t first = 0; first < count; first += m, ++c) {
            eig_slot &sl = slot[c % (size_t)slots];
            m = next_chunk(m, first, count, chunk, gentle);
            if (pending == &sl) { /* one slot: its chunk must be out before the next comes in */
                TK_CUDA_TRY_GOTO(st, cleanup, TK_WHO, back(sl));
                pending = NULL;
            }
            if (sl.count) { /* the slot's previous chunk */
                TK_CUDA_TRY_GOTO(st, cleanup, TK_WHO, cudaEventSynchronize(sl.freed));
                TK_CUDA_TRY_GOTO(st, cleanup, TK_WHO, retire(sl, c - (size_t)slots));
            }
            TK_CUDA_TRY_GOTO(st, cleanup, TK_WHO, front(sl, first, m));
            if (pending) TK_CUDA_TRY_GOTO(st, cleanup, TK_WHO, back(*pending));
            pending = &sl;
        }
        if (pending) TK_CUDA_TRY_GOTO(st, cleanup, TK_WHO, back(*pending));
        /* the last chunks, in the order they were issued */
        for (size_t cc = c > (size_t)slots ? c - (size_t)slots : 0; cc < c; ++cc) {
            eig_slot &sl = slot[cc % (size_t)slots];
            if (!sl.count) continue;
            TK_CUDA_TRY_GOTO(st, cleanup, TK_WHO, cudaEventSynchronize(sl.freed));
            TK_CUDA_TRY_GOTO(st, cleanup, TK_WHO, retire(sl, cc));
        }
    }
    if (kernel_ms) *kernel_ms = kms;
    clock_gettime(CLOCK_MONOTONIC, &host_t[1]);
cleanup:
    drain(cu);
    if (timeline && st == TK_OK) {
        clock_gettime(CLOCK_MONOTONIC, &host_t[2]);
        fprintf(stderr, "eig timeline: pipeline %.3f ms, clean-up %.3f ms (%d buffers of %zu matrices)\n",
                ms_between(host_t[0], host_t[1]), ms_between(host_t[1], host_t[2]), slots, chunk);
    }
    return st;
}

extern "C" tk_status tk_eig_cuda_execute(tk_eig_cuda *c, size_t count, const void *matrices, void *values,
                                         void *vectors, int8_t *status, double *kernel_ms)
{
    const int want = vectors != NULL;
    TK_CUDA_TRY_RETURN(TK_WHO, cudaSetDevice(c->o.cuda_device));
    /* set up again for the other kind of solve; a plan made for no batch size grows with
     * its batches, one made for max_batch runs larger batches in chunks of its size */
    if (!c->ready || c->want != want || (!c->max_batch && count > c->setup_count)) {
        const tk_status st = set_up(c, want, c->max_batch ? c->max_batch : count > c->setup_count ? count : c->setup_count);
        if (st != TK_OK) return st;
    }
    return run_pipeline(c, count, matrices, values, vectors, status, kernel_ms);
}

extern "C" void *tk_eig_host_alloc(size_t bytes)
{
    void *p = NULL;
    if (cudaMallocHost(&p, bytes ? bytes : 1) == cudaSuccess) return p;
    cudaGetLastError();
    return malloc(bytes ? bytes : 1);
}

extern "C" void tk_eig_host_free(void *ptr)
{
    if (!ptr) return;
    if (tk_cuda_is_pinned(ptr)) cudaFreeHost(ptr);
    else free(ptr);
}

static float median3(const float v[3])
{
    const float lo = fminf(v[0], v[1]), hi = fmaxf(v[0], v[1]);
    return fmaxf(lo, fminf(hi, v[2]));
}

extern "C" tk_status tk_eig_cuda_measure(const tk_eig_options *o, size_t count, const void *matrices,
                                         tk_eig_cuda_profile *prof)
{
    tk_clear_error();
    if (!o || !prof || (count && !matrices)) return tk_set_error(TK_ERR_ARGUMENT, "tk_eig_cuda_measure: missing argument");
    if (o->n < 1 || o->n > TK_EIG_MAX_N)
        return tk_set_error(TK_ERR_UNSUPPORTED, "matrix order %d is outside the supported 1..%d", o->n, TK_EIG_MAX_N);
    if (!count) return tk_set_error(TK_ERR_ARGUMENT, "tk_eig_cuda_measure: no matrices");
    int cc = 0;
    tk_status st = open_device(o, &cc);
    if (st != TK_OK) return st;
    const int n = o->n, dbl = o->precision == TK_PRECISION_DOUBLE;
    const size_t elem = dbl ? sizeof(double) : sizeof(float), nn = (size_t)n * (size_t)n;
    const size_t in_b = count * nn * elem, val_b = count * 2 * (size_t)n * elem;
    const tk_eig_tuning t = tk_eig_tuning_pick(cc, n, 0);
    const int lanes = choose_lanes(o, 0, t);
    if (!lanes) return TK_ERR_ARGUMENT;
    eig_layout p = make_layout(o, 0, elem, lanes, t);
    if ((st = check_smem(p, o->cuda_device)) != TK_OK) return st;
    pack_layout_any(dbl, &p, o->cuda_device);
    void *d_in = NULL, *d_val = NULL, *d_scratch = NULL, *h_in = NULL, *h_val = NULL;
    const void *src = NULL;
    const size_t warm = count < 256 ? count : 256;
    int8_t *d_st = NULL;
    cudaEvent_t e[6] = {};
    float h2d = 0, kern = 0, d2h = 0;
    prof->scheme = scheme_name(p);
    size_t free_b = 0, total_b = 0;
    if ((st = tk_cuda_memory_get(&free_b, &total_b)) != TK_OK) goto cleanup;
    {
        char what[96];
        snprintf(what, sizeof what, "the whole batch of %zu matrices of order %d", count, n);
        const size_t scratch_b = scratch_size(p, count);
        const size_t all_b = in_b + val_b + count + scratch_b;
        tk_cuda_buffer bufs[] = {{&d_in, in_b}, {&d_val, val_b}, {(void **)&d_st, count}, {&d_scratch, scratch_b}};
        cudaError_t err = all_b > free_b ? cudaErrorMemoryAllocation : tk_cuda_malloc_all(bufs, 4);
        if (err == cudaErrorMemoryAllocation) {
            st = tk_cuda_out_of_memory("Eigenvalues on CUDA (measure)", what, all_b);
            goto cleanup;
        }
        TK_CUDA_TRY_GOTO(st, cleanup, TK_WHO " (measure)", err);
    }
    TK_CUDA_TRY_GOTO(st, cleanup, TK_WHO " (measure)", prepare_kernel<double>(p));
    TK_CUDA_TRY_GOTO(st, cleanup, TK_WHO " (measure)", prepare_kernel<float>(p));
    if (tk_cuda_is_pinned(matrices)) {
        src = matrices; /* the caller's pinned array: no second copy of a large batch */
    } else {
        TK_CUDA_TRY_GOTO(st, cleanup, TK_WHO " (measure)", cudaMallocHost(&h_in, in_b));
        memcpy(h_in, matrices, in_b);
        src = h_in;
    }
    TK_CUDA_TRY_GOTO(st, cleanup, TK_WHO " (measure)", cudaMallocHost(&h_val, val_b));
    for (int i = 0; i < 6; ++i) TK_CUDA_TRY_GOTO(st, cleanup, TK_WHO " (measure)", cudaEventCreate(&e[i]));
    /* warm-up: module load and first-launch costs stay out of the figures */
    TK_CUDA_TRY_GOTO(st, cleanup, TK_WHO " (measure)", cudaMemcpy(d_in, src, warm * nn * elem, cudaMemcpyHostToDevice));
    TK_CUDA_TRY_GOTO(st, cleanup, TK_WHO " (measure)", launch_any(dbl, p, n, warm, d_in, d_val, NULL, d_st, o->balance != 0, tk_eig_max_iter(o), d_scratch, 0));
    TK_CUDA_TRY_GOTO(st, cleanup, TK_WHO " (measure)", cudaDeviceSynchronize());

    TK_CUDA_TRY_GOTO(st, cleanup, TK_WHO " (measure)", cudaEventRecord(e[0]));
    TK_CUDA_TRY_GOTO(st, cleanup, TK_WHO " (measure)", cudaMemcpyAsync(d_in, src, in_b, cudaMemcpyHostToDevice, 0));
    TK_CUDA_TRY_GOTO(st, cleanup, TK_WHO " (measure)", cudaEventRecord(e[1]));
    TK_CUDA_TRY_GOTO(st, cleanup, TK_WHO " (measure)", cudaEventRecord(e[2]));
    TK_CUDA_TRY_GOTO(st, cleanup, TK_WHO " (measure)", launch_any(dbl, p, n, count, d_in, d_val, NULL, d_st, o->balance != 0, tk_eig_max_iter(o), d_scratch, 0));
    TK_CUDA_TRY_GOTO(st, cleanup, TK_WHO " (measure)", cudaEventRecord(e[3]));
    TK_CUDA_TRY_GOTO(st, cleanup, TK_WHO " (measure)", cudaEventRecord(e[4]));
    TK_CUDA_TRY_GOTO(st, cleanup, TK_WHO " (measure)", cudaMemcpyAsync(h_val, d_val, val_b, cudaMemcpyDeviceToHost, 0));
    TK_CUDA_TRY_GOTO(st, cleanup, TK_WHO " (measure)", cudaEventRecord(e[5]));
    TK_CUDA_TRY_GOTO(st, cleanup, TK_WHO " (measure)", cudaEventSynchronize(e[5]));
    TK_CUDA_TRY_GOTO(st, cleanup, TK_WHO " (measure)", cudaEventElapsedTime(&h2d, e[0], e[1]));
    TK_CUDA_TRY_GOTO(st, cleanup, TK_WHO " (measure)", cudaEventElapsedTime(&kern, e[2], e[3]));
    TK_CUDA_TRY_GOTO(st, cleanup, TK_WHO " (measure)", cudaEventElapsedTime(&d2h, e[4], e[5]));
    /* the copies vary by a tenth or more from one run to the next (seen at n = 25:
     * 49 to 66 ms): the median of three */
    {
        float h2d_runs[3] = {h2d}, d2h_runs[3] = {d2h};
        for (int r = 1; r < 3; ++r) {
            TK_CUDA_TRY_GOTO(st, cleanup, TK_WHO " (measure)", cudaEventRecord(e[0]));
            TK_CUDA_TRY_GOTO(st, cleanup, TK_WHO " (measure)", cudaMemcpyAsync(d_in, src, in_b, cudaMemcpyHostToDevice, 0));
            TK_CUDA_TRY_GOTO(st, cleanup, TK_WHO " (measure)", cudaEventRecord(e[1]));
            TK_CUDA_TRY_GOTO(st, cleanup, TK_WHO " (measure)", cudaMemcpyAsync(h_val, d_val, val_b, cudaMemcpyDeviceToHost, 0));
            TK_CUDA_TRY_GOTO(st, cleanup, TK_WHO " (measure)", cudaEventRecord(e[5]));
            TK_CUDA_TRY_GOTO(st, cleanup, TK_WHO " (measure)", cudaEventSynchronize(e[5]));
            TK_CUDA_TRY_GOTO(st, cleanup, TK_WHO " (measure)", cudaEventElapsedTime(&h2d_runs[r], e[0], e[1]));
            TK_CUDA_TRY_GOTO(st, cleanup, TK_WHO " (measure)", cudaEventElapsedTime(&d2h_runs[r], e[1], e[5]));
        }
        h2d = median3(h2d_runs), d2h = median3(d2h_runs);
    }
    prof->kernel_ms = kern;
    prof->copy_ms = (double)h2d + (double)d2h;
cleanup:
    for (int i = 0; i < 6; ++i)
        if (e[i]) cudaEventDestroy(e[i]);
    tk_cuda_free(d_in);
    tk_cuda_free(d_val);
    tk_cuda_free(d_st);
    tk_cuda_free(d_scratch);
    cudaFreeHost(h_in);
    cudaFreeHost(h_val);
    return st;
}

extern "C" tk_status tk_eig_cuda_execute_device(tk_eig_cuda *c, size_t count, const void *matrices, void *values,
                                                void *vectors, int8_t *status, double *kernel_ms)
{
    c->device_arrays = 1;
    const tk_status st = tk_eig_cuda_execute(c, count, matrices, values, vectors, status, kernel_ms);
    c->device_arrays = 0;
    return st;
}
