/* The fixels' CUDA backend: the host's segmentation text (fixels_segment.h) run one thread a
 * voxel, each with its scratch in global memory, over the volume in chunks: the plan's device
 * state holds the tables, the chunk buffers and the scratch, all kept for its executes.  A
 * first backend: the same fixels as the CPU's (the same arithmetic but for the FMA contractions
 * nvcc makes), not yet a fast one (the growth is one thread's sequential loop). */
#include <cuda_runtime.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/cuda_check.cuh"
#include "common/cuda_memory.h"
#include "fixels_segment.h"

#define TK_FX_WHO "CUDA fixels backend"
#define TK_FX_THREADS 64

enum { T_DIRS, T_WEIGHTS, T_ADJ, T_BASIS, T_MAP, T_ROWS_SRC, T_ROWS_WEIGHT, T_COUNTERS, TABLES };
enum { C_SH, C_MASK, C_COUNT, C_AFD, C_AMP, C_MEAN, C_PEAK, C_LUT, C_SCRATCH, CHUNKS };

struct tk_fixels_cuda_state {
    int device, k, slots;
    size_t chunk, work_bytes;
    tk_fixels_view view; /* device pointers */
    void *table[TABLES], *buf[CHUNKS];
};

__global__ void fixels_kernel(tk_fixels_view view, size_t n, const float *sh, const uint8_t *mask, char *scratch,
                              size_t work_bytes, uint8_t *count, float *afd, float *amp, float *mean, float *peak,
                              uint8_t *lut, unsigned long long *counters)
{
    const size_t v = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (v >= n) return;
    const int S = view.slots, k = view.k;
    float *a = afd + v * S, *p = amp + v * S, *md = mean + v * S * 3, *pd = peak + v * S * 3;
    for (int i = 0; i < S; ++i) a[i] = p[i] = NAN;
    for (int i = 0; i < 3 * S; ++i) md[i] = pd[i] = NAN;
    uint8_t *l = lut ? lut + v * view.n : NULL;
    if (l) memset(l, TK_FIXELS_NO_LOBE, (size_t)view.n);
    count[v] = 0;
    if (mask && !mask[v]) return;
    double c[TK_FIXELS_K_MAX];
    for (int j = 0; j < k; ++j) {
        c[j] = sh[v * k + j];
        if (!isfinite(c[j])) {
            atomicAdd(&counters[0], 1ull);
            return;
        }
    }
    tk_fixels_work w;
    tk_fixels_work_bind(&w, &view, scratch + v * work_bytes, view.max_lobes);
    const int found = tk_fixels_segment_view(&view, c, &w, a, p, md, pd, l, 0);
    if (found < 0) {
        atomicAdd(&counters[0], 1ull); /* more lobes than the scratch holds */
        return;
    }
    if (found > S && view.max_fixels == 0) atomicAdd(&counters[1], 1ull);
    count[v] = (uint8_t)(found < S ? found : S);
}

void tk_fixels_cuda_destroy(tk_fixels_cuda_state *st)
{
    if (!st) return;
    cudaSetDevice(st->device);
    for (int i = 0; i < TABLES; ++i) tk_cuda_free(st->table[i]);
    for (int i = 0; i < CHUNKS; ++i) tk_cuda_free(st->buf[i]);
    free(st);
}

tk_status tk_fixels_cuda_create(const tk_fixels_plan *plan, int device, tk_fixels_cuda_state **state)
{
    *state = NULL;
    tk_status status = tk_cuda_require_device(device);
    if (status != TK_OK) return status;
    tk_fixels_cuda_state *st = (tk_fixels_cuda_state *)calloc(1, sizeof *st);
    if (!st) return tk_set_error(TK_ERR_MEMORY, "out of memory for the CUDA fixels state");
    st->device = device, st->k = plan->k, st->slots = plan->slots;
    st->work_bytes = (tk_fixels_work_bytes(plan->view.n, TK_FIXELS_DEVICE_LOBES) + 255) / 256 * 256;
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
    {
        /* chunks that take at most a quarter of the free memory (the scratch is ~90 KB a voxel
         * on the 1281 directions, ~330 KB on the 5121) */
        size_t free_bytes = 0, total = 0;
        status = tk_cuda_memory_get(&free_bytes, &total);
        if (status != TK_OK) goto fail;
        const size_t per_voxel = st->work_bytes + 4 * k + 2 + 4 * 8 * S + N;
        size_t chunk = free_bytes / 4 / per_voxel;
        if (chunk > 65536) chunk = 65536;
        if (chunk < 256) {
            status = tk_cuda_out_of_memory(TK_FX_WHO, "the fixels' chunk buffers", 256 * per_voxel);
            goto fail;
        }
        st->chunk = chunk;
        const size_t cbytes[CHUNKS] = {sizeof(float) * k * chunk, chunk, chunk, sizeof(float) * S * chunk,
                                       sizeof(float) * S * chunk, sizeof(float) * 3 * S * chunk,
                                       sizeof(float) * 3 * S * chunk, N * chunk, st->work_bytes * chunk};
        for (int i = 0; i < CHUNKS; ++i) TK_CUDA_TRY_GOTO(status, fail, TK_FX_WHO, tk_cuda_malloc(&st->buf[i], cbytes[i]));
    }
    st->view = plan->view;
    st->view.dirs = (const double(*)[3])st->table[T_DIRS];
    st->view.weights = (const double *)st->table[T_WEIGHTS];
    st->view.adj = (const short(*)[6])st->table[T_ADJ];
    st->view.basis = (const double *)st->table[T_BASIS];
    st->view.map = (const double *)st->table[T_MAP];
    st->view.rows_src = (const int(*)[6])st->table[T_ROWS_SRC];
    st->view.rows_weight = (const double(*)[6])st->table[T_ROWS_WEIGHT];
    st->view.max_lobes = TK_FIXELS_DEVICE_LOBES;
    *state = st;
    return TK_OK;
fail:
    tk_fixels_cuda_destroy(st);
    return status;
}

