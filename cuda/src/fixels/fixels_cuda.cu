/* The fixels' CUDA backend: the volume in chunks through two streams, each chunk's voxels
 * sampled by a matrix product (fixels_samples.cuh) and segmented by the warp-a-voxel kernel, its
 * warps pulling voxels from a counter (fixels_warp.cuh, the working set in shared memory; by
 * default the slim kernel, fixels_slim.cuh, whose samples stay in global memory, in its split form,
 * which hands the lobes' climbs to a kernel of their own, fixels_split.cuh; TK_FIXELS_CUDA_SPLIT=0
 * keeps them in the slim kernel), and
 * the few voxels whose lobes outgrow its shared table by the one-thread kernel below (the
 * host's segmentation text, fixels_segment.h, with its scratch in global memory).  Both give
 * the host's fixels.  The chunks go through pinned staging buffers, two of everything, so that
 * one chunk's copies and the host's packing overlap the other's kernels.  The plan's device
 * state holds the tables, both streams' buffers and the scratch, all kept for its executes. */
#include <cuda_runtime.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cuda_check.cuh"
#include "common/cuda_memory.h"
#include "fixels_segment.h"
#include "fixels_warp.cuh"
#include "fixels_slim.h"

#define TK_FX_WHO "CUDA fixels backend"
#define TK_FX_THREADS 64
/* Voxels a chunk holds at most (a 1.6 ms kernel at the 10M voxels/s goal: long enough to hide
 * the other stream's copies, short enough that the first and last chunk's lone copies are a
 * small part of a run). */
#define TK_FX_CHUNK 16384
/* Threads of the one-thread kernel after the warp kernel, each with its own scratch: enough for
 * the rare voxels with more lobes than the warp kernel's table (and for the tests' runs of every
 * voxel by it, tk_fixels_plan_set_one_thread). */
#define TK_FX_REDO_THREADS 2048

enum { T_DIRS, T_WEIGHTS, T_ADJ, T_BASIS, T_MAP, T_ROWS_SRC, T_ROWS_WEIGHT, T_COUNTERS, TABLES };
/* A stream's device buffers: the chunk's input, its outputs, the list of voxels for the
 * one-thread kernel (its count first, then the pull kernel's counter of voxels taken), that
 * kernel's scratch, the chunk's samples (the pull kernel's input), and the split slim kernel's
 * hand-off (fx_split_io: the voxels' records, their labels, the lists of lobes and voxels). */
enum {
    C_SH, C_MASK, C_COUNT, C_AFD, C_AMP, C_MEAN, C_PEAK, C_LUT, C_REDO, C_SCRATCH, C_SAMPLES,
    C_SPLIT_VOXELS, C_SPLIT_LABEL, C_SPLIT_LISTS, CHUNKS
};
/* The redo buffer's head: its count, the pull kernel's counter, the split form's counts of lobes
 * and voxels handed off (zeroed with it); the list after them. */
#define TK_FX_REDO_HEAD 4
/* The outputs, in tk_fixels_output's order: device buffer C_COUNT + i. */
enum { O_COUNT, O_AFD, O_AMP, O_MEAN, O_PEAK, O_LUT, OUTS };

typedef struct {
    void *buf[CHUNKS];
    unsigned char *pin;            /* pinned: the chunk's sh, mask, then each output */
    size_t pin_sh, pin_mask, pin_redo, pin_out[OUTS];
    cudaStream_t stream;
    cudaEvent_t ev[3];             /* around the chunk's kernels; [2] after the samples kernel */
    int sampled;                   /* the chunk in flight ran the samples kernel (ev[2] recorded) */
    size_t first, n;               /* the chunk in flight (busy) */
    int busy;
} fx_stream;

struct tk_fixels_cuda_state {
    int device, k, slots, vpb;     /* vpb: voxels (warps) a block of the fused warp kernel; 0: none fits */
    int pull_vpb, pull_blocks;     /* the pull kernel's warps a block, and its blocks (all resident) */
    int one_thread;                /* every voxel by the one-thread kernel (the tests' reference) */
    int fused;                     /* the fused warp kernel instead of the samples and pull kernels */
    int slim;                      /* the slim kernel (fixels_slim.cuh) instead of the pull kernel */
    int slim_vpb, slim_blocks;     /* its warps a block, and its blocks (all resident) */
    const fx_slim_entry *slim_entry; /* the slim kernel whole: its register cap's unit */
    const fx_slim_entry *split_entry; /* the split form's: its own cap's unit */
    int split;                     /* the slim kernel's split form (fixels_split.cuh), where slim */
    int split_vpb, split_blocks;   /* its segmentation kernel's warps a block and blocks */
    int split_wide;                /* its climb kernel at 255 registers (TK_FIXELS_SPLIT_WIDE=1), else 168 */
    size_t chunk, work_bytes, warp_smem, slim_smem, redo_threads;
    size_t redone;                 /* the last execute's voxels that the warp kernel passed on */
    double samples_ms;             /* the last execute's samples kernels, summed (the phase timing's) */
    tk_fixels_view view;           /* device pointers */
    void *table[TABLES];
    fx_stream s[2];
};

