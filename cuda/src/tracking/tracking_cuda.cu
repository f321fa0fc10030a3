/* CUDA backend of the tracker: the dispatch.  A plan's device state (create): a copy of the
 * plan with its tables (the SH-to-tensor map, iFOD1's calibration directions), the stream
 * and its events; the first execute adds the SH volume's buffer and the chunk buffers, which
 * later executes reuse, all freed with the plan.  An execute uploads the SH volume and the
 * region masks once, then tracks the seeds chunk by chunk: one thread a seed
 * (tracking_kernels.cuh), the kept streamlines packed on the device and copied into pinned
 * host memory, and handed to the sink in seed order, as the CPU hands them.
 *
 * Several GPUs (opts.cuda_device_count): each holds all of the above (a tracking_device);
 * each chunk of seeds is cut into contiguous shares, one a GPU, tracked at once in a host
 * thread a GPU (common/multi_device.h), and the shares go to the sink in order, so the sink
 * sees the one-GPU run's streamlines, seed indices and order (a seed's streamline depends on
 * its index alone: the RNG streams are keyed by it). */
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

/* A chunk's buffers on the device, one set for the plan. */
enum { DEV_SEED, DEV_PTS, DEV_VISITED, DEV_OUTCOME, DEV_NUM_POINTS, DEV_OFFSET, DEV_OUT, DEV_BUFFERS };
/* Their host sides, pinned, so the copies run at full speed and asynchronously. */
enum { HOST_SEED, HOST_OUTCOME, HOST_NUM_POINTS, HOST_OFFSET, HOST_OUT, HOST_BUFFERS };

/* What one GPU holds. */
struct tracking_device {
    int device;
    cudaStream_t stream;
    cudaEvent_t start, stop;
    void *plan, *map, *calib, *ends; /* the plan's copy and tables; the run's end counters */
    void *next;                      /* the warp kernel's seed counter */
    unsigned int warp_blocks;        /* the warp or group kernel's resident blocks on the device (0: not used) */
    int lanes;                       /* lanes a seed: 32 the warp kernel, 8 or 16 the group kernel */
    void *sh;                        /* the SH volume (allocated at the first execute) */
    void *masks;                     /* the include pointer table, then the masks */
    size_t masks_bytes;
    void *regions;                   /* the regions' copy, pointing into masks */
    size_t chunk, stride, visited_stride; /* seeds a chunk buffer holds (0: none yet) */
    int chunk_limited;               /* chunk is what the GPU's memory allowed, not what was asked */
    void *dev[DEV_BUFFERS];
    void *host[HOST_BUFFERS];
};

/* The plan's GPUs. */
struct tk_tracking_cuda_state {
    pthread_mutex_t lock; /* executes of one plan take turns on its buffers */
    int count;
    tracking_device *dev[TK_MAX_CUDA_DEVICES];
};

/* ---- plan create and destroy ------------------------------------------------------ */

static void free_chunks(tracking_device *st)
{
    for (int b = 0; b < DEV_BUFFERS; ++b) tk_cuda_free(st->dev[b]), st->dev[b] = NULL;
    for (int b = 0; b < HOST_BUFFERS; ++b) {
        if (st->host[b]) cudaFreeHost(st->host[b]);
        st->host[b] = NULL;
    }
    st->chunk = 0;
}

static void destroy_device(tracking_device *st)
{
    if (!st) return;
    cudaSetDevice(st->device); /* the state exists only once its device was found usable */
    if (st->stream) cudaStreamSynchronize(st->stream);
    free_chunks(st);
    void *bufs[] = {st->plan, st->map, st->calib, st->ends, st->next, st->sh, st->masks, st->regions};
    for (size_t b = 0; b < sizeof bufs / sizeof *bufs; ++b) tk_cuda_free(bufs[b]);
    if (st->stream) cudaStreamDestroy(st->stream);
    if (st->start) cudaEventDestroy(st->start);
    if (st->stop) cudaEventDestroy(st->stop);
    free(st);
}

extern "C" void tk_tracking_cuda_destroy(tk_tracking_cuda_state *all)
{
    if (!all) return;
    for (int d = 0; d < all->count; ++d) destroy_device(all->dev[d]);
    pthread_mutex_destroy(&all->lock);
    free(all);
}

