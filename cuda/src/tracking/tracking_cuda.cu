/* CUDA backend of the tracker: the dispatch.  A plan's device state (create): a copy of the
 * plan with its tables (the SH-to-tensor map, iFOD1's calibration directions), two chunk
 * sets' streams and events and a copy stream; the first execute adds the SH volume's buffer
 * and the chunk buffers, which later executes reuse, all freed with the plan.  An execute
 * uploads the SH volume and the region masks once, then tracks the seeds launch by launch
 * (tracking_kernels.cuh, tracking_warp.cuh, tracking_group.cuh), the kept streamlines packed
 * on the device and copied into host memory, and handed to the sink in seed order, as the
 * CPU hands them.
 *
 * The launches pipeline (execute_pipelined): two chunk buffer sets, each with its stream, take
 * launches in turn, so that while launch k's outcomes come back, the host tallies them and
 * lays them out, the gather packs them and their points come back and go to the sink, launch
 * k + 1's kernel runs (it was queued before the host waited on launch k).  TK_TRACK_CUDA_SERIAL=1
 * at plan create keeps the earlier one-set path (execute_serial: a launch's copies, host work
 * and sink, then the next launch), for A/B runs in one build; both give the same streamlines.
 *
 * Several GPUs (opts.cuda_device_count): each holds all of the above (a tracking_device);
 * each round of seeds is cut into contiguous shares, one a GPU (tk_device_range), and the
 * shares go to the sink in order, so the sink sees the one-GPU run's streamlines, seed indices
 * and order (a seed's streamline depends on its index alone: the RNG streams are keyed by it).
 * The serial path tracks a round's shares at once in a host thread a GPU (common/multi_device.h);
 * the pipelined one drives every GPU from the calling thread, its waits being on events of
 * work already queued on all of them. */
#include <cuda_runtime.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cuda_check.cuh"
#include "common/cuda_memory.h"
#include "common/multi_device.h"
#include "tk_bench_hooks.h"
#include "tracking_internal.h"
#include "tracking_kernels.cuh"
#include "tracking_run.h"
#include "tracking_tuning.h"

#define TK_TRACK_WHO "CUDA tracker"

typedef tk_tracking_policy Policy;

/* A launch's buffers on the device. */
enum { DEV_SEED, DEV_PTS, DEV_VISITED, DEV_OUTCOME, DEV_NUM_POINTS, DEV_OFFSET, DEV_OUT, DEV_BUFFERS };
/* Their host sides, pinned, so the copies run at full speed and asynchronously; HOST_OUT, the
 * packed points, is sized to what the launches keep (grow_host_out), not to the worst case. */
enum { HOST_SEED, HOST_OUTCOME, HOST_NUM_POINTS, HOST_OFFSET, HOST_OUT, HOST_BUFFERS };
/* Chunk buffer sets: one for the serial path, two for the pipelined one. */
enum { SETS = 2 };
/* HOST_OUT's first size, in points a seed of a launch: the bench's runs keep about 18 a seed
 * (two thirds of the seeds, 26 points each), so it rarely grows; the worst case, max_points + 1
 * a seed, was 200 MB of pinned memory a launch there, allocated (pinned) in a run's first
 * execute, which may take tens of milliseconds (not measured). */
#define TK_TRACK_HOST_POINTS_A_SEED 32
/* Outgrown HOST_OUT buffers a GPU keeps until the execute ends (freeing pinned memory may wait
 * for the device, which in the pipeline would wait for the launch in flight). */
#define TK_TRACK_RETIRED_MAX 8

/* One launch's kept streamlines as the sink gets them: seeds [first, first + count), the kept
 * ones' point counts and seed indices in seed order, their points packed in the set's HOST_OUT. */
struct share_out {
    size_t *counts;
    uint64_t *index;
    uint64_t first;
    size_t count, kept, points;
};

/* A chunk buffer set: one launch's buffers, its stream and the events that order its work. */
struct chunk_set {
    cudaStream_t stream;
    cudaEvent_t start, stop;  /* around its kernel (timed) */
    cudaEvent_t counts;       /* its outcomes and counts are on the host */
    cudaEvent_t gathered;     /* its gather kernel is done (the copy stream waits on it) */
    cudaEvent_t packed;       /* its packed points are on the host, and DEV_OUT free again */
    void *dev[DEV_BUFFERS];
    void *host[HOST_BUFFERS];
    size_t host_points;       /* points host[HOST_OUT] holds */
    int host_pageable;        /* host[HOST_OUT] is malloc'd: a pinned one was refused mid-run */
    uint64_t first;           /* the launch queued on the set: seeds [first, first + count) */
    size_t count;
    share_out out;            /* the launch packed last (pack_launch), until the sink has it */
};

/* What one GPU holds. */
struct tracking_device {
    int device;
    cudaStream_t copy;               /* the pipeline's packed points' copies back */
    cudaEvent_t base;                /* an execute's start on set 0's stream: inputs up, counters zeroed */
    void *plan, *map, *calib, *ends; /* the plan's copy and tables; the run's end counters */
    void *next;                      /* the warp kernel's seed counter, one a set */
    void *found;                     /* the SH volume's first non-finite value (check_sh) */
    unsigned int warp_blocks;        /* the warp or group kernel's resident blocks on the device (0: not used) */
    int lanes;                       /* lanes a seed: 32 the warp kernel, 8 or 16 the group kernel */
    void *sh;                        /* the SH volume (allocated at the first execute) */
    void *masks;                     /* the include pointer table, then the masks */
    size_t masks_bytes;
    void *regions;                   /* the regions' copy, pointing into masks */
    size_t chunk, stride, visited_stride; /* seeds a set's buffers hold (0: none yet) */
    int sets;                        /* chunk sets allocated (0, 1 or SETS) */
    int chunk_limited;               /* chunk is what the GPU's memory allowed, not what was asked */
    chunk_set set[SETS];
    void *retired[TK_TRACK_RETIRED_MAX]; /* outgrown pinned HOST_OUT buffers */
    int num_retired;
};

/* The plan's GPUs. */
struct tk_tracking_cuda_state {
    pthread_mutex_t lock; /* executes of one plan take turns on its buffers */
    int serial;           /* TK_TRACK_CUDA_SERIAL=1: the one-set path */
    int count;
    tracking_device *dev[TK_MAX_CUDA_DEVICES];
};

/* ---- plan create and destroy ------------------------------------------------------ */

static void free_host_out(chunk_set *cs)
{
    if (cs->host[HOST_OUT] && cs->host_pageable) free(cs->host[HOST_OUT]);
    else if (cs->host[HOST_OUT]) cudaFreeHost(cs->host[HOST_OUT]);
    cs->host[HOST_OUT] = NULL, cs->host_points = 0, cs->host_pageable = 0;
}

/* The outgrown HOST_OUT buffers, once nothing is in flight. */
static void free_retired(tracking_device *st)
{
    for (int i = 0; i < st->num_retired; ++i) cudaFreeHost(st->retired[i]);
    st->num_retired = 0;
}