/* One voxel by one thread, the host's text on global scratch; the voxels are list[0..*list_count)
 * (list NULL: all num_voxels), thread t's scratch block t. */
__global__ void fixels_kernel(tk_fixels_view view, size_t num_voxels, const unsigned *list, const unsigned *list_count,
                              const float *sh, const uint8_t *mask, char *scratch, size_t work_bytes, uint8_t *count,
                              float *afd, float *amp, float *mean, float *peak, uint8_t *lut,
                              unsigned long long *counters)
{
    const size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x, threads = (size_t)gridDim.x * blockDim.x;
    const size_t todo = list ? (size_t)*list_count : num_voxels;
    const int S = view.slots, k = view.k;
    for (size_t i = t; i < todo; i += threads) {
        const size_t v = list ? (size_t)list[i] : i;
        float *a = afd + v * S, *p = amp + v * S, *md = mean + v * S * 3, *pd = peak + v * S * 3;
        for (int j = 0; j < S; ++j) a[j] = p[j] = NAN;
        for (int j = 0; j < 3 * S; ++j) md[j] = pd[j] = NAN;
        uint8_t *l = lut ? lut + v * view.n : NULL;
        if (l) memset(l, TK_FIXELS_NO_LOBE, (size_t)view.n);
        count[v] = 0;
        if (mask && !mask[v]) continue;
        double c[TK_FIXELS_K_MAX];
        int finite = 1;
        for (int j = 0; j < k; ++j) {
            c[j] = sh[v * k + j];
            finite &= isfinite(c[j]) != 0;
        }
        if (!finite) {
            atomicAdd(&counters[0], 1ull);
            continue;
        }
        tk_fixels_work w;
        tk_fixels_work_bind(&w, &view, scratch + t * work_bytes, view.max_lobes);
        const int found = tk_fixels_segment_view(&view, c, &w, a, p, md, pd, l, 0);
        if (found < 0) {
            atomicAdd(&counters[0], 1ull); /* more lobes than the scratch holds */
            continue;
        }
        if (found > S && view.max_fixels == 0) atomicAdd(&counters[1], 1ull);
        count[v] = (uint8_t)(found < S ? found : S);
    }
}

void tk_fixels_cuda_destroy(tk_fixels_cuda_state *st)
{
    if (!st) return;
    cudaSetDevice(st->device);
    for (int j = 0; j < 2; ++j) {
        fx_stream *s = &st->s[j];
        if (s->stream) cudaStreamSynchronize(s->stream);
        for (int i = 0; i < CHUNKS; ++i) tk_cuda_free(s->buf[i]);
        if (s->pin) cudaFreeHost(s->pin);
        for (int i = 0; i < 3; ++i)
            if (s->ev[i]) cudaEventDestroy(s->ev[i]);
        if (s->stream) cudaStreamDestroy(s->stream);
    }
    for (int i = 0; i < TABLES; ++i) tk_cuda_free(st->table[i]);
    free(st);
}

/* Bytes a voxel takes in output i (S slots, N directions). */
static size_t out_bytes(int i, size_t S, size_t N)
{
    const size_t b[OUTS] = {1, sizeof(float) * S, sizeof(float) * S, sizeof(float) * 3 * S, sizeof(float) * 3 * S, N};
    return b[i];
}

/* A warp kernel's voxels a block (*vpb): the count that keeps the most voxels resident on an SM
 * (shared memory and registers, by the occupancy calculator), the larger of equals (the fused
 * kernel's voxels share the block's pass over the basis), and the blocks of it an SM (*blocks);
 * *vpb 0 where not one voxel's working set fits. */
