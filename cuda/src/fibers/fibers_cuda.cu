/* CUDA backend of the fiber peak finder: the dispatch.  A plan's device state (create): the
 * tables on the device, two chunk buffers (one per stream) and the streams and their events,
 * all kept for the plan's executes; an execute streams the volume through in chunks on the
 * two streams so that one chunk's copies overlap the other's kernels.  Pageable caller arrays
 * go through pinned staging buffers of the plan's (made at the first execute that needs them):
 * a copy from pageable memory ran at 5.9 GB/s on a lent H200 where pinned ran at 52 GB/s, and
 * it holds the host thread, so that the next chunk's kernels were queued late.  The kernels
 * are fibers_kernels.cuh's, their launch choices fibers_tuning.h's. */
#include <cuda_runtime.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cuda_check.cuh"
#include "common/cuda_memory.h"
#include "common/device_arrays.h"
#include "common/host_copy.h"
#include "fibers_kernels.cuh"
#include "fibers_plan.h"
#include "fibers_tuning.h"

#define TK_FIB_WHO "CUDA fiber backend"

typedef tk_fibers_policy Policy;

typedef void (*fibers_kernel_fn)(FibArgs);
typedef struct {
    fibers_kernel_fn axial_look, axial, grid, polish, bar, polish_b, shoulder, climb;
} fibers_kernels;

