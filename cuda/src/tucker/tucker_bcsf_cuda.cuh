/* The B-CSF of every mode built on the GPU from the COO copied there once: the same arrays,
 * element for element, as tk_tucker_bcsf_build gives on the host (tucker_bcsf.c).
 *
 * How: the entries are sorted once lexicographically by (i_1, ..., i_N) with CUB's stable
 * radix sort (the index fields packed into 64-bit keys, several passes least significant
 * first where they need more than 64 bits); that order is mode 1's, and a stable sort of it
 * by i_n alone gives mode n's, (i_n, the other indices in mode order), ties in the entries'
 * given order, exactly as the host's LSD counting sort orders them.  Slices, their offsets
 * and the sub-slices come from scans: a row's first entry sets its offset, ceil(c / T)
 * sub-slices a row are scanned into each row's first sub-slice, and every sub-slice finds
 * its row by a binary search and takes the host's offset lo + c k / S.  The idx and val
 * arrays are one gather through the sorted permutation.
 *
 * The sub-slice arrays (a few MB) also come back to the host, for tk_tucker_bcsf_row_split
 * and the device shares of several GPUs; the entries (idx, val) stay on the device. */
#ifndef TK_TUCKER_BCSF_CUDA_CUH
#define TK_TUCKER_BCSF_CUDA_CUH

#include "tucker_device.cuh"

/* The training COO on the build device, and its lexicographic order. */
struct gpu_coo {
    int device = 0, order = 0;
    uint32_t dims[TK_TUCKER_MAX_ORDER] = {};
    size_t nnz = 0;
    uint32_t *idx = nullptr; /* nnz * order, entry-major, as the host's */
    float *val = nullptr;
    uint32_t *lex = nullptr; /* entry positions in lexicographic order */
};

/* What the GPU build measures: milliseconds of its phases (wall time, each phase
 * synchronised) and the most device memory held at once, over what was held before it
 * (base_bytes, from tk_cuda_memory_in_use: every device of the process). */
struct gpu_build_times {
    double upload_ms = 0, sort_ms = 0, layout_ms = 0;
    size_t base_bytes = 0, peak_bytes = 0;
};

/* Bytes of device memory the GPU build needs beyond the B-CSF it leaves: the COO, its order,
 * and the larger of the two sorts' scratch (keys, permutations, CUB's temporary storage, the
 * slice offsets).  dims are the model's. */
size_t tk_tucker_gpu_build_scratch_bytes(int order, const uint32_t *dims, size_t nnz);

/* t (indices inside dims, checked on the device: TK_ERR_DATA names the first bad mode) onto
 * the current device, sorted lexicographically.  On failure g holds what to free. */
tk_status tk_tucker_gpu_coo_open(const tk_tucker_coo *t, const uint32_t *dims, gpu_coo *g, gpu_build_times *times);
void tk_tucker_gpu_coo_close(gpu_coo *g);

/* Mode `mode`'s whole B-CSF on g's device (dev; dev.parts sub-slices) and its sub-slice
 * arrays and sizes on the host (host: idx and val NULL).  On failure both hold what to free
 * (tk_tucker_gpu_mode_free, tk_tucker_bcsf_free). */
tk_status tk_tucker_gpu_mode_build(const gpu_coo *g, int mode, size_t fiber_threshold, dev_mode *dev,
                                   tk_tucker_bcsf *host, gpu_build_times *times);
/* Sub-slices [first, last) of a mode built on device `from` (full, with host its sub-slice
 * arrays) as a mode of their own on device `to` (entry offsets rebased to its first entry):
 * one device's share.  On failure out holds what to free. */
tk_status tk_tucker_gpu_mode_share(const dev_mode &full, const tk_tucker_bcsf *host, int from, size_t first,
                                   size_t last, int to, dev_mode *out);
void tk_tucker_gpu_mode_free(dev_mode *m);
/* A device mode copied back whole (tests): rows, order and mode as given, nnz and the
 * sub-slices from the arrays.  On failure out is empty. */
tk_status tk_tucker_gpu_mode_download(const dev_mode &m, int device, int order, int mode, uint32_t rows,
                                      tk_tucker_bcsf *out);

/* Bytes a device mode of `parts` sub-slices and `nnz` entries of order `order` holds. */
size_t tk_tucker_gpu_mode_bytes(int order, size_t parts, size_t nnz);

#endif