static tk_status pick_voxels_per_block(const tk_fixels_cuda_state *st, const void *kernel, size_t smem, int *vpb,
                                       int *blocks)
{
    int optin = 0;
    cudaFuncAttributes attr;
    TK_CUDA_TRY_RETURN(TK_FX_WHO, cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, st->device));
    TK_CUDA_TRY_RETURN(TK_FX_WHO, cudaFuncGetAttributes(&attr, kernel));
    /* the dynamic shared memory a block may ask for: the opt-in limit less the kernel's static */
    const size_t most = (size_t)optin > attr.sharedSizeBytes ? (size_t)optin - attr.sharedSizeBytes : 0;
    *vpb = *blocks = 0;
    if (smem > most) return TK_OK;
    TK_CUDA_TRY_RETURN(TK_FX_WHO, cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)most));
    TK_CUDA_TRY_RETURN(TK_FX_WHO, cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                                       (int)cudaSharedmemCarveoutMaxShared));
    int best = 0;
    for (int v = 1; v <= TK_FX_WARP_VOXELS_MAX; ++v) {
        const size_t bytes = smem * (size_t)v;
        if (bytes > most) break;
        int b = 0;
        TK_CUDA_TRY_RETURN(TK_FX_WHO, cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, kernel, 32 * v, bytes));
        if (b * v >= best && b > 0) best = b * v, *vpb = v, *blocks = b;
    }
    return TK_OK;
}

/* Both warp kernels' blocks; the samples kernel asks for the shared memory carveout the pull
 * kernel has, so that one chunk's product runs beside the other stream's segmentation. */
static tk_status pick_blocks(tk_fixels_cuda_state *st)
{
    int blocks = 0, sms = 0;
    tk_status status = pick_voxels_per_block(st, (const void *)fixels_warp_kernel, st->warp_smem, &st->vpb, &blocks);
    if (status != TK_OK) return status;
    status = pick_voxels_per_block(st, (const void *)fixels_warp_pull_kernel, st->warp_smem, &st->pull_vpb, &blocks);
    if (status != TK_OK) return status;
    TK_CUDA_TRY_RETURN(TK_FX_WHO, cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, st->device));
    st->pull_blocks = blocks * sms;
    /* the slim kernel, unless TK_FIXELS_CUDA_SLIM=0 (the pull kernel) */
    /* Register caps (fixels_slim.h): the slim kernel whole at 128 (at 96 its climbs spill: 13%
     * slower on an H200, session 18); the split form's segmentation kernel, which has no climbs,
     * at 80 (24 warps an SM, not 16: 1.02x the 128 cap on an H100, each of three runs faster,
     * session 19).  TK_FIXELS_SLIM_REGS=128 or 80 runs both forms from that unit (A/B). */
    st->slim_entry = &fx_slim_r128, st->split_entry = &fx_slim_r80;
    const char *regs = getenv("TK_FIXELS_SLIM_REGS");
    if (regs) {
        const fx_slim_entry *const units[] = {&fx_slim_r128, &fx_slim_r80};
        for (size_t i = 0; i < sizeof units / sizeof units[0]; ++i)
            if (atoi(regs) == units[i]->registers) st->slim_entry = st->split_entry = units[i];
    }
    const void *slim_kernel = st->slim_entry->kernel(0);
    status = pick_voxels_per_block(st, slim_kernel, st->slim_smem, &st->slim_vpb, &blocks);
    if (status != TK_OK) return status;
    st->slim_blocks = blocks * sms;
    const char *slim = getenv("TK_FIXELS_CUDA_SLIM");
    st->slim = st->slim_vpb > 0 && !(slim && strcmp(slim, "0") == 0);
    /* its split form (the climbs a thread a lobe in a kernel of their own), the default since an
     * H200 measured it 1.46x the slim kernel in one piece (session 18); TK_FIXELS_CUDA_SPLIT=0 runs
     * the slim kernel whole for A/B */
    const void *split_kernel = st->split_entry->kernel(1);
    status = pick_voxels_per_block(st, split_kernel, st->slim_smem, &st->split_vpb, &blocks);
    if (status != TK_OK) return status;
    st->split_blocks = blocks * sms;
    const char *split = getenv("TK_FIXELS_CUDA_SPLIT");
    st->split = st->split_vpb > 0 && !(split && strcmp(split, "0") == 0);
    const char *wide = getenv("TK_FIXELS_SPLIT_WIDE");
    st->split_wide = wide && strcmp(wide, "1") == 0;
    /* The samples kernel runs beside the other stream's segmentation where the SM's shared memory
     * is split as the segmentation kernel asks: the pull kernel's whole carveout; the slim kernel's
     * resident blocks and one samples block (the rest stays L1, which caches the samples the slim
     * kernel reads and the climbs' spills), unless TK_FIXELS_SLIM_CARVEOUT=max. */
    int carveout = (int)cudaSharedmemCarveoutMaxShared;
    const char *cv = getenv("TK_FIXELS_SLIM_CARVEOUT");
    if (st->slim && !(cv && strcmp(cv, "max") == 0)) {
        int per_sm = 0;
        cudaFuncAttributes attr, gemm;
        TK_CUDA_TRY_RETURN(TK_FX_WHO, cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, st->device));
        /* the kernel that runs: the split form's segmentation or the slim kernel whole */
        const int split_runs = st->split && st->split_vpb > 0;
        TK_CUDA_TRY_RETURN(TK_FX_WHO, cudaFuncGetAttributes(&attr, split_runs ? split_kernel : slim_kernel));
        TK_CUDA_TRY_RETURN(TK_FX_WHO, cudaFuncGetAttributes(&gemm, (const void *)fixels_samples_kernel));
        const size_t vpb = (size_t)(split_runs ? st->split_vpb : st->slim_vpb);
        const size_t resident = (size_t)(split_runs ? st->split_blocks : st->slim_blocks) / (size_t)sms;
        /* a block's shared memory and the 1 KB the SM reserves for each */
        const size_t need = resident * (st->slim_smem * vpb + attr.sharedSizeBytes + 1024) + gemm.sharedSizeBytes + 1024;
        const int percent = per_sm > 0 ? (int)((100 * need + (size_t)per_sm - 1) / (size_t)per_sm) : 100;
        carveout = percent < 100 ? percent : 100;
    }
    if (st->slim) {
        TK_CUDA_TRY_RETURN(TK_FX_WHO, cudaFuncSetAttribute(slim_kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                                           carveout));
        /* the split form's segmentation kernel: the same shared memory a voxel (its blocks, at
         * fewer registers, may be more: the carveout a hint) */
        if (st->split_vpb)
            TK_CUDA_TRY_RETURN(TK_FX_WHO, cudaFuncSetAttribute(split_kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                                               carveout));
    }
    TK_CUDA_TRY_RETURN(TK_FX_WHO, cudaFuncSetAttribute((const void *)fixels_samples_kernel,
                                                       cudaFuncAttributePreferredSharedMemoryCarveout, carveout));
    /* a developer's A/B switch: the fused kernel (fixels_warp.cuh) */
    const char *fused = getenv("TK_FIXELS_CUDA_FUSED");
    st->fused = fused && strcmp(fused, "1") == 0;
    /* a GPU that holds a fused block but no pull block (their static shared memory differs by
     * the fused kernel's list of live voxels, so not seen) runs the fused kernel */
    if (!st->pull_vpb) st->fused = 1;
    return TK_OK;
}