static fibers_kernels kernels_for(int lmax)
{
    fibers_kernels none = {NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    switch (lmax) {
#define TK_FIB_CASE(M)                                                                                            \
    case M: {                                                                                                     \
        fibers_kernels k = {fibers_axial_look_kernel<Policy, M>,                                                  \
                            fibers_axial_kernel<Policy, M>,                                                       \
                            fibers_grid_kernel<Policy, M>,                                                        \
                            fibers_climb_kernel<Policy, M, FIB_PASS_1A>,                                          \
                            fibers_bar_kernel<Policy, M>,                                                         \
                            fibers_climb_kernel<Policy, M, FIB_PASS_1B>,                                          \
                            fibers_shoulder_kernel<Policy, M>,                                                    \
                            fibers_climb_kernel<Policy, M, FIB_PASS_SHOULDERS>};                                  \
        return k;                                                                                                 \
    }
        TK_FIB_CASE(2) TK_FIB_CASE(4) TK_FIB_CASE(6) TK_FIB_CASE(8)
        TK_FIB_CASE(10) TK_FIB_CASE(12) TK_FIB_CASE(14) TK_FIB_CASE(16)
#undef TK_FIB_CASE
    default: return none;
    }
}

/* The tables on the device: the monomial map, the grid and its evaluation order, its neighbours
 * and fit stencils, and the bad-voxel counter. */
enum { TABLE_PT, TABLE_GRID, TABLE_EVAL, TABLE_NBR8, TABLE_FIT_NBR, TABLE_FIT_W, TABLE_BAD, TABLES };
/* One stream's chunk buffers. */
enum {
    CHUNK_SH, CHUNK_DIRS, CHUNK_AMPS, CHUNK_MASK, CHUNK_COEF, CHUNK_VOXEL_LIST, CHUNK_CAND_LIST, CHUNK_RES,
    CHUNK_CAND_START, CHUNK_AXIAL_STATE, CHUNK_AXIAL_RES, CHUNK_BAR, CHUNK_BUFFERS
};
/* The chunk's counters after its voxels' first and count: candidates, pass-1a grid maxima,
 * shoulder candidates, shoulder climbs, pass-1b grid maxima, the climbs taken in each
 * climbing pass, the voxels listed for the axial kernel, the voxels the grid pass has taken
 * (FibArgs). */
enum { COUNTERS = 10 };
/* Each stream's events: its chunk's start, its axial kernels' end, the start of its grid pass
 * (after the other stream's climbs), the grid pass's end, the climbs' end, its end. */
enum { EVENT_START, EVENT_AXIAL, EVENT_RUN, EVENT_GRID, EVENT_POLISH, EVENT_STOP, EVENTS };

struct tk_fibers_cuda_state {
    int device, lmax, k, num_peaks, timeline;
    int pt_nz;                   /* the monomial map's nonzeros a row at most (upload_tables) */
    int eval_slots, eval_start[3]; /* the grid pass's evaluation order (FibArgs::grid_eval) */
    fibers_kernels kernels;
    size_t smem;                 /* the grid kernel's dynamic shared memory */
    int sm_count, grid_blocks_cap, polish_blocks, shoulder_blocks, axial_blocks, select_blocks, bar_blocks, look_blocks;
    size_t chunk;                /* voxels per chunk buffer (0: none yet) */
    size_t max_chunk_voxels;
    FibArgs base;                /* the tables' and options' part of every launch's arguments */
    void *table[TABLES];
    void *buf[2][CHUNK_BUFFERS];
    cudaStream_t stream[2];
    cudaEvent_t event[2][EVENTS];
    /* Each stream's pinned staging (NULL: none yet, or none to be had): the chunk's SH and
     * mask in, its directions and amplitudes out, each `chunk` voxels long. */
    unsigned char *stage[2];
    int stage_refused;           /* cudaMallocHost failed once: copy pageable arrays directly */
    int device_arrays;           /* this execute's arrays are in device memory (copies device to device) */
};

/* A stream's staging, by part: where each part starts in the stream's buffer. */
struct fibers_stage {
    float *sh, *dirs, *amps;
    uint8_t *mask;
};
static size_t stage_bytes(size_t chunk, int k, int np)
{
    return chunk * (sizeof(float) * ((size_t)k + 4 * (size_t)np) + 1);
}
static fibers_stage stage_of(const tk_fibers_cuda_state *st, int s)
{
    const size_t chunk = st->chunk;
    fibers_stage g;
    g.sh = (float *)st->stage[s];
    g.dirs = g.sh + chunk * (size_t)st->k;
    g.amps = g.dirs + chunk * 3 * (size_t)st->num_peaks;
    g.mask = (uint8_t *)(g.amps + chunk * (size_t)st->num_peaks);
    return g;
}

/* The kind of a copy between the caller's arrays and the chunk buffers, counting the bytes that
 * cross between host and device (the transfer probe, device_arrays.h). */
static cudaMemcpyKind caller_copy(const tk_fibers_cuda_state *st, cudaMemcpyKind across, size_t bytes)
{
    if (st->device_arrays) return cudaMemcpyDeviceToDevice;
    tk_count_array_transfer(bytes);
    return across;
}

/* One voxel's share of a chunk: SH in, peaks out, mask, coefficients, the axial answer and
 * list place, the bar, list stretch, and room for TK_FIB_CAP2 candidates. */
static size_t bytes_per_voxel(int k, int np)
{
    return sizeof(float) * ((size_t)k + 4 * (size_t)np) + 1 + sizeof(double) * ((size_t)k + 2) + 2 * sizeof(int) +
           8 * sizeof(double) + 2 * sizeof(int) +
           (size_t)TK_FIB_CAP2 * (4 * sizeof(int) + 4 * sizeof(float) + 4 * sizeof(double));
}

/* The grid pass's evaluation order (FibArgs::grid_eval) into eval (G + 3 x 31 slots of four
 * floats at most): each direction by its largest coordinate in magnitude (the pivot, the first
 * of equals), x pivots first, then y, then z, each group in index order and padded to a whole
 * warp, so that a warp's lanes take one branch; start: where each group starts; returns the
 * slots.  The ratios and the pivot's power are worked out in double, then rounded once. */
static int grid_eval_order(const tk_fibers_tables *t, float *eval, int *start)
{
    int slot = 0;
    for (int piv = 0; piv < 3; ++piv) {
        start[piv] = slot;
        for (int d = 0; d < t->grid; ++d) {
            const double *x = t->dirs + (size_t)d * 3;
            if (tk_fibers_largest_axis(x) != piv) continue;
            const int a = piv == 0 ? 1 : 0, b = piv == 2 ? 1 : 2;
            double pm = 1;
            for (int i = 0; i < t->lmax; ++i) pm *= x[piv];
            float *e = eval + (size_t)slot++ * 4;
            e[0] = (float)(x[a] / x[piv]), e[1] = (float)(x[b] / x[piv]), e[2] = (float)pm;
            const int32_t dir = d;
            memcpy(e + 3, &dir, sizeof dir);
        }
        for (; slot % 32; ++slot) {
            float *e = eval + (size_t)slot * 4;
            const int32_t none = -1;
            e[0] = e[1] = e[2] = 0.f;
            memcpy(e + 3, &none, sizeof none);
        }
    }
    return slot;
}

/* The tables on the device. */
static tk_status upload_tables(tk_fibers_cuda_state *st, const tk_fibers_tables *t)
{
    const int k = t->k, G = t->grid;
    const size_t fit_entries = (size_t)TK_FIBERS_FIT_WIDTH * t->grid_padded;
    tk_status status = TK_OK;
    /* the monomial map's nonzeros a row at most (past column 0: the kernels take the series'
     * anisotropic part), from the map itself: its entries that are 0 by parity are exactly 0 */
    double *P = (double *)malloc(sizeof(double) * (size_t)k * k);
    if (!P) return tk_set_error(TK_ERR_MEMORY, "out of host memory for the CUDA fiber plan");
    if ((status = tk_fibers_monomial_map(t, P)) != TK_OK) {
        free(P);
        return status;
    }
    int nz = 1;
    for (int row = 0; row < k; ++row) {
        int n = 0;
        for (int col = 1; col < k; ++col) n += P[(size_t)col * k + row] != 0.0;
        if (n > nz) nz = n;
    }
    st->pt_nz = nz;
    const size_t pt_bytes = (sizeof(double) + sizeof(int)) * (size_t)nz * k;
    const size_t eval_bytes = sizeof(float) * 4 * ((size_t)G + 3 * 31);
    tk_cuda_buffer bufs[TABLES] = {{&st->table[TABLE_PT], pt_bytes},
                                   {&st->table[TABLE_GRID], sizeof(float) * 3 * (size_t)G},
                                   {&st->table[TABLE_EVAL], eval_bytes},
                                   {&st->table[TABLE_NBR8], sizeof(uint4) * (size_t)G},
                                   {&st->table[TABLE_FIT_NBR], sizeof(int) * fit_entries},
                                   {&st->table[TABLE_FIT_W], sizeof(float) * 5 * fit_entries},
                                   {&st->table[TABLE_BAD], sizeof(unsigned long long)}};
    const cudaError_t err = tk_cuda_malloc_all(bufs, TABLES);
    if (err == cudaErrorMemoryAllocation) {
        size_t bytes = 0;
        for (int b = 0; b < TABLES; ++b) bytes += bufs[b].bytes;
        char what[96];
        snprintf(what, sizeof what, "the peak finder's plan for lmax %d", t->lmax);
        free(P);
        return tk_cuda_out_of_memory("Fibers on CUDA", what, bytes);
    }
    if (err != cudaSuccess) {
        free(P);
        return tk_cuda_status(err, TK_FIB_WHO, "cudaMalloc");
    }
    float *h_grid = (float *)malloc(sizeof(float) * 3 * (size_t)G);
    float *h_eval = (float *)calloc(1, eval_bytes);
    uint16_t *nbr8 = (uint16_t *)malloc(sizeof(uint4) * (size_t)G);
    unsigned char *pt = (unsigned char *)calloc(1, pt_bytes);
    if (!h_grid || !h_eval || !nbr8 || !pt) {
        status = tk_set_error(TK_ERR_MEMORY, "out of host memory for the CUDA fiber plan");
        goto done;
    }
    {
        /* each row's nonzeros in column order (the dense product's order), padded with 0 x column 1 */
        double *val = (double *)pt;
        int *cols = (int *)(val + (size_t)nz * k);
        for (int row = 0; row < k; ++row) {
            int e = 0;
            for (int col = 1; col < k; ++col)
                if (P[(size_t)col * k + row] != 0.0)
                    val[(size_t)e * k + row] = P[(size_t)col * k + row], cols[(size_t)e++ * k + row] = col;
            for (; e < nz; ++e) cols[(size_t)e * k + row] = 1;
        }
    }
    for (int d = 0; d < G; ++d)
        for (int i = 0; i < 3; ++i) h_grid[(size_t)i * G + d] = (float)t->dirs[(size_t)d * 3 + i];
    st->eval_slots = grid_eval_order(t, h_eval, st->eval_start);
    for (int d = 0; d < G; ++d) {
        /* the neighbour lists packed for one 16-byte load a direction (FibArgs::nbr8) */
        const int first = t->nbr_start[d], count = t->nbr_start[d + 1] - first;
        if (count > fib_max_neighbours(t->lmax) || G > 0x4000) {
            status = tk_set_error(TK_ERR_UNSUPPORTED, "the CUDA fiber backend takes at most %d neighbours of at most "
                                  "16,384 grid directions at lmax %d; its grid has %d directions, one with %d",
                                  fib_max_neighbours(t->lmax), t->lmax, G, count);
            goto done;
        }
        /* byte offsets (4 x index: at most 16,384 directions in 16 bits), the nearest as a mask */
        uint16_t *row = nbr8 + (size_t)d * 8;
        for (int e = 0; e < TK_FIB_NBR; ++e) row[e] = (uint16_t)(4 * (e < count ? t->nbr[first + e] : d));
        row[7] = (uint16_t)((1u << t->nbr_near[d]) - 1u);
    }
    {
        /* host sources in the order of bufs (the counter: no source) */
        const void *src[TABLES] = {pt, h_grid, h_eval, nbr8, t->fit_nbr, t->fit_w, NULL};
        for (int b = 0; b < TABLES; ++b)
            if (src[b])
                TK_CUDA_TRY_GOTO(status, done, TK_FIB_WHO, cudaMemcpy(st->table[b], src[b], bufs[b].bytes, cudaMemcpyHostToDevice));
    }
done:
    free(P);
    free(pt);
    free(h_grid);
    free(h_eval);
    free(nbr8);
    return status;
}

/* The launches' constant arguments: the device tables and the options. */
static void base_args(tk_fibers_cuda_state *st, const tk_fibers_tables *t, const tk_fibers_options *o)
{
    FibArgs &a = st->base;
    const int G = t->grid;
    memset(&a, 0, sizeof a);
    a.bad = (unsigned long long *)st->table[TABLE_BAD];
    a.pt_val = (const double *)st->table[TABLE_PT];
    a.pt_col = (const int *)(a.pt_val + (size_t)st->pt_nz * t->k);
    a.pt_nz = st->pt_nz;
    const float *grid = (const float *)st->table[TABLE_GRID];
    a.gx = grid, a.gy = grid + G, a.gz = grid + 2 * (size_t)G;
    a.grid_eval = (const float4 *)st->table[TABLE_EVAL];
    a.eval_slots = st->eval_slots, a.eval_y = st->eval_start[1], a.eval_z = st->eval_start[2];
    a.nbr8 = (const uint4 *)st->table[TABLE_NBR8];
    a.fit_nbr = (const int *)st->table[TABLE_FIT_NBR], a.fit_w = (const float *)st->table[TABLE_FIT_W];
    a.spacing = sqrt(2.0 * 3.14159265358979323846 / G);
    a.cos_near = cos(TK_SHOULDER_GAP * a.spacing);
    a.grid = G, a.grid_padded = t->grid_padded, a.k = t->k, a.num_peaks = o->num_peaks;
    /* The grid maxima climbed before the bar is known: the count's part of the bar needs
     * num_peaks distinct maxima, and among a real FOD's largest grid maxima two often share
     * one (on session 22's real voxels 58% found fewer than 3 in their first 3, 9% in their
     * first 4): one more than num_peaks, so that pass 1b is short (real: 4 + 1.95 climbs a
     * voxel instead of all 13.8 grid maxima; first 3: 3 + 7.3). */
    a.first_climbs = o->num_peaks < TK_FIB_CAP ? o->num_peaks + 1 : TK_FIB_CAP;
    memcpy(a.axial_q, t->axial_q, sizeof a.axial_q);
    a.basis = t->basis, a.legacy = t->legacy, a.lmax = t->lmax;
    a.threshold = o->threshold, a.relative_threshold = o->relative_threshold;
    a.min_separation_deg = o->min_separation_deg;
    a.cos_sep = cos(o->min_separation_deg * 3.14159265358979323846 / 180.0);
}

/* Two chunk buffers (one per stream) for up to `voxels` voxels, at most the tuning's cap and
 * together within the free memory less headroom; buffers that still do not fit (another
 * thread or process took memory meanwhile) are retried with half the chunk, down to one voxel. */
static tk_status alloc_chunks(tk_fibers_cuda_state *st, size_t voxels)
{
    const size_t per_voxel = bytes_per_voxel(st->k, st->num_peaks);
    size_t free_bytes = 0, total_bytes = 0, chunk;
    tk_status status = tk_cuda_memory_get(&free_bytes, &total_bytes);
    if (status != TK_OK) return status;
    chunk = tk_cuda_budget(free_bytes) / 2 / per_voxel;
    if (chunk > st->max_chunk_voxels) chunk = st->max_chunk_voxels;
    if (chunk > voxels) chunk = voxels;
    if (chunk == 0) chunk = 1; /* the allocation below decides, and words the error */
    const int k = st->k, np = st->num_peaks;
    for (;;) {
        tk_cuda_buffer bufs[2 * CHUNK_BUFFERS];
        for (int s = 0; s < 2; ++s) {
            tk_cuda_buffer *b = bufs + CHUNK_BUFFERS * s;
            void **slot = st->buf[s];
            b[CHUNK_SH] = {&slot[CHUNK_SH], sizeof(float) * (size_t)k * chunk};
            b[CHUNK_DIRS] = {&slot[CHUNK_DIRS], sizeof(float) * 3 * (size_t)np * chunk};
            b[CHUNK_AMPS] = {&slot[CHUNK_AMPS], sizeof(float) * (size_t)np * chunk};
            b[CHUNK_MASK] = {&slot[CHUNK_MASK], chunk};
            /* coefficients, then first/count/num_cands, then the candidate list and results */
            b[CHUNK_COEF] = {&slot[CHUNK_COEF], sizeof(double) * ((size_t)k + 2) * chunk};
            b[CHUNK_VOXEL_LIST] = {&slot[CHUNK_VOXEL_LIST], sizeof(int) * (2 * chunk + COUNTERS)};
            b[CHUNK_CAND_LIST] = {&slot[CHUNK_CAND_LIST], sizeof(int) * 4 * TK_FIB_CAP2 * chunk};
            b[CHUNK_RES] = {&slot[CHUNK_RES], sizeof(double) * 4 * TK_FIB_CAP2 * chunk};
            b[CHUNK_CAND_START] = {&slot[CHUNK_CAND_START], sizeof(float) * 4 * TK_FIB_CAP2 * chunk};
            b[CHUNK_AXIAL_STATE] = {&slot[CHUNK_AXIAL_STATE], sizeof(int) * 2 * chunk}; /* state, then list */
            b[CHUNK_AXIAL_RES] = {&slot[CHUNK_AXIAL_RES], sizeof(double) * 4 * chunk};
            b[CHUNK_BAR] = {&slot[CHUNK_BAR], sizeof(double) * 4 * chunk};
        }
        const cudaError_t err = tk_cuda_malloc_all(bufs, 2 * CHUNK_BUFFERS);
        if (err == cudaSuccess) break;
        if (err != cudaErrorMemoryAllocation) return tk_cuda_status(err, TK_FIB_WHO, "cudaMalloc");
        if (chunk == 1)
            return tk_cuda_out_of_memory("Fibers on CUDA", "the buffers of one voxel on each of two streams",
                                         2 * (per_voxel + sizeof(int)));
        chunk = (chunk + 1) / 2;
    }
    st->chunk = chunk;
    return TK_OK;
}

void tk_fibers_cuda_destroy(tk_fibers_cuda_state *st)
{
    if (!st) return;
    cudaSetDevice(st->device); /* the state exists only once its device was found usable */
    for (int s = 0; s < 2; ++s) {
        if (st->stream[s]) cudaStreamSynchronize(st->stream[s]);
        for (int b = 0; b < CHUNK_BUFFERS; ++b) tk_cuda_free(st->buf[s][b]);
        if (st->stage[s]) cudaFreeHost(st->stage[s]);
        if (st->stream[s]) cudaStreamDestroy(st->stream[s]);
        for (int e = 0; e < EVENTS; ++e)
            if (st->event[s][e]) cudaEventDestroy(st->event[s][e]);
    }
    for (int b = 0; b < TABLES; ++b) tk_cuda_free(st->table[b]);
    free(st);
}

extern "C" tk_status tk_fibers_cuda_create(const tk_fibers_tables *t, const tk_fibers_options *o, size_t max_voxels,
                                           tk_fibers_cuda_state **out)
{
    *out = NULL;
    const fibers_kernels kernels = kernels_for(t->lmax);
    if (!kernels.grid) return tk_set_error(TK_ERR_UNSUPPORTED, "the CUDA fiber backend has no kernel for lmax %d", t->lmax);
    tk_status status = tk_cuda_require_device(o->cuda_device); /* the reason --backend auto gives */
    if (status != TK_OK) return status;
    tk_fibers_cuda_state *st = (tk_fibers_cuda_state *)calloc(1, sizeof *st);
    if (!st) return tk_set_error(TK_ERR_MEMORY, "out of host memory for the CUDA fiber plan");
    st->device = o->cuda_device, st->lmax = t->lmax, st->k = t->k, st->num_peaks = o->num_peaks;
    st->timeline = o->cuda_timeline != 0;
    st->kernels = kernels;
    st->smem = warp_shared_bytes(t->k, t->grid_padded) * Policy::warps_per_block;
    int blocks_per_sm = 0, major = 0, minor = 0;
    TK_CUDA_TRY_GOTO(status, fail, TK_FIB_WHO, cudaSetDevice(o->cuda_device));
    TK_CUDA_TRY_GOTO(status, fail, TK_FIB_WHO,
                     cudaDeviceGetAttribute(&st->sm_count, cudaDevAttrMultiProcessorCount, o->cuda_device));
    TK_CUDA_TRY_GOTO(status, fail, TK_FIB_WHO, cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, o->cuda_device));
    TK_CUDA_TRY_GOTO(status, fail, TK_FIB_WHO, cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, o->cuda_device));
    TK_CUDA_TRY_GOTO(status, fail, TK_FIB_WHO,
                     cudaFuncSetAttribute(kernels.grid, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)st->smem));
    TK_CUDA_TRY_GOTO(status, fail, TK_FIB_WHO,
                     cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, kernels.grid, Policy::block_threads, st->smem));
    {
        /* the other kernels' resident blocks: their grid sizes */
        const fibers_kernel_fn fn[6] = {kernels.polish, kernels.axial, kernels.shoulder, fibers_select_kernel<Policy>,
                                        kernels.bar, kernels.axial_look};
        int *blocks[6] = {&st->polish_blocks, &st->axial_blocks, &st->shoulder_blocks, &st->select_blocks,
                          &st->bar_blocks, &st->look_blocks};
        for (int i = 0; i < 6; ++i)
            TK_CUDA_TRY_GOTO(status, fail, TK_FIB_WHO,
                             cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks[i], fn[i], Policy::block_threads, 0));
    }
    if (blocks_per_sm < 1) {
        status = tk_set_error(TK_ERR_UNSUPPORTED, "lmax %d needs %zu bytes of shared memory per block, more than the device has",
                              t->lmax, st->smem);
        goto fail;
    }
    {
        const tk_fibers_tuning tuning = tk_fibers_tuning_for(major * 10 + minor);
        st->grid_blocks_cap = st->sm_count * blocks_per_sm * tuning.grid_waves;
        st->max_chunk_voxels = tuning.max_chunk_voxels;
    }
    if ((status = upload_tables(st, t)) != TK_OK) goto fail;
    base_args(st, t, o);
    if (max_voxels && (status = alloc_chunks(st, max_voxels)) != TK_OK) goto fail;
    for (int s = 0; s < 2; ++s) {
        TK_CUDA_TRY_GOTO(status, fail, TK_FIB_WHO, cudaStreamCreateWithFlags(&st->stream[s], cudaStreamNonBlocking));
        for (int e = 0; e < EVENTS; ++e) TK_CUDA_TRY_GOTO(status, fail, TK_FIB_WHO, cudaEventCreate(&st->event[s][e]));
    }
    /* The tables' uploads (cudaMemcpy from pageable memory may return before its DMA lands, on the
     * legacy default stream) done before the chunks' kernels, on non-blocking streams, read them. */
    TK_CUDA_TRY_GOTO(status, fail, TK_FIB_WHO, cudaStreamSynchronize(cudaStreamLegacy));
    *out = st;
    return TK_OK;