static void free_chunks(tracking_device *st)
{
    for (int s = 0; s < SETS; ++s) {
        chunk_set *cs = &st->set[s];
        for (int b = 0; b < DEV_BUFFERS; ++b) tk_cuda_free(cs->dev[b]), cs->dev[b] = NULL;
        free_host_out(cs);
        for (int b = 0; b < HOST_BUFFERS; ++b) {
            if (cs->host[b]) cudaFreeHost(cs->host[b]);
            cs->host[b] = NULL;
        }
    }
    free_retired(st);
    st->chunk = 0, st->sets = 0;
}

/* Waits for everything the device's streams hold (errors are the caller's to have seen). */
static void sync_device(tracking_device *st)
{
    for (int s = 0; s < SETS; ++s)
        if (st->set[s].stream) cudaStreamSynchronize(st->set[s].stream);
    if (st->copy) cudaStreamSynchronize(st->copy);
}

static void destroy_device(tracking_device *st)
{
    if (!st) return;
    cudaSetDevice(st->device); /* the state exists only once its device was found usable */
    sync_device(st);
    free_chunks(st);
    void *bufs[] = {st->plan, st->map, st->calib, st->ends, st->next, st->found, st->sh, st->masks, st->regions};
    for (size_t b = 0; b < sizeof bufs / sizeof *bufs; ++b) tk_cuda_free(bufs[b]);
    for (int s = 0; s < SETS; ++s) {
        chunk_set *cs = &st->set[s];
        cudaEvent_t events[] = {cs->start, cs->stop, cs->counts, cs->gathered, cs->packed};
        for (size_t e = 0; e < sizeof events / sizeof *events; ++e)
            if (events[e]) cudaEventDestroy(events[e]);
        if (cs->stream) cudaStreamDestroy(cs->stream);
    }
    if (st->base) cudaEventDestroy(st->base);
    if (st->copy) cudaStreamDestroy(st->copy);
    free(st);
}

extern "C" void tk_tracking_cuda_destroy(tk_tracking_cuda_state *all)
{
    if (!all) return;
    for (int d = 0; d < all->count; ++d) destroy_device(all->dev[d]);
    pthread_mutex_destroy(&all->lock);
    free(all);
}

/* A set's stream and events: its kernel's two timed, the others only ordering. */
static tk_status create_set(chunk_set *cs)
{
    TK_CUDA_TRY_RETURN(TK_TRACK_WHO, cudaStreamCreateWithFlags(&cs->stream, cudaStreamNonBlocking));
    TK_CUDA_TRY_RETURN(TK_TRACK_WHO, cudaEventCreate(&cs->start));
    TK_CUDA_TRY_RETURN(TK_TRACK_WHO, cudaEventCreate(&cs->stop));
    TK_CUDA_TRY_RETURN(TK_TRACK_WHO, cudaEventCreateWithFlags(&cs->counts, cudaEventDisableTiming));
    TK_CUDA_TRY_RETURN(TK_TRACK_WHO, cudaEventCreateWithFlags(&cs->gathered, cudaEventDisableTiming));
    TK_CUDA_TRY_RETURN(TK_TRACK_WHO, cudaEventCreateWithFlags(&cs->packed, cudaEventDisableTiming));
    return TK_OK;
}

/* One GPU's state: the plan's copy and tables, the streams and events. */
static tk_status create_device(const tk_tracking_plan *plan, int device, tracking_device **out)
{
    *out = NULL;
    tk_status status = TK_OK;
    tracking_device *st = (tracking_device *)calloc(1, sizeof *st);
    if (!st) return tk_set_error(TK_ERR_MEMORY, "out of host memory for the CUDA tracking plan");
    st->device = device;
    const size_t map_bytes = sizeof(double) * (size_t)plan->k * (size_t)plan->k;
    const size_t calib_bytes = sizeof(double) * 3 * plan->num_calib;
    TK_CUDA_TRY_GOTO(status, fail, TK_TRACK_WHO, cudaSetDevice(device));
    for (int s = 0; s < SETS; ++s)
        if ((status = create_set(&st->set[s])) != TK_OK) goto fail;
    TK_CUDA_TRY_GOTO(status, fail, TK_TRACK_WHO, cudaStreamCreateWithFlags(&st->copy, cudaStreamNonBlocking));
    TK_CUDA_TRY_GOTO(status, fail, TK_TRACK_WHO, cudaEventCreate(&st->base));
    {
        tk_cuda_buffer bufs[6] = {{&st->plan, sizeof(tk_tracking_plan)},
                                  {&st->map, map_bytes},
                                  {&st->calib, calib_bytes},
                                  {&st->ends, sizeof(unsigned long long) * TK_END_COUNT},
                                  {&st->next, sizeof(unsigned long long) * SETS},
                                  {&st->found, sizeof(unsigned long long)}};
        const cudaError_t err = tk_cuda_malloc_all(bufs, 6);
        if (err == cudaErrorMemoryAllocation) {
            status = tk_cuda_out_of_memory("Tracking on CUDA", "the plan's tables", map_bytes + calib_bytes + 1024);
            goto fail;
        }
        if (err != cudaSuccess) {
            status = tk_cuda_status(err, TK_TRACK_WHO, "cudaMalloc");
            goto fail;
        }
    }
    {
        /* the plan as the device reads it: the same values, its tables' device copies */
        tk_tracking_plan copy = *plan;
        copy.map = (double *)st->map, copy.calib_dirs = (double *)st->calib, copy.cuda = NULL;
        copy.map_classes = NULL; /* the host's (its four-lane product): the device runs the dense one */
        TK_CUDA_TRY_GOTO(status, fail, TK_TRACK_WHO, cudaMemcpy(st->plan, &copy, sizeof copy, cudaMemcpyHostToDevice));
        TK_CUDA_TRY_GOTO(status, fail, TK_TRACK_WHO, cudaMemcpy(st->map, plan->map, map_bytes, cudaMemcpyHostToDevice));
        if (calib_bytes)
            TK_CUDA_TRY_GOTO(status, fail, TK_TRACK_WHO,
                             cudaMemcpy(st->calib, plan->calib_dirs, calib_bytes, cudaMemcpyHostToDevice));
    }
    if (plan->opts.lmax <= (plan->opts.algorithm == TK_TRACK_IFOD1 ? TK_TRACK_POLY_MAX_ORDER : TK_TRACK_ROWS_MAX_ORDER)) {
        /* the warp kernel's grid: as many blocks as stay resident, each warp taking seeds
         * until the chunk's are gone */
        int per_sm = 0, sms = 0;
        /* SD_STREAM: the plan's lanes a seed (tracking_tensor.h); iFOD1: a warp a seed */
        st->lanes = plan->opts.algorithm == TK_TRACK_SD_STREAM ? plan->sd_lanes : TK_TRACK_LANES;
        if (st->lanes == 8)
            TK_CUDA_TRY_GOTO(status, fail, TK_TRACK_WHO,
                             cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, tracking_group_kernel<Policy, 8>,
                                                                           Policy::warp_block_threads, 0));
        else if (st->lanes == 16)
            TK_CUDA_TRY_GOTO(status, fail, TK_TRACK_WHO,
                             cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, tracking_group_kernel<Policy, 16>,
                                                                           Policy::warp_block_threads, 0));
        else
            TK_CUDA_TRY_GOTO(status, fail, TK_TRACK_WHO,
                             cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, tracking_warp_kernel<Policy>,
                                                                           Policy::warp_block_threads, 0));
        TK_CUDA_TRY_GOTO(status, fail, TK_TRACK_WHO, cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
        st->warp_blocks = (unsigned int)((per_sm > 0 ? per_sm : 1) * (sms > 0 ? sms : 1));
    }
    *out = st;
    return TK_OK;
