/* The device merge of per-start SS-HOPM results into distinct eigenpairs: one thread a
 * tensor merges its converged starts in start order (the host's first-match rule) and sorts
 * its pairs by lambda, a one-block scan turns the pair counts into offsets, and one thread
 * a pair writes it out with its stability.  Compiled with -fmad=false (CMakeLists.txt): the
 * double arithmetic of sshopm_merge_hd.h must not be contracted into FMAs, so that every
 * distance, unit vector and Hessian eigenvalue is the host's bit for bit. */
#include <cuda_runtime.h>

#include "common/tk_hd.h"
#include "sshopm_merge_cuda.h"
#include "common/precision_double.h"
#include "sshopm_math.h"
#include "common/precision_end.h"
#include "sshopm_merge_hd.h"

/* The device writes tk_stability values that the host reads as its own enum. */
static_assert(sizeof(tk_stability) == sizeof(int), "tk_stability is an int on the host and the device");

int tk_sshopm_merge_max_dim(void) { return TK_KERNEL_MAX_DIM; }

__global__ void merge_to_double_kernel(const float *in, double *out, size_t count)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += (size_t)gridDim.x * blockDim.x)
        out[i] = (double)in[i];
}

/* One thread a tensor: its converged starts merged in start order, each into the first pair
 * (in the order pairs were made) within merge_tol, else a new pair; then the pairs ordered
 * by lambda, descending, ties in the order they were made (a stable insertion sort: the
 * host's qsort key (lambda, first start)).  offset[t] gets the tensor's pair count. */
template <typename R, int NMAX>
__global__ void merge_tensors_kernel(tk_merge_chunk b, int order, int dim, int S, size_t T, double merge_tol)
{
    const int n = NMAX == 3 ? 3 : dim; /* a constant for dimension 3: x and y stay in registers */
    const size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= T) return;
    const int dbl = sizeof(R) == sizeof(double);
    const R *lambda = (const R *)b.lambda;
    double x[NMAX], y[NMAX];
    int P = 0;
    for (int s = 0; s < S; ++s) {
        const size_t slot = t * (size_t)S + (size_t)s;
        if (!b.converged[slot]) continue;
        tk_merge_unit(n, order, dbl, b.x, slot, x);
        int match = P;
        for (int p = 0; p < P; ++p) {
            for (int i = 0; i < n; ++i) y[i] = b.unit[((size_t)p * n + i) * T + t];
            if (tk_merge_same(n, order, x, y, merge_tol)) {
                match = p;
                break;
            }
        }
        if (match < P) {
            ++b.cnt[(size_t)match * T + t];
            continue;
        }
        for (int i = 0; i < n; ++i) b.unit[((size_t)P * n + i) * T + t] = x[i];
        b.rep[(size_t)P * T + t] = s;
        b.cnt[(size_t)P * T + t] = 1;
        ++P;
    }
    for (int p = 0; p < P; ++p) {
        const int v = p;
        const double key = (double)lambda[t * S + b.rep[(size_t)v * T + t]];
        int j = p - 1;
        while (j >= 0) {
            const int u = b.ord[(size_t)j * T + t];
            if (!((double)lambda[t * S + b.rep[(size_t)u * T + t]] < key)) break;
            b.ord[(size_t)(j + 1) * T + t] = u;
            --j;
        }
        b.ord[(size_t)(j + 1) * T + t] = v;
    }
    b.offset[t] = (unsigned long long)P;
}

/* Exclusive scan of the T pair counts in offset[0 .. T) in place, offset[T] the total: one
 * block, each thread a contiguous run (a chunk is at most a few hundred thousand tensors). */
#define TK_MERGE_SCAN_THREADS 1024
__global__ void __launch_bounds__(TK_MERGE_SCAN_THREADS) merge_scan_kernel(unsigned long long *offset, size_t T)
{
    __shared__ unsigned long long sums[TK_MERGE_SCAN_THREADS];
    const size_t per = (T + TK_MERGE_SCAN_THREADS - 1) / TK_MERGE_SCAN_THREADS;
    const size_t lo = threadIdx.x * per < T ? threadIdx.x * per : T, hi = lo + per < T ? lo + per : T;
    unsigned long long mine = 0;
    for (size_t i = lo; i < hi; ++i) mine += offset[i];
    sums[threadIdx.x] = mine;
    __syncthreads();
    for (int step = 1; step < TK_MERGE_SCAN_THREADS; step *= 2) {
        const unsigned long long add = threadIdx.x >= (unsigned)step ? sums[threadIdx.x - step] : 0;
        __syncthreads();
        sums[threadIdx.x] += add;
        __syncthreads();
    }
    unsigned long long run = sums[threadIdx.x] - mine; /* exclusive */
    for (size_t i = lo; i < hi; ++i) {
        const unsigned long long c = offset[i];
        offset[i] = run;
        run += c;
    }
    if (threadIdx.x == TK_MERGE_SCAN_THREADS - 1) offset[T] = sums[threadIdx.x];
}

