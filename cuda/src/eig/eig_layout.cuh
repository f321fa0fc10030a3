/* How a batch is laid out on the device (host code of the dispatch layer): lanes per
 * matrix, matrices per block, shared memory and scratch per matrix, from the tuning
 * table's choices (eig_tuning.h) and the options' overrides; then fitted to the device
 * (pack_layout: the block size that keeps the most matrices resident).  Included once,
 * by eig_cuda.cu. */
#ifndef TK_EIG_LAYOUT_CUH
#define TK_EIG_LAYOUT_CUH

#include "common/cuda_check.cuh"
#include "eig_kernels.cuh"
#include "eig_tuning.h"

/* Shared-memory reals per matrix: H (and Z) plus the scratch vectors.  Values only,
 * the scratch phases follow one another and share 3n reals: the balancing scales
 * (read by balancing alone), then the Householder vector (Hessenberg reduction),
 * then wr, wi and pos (QR, sort); with vectors each has its own (6n).  Shared memory
 * bounds how many matrices an SM holds, so every real saved there adds some. */
static size_t group_reals(int n, int ld, int want)
{
    return (size_t)(1 + want) * (size_t)n * (size_t)ld + (want ? 6 : 3) * (size_t)n;
}

/* Lanes per matrix of the lockstep reduction kernel (balancing, Householder): its
 * matrix-vector products keep more lanes busy than the QR's bulge steps, so the table may
 * give it more than the QR's; cuda_reduce_lanes names another count where the reduction
 * can take it at this n. */
static int reduce_lanes(const tk_eig_options *o, int qr_lanes, const tk_eig_tuning &t)
{
    if (o->cuda_reduce_lanes && lockstep_elems(o->n, 0, o->cuda_reduce_lanes)) return o->cuda_reduce_lanes;
    return t.reduce_lanes ? t.reduce_lanes : qr_lanes;
}

static eig_layout make_layout(const tk_eig_options *o, int want, size_t elem, int lanes, const tk_eig_tuning &t)
{
    const int n = o->n;
    const size_t budget = 64 * 1024; /* per block: several blocks share an SM */
    eig_layout p;
    p.lanes = lanes;
    p.small = !want && lanes == 1 && n <= TK_EIG_SMALL_MAX_N;
    p.elems = lockstep_elems(n, want, lanes);
    p.red_lanes = p.red_elems = p.qr_threads = p.qr_groups = 0;
    p.qr_group_reals = p.qr_smem = p.scratch_bytes = 0;
    p.qr_persistent = p.qr_grid = 0;
    if (p.small) {
        p.ld = n;
        p.group_reals = (size_t)eig_small_slice(n);
        p.groups = p.threads = 128; /* pack_layout picks the block size */
    } else if (p.elems) {
        p.red_lanes = reduce_lanes(o, lanes, t);
        p.red_elems = lockstep_elems(n, want, p.red_lanes);
        p.ld = n | 1; /* odd: a column walk then hits different banks */
        p.group_reals = (size_t)n * (size_t)p.ld + 2 * (size_t)n;
        p.qr_group_reals = (size_t)eig_band_reals(n) + EIG_BAND_PAD; /* the eigenvalues go into the band (EigBand::wr) */
        p.scratch_bytes = (size_t)eig_band_reals(n) * elem + sizeof(EigLsMeta);
        p.groups = 32 / p.red_lanes; /* pack_layout picks the block sizes */
        p.qr_groups = 32 / lanes;
        p.threads = p.qr_threads = 32;
        /* Persistent where the table says a matrix's QR iteration is long; cuda_qr_grid
         * (a tuning and testing option) forces the persistent kernel on a grid of that
         * many blocks at any n (> 0), or the other (< 0). */
        p.qr_persistent = t.qr_persistent;
        if (o->cuda_qr_grid) p.qr_persistent = p.qr_grid = o->cuda_qr_grid > 0 ? o->cuda_qr_grid : 0;
    } else if (lanes == 1) {
        p.ld = n;
        p.group_reals = group_reals(n, n, want);
        int per_block = (int)(budget / (p.group_reals * elem)) / 32 * 32;
        p.groups = per_block < 32 ? 32 : per_block > 128 ? 128 : per_block;
        p.threads = p.groups;
    } else if (lanes <= 32) {
        p.ld = n + 1; /* a column walk then hits different banks */
        p.group_reals = group_reals(n, p.ld, want);
        const int per_warp = 32 / lanes; /* whole warps: groups come in warp-fulls */
        int warps = (int)(budget / (p.group_reals * elem * (size_t)per_warp));
        warps = warps < 1 ? 1 : warps > 4 ? 4 : warps;
        p.groups = warps * per_warp;
        p.threads = 32 * warps;
    } else {
        p.ld = n + 1;
        p.group_reals = group_reals(n, p.ld, want);
        p.groups = 1;
        p.threads = 64;
    }
    p.smem = p.group_reals * elem * (size_t)p.groups;
    p.qr_smem = p.qr_group_reals * elem * (size_t)p.qr_groups;
    return p;
}