tk_status tk_fixels_cuda_create(const tk_fixels_plan *plan, int device, tk_fixels_cuda_state **state)
{
    *state = NULL;
    tk_status status = tk_cuda_require_device(device);
    if (status != TK_OK) return status;
    tk_fixels_cuda_state *st = (tk_fixels_cuda_state *)calloc(1, sizeof *st);
    if (!st) return tk_set_error(TK_ERR_MEMORY, "out of memory for the CUDA fixels state");
    st->device = device, st->k = plan->k, st->slots = plan->slots;
    /* as many lobes as the host holds, one a direction: a constant FOD (every sample tied, the
     * ties by index) grows 321 lobes on the 1281 directions and 1281 on the 5121 */
    st->work_bytes = (tk_fixels_work_bytes(plan->view.n, plan->view.n) + 255) / 256 * 256;
    st->warp_smem = fx_warp_layout_for(plan->view.n, plan->k).bytes;
    st->slim_smem = fx_warp_slim_layout_for(plan->view.n, plan->k).bytes;
    const size_t N = (size_t)plan->view.n, k = (size_t)plan->k, S = (size_t)plan->slots;
    const size_t tbytes[TABLES] = {sizeof(double) * 3 * N, sizeof(double) * N, sizeof(short) * 6 * N,
                                   sizeof(double) * k * N, sizeof(double) * k * k, sizeof(plan->rows_src),
                                   sizeof(plan->rows_weight), 2 * sizeof(unsigned long long)};
    const void *tsrc[TABLES] = {plan->view.dirs, plan->view.weights, plan->view.adj, plan->basis,
                                plan->map, plan->rows_src, plan->rows_weight, NULL};
    TK_CUDA_TRY_GOTO(status, fail, TK_FX_WHO, cudaSetDevice(st->device));
    for (int i = 0; i < TABLES; ++i) {
        TK_CUDA_TRY_GOTO(status, fail, TK_FX_WHO, tk_cuda_malloc(&st->table[i], tbytes[i]));
        if (tsrc[i]) TK_CUDA_TRY_GOTO(status, fail, TK_FX_WHO, cudaMemcpy(st->table[i], tsrc[i], tbytes[i], cudaMemcpyHostToDevice));
    }
    status = pick_blocks(st);
    if (status != TK_OK) goto fail;
    {
        /* both streams' buffers in at most a quarter of the free memory: the one-thread kernel's
         * scratch (~190 KB a thread on the 1281 directions, ~740 KB on the 5121) for up to
         * TK_FX_REDO_THREADS threads in at most half of a stream's share, the chunk's arrays in
         * the rest; where the warp kernel fits no voxel, the one-thread kernel runs every voxel,
         * a thread each */
        size_t free_bytes = 0, total = 0;
        status = tk_cuda_memory_get(&free_bytes, &total);
        if (status != TK_OK) goto fail;
        size_t io = 4 * k + 1 + 4; /* sh, mask, the redo list */
        for (int i = 0; i < OUTS; ++i) io += out_bytes(i, S, N);
        if (st->vpb) io += sizeof(double) * fx_samples_stride((int)N); /* the samples */
        if (st->split_vpb) io += fx_split_bytes((int)N); /* the split form's hand-off */
        const size_t share = free_bytes / 4 / 2;
        size_t redo = 0, chunk = 0;
        if (st->vpb) {
            redo = share / 2 / st->work_bytes;
            if (redo > TK_FX_REDO_THREADS) redo = TK_FX_REDO_THREADS;
            chunk = (share - redo * st->work_bytes) / io;
        } else {
            chunk = redo = share / (io + st->work_bytes);
        }
        /* a developer's A/B knob: TK_FIXELS_CUDA_CHUNK=V voxels a chunk at most (256 or more;
         * memory still bounds it) */
        size_t cap = TK_FX_CHUNK;
        const char *cap_env = getenv("TK_FIXELS_CUDA_CHUNK");
        if (cap_env) {
            const unsigned long v = strtoul(cap_env, NULL, 10);
            if (v >= 256) cap = (size_t)v;
        }
        if (chunk > cap) chunk = cap;
        if (redo > chunk) redo = chunk;
        /* whole blocks of the one-thread kernel: its thread t uses scratch block t */
        redo = redo / TK_FX_THREADS * TK_FX_THREADS;
        if (chunk < 256 || redo < TK_FX_THREADS) {
            status = tk_cuda_out_of_memory(TK_FX_WHO, "the fixels' chunk buffers",
                                           2 * (256 * io + (st->vpb ? TK_FX_THREADS : 256) * st->work_bytes));
            goto fail;
        }
        st->chunk = chunk, st->redo_threads = redo;
        const size_t cbytes[CHUNKS] = {sizeof(float) * k * chunk, chunk, chunk, sizeof(float) * S * chunk,
                                       sizeof(float) * S * chunk, sizeof(float) * 3 * S * chunk,
                                       sizeof(float) * 3 * S * chunk, N * chunk,
                                       sizeof(unsigned) * (chunk + TK_FX_REDO_HEAD), st->work_bytes * st->redo_threads,
                                       st->vpb ? sizeof(double) * fx_samples_stride((int)N) * chunk : 1,
                                       st->split_vpb ? sizeof(fx_split_voxel) * chunk : 1,
                                       st->split_vpb ? sizeof(int16_t) * N * chunk : 1,
                                       st->split_vpb ? sizeof(unsigned) * (TK_FX_WARP_LOBES + 1) * chunk : 1};
        for (int j = 0; j < 2; ++j) {
            fx_stream *s = &st->s[j];
            for (int i = 0; i < CHUNKS; ++i) TK_CUDA_TRY_GOTO(status, fail, TK_FX_WHO, tk_cuda_malloc(&s->buf[i], cbytes[i]));
            size_t at = 0;
            s->pin_sh = at, at += (sizeof(float) * k * chunk + 15) / 16 * 16;
            s->pin_mask = at, at += (chunk + 15) / 16 * 16;
            s->pin_redo = at, at += 16;
            for (int i = 0; i < OUTS; ++i) s->pin_out[i] = at, at += (out_bytes(i, S, N) * chunk + 15) / 16 * 16;
            TK_CUDA_TRY_GOTO(status, fail, TK_FX_WHO, cudaHostAlloc((void **)&s->pin, at, cudaHostAllocDefault));
            TK_CUDA_TRY_GOTO(status, fail, TK_FX_WHO, cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking));
            TK_CUDA_TRY_GOTO(status, fail, TK_FX_WHO, cudaEventCreate(&s->ev[0]));
            TK_CUDA_TRY_GOTO(status, fail, TK_FX_WHO, cudaEventCreate(&s->ev[1]));
            TK_CUDA_TRY_GOTO(status, fail, TK_FX_WHO, cudaEventCreate(&s->ev[2]));
        }
    }
    st->view = plan->view;
    st->view.dirs = (const double(*)[3])st->table[T_DIRS];
    st->view.weights = (const double *)st->table[T_WEIGHTS];
    st->view.adj = (const short(*)[6])st->table[T_ADJ];
    st->view.basis = (const double *)st->table[T_BASIS];
    st->view.map = (const double *)st->table[T_MAP];
    st->view.rows_src = (const int(*)[6])st->table[T_ROWS_SRC];
    st->view.rows_weight = (const double(*)[6])st->table[T_ROWS_WEIGHT];
    st->view.max_lobes = plan->view.n;
    *state = st;
    return TK_OK;