fail:
    destroy_device(st);
    return status;
}

/* TK_TRACK_CUDA_SERIAL: "1" the one-set path, "0" or unset the pipeline (*serial), anything
 * else an error naming it (a typo should not silently measure the other path). */
static tk_status read_serial(int *serial)
{
    const char *v = getenv("TK_TRACK_CUDA_SERIAL");
    *serial = 0;
    if (!v || !*v || strcmp(v, "0") == 0) return TK_OK;
    if (strcmp(v, "1") == 0) return *serial = 1, TK_OK;
    return tk_set_error(TK_ERR_ARGUMENT, "TK_TRACK_CUDA_SERIAL must be 0 or 1, got '%s'", v);
}

extern "C" tk_status tk_tracking_cuda_create(const tk_tracking_plan *plan, tk_tracking_cuda_state **out)
{
    *out = NULL;
    const int count = tk_device_count_checked(plan->opts.cuda_device_count, "cuda_device_count");
    if (!count) return TK_ERR_ARGUMENT;
    int serial = 0;
    if (read_serial(&serial) != TK_OK) return TK_ERR_ARGUMENT;
    /* the reason --backend auto gives, or how many GPUs there are */
    tk_status status = tk_cuda_require_devices(plan->opts.cuda_device, count);
    if (status != TK_OK) return status;
    tk_tracking_cuda_state *all = (tk_tracking_cuda_state *)calloc(1, sizeof *all);
    if (!all) return tk_set_error(TK_ERR_MEMORY, "out of host memory for the CUDA tracking plan");
    pthread_mutex_init(&all->lock, NULL);
    all->serial = serial;
    for (int d = 0; d < count && status == TK_OK; ++d)
        if ((status = create_device(plan, plan->opts.cuda_device + d, &all->dev[d])) == TK_OK) all->count = d + 1;
    if (status != TK_OK) {
        tk_tracking_cuda_destroy(all);
        return status;
    }
    *out = all;
    return TK_OK;
}

/* ---- an execute's inputs ------------------------------------------------------------ */

/* The inputs go up on set 0's stream (cudaMemcpyAsync from pageable memory returns once the
 * data is staged, so the host's temporaries may go; the kernels on set 0 come after them in
 * order, set 1's and the copy stream wait on the execute's base event).  A plain cudaMemcpy
 * would run on the legacy stream, which the non-blocking streams do not wait for, and may
 * return before its last DMA lands. */

/* The SH volume on the device: the whole grid, since a streamline may go anywhere in it (a
 * volume the GPU cannot hold is an error that says so; the cpu and omp backends need no GPU
 * memory). */
static tk_status upload_sh(tracking_device *st, const tk_tracking_plan *plan, const float *sh)
{
    const size_t *d = plan->grid.dims, voxels = d[0] * d[1] * d[2];
    const size_t bytes = sizeof(float) * voxels * (size_t)plan->k;
    if (!st->sh) {
        const cudaError_t err = tk_cuda_malloc(&st->sh, bytes);
        if (err == cudaErrorMemoryAllocation) {
            char what[128];
            snprintf(what, sizeof what, "the SH volume (%zu voxels of %d coefficients)", voxels, plan->k);
            return tk_cuda_out_of_memory("Tracking on CUDA", what, bytes);
        }
        if (err != cudaSuccess) return tk_cuda_status(err, TK_TRACK_WHO, "cudaMalloc");
    }
    TK_CUDA_TRY_RETURN(TK_TRACK_WHO, cudaMemcpyAsync(st->sh, sh, bytes, cudaMemcpyHostToDevice, st->set[0].stream));
    return TK_OK;
}

/* The lowest i of v[0..n) whose value is NaN or infinite (its exponent bits all ones, as the
 * host's test) into *found, which starts at all ones: a min over the grid's hits, so the one
 * named is the host's, wherever the threads found theirs. */
__global__ void tracking_nonfinite_kernel(const float *v, size_t n, unsigned long long *found)
{
    const size_t step = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step)
        if ((__float_as_uint(v[i]) & 0x7f800000u) == 0x7f800000u) {
            atomicMin(found, (unsigned long long)i);
            return; /* this thread's later values lie past it */
        }
}

/* The uploaded SH volume's check (unless allow_nonfinite), on the GPU: a pass over tk-bench
 * track's 108 MB should take some 30 us at an H100's bandwidth (not measured), where the host's
 * took 16-20 ms on this workplace's 2-core EPYC; the error is the cpu backend's
 * (tk_tracking_nonfinite_error), naming the same first value. */
static tk_status check_sh(tracking_device *st, const tk_tracking_plan *plan, const float *sh)
{
    if (plan->opts.allow_nonfinite) return TK_OK;
    const size_t *d = plan->grid.dims, n = d[0] * d[1] * d[2] * (size_t)plan->k;
    const cudaStream_t q = st->set[0].stream;
    unsigned long long found = 0;
    TK_CUDA_TRY_RETURN(TK_TRACK_WHO, cudaMemsetAsync(st->found, 0xff, sizeof found, q));
    const size_t blocks = (n + 255) / 256 < 4096 ? (n + 255) / 256 : 4096;
    tracking_nonfinite_kernel<<<(unsigned int)(blocks ? blocks : 1), 256, 0, q>>>((const float *)st->sh, n,
                                                                                 (unsigned long long *)st->found);
    TK_CUDA_TRY_RETURN(TK_TRACK_WHO, cudaGetLastError());
    TK_CUDA_TRY_RETURN(TK_TRACK_WHO, cudaMemcpyAsync(&found, st->found, sizeof found, cudaMemcpyDeviceToHost, q));
    TK_CUDA_TRY_RETURN(TK_TRACK_WHO, cudaStreamSynchronize(q));
    return found < n ? tk_tracking_nonfinite_error(plan, sh, (size_t)found) : TK_OK;
}

