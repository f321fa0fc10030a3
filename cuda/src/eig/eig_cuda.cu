/* CUDA backend of the batched eigensolver.
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
 * memory bounds it; pack_plan).  Batches run in chunks through a pipeline of streams
 * (see tk_eig_solve_cuda), so the copies overlap the kernels; pinned caller arrays are
 * copied directly, others through pinned staging buffers.
 */
#include <cuda_runtime.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/cuda_memory.h"
#include "eig_internal.h"
#include "tk_bench_hooks.h"
#include "common/tk_hd.h"

/* host-device because the shared body is; it only ever runs on the device.  A group
 * within a warp waits for its own lanes only: the other groups of the warp work on
 * other matrices along other paths. */
__host__ __device__ __forceinline__ void tk_eig_sync(int stride, unsigned mask)
{
#ifdef __CUDA_ARCH__
    if (stride > 32) __syncthreads();
    else if (stride > 1) __syncwarp(mask);
#else
    (void)stride, (void)mask;
#endif
}

#define EIG_LANE(c) ((c)->lane)
#define EIG_STRIDE(c) ((c)->stride)
#define EIG_ES(c) ((c)->es)
#define EIG_SYNC(c) tk_eig_sync((c)->stride, (c)->mask)

#define EIG_REAL double
#define EIG_NAME(x) x##_d
#define EIG_EPS 0x1p-52
#define EIG_SAFMIN 0x1p-1022
#define EIG_SQRT sqrt
#define EIG_FABS fabs
#define EIG_LDEXP ldexp
#define EIG_FREXP frexp
#define EIG_HYPOT hypot
#define EIG_NAN ((double)NAN)
#include "eig_body.h"
#undef EIG_REAL
#undef EIG_NAME
#undef EIG_EPS
#undef EIG_SAFMIN
#undef EIG_SQRT
#undef EIG_FABS
#undef EIG_LDEXP
#undef EIG_FREXP
#undef EIG_HYPOT
#undef EIG_NAN

#define EIG_REAL float
#define EIG_NAME(x) x##_f
#define EIG_EPS 0x1p-23f
#define EIG_SAFMIN 0x1p-126f
#define EIG_SQRT sqrtf
#define EIG_FABS fabsf
#define EIG_LDEXP ldexpf
#define EIG_FREXP frexpf
#define EIG_HYPOT hypotf
#define EIG_NAN ((float)NAN)
#include "eig_body.h"

