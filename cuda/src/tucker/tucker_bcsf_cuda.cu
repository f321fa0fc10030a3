/* The B-CSF built on the GPU (tucker_bcsf_cuda.cuh says how and why it equals the host's). */
#include <cuda_runtime.h>

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include <stdlib.h>
#include <string.h>

#include "common/cuda_check.cuh"
#include "common/cuda_memory.h"
#include "common/multi_device.h"
#include "common/timer.h"
#include "tucker_bcsf_cuda.cuh"

#define WHO "FastTucker's GPU set-up"
#define CK(call) TK_CUDA_TRY_RETURN(WHO, call)

namespace {

constexpr int block_threads = 256;

/* Bits that hold every index below d (0 for d = 1). */
int index_bits(uint32_t d) { return d <= 1 ? 0 : 32 - __builtin_clz(d - 1); }

/* Enough blocks of a grid-stride loop over `count` items. */
unsigned grid_for(size_t count)
{
    size_t blocks = (count + block_threads - 1) / block_threads;
    return (unsigned)(blocks < 65536 * 8 ? (blocks ? blocks : 1) : 65536 * 8);
}

/* A device buffer freed when it goes out of scope, allocated through the counted allocator. */
template <typename T> struct dev_buf {
    T *p = nullptr;
    dev_buf() = default;
    dev_buf(const dev_buf &) = delete;
    dev_buf &operator=(const dev_buf &) = delete;
    ~dev_buf() { tk_cuda_free(p); }
    tk_status alloc(size_t count)
    {
        return tk_cuda_status(tk_cuda_malloc(reinterpret_cast<void **>(&p), count * sizeof(T) + 16), WHO,
                              "cudaMalloc");
    }
};

template <typename T> tk_status dev_alloc(T **p, size_t count)
{
    return tk_cuda_status(tk_cuda_malloc(reinterpret_cast<void **>(p), count * sizeof(T) + 16), WHO, "cudaMalloc");
}

void note_peak(gpu_build_times *t)
{
    const size_t held = tk_cuda_memory_in_use(), over = held > t->base_bytes ? held - t->base_bytes : 0;
    if (over > t->peak_bytes) t->peak_bytes = over;
}

/* The lexicographic sort's passes: runs of index fields packed into one key each, the least
 * significant run first; a run is fields [first, last] with `bits` bits in all (<= 64). */
struct key_run {
    int first, last, bits;
};
struct field_bits {
    int b[TK_TUCKER_MAX_ORDER];
};

int lex_runs(int order, const uint32_t *dims, key_run *runs, field_bits *fb)
{
    int count = 0;
    for (int f = order - 1; f >= 0; --f) {
        fb->b[f] = index_bits(dims[f]);
        if (count && runs[count - 1].bits + fb->b[f] <= 64) {
            runs[count - 1].first = f;
            runs[count - 1].bits += fb->b[f];
        } else {
            runs[count++] = key_run{f, f, fb->b[f]};
        }
    }
    return count;
}

/* ---- kernels ------------------------------------------------------------------------------ */

/* Any index at or beyond its mode's size: the lowest such mode (+1) into *bad. */
__global__ void check_kernel(const uint32_t *idx, size_t nnz, int order, const uint32_t *dims, int *bad)
{
    const size_t total = nnz * (size_t)order;
    for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < total; k += (size_t)gridDim.x * blockDim.x) {
        const int f = (int)(k % (size_t)order);
        if (idx[k] >= dims[f]) atomicMin(bad, f + 1);
    }
}

/* The key of sorted position e: fields run.first..run.last of entry perm[e] (e itself
 * where perm is null), the first field most significant. */
template <typename K>
__global__ void pack_kernel(const uint32_t *idx, int order, const uint32_t *perm, size_t nnz, key_run run,
                            field_bits fb, K *keys)
{
    for (size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x; e < nnz; e += (size_t)gridDim.x * blockDim.x) {
        const size_t src = perm ? perm[e] : e;
        K key = 0;
        for (int f = run.first; f <= run.last; ++f) {
            /* A field as wide as the key comes alone (the run's bits fit the key): no shift by its width. */
            if (fb.b[f] < (int)(8 * sizeof(K))) key <<= fb.b[f];
            key |= (K)idx[src * (size_t)order + (size_t)f];
        }
        keys[e] = key;
    }
}