/* The regions' masks on the device and the regions' copy pointing at them. */
static tk_status upload_regions(tracking_device *st, const tk_tracking_plan *plan, const tk_tracking_regions *r)
{
    const size_t *d = plan->grid.dims, voxels = d[0] * d[1] * d[2];
    const size_t masks = (r->stop_mask != NULL) + (r->exclude != NULL) + r->num_include;
    const size_t table = sizeof(uint8_t *) * r->num_include, bytes = table + masks * voxels;
    if (bytes > st->masks_bytes || !st->regions) {
        tk_cuda_free(st->masks), st->masks = NULL, st->masks_bytes = 0;
        if (!st->regions) {
            const cudaError_t err = tk_cuda_malloc(&st->regions, sizeof(tk_tracking_regions));
            if (err == cudaErrorMemoryAllocation)
                return tk_cuda_out_of_memory("Tracking on CUDA", "the regions", sizeof(tk_tracking_regions));
            if (err != cudaSuccess) return tk_cuda_status(err, TK_TRACK_WHO, "cudaMalloc");
        }
        if (bytes) {
            const cudaError_t err = tk_cuda_malloc(&st->masks, bytes);
            if (err == cudaErrorMemoryAllocation) return tk_cuda_out_of_memory("Tracking on CUDA", "the region masks", bytes);
            if (err != cudaSuccess) return tk_cuda_status(err, TK_TRACK_WHO, "cudaMalloc");
            st->masks_bytes = bytes;
        }
    }
    const cudaStream_t q = st->set[0].stream;
    tk_tracking_regions copy = *r;
    uint8_t *at = (uint8_t *)st->masks + table;
    const uint8_t **include = (const uint8_t **)malloc(table ? table : 1);
    if (!include) return tk_set_error(TK_ERR_MEMORY, "out of host memory for the include regions' table");
    tk_status status = TK_OK;
    if (r->stop_mask) {
        TK_CUDA_TRY_GOTO(status, done, TK_TRACK_WHO, cudaMemcpyAsync(at, r->stop_mask, voxels, cudaMemcpyHostToDevice, q));
        copy.stop_mask = at, at += voxels;
    }
    if (r->exclude) {
        TK_CUDA_TRY_GOTO(status, done, TK_TRACK_WHO, cudaMemcpyAsync(at, r->exclude, voxels, cudaMemcpyHostToDevice, q));
        copy.exclude = at, at += voxels;
    }
    for (size_t i = 0; i < r->num_include; ++i) {
        TK_CUDA_TRY_GOTO(status, done, TK_TRACK_WHO, cudaMemcpyAsync(at, r->include[i], voxels, cudaMemcpyHostToDevice, q));
        include[i] = at, at += voxels;
    }
    if (table) TK_CUDA_TRY_GOTO(status, done, TK_TRACK_WHO, cudaMemcpyAsync(st->masks, include, table, cudaMemcpyHostToDevice, q));
    copy.include = r->num_include ? (const uint8_t *const *)st->masks : NULL;
    TK_CUDA_TRY_GOTO(status, done, TK_TRACK_WHO, cudaMemcpyAsync(st->regions, &copy, sizeof copy, cudaMemcpyHostToDevice, q));
    /* the table and the copy are the host's temporaries: staged already (pageable), but waited
     * for all the same before they go, whatever memory they came from */
    TK_CUDA_TRY_GOTO(status, done, TK_TRACK_WHO, cudaStreamSynchronize(q));
done:
    free(include);
    return status;
}

/* ---- the chunk buffers ---------------------------------------------------------------- */

/* Device bytes of one seed's share of a set: its seed, its point slot (doubles, as the CPU
 * grows them), the include flags, outcome, count, offset and packed float points. */
static size_t device_bytes_per_seed(size_t stride, size_t visited_stride)
{
    return 3 * sizeof(double) + 3 * stride * sizeof(double) + visited_stride + sizeof(int) + sizeof(unsigned int) +
           sizeof(size_t) + 3 * stride * sizeof(float);
}

/* `sets` chunk sets of `wanted` seeds each, fewer where the GPU's free memory (less headroom)
 * or an allocation refuses them: halved down to one seed, which failing is an error naming
 * what one seed needs.  HOST_OUT starts at TK_TRACK_HOST_POINTS_A_SEED points a seed
 * (grow_host_out makes it what the launches need). */
static tk_status alloc_chunks(tracking_device *st, size_t wanted, size_t stride, size_t visited_stride, int sets)
{
    free_chunks(st);
    const size_t per_seed = device_bytes_per_seed(stride, visited_stride);
    size_t free_bytes = 0, total_bytes = 0;
    tk_status status = tk_cuda_memory_get(&free_bytes, &total_bytes);
    if (status != TK_OK) return status;
    size_t chunk = tk_cuda_budget(free_bytes) / per_seed / (size_t)sets;
    st->chunk_limited = chunk < wanted;
    if (chunk > wanted) chunk = wanted;
    if (chunk == 0) chunk = 1; /* the allocation below decides, and words the error */
    for (;;) {
        tk_cuda_buffer bufs[SETS * DEV_BUFFERS];
        for (int s = 0; s < sets; ++s) {
            chunk_set *cs = &st->set[s];
            const size_t bytes[DEV_BUFFERS] = {3 * sizeof(double) * chunk,          3 * sizeof(double) * stride * chunk,
                                               visited_stride * chunk,              sizeof(int) * chunk,
                                               sizeof(unsigned int) * chunk,        sizeof(size_t) * chunk,
                                               3 * sizeof(float) * stride * chunk};
            for (int b = 0; b < DEV_BUFFERS; ++b) bufs[s * DEV_BUFFERS + b] = tk_cuda_buffer{&cs->dev[b], bytes[b]};
        }
        cudaError_t err = tk_cuda_malloc_all(bufs, sets * DEV_BUFFERS);
        if (err == cudaSuccess) {
            const size_t out_points = chunk * (stride < TK_TRACK_HOST_POINTS_A_SEED ? stride : TK_TRACK_HOST_POINTS_A_SEED);
            const size_t host_bytes[HOST_BUFFERS] = {3 * sizeof(double) * chunk, sizeof(int) * chunk,
                                                     sizeof(unsigned int) * chunk, sizeof(size_t) * chunk,
                                                     3 * sizeof(float) * out_points};
            for (int s = 0; s < sets && err == cudaSuccess; ++s) {
                for (int b = 0; b < HOST_BUFFERS && err == cudaSuccess; ++b)
                    err = cudaMallocHost(&st->set[s].host[b], host_bytes[b]);
                st->set[s].host_points = out_points;
            }
            if (err == cudaSuccess) break;
            cudaGetLastError(); /* a refused pinned allocation is handled here, not by a later check */
            free_chunks(st);
        }
        if (err != cudaErrorMemoryAllocation) return tk_cuda_status(err, TK_TRACK_WHO, "cudaMalloc");
        if (chunk == 1) {
            char what[160];
            snprintf(what, sizeof what, "the buffers of one seed (a streamline of up to %zu points)", stride);
            return tk_cuda_out_of_memory("Tracking on CUDA", what, per_seed * (size_t)sets);
        }
        chunk = (chunk + 1) / 2, st->chunk_limited = 1;
    }
    st->chunk = chunk, st->stride = stride, st->visited_stride = visited_stride, st->sets = sets;
    return TK_OK;
}