fail:
    tk_fibers_cuda_destroy(st);
    return status;
}

/* The voxels of the chunk starting at `first` (prev: the previous chunk's, 0 for the first).
 * The first is a quarter of the buffers' (at least FIB_RAMP_FLOOR), each next twice the one
 * before up to the buffers', so that the GPU starts on a small chunk while the host stages
 * the next: the first chunk's copy in is the one no kernel hides. */
enum { FIB_RAMP_FLOOR = 8192 };
static size_t next_chunk(const tk_fibers_cuda_state *st, size_t num_voxels, size_t first, size_t prev)
{
    size_t want = prev ? 2 * prev : st->chunk / 4;
    if (want < FIB_RAMP_FLOOR) want = FIB_RAMP_FLOOR;
    if (want > st->chunk) want = st->chunk;
    return num_voxels - first < want ? num_voxels - first : want;
}

/* Pinned staging for both streams (once a plan); 0 where the host refuses page-locked memory,
 * and the pageable arrays are then copied directly (slower, the same answers). */
static int stage_buffers(tk_fibers_cuda_state *st)
{
    if (st->stage_refused) return 0;
    for (int s = 0; s < 2; ++s)
        if (!st->stage[s] &&
            cudaMallocHost((void **)&st->stage[s], stage_bytes(st->chunk, st->k, st->num_peaks)) != cudaSuccess) {
            cudaGetLastError(); /* not this execute's error: it goes on without staging */
            for (int t = 0; t < 2; ++t)
                if (st->stage[t]) cudaFreeHost(st->stage[t]), st->stage[t] = NULL;
            st->stage_refused = 1;
            return 0;
        }
    return 1;
}