__global__ void iota_kernel(uint32_t *perm, size_t nnz)
{
    for (size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x; e < nnz; e += (size_t)gridDim.x * blockDim.x)
        perm[e] = (uint32_t)e;
}

/* row_ptr[i] = the first sorted position of row i (rows + 1 values, the last nnz): position
 * e starts every row after its predecessor's up to its own. */
__global__ void row_ptr_kernel(const uint32_t *idx, int order, int mode, const uint32_t *perm, size_t nnz,
                               uint32_t rows, unsigned long long *row_ptr)
{
    for (size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x; e <= nnz; e += (size_t)gridDim.x * blockDim.x) {
        const long long prev = e == 0 ? -1 : (long long)idx[(size_t)perm[e - 1] * (size_t)order + (size_t)mode];
        const long long cur = e == nnz ? (long long)rows : (long long)idx[(size_t)perm[e] * (size_t)order + (size_t)mode];
        for (long long r = prev + 1; r <= cur; ++r) row_ptr[r] = e;
    }
}

/* Sub-slices of each row, ceil(c / T) (0 for an empty row); the slot after the last row 0. */
__global__ void part_count_kernel(const unsigned long long *row_ptr, uint32_t rows, unsigned long long threshold,
                                  unsigned long long *count)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i <= rows; i += (size_t)gridDim.x * blockDim.x) {
        const unsigned long long c = i < rows ? row_ptr[i + 1] - row_ptr[i] : 0;
        count[i] = (c + threshold - 1) / threshold;
    }
}

/* Sub-slice p: its row (the last row whose first sub-slice is at or before p), S and its
 * first entry, as the host lays them out (equal sizes within one). */
__global__ void fill_parts_kernel(const unsigned long long *row_ptr, const unsigned long long *part_first, uint32_t rows,
                                  unsigned long long parts, unsigned long long nnz, uint32_t *part_row,
                                  uint32_t *part_count, unsigned long long *part_ptr)
{
    for (unsigned long long p = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; p <= parts;
         p += (unsigned long long)gridDim.x * blockDim.x) {
        if (p == parts) {
            part_ptr[parts] = nnz;
            continue;
        }
        uint32_t lo = 0, hi = rows; /* part_first[lo] <= p < part_first[hi] */
        while (hi - lo > 1) {
            const uint32_t mid = lo + (hi - lo) / 2;
            if (part_first[mid] <= p)
                lo = mid;
            else
                hi = mid;
        }
        const unsigned long long s = part_first[lo + 1] - part_first[lo], k = p - part_first[lo];
        const unsigned long long first = row_ptr[lo], c = row_ptr[lo + 1] - first;
        part_row[p] = lo;
        part_count[p] = (uint32_t)s;
        part_ptr[p] = first + c * k / s;
    }
}

struct other_modes {
    int m[TK_TUCKER_MAX_ORDER - 1];
};

/* Sorted position e: the other modes' indices and the value of entry perm[e]. */
__global__ void gather_kernel(const uint32_t *idx, const float *val, int order, other_modes others,
                              const uint32_t *perm, size_t nnz, uint32_t *out_idx, float *out_val)
{
    const int levels = order - 1;
    for (size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x; e < nnz; e += (size_t)gridDim.x * blockDim.x) {
        const size_t src = perm[e];
        const uint32_t *ix = idx + src * (size_t)order;
        for (int k = 0; k < levels; ++k) out_idx[e * (size_t)levels + (size_t)k] = ix[others.m[k]];
        out_val[e] = val[src];
    }
}

/* ---- sorts --------------------------------------------------------------------------------- */

/* CUB's temporary bytes for a stable sort of nnz (K, uint32) pairs on `bits` bits. */
template <typename K> size_t sort_temp_bytes(size_t nnz, int bits)
{
    size_t bytes = 0;
    cub::DoubleBuffer<K> keys(nullptr, nullptr);
    cub::DoubleBuffer<uint32_t> vals(nullptr, nullptr);
    if (cub::DeviceRadixSort::SortPairs(nullptr, bytes, keys, vals, nnz, 0, bits) != cudaSuccess) return 0;
    return bytes;
}