static const char *scheme_name(const eig_layout &p)
{
    if (p.small) return "thread registers";
    if (p.elems)
        return p.lanes == 2 ? "2 lanes lockstep" : p.lanes == 4 ? "4 lanes lockstep" : p.lanes == 8 ? "8 lanes lockstep" : p.lanes == 16 ? "16 lanes lockstep" : "warp lockstep";
    const int lanes = p.lanes;
    switch (lanes) {
    case 1: return "thread";
    case 2: return "2 lanes";
    case 4: return "4 lanes";
    case 8: return "8 lanes";
    case 16: return "16 lanes";
    case 32: return "warp";
    default: return "block";
    }
}

/* Lanes per matrix from the options; 0 after setting the error. */
static int choose_lanes(const tk_eig_options *o, int want, const tk_eig_tuning &t)
{
    int lanes = o->cuda_lanes;
    if (!lanes) return t.lanes;
    if (lanes != 1 && lanes != 2 && lanes != 4 && lanes != 8 && lanes != 16 && lanes != 32 && lanes != 64) {
        tk_set_error(TK_ERR_ARGUMENT, "cuda_lanes must be 0 (automatic), 1, 2, 4, 8, 16, 32 or 64, got %d", lanes);
        return 0;
    }
    if (lanes == 1 && want) {
        tk_set_error(TK_ERR_ARGUMENT, "cuda_lanes 1 (a thread per matrix) computes eigenvalues only, not vectors");
        return 0;
    }
    return lanes;
}

/* The layout must fit the device's shared memory per block. */
static tk_status check_smem(const eig_layout &p, int device)
{
    int optin = 0;
    cudaError_t err = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
    if (err != cudaSuccess) return tk_cuda_status(err, "Eigenvalues on CUDA", "cudaDeviceGetAttribute (shared memory)");
    if (p.smem > (size_t)optin)
        return tk_set_error(TK_ERR_UNSUPPORTED,
                            "%s per matrix needs %zu bytes of shared memory per block, the device has %d: "
                            "use more lanes per matrix",
                            scheme_name(p), p.smem, optin);
    return TK_OK;
}

/* The kernel a layout is for: the older kernel, one of the lockstep pair, or the
 * register kernel. */
enum which_kernel { KERNEL_OLD, KERNEL_REDUCE, KERNEL_QR, KERNEL_SMALL };

/* The kernel's address, for the attribute and occupancy queries. */
template <typename R> static const void *kernel_of(which_kernel k, const eig_layout &p)
{
    if (k == KERNEL_REDUCE) return (const void *)lockstep_reduce<R>(p.red_lanes, p.red_elems);
    if (k == KERNEL_QR) return (const void *)lockstep_qr<R>(p);
    if (k == KERNEL_SMALL) return (const void *)small_kernel<R>(p.ld);
    return (const void *)eig_kernel<R>;
}