fail:
    tk_fixels_cuda_destroy(st);
    return status;
}

/* The caller's array of output i (NULL where not asked for). */
static void *user_out(const tk_fixels_output *out, int i)
{
    void *const o[OUTS] = {out->count, out->afd, out->peak_amp, out->mean_dir, out->peak_dir, out->lobe_of_dir};
    return o[i];
}

/* Chunk [first, first + n) on stream s: staged, copied in, segmented, copied back to the
 * stream's pinned buffers (finish_chunk unpacks them). */
static tk_status start_chunk(tk_fixels_cuda_state *st, fx_stream *s, size_t first, size_t n, const float *sh,
                             const uint8_t *mask, const tk_fixels_output *out)
{
    tk_status status = TK_OK;
    const size_t k = (size_t)st->k, S = (size_t)st->slots, N = (size_t)st->view.n;
    const cudaStream_t q = s->stream;
    memcpy(s->pin + s->pin_sh, sh + first * k, sizeof(float) * k * n);
    TK_CUDA_TRY_RETURN(TK_FX_WHO, cudaMemcpyAsync(s->buf[C_SH], s->pin + s->pin_sh, sizeof(float) * k * n,
                                                  cudaMemcpyHostToDevice, q));
    if (mask) {
        memcpy(s->pin + s->pin_mask, mask + first, n);
        TK_CUDA_TRY_RETURN(TK_FX_WHO, cudaMemcpyAsync(s->buf[C_MASK], s->pin + s->pin_mask, n, cudaMemcpyHostToDevice, q));
    }
    unsigned *redo = (unsigned *)s->buf[C_REDO];
    TK_CUDA_TRY_RETURN(TK_FX_WHO, cudaMemsetAsync(redo, 0, sizeof(unsigned) * TK_FX_REDO_HEAD, q));
    TK_CUDA_TRY_RETURN(TK_FX_WHO, cudaEventRecord(s->ev[0], q));
    const float *dsh = (const float *)s->buf[C_SH];
    const uint8_t *dmask = mask ? (const uint8_t *)s->buf[C_MASK] : NULL;
    uint8_t *lut = out->lobe_of_dir ? (uint8_t *)s->buf[C_LUT] : NULL;
    unsigned long long *counters = (unsigned long long *)st->table[T_COUNTERS];
    const int warp = st->vpb && !st->one_thread;
    s->sampled = warp && !st->fused;
    if (warp) {
        const fx_warp_io io = {dsh, dmask, (uint8_t *)s->buf[C_COUNT], (float *)s->buf[C_AFD], (float *)s->buf[C_AMP],
                               (float *)s->buf[C_MEAN], (float *)s->buf[C_PEAK], lut, counters,
                               redo + TK_FX_REDO_HEAD, redo};
        if (st->fused) {
            const unsigned blocks = (unsigned)((n + st->vpb - 1) / st->vpb);
            fixels_warp_kernel<<<blocks, 32 * st->vpb, st->warp_smem * st->vpb, q>>>(st->view, st->vpb, n, io);
        } else {
            double *samples = (double *)s->buf[C_SAMPLES];
            const dim3 tiles((unsigned)((N + TK_FX_GEMM_DIRS - 1) / TK_FX_GEMM_DIRS),
                             (unsigned)((n + TK_FX_GEMM_VOXELS - 1) / TK_FX_GEMM_VOXELS));
            fixels_samples_kernel<<<tiles, TK_FX_GEMM_THREADS, 0, q>>>(st->view.basis, st->view.n, st->k, n, dsh,
                                                                       samples);
            TK_CUDA_TRY_RETURN(TK_FX_WHO, cudaGetLastError());
            TK_CUDA_TRY_RETURN(TK_FX_WHO, cudaEventRecord(s->ev[2], q));
            const int split = st->slim && st->split;
            const size_t vpb = (size_t)(split ? st->split_vpb : st->slim ? st->slim_vpb : st->pull_vpb);
            const size_t most = (size_t)(split ? st->split_blocks : st->slim ? st->slim_blocks : st->pull_blocks);
            const size_t want = (n + vpb - 1) / vpb;
            const unsigned blocks = (unsigned)(want < most ? want : most);
            unsigned *lists = (unsigned *)s->buf[C_SPLIT_LISTS];
            const fx_split_io hand = {(fx_split_voxel *)s->buf[C_SPLIT_VOXELS], (int16_t *)s->buf[C_SPLIT_LABEL], lists,
                                      lists + TK_FX_WARP_LOBES * n, redo + 2, st->split_wide};
            const fx_slim_entry *unit = split ? st->split_entry : st->slim_entry;
            if (st->slim)
                TK_CUDA_TRY_RETURN(TK_FX_WHO, unit->launch(blocks, (unsigned)(32 * vpb), st->slim_smem * vpb, q, st->view, n,
                                                           samples, io, redo + 1, split ? &hand : NULL));
            else
                fixels_warp_pull_kernel<<<blocks, (unsigned)(32 * vpb), st->warp_smem * vpb, q>>>(st->view, n, samples,
                                                                                                   io, redo + 1);
        }
        TK_CUDA_TRY_RETURN(TK_FX_WHO, cudaGetLastError());
    }
    const size_t threads = n < st->redo_threads ? n : st->redo_threads;
    fixels_kernel<<<(unsigned)((threads + TK_FX_THREADS - 1) / TK_FX_THREADS), TK_FX_THREADS, 0, q>>>(
        st->view, n, warp ? redo + TK_FX_REDO_HEAD : NULL, redo, dsh, dmask, (char *)s->buf[C_SCRATCH], st->work_bytes,
        (uint8_t *)s->buf[C_COUNT], (float *)s->buf[C_AFD], (float *)s->buf[C_AMP], (float *)s->buf[C_MEAN],
        (float *)s->buf[C_PEAK], lut, counters);
    TK_CUDA_TRY_RETURN(TK_FX_WHO, cudaGetLastError());
    TK_CUDA_TRY_RETURN(TK_FX_WHO, cudaEventRecord(s->ev[1], q));
    TK_CUDA_TRY_RETURN(TK_FX_WHO, cudaMemcpyAsync(s->pin + s->pin_redo, redo, sizeof(unsigned), cudaMemcpyDeviceToHost, q));
    for (int i = 0; i < OUTS; ++i)
        if (user_out(out, i))
            TK_CUDA_TRY_RETURN(TK_FX_WHO, cudaMemcpyAsync(s->pin + s->pin_out[i], s->buf[C_COUNT + i],
                                                          out_bytes(i, S, N) * n, cudaMemcpyDeviceToHost, q));
    s->first = first, s->n = n, s->busy = 1;
    return status;
}