/* The stable sort of (keys, perm) on the low `bits` bits; perm and alt are swapped where
 * CUB leaves the result in alt.  CUB's temporary storage is allocated for the call. */
template <typename K>
tk_status sort_pairs(K *keys, K *keys_alt, uint32_t **perm, uint32_t **alt, size_t nnz, int bits,
                     gpu_build_times *times)
{
    cub::DoubleBuffer<K> k(keys, keys_alt);
    cub::DoubleBuffer<uint32_t> v(*perm, *alt);
    size_t bytes = 0;
    CK(cub::DeviceRadixSort::SortPairs(nullptr, bytes, k, v, nnz, 0, bits));
    dev_buf<unsigned char> temp;
    tk_status st = temp.alloc(bytes);
    if (st != TK_OK) return st;
    note_peak(times);
    CK(cub::DeviceRadixSort::SortPairs(temp.p, bytes, k, v, nnz, 0, bits));
    if (v.Current() != *perm) {
        uint32_t *swap = *perm;
        *perm = *alt;
        *alt = swap;
    }
    CK(cudaDeviceSynchronize()); /* temp is freed on return */
    return TK_OK;
}

size_t scan_temp_bytes(size_t count)
{
    size_t bytes = 0;
    if (cub::DeviceScan::ExclusiveSum(nullptr, bytes, (const unsigned long long *)nullptr,
                                      (unsigned long long *)nullptr, count) != cudaSuccess)
        return 0;
    return bytes;
}

/* A lexicographic run needs 64-bit keys beyond 32 bits. */
bool wide_keys(const key_run *runs, int count)
{
    for (int r = 0; r < count; ++r)
        if (runs[r].bits > 32) return true;
    return false;
}

}  // namespace

/* ---- the interface ------------------------------------------------------------------------ */

size_t tk_tucker_gpu_build_scratch_bytes(int order, const uint32_t *dims, size_t nnz)
{
    key_run runs[TK_TUCKER_MAX_ORDER];
    field_bits fb;
    const int count = lex_runs(order, dims, runs, &fb);
    const size_t key = wide_keys(runs, count) ? sizeof(uint64_t) : sizeof(uint32_t);
    size_t lex_temp = 0, mode_temp = 0, maxdim = 0;
    for (int r = 0; r < count; ++r) {
        size_t b = key == sizeof(uint64_t) ? sort_temp_bytes<uint64_t>(nnz, runs[r].bits)
                                           : sort_temp_bytes<uint32_t>(nnz, runs[r].bits);
        if (b > lex_temp) lex_temp = b;
    }
    for (int n = 0; n < order; ++n) {
        size_t b = sort_temp_bytes<uint32_t>(nnz, index_bits(dims[n]));
        if (b > mode_temp) mode_temp = b;
        if (dims[n] > maxdim) maxdim = dims[n];
    }
    const size_t coo = nnz * (size_t)order * sizeof(uint32_t) + nnz * sizeof(float) + nnz * sizeof(uint32_t);
    const size_t lex = 2 * nnz * key + nnz * sizeof(uint32_t) + lex_temp;
    const size_t mode = 4 * nnz * sizeof(uint32_t) + 3 * (maxdim + 1) * sizeof(unsigned long long) +
                        (mode_temp > scan_temp_bytes(maxdim + 1) ? mode_temp : scan_temp_bytes(maxdim + 1));
    return coo + (lex > mode ? lex : mode) + 16 * 16;
}

size_t tk_tucker_gpu_mode_bytes(int order, size_t parts, size_t nnz)
{
    return (parts + 1) * sizeof(unsigned long long) + 2 * parts * sizeof(uint32_t) +
           nnz * (size_t)(order - 1) * sizeof(uint32_t) + nnz * sizeof(float) + 5 * 16;
}