/* The launches' arguments for stream s's chunk of todo voxels. */
static FibArgs chunk_args(const tk_fibers_cuda_state *st, int s, size_t todo, int masked)
{
    const size_t chunk = st->chunk;
    void *const *b = st->buf[s];
    FibArgs args = st->base;
    args.sh = (const float *)b[CHUNK_SH], args.mask = masked ? (const uint8_t *)b[CHUNK_MASK] : NULL;
    args.dirs = (float *)b[CHUNK_DIRS], args.amps = (float *)b[CHUNK_AMPS];
    args.coef = (double *)b[CHUNK_COEF];
    int *voxel_list = (int *)b[CHUNK_VOXEL_LIST], *cand_list = (int *)b[CHUNK_CAND_LIST];
    args.first = voxel_list, args.count = voxel_list + chunk, args.num_cands = voxel_list + 2 * chunk;
    args.cand_voxel = cand_list, args.cand_dir = cand_list + (size_t)TK_FIB_CAP2 * chunk;
    args.cand_start = (float *)b[CHUNK_CAND_START];
    args.cand_high = args.cand_start + (size_t)3 * TK_FIB_CAP2 * chunk;
    args.cand_local = cand_list + (size_t)3 * TK_FIB_CAP2 * chunk;
    args.order = cand_list + (size_t)2 * TK_FIB_CAP2 * chunk, args.order_cap = (int)(TK_FIB_CAP2 * chunk);
    args.num_kind1 = args.num_cands + 1, args.num_kind2 = args.num_cands + 2;
    args.num_climbs = args.num_cands + 3;
    args.num_kind1b = args.num_cands + 4;
    args.climbs_taken = args.num_cands + 5;
    args.num_axial = args.num_cands + 8;
    args.grid_taken = args.num_cands + 9;
    double *res = (double *)b[CHUNK_RES];
    args.res_dir = res, args.res_amp = res + (size_t)3 * TK_FIB_CAP2 * chunk;
    args.axial_state = (int *)b[CHUNK_AXIAL_STATE], args.axial_res = (double *)b[CHUNK_AXIAL_RES];
    args.axial_list = args.axial_state + chunk;
    args.bar = (double *)b[CHUNK_BAR];
    args.num_voxels = todo;
    return args;
}