/* Waits for stream s's chunk and unpacks its outputs into the caller's arrays. */
static tk_status finish_chunk(tk_fixels_cuda_state *st, fx_stream *s, const tk_fixels_output *out, float *ms_total)
{
    const size_t S = (size_t)st->slots, N = (size_t)st->view.n;
    s->busy = 0;
    TK_CUDA_TRY_RETURN(TK_FX_WHO, cudaStreamSynchronize(s->stream));
    float ms = 0;
    TK_CUDA_TRY_RETURN(TK_FX_WHO, cudaEventElapsedTime(&ms, s->ev[0], s->ev[1]));
    *ms_total += ms;
    if (s->sampled) {
        TK_CUDA_TRY_RETURN(TK_FX_WHO, cudaEventElapsedTime(&ms, s->ev[0], s->ev[2]));
        st->samples_ms += ms;
    }
    unsigned redone;
    memcpy(&redone, s->pin + s->pin_redo, sizeof redone);
    st->redone += redone;
    for (int i = 0; i < OUTS; ++i) {
        unsigned char *to = (unsigned char *)user_out(out, i);
        if (to) memcpy(to + out_bytes(i, S, N) * s->first, s->pin + s->pin_out[i], out_bytes(i, S, N) * s->n);
    }
    return TK_OK;
}

