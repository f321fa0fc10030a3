/* Dispatch of FastTucker on CUDA: the solver's device state (model, every mode's B-CSF,
 * pass scratch) on each of its GPUs, uploads, launches and timing.  The kernels are in
 * tucker_kernels.cuh, their device math in tucker_device.cuh, their launch choices in
 * tucker_tuning.h.
 *
 * Set-up: every mode's B-CSF is built on the first GPU from the COO copied there once
 * (tucker_bcsf_cuda.cu) where that fits, and each GPU's share copied to it; else on the host
 * and uploaded.  Either way the arrays are the same.
 *
 * Several GPUs (tk_tucker.h says what they compute): one host thread issues every device's
 * launches in turn (they run at once) and the NCCL collectives between them
 * (common/nccl_group.h).  Device p holds, of mode n's B-CSF, the sub-slices
 * tk_tucker_bcsf_row_split gives it and so owns rows [row_lo, row_hi) of A(n); with one
 * device that is every sub-slice and row, and the passes are exactly the one-GPU ones.
 */
#include <cuda_runtime.h>

#include <new>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cuda_check.cuh"
#include "common/cuda_memory.h"
#include "common/multi_device.h"
#include "common/nccl_group.h"
#include "tucker_bcsf_cuda.cuh"
#include "tucker_kernels.cuh"
#include "tucker_tuning.h"

typedef tk_tucker_policy policy;

/* What one GPU holds. */
struct dev_state {
    int device = 0, sms = 0;
    uint32_t row_lo[TK_TUCKER_MAX_ORDER] = {}, row_hi[TK_TUCKER_MAX_ORDER] = {}; /* its rows of each A(n) */
    tk_tucker_tuning tuning = {};
    float *a[TK_TUCKER_MAX_ORDER] = {}, *b[TK_TUCKER_MAX_ORDER] = {}, *c[TK_TUCKER_MAX_ORDER] = {};
    float *delta = nullptr, *z = nullptr, *g = nullptr;
    double *eq = nullptr; /* ALS: the normal equations of its rows of the mode in hand */
    unsigned long long *counter = nullptr;
    dev_mode mode[TK_TUCKER_MAX_ORDER];
    cudaEvent_t start = nullptr, stop = nullptr;
};

/* The solver's GPUs: one state each and, with several, their NCCL group. */
struct multi_state {
    int count = 0;
    dev_state dev[TK_TUCKER_MAX_DEVICES];
    tk_nccl_group *group = nullptr;
};

/* The one CUDA check (common/cuda_check.cuh): on failure, return its status. */
#define CK(call) TK_CUDA_TRY_RETURN("FastTucker on CUDA", call)

/* ---- host side ------------------------------------------------------------------------ */

static multi_state *gpus(const tk_tucker_solver *s) { return static_cast<multi_state *>(s->cuda); }

/* Device bytes of an array of count T (16 bytes of slack keep empty arrays allocatable). */
template <typename T> static size_t dev_bytes(size_t count) { return count * sizeof(T) + 16; }

/* Mode n's sub-slices on device p of count: [first, last). */
struct part_range {
    size_t first, last;
};

/* ALS: the normal equations of `rows` rows (tk_tucker_eq_stride doubles a row). */
static size_t eq_bytes(const tk_tucker_solver *s, size_t rows)
{
    return dev_bytes<double>(rows * tk_tucker_eq_stride(s->rank_j));
}

/* The model (A, B, C of every mode) and the pass scratch, on every device alike. */
static size_t model_bytes(const tk_tucker_solver *s)
{
    const size_t J = (size_t)s->rank_j, R = (size_t)s->rank_r;
    size_t bytes = 0, maxdim = 0;
    for (int n = 0; n < s->order; ++n) {
        const size_t rows = s->dims[n];
        if (rows > maxdim) maxdim = rows;
        bytes += dev_bytes<float>(rows * J) + dev_bytes<float>(J * R) + dev_bytes<float>(rows * R);
    }
    bytes += s->opts.factor_update == TK_TUCKER_FACTOR_ALS ? eq_bytes(s, maxdim) : 0;
    return bytes + dev_bytes<float>(maxdim * J) + dev_bytes<float>(maxdim * R) + J * R * sizeof(float) +
           sizeof(unsigned long long);
}

