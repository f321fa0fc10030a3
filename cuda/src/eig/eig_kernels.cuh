/* The kernel layer of the CUDA eigensolver: the kernels over the device layer
 * (eig_device.cuh), each templated on its shape (precision, lanes per matrix G, rows per
 * lane E: the policy of a launch), and the pickers that map a run-time layout to an
 * instantiation.
 *   eig_kernel:         1..64 threads per matrix in shared memory (the shared body, or
 *                       values only on a warp's lanes the GPU's own QR);
 *   eig_small_kernel:   eigenvalues only, a thread per matrix in registers (eig_cuda_small.cuh);
 *   eig_ls_*_kernel:    eigenvalues only, the lockstep reduction and band QR pair
 *                       (eig_cuda_lockstep.cuh).
 * The layouts are eig_layout.cuh's, the launches eig_cuda.cu's.  Included once, by eig_cuda.cu. */
#ifndef TK_EIG_KERNELS_CUH
#define TK_EIG_KERNELS_CUH

#include "eig_device.cuh"
#include "eig_cuda_lockstep.cuh"
#include "eig_cuda_small.cuh"

/* How a batch of order n is laid out on the device: `lanes` threads per matrix
 * (1, 2, 4, 8, 16, 32 or 64), `groups` matrices per block. */
struct eig_layout {
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
template <typename R> static qr_fn<R> lockstep_qr(const eig_layout &p)
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

template <typename R>
__global__ void eig_kernel(eig_layout p, int n, size_t count, const R *__restrict__ a, R *__restrict__ values,
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

#endif