/* Blocks for a kernel that runs a thread per voxel over a chunk of todo voxels: enough for one
 * pass, at most per_sm (the plan's occupancy figure for that kernel; at least 1) an SM, the
 * rest taken by the kernels' grid-stride loops. */
static int voxel_blocks(const tk_fibers_cuda_state *st, size_t todo, int per_sm)
{
    const size_t want = (todo + Policy::block_threads - 1) / Policy::block_threads;
    const int cap = st->sm_count * (per_sm > 0 ? per_sm : 1);
    return want < (size_t)cap ? (int)want : cap;
}

/* Copies chunk `first`'s SH (and mask) in and queues its kernels on stream s; staged: through
 * the stream's pinned staging, free because its previous chunk's copies are done (the host
 * waited for them in finish_chunk). */
static tk_status launch_chunk(tk_fibers_cuda_state *st, int s, int staged, const float *sh, const uint8_t *mask,
                              size_t first, size_t todo)
{
    const int k = st->k;
    const fibers_kernels &kernels = st->kernels;
    cudaStream_t stream = st->stream[s];
    cudaEvent_t *ev = st->event[s];
    const FibArgs args = chunk_args(st, s, todo, mask != NULL);
    const float *sh_from = sh + first * k;
    const uint8_t *mask_from = mask ? mask + first : NULL;
    if (staged) {
        const fibers_stage g = stage_of(st, s);
        tk_host_copy(g.sh, sh_from, sizeof(float) * k * todo), sh_from = g.sh;
        if (mask) memcpy(g.mask, mask_from, todo), mask_from = g.mask;
    }
    TK_CUDA_TRY_RETURN(TK_FIB_WHO, cudaMemcpyAsync(st->buf[s][CHUNK_SH], sh_from, sizeof(float) * k * todo,
                                                   caller_copy(st, cudaMemcpyHostToDevice, sizeof(float) * k * todo),
                                                   stream));
    if (mask)
        TK_CUDA_TRY_RETURN(TK_FIB_WHO, cudaMemcpyAsync(st->buf[s][CHUNK_MASK], mask_from, todo,
                                                       caller_copy(st, cudaMemcpyHostToDevice, todo), stream));
    const int threads = Policy::block_threads;
    /* the grid pass runs a warp per voxel */
    const size_t want = (todo + Policy::warps_per_block - 1) / Policy::warps_per_block;
    const int blocks = want < (size_t)st->grid_blocks_cap ? (int)want : st->grid_blocks_cap;
    /* The chunk's grid pass and climbs after the other stream's climbs: only the copies, that
     * chunk's select kernel and this chunk's axial kernels (each a thread per voxel,
     * latency-bound) overlap kernels.  The two chunks' kernels running at once took 26.5 ms for
     * 600,000 real voxels where one after the other took 23.0 (a lent H200; the grid pass and
     * the double climbs slow each other down on a shared SM); letting the select kernel run
     * beside the next grid pass gained 1-2% on the phantom (session 28). */
    TK_CUDA_TRY_RETURN(TK_FIB_WHO, cudaEventRecord(ev[EVENT_START], stream));
    TK_CUDA_TRY_RETURN(TK_FIB_WHO, cudaMemsetAsync(args.num_cands, 0, COUNTERS * sizeof(int), stream));
    kernels.axial_look<<<voxel_blocks(st, todo, st->look_blocks), threads, 0, stream>>>(args);
    TK_CUDA_TRY_RETURN(TK_FIB_WHO, cudaGetLastError());
    kernels.axial<<<voxel_blocks(st, todo, st->axial_blocks), threads, 0, stream>>>(args);
    TK_CUDA_TRY_RETURN(TK_FIB_WHO, cudaGetLastError());
    /* the axial kernels, a few warps an SM (the axial kernel's 242 registers, a thread per
     * listed voxel: latency-bound), run beside the other stream's climbs: +3% on the phantom
     * (a third of its voxels are listed), +2% on the whole-brain input (session 29) */
    TK_CUDA_TRY_RETURN(TK_FIB_WHO, cudaEventRecord(ev[EVENT_AXIAL], stream));
    TK_CUDA_TRY_RETURN(TK_FIB_WHO, cudaStreamWaitEvent(stream, st->event[s ^ 1][EVENT_POLISH], 0));
    TK_CUDA_TRY_RETURN(TK_FIB_WHO, cudaEventRecord(ev[EVENT_RUN], stream));
    kernels.grid<<<blocks, threads, st->smem, stream>>>(args);
    TK_CUDA_TRY_RETURN(TK_FIB_WHO, cudaGetLastError());
    TK_CUDA_TRY_RETURN(TK_FIB_WHO, cudaEventRecord(ev[EVENT_GRID], stream));
    /* the grid maxima's climbs (the first of each voxel, its bar, the others that can still
     * matter), then the shoulder candidates (which read them) */
    kernels.polish<<<st->sm_count * st->polish_blocks, threads, 0, stream>>>(args);
    TK_CUDA_TRY_RETURN(TK_FIB_WHO, cudaGetLastError());
    kernels.bar<<<voxel_blocks(st, todo, st->bar_blocks), threads, 0, stream>>>(args);
    TK_CUDA_TRY_RETURN(TK_FIB_WHO, cudaGetLastError());
    kernels.polish_b<<<st->sm_count * st->polish_blocks, threads, 0, stream>>>(args);
    TK_CUDA_TRY_RETURN(TK_FIB_WHO, cudaGetLastError());
    kernels.shoulder<<<st->sm_count * st->shoulder_blocks, threads, 0, stream>>>(args);
    TK_CUDA_TRY_RETURN(TK_FIB_WHO, cudaGetLastError());
    kernels.climb<<<st->sm_count * st->polish_blocks, threads, 0, stream>>>(args);
    TK_CUDA_TRY_RETURN(TK_FIB_WHO, cudaGetLastError());
    TK_CUDA_TRY_RETURN(TK_FIB_WHO, cudaEventRecord(ev[EVENT_POLISH], stream));
    fibers_select_kernel<Policy><<<voxel_blocks(st, todo, st->select_blocks), threads, 0, stream>>>(args);
    TK_CUDA_TRY_RETURN(TK_FIB_WHO, cudaGetLastError());
    TK_CUDA_TRY_RETURN(TK_FIB_WHO, cudaEventRecord(ev[EVENT_STOP], stream));
    return TK_OK;
}