/* One thread a pair (grid-stride over offset[T] pairs): its tensor found by binary search
 * in the offsets, its fields copied out, its stability classified in double from A x^(m-2)
 * exactly as tk_sym_stability_d does. */
template <typename R, int NMAX>
__global__ void merge_compact_kernel(tk_merge_chunk b, int order, int n, int S, int K, size_t T, size_t first_tensor,
                                     double stability_tol)
{
    const unsigned long long total = b.offset[T];
    const R *lambda = (const R *)b.lambda;
    double x[NMAX], m2[NMAX * NMAX], work[2 * NMAX * NMAX + NMAX], eig[NMAX];
    int index[TK_KERNEL_MAX_ORDER], count[NMAX];
    for (unsigned long long idx = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
         idx += (unsigned long long)gridDim.x * blockDim.x) {
        size_t lo = 0, hi = T; /* the last t with offset[t] <= idx */
        while (hi - lo > 1) {
            const size_t mid = lo + (hi - lo) / 2;
            if (b.offset[mid] <= idx) lo = mid;
            else hi = mid;
        }
        const size_t t = lo;
        const int p = (int)(idx - b.offset[t]);
        const int q = b.ord[(size_t)p * T + t];
        const int r = b.rep[(size_t)q * T + t];
        const double lam = (double)lambda[t * S + r];
        for (int i = 0; i < n; ++i) {
            x[i] = b.unit[((size_t)q * n + i) * T + t];
            b.pair_x[idx * n + i] = x[i];
        }
        b.tensor[idx] = first_tensor + t;
        b.pair_lambda[idx] = lam;
        b.num_starts[idx] = b.cnt[(size_t)q * T + t];
        for (int e = 0; e < n * n; ++e) m2[e] = 0;
        tk_sym_hd_axm2(order, n, b.packed_d + t * (size_t)K, x, m2, index, count);
        b.stability[idx] = tk_merge_stability_of_m2(order, n, m2, x, lam, stability_tol, work, eig);
    }
}

template <typename R, int NMAX>
static cudaError_t enqueue(const tk_merge_chunk &b, int order, int n, int S, size_t T, size_t first_tensor,
                           double merge_tol, int sm_count, cudaStream_t stream)
{
    const int K = (int)tk_sym_num_unique(order, n);
    const int dbl = sizeof(R) == sizeof(double);
    if (!dbl) {
        const size_t count = T * (size_t)K;
        const unsigned blocks = (unsigned)((count + 255) / 256 < (size_t)sm_count * 8 ? (count + 255) / 256
                                                                                      : (size_t)sm_count * 8);
        merge_to_double_kernel<<<blocks, 256, 0, stream>>>((const float *)b.packed, b.packed_d, count);
    }
    const int block = 128;
    merge_tensors_kernel<R, NMAX><<<(unsigned)((T + block - 1) / block), block, 0, stream>>>(b, order, n, S, T,
                                                                                          merge_tol);
    merge_scan_kernel<<<1, TK_MERGE_SCAN_THREADS, 0, stream>>>(b.offset, T);
    merge_compact_kernel<R, NMAX><<<(unsigned)sm_count * 8, 128, 0, stream>>>(b, order, n, S, K, T, first_tensor,
                                                                             tk_merge_stability_tol(dbl));
    return cudaGetLastError();
}

cudaError_t tk_sshopm_merge_enqueue(const tk_merge_chunk &b, int order, int dim, int num_starts, int dbl, size_t T,
                                    size_t first_tensor, double merge_tol, int sm_count, cudaStream_t stream)
{
    if (T == 0) return cudaSuccess;
    if (dim > TK_KERNEL_MAX_DIM || order > TK_KERNEL_MAX_ORDER) return cudaErrorInvalidValue;
    if (merge_tol <= 0) merge_tol = tk_merge_default_tol(dbl);
    /* the stack arrays sized for the dimension: a thread's local memory is reserved for every
     * thread the GPU can hold, so dimension 3 must not pay for 16 */
    if (dim == 3) {
        if (dbl) return enqueue<double, 3>(b, order, dim, num_starts, T, first_tensor, merge_tol, sm_count, stream);
        return enqueue<float, 3>(b, order, dim, num_starts, T, first_tensor, merge_tol, sm_count, stream);
    }
    if (dim <= 8) {
        if (dbl) return enqueue<double, 8>(b, order, dim, num_starts, T, first_tensor, merge_tol, sm_count, stream);
        return enqueue<float, 8>(b, order, dim, num_starts, T, first_tensor, merge_tol, sm_count, stream);
    }
    if (dbl) return enqueue<double, TK_KERNEL_MAX_DIM>(b, order, dim, num_starts, T, first_tensor, merge_tol, sm_count,
                                                       stream);
    return enqueue<float, TK_KERNEL_MAX_DIM>(b, order, dim, num_starts, T, first_tensor, merge_tol, sm_count, stream);
}