/* Device bytes of a mode share: np sub-slices, nnz entries. */
static size_t share_bytes(const tk_tucker_solver *s, size_t np, size_t nnz)
{
    return dev_bytes<unsigned long long>(np + 1) + 2 * dev_bytes<uint32_t>(np) +
           dev_bytes<uint32_t>(nnz * (size_t)(s->order - 1)) + dev_bytes<float>(nnz);
}

/* Device bytes of the shares parts[n] of every mode. */
static size_t shares_bytes(const tk_tucker_solver *s, const part_range *parts)
{
    size_t bytes = 0;
    for (int n = 0; n < s->order; ++n) {
        const tk_tucker_bcsf *b = &s->bcsf[n];
        const size_t np = parts[n].last - parts[n].first;
        bytes += share_bytes(s, np, b->part_ptr[parts[n].last] - b->part_ptr[parts[n].first]);
    }
    return bytes;
}

/* Everything one device holds: the model, its sub-slices of every mode's B-CSF (parts[n]),
 * and the pass scratch.  None of it is chunked. */
static size_t resident_bytes(const tk_tucker_solver *s, const part_range *parts)
{
    return model_bytes(s) + shares_bytes(s, parts);
}

/* The whole model must be resident: a refusal names all of it, not the one buffer that
 * did not fit. */
static tk_status out_of_memory(const tk_tucker_solver *s, const dev_state *d, size_t bytes)
{
    char what[256];
    int count = gpus(s)->count;
    if (count > 1)
        snprintf(what, sizeof what,
                 "GPU %d's share of the model and tensor (order %d, ranks %d and %d, %zu entries over %d GPUs; "
                 "FastTucker does not chunk)",
                 d->device, s->order, s->rank_j, s->rank_r, s->nnz, count);
    else
        snprintf(what, sizeof what,
                 "the resident model and tensor (order %d, ranks %d and %d, %zu entries; FastTucker does not chunk)",
                 s->order, s->rank_j, s->rank_r, s->nnz);
    return tk_cuda_out_of_memory("FastTucker on CUDA", what, bytes);
}

static tk_status dev_alloc(const tk_tucker_solver *s, const dev_state *d, size_t need, void **dst, size_t bytes)
{
    cudaError_t err = tk_cuda_malloc(dst, bytes);
    if (err == cudaErrorMemoryAllocation) return out_of_memory(s, d, need);
    return tk_cuda_status(err, "FastTucker on CUDA", "cudaMalloc");
}