/* Copies chunk j's peaks out of stream s, waits for it, and adds its kernels' time; with the
 * timeline option, each kernel's time and the candidate count on stderr (where the GPU's time
 * goes, with no profiler on the lent machine). */
static tk_status finish_chunk(tk_fibers_cuda_state *st, int s, int staged, size_t j, size_t first, size_t todo,
                              float *directions, float *amplitudes, double *kernel_ms)
{
    const int np = st->num_peaks;
    cudaStream_t stream = st->stream[s];
    cudaEvent_t *ev = st->event[s];
    const fibers_stage g = staged ? stage_of(st, s) : fibers_stage{};
    const size_t dir_bytes = sizeof(float) * 3 * np * todo, amp_bytes = sizeof(float) * np * todo;
    float *dirs_to = directions ? (staged ? g.dirs : directions + first * np * 3) : NULL;
    float *amps_to = amplitudes ? (staged ? g.amps : amplitudes + first * np) : NULL;
    if (dirs_to)
        TK_CUDA_TRY_RETURN(TK_FIB_WHO, cudaMemcpyAsync(dirs_to, st->buf[s][CHUNK_DIRS], dir_bytes,
                                                       caller_copy(st, cudaMemcpyDeviceToHost, dir_bytes), stream));
    if (amps_to)
        TK_CUDA_TRY_RETURN(TK_FIB_WHO, cudaMemcpyAsync(amps_to, st->buf[s][CHUNK_AMPS], amp_bytes,
                                                       caller_copy(st, cudaMemcpyDeviceToHost, amp_bytes), stream));
    TK_CUDA_TRY_RETURN(TK_FIB_WHO, cudaStreamSynchronize(stream));
    if (staged && directions) tk_host_copy(directions + first * np * 3, g.dirs, dir_bytes);
    if (staged && amplitudes) tk_host_copy(amplitudes + first * np, g.amps, amp_bytes);
    /* the chunk's kernels' time, less its wait for the other stream's climbs */
    float axial_ms = 0, ms = 0;
    TK_CUDA_TRY_RETURN(TK_FIB_WHO, cudaEventElapsedTime(&axial_ms, ev[EVENT_START], ev[EVENT_AXIAL]));
    TK_CUDA_TRY_RETURN(TK_FIB_WHO, cudaEventElapsedTime(&ms, ev[EVENT_RUN], ev[EVENT_STOP]));
    *kernel_ms += axial_ms + ms;
    if (!st->timeline) return TK_OK;
    float grid_ms = 0, polish_ms = 0;
    int counts[5] = {0}; /* candidates, pass-1a climbs, shoulder candidates, their climbs, pass-1b climbs */
    TK_CUDA_TRY_RETURN(TK_FIB_WHO, cudaEventElapsedTime(&grid_ms, ev[EVENT_RUN], ev[EVENT_GRID]));
    TK_CUDA_TRY_RETURN(TK_FIB_WHO, cudaEventElapsedTime(&polish_ms, ev[EVENT_GRID], ev[EVENT_POLISH]));
    TK_CUDA_TRY_RETURN(TK_FIB_WHO, cudaMemcpy(counts, (int *)st->buf[s][CHUNK_VOXEL_LIST] + 2 * st->chunk, sizeof counts,
                                              cudaMemcpyDeviceToHost));
    fprintf(stderr, "fibers chunk %zu: %zu voxels, axial %.3f ms, grid %.3f ms, polish %.3f ms (%d candidates, %.1f a "
            "voxel; climbs 1a %d, 1b %d, shoulders %d of %d), select %.3f ms\n", j, todo, axial_ms, grid_ms, polish_ms, counts[0],
            (double)counts[0] / todo, counts[1], counts[4], counts[3], counts[2], ms - grid_ms - polish_ms);
    return TK_OK;
}