/* Room in the set's HOST_OUT for `points` points: where it is short, a new buffer with a
 * quarter to spare (at most the launch's worst case).  The old one, pinned, waits in
 * st->retired for the execute's end; a refused pinned allocation falls back on pageable
 * memory, which the copy back fills synchronously: slower, not wrong, and no new way for a
 * run to fail half way that the CPU backends have not (they grow their buffers as they go). */
static tk_status grow_host_out(tracking_device *st, chunk_set *cs, size_t points)
{
    if (points <= cs->host_points) return TK_OK;
    const size_t most = st->chunk * st->stride;
    size_t want = points + points / 4;
    if (want > most) want = most;
    if (want < points) want = points;
    const size_t bytes = 3 * sizeof(float) * want;
    void *p = NULL;
    int pageable = 0;
    if (cudaMallocHost(&p, bytes) != cudaSuccess) {
        cudaGetLastError(); /* handled here */
        p = malloc(bytes), pageable = 1;
        if (!p) return tk_set_error(TK_ERR_MEMORY, "out of host memory for a launch's %zu streamline points", points);
    }
    if (cs->host_pageable) free(cs->host[HOST_OUT]);
    else if (st->num_retired < TK_TRACK_RETIRED_MAX) st->retired[st->num_retired++] = cs->host[HOST_OUT];
    else cudaFreeHost(cs->host[HOST_OUT]); /* not reached in practice: growth is geometric */
    cs->host[HOST_OUT] = p, cs->host_points = want, cs->host_pageable = pageable;
    return TK_OK;
}

/* ---- one launch ------------------------------------------------------------------------- */

/* The seeds [first, first + count) as the kernel takes them: world points, or their voxels. */
static void fill_seeds(const tk_tracking_seed_set *set, const tk_tracking_plan *plan, uint64_t first, size_t count,
                       double *out)
{
    const tk_tracking_seeds *s = set->seeds;
    const size_t *d = plan->grid.dims;
    for (size_t i = 0; i < count; ++i) {
        if (s->points) {
            memcpy(out + 3 * i, s->points + 3 * (first + i), 3 * sizeof(double));
            continue;
        }
        const size_t voxel = set->voxels[(first + i) / s->per_voxel];
        out[3 * i] = (double)(voxel % d[0]), out[3 * i + 1] = (double)((voxel / d[0]) % d[1]);
        out[3 * i + 2] = (double)(voxel / (d[0] * d[1]));
    }
}

/* Queues the launch of seeds [first, first + count) on set s: the seeds up, the kernel
 * between the set's start and stop events, the outcomes and counts back, then its counts
 * event.  The set's host seed buffer is free: its last upload came before the set's last
 * kernel, whose counts the host has waited for. */
static tk_status launch(tracking_device *st, int s, const tk_tracking_plan *plan, const tk_tracking_seed_set *set,
                        uint64_t first, size_t count)
{
    chunk_set *cs = &st->set[s];
    const cudaStream_t stream = cs->stream;
    cs->first = first, cs->count = count;
    double *h_seed = (double *)cs->host[HOST_SEED];
    fill_seeds(set, plan, first, count, h_seed);
    TK_CUDA_TRY_RETURN(TK_TRACK_WHO, cudaMemcpyAsync(cs->dev[DEV_SEED], h_seed, 3 * sizeof(double) * count,
                                                     cudaMemcpyHostToDevice, stream));
    TrackArgs a;
    a.plan = (const tk_tracking_plan *)st->plan, a.regions = (const tk_tracking_regions *)st->regions;
    a.sh = (const float *)st->sh, a.seed = (const double *)cs->dev[DEV_SEED];
    a.mask_seeding = set->seeds->points == NULL, a.first = first, a.count = count, a.stride = st->stride;
    a.pts = (double *)cs->dev[DEV_PTS], a.visited = (uint8_t *)cs->dev[DEV_VISITED];
    a.visited_stride = st->visited_stride, a.outcome = (int *)cs->dev[DEV_OUTCOME];
    a.num_points = (unsigned int *)cs->dev[DEV_NUM_POINTS], a.ends = (unsigned long long *)st->ends;
    TK_CUDA_TRY_RETURN(TK_TRACK_WHO, cudaEventRecord(cs->start, stream));
    if (st->warp_blocks) {
        const size_t seeds_per_block = Policy::warp_block_threads / st->lanes;
        const size_t needed = (count + seeds_per_block - 1) / seeds_per_block;
        const unsigned int blocks = needed < st->warp_blocks ? (unsigned int)needed : st->warp_blocks;
        unsigned long long *next = (unsigned long long *)st->next + s; /* the set's own: two launches may run at once */
        TK_CUDA_TRY_RETURN(TK_TRACK_WHO, cudaMemsetAsync(next, 0, sizeof(unsigned long long), stream));
        if (st->lanes == 8)
            tracking_group_kernel<Policy, 8><<<blocks, Policy::warp_block_threads, 0, stream>>>(a, next);
        else if (st->lanes == 16)
            tracking_group_kernel<Policy, 16><<<blocks, Policy::warp_block_threads, 0, stream>>>(a, next);
        else
            tracking_warp_kernel<Policy><<<blocks, Policy::warp_block_threads, 0, stream>>>(a, next);
    } else {
        const size_t blocks = (count + Policy::block_threads - 1) / Policy::block_threads;
        tracking_kernel<Policy><<<(unsigned int)blocks, Policy::block_threads, 0, stream>>>(a);
    }
    TK_CUDA_TRY_RETURN(TK_TRACK_WHO, cudaGetLastError());
    TK_CUDA_TRY_RETURN(TK_TRACK_WHO, cudaEventRecord(cs->stop, stream));
    TK_CUDA_TRY_RETURN(TK_TRACK_WHO, cudaMemcpyAsync(cs->host[HOST_OUTCOME], a.outcome, sizeof(int) * count,
                                                     cudaMemcpyDeviceToHost, stream));
    TK_CUDA_TRY_RETURN(TK_TRACK_WHO, cudaMemcpyAsync(cs->host[HOST_NUM_POINTS], a.num_points,
                                                     sizeof(unsigned int) * count, cudaMemcpyDeviceToHost, stream));
    TK_CUDA_TRY_RETURN(TK_TRACK_WHO, cudaEventRecord(cs->counts, stream));
    return TK_OK;
}

/* Once the set's counts event has been waited for: the seeds tallied into stats, the kept
 * streamlines laid out in seed order (cs->out, the offsets), then queued: the offsets up, the
 * gather packing their points as floats, and the packed points' copy into HOST_OUT, the set's
 * packed event after it.  Pipelined, the copy runs on the copy stream, so that the set's next
 * launch, queued behind the gather, need not wait for it, and the gather first waits for the
 * set's previous copy (both use DEV_OUT). */