tk_status tk_fixels_cuda_execute(tk_fixels_cuda_state *st, size_t num_voxels, const float *sh, const uint8_t *mask,
                                 tk_fixels_output *out, double *kernel_ms)
{
    tk_status status = TK_OK;
    unsigned long long counters[2] = {0, 0};
    float ms_total = 0;
    TK_CUDA_TRY_RETURN(TK_FX_WHO, cudaSetDevice(st->device));
    /* the streams do not wait for the legacy default stream: the counters are zeroed on one of
     * them, and waited for, before any chunk starts */
    TK_CUDA_TRY_RETURN(TK_FX_WHO, cudaMemsetAsync(st->table[T_COUNTERS], 0, sizeof counters, st->s[0].stream));
    TK_CUDA_TRY_RETURN(TK_FX_WHO, cudaStreamSynchronize(st->s[0].stream));
    st->redone = 0, st->samples_ms = 0;
    /* the streams take chunks in turn: before a stream takes the next, its last chunk is waited
     * for and unpacked while the other stream's runs */
    size_t next = 0;
    for (int cur = 0; next < num_voxels || st->s[0].busy || st->s[1].busy; cur ^= 1) {
        fx_stream *s = &st->s[cur];
        if (s->busy && (status = finish_chunk(st, s, out, &ms_total)) != TK_OK) goto done;
        if (next < num_voxels) {
            const size_t n = num_voxels - next < st->chunk ? num_voxels - next : st->chunk;
            if ((status = start_chunk(st, s, next, n, sh, mask, out)) != TK_OK) goto done;
            next += n;
        }
    }
    TK_CUDA_TRY_GOTO(status, done, TK_FX_WHO,
                     cudaMemcpy(counters, st->table[T_COUNTERS], sizeof counters, cudaMemcpyDeviceToHost));
    out->bad_voxels = (size_t)counters[0], out->truncated = (size_t)counters[1];
done:
    /* after a failure nothing is left in flight on the state's buffers (a chunk that failed while
     * it was being started is not marked busy, but may have copies queued) */
    for (int j = 0; j < 2; ++j) {
        cudaStreamSynchronize(st->s[j].stream);
        st->s[j].busy = 0;
    }
    if (kernel_ms) *kernel_ms = ms_total;
#ifdef TK_FX_PHASE_TIMING
    {
        /* the developer's phase measurement (fixels_warp.cuh): the sums, then zeroed */
        static const char *const names[TK_FX_PHASES] = {"sampling", "sort", "walk", "bridges", "tensor", "climbs", "masks"};
        unsigned long long cycles[TK_FX_PHASES] = {0}, total = 0;
        /* the slim units' own counters added in (only the kernel that ran counted) */
        if (cudaMemcpyFromSymbol(cycles, fx_phase_cycles, sizeof cycles) == cudaSuccess &&
            st->slim_entry->phases(cycles) == cudaSuccess &&
            (st->split_entry == st->slim_entry || st->split_entry->phases(cycles) == cudaSuccess)) {
            for (int i = 0; i < TK_FX_PHASES; ++i) total += cycles[i];
            fprintf(stderr, "fixels warp phases (%s kernel, %zu voxels, cycles a voxel-warp):",
                    st->fused ? "fused" : st->slim ? (st->split ? "slim split" : "slim") : "pull", num_voxels);
            for (int i = 0; i < TK_FX_PHASES; ++i)
                fprintf(stderr, " %s %.0f (%.1f%%)", names[i], (double)cycles[i] / (double)(num_voxels ? num_voxels : 1),
                        total ? 100.0 * (double)cycles[i] / (double)total : 0.0);
            fprintf(stderr, "; the samples kernels %.1f ms (summed over the streams)\n", st->samples_ms);
            memset(cycles, 0, sizeof cycles);
            cudaMemcpyToSymbol(fx_phase_cycles, cycles, sizeof cycles);
        }
    }
#endif
    return status;
}

void tk_fixels_cuda_set_one_thread(tk_fixels_cuda_state *st, int on)
{
    st->one_thread = on != 0;
}

void tk_fixels_cuda_set_fused(tk_fixels_cuda_state *st, int on)
{
    st->fused = on != 0 || !st->pull_vpb;
}

void tk_fixels_cuda_set_slim(tk_fixels_cuda_state *st, int on)
{
    st->slim = on != 0 && st->slim_vpb > 0;
}

void tk_fixels_cuda_set_split(tk_fixels_cuda_state *st, int on)
{
    st->split = on != 0 && st->split_vpb > 0;
}

size_t tk_fixels_cuda_redone(const tk_fixels_cuda_state *st)
{
    return st->one_thread ? 0 : st->redone;
}