extern "C" tk_status tk_fibers_cuda_execute(tk_fibers_cuda_state *st, size_t num_voxels, const float *sh,
                                            const uint8_t *mask, float *directions, float *amplitudes,
                                            size_t *bad_voxels, double *kernel_ms)
{
    tk_status status = TK_OK;
    unsigned long long bad = 0;
    *kernel_ms = 0;
    TK_CUDA_TRY_RETURN(TK_FIB_WHO, cudaSetDevice(st->device));
    if (!st->chunk && num_voxels && (status = alloc_chunks(st, num_voxels)) != TK_OK) return status;
    /* The bad-voxel counter reset, finished before any chunk's kernels add to it: the chunks run on
     * non-blocking streams, which would not wait for a memset on the legacy default stream. */
    TK_CUDA_TRY_RETURN(TK_FIB_WHO, cudaMemsetAsync(st->table[TABLE_BAD], 0, sizeof(unsigned long long), st->stream[0]));
    TK_CUDA_TRY_RETURN(TK_FIB_WHO, cudaStreamSynchronize(st->stream[0]));
    if (num_voxels == 0) return TK_OK;
    const int staged = !st->device_arrays && !(tk_cuda_is_pinned(sh) && tk_cuda_is_pinned(mask) &&
                                               tk_cuda_is_pinned(directions) && tk_cuda_is_pinned(amplitudes)) &&
                       stage_buffers(st);
    /* Issue order H2D(i), kernel(i), then D2H(i-1) and the wait for it, so that the next
     * chunk's kernels are queued before the host waits; chunk i's share is [first[s], +todo[s]),
     * s = i & 1, the sizes next_chunk's ramp. */
    size_t first[2] = {0, 0}, todo[2] = {0, 0}, next = 0;
    for (size_t i = 0; status == TK_OK; ++i) {
        const int s = (int)(i & 1);
        if (next < num_voxels) {
            first[s] = next, todo[s] = next_chunk(st, num_voxels, next, i ? todo[s ^ 1] : 0);
            next += todo[s];
            status = launch_chunk(st, s, staged, sh, mask, first[s], todo[s]);
        } else {
            todo[s] = 0;
        }
        if (i > 0 && status == TK_OK && todo[s ^ 1])
            status = finish_chunk(st, s ^ 1, staged, i - 1, first[s ^ 1], todo[s ^ 1], directions, amplitudes,
                                  kernel_ms);
        if (!todo[s]) break;
    }
    if (status != TK_OK) {
        /* nothing of this execute may run on into the next */
        for (int s = 0; s < 2; ++s) cudaStreamSynchronize(st->stream[s]);
        return status;
    }
    TK_CUDA_TRY_RETURN(TK_FIB_WHO, cudaMemcpy(&bad, st->table[TABLE_BAD], sizeof bad, cudaMemcpyDeviceToHost));
    if (bad_voxels) *bad_voxels = (size_t)bad;
    return TK_OK;
}

extern "C" tk_status tk_fibers_cuda_execute_device(tk_fibers_cuda_state *st, size_t num_voxels, const float *sh,
                                                   const uint8_t *mask, float *directions, float *amplitudes,
                                                   size_t *bad_voxels, double *kernel_ms)
{
    st->device_arrays = 1;
    const tk_status status = tk_fibers_cuda_execute(st, num_voxels, sh, mask, directions, amplitudes, bad_voxels,
                                                    kernel_ms);
    st->device_arrays = 0;
    return status;
}