static tk_status pack_launch(tracking_device *st, int s, tk_tracking_stats *stats, int pipelined)
{
    chunk_set *cs = &st->set[s];
    share_out *o = &cs->out;
    const int *h_outcome = (const int *)cs->host[HOST_OUTCOME];
    const unsigned int *h_num = (const unsigned int *)cs->host[HOST_NUM_POINTS];
    size_t *h_offset = (size_t *)cs->host[HOST_OFFSET];
    const size_t count = cs->count;
    size_t at = 0, n = 0;
    for (size_t i = 0; i < count; ++i) {
        if (h_outcome[i] < 0)
            return tk_set_error(TK_ERR_CUDA, "CUDA tracker: seed %llu's streamline outgrew its %zu points (a bug)",
                                (unsigned long long)(cs->first + i), st->stride);
        tk_tracking_tally_seed(stats, h_outcome[i]);
        h_offset[i] = at;
        if (h_outcome[i] != TK_TRACK_KEPT) continue;
        o->counts[n] = h_num[i], o->index[n] = cs->first + i, ++n;
        at += h_num[i];
    }
    o->first = cs->first, o->count = count, o->kept = n, o->points = at;
    if (at == 0) return TK_OK;
    const tk_status status = grow_host_out(st, cs, at);
    if (status != TK_OK) return status;
    const cudaStream_t stream = cs->stream;
    TK_CUDA_TRY_RETURN(TK_TRACK_WHO, cudaMemcpyAsync(cs->dev[DEV_OFFSET], h_offset, sizeof(size_t) * count,
                                                     cudaMemcpyHostToDevice, stream));
    if (pipelined) TK_CUDA_TRY_RETURN(TK_TRACK_WHO, cudaStreamWaitEvent(stream, cs->packed, 0));
    const size_t gather = count < (size_t)Policy::gather_blocks ? count : (size_t)Policy::gather_blocks;
    tracking_gather_kernel<<<(unsigned int)gather, Policy::gather_threads, 0, stream>>>(
        (const double *)cs->dev[DEV_PTS], st->stride, (const unsigned int *)cs->dev[DEV_NUM_POINTS],
        (const size_t *)cs->dev[DEV_OFFSET], count, (float *)cs->dev[DEV_OUT]);
    TK_CUDA_TRY_RETURN(TK_TRACK_WHO, cudaGetLastError());
    cudaStream_t copy = stream;
    if (pipelined) {
        TK_CUDA_TRY_RETURN(TK_TRACK_WHO, cudaEventRecord(cs->gathered, stream));
        TK_CUDA_TRY_RETURN(TK_TRACK_WHO, cudaStreamWaitEvent(st->copy, cs->gathered, 0));
        copy = st->copy;
    }
    TK_CUDA_TRY_RETURN(TK_TRACK_WHO, cudaMemcpyAsync(cs->host[HOST_OUT], cs->dev[DEV_OUT], 3 * sizeof(float) * at,
                                                     cudaMemcpyDeviceToHost, copy));
    TK_CUDA_TRY_RETURN(TK_TRACK_WHO, cudaEventRecord(cs->packed, copy));
    return TK_OK;
}

/* A launch's kept streamlines to the sink in chunks of chunk_seeds seeds: the chunks a one-GPU
 * run with a launch a chunk would give, whatever the launches were. */
static tk_status hand_launch(const tk_tracking_plan *plan, const tk_tracking_seed_set *set, const share_out *o,
                             const float *packed, tk_tracking_sink sink, void *user)
{
    tk_status status = TK_OK;
    size_t kept = 0, points = 0;
    for (size_t sub = 0; sub < o->count && status == TK_OK; sub += plan->opts.chunk_seeds) {
        const size_t n = o->count - sub < plan->opts.chunk_seeds ? o->count - sub : plan->opts.chunk_seeds;
        const uint64_t end = o->first + sub + n;
        size_t k = kept, p = points;
        while (k < o->kept && o->index[k] < end) p += o->counts[k], ++k;
        tk_tracking_chunk c;
        c.num_streamlines = k - kept, c.num_points = o->counts + kept, c.seed_index = o->index + kept;
        c.points = p > points ? packed + 3 * points : NULL, c.total_points = p - points;
        c.seeds_done = end, c.seeds_total = set->total;
        status = tk_tracking_hand_to_sink(sink, &c, user);
        kept = k, points = p;
    }
    return status;
}

/* ---- the serial execute (TK_TRACK_CUDA_SERIAL=1): a launch at a time --------------------- */

/* Tracks seeds [first, first + count) on set 0 and waits for all of it: the packed points in
 * HOST_OUT, set 0's out describing them. */
static tk_status track_chunk(tracking_device *st, const tk_tracking_plan *plan, const tk_tracking_seed_set *set,
                             uint64_t first, size_t count, tk_tracking_stats *stats, double *kernel_ms)
{
    chunk_set *cs = &st->set[0];
    tk_status status = launch(st, 0, plan, set, first, count);
    if (status != TK_OK) return status;
    TK_CUDA_TRY_RETURN(TK_TRACK_WHO, cudaEventSynchronize(cs->counts));
    float ms = 0;
    TK_CUDA_TRY_RETURN(TK_TRACK_WHO, cudaEventElapsedTime(&ms, cs->start, cs->stop));
    *kernel_ms += ms;
    if ((status = pack_launch(st, 0, stats, 0)) != TK_OK) return status;
    TK_CUDA_TRY_RETURN(TK_TRACK_WHO, cudaStreamSynchronize(cs->stream));
    return TK_OK;
}

/* One round's work for tk_run_on_devices: each GPU's share, its stats and kernel time. */
struct chunk_run {
    tk_tracking_cuda_state *all;
    const tk_tracking_plan *plan;
    const tk_tracking_seed_set *set;
    uint64_t c0;
    tk_tracking_stats *stats; /* a GPU each */
    double *ms;               /* a GPU each */
};

/* tk_run_on_devices' work: GPU `index` tracks seeds [c0 + first, c0 + first + count). */
static tk_status track_share(void *ctx, int index, size_t first, size_t count)
{
    chunk_run *r = (chunk_run *)ctx;
    tracking_device *st = r->all->dev[index];
    TK_CUDA_TRY_RETURN(TK_TRACK_WHO, cudaSetDevice(st->device)); /* this thread's device */
    return track_chunk(st, r->plan, r->set, r->c0 + first, count, &r->stats[index], &r->ms[index]);
}

static void add_stats(tk_tracking_stats *to, const tk_tracking_stats *s)
{
    to->seeds += s->seeds, to->accepted += s->accepted, to->rejected_seed += s->rejected_seed;
    to->rejected_no_propagation += s->rejected_no_propagation, to->rejected_too_short += s->rejected_too_short;
    to->rejected_exclude += s->rejected_exclude, to->rejected_missed_include += s->rejected_missed_include;
}