tk_status tk_tucker_gpu_coo_open(const tk_tucker_coo *t, const uint32_t *dims, gpu_coo *g, gpu_build_times *times)
{
    CK(cudaGetDevice(&g->device));
    g->order = t->order;
    memcpy(g->dims, dims, sizeof g->dims);
    g->nnz = t->nnz;
    if (t->nnz > UINT32_MAX)
        return tk_set_error(TK_ERR_UNSUPPORTED, "%s: %zu entries are beyond the 32-bit positions it sorts", WHO,
                            t->nnz);
    const size_t nnz = t->nnz, order = (size_t)t->order;
    double t0 = tk_now_ms();
    tk_status st;
    if ((st = dev_alloc(&g->idx, nnz * order)) != TK_OK || (st = dev_alloc(&g->val, nnz)) != TK_OK ||
        (st = dev_alloc(&g->lex, nnz)) != TK_OK)
        return st;
    note_peak(times);
    if (nnz) {
        CK(cudaMemcpy(g->idx, t->idx, nnz * order * sizeof(uint32_t), cudaMemcpyHostToDevice));
        CK(cudaMemcpy(g->val, t->val, nnz * sizeof(float), cudaMemcpyHostToDevice));
    }
    times->upload_ms += tk_now_ms() - t0;
    t0 = tk_now_ms();
    /* Indices beyond the model would overflow their key fields: refused, naming the mode. */
    {
        dev_buf<int> bad;
        dev_buf<uint32_t> ddims;
        if ((st = bad.alloc(1)) != TK_OK || (st = ddims.alloc(order)) != TK_OK) return st;
        const int none = TK_TUCKER_MAX_ORDER + 1;
        CK(cudaMemcpy(bad.p, &none, sizeof none, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(ddims.p, dims, order * sizeof(uint32_t), cudaMemcpyHostToDevice));
        if (nnz) check_kernel<<<grid_for(nnz * order), block_threads>>>(g->idx, nnz, t->order, ddims.p, bad.p);
        CK(cudaGetLastError());
        int first_bad = none;
        CK(cudaMemcpy(&first_bad, bad.p, sizeof first_bad, cudaMemcpyDeviceToHost));
        if (first_bad != none)
            return tk_set_error(TK_ERR_DATA, "%s: an entry has an index in mode %d beyond the model's size %u", WHO,
                                first_bad, dims[first_bad - 1]);
    }
    key_run runs[TK_TUCKER_MAX_ORDER];
    field_bits fb;
    const int count = lex_runs(t->order, dims, runs, &fb);
    if (nnz) iota_kernel<<<grid_for(nnz), block_threads>>>(g->lex, nnz);
    CK(cudaGetLastError());
    if (nnz) {
        const bool wide = wide_keys(runs, count);
        const size_t key = wide ? sizeof(uint64_t) : sizeof(uint32_t);
        dev_buf<unsigned char> keys, keys_alt;
        dev_buf<uint32_t> alt;
        if ((st = keys.alloc(nnz * key)) != TK_OK || (st = keys_alt.alloc(nnz * key)) != TK_OK ||
            (st = alt.alloc(nnz)) != TK_OK)
            return st;
        uint32_t *perm = g->lex, *other = alt.p;
        for (int r = 0; r < count && st == TK_OK; ++r) {
            if (runs[r].bits == 0) continue; /* every index 0: nothing to order */
            /* The first pass packs the entries in their given order (perm is the identity). */
            const uint32_t *through = r == 0 ? nullptr : perm;
            if (wide) {
                pack_kernel<uint64_t><<<grid_for(nnz), block_threads>>>(g->idx, t->order, through, nnz, runs[r], fb,
                                                                        (uint64_t *)keys.p);
                CK(cudaGetLastError());
                st = sort_pairs<uint64_t>((uint64_t *)keys.p, (uint64_t *)keys_alt.p, &perm, &other, nnz, runs[r].bits,
                                          times);
            } else {
                pack_kernel<uint32_t><<<grid_for(nnz), block_threads>>>(g->idx, t->order, through, nnz, runs[r], fb,
                                                                        (uint32_t *)keys.p);
                CK(cudaGetLastError());
                st = sort_pairs<uint32_t>((uint32_t *)keys.p, (uint32_t *)keys_alt.p, &perm, &other, nnz, runs[r].bits,
                                          times);
            }
        }
        if (st != TK_OK) return st;
        /* The order ends where the last sort left it; g->lex owns the other buffer. */
        if (perm != g->lex) {
            CK(cudaMemcpy(g->lex, perm, nnz * sizeof(uint32_t), cudaMemcpyDeviceToDevice));
        }
    }
    CK(cudaDeviceSynchronize());
    times->sort_ms += tk_now_ms() - t0;
    return TK_OK;
}

void tk_tucker_gpu_coo_close(gpu_coo *g)
{
    tk_cuda_free(g->idx);
    tk_cuda_free(g->val);
    tk_cuda_free(g->lex);
    *g = gpu_coo();
}

void tk_tucker_gpu_mode_free(dev_mode *m)
{
    tk_cuda_free(m->part_row);
    tk_cuda_free(m->part_count);
    tk_cuda_free(m->part_ptr);
    tk_cuda_free(m->idx);
    tk_cuda_free(m->val);
    *m = dev_mode();
}

tk_status tk_tucker_gpu_mode_build(const gpu_coo *g, int mode, size_t fiber_threshold, dev_mode *dev,
                                   tk_tucker_bcsf *host, gpu_build_times *times)
{
    static_assert(sizeof(size_t) == sizeof(unsigned long long), "part_ptr is copied as 64-bit offsets");
    memset(host, 0, sizeof *host);
    *dev = dev_mode();
    CK(cudaSetDevice(g->device));
    const size_t nnz = g->nnz;
    const uint32_t rows = g->dims[mode];
    host->order = g->order;
    host->mode = mode;
    host->rows = rows;
    host->nnz = nnz;
    tk_tucker_other_modes(g->order, mode, host->others);
    double t0 = tk_now_ms();
    tk_status st;
    /* Mode n's order: the lexicographic one sorted stably by i_n (mode 1's is that order). */
    dev_buf<uint32_t> keys, keys_alt, perm_buf, alt_buf;
    const uint32_t *perm = g->lex;
    const int bits = index_bits(rows);
    if (mode > 0 && bits > 0 && nnz > 0) {
        if ((st = keys.alloc(nnz)) != TK_OK || (st = keys_alt.alloc(nnz)) != TK_OK ||
            (st = perm_buf.alloc(nnz)) != TK_OK || (st = alt_buf.alloc(nnz)) != TK_OK)
            return st;
        key_run run = {mode, mode, bits};
        field_bits fb = {};
        fb.b[mode] = bits;
        pack_kernel<uint32_t><<<grid_for(nnz), block_threads>>>(g->idx, g->order, g->lex, nnz, run, fb, keys.p);
        CK(cudaGetLastError());
        CK(cudaMemcpy(perm_buf.p, g->lex, nnz * sizeof(uint32_t), cudaMemcpyDeviceToDevice));
        uint32_t *cur = perm_buf.p, *alt = alt_buf.p;
        if ((st = sort_pairs<uint32_t>(keys.p, keys_alt.p, &cur, &alt, nnz, bits, times)) != TK_OK) return st;
        perm = cur;
    }
    CK(cudaDeviceSynchronize());
    times->sort_ms += tk_now_ms() - t0;
    t0 = tk_now_ms();
    /* Slices and sub-slices. */
    dev_buf<unsigned long long> row_ptr, counts, part_first;
    if ((st = row_ptr.alloc((size_t)rows + 1)) != TK_OK || (st = counts.alloc((size_t)rows + 1)) != TK_OK ||
        (st = part_first.alloc((size_t)rows + 1)) != TK_OK)
        return st;
    row_ptr_kernel<<<grid_for(nnz + 1), block_threads>>>(g->idx, g->order, mode, perm, nnz, rows, row_ptr.p);
    CK(cudaGetLastError());
    part_count_kernel<<<grid_for((size_t)rows + 1), block_threads>>>(row_ptr.p, rows, fiber_threshold, counts.p);
    CK(cudaGetLastError());
    {
        size_t bytes = 0;
        CK(cub::DeviceScan::ExclusiveSum(nullptr, bytes, counts.p, part_first.p, (size_t)rows + 1));
        dev_buf<unsigned char> temp;
        if ((st = temp.alloc(bytes)) != TK_OK) return st;
        note_peak(times);
        CK(cub::DeviceScan::ExclusiveSum(temp.p, bytes, counts.p, part_first.p, (size_t)rows + 1));
        CK(cudaDeviceSynchronize());
    }
    unsigned long long parts = 0;
    CK(cudaMemcpy(&parts, part_first.p + rows, sizeof parts, cudaMemcpyDeviceToHost));
    const size_t levels = (size_t)(g->order - 1);
    if ((st = dev_alloc(&dev->part_row, parts)) != TK_OK || (st = dev_alloc(&dev->part_count, parts)) != TK_OK ||
        (st = dev_alloc(&dev->part_ptr, parts + 1)) != TK_OK || (st = dev_alloc(&dev->idx, nnz * levels)) != TK_OK ||
        (st = dev_alloc(&dev->val, nnz)) != TK_OK)
        return st;
    note_peak(times);
    dev->parts = parts;
    fill_parts_kernel<<<grid_for(parts + 1), block_threads>>>(row_ptr.p, part_first.p, rows, parts, nnz,
                                                              dev->part_row, dev->part_count, dev->part_ptr);
    CK(cudaGetLastError());
    other_modes others = {};
    for (size_t k = 0; k < levels; ++k) others.m[k] = host->others[k];
    if (nnz)
        gather_kernel<<<grid_for(nnz), block_threads>>>(g->idx, g->val, g->order, others, perm, nnz, dev->idx,
                                                        dev->val);
    CK(cudaGetLastError());
    /* The sub-slice arrays on the host too: the row split and the shares read them. */
    host->num_parts = parts;
    host->part_row = (uint32_t *)malloc(parts * sizeof(uint32_t) + 1);
    host->part_count = (uint32_t *)malloc(parts * sizeof(uint32_t) + 1);
    host->part_ptr = (size_t *)malloc((parts + 1) * sizeof(size_t));
    if (!host->part_row || !host->part_count || !host->part_ptr)
        return tk_set_error(TK_ERR_MEMORY, "%s: cannot allocate %llu sub-slices of mode %d on the host", WHO, parts,
                            mode + 1);
    CK(cudaMemcpy(host->part_row, dev->part_row, parts * sizeof(uint32_t), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(host->part_count, dev->part_count, parts * sizeof(uint32_t), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(host->part_ptr, dev->part_ptr, (parts + 1) * sizeof(size_t), cudaMemcpyDeviceToHost));
    times->layout_ms += tk_now_ms() - t0;
    return TK_OK;
}

tk_status tk_tucker_gpu_mode_share(const dev_mode &full, const tk_tucker_bcsf *host, int from, size_t first,
                                   size_t last, int to, dev_mode *out)
{
    *out = dev_mode();
    const size_t np = last - first, e0 = host->part_ptr[first], e1 = host->part_ptr[last];
    const size_t levels = (size_t)(host->order - 1);
    CK(cudaSetDevice(to));
    tk_status st;
    if ((st = dev_alloc(&out->part_row, np)) != TK_OK || (st = dev_alloc(&out->part_count, np)) != TK_OK ||
        (st = dev_alloc(&out->part_ptr, np + 1)) != TK_OK || (st = dev_alloc(&out->idx, (e1 - e0) * levels)) != TK_OK ||
        (st = dev_alloc(&out->val, e1 - e0)) != TK_OK)
        return st;
    out->parts = np;
    unsigned long long *ptr = (unsigned long long *)malloc((np + 1) * sizeof *ptr);
    if (!ptr) return tk_set_error(TK_ERR_MEMORY, "%s: out of host memory", WHO);
    for (size_t k = 0; k <= np; ++k) ptr[k] = host->part_ptr[first + k] - e0;
    cudaError_t err = cudaMemcpy(out->part_ptr, ptr, (np + 1) * sizeof *ptr, cudaMemcpyHostToDevice);
    free(ptr);
    CK(err);
    if (np) {
        CK(cudaMemcpy(out->part_row, host->part_row + first, np * sizeof(uint32_t), cudaMemcpyHostToDevice));
        CK(cudaMemcpy(out->part_count, host->part_count + first, np * sizeof(uint32_t), cudaMemcpyHostToDevice));
    }
    if (e1 > e0) {
        CK(cudaMemcpyPeer(out->idx, to, full.idx + e0 * levels, from, (e1 - e0) * levels * sizeof(uint32_t)));
        CK(cudaMemcpyPeer(out->val, to, full.val + e0, from, (e1 - e0) * sizeof(float)));
    }
    return TK_OK;
}

tk_status tk_tucker_gpu_mode_download(const dev_mode &m, int device, int order, int mode, uint32_t rows,
                                      tk_tucker_bcsf *out)
{
    memset(out, 0, sizeof *out);
    CK(cudaSetDevice(device));
    out->order = order;
    out->mode = mode;
    out->rows = rows;
    tk_tucker_other_modes(order, mode, out->others);
    const size_t parts = m.parts, levels = (size_t)(order - 1);
    unsigned long long nnz = 0;
    CK(cudaMemcpy(&nnz, m.part_ptr + parts, sizeof nnz, cudaMemcpyDeviceToHost));
    out->num_parts = parts;
    out->nnz = nnz;
    out->part_row = (uint32_t *)malloc(parts * sizeof(uint32_t) + 1);
    out->part_count = (uint32_t *)malloc(parts * sizeof(uint32_t) + 1);
    out->part_ptr = (size_t *)malloc((parts + 1) * sizeof(size_t));
    out->idx = (uint32_t *)malloc(nnz * levels * sizeof(uint32_t) + 1);
    out->val = (float *)malloc(nnz * sizeof(float) + 1);
    cudaError_t err = cudaSuccess;
    if (out->part_row && out->part_count && out->part_ptr && out->idx && out->val) {
        const cudaMemcpyKind d2h = cudaMemcpyDeviceToHost;
        if (err == cudaSuccess) err = cudaMemcpy(out->part_row, m.part_row, parts * sizeof(uint32_t), d2h);
        if (err == cudaSuccess) err = cudaMemcpy(out->part_count, m.part_count, parts * sizeof(uint32_t), d2h);
        if (err == cudaSuccess) err = cudaMemcpy(out->part_ptr, m.part_ptr, (parts + 1) * sizeof(size_t), d2h);
        if (err == cudaSuccess) err = cudaMemcpy(out->idx, m.idx, nnz * levels * sizeof(uint32_t), d2h);
        if (err == cudaSuccess) err = cudaMemcpy(out->val, m.val, nnz * sizeof(float), d2h);
    } else {
        tk_tucker_bcsf_free(out);
        return tk_set_error(TK_ERR_MEMORY, "%s: cannot allocate the copy of mode %d on the host", WHO, mode + 1);
    }
    if (err != cudaSuccess) tk_tucker_bcsf_free(out);
    CK(err);
    return TK_OK;
}

extern "C" tk_status tk_tucker_bcsf_build_cuda(const tk_tucker_coo *t, int mode, size_t fiber_threshold, int pieces,
                                               int piece, int device, tk_tucker_bcsf *out)
{
    memset(out, 0, sizeof *out);
    if (mode < 0 || mode >= t->order) return tk_set_error(TK_ERR_ARGUMENT, "mode %d is outside the tensor", mode + 1);
    if (fiber_threshold < 1) return tk_set_error(TK_ERR_ARGUMENT, "the fiber threshold must be at least 1");
    if (pieces < 1 || pieces > TK_TUCKER_MAX_DEVICES || piece < 0 || piece >= pieces)
        return tk_set_error(TK_ERR_ARGUMENT, "piece %d of %d: pieces are 1..%d", piece, pieces, TK_TUCKER_MAX_DEVICES);
    tk_status st = tk_cuda_require_devices(device, 1);
    if (st != TK_OK) return st;
    CK(cudaSetDevice(device));
    gpu_build_times times;
    gpu_coo g;
    dev_mode full, share;
    tk_tucker_bcsf host;
    memset(&host, 0, sizeof host);
    size_t first[TK_TUCKER_MAX_DEVICES + 1];
    st = tk_tucker_gpu_coo_open(t, t->dims, &g, &times);
    if (st == TK_OK) st = tk_tucker_gpu_mode_build(&g, mode, fiber_threshold, &full, &host, &times);
    if (st == TK_OK) st = tk_tucker_bcsf_row_split(&host, pieces, first);
    if (st == TK_OK && pieces > 1)
        st = tk_tucker_gpu_mode_share(full, &host, device, first[piece], first[piece + 1], device, &share);
    if (st == TK_OK) st = tk_tucker_gpu_mode_download(pieces > 1 ? share : full, device, t->order, mode, t->dims[mode], out);
    tk_tucker_gpu_mode_free(&share);
    tk_tucker_gpu_mode_free(&full);
    tk_tucker_gpu_coo_close(&g);
    tk_tucker_bcsf_free(&host);
    return st;
}