template <typename R> static cudaError_t set_smem_of(which_kernel k, const eig_layout &p, size_t smem)
{
    if (smem <= 48 * 1024) return cudaSuccess;
    return cudaFuncSetAttribute(kernel_of<R>(k, p), cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
}

template <typename R> static cudaError_t prepare_kernel(const eig_layout &p)
{
    if (p.small) return set_smem_of<R>(KERNEL_SMALL, p, p.smem);
    if (!p.elems) return set_smem_of<R>(KERNEL_OLD, p, p.smem);
    cudaError_t err = set_smem_of<R>(KERNEL_REDUCE, p, p.smem);
    return err != cudaSuccess ? err : set_smem_of<R>(KERNEL_QR, p, p.qr_smem);
}

/* Matrices resident on one SM at once with `groups` matrices in blocks of `threads`
 * threads: shared memory (and, for the small orders, registers) bound it, so the
 * block size decides how much of the SM's shared memory is left over as a remainder
 * no block fits in. */
template <typename R> static int resident_matrices(which_kernel k, const eig_layout &p, int threads, int groups, size_t smem)
{
    int blocks = 0;
    if (set_smem_of<R>(k, p, smem) != cudaSuccess) return (void)cudaGetLastError(), 0;
    const cudaError_t err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel_of<R>(k, p), threads, smem);
    if (err != cudaSuccess) return (void)cudaGetLastError(), 0;
    return blocks * groups;
}

/* Groups per block that keep the most matrices resident (ties: the smaller block,
 * which balances better over the SMs at a batch's tail).  Blocks of up to 16 warps,
 * and up to 32 for the persistent QR kernel: its blocks last until the batch runs
 * out, so one large block per SM leaves no tail behind, and it wastes less of the SM's
 * shared memory than several smaller ones (the QR is bound by how many matrices an SM
 * holds: 18 warps at n = 25 where blocks of 16 held 16, 26 at n = 30 against 25).
 * Returns the matrices an SM holds with the layout chosen. */
template <typename R>
static int pack_one(which_kernel k, const eig_layout &p, int lanes, size_t group_reals, int optin, int *threads, int *groups,
                     size_t *smem)
{
    const int per_warp = lanes == 1 ? 32 : 32 / lanes, max_warps = k == KERNEL_QR && p.qr_persistent ? 32 : 16;
    int best = resident_matrices<R>(k, p, *threads, *groups, *smem);
    for (int warps = 1; warps <= max_warps; ++warps) {
        const int g = warps * per_warp;
        const size_t sm = group_reals * sizeof(R) * (size_t)g;
        if (sm > (size_t)optin) break;
        const int r = resident_matrices<R>(k, p, 32 * warps, g, sm);
        if (r > best) best = r, *threads = 32 * warps, *groups = g, *smem = sm;
    }
    return best;
}

template <typename R> static void pack_layout(eig_layout *p, int device)
{
    int optin = 0;
    if (p->lanes > 32 || cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) != cudaSuccess)
        return (void)cudaGetLastError();
    const which_kernel first = p->small ? KERNEL_SMALL : p->elems ? KERNEL_REDUCE : KERNEL_OLD;
    pack_one<R>(first, *p, p->elems ? p->red_lanes : p->lanes, p->group_reals, optin, &p->threads, &p->groups, &p->smem);
    if (p->elems) {
        const int resident =
            pack_one<R>(KERNEL_QR, *p, p->lanes, p->qr_group_reals, optin, &p->qr_threads, &p->qr_groups, &p->qr_smem);
        int sms = 0;
        if (p->qr_persistent && !p->qr_grid && cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) == cudaSuccess)
            p->qr_grid = resident / p->qr_groups * sms;
        cudaGetLastError();
    }
}

static void pack_layout_any(int dbl, eig_layout *p, int device)
{
    if (dbl) pack_layout<double>(p, device);
    else pack_layout<float>(p, device);
}

/* The scratch of a batch of `count`: the lockstep kernels' bands, their EigLsMeta
 * records, then the persistent QR kernel's counter of matrices taken, 8-byte aligned. */
static size_t scratch_size(const eig_layout &p, size_t count) { return count * p.scratch_bytes + 2 * sizeof(unsigned long long); }

static unsigned long long *qr_counter(const eig_layout &p, size_t count, void *scratch)
{
    const uintptr_t at = (uintptr_t)scratch + count * p.scratch_bytes;
    return (unsigned long long *)((at + 7) & ~(uintptr_t)7);
}

/* Where the scratch starts in a pipeline slot's device buffer, after the chunk's
 * matrices, values, vectors and status. */
static size_t scratch_offset(size_t chunk, size_t per_matrix) { return (chunk * per_matrix + 7) & ~(size_t)7; }

#endif