static tk_status execute_serial(tk_tracking_cuda_state *all, const tk_tracking_plan *plan,
                                const tk_tracking_seed_set *set, size_t per_device, tk_tracking_sink sink, void *user,
                                tk_tracking_stats *stats, double *kernel_ms)
{
    const int count = all->count;
    const size_t chunk = per_device * (size_t)count;
    tk_tracking_stats dstats[TK_MAX_CUDA_DEVICES];
    double ms[TK_MAX_CUDA_DEVICES];
    memset(dstats, 0, sizeof dstats);
    tk_status status = TK_OK;
    for (uint64_t c0 = 0; status == TK_OK && c0 < set->total; c0 += chunk) {
        const size_t nc = (size_t)(set->total - c0 < chunk ? set->total - c0 : chunk);
        for (int d = 0; d < count; ++d) all->dev[d]->set[0].out.count = 0, ms[d] = 0;
        chunk_run run = {all, plan, set, c0, dstats, ms};
        status = tk_run_on_devices(plan->opts.cuda_device, count, nc, track_share, &run);
        double slowest = 0;
        /* the shares to the sink in seed order */
        for (int d = 0; d < count && status == TK_OK; ++d) {
            const chunk_set *cs = &all->dev[d]->set[0];
            if (!cs->out.count) continue;
            if (ms[d] > slowest) slowest = ms[d];
            status = hand_launch(plan, set, &cs->out, (const float *)cs->host[HOST_OUT], sink, user);
        }
        *kernel_ms += slowest;
    }
    for (int d = 0; d < count; ++d) add_stats(stats, &dstats[d]);
    return status;
}

/* ---- the pipelined execute: two sets, launches in turn ----------------------------------- */

/* Round r's launches (seeds [r * round, (r + 1) * round)), a share a GPU as tk_run_on_devices
 * cuts them, on set r % SETS. */
static tk_status launch_round(tk_tracking_cuda_state *all, const tk_tracking_plan *plan,
                              const tk_tracking_seed_set *set, uint64_t r, size_t round)
{
    const uint64_t c0 = r * round;
    const size_t nc = (size_t)(set->total - c0 < round ? set->total - c0 : round);
    const int s = (int)(r % SETS);
    for (int d = 0; d < all->count; ++d) {
        tracking_device *st = all->dev[d];
        size_t first = 0;
        const size_t n = tk_device_range(nc, all->count, d, &first);
        st->set[s].count = 0;
        if (!n) continue;
        TK_CUDA_TRY_RETURN(TK_TRACK_WHO, cudaSetDevice(st->device));
        const tk_status status = launch(st, s, plan, set, c0 + first, n);
        if (status != TK_OK) return status;
    }
    return TK_OK;
}

/* The GPU's kernel time, its launches overlapping (each is queued behind the one running and
 * fills its tail): each adds the part of its span [start, stop] that lies past the spans of
 * the launches before it (*until: the latest stop so far, from the execute's base event). */
static tk_status add_kernel_span(const tracking_device *st, const chunk_set *cs, double *until, double *busy)
{
    float from = 0, to = 0;
    TK_CUDA_TRY_RETURN(TK_TRACK_WHO, cudaEventElapsedTime(&from, st->base, cs->start));
    TK_CUDA_TRY_RETURN(TK_TRACK_WHO, cudaEventElapsedTime(&to, st->base, cs->stop));
    const double begin = from > *until ? from : *until;
    if (to > begin) *busy += to - begin;
    if (to > *until) *until = to;
    return TK_OK;
}

/* Rounds 0 and 1 are queued at once; then for each round r, on its set s: wait for its
 * outcomes and counts (round r + 1's kernels run meanwhile), tally and lay them out and queue
 * their gather and copy; queue round r + 2 on set s (behind that gather on s's stream: the
 * device buffers are reused in stream order, and the host's outcome, count and seed buffers
 * are read already); wait for round r's points and hand them to the sink, while rounds r + 1
 * and r + 2 are on the GPU.  A set's host buffers are thus rewritten only after the host has
 * read them, and its device buffers only by work queued behind what reads them; a failure
 * stops the loop with nothing of a later round handed out (execute_locked then waits for what
 * is in flight). */
static tk_status execute_pipelined(tk_tracking_cuda_state *all, const tk_tracking_plan *plan,
                                   const tk_tracking_seed_set *set, size_t per_device, tk_tracking_sink sink,
                                   void *user, tk_tracking_stats *stats, double *kernel_ms)
{
    const int count = all->count;
    const size_t round = per_device * (size_t)count;
    const uint64_t rounds = (set->total + round - 1) / round;
    double until[TK_MAX_CUDA_DEVICES], busy[TK_MAX_CUDA_DEVICES];
    for (int d = 0; d < count; ++d) until[d] = busy[d] = 0;
    tk_status status = TK_OK;
    for (uint64_t r = 0; r < rounds && r < SETS && status == TK_OK; ++r) status = launch_round(all, plan, set, r, round);
    for (uint64_t r = 0; r < rounds && status == TK_OK; ++r) {
        const int s = (int)(r % SETS);
        for (int d = 0; d < count && status == TK_OK; ++d) {
            tracking_device *st = all->dev[d];
            chunk_set *cs = &st->set[s];
            cs->out.count = 0;
            if (!cs->count) continue;
            TK_CUDA_TRY_GOTO(status, done, TK_TRACK_WHO, cudaSetDevice(st->device));
            TK_CUDA_TRY_GOTO(status, done, TK_TRACK_WHO, cudaEventSynchronize(cs->counts));
            status = add_kernel_span(st, cs, &until[d], &busy[d]);
            if (status == TK_OK) status = pack_launch(st, s, stats, 1);
        }
        if (status == TK_OK && r + SETS < rounds) status = launch_round(all, plan, set, r + SETS, round);
        for (int d = 0; d < count && status == TK_OK; ++d) {
            tracking_device *st = all->dev[d];
            const chunk_set *cs = &st->set[s];
            if (!cs->out.count) continue;
            if (cs->out.points) {
                TK_CUDA_TRY_GOTO(status, done, TK_TRACK_WHO, cudaSetDevice(st->device));
                TK_CUDA_TRY_GOTO(status, done, TK_TRACK_WHO, cudaEventSynchronize(cs->packed));
            }
            status = hand_launch(plan, set, &cs->out, (const float *)cs->host[HOST_OUT], sink, user);
        }
    }
done:
    for (int d = 0; d < count; ++d)
        if (busy[d] > *kernel_ms) *kernel_ms = busy[d]; /* the slowest GPU's */
    return status;
}

/* ---- the execute ------------------------------------------------------------------------ */

/* Seeds a GPU tracks in one launch beyond chunk_seeds (0: the default below; the tests' hook). */
static size_t g_launch_fill = 0;

extern "C" void tk_tracking_cuda_set_launch_fill(size_t seeds) { g_launch_fill = seeds; }

/* The seeds a GPU tracks in one launch: chunk_seeds, or more where that leaves the GPU idle.
 * A seed is a warp and a launch lasts as long as its longest streamline, so the default
 * 4,096-seed chunk kept an H100 half empty and waiting on one streamline per launch (1M
 * seeds, tk-bench track --chunk-seeds: 16,384 a launch gave 1.31x SD_STREAM's and 1.32x
 * iFOD1's streamlines/s of 4,096; 65,536 1.32x and 1.38x; 262,144 less, its 9 GiB of buffers
 * allocated in the run).  Up to 65,536 seeds a launch and 1.5 GiB of chunk buffers over the
 * `sets` sets; the sink still gets the kept streamlines in chunks of chunk_seeds seeds
 * (hand_launch). */