template <typename R> struct Eig;
#define TK_EIG_BIND(R, S)                                                                                      \
    template <> struct Eig<R> {                                                                                \
        typedef eig_ctx_##S ctx;                                                                               \
        static __device__ int solve(ctx *c, const R *a, R *v, R *x, int bal, int it)                           \
        {                                                                                                      \
            return eig_solve_one_##S(c, a, v, x, bal, it);                                                     \
        }                                                                                                      \
        static __device__ int prepare(ctx *c, const R *a, int bal, int *expo, int *ilo, int *ihi)              \
        {                                                                                                      \
            return eig_prepare_##S(c, a, bal, expo, ilo, ihi);                                                 \
        }                                                                                                      \
        static __device__ void hessenberg(ctx *c, int ilo, int ihi) { eig_hessenberg_##S(c, ilo, ihi); }      \
        static __device__ void sort(ctx *c) { eig_sort_##S(c); }                                               \
        static __device__ R scale2(R x, int e) { return eig_scale2_##S(x, e); }                                \
        static __device__ void lanv2(R *a, R *b, R *c, R *d, R *r1r, R *r1i, R *r2r, R *r2i, R *cs, R *sn)     \
        {                                                                                                      \
            eig_lanv2_##S(a, b, c, d, r1r, r1i, r2r, r2i, cs, sn);                                             \
        }                                                                                                      \
        static __device__ __forceinline__ void double_shift(R h11, R h12, R h21, R h22, R rt[4])               \
        {                                                                                                      \
            eig_double_shift_##S(h11, h12, h21, h22, rt);                                                      \
        }                                                                                                      \
        static __device__ __forceinline__ void shift_column(const R rt[4], R a, R b, R c, R d, R e, R v[3])    \
        {                                                                                                      \
            eig_shift_column_##S(rt, a, b, c, d, e, v);                                                        \
        }                                                                                                      \
    };
TK_EIG_BIND(double, d)
TK_EIG_BIND(float, f)
#undef TK_EIG_BIND

#include "eig_cuda_hqr.cuh"
#include "eig_cuda_lockstep.cuh"
#include "eig_cuda_small.cuh"

/* Eigenvalues only, by lanes of one warp (stride <= 32): eig_solve_one's steps with
 * the GPU's own QR iteration (eig_cuda_hqr.cuh). */
template <typename R>
__device__ int eig_gpu_solve_values(typename Eig<R>::ctx *c, const R *a, R *values, int balance, int max_iter)
{
    const int n = c->n;
    int expo = 0, ilo = 0, ihi = n - 1;
    int status = Eig<R>::prepare(c, a, balance, &expo, &ilo, &ihi);
    if (!status) {
        Eig<R>::hessenberg(c, ilo, ihi);
        if (eig_gpu_hqr_values<R>(c, ilo, ihi, max_iter)) status = 1;
    }
    if (status) {
        for (int e = c->lane; e < 2 * n; e += c->stride) values[e] = (R)NAN;
        return status;
    }
    if (c->lane == 0) Eig<R>::sort(c);
    if (c->stride > 1) __syncwarp(c->mask);
    const int es = c->es;
    for (int s = c->lane; s < n; s += c->stride) {
        values[2 * s] = Eig<R>::scale2(c->wr[s * es], expo);
        values[2 * s + 1] = Eig<R>::scale2(c->wi[s * es], expo);
    }
    return 0;
}

/* How a batch of order n is laid out on the device: `lanes` threads per matrix
 * (1, 2, 4, 8, 16, 32 or 64), `groups` matrices per block. */
struct plan {
    int lanes, threads, groups, ld;
    int small; /* eigenvalues only, a thread per matrix in registers (eig_cuda_small.cuh) */
    int elems; /* > 0: the lockstep kernels (eig_cuda_lockstep.cuh), the QR's rows per lane and phase */
    size_t group_reals, smem;
    /* lockstep: the reduction kernel's lanes and rows per lane (its layout is in the
     * fields above, `lanes` and `elems` are the QR's), the QR kernel's layout, and the
     * global scratch per matrix between the two kernels (the band and its EigLsMeta) */
    int red_lanes, red_elems, qr_threads, qr_groups;
    size_t qr_group_reals, qr_smem, scratch_bytes;
    /* the QR kernel: persistent or not (eig_cuda_lockstep.cuh), and its grid, for the
     * persistent one the blocks the device holds at once (0: a block per qr_groups
     * matrices) */
    int qr_persistent, qr_grid;
};

/* Eigenvalues only on 2, 4, 8, 16 or 32 lanes run the lockstep kernels where each lane
 * holds at most four rows or columns of a phase (two on 32 lanes); 0 where another
 * kernel runs. */
static int lockstep_elems(int n, int want, int lanes)
{
    if (want) return 0;
    if (lanes != 2 && lanes != 4 && lanes != 8 && lanes != 16 && lanes != 32) return 0;
    const int elems = (n + lanes - 1) / lanes;
    return elems <= (lanes == 32 ? 2 : 4) ? elems : 0;
}

/* The lockstep kernels of one precision, lanes and rows per lane: the reduction and the
 * QR meet only through the band in global scratch, so each has its own lanes.  One
 * picker serves both: K names the kernel template (LsReduce or LsQr). */
template <typename R> using reduce_fn = void (*)(int, int, int, int, size_t, const R *, R *, EigLsMeta *, int);
template <typename R>
using qr_fn = void (*)(int, int, int, size_t, const R *, const EigLsMeta *, R *, int8_t *, int, unsigned long long *);
template <typename R, int G, int E> struct LsReduce {
    static constexpr reduce_fn<R> fn = eig_ls_reduce_kernel<R, G, E>;
};
template <typename R, int G, int E> struct LsQr {
    static constexpr qr_fn<R> fn = eig_ls_qr_kernel<R, G, E>;
};
template <typename R, int G, int E> struct LsQrPersistent {
    static constexpr qr_fn<R> fn = eig_ls_qr_persistent_kernel<R, G, E>;
};

template <template <typename, int, int> class K, typename R, int G>
static decltype(K<R, G, 1>::fn) lockstep_of(int elems)
{
    switch (elems) {
    case 1: return K<R, G, 1>::fn;
    case 2: return K<R, G, 2>::fn;
    case 3: return K<R, G, 3>::fn;
    default: return K<R, G, 4>::fn;
    }
}

template <template <typename, int, int> class K, typename R>
static decltype(K<R, 2, 1>::fn) lockstep_kernel(int lanes, int elems)
{
    if (lanes == 2) return lockstep_of<K, R, 2>(elems);
    if (lanes == 4) return lockstep_of<K, R, 4>(elems);
    if (lanes == 8) return lockstep_of<K, R, 8>(elems);
    if (lanes == 16) return lockstep_of<K, R, 16>(elems);
    return elems == 1 ? K<R, 32, 1>::fn : K<R, 32, 2>::fn;
}

template <typename R> static reduce_fn<R> lockstep_reduce(int lanes, int elems)
{
    return lockstep_kernel<LsReduce, R>(lanes, elems);
}
template <typename R> static qr_fn<R> lockstep_qr(const plan &p)
{
    return p.qr_persistent ? lockstep_kernel<LsQrPersistent, R>(p.lanes, p.elems)
                           : lockstep_kernel<LsQr, R>(p.lanes, p.elems);
}

/* The register kernel of one precision and order 1..TK_EIG_SMALL_MAX_N. */
template <typename R> using small_fn = void (*)(size_t, const R *, R *, int8_t *, int, int);
template <typename R> static small_fn<R> small_kernel(int n)
{
    switch (n) {
    case 1: return eig_small_kernel<R, 1>;
    case 2: return eig_small_kernel<R, 2>;
    case 3: return eig_small_kernel<R, 3>;
    case 4: return eig_small_kernel<R, 4>;
    case 5: return eig_small_kernel<R, 5>;
    case 6: return eig_small_kernel<R, 6>;
    case 7: return eig_small_kernel<R, 7>;
    default: return eig_small_kernel<R, 8>;
    }
}

/* Shared-memory reals per matrix: H (and Z) plus the scratch vectors.  Values only,
 * the scratch phases follow one another and share 3n reals: the balancing scales
 * (read by balancing alone), then the Householder vector (Hessenberg reduction),
 * then wr, wi and pos (QR, sort); with vectors each has its own (6n).  Shared memory
 * bounds how many matrices an SM holds, so every real saved there adds some. */
static size_t group_reals(int n, int ld, int want)
{
    return (size_t)(1 + want) * (size_t)n * (size_t)ld + (want ? 6 : 3) * (size_t)n;
}

/* The automatic choice.  Values only, from `tk-bench eig --cuda-lanes G` on an H100
 * (500,000 random double matrices, kernel ms; "ls" = the lockstep kernels, band QR,
 * "reg" = the register kernel, the others eig_cuda_hqr.cuh's QR).  2026-11-24, with the
 * eigenvalues kept in the band:
 *     n     thread      4 lanes    8 lanes     16 lanes
 *     5      0.88 reg      -          -           -
 *     6      1.52 reg      -          -           -
 *     7      2.58 reg      -          -           -
 *     8      3.74 reg   3.50 ls       -           -
 *    25        -           -       52.3 ls     58.2 ls     (reduction on 16 lanes)
 *    30        -           -       92.0 ls     87.3 ls     (reduction on 16 lanes)
 *    30        -           -       90.3 ls     85.6 ls     (reduction on 32 lanes)
 * 2026-11-23, the reduction on the QR's lanes, eigenvalues beside the band:
 *     n     thread      2 lanes    4 lanes    8 lanes    16 lanes   warp
 *     5      1.31 ls    1.54 ls    1.74 ls      -          -          -
 *    10        -          -        5.17 ls      -          -          -
 *    15        -          -          -       15.7 ls       -          -
 *    20        -          -          -       29.9 ls    39.2 ls       -
 *    25        -          -          -       60.8 ls    59.4 ls       -
 *    30        -          -          -          -       88.9 ls   124.0 ls
 * Before the band QR (one kernel, full matrix): n = 10 4 lanes 6.77, 8 lanes 8.54;
 * n = 30 8 lanes 153, 16 lanes 106, warp 121; the older kernel's best: 4 lanes 9.4
 * at n = 10, 16 lanes 180 at n = 30.  Above 30 unmeasured: the whole warp (two rows
 * or columns a lane).  With vectors (the shared body's QR) the older table, not
 * re-measured. */
static int auto_lanes(int n, int want)
{
    if (!want) return n <= 7 ? 1 : n <= 12 ? 4 : n <= 27 ? 8 : n <= 32 ? 16 : 32;
    return n <= 8 ? 4 : n <= 20 ? 8 : n <= 32 ? 16 : 64;
}

/* Lanes per matrix of the lockstep reduction kernel (balancing, Householder).  Its
 * matrix-vector products keep more lanes busy than the QR's bulge steps, and at
 * n = 25 reduction on 16 lanes and QR on 8 beat 8/8 (58.3 ms) and 16/16; at n = 30
 * 32/16 beat 16/16 and 8/16 (99.3 ms) (table above).  TK_EIG_CUDA_REDUCE_LANES (a
 * tuning knob, read at every call) names another count where the reduction can take
 * it at this n. */
static int reduce_lanes(int n, int qr_lanes)
{
    const char *knob = getenv("TK_EIG_CUDA_REDUCE_LANES");
    if (knob && *knob) {
        const int g = atoi(knob);
        if (lockstep_elems(n, 0, g)) return g;
    }
    if (n >= 23 && n <= 27) return 16;
    if (n >= 28 && n <= 32) return 32;
    return qr_lanes;
}

static plan make_plan(int n, int want, size_t elem, int lanes)
{
    const size_t budget = 64 * 1024; /* per block: several blocks share an SM */
    plan p;
    p.lanes = lanes;
    p.small = !want && lanes == 1 && n <= TK_EIG_SMALL_MAX_N;
    p.elems = lockstep_elems(n, want, lanes);
    p.red_lanes = p.red_elems = p.qr_threads = p.qr_groups = 0;
    p.qr_group_reals = p.qr_smem = p.scratch_bytes = 0;
    p.qr_persistent = p.qr_grid = 0;
    if (p.small) {
        p.ld = n;
        p.group_reals = (size_t)eig_small_slice(n);
        p.groups = p.threads = 128; /* pack_plan picks the block size */
    } else if (p.elems) {
        p.red_lanes = reduce_lanes(n, lanes);
        p.red_elems = lockstep_elems(n, want, p.red_lanes);
        p.ld = n | 1; /* odd: a column walk then hits different banks */
        p.group_reals = (size_t)n * (size_t)p.ld + 2 * (size_t)n;
        p.qr_group_reals = (size_t)eig_band_reals(n) + EIG_BAND_PAD; /* the eigenvalues go into the band (EigBand::wr) */
        p.scratch_bytes = (size_t)eig_band_reals(n) * elem + sizeof(EigLsMeta);
        p.groups = 32 / p.red_lanes; /* pack_plan picks the block sizes */
        p.qr_groups = 32 / lanes;
        p.threads = p.qr_threads = 32;
        /* Persistent where a matrix's QR iteration is long (H200, kernel ms, n = 10, 15,
         * 20, 25, 30: 5.50 -> 5.67, 14.05 -> 14.10, 29.05 -> 28.10, 47.14 -> 46.85,
         * 76.6 -> 75.6): for short ones the refills cost more than the tails they save.
         * TK_EIG_CUDA_QR_GRID (a tuning and testing knob, read at every call) forces the
         * persistent kernel on a grid of that many blocks at any n, or (0) the other. */
        p.qr_persistent = n > 16;
        const char *knob = getenv("TK_EIG_CUDA_QR_GRID");
        if (knob && *knob) {
            const int blocks = atoi(knob);
            p.qr_persistent = p.qr_grid = blocks > 0 ? blocks : 0;
        }
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

static const char *scheme_name(const plan &p)
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
static int choose_lanes(const tk_eig_options *o, int want)
{
    int lanes = o->cuda_lanes;
    if (!lanes) return auto_lanes(o->n, want);
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

template <typename R>
__global__ void eig_kernel(plan p, int n, size_t count, const R *__restrict__ a, R *__restrict__ values,
                           R *__restrict__ vectors, int8_t *__restrict__ status, int balance, int max_iter)
{
    extern __shared__ __align__(16) unsigned char smem_raw[];
    R *smem = reinterpret_cast<R *>(smem_raw);
    typename Eig<R>::ctx c;
    size_t idx;
    R *base;
    c.n = n;
    c.ld = p.ld;
    c.mask = 0xffffffffu;
    if (p.lanes == 1) {
        idx = (size_t)blockIdx.x * (size_t)p.groups + threadIdx.x;
        c.lane = 0, c.stride = 1, c.es = p.groups;
        base = smem + threadIdx.x;
    } else if (p.lanes <= 32) {
        const int g = threadIdx.x / p.lanes;
        idx = (size_t)blockIdx.x * (size_t)p.groups + (size_t)g;
        c.lane = threadIdx.x % p.lanes, c.stride = p.lanes, c.es = 1;
        if (p.lanes < 32) c.mask = ((1u << p.lanes) - 1) << (threadIdx.x % 32 / p.lanes * p.lanes);
        base = smem + (size_t)g * p.group_reals;
    } else {
        idx = blockIdx.x;
        c.lane = threadIdx.x, c.stride = blockDim.x, c.es = 1;
        base = smem;
    }
    if (idx >= count) return; /* a whole group: no barrier is left waiting for it */
    const size_t es = (size_t)c.es, nld = (size_t)n * (size_t)p.ld;
    const int want = vectors != nullptr;
    c.h = base;
    c.z = want ? base + nld * es : nullptr;
    c.scale = base + (size_t)(1 + want) * nld * es;
    if (want) {
        c.wr = c.scale + (size_t)n * es;
        c.wi = c.wr + (size_t)n * es;
        c.pos = c.wi + (size_t)n * es;
        c.tmp = c.pos + (size_t)n * es;
    } else {
        c.tmp = c.scale; /* see group_reals */
        c.wr = c.scale;
        c.wi = c.wr + (size_t)n * es;
        c.pos = c.wi + (size_t)n * es;
    }
    const size_t nn = (size_t)n * (size_t)n;
    int s = !want && p.lanes <= 32
                ? eig_gpu_solve_values<R>(&c, a + idx * nn, values + idx * 2 * (size_t)n, balance, max_iter)
                : Eig<R>::solve(&c, a + idx * nn, values + idx * 2 * (size_t)n, want ? vectors + idx * 2 * nn : nullptr,
                                balance, max_iter);
    if (c.lane == 0) status[idx] = (int8_t)s;
}

#define CUDA_TRY(call)                                                                                       \
    do {                                                                                                     \
        cudaError_t err_ = (call);                                                                           \
        if (err_ != cudaSuccess) {                                                                           \
            st = tk_set_error(err_ == cudaErrorMemoryAllocation ? TK_ERR_MEMORY : TK_ERR_CUDA,               \
                              "CUDA: %s failed: %s", #call, cudaGetErrorString(err_));                       \
            goto cleanup;                                                                                    \
        }                                                                                                    \
    } while (0)

static tk_status open_device(const tk_eig_options *o)
{
    const tk_status usable = tk_cuda_require_device(o->cuda_device);
    if (usable != TK_OK) return usable;
    cudaError_t err = cudaSetDevice(o->cuda_device);
    if (err != cudaSuccess) return tk_set_error(TK_ERR_CUDA, "CUDA: cannot use device %d: %s", o->cuda_device, cudaGetErrorString(err));
    return TK_OK;
}

/* The layout must fit the device's shared memory per block. */
static tk_status check_smem(const plan &p, int device)
{
    int optin = 0;
    cudaError_t err = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
    if (err != cudaSuccess) return tk_set_error(TK_ERR_CUDA, "CUDA: cannot query shared memory: %s", cudaGetErrorString(err));
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
template <typename R> static const void *kernel_of(which_kernel k, const plan &p)
{
    if (k == KERNEL_REDUCE) return (const void *)lockstep_reduce<R>(p.red_lanes, p.red_elems);
    if (k == KERNEL_QR) return (const void *)lockstep_qr<R>(p);
    if (k == KERNEL_SMALL) return (const void *)small_kernel<R>(p.ld);
    return (const void *)eig_kernel<R>;
}

template <typename R> static cudaError_t set_smem_of(which_kernel k, const plan &p, size_t smem)
{
    if (smem <= 48 * 1024) return cudaSuccess;
    return cudaFuncSetAttribute(kernel_of<R>(k, p), cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
}

template <typename R> static cudaError_t prepare_kernel(const plan &p)
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
template <typename R> static int resident_matrices(which_kernel k, const plan &p, int threads, int groups, size_t smem)
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
static int pack_one(which_kernel k, const plan &p, int lanes, size_t group_reals, int optin, int *threads, int *groups,
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

template <typename R> static void pack_plan(plan *p, int device)
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

static void pack_plan_any(int dbl, plan *p, int device)
{
    if (dbl) pack_plan<double>(p, device);
    else pack_plan<float>(p, device);
}

/* The scratch of a batch of `count`: the lockstep kernels' bands, their EigLsMeta
 * records, then the persistent QR kernel's counter of matrices taken, 8-byte aligned. */
static size_t scratch_size(const plan &p, size_t count) { return count * p.scratch_bytes + 2 * sizeof(unsigned long long); }

static unsigned long long *qr_counter(const plan &p, size_t count, void *scratch)
{
    const uintptr_t at = (uintptr_t)scratch + count * p.scratch_bytes;
    return (unsigned long long *)((at + 7) & ~(uintptr_t)7);
}

/* Where the scratch starts in a pipeline slot's device buffer, after the chunk's
 * matrices, values, vectors and status. */
static size_t scratch_offset(size_t chunk, size_t per_matrix) { return (chunk * per_matrix + 7) & ~(size_t)7; }

/* scratch: scratch_size(p, count) bytes, 8-byte aligned.  A batch runs in two stages: stage 0 reads the
 * matrices (the register kernel, the older kernel, or the lockstep reduction), stage 1
 * is the lockstep QR on the reduction's bands (nothing for the other schemes).  The
 * pipeline issues them apart (see tk_eig_solve_cuda). */
template <typename R>
static cudaError_t launch(const plan &p, int stage, int n, size_t count, const void *a, void *values, void *vectors,
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

static cudaError_t launch_stage(int dbl, const plan &p, int stage, int n, size_t count, const void *a, void *values,
                                void *vectors, int8_t *status, int balance, int max_iter, void *scratch,
                                cudaStream_t stream)
{
    if (dbl) return launch<double>(p, stage, n, count, a, values, vectors, status, balance, max_iter, scratch, stream);
    return launch<float>(p, stage, n, count, a, values, vectors, status, balance, max_iter, scratch, stream);
}

/* Both stages, one after the other in one stream. */
static cudaError_t launch_any(int dbl, const plan &p, int n, size_t count, const void *a, void *values, void *vectors,
                              int8_t *status, int balance, int max_iter, void *scratch, cudaStream_t stream)
{
    cudaError_t err = cudaSuccess;
    for (int stage = 0; stage < 2 && err == cudaSuccess; ++stage)
        err = launch_stage(dbl, p, stage, n, count, a, values, vectors, status, balance, max_iter, scratch, stream);
    return err;
}

static int is_pinned(const void *ptr)
{
    if (!ptr) return 1;
    cudaPointerAttributes attr;
    if (cudaPointerGetAttributes(&attr, ptr) != cudaSuccess) {
        cudaGetLastError(); /* clear the sticky-free error of an unknown pointer */
        return 0;
    }
    return attr.type == cudaMemoryTypeHost;
}

/* The streamed pipeline.  A chunk holds one of TK_EIG_SLOTS device buffers (its
 * matrices, results and the lockstep kernels' scratch; with pageable caller arrays also
 * a pinned staging buffer) from its H2D copy until its results are back on the host.
 * The H2D copies go one after another through one stream, each slot's kernels through
 * a stream of its own (waiting for the chunk's copy by an event; the slots' kernels
 * overlap, which fills each launch's tail), and the D2H copies through a third: so the
 * copy engine is never held up behind a kernel.  More slots did not pay on an H100
 * (n = 30: 8 slots 94 ms against 89 ms with 3): allocating and freeing their device
 * memory costs more than the deeper pipeline gains. */
#define TK_EIG_SLOTS 3
#define TK_EIG_MAX_SLOTS 16

/* TK_EIG_CUDA_SLOTS (1..16; a tuning knob like TK_EIG_CUDA_REDUCE_LANES, read at every
 * call) overrides TK_EIG_SLOTS. */
static int pipeline_slots(void)
{
    const char *knob = getenv("TK_EIG_CUDA_SLOTS");
    const int s = knob && *knob ? atoi(knob) : 0;
    return s >= 1 && s <= TK_EIG_MAX_SLOTS ? s : TK_EIG_SLOTS;
}

/* Matrices in the next chunk, the one starting at `first` (prev: the previous chunk's
 * size, 0 for the first; buffers hold `chunk`).  Chunks start at a sixteenth of a
 * chunk (at least 4096 matrices: fewer fill the GPU poorly) so that the GPU starts
 * early, grow to `chunk`, and shrink back toward the end so that the host waits little
 * for the last chunk's computation and results.  They double where the kernels outrun
 * the copies; where the copies are faster (`gentle`) a chunk twice the previous one
 * would arrive after the GPU has finished everything before it, so they grow by 30%
 * (n = 30 on an H100: 2.4 ms less than doubling, the idle time a model of the pipeline
 * predicted). */
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

/* TK_EIG_CUDA_TIMELINE set (and not 0) prints each chunk's copies and kernels, in ms
 * from the batch's start, and the host's set-up and clean-up times to stderr: what
 * Nsight Systems would show, where it is not installed (a tuning aid, read at every
 * call). */
static int timeline_wanted(void)
{
    const char *knob = getenv("TK_EIG_CUDA_TIMELINE");
    return knob && *knob && strcmp(knob, "0") != 0;
}

static double ms_between(const struct timespec &a, const struct timespec &b)
{
    return (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) * 1e-6;
}

extern "C" tk_status tk_eig_solve_cuda(const tk_eig_options *o, size_t count, const void *matrices, void *values,
                                       void *vectors, int8_t *status, double *kernel_ms)
{
    /* host clock: start, kernels prepared, device memory, streams and events, pipeline
     * done, cleaned up (TK_EIG_CUDA_TIMELINE) */
    struct timespec host_t[6];
    clock_gettime(CLOCK_MONOTONIC, &host_t[0]);
    tk_status st = open_device(o);
    if (st != TK_OK) return st;
    const int n = o->n, dbl = o->precision == TK_PRECISION_DOUBLE, want = vectors != NULL;
    const size_t elem = dbl ? sizeof(double) : sizeof(float), nn = (size_t)n * (size_t)n;
    const size_t in_b = nn * elem, val_b = 2 * (size_t)n * elem, vec_b = want ? 2 * nn * elem : 0;
    const size_t per_matrix = in_b + val_b + vec_b + 1;
    const int lanes = choose_lanes(o, want);
    if (!lanes) return TK_ERR_ARGUMENT;
    plan p = make_plan(n, want, elem, lanes);
    if ((st = check_smem(p, o->cuda_device)) != TK_OK) return st;
    pack_plan_any(dbl, &p, o->cuda_device);
    /* on the device each matrix also has the lockstep kernels' scratch */
    const size_t dev_per_matrix = per_matrix + p.scratch_bytes;
    const int balance = o->balance != 0, max_iter = tk_eig_max_iter(o);
    const int direct = is_pinned(matrices) && is_pinned(values) && is_pinned(vectors) && is_pinned(status);
    const int timeline = timeline_wanted();
    /* where the kernels trail the copies (an H100: from n = 25 on) */
    const int gentle = n > 20;

    cudaStream_t copy_in = NULL, copy_out = NULL;
    eig_slot slot[TK_EIG_MAX_SLOTS] = {};
    cudaEvent_t t0 = NULL;
    void *dev_all = NULL;
    double kms = 0;
    size_t chunk = o->cuda_chunk;
    int slots = pipeline_slots();
    if (!chunk) {
        size_t free_b = 0, total_b = 0;
        if ((st = tk_cuda_memory_get(&free_b, &total_b)) != TK_OK) return st;
        size_t fit = tk_cuda_budget(free_b) / (size_t)slots / dev_per_matrix;
        /* several chunks per batch so that copies overlap compute, none too small to
         * fill the GPU, none so large that the pinned staging buffers take long to
         * allocate.  Where the kernels outrun the copies (n <= 20 on an H100) chunks of
         * 64 MB pipeline more finely (n = 20: 1.17x the copies against 1.25x with
         * 256 MB); above, fewer and larger launches keep the GPU busier (n = 30: 99 ms
         * against 102 ms with 64 MB). */
        chunk = (count + 7) / 8;
        if (chunk < 8192) chunk = 8192;
        const size_t cap = ((size_t)(n <= 20 ? 64 : 256) << 20) / per_matrix;
        if (chunk > cap) chunk = cap > 1024 ? cap : 1024;
        if (chunk > fit) chunk = fit;
        if (chunk < 1) chunk = 1; /* the allocation below decides, and words the error */
    }
    if (chunk > count) chunk = count;
    const size_t chunks = chunks_in(count, chunk, gentle);
    if ((size_t)slots > chunks) slots = (int)chunks;
    CUDA_TRY(prepare_kernel<double>(p));
    CUDA_TRY(prepare_kernel<float>(p));
    clock_gettime(CLOCK_MONOTONIC, &host_t[1]);
    /* The device buffers first, as one allocation (at n = 5 the host's set-up and
     * clean-up are a fifth of the whole run).  An automatic chunk whose buffers do not
     * fit (another thread or process took memory since the query) is halved; a
     * cuda_chunk the caller chose is kept, and its failure reported. */
    for (;;) {
        const size_t slot_b = (scratch_offset(chunk, per_matrix) + scratch_size(p, chunk) + 255) & ~(size_t)255;
        cudaError_t err = tk_cuda_malloc(&dev_all, (size_t)slots * slot_b);
        if (err == cudaSuccess) {
            for (int s = 0; s < slots; ++s) slot[s].dev = (unsigned char *)dev_all + (size_t)s * slot_b;
            break;
        }
        if (err != cudaErrorMemoryAllocation) {
            st = tk_set_error(TK_ERR_CUDA, "CUDA: cudaMalloc failed: %s", cudaGetErrorString(err));
            goto cleanup;
        }
        if (o->cuda_chunk || chunk == 1) {
            char what[160];
            snprintf(what, sizeof what, "a chunk of %zu matrices of order %d in each of %d buffers%s", chunk, n, slots,
                     o->cuda_chunk ? " (cuda_chunk; 0 picks a chunk that fits)" : "");
            st = tk_cuda_out_of_memory("Eigenvalues on CUDA", what, (size_t)slots * chunk * dev_per_matrix);
            goto cleanup;
        }
        chunk = (chunk + 1) / 2;
    }
    clock_gettime(CLOCK_MONOTONIC, &host_t[2]);
    CUDA_TRY(cudaStreamCreateWithFlags(&copy_in, cudaStreamNonBlocking));
    CUDA_TRY(cudaStreamCreateWithFlags(&copy_out, cudaStreamNonBlocking));
    CUDA_TRY(cudaEventCreate(&t0));
    {
        /* events the host only waits on, or only orders streams by, keep no time
         * (cheaper to record), unless the timeline reads them */
        const unsigned untimed = timeline ? cudaEventDefault : cudaEventDisableTiming;
        for (int s = 0; s < slots; ++s) {
            eig_slot &sl = slot[s];
            CUDA_TRY(cudaStreamCreateWithFlags(&sl.stream, cudaStreamNonBlocking));
            CUDA_TRY(cudaEventCreateWithFlags(&sl.in0, untimed));
            CUDA_TRY(cudaEventCreateWithFlags(&sl.arrived, untimed));
            CUDA_TRY(cudaEventCreate(&sl.k0));
            CUDA_TRY(cudaEventCreateWithFlags(&sl.mid, untimed));
            CUDA_TRY(cudaEventCreate(&sl.k1));
            CUDA_TRY(cudaEventCreateWithFlags(&sl.freed, untimed));
            if (!direct) CUDA_TRY(cudaMallocHost(&sl.host, chunk * per_matrix));
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &host_t[3]);
    CUDA_TRY(cudaEventRecord(t0, copy_in));
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
            cudaError_t err;
            if ((err = cudaEventRecord(sl.in0, copy_in)) != cudaSuccess ||
                (err = cudaMemcpyAsync(sl.dev, src, m * in_b, cudaMemcpyHostToDevice, copy_in)) != cudaSuccess ||
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
            if ((err = cudaMemcpyAsync(dst_val, d_val, m * val_b, cudaMemcpyDeviceToHost, copy_out)) != cudaSuccess ||
                (want && (err = cudaMemcpyAsync(dst_vec, d_vec, m * vec_b, cudaMemcpyDeviceToHost, copy_out)) != cudaSuccess) ||
                (err = cudaMemcpyAsync(dst_st, d_st, m, cudaMemcpyDeviceToHost, copy_out)) != cudaSuccess)
                return err;
            return cudaEventRecord(sl.freed, copy_out);
        };
        size_t c = 0, m = 0;
        eig_slot *pending = NULL; /* the chunk whose back is still to be issued */
        for (size_t first = 0; first < count; first += m, ++c) {
            eig_slot &sl = slot[c % (size_t)slots];
            m = next_chunk(m, first, count, chunk, gentle);
            if (pending == &sl) { /* one slot: its chunk must be out before the next comes in */
                CUDA_TRY(back(sl));
                pending = NULL;
            }
            if (sl.count) { /* the slot's previous chunk */
                CUDA_TRY(cudaEventSynchronize(sl.freed));
                CUDA_TRY(retire(sl, c - (size_t)slots));
            }
            CUDA_TRY(front(sl, first, m));
            if (pending) CUDA_TRY(back(*pending));
            pending = &sl;
        }
        if (pending) CUDA_TRY(back(*pending));
        /* the last chunks, in the order they were issued */
        for (size_t cc = c > (size_t)slots ? c - (size_t)slots : 0; cc < c; ++cc) {
            eig_slot &sl = slot[cc % (size_t)slots];
            if (!sl.count) continue;
            CUDA_TRY(cudaEventSynchronize(sl.freed));
            CUDA_TRY(retire(sl, cc));
        }
    }
    if (kernel_ms) *kernel_ms = kms;
    clock_gettime(CLOCK_MONOTONIC, &host_t[4]);
cleanup:
    if (copy_in) cudaStreamSynchronize(copy_in);
    for (int s = 0; s < TK_EIG_MAX_SLOTS; ++s)
        if (slot[s].stream) cudaStreamSynchronize(slot[s].stream);
    if (copy_out) cudaStreamSynchronize(copy_out);
    for (int s = 0; s < TK_EIG_MAX_SLOTS; ++s) {
        eig_slot &sl = slot[s];
        if (sl.host) cudaFreeHost(sl.host);
        for (cudaEvent_t e : {sl.in0, sl.arrived, sl.k0, sl.mid, sl.k1, sl.freed})
            if (e) cudaEventDestroy(e);
        if (sl.stream) cudaStreamDestroy(sl.stream);
    }
    tk_cuda_free(dev_all);
    if (t0) cudaEventDestroy(t0);
    if (copy_in) cudaStreamDestroy(copy_in);
    if (copy_out) cudaStreamDestroy(copy_out);
    if (timeline && st == TK_OK) {
        clock_gettime(CLOCK_MONOTONIC, &host_t[5]);
        fprintf(stderr,
                "eig timeline: host set-up %.3f ms (plan and kernels %.3f, device memory %.3f, streams and events "
                "%.3f), pipeline %.3f ms, clean-up %.3f ms (%d buffers of %zu matrices)\n",
                ms_between(host_t[0], host_t[3]), ms_between(host_t[0], host_t[1]), ms_between(host_t[1], host_t[2]),
                ms_between(host_t[2], host_t[3]), ms_between(host_t[3], host_t[4]), ms_between(host_t[4], host_t[5]),
                slots, chunk);
    }
    return st;
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
    if (is_pinned(ptr)) cudaFreeHost(ptr);
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
    tk_status st = open_device(o);
    if (st != TK_OK) return st;
    const int n = o->n, dbl = o->precision == TK_PRECISION_DOUBLE;
    const size_t elem = dbl ? sizeof(double) : sizeof(float), nn = (size_t)n * (size_t)n;
    const size_t in_b = count * nn * elem, val_b = count * 2 * (size_t)n * elem;
    const int lanes = choose_lanes(o, 0);
    if (!lanes) return TK_ERR_ARGUMENT;
    plan p = make_plan(n, 0, elem, lanes);
    if ((st = check_smem(p, o->cuda_device)) != TK_OK) return st;
    pack_plan_any(dbl, &p, o->cuda_device);
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
        CUDA_TRY(err);
    }
    CUDA_TRY(prepare_kernel<double>(p));
    CUDA_TRY(prepare_kernel<float>(p));
    if (is_pinned(matrices)) {
        src = matrices; /* the caller's pinned array: no second copy of a large batch */
    } else {
        CUDA_TRY(cudaMallocHost(&h_in, in_b));
        memcpy(h_in, matrices, in_b);
        src = h_in;
    }
    CUDA_TRY(cudaMallocHost(&h_val, val_b));
    for (int i = 0; i < 6; ++i) CUDA_TRY(cudaEventCreate(&e[i]));
    /* warm-up: module load and first-launch costs stay out of the figures */
    CUDA_TRY(cudaMemcpy(d_in, src, warm * nn * elem, cudaMemcpyHostToDevice));
    CUDA_TRY(launch_any(dbl, p, n, warm, d_in, d_val, NULL, d_st, o->balance != 0, tk_eig_max_iter(o), d_scratch, 0));
    CUDA_TRY(cudaDeviceSynchronize());

    CUDA_TRY(cudaEventRecord(e[0]));
    CUDA_TRY(cudaMemcpyAsync(d_in, src, in_b, cudaMemcpyHostToDevice, 0));
    CUDA_TRY(cudaEventRecord(e[1]));
    CUDA_TRY(cudaEventRecord(e[2]));
    CUDA_TRY(launch_any(dbl, p, n, count, d_in, d_val, NULL, d_st, o->balance != 0, tk_eig_max_iter(o), d_scratch, 0));
    CUDA_TRY(cudaEventRecord(e[3]));
    CUDA_TRY(cudaEventRecord(e[4]));
    CUDA_TRY(cudaMemcpyAsync(h_val, d_val, val_b, cudaMemcpyDeviceToHost, 0));
    CUDA_TRY(cudaEventRecord(e[5]));
    CUDA_TRY(cudaEventSynchronize(e[5]));
    CUDA_TRY(cudaEventElapsedTime(&h2d, e[0], e[1]));
    CUDA_TRY(cudaEventElapsedTime(&kern, e[2], e[3]));
    CUDA_TRY(cudaEventElapsedTime(&d2h, e[4], e[5]));
    /* the copies vary by a tenth or more from one run to the next (seen at n = 25:
     * 49 to 66 ms): the median of three */
    {
        float h2d_runs[3] = {h2d}, d2h_runs[3] = {d2h};
        for (int r = 1; r < 3; ++r) {
            CUDA_TRY(cudaEventRecord(e[0]));
            CUDA_TRY(cudaMemcpyAsync(d_in, src, in_b, cudaMemcpyHostToDevice, 0));
            CUDA_TRY(cudaEventRecord(e[1]));
            CUDA_TRY(cudaMemcpyAsync(h_val, d_val, val_b, cudaMemcpyDeviceToHost, 0));
            CUDA_TRY(cudaEventRecord(e[5]));
            CUDA_TRY(cudaEventSynchronize(e[5]));
            CUDA_TRY(cudaEventElapsedTime(&h2d_runs[r], e[0], e[1]));
            CUDA_TRY(cudaEventElapsedTime(&d2h_runs[r], e[1], e[5]));
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