template <typename T>
static tk_status upload(const tk_tucker_solver *s, const dev_state *d, size_t need, T **dst, const T *src,
                        size_t count)
{
    tk_status st = dev_alloc(s, d, need, reinterpret_cast<void **>(dst), dev_bytes<T>(count));
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

/* C(n) = A(n) B(n) on rows [lo, hi) of device d (the current device), the split rows'
 * deltas applied first where with_delta. */
static tk_status refresh(const tk_tucker_solver *s, dev_state *d, int n, uint32_t lo, uint32_t hi, bool with_delta)
{
    if (hi <= lo) return TK_OK;
    const size_t J = (size_t)s->rank_j, R = (size_t)s->rank_r;
    const size_t b_bytes = J * R * sizeof(float); /* B(n), staged in shared memory */
    refresh_kernel<policy><<<refresh_blocks(d, hi - lo), policy::threads_per_block, b_bytes>>>(
        d->a[n] + lo * J, with_delta ? d->delta + lo * J : nullptr, d->b[n], d->c[n] + lo * R, hi - lo, s->rank_j,
        s->rank_r);
    CK(cudaGetLastError());
    return TK_OK;
}

/* The rows of A(n) device d owns: those of its sub-slices of mode n (parts), the last device
 * also the empty rows after them. */
static void set_rows(const tk_tucker_solver *s, dev_state *d, int n, part_range parts, bool last_device)
{
    const tk_tucker_bcsf *b = &s->bcsf[n];
    d->row_lo[n] = parts.first == 0 ? 0 : (parts.first < b->num_parts ? b->part_row[parts.first] : s->dims[n]);
    d->row_hi[n] = last_device ? s->dims[n] : (parts.last < b->num_parts ? b->part_row[parts.last] : s->dims[n]);
}

/* Device d's share of a host-built mode n's B-CSF (sub-slices parts.first .. parts.last - 1,
 * entry offsets rebased to its first entry). */
static tk_status upload_mode(const tk_tucker_solver *s, dev_state *d, size_t need, int n, part_range parts)
{
    const tk_tucker_bcsf *b = &s->bcsf[n];
    const size_t np = parts.last - parts.first, e0 = b->part_ptr[parts.first], e1 = b->part_ptr[parts.last];
    const size_t levels = (size_t)(s->order - 1);
    dev_mode &dm = d->mode[n];
    dm.parts = np;
    unsigned long long *ptr = (unsigned long long *)malloc((np + 1) * sizeof *ptr);
    if (!ptr) return tk_set_error(TK_ERR_MEMORY, "out of memory");
    for (size_t k = 0; k <= np; ++k) ptr[k] = b->part_ptr[parts.first + k] - e0;
    tk_status st = upload(s, d, need, &dm.part_ptr, ptr, np + 1);
    free(ptr);
    if (st != TK_OK) return st;
    if ((st = upload(s, d, need, &dm.part_row, b->part_row + parts.first, np)) != TK_OK) return st;
    if ((st = upload(s, d, need, &dm.part_count, b->part_count + parts.first, np)) != TK_OK) return st;
    if ((st = upload(s, d, need, &dm.idx, b->idx + e0 * levels, (e1 - e0) * levels)) != TK_OK) return st;
    return upload(s, d, need, &dm.val, b->val + e0, e1 - e0);
}

/* Device d: the model, its share of every mode (uploaded where the host built them; already
 * there where the GPU did), the scratch, C(n) of every mode. */
static tk_status create_device(tk_tucker_solver *s, const tk_tucker_model *m, dev_state *d, const part_range *parts,
                               bool last_device, bool gpu_built)
{
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
    const size_t need = resident_bytes(s, parts), held = gpu_built ? shares_bytes(s, parts) : 0;
    if (need - held > free_b) return out_of_memory(s, d, need);
    const size_t J = (size_t)s->rank_j, R = (size_t)s->rank_r;
    size_t maxdim = 0;
    for (int n = 0; n < s->order; ++n) {
        size_t rows = s->dims[n];
        if (rows > maxdim) maxdim = rows;
        if ((st = upload(s, d, need, &d->a[n], m->a[n], rows * J)) != TK_OK) return st;
        if ((st = upload(s, d, need, &d->b[n], m->b[n], J * R)) != TK_OK) return st;
        if ((st = dev_alloc(s, d, need, (void **)&d->c[n], dev_bytes<float>(rows * R))) != TK_OK) return st;
        set_rows(s, d, n, parts[n], last_device);
        if (!gpu_built && (st = upload_mode(s, d, need, n, parts[n])) != TK_OK) return st;
    }
    if ((st = dev_alloc(s, d, need, (void **)&d->delta, dev_bytes<float>(maxdim * J))) != TK_OK) return st;
    CK(cudaMemset(d->delta, 0, maxdim * J * sizeof(float)));
    if (s->opts.factor_update == TK_TUCKER_FACTOR_ALS &&
        (st = dev_alloc(s, d, need, (void **)&d->eq, eq_bytes(s, maxdim))) != TK_OK)
        return st;
    if ((st = dev_alloc(s, d, need, (void **)&d->z, dev_bytes<float>(maxdim * R))) != TK_OK) return st;
    if ((st = dev_alloc(s, d, need, (void **)&d->g, J * R * sizeof(float))) != TK_OK) return st;
    if ((st = dev_alloc(s, d, need, (void **)&d->counter, sizeof(unsigned long long))) != TK_OK) return st;
    CK(cudaEventCreate(&d->start));
    CK(cudaEventCreate(&d->stop));
    for (int n = 0; n < s->order; ++n)
        if ((st = refresh(s, d, n, 0, s->dims[n], false)) != TK_OK) return st;
    return TK_OK;
}

/* The device memory the set-up holds now beyond what it started from, into the peak. */
static void note_peak(tk_tucker_solver *s, size_t base)
{
    const size_t held = tk_cuda_memory_in_use(), over = held > base ? held - base : 0;
    if (over > s->setup.peak_device_bytes) s->setup.peak_device_bytes = over;
}

/* What the GPU build holds at most on the first device: the model, every mode whole (a
 * bound on their sub-slices), the build's scratch, and with several GPUs one mode twice
 * (whole, and the first device's share) while it is shared out. */
static size_t gpu_build_bytes(const tk_tucker_solver *s, int count, size_t nnz)
{
    const size_t threshold = s->opts.fiber_threshold;
    size_t modes = 0, largest = 0;
    for (int n = 0; n < s->order; ++n) {
        const size_t parts = nnz / threshold + (s->dims[n] < nnz ? s->dims[n] : nnz);
        const size_t bytes = tk_tucker_gpu_mode_bytes(s->order, parts, nnz);
        modes += bytes;
        if (bytes > largest) largest = bytes;
    }
    return model_bytes(s) + modes + tk_tucker_gpu_build_scratch_bytes(s->order, s->dims, nnz) +
           (count > 1 ? largest : 0);
}

/* Every mode's B-CSF built on the first GPU and each GPU's share placed on it (the whole on
 * one GPU); s->bcsf[n] gets the sub-slice arrays, first[n] the split. */
static tk_status build_on_gpu(tk_tucker_solver *s, multi_state *g, const tk_tucker_coo *train,
                              size_t (*first)[TK_TUCKER_MAX_DEVICES + 1], size_t base)
{
    gpu_build_times times;
    times.base_bytes = base;
    const int from = g->dev[0].device;
    CK(cudaSetDevice(from));
    gpu_coo coo;
    tk_status st = tk_tucker_gpu_coo_open(train, s->dims, &coo, &times);
    for (int n = 0; n < s->order && st == TK_OK; ++n) {
        dev_mode full;
        st = tk_tucker_gpu_mode_build(&coo, n, s->opts.fiber_threshold, &full, &s->bcsf[n], &times);
        if (st == TK_OK) st = tk_tucker_bcsf_row_split(&s->bcsf[n], g->count, first[n]);
        if (st == TK_OK && g->count == 1) {
            g->dev[0].mode[n] = full; /* the whole is the one GPU's share */
            continue;
        }
        const double t0 = tk_now_ms();
        for (int p = 0; p < g->count && st == TK_OK; ++p) {
            st = tk_tucker_gpu_mode_share(full, &s->bcsf[n], from, first[n][p], first[n][p + 1], g->dev[p].device,
                                          &g->dev[p].mode[n]);
            note_peak(s, base);
        }
        cudaSetDevice(from); /* the whole mode's arrays are the first GPU's */
        tk_tucker_gpu_mode_free(&full);
        times.layout_ms += tk_now_ms() - t0;
    }
    tk_tucker_gpu_coo_close(&coo);
    s->setup.upload_ms = times.upload_ms;
    s->setup.sort_ms = times.sort_ms;
    s->setup.layout_ms = times.layout_ms;
    if (times.peak_bytes > s->setup.peak_device_bytes) s->setup.peak_device_bytes = times.peak_bytes;
    return st;
}

/* Every mode's B-CSF for the solver's GPUs: built on the first GPU where its set-up fits
 * there, else (or where it runs out of memory, or has more entries than it sorts) on the
 * host, the reason in s->setup.note.  first[n]: mode n's split, a range of sub-slices a GPU.
 * *gpu_built: whether the shares are already on the devices. */
static tk_status build_modes(tk_tucker_solver *s, multi_state *g, const tk_tucker_coo *train,
                             size_t (*first)[TK_TUCKER_MAX_DEVICES + 1], size_t base, bool *gpu_built)
{
    const double t0 = tk_now_ms();
    *gpu_built = false;
    CK(cudaSetDevice(g->dev[0].device));
    size_t free_b = 0, total_b = 0;
    tk_status st = tk_cuda_memory_get(&free_b, &total_b);
    if (st != TK_OK) return st;
    const size_t need = gpu_build_bytes(s, g->count, s->nnz), budget = tk_cuda_budget(free_b);
    char want[32], have[32];
    tk_cuda_format_bytes(need, want, sizeof want);
    tk_cuda_format_bytes(budget, have, sizeof have);
    if (need <= budget) {
        st = build_on_gpu(s, g, train, first, base);
        if (st == TK_OK) {
            *gpu_built = true;
            s->setup.gpu_built = 1;
            s->setup.build_ms = tk_now_ms() - t0;
            return TK_OK;
        }
        if (st != TK_ERR_MEMORY && st != TK_ERR_UNSUPPORTED) return st;
        snprintf(s->setup.note, sizeof s->setup.note, "B-CSF built on the host: the GPU build stopped (%s)",
                 tk_last_error());
        for (int p = 0; p < g->count; ++p) {
            cudaSetDevice(g->dev[p].device);
            for (int n = 0; n < s->order; ++n) tk_tucker_gpu_mode_free(&g->dev[p].mode[n]);
        }
        for (int n = 0; n < s->order; ++n) tk_tucker_bcsf_free(&s->bcsf[n]);
        s->setup.upload_ms = s->setup.sort_ms = s->setup.layout_ms = 0;
    } else {
        snprintf(s->setup.note, sizeof s->setup.note,
                 "B-CSF built on the host: building it on GPU %d needs about %s of GPU memory, %s usable",
                 g->dev[0].device, want, have);
    }
    const double h0 = tk_now_ms();
    st = tk_tucker_bcsf_build_modes(train, s->opts.fiber_threshold, train->nnz > 100000, s->bcsf);
    for (int n = 0; n < s->order && st == TK_OK; ++n) st = tk_tucker_bcsf_row_split(&s->bcsf[n], g->count, first[n]);
    s->setup.build_ms = tk_now_ms() - h0;
    return st;
}

extern "C" tk_status tk_tucker_cuda_create(tk_tucker_solver *s, const tk_tucker_model *m, const tk_tucker_coo *train)
{
    const double t0 = tk_now_ms();
    const int count = s->opts.cuda_device_count > 1 ? s->opts.cuda_device_count : 1;
    /* the device check every core makes: usable, and as many as asked for */
    const tk_status usable = tk_cuda_require_devices(s->opts.cuda_device, count);
    if (usable != TK_OK) return usable;
    multi_state *g = new (std::nothrow) multi_state;
    if (!g) return tk_set_error(TK_ERR_MEMORY, "cannot allocate the CUDA state");
    s->cuda = g;
    g->count = count;
    for (int p = 0; p < count; ++p) g->dev[p].device = s->opts.cuda_device + p;
    tk_status st = TK_OK;
    if (count > 1 && (st = tk_nccl_open(s->opts.cuda_device, count, &g->group)) != TK_OK) return st;
    const size_t base = tk_cuda_memory_in_use();
    /* Each mode's sub-slices cut at row boundaries into one range a device. */
    size_t first[TK_TUCKER_MAX_ORDER][TK_TUCKER_MAX_DEVICES + 1];
    bool gpu_built = false;
    if ((st = build_modes(s, g, train, first, base, &gpu_built)) != TK_OK) return st;
    for (int p = 0; p < count; ++p) {
        part_range parts[TK_TUCKER_MAX_ORDER];
        for (int n = 0; n < s->order; ++n) parts[n] = part_range{first[n][p], first[n][p + 1]};
        if ((st = create_device(s, m, &g->dev[p], parts, p == count - 1, gpu_built)) != TK_OK) return st;
        note_peak(s, base);
    }
    for (int p = 0; p < count; ++p) {
        CK(cudaSetDevice(g->dev[p].device));
        CK(cudaDeviceSynchronize());
    }
    /* The device copies are what the passes use; the host B-CSF is no longer needed. */
    for (int n = 0; n < s->order; ++n) tk_tucker_bcsf_free(&s->bcsf[n]);
    s->setup.device_ms = tk_now_ms() - t0 - s->setup.build_ms;
    return TK_OK;
}

extern "C" tk_status tk_tucker_solver_device_bcsf(const tk_tucker_solver *s, int index, int mode, tk_tucker_bcsf *out)
{
    memset(out, 0, sizeof *out);
    const multi_state *g = s->opts.backend == TK_BACKEND_CUDA ? gpus(s) : nullptr;
    if (!g || index < 0 || index >= g->count)
        return tk_set_error(TK_ERR_ARGUMENT, "device index %d: the solver runs on %d GPUs", index, g ? g->count : 0);
    if (mode < 0 || mode >= s->order) return tk_set_error(TK_ERR_ARGUMENT, "mode %d is outside the tensor", mode + 1);
    const dev_state *d = &g->dev[index];
    return tk_tucker_gpu_mode_download(d->mode[mode], d->device, s->order, mode, s->dims[mode], out);
}


static void destroy_device(dev_state *d)
{
    cudaSetDevice(d->device);
    for (int n = 0; n < TK_TUCKER_MAX_ORDER; ++n) {
        tk_cuda_free(d->a[n]);
        tk_cuda_free(d->b[n]);
        tk_cuda_free(d->c[n]);
        tk_tucker_gpu_mode_free(&d->mode[n]);
    }
    tk_cuda_free(d->delta);
    tk_cuda_free(d->eq);
    tk_cuda_free(d->z);
    tk_cuda_free(d->g);
    tk_cuda_free(d->counter);
    if (d->start) cudaEventDestroy(d->start);
    if (d->stop) cudaEventDestroy(d->stop);
}

extern "C" void tk_tucker_cuda_destroy(tk_tucker_solver *s)
{
    multi_state *g = gpus(s);
    if (!g) return;
    for (int p = 0; p < g->count; ++p) destroy_device(&g->dev[p]);
    tk_nccl_close(g->group);
    delete g;
    s->cuda = nullptr;
}

static pass_args make_args(const tk_tucker_solver *s, const dev_state *d, int n)
{
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
    p.eqd = d->eq;
    p.row_lo = d->row_lo[n];
    p.counter = d->counter;
    return p;
}

static tk_status start_timers(multi_state *g)
{
    for (int p = 0; p < g->count; ++p) {
        CK(cudaSetDevice(g->dev[p].device));
        CK(cudaEventRecord(g->dev[p].start));
    }
    return TK_OK;
}

/* The passes' time: the slowest device's, from its start event (recorded before its first
 * launch) to the end of its work, NCCL's included. */
static tk_status stop_timers(multi_state *g, double *ms)
{
    *ms = 0;
    for (int p = 0; p < g->count; ++p) {
        CK(cudaSetDevice(g->dev[p].device));
        CK(cudaEventRecord(g->dev[p].stop));
    }
    for (int p = 0; p < g->count; ++p) {
        CK(cudaEventSynchronize(g->dev[p].stop));
        float t = 0;
        CK(cudaEventElapsedTime(&t, g->dev[p].start, g->dev[p].stop));
        if (t > *ms) *ms = t;
    }
    return TK_OK;
}

/* Enough resident warps to cover the GPU; each loops over sub-slices. */
static int pass_blocks(const dev_state *d, unsigned long long parts)
{
    unsigned long long need = (parts + policy::warps_per_block - 1) / policy::warps_per_block;
    unsigned long long cap = (unsigned long long)d->sms * d->tuning.pass_blocks_per_sm;
    return (int)(need < cap ? (need ? need : 1) : cap);
}

/* Device d's SGD factor updates of mode n: its sub-slices, then its rows' deltas and C rows. */
static tk_status factor_mode_sgd(const tk_tucker_solver *s, dev_state *d, int n)
{
    pass_args p = make_args(s, d, n);
    p.lr = (float)s->opts.lr_a;
    p.lambda = (float)s->opts.lambda_a;
    CK(cudaMemsetAsync(d->counter, 0, sizeof *d->counter));
    int blocks = pass_blocks(d, p.mode.parts), threads = policy::threads_per_block;
    bool wide_j = s->rank_j > 32, wide_r = s->rank_r > 32;
    if (!wide_j && !wide_r) /* a lane a sub-slice (tucker_kernels.cuh: 1.7x the warp kernel) */
        factor_lanes_kernel<policy><<<d->sms * policy::lanes_blocks_per_sm, policy::lanes_threads_per_block>>>(p);
    else if (!wide_j)
        factor_kernel<policy, 1, 64><<<blocks, threads>>>(p);
    else if (!wide_r)
        factor_kernel<policy, 2, 32><<<blocks, threads>>>(p);
    else
        factor_kernel<policy, 2, 64><<<blocks, threads>>>(p);
    CK(cudaGetLastError());
    return refresh(s, d, n, d->row_lo[n], d->row_hi[n], true);
}

/* Device d's ALS factor updates of mode n: its sub-slices' normal equations, in double, into
 * its rows' slots, one double solve a row (tucker_cpu.c's als_solve), then its C rows. */
static tk_status factor_mode_als(const tk_tucker_solver *s, dev_state *d, int n)
{
    const uint32_t rows = d->row_hi[n] - d->row_lo[n];
    if (!rows) return TK_OK;
    const int J = s->rank_j;
    pass_args p = make_args(s, d, n);
    CK(cudaMemsetAsync(d->counter, 0, sizeof *d->counter));
    CK(cudaMemsetAsync(d->eq, 0, (size_t)rows * tk_tucker_eq_stride(J) * sizeof(double)));
    int blocks = pass_blocks(d, p.mode.parts), threads = policy::threads_per_block;
    bool wide_j = J > 32, wide_r = s->rank_r > 32;
    if (!wide_j && !wide_r)
        als_gather_kernel<policy, 1, 32><<<blocks, threads>>>(p);
    else if (!wide_j)
        als_gather_kernel<policy, 1, 64><<<blocks, threads>>>(p);
    else if (!wide_r)
        als_gather_kernel<policy, 2, 32><<<blocks, threads>>>(p);
    else
        als_gather_kernel<policy, 2, 64><<<blocks, threads>>>(p);
    CK(cudaGetLastError());
    /* A warp a row, its J x J + 3 J doubles in shared memory (35 KB for 4 warps at J = 32, 34 KB
     * for one at J = 64: under the 48 KB a launch gets without opting in). */
    const int solve_warps = J > 32 ? 1 : 4;
    const size_t shared = (size_t)solve_warps * als_solve_shared_doubles(J) * sizeof(double);
    unsigned long long need = (rows + solve_warps - 1) / solve_warps;
    unsigned long long cap = (unsigned long long)d->sms * (unsigned long long)d->tuning.refresh_blocks_per_sm;
    const int solve_blocks = (int)(need < cap ? need : cap);
    als_solve_kernel<policy><<<solve_blocks, solve_warps * 32, shared>>>(
        d->a[n] + (size_t)d->row_lo[n] * J, d->eq, rows, J, s->opts.lambda_a, s->als_ridge_per_entry,
        TK_TUCKER_ALS_OMEGA, solve_warps);
    CK(cudaGetLastError());
    return refresh(s, d, n, d->row_lo[n], d->row_hi[n], false);
}

/* Device d's factor updates of mode n, by the solver's factor update. */
static tk_status factor_mode(const tk_tucker_solver *s, dev_state *d, int n)
{
    CK(cudaSetDevice(d->device));
    return s->opts.factor_update == TK_TUCKER_FACTOR_SGD ? factor_mode_sgd(s, d, n) : factor_mode_als(s, d, n);
}

/* Several GPUs: every device's rows of A(n) to every other, which then recompute C(n) on
 * the rows they received. */
static tk_status share_rows(const tk_tucker_solver *s, multi_state *g, int n)
{
    const size_t J = (size_t)s->rank_j;
    float *a[TK_TUCKER_MAX_DEVICES];
    size_t offset[TK_TUCKER_MAX_DEVICES + 1];
    for (int p = 0; p < g->count; ++p) a[p] = g->dev[p].a[n], offset[p] = (size_t)g->dev[p].row_lo[n] * J;
    offset[g->count] = (size_t)s->dims[n] * J;
    tk_status st = tk_nccl_broadcast_ranges(g->group, a, offset);
    for (int p = 0; p < g->count && st == TK_OK; ++p) {
        dev_state *d = &g->dev[p];
        CK(cudaSetDevice(d->device));
        if ((st = refresh(s, d, n, 0, d->row_lo[n], false)) == TK_OK)
            st = refresh(s, d, n, d->row_hi[n], s->dims[n], false);
    }
    return st;
}

extern "C" tk_status tk_tucker_cuda_factors(tk_tucker_solver *s, double *ms)
{
    multi_state *g = gpus(s);
    tk_status st = start_timers(g);
    for (int n = 0; n < s->order && st == TK_OK; ++n) {
        for (int p = 0; p < g->count && st == TK_OK; ++p) st = factor_mode(s, &g->dev[p], n);
        if (st == TK_OK && g->count > 1) st = share_rows(s, g, n);
    }
    if (st != TK_OK) return st;
    return stop_timers(g, ms);
}

/* Device d's part of mode n's core gradient, G = A(n)^T Z over its rows, left in d->g. */
static tk_status core_gradient(const tk_tucker_solver *s, dev_state *d, int n)
{
    const int J = s->rank_j, R = s->rank_r;
    const uint32_t lo = d->row_lo[n], rows = d->row_hi[n] - d->row_lo[n];
    CK(cudaSetDevice(d->device));
    pass_args p = make_args(s, d, n);
    CK(cudaMemsetAsync(d->counter, 0, sizeof *d->counter));
    CK(cudaMemsetAsync(d->z + (size_t)lo * R, 0, (size_t)rows * R * sizeof(float)));
    CK(cudaMemsetAsync(d->g, 0, (size_t)J * R * sizeof(float)));
    int blocks = pass_blocks(d, p.mode.parts), threads = policy::threads_per_block;
    if (R > 32)
        core_kernel<policy, 2><<<blocks, threads>>>(p);
    else /* a lane a sub-slice (tucker_kernels.cuh: 1.5x the warp kernel) */
        core_lanes_kernel<policy><<<d->sms * policy::lanes_blocks_per_sm, policy::lanes_threads_per_block>>>(p);
    CK(cudaGetLastError());
    if (!rows) return TK_OK;
    unsigned gram_blocks = (unsigned)((rows + policy::gram_rows_per_block - 1) / policy::gram_rows_per_block);
    gram_kernel<policy><<<gram_blocks, policy::gram_threads>>>(d->a[n] + (size_t)lo * J, d->z + (size_t)lo * R, rows,
                                                               J, R, d->g);
    CK(cudaGetLastError());
    return TK_OK;
}

extern "C" tk_status tk_tucker_cuda_core(tk_tucker_solver *s, double *ms)
{
    multi_state *g = gpus(s);
    const int J = s->rank_j, R = s->rank_r;
    const float inv_nnz = s->nnz ? (float)(1.0 / (double)s->nnz) : 0.0f;
    tk_status st = start_timers(g);
    for (int n = 0; n < s->order && st == TK_OK; ++n) {
        for (int p = 0; p < g->count && st == TK_OK; ++p) st = core_gradient(s, &g->dev[p], n);
        if (st != TK_OK) break;
        /* The first device sums the parts and updates B(n); the others take its B(n), so
         * every device holds the same bits. */
        float *gp[TK_TUCKER_MAX_DEVICES], *bp[TK_TUCKER_MAX_DEVICES];
        for (int p = 0; p < g->count; ++p) gp[p] = g->dev[p].g, bp[p] = g->dev[p].b[n];
        if (g->count > 1 && (st = tk_nccl_reduce_to_first(g->group, gp, (size_t)J * R)) != TK_OK) break;
        dev_state *d0 = &g->dev[0];
        CK(cudaSetDevice(d0->device));
        update_core_kernel<<<1, policy::core_update_threads>>>(d0->b[n], d0->g, J * R, (float)s->opts.lr_b, inv_nnz,
                                                               (float)s->opts.lambda_b);
        CK(cudaGetLastError());
        if (g->count > 1 && (st = tk_nccl_broadcast_first(g->group, bp, (size_t)J * R)) != TK_OK) break;
        for (int p = 0; p < g->count && st == TK_OK; ++p) {
            CK(cudaSetDevice(g->dev[p].device));
            st = refresh(s, &g->dev[p], n, 0, s->dims[n], false);
        }
    }
    if (st != TK_OK) return st;
    return stop_timers(g, ms);
}

extern "C" tk_status tk_tucker_cuda_model(const tk_tucker_solver *s, tk_tucker_model *out)
{
    return tk_tucker_cuda_model_of_device(s, 0, out);
}

/* Device `index`'s copy of the model (every device holds the same; the tests check it). */
extern "C" tk_status tk_tucker_cuda_model_of_device(const tk_tucker_solver *s, int index, tk_tucker_model *out)
{
    const multi_state *g = gpus(s);
    if (!g || index < 0 || index >= g->count)
        return tk_set_error(TK_ERR_ARGUMENT, "device index %d: the solver runs on %d GPUs", index, g ? g->count : 0);
    const dev_state *d = &g->dev[index];
    CK(cudaSetDevice(d->device));
    for (int n = 0; n < s->order; ++n) {
        CK(cudaMemcpy(out->a[n], d->a[n], (size_t)s->dims[n] * s->rank_j * sizeof(float), cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(out->b[n], d->b[n], (size_t)s->rank_j * s->rank_r * sizeof(float), cudaMemcpyDeviceToHost));
    }
    return TK_OK;
}