/* One GPU's state: the plan's copy and tables, the stream and events. */
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
    TK_CUDA_TRY_GOTO(status, fail, TK_TRACK_WHO, cudaStreamCreateWithFlags(&st->stream, cudaStreamNonBlocking));
    TK_CUDA_TRY_GOTO(status, fail, TK_TRACK_WHO, cudaEventCreate(&st->start));
    TK_CUDA_TRY_GOTO(status, fail, TK_TRACK_WHO, cudaEventCreate(&st->stop));
    {
        tk_cuda_buffer bufs[5] = {{&st->plan, sizeof(tk_tracking_plan)},
                                  {&st->map, map_bytes},
                                  {&st->calib, calib_bytes},
                                  {&st->ends, sizeof(unsigned long long) * TK_END_COUNT},
                                  {&st->next, sizeof(unsigned long long)}};
        const cudaError_t err = tk_cuda_malloc_all(bufs, 5);
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

extern "C" tk_status tk_tracking_cuda_create(const tk_tracking_plan *plan, tk_tracking_cuda_state **out)
{
    *out = NULL;
    const int count = tk_device_count_checked(plan->opts.cuda_device_count, "cuda_device_count");
    if (!count) return TK_ERR_ARGUMENT;
    /* the reason --backend auto gives, or how many GPUs there are */
    tk_status status = tk_cuda_require_devices(plan->opts.cuda_device, count);
    if (status != TK_OK) return status;
    tk_tracking_cuda_state *all = (tk_tracking_cuda_state *)calloc(1, sizeof *all);
    if (!all) return tk_set_error(TK_ERR_MEMORY, "out of host memory for the CUDA tracking plan");
    pthread_mutex_init(&all->lock, NULL);
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
    TK_CUDA_TRY_RETURN(TK_TRACK_WHO, cudaMemcpy(st->sh, sh, bytes, cudaMemcpyHostToDevice));
    return TK_OK;
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
    tk_tracking_regions copy = *r;
    uint8_t *at = (uint8_t *)st->masks + table;
    const uint8_t **include = (const uint8_t **)malloc(table ? table : 1);
    if (!include) return tk_set_error(TK_ERR_MEMORY, "out of host memory for the include regions' table");
    tk_status status = TK_OK;
    if (r->stop_mask) {
        TK_CUDA_TRY_GOTO(status, done, TK_TRACK_WHO, cudaMemcpy(at, r->stop_mask, voxels, cudaMemcpyHostToDevice));
        copy.stop_mask = at, at += voxels;
    }
    if (r->exclude) {
        TK_CUDA_TRY_GOTO(status, done, TK_TRACK_WHO, cudaMemcpy(at, r->exclude, voxels, cudaMemcpyHostToDevice));
        copy.exclude = at, at += voxels;
    }
    for (size_t i = 0; i < r->num_include; ++i) {
        TK_CUDA_TRY_GOTO(status, done, TK_TRACK_WHO, cudaMemcpy(at, r->include[i], voxels, cudaMemcpyHostToDevice));
        include[i] = at, at += voxels;
    }
    if (table) TK_CUDA_TRY_GOTO(status, done, TK_TRACK_WHO, cudaMemcpy(st->masks, include, table, cudaMemcpyHostToDevice));
    copy.include = r->num_include ? (const uint8_t *const *)st->masks : NULL;
    TK_CUDA_TRY_GOTO(status, done, TK_TRACK_WHO, cudaMemcpy(st->regions, &copy, sizeof copy, cudaMemcpyHostToDevice));
done:
    free(include);
    return status;
}

/* ---- the chunk buffers ---------------------------------------------------------------- */

/* Device bytes of one seed's share of a chunk: its seed, its point slot (doubles, as the
 * CPU grows them), the include flags, outcome, count, offset and packed float points. */
static size_t device_bytes_per_seed(size_t stride, size_t visited_stride)
{
    return 3 * sizeof(double) + 3 * stride * sizeof(double) + visited_stride + sizeof(int) + sizeof(unsigned int) +
           sizeof(size_t) + 3 * stride * sizeof(float);
}

/* Chunk buffers for `wanted` seeds, fewer where the GPU's free memory (less headroom) or an
 * allocation refuses them: halved down to one seed, which failing is an error naming what
 * one seed needs. */
static tk_status alloc_chunks(tracking_device *st, size_t wanted, size_t stride, size_t visited_stride)
{
    free_chunks(st);
    const size_t per_seed = device_bytes_per_seed(stride, visited_stride);
    size_t free_bytes = 0, total_bytes = 0;
    tk_status status = tk_cuda_memory_get(&free_bytes, &total_bytes);
    if (status != TK_OK) return status;
    size_t chunk = tk_cuda_budget(free_bytes) / per_seed;
    st->chunk_limited = chunk < wanted;
    if (chunk > wanted) chunk = wanted;
    if (chunk == 0) chunk = 1; /* the allocation below decides, and words the error */
    for (;;) {
        tk_cuda_buffer bufs[DEV_BUFFERS] = {{&st->dev[DEV_SEED], 3 * sizeof(double) * chunk},
                                            {&st->dev[DEV_PTS], 3 * sizeof(double) * stride * chunk},
                                            {&st->dev[DEV_VISITED], visited_stride * chunk},
                                            {&st->dev[DEV_OUTCOME], sizeof(int) * chunk},
                                            {&st->dev[DEV_NUM_POINTS], sizeof(unsigned int) * chunk},
                                            {&st->dev[DEV_OFFSET], sizeof(size_t) * chunk},
                                            {&st->dev[DEV_OUT], 3 * sizeof(float) * stride * chunk}};
        cudaError_t err = tk_cuda_malloc_all(bufs, DEV_BUFFERS);
        if (err == cudaSuccess) {
            const size_t host_bytes[HOST_BUFFERS] = {3 * sizeof(double) * chunk, sizeof(int) * chunk,
                                                     sizeof(unsigned int) * chunk, sizeof(size_t) * chunk,
                                                     3 * sizeof(float) * stride * chunk};
            for (int b = 0; b < HOST_BUFFERS && err == cudaSuccess; ++b) err = cudaMallocHost(&st->host[b], host_bytes[b]);
            if (err == cudaSuccess) break;
            cudaGetLastError(); /* a refused pinned allocation is handled here, not by a later check */
            free_chunks(st);
        }
        if (err != cudaErrorMemoryAllocation) return tk_cuda_status(err, TK_TRACK_WHO, "cudaMalloc");
        if (chunk == 1) {
            char what[160];
            snprintf(what, sizeof what, "the buffers of one seed (a streamline of up to %zu points)", stride);
            return tk_cuda_out_of_memory("Tracking on CUDA", what, per_seed);
        }
        chunk = (chunk + 1) / 2, st->chunk_limited = 1;
    }
    st->chunk = chunk, st->stride = stride, st->visited_stride = visited_stride;
    return TK_OK;
}

/* ---- one chunk -------------------------------------------------------------------------- */

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

/* Tracks chunk [first, first + count) and packs its kept streamlines into host[HOST_OUT];
 * out_counts / out_index / *kept / *points describe them. */
static tk_status track_chunk(tracking_device *st, const tk_tracking_plan *plan, const tk_tracking_seed_set *set,
                             uint64_t first, size_t count, size_t *out_counts, uint64_t *out_index, size_t *kept,
                             size_t *points, tk_tracking_stats *stats, double *kernel_ms)
{
    cudaStream_t stream = st->stream;
    double *h_seed = (double *)st->host[HOST_SEED];
    fill_seeds(set, plan, first, count, h_seed);
    TK_CUDA_TRY_RETURN(TK_TRACK_WHO, cudaMemcpyAsync(st->dev[DEV_SEED], h_seed, 3 * sizeof(double) * count,
                                                     cudaMemcpyHostToDevice, stream));
    TrackArgs a;
    a.plan = (const tk_tracking_plan *)st->plan, a.regions = (const tk_tracking_regions *)st->regions;
    a.sh = (const float *)st->sh, a.seed = (const double *)st->dev[DEV_SEED];
    a.mask_seeding = set->seeds->points == NULL, a.first = first, a.count = count, a.stride = st->stride;
    a.pts = (double *)st->dev[DEV_PTS], a.visited = (uint8_t *)st->dev[DEV_VISITED];
    a.visited_stride = st->visited_stride, a.outcome = (int *)st->dev[DEV_OUTCOME];
    a.num_points = (unsigned int *)st->dev[DEV_NUM_POINTS], a.ends = (unsigned long long *)st->ends;
    TK_CUDA_TRY_RETURN(TK_TRACK_WHO, cudaEventRecord(st->start, stream));
    if (st->warp_blocks) {
        const size_t seeds_per_block = Policy::warp_block_threads / st->lanes;
        const size_t needed = (count + seeds_per_block - 1) / seeds_per_block;
        const unsigned int blocks = needed < st->warp_blocks ? (unsigned int)needed : st->warp_blocks;
        unsigned long long *next = (unsigned long long *)st->next;
        TK_CUDA_TRY_RETURN(TK_TRACK_WHO, cudaMemsetAsync(st->next, 0, sizeof(unsigned long long), stream));
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
    TK_CUDA_TRY_RETURN(TK_TRACK_WHO, cudaEventRecord(st->stop, stream));
    int *h_outcome = (int *)st->host[HOST_OUTCOME];
    unsigned int *h_num = (unsigned int *)st->host[HOST_NUM_POINTS];
    TK_CUDA_TRY_RETURN(TK_TRACK_WHO, cudaMemcpyAsync(h_outcome, a.outcome, sizeof(int) * count, cudaMemcpyDeviceToHost, stream));
    TK_CUDA_TRY_RETURN(TK_TRACK_WHO,
                       cudaMemcpyAsync(h_num, a.num_points, sizeof(unsigned int) * count, cudaMemcpyDeviceToHost, stream));
    TK_CUDA_TRY_RETURN(TK_TRACK_WHO, cudaStreamSynchronize(stream));
    float ms = 0;
    TK_CUDA_TRY_RETURN(TK_TRACK_WHO, cudaEventElapsedTime(&ms, st->start, st->stop));
    *kernel_ms += ms;
    /* the kept streamlines' places in the packed points, in seed order */
    size_t *h_offset = (size_t *)st->host[HOST_OFFSET];
    size_t at = 0, n = 0;
    for (size_t i = 0; i < count; ++i) {
        if (h_outcome[i] < 0)
            return tk_set_error(TK_ERR_CUDA, "CUDA tracker: seed %llu's streamline outgrew its %zu points (a bug)",
                                (unsigned long long)(first + i), st->stride);
        tk_tracking_tally_seed(stats, h_outcome[i]);
        h_offset[i] = at;
        if (h_outcome[i] != TK_TRACK_KEPT) continue;
        out_counts[n] = h_num[i], out_index[n] = first + i, ++n;
        at += h_num[i];
    }
    *kept = n, *points = at;
    if (at == 0) return TK_OK;
    TK_CUDA_TRY_RETURN(TK_TRACK_WHO, cudaMemcpyAsync(st->dev[DEV_OFFSET], h_offset, sizeof(size_t) * count,
                                                     cudaMemcpyHostToDevice, stream));
    const size_t gather = count < (size_t)Policy::gather_blocks ? count : (size_t)Policy::gather_blocks;
    tracking_gather_kernel<<<(unsigned int)gather, Policy::gather_threads, 0, stream>>>(
        a.pts, st->stride, a.num_points, (const size_t *)st->dev[DEV_OFFSET], count, (float *)st->dev[DEV_OUT]);
    TK_CUDA_TRY_RETURN(TK_TRACK_WHO, cudaGetLastError());
    TK_CUDA_TRY_RETURN(TK_TRACK_WHO, cudaMemcpyAsync(st->host[HOST_OUT], st->dev[DEV_OUT], 3 * sizeof(float) * at,
                                                     cudaMemcpyDeviceToHost, stream));
    TK_CUDA_TRY_RETURN(TK_TRACK_WHO, cudaStreamSynchronize(stream));
    return TK_OK;
}

/* ---- the execute ------------------------------------------------------------------------ */

/* One GPU's share of the current chunk and what it gave (track_share). */
struct share_out {
    size_t *counts;      /* its kept streamlines' point counts */
    uint64_t *index;     /* and seed indices */
    size_t kept, points, first, count;
    tk_tracking_stats stats;
    double ms;
};

struct chunk_run {
    tk_tracking_cuda_state *all;
    const tk_tracking_plan *plan;
    const tk_tracking_seed_set *set;
    uint64_t c0;
    share_out *out;
};

/* tk_run_on_devices' work: GPU `index` tracks seeds [c0 + first, c0 + first + count). */
static tk_status track_share(void *ctx, int index, size_t first, size_t count)
{
    chunk_run *r = (chunk_run *)ctx;
    tracking_device *st = r->all->dev[index];
    share_out *o = &r->out[index];
    o->first = first, o->count = count, o->ms = 0;
    TK_CUDA_TRY_RETURN(TK_TRACK_WHO, cudaSetDevice(st->device)); /* this thread's device */
    return track_chunk(st, r->plan, r->set, r->c0 + first, count, o->counts, o->index, &o->kept, &o->points, &o->stats,
                       &o->ms);
}

static void add_stats(tk_tracking_stats *to, const tk_tracking_stats *s)
{
    to->seeds += s->seeds, to->accepted += s->accepted, to->rejected_seed += s->rejected_seed;
    to->rejected_no_propagation += s->rejected_no_propagation, to->rejected_too_short += s->rejected_too_short;
    to->rejected_exclude += s->rejected_exclude, to->rejected_missed_include += s->rejected_missed_include;
}

/* Seeds a GPU tracks in one launch beyond chunk_seeds (0: the default below; the tests' hook). */
static size_t g_launch_fill = 0;

extern "C" void tk_tracking_cuda_set_launch_fill(size_t seeds) { g_launch_fill = seeds; }

/* The seeds a GPU tracks in one launch: chunk_seeds, or more where that leaves the GPU idle.
 * A seed is a warp and a launch lasts as long as its longest streamline, so the default
 * 4,096-seed chunk kept an H100 half empty and waiting on one streamline per launch (1M
 * seeds, tk-bench track --chunk-seeds: 16,384 a launch gave 1.31x SD_STREAM's and 1.32x
 * iFOD1's streamlines/s of 4,096; 65,536 1.32x and 1.38x; 262,144 less, its 9 GiB of buffers
 * allocated in the run).  Up to 65,536 seeds and 1.5 GiB of chunk buffers; the sink still gets
 * the kept streamlines in chunks of chunk_seeds seeds (execute_locked). */
static size_t launch_seeds(const tk_tracking_plan *plan, size_t per_seed)
{
    size_t fill = g_launch_fill;
    if (!fill) {
        fill = ((size_t)3 << 29) / (per_seed ? per_seed : 1);
        if (fill > 65536) fill = 65536;
    }
    return plan->opts.chunk_seeds > fill ? plan->opts.chunk_seeds : fill;
}

/* Every GPU's inputs and chunk buffers; the seeds a GPU takes a launch, in *per_device. */
static tk_status prepare_devices(tk_tracking_cuda_state *all, const tk_tracking_plan *plan,
                                 const tk_tracking_field *field, const tk_tracking_seed_set *set, size_t *per_device)
{
    /* a GPU's share: one launch's seeds (launch_seeds), or its share of the run if smaller (a
     * share that fills one GPU is what makes several pay), unless the held buffers already are
     * what a GPU's memory allowed */
    const size_t stride = plan->max_points + 1;
    const size_t visited = field->regions->num_include ? field->regions->num_include : 1;
    const size_t run_share = (size_t)((set->total + (uint64_t)all->count - 1) / (uint64_t)all->count);
    const size_t launch = launch_seeds(plan, device_bytes_per_seed(stride, visited));
    const size_t share = launch < run_share ? launch : run_share;
    size_t chunk = share;
    for (int d = 0; d < all->count; ++d) {
        tracking_device *st = all->dev[d];
        TK_CUDA_TRY_RETURN(TK_TRACK_WHO, cudaSetDevice(st->device));
        tk_status status = upload_sh(st, plan, field->sh);
        if (status == TK_OK) status = upload_regions(st, plan, field->regions);
        if (status != TK_OK) return status;
        const int reuse = st->chunk && st->stride == stride && st->visited_stride >= visited &&
                          (st->chunk >= share || st->chunk_limited);
        if (!reuse && (status = alloc_chunks(st, share, stride, visited)) != TK_OK) return status;
        if (st->chunk < chunk) chunk = st->chunk;
        TK_CUDA_TRY_RETURN(TK_TRACK_WHO,
                           cudaMemsetAsync(st->ends, 0, sizeof(unsigned long long) * TK_END_COUNT, st->stream));
    }
    *per_device = chunk;
    return TK_OK;
}

static tk_status execute_locked(tk_tracking_cuda_state *all, const tk_tracking_plan *plan,
                                const tk_tracking_field *field, const tk_tracking_seed_set *set, tk_tracking_sink sink,
                                void *user, tk_tracking_stats *stats, double *kernel_ms)
{
    size_t per_device = 0;
    tk_status status = prepare_devices(all, plan, field, set, &per_device);
    if (status != TK_OK) return status;
    const int count = all->count;
    const size_t chunk = per_device * (size_t)count;
    share_out out[TK_MAX_CUDA_DEVICES];
    memset(out, 0, sizeof out);
    for (int d = 0; d < count && status == TK_OK; ++d) {
        out[d].counts = (size_t *)malloc(per_device * sizeof(size_t));
        out[d].index = (uint64_t *)malloc(per_device * sizeof(uint64_t));
        if (!out[d].counts || !out[d].index) status = tk_set_error(TK_ERR_MEMORY, "out of host memory for a tracking chunk");
    }
    for (uint64_t c0 = 0; status == TK_OK && c0 < set->total; c0 += chunk) {
        const size_t nc = (size_t)(set->total - c0 < chunk ? set->total - c0 : chunk);
        chunk_run run = {all, plan, set, c0, out};
        for (int d = 0; d < count; ++d) out[d].count = out[d].kept = 0;
        status = tk_run_on_devices(plan->opts.cuda_device, count, nc, track_share, &run);
        double slowest = 0;
        /* the shares to the sink in seed order, each in chunks of chunk_seeds seeds: the chunks
         * a one-GPU run with one launch a chunk would give */
        for (int d = 0; d < count && status == TK_OK; ++d) {
            const share_out *o = &out[d];
            if (!o->count) continue;
            if (o->ms > slowest) slowest = o->ms;
            const float *packed = (const float *)all->dev[d]->host[HOST_OUT];
            size_t kept = 0, points = 0;
            for (size_t sub = 0; sub < o->count && status == TK_OK; sub += plan->opts.chunk_seeds) {
                const size_t n = o->count - sub < plan->opts.chunk_seeds ? o->count - sub : plan->opts.chunk_seeds;
                const uint64_t end = c0 + o->first + sub + n;
                size_t k = kept, p = points;
                while (k < o->kept && o->index[k] < end) p += o->counts[k], ++k;
                tk_tracking_chunk c;
                c.num_streamlines = k - kept, c.num_points = o->counts + kept, c.seed_index = o->index + kept;
                c.points = p > points ? packed + 3 * points : NULL, c.total_points = p - points;
                c.seeds_done = end, c.seeds_total = set->total;
                status = tk_tracking_hand_to_sink(sink, &c, user);
                kept = k, points = p;
            }
        }
        *kernel_ms += slowest;
    }
    for (int d = 0; d < count; ++d) add_stats(stats, &out[d].stats);
    for (int d = 0; d < count && status == TK_OK; ++d) {
        /* the device counts in unsigned long long (atomicAdd's type), of uint64_t's size */
        static_assert(sizeof(unsigned long long) == sizeof(uint64_t), "end counters copy as uint64_t");
        tracking_device *st = all->dev[d];
        uint64_t ends[TK_END_COUNT];
        TK_CUDA_TRY_GOTO(status, done, TK_TRACK_WHO, cudaSetDevice(st->device));
        TK_CUDA_TRY_GOTO(status, done, TK_TRACK_WHO,
                         cudaMemcpyAsync(ends, st->ends, sizeof ends, cudaMemcpyDeviceToHost, st->stream));
        TK_CUDA_TRY_GOTO(status, done, TK_TRACK_WHO, cudaStreamSynchronize(st->stream));
        tk_tracking_tally_ends(stats, ends); /* stats come zeroed */
    }
done:
    /* nothing of this execute may run on into the next */
    for (int d = 0; d < count; ++d) {
        cudaSetDevice(all->dev[d]->device);
        cudaStreamSynchronize(all->dev[d]->stream);
        free(out[d].counts), free(out[d].index);
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