tk_status tk_fixels_cuda_execute(tk_fixels_cuda_state *st, size_t num_voxels, const float *sh, const uint8_t *mask,
                                 tk_fixels_output *out, double *kernel_ms)
{
    tk_status status = TK_OK;
    const size_t k = (size_t)st->k, S = (size_t)st->slots, N = (size_t)st->view.n;
    unsigned long long counters[2] = {0, 0};
    float ms_total = 0;
    cudaEvent_t ev[2] = {NULL, NULL};
    TK_CUDA_TRY_RETURN(TK_FX_WHO, cudaSetDevice(st->device));
    TK_CUDA_TRY_RETURN(TK_FX_WHO, cudaMemset(st->table[T_COUNTERS], 0, sizeof counters));
    TK_CUDA_TRY_GOTO(status, done, TK_FX_WHO, cudaEventCreate(&ev[0]));
    TK_CUDA_TRY_GOTO(status, done, TK_FX_WHO, cudaEventCreate(&ev[1]));
    for (size_t first = 0; first < num_voxels; first += st->chunk) {
        const size_t n = num_voxels - first < st->chunk ? num_voxels - first : st->chunk;
        TK_CUDA_TRY_GOTO(status, done, TK_FX_WHO,
                         cudaMemcpy(st->buf[C_SH], sh + first * k, sizeof(float) * k * n, cudaMemcpyHostToDevice));
        if (mask)
            TK_CUDA_TRY_GOTO(status, done, TK_FX_WHO, cudaMemcpy(st->buf[C_MASK], mask + first, n, cudaMemcpyHostToDevice));
        cudaEventRecord(ev[0]);
        const unsigned blocks = (unsigned)((n + TK_FX_THREADS - 1) / TK_FX_THREADS);
        fixels_kernel<<<blocks, TK_FX_THREADS>>>(
            st->view, n, (const float *)st->buf[C_SH], mask ? (const uint8_t *)st->buf[C_MASK] : NULL,
            (char *)st->buf[C_SCRATCH], st->work_bytes, (uint8_t *)st->buf[C_COUNT], (float *)st->buf[C_AFD],
            (float *)st->buf[C_AMP], (float *)st->buf[C_MEAN], (float *)st->buf[C_PEAK],
            out->lobe_of_dir ? (uint8_t *)st->buf[C_LUT] : NULL, (unsigned long long *)st->table[T_COUNTERS]);
        cudaEventRecord(ev[1]);
        TK_CUDA_TRY_GOTO(status, done, TK_FX_WHO, cudaGetLastError());
        TK_CUDA_TRY_GOTO(status, done, TK_FX_WHO, cudaEventSynchronize(ev[1]));
        float ms = 0;
        cudaEventElapsedTime(&ms, ev[0], ev[1]);
        ms_total += ms;
        struct {
            void *host;
            int buf;
            size_t bytes;
        } back[] = {{out->count + first, C_COUNT, n},
                    {out->afd ? out->afd + first * S : NULL, C_AFD, sizeof(float) * S * n},
                    {out->peak_amp ? out->peak_amp + first * S : NULL, C_AMP, sizeof(float) * S * n},
                    {out->mean_dir ? out->mean_dir + first * S * 3 : NULL, C_MEAN, sizeof(float) * 3 * S * n},
                    {out->peak_dir ? out->peak_dir + first * S * 3 : NULL, C_PEAK, sizeof(float) * 3 * S * n},
                    {out->lobe_of_dir ? out->lobe_of_dir + first * N : NULL, C_LUT, N * n}};
        for (size_t i = 0; i < sizeof back / sizeof back[0]; ++i)
            if (back[i].host)
                TK_CUDA_TRY_GOTO(status, done, TK_FX_WHO,
                                 cudaMemcpy(back[i].host, st->buf[back[i].buf], back[i].bytes, cudaMemcpyDeviceToHost));
    }
    TK_CUDA_TRY_GOTO(status, done, TK_FX_WHO,
                     cudaMemcpy(counters, st->table[T_COUNTERS], sizeof counters, cudaMemcpyDeviceToHost));
    out->bad_voxels = (size_t)counters[0], out->truncated = (size_t)counters[1];
done:
    if (ev[0]) cudaEventDestroy(ev[0]);
    if (ev[1]) cudaEventDestroy(ev[1]);
    if (kernel_ms) *kernel_ms = ms_total;
    return status;
}