static size_t launch_seeds(const tk_tracking_plan *plan, size_t per_seed, int sets)
{
    size_t fill = g_launch_fill;
    if (!fill) {
        fill = ((size_t)3 << 29) / (per_seed ? per_seed : 1) / (size_t)sets;
        if (fill > 65536) fill = 65536;
    }
    return plan->opts.chunk_seeds > fill ? plan->opts.chunk_seeds : fill;
}

/* Every GPU's inputs and `sets` chunk sets; the seeds a GPU takes a launch, in *per_device.
 * Each GPU's base event follows its uploads and zeroed counters on set 0's stream, and its
 * other streams wait on it. */
static tk_status prepare_devices(tk_tracking_cuda_state *all, const tk_tracking_plan *plan,
                                 const tk_tracking_field *field, const tk_tracking_seed_set *set, int sets,
                                 size_t *per_device)
{
    /* a GPU's share: one launch's seeds (launch_seeds), or its share of the run if smaller (a
     * share that fills one GPU is what makes several pay), unless the held buffers already are
     * what a GPU's memory allowed */
    const size_t stride = plan->max_points + 1;
    const size_t visited = field->regions->num_include ? field->regions->num_include : 1;
    const size_t run_share = (size_t)((set->total + (uint64_t)all->count - 1) / (uint64_t)all->count);
    const size_t launch = launch_seeds(plan, device_bytes_per_seed(stride, visited), sets);
    const size_t share = launch < run_share ? launch : run_share;
    size_t chunk = share;
    for (int d = 0; d < all->count; ++d) {
        tracking_device *st = all->dev[d];
        TK_CUDA_TRY_RETURN(TK_TRACK_WHO, cudaSetDevice(st->device));
        tk_status status = upload_sh(st, plan, field->sh);
        if (status == TK_OK && d == 0) status = check_sh(st, plan, field->sh); /* one GPU's copy is enough */
        if (status == TK_OK) status = upload_regions(st, plan, field->regions);
        if (status != TK_OK) return status;
        const int reuse = st->chunk && st->sets >= sets && st->stride == stride && st->visited_stride >= visited &&
                          (st->chunk >= share || st->chunk_limited);
        if (!reuse && (status = alloc_chunks(st, share, stride, visited, sets)) != TK_OK) return status;
        if (st->chunk < chunk) chunk = st->chunk;
        const cudaStream_t q = st->set[0].stream;
        TK_CUDA_TRY_RETURN(TK_TRACK_WHO, cudaMemsetAsync(st->ends, 0, sizeof(unsigned long long) * TK_END_COUNT, q));
        TK_CUDA_TRY_RETURN(TK_TRACK_WHO, cudaEventRecord(st->base, q));
        for (int s = 1; s < SETS; ++s) TK_CUDA_TRY_RETURN(TK_TRACK_WHO, cudaStreamWaitEvent(st->set[s].stream, st->base, 0));
        TK_CUDA_TRY_RETURN(TK_TRACK_WHO, cudaStreamWaitEvent(st->copy, st->base, 0));
    }
    *per_device = chunk;
    return TK_OK;
}

/* The sets' host lists of kept streamlines (share_out), per_device entries each. */
static tk_status alloc_outs(tk_tracking_cuda_state *all, int sets, size_t per_device)
{
    for (int d = 0; d < all->count; ++d)
        for (int s = 0; s < sets; ++s) {
            share_out *o = &all->dev[d]->set[s].out;
            o->counts = (size_t *)malloc(per_device * sizeof(size_t));
            o->index = (uint64_t *)malloc(per_device * sizeof(uint64_t));
            o->count = 0;
            if (!o->counts || !o->index) return tk_set_error(TK_ERR_MEMORY, "out of host memory for a tracking chunk");
        }
    return TK_OK;
}

static tk_status execute_locked(tk_tracking_cuda_state *all, const tk_tracking_plan *plan,
                                const tk_tracking_field *field, const tk_tracking_seed_set *set, tk_tracking_sink sink,
                                void *user, tk_tracking_stats *stats, double *kernel_ms)
{
    const int sets = all->serial ? 1 : SETS;
    size_t per_device = 0;
    tk_status status = prepare_devices(all, plan, field, set, sets, &per_device);
    if (status == TK_OK) status = alloc_outs(all, sets, per_device);
    if (status == TK_OK)
        status = all->serial ? execute_serial(all, plan, set, per_device, sink, user, stats, kernel_ms)
                             : execute_pipelined(all, plan, set, per_device, sink, user, stats, kernel_ms);
    /* nothing of this execute may run on into the next, or outlive a failure: every stream
     * of every GPU is waited for before the end counters are read and the host buffers go */
    for (int d = 0; d < all->count; ++d) {
        cudaSetDevice(all->dev[d]->device);
        sync_device(all->dev[d]);
    }
    for (int d = 0; d < all->count && status == TK_OK; ++d) {
        /* the device counts in unsigned long long (atomicAdd's type), of uint64_t's size */
        static_assert(sizeof(unsigned long long) == sizeof(uint64_t), "end counters copy as uint64_t");
        tracking_device *st = all->dev[d];
        uint64_t ends[TK_END_COUNT];
        TK_CUDA_TRY_GOTO(status, done, TK_TRACK_WHO, cudaSetDevice(st->device));
        TK_CUDA_TRY_GOTO(status, done, TK_TRACK_WHO,
                         cudaMemcpyAsync(ends, st->ends, sizeof ends, cudaMemcpyDeviceToHost, st->set[0].stream));
        TK_CUDA_TRY_GOTO(status, done, TK_TRACK_WHO, cudaStreamSynchronize(st->set[0].stream));
        tk_tracking_tally_ends(stats, ends); /* stats come zeroed */
    }
done:
    for (int d = 0; d < all->count; ++d) {
        tracking_device *st = all->dev[d];
        cudaSetDevice(st->device);
        cudaStreamSynchronize(st->set[0].stream); /* the end counters' copy, after a failed wait */
        for (int s = 0; s < SETS; ++s) {
            share_out *o = &st->set[s].out;
            free(o->counts), free(o->index);
            o->counts = NULL, o->index = NULL, o->count = 0;
        }
        free_retired(st);
    }
    return status;
}

extern "C" tk_status tk_tracking_cuda_execute(const tk_tracking_plan *plan, const tk_tracking_field *field,
                                              const tk_tracking_seed_set *set, tk_tracking_sink sink, void *user,
                                              tk_tracking_stats *stats, double *kernel_ms)
{
    tk_tracking_cuda_state *all = plan->cuda;
    *kernel_ms = 0;
    if (!all) return tk_set_error(TK_ERR_ARGUMENT, "the plan has no CUDA state (not made for the cuda backend)");
    pthread_mutex_lock(&all->lock);
    const tk_status status = execute_locked(all, plan, field, set, sink, user, stats, kernel_ms);
    pthread_mutex_unlock(&all->lock);
    return status;
}
