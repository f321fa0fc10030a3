/* CUDA backend of FastTucker (cuFasterTucker's design on B-CSF sub-slices).
 *
 * Work unit: one warp per B-CSF sub-slice, taken from a global counter so long
 * and short sub-slices balance.  Lanes own the rank components: lane j holds
 * a(n)_{i_n}[j] (factor pass) and lane r holds q_r and C rows (both passes).
 *
 * Factor pass of mode n: B(n) sits in registers (lane j: row j, zero padded to
 * 32 or 64), q is broadcast through a per-warp shared row read as float4, so
 * v = B q is MAXR FMAs per lane; a . v is a warp-shuffle reduction.  The row
 * a(n)_{i_n} stays in registers for the whole sub-slice (read once, written
 * once).  Entries sharing their leading indices (a CSF fiber) reuse the product
 * of those C rows (the seed's shared intermediate).  A row split into S > 1
 * sub-slices adds (a - a0) / S atomically into a delta buffer; the refresh
 * kernel applies it and recomputes C(n) = A(n) B(n) (the reusable
 * intermediates).  Rows never race, so this is the same algorithm as cpu/omp.
 *
 * Core pass of mode n: the slice's C(n) row stays in registers, each entry costs
 * N-1 C rows and one reduction (prediction = C(n)[i] . q), and z_i = sum e q is
 * accumulated per sub-slice; G = A(n)^T Z is one small tiled product, then
 * B(n) += lr_b (G / nnz - lambda_b B(n)) and C(n) is refreshed.
 *
 * C rows of the small modes stay in L2 (Netflix: C(movie) and C(day) are 2.3 MB
 * and 0.3 MB); C(user) is read in slice order in the user pass.
 *
 * Several GPUs: tk_tucker_bcsf_row_split cuts each mode's sub-slices at row
 * boundaries; each device would run these kernels on its range (disjoint rows
 * of A(n)), all-gather A(n)/C(n) after the mode, and all-reduce G (J x R).
 */
#include <cuda_runtime.h>

#include <new>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cuda_memory.h"
#include "tucker_internal.h"

#define FULL_MASK 0xffffffffu
#define WARPS_PER_BLOCK 8

struct dev_mode {
    uint32_t *part_row = nullptr, *part_count = nullptr, *idx = nullptr;
    unsigned long long *part_ptr = nullptr;
    float *val = nullptr;
    unsigned long long parts = 0;
};

struct dev_state {
    int device = 0, sms = 0;
    float *a[TK_TUCKER_MAX_ORDER] = {}, *b[TK_TUCKER_MAX_ORDER] = {}, *c[TK_TUCKER_MAX_ORDER] = {};
    float *delta = nullptr, *z = nullptr, *g = nullptr;
    unsigned long long *counter = nullptr;
    dev_mode mode[TK_TUCKER_MAX_ORDER];
    cudaEvent_t start = nullptr, stop = nullptr;
};

#define CK(call)                                                                                             \
    do {                                                                                                     \
        cudaError_t err_ = (call);                                                                           \
        if (err_ != cudaSuccess)                                                                             \
            return tk_set_error(TK_ERR_CUDA, "CUDA: %s failed: %s", #call, cudaGetErrorString(err_));        \
    } while (0)

/* ---- kernels ------------------------------------------------------------------------ */

struct pass_args {
    int levels, J, R;
    const float *cother[TK_TUCKER_MAX_ORDER - 1]; /* C of the other modes, in index-column order */
    const uint32_t *part_row, *part_count, *idx;
    const unsigned long long *part_ptr;
    const float *val;
    unsigned long long parts;
    float *a;         /* A(n) */
    const float *b;   /* B(n) */
    const float *cn;  /* C(n) (core pass) */
    float *delta;     /* factor pass: changes of split rows */
    float *z;         /* core pass: z per row */
    float lr, lambda;
    unsigned long long *counter;
};

__device__ __forceinline__ float warp_sum(float x)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(FULL_MASK, x, o);
    return x;
}

/* Two sums in one pass of shuffles (independent chains interleave). */
__device__ __forceinline__ void warp_sum2(float &x, float &y)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        x += __shfl_xor_sync(FULL_MASK, x, o);
        y += __shfl_xor_sync(FULL_MASK, y, o);
    }
}

__device__ __forceinline__ unsigned long long next_part(unsigned long long *counter, int lane)
{
    unsigned long long p = 0;
    if (lane == 0) p = atomicAdd(counter, 1ull);
    return __shfl_sync(FULL_MASK, p, 0);
}

/* q for entry e (lane r holds q[rr] for r = lane + 32 rr), reusing pre (the product
 * of the first levels - 1 C rows) when those indices equal the previous entry's. */
template <int RPL>
__device__ __forceinline__ void fiber_product(const pass_args &p, unsigned long long e, unsigned long long first,
                                              int lane, float (&pre)[RPL], float (&q)[RPL])
{
    const int L = p.levels;
    const uint32_t *ix = p.idx + e * (unsigned long long)L;
    bool reuse = e > first;
    for (int k = 0; k + 1 < L && reuse; ++k) reuse = __ldg(ix + k) == __ldg(ix + k - L);
    if (!reuse) {
#pragma unroll
        for (int rr = 0; rr < RPL; ++rr) pre[rr] = 1.0f;
        for (int k = 0; k + 1 < L; ++k) {
            const float *row = p.cother[k] + (size_t)__ldg(ix + k) * (size_t)p.R;
#pragma unroll
            for (int rr = 0; rr < RPL; ++rr) {
                int r = lane + 32 * rr;
                if (r < p.R) pre[rr] *= __ldg(row + r);
            }
        }
    }
    const float *last = p.cother[L - 1] + (size_t)__ldg(ix + L - 1) * (size_t)p.R;
#pragma unroll
    for (int rr = 0; rr < RPL; ++rr) {
        int r = lane + 32 * rr;
        q[rr] = r < p.R ? pre[rr] * __ldg(last + r) : 0.0f;
    }
}

template <int JPL, int MAXR>
__global__ void __launch_bounds__(WARPS_PER_BLOCK * 32) factor_kernel(pass_args p)
{
    constexpr int RPL = MAXR / 32;
    __shared__ __align__(16) float qs[WARPS_PER_BLOCK][MAXR];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    float breg[JPL][MAXR];
#pragma unroll
    for (int jj = 0; jj < JPL; ++jj) {
        int j = lane + 32 * jj;
#pragma unroll
        for (int r = 0; r < MAXR; ++r) breg[jj][r] = (j < p.J && r < p.R) ? p.b[j * p.R + r] : 0.0f;
    }
    const float4 *q4 = reinterpret_cast<const float4 *>(qs[warp]);
    for (unsigned long long part = next_part(p.counter, lane); part < p.parts; part = next_part(p.counter, lane)) {
        const uint32_t i = p.part_row[part], S = p.part_count[part];
        const unsigned long long lo = p.part_ptr[part], hi = p.part_ptr[part + 1];
        float a[JPL], a0[JPL];
#pragma unroll
        for (int jj = 0; jj < JPL; ++jj) {
            int j = lane + 32 * jj;
            a0[jj] = a[jj] = j < p.J ? p.a[(size_t)i * p.J + j] : 0.0f;
        }
        float pre[RPL], q[RPL];
        for (unsigned long long e = lo; e < hi; ++e) {
            fiber_product<RPL>(p, e, lo, lane, pre, q);
#pragma unroll
            for (int rr = 0; rr < RPL; ++rr) qs[warp][lane + 32 * rr] = q[rr];
            __syncwarp();
            float v[JPL];
#pragma unroll
            for (int jj = 0; jj < JPL; ++jj) v[jj] = 0.0f;
#pragma unroll
            for (int r4 = 0; r4 < MAXR / 4; ++r4) {
                float4 qq = q4[r4];
#pragma unroll
                for (int jj = 0; jj < JPL; ++jj) {
                    v[jj] = fmaf(breg[jj][4 * r4 + 0], qq.x, v[jj]);
                    v[jj] = fmaf(breg[jj][4 * r4 + 1], qq.y, v[jj]);
                    v[jj] = fmaf(breg[jj][4 * r4 + 2], qq.z, v[jj]);
                    v[jj] = fmaf(breg[jj][4 * r4 + 3], qq.w, v[jj]);
                }
            }
            __syncwarp();
            float dot = 0.0f, vv = 0.0f;
#pragma unroll
            for (int jj = 0; jj < JPL; ++jj) dot = fmaf(a[jj], v[jj], dot), vv = fmaf(v[jj], v[jj], vv);
            warp_sum2(dot, vv);
            const float err = __ldg(p.val + e) - dot;
            /* The step capped at 1 / |v|^2, as on the CPU (tucker_cpu_body.h). */
            const float step = p.lr * vv > 1.0f ? 1.0f / vv : p.lr;
#pragma unroll
            for (int jj = 0; jj < JPL; ++jj) a[jj] += step * (err * v[jj] - p.lambda * a[jj]);
        }
#pragma unroll
        for (int jj = 0; jj < JPL; ++jj) {
            int j = lane + 32 * jj;
            if (j >= p.J) continue;
            if (S == 1)
                p.a[(size_t)i * p.J + j] = a[jj]; /* the row's only sub-slice: nobody else touches it */
            else
                atomicAdd(p.delta + (size_t)i * p.J + j, (a[jj] - a0[jj]) / (float)S);
        }
    }
}

template <int RPL>
__global__ void __launch_bounds__(WARPS_PER_BLOCK * 32) core_kernel(pass_args p)
{
    const int lane = threadIdx.x & 31;
    for (unsigned long long part = next_part(p.counter, lane); part < p.parts; part = next_part(p.counter, lane)) {
        const uint32_t i = p.part_row[part], S = p.part_count[part];
        const unsigned long long lo = p.part_ptr[part], hi = p.part_ptr[part + 1];
        float cn[RPL], z[RPL], pre[RPL], q[RPL];
#pragma unroll
        for (int rr = 0; rr < RPL; ++rr) {
            int r = lane + 32 * rr;
            cn[rr] = r < p.R ? p.cn[(size_t)i * p.R + r] : 0.0f;
            z[rr] = 0.0f;
        }
        for (unsigned long long e = lo; e < hi; ++e) {
            fiber_product<RPL>(p, e, lo, lane, pre, q);
            float dot = 0.0f;
#pragma unroll
            for (int rr = 0; rr < RPL; ++rr) dot = fmaf(cn[rr], q[rr], dot);
            const float err = __ldg(p.val + e) - warp_sum(dot);
#pragma unroll
            for (int rr = 0; rr < RPL; ++rr) z[rr] = fmaf(err, q[rr], z[rr]);
        }
#pragma unroll
        for (int rr = 0; rr < RPL; ++rr) {
            int r = lane + 32 * rr;
            if (r >= p.R) continue;
            if (S == 1)
                p.z[(size_t)i * p.R + r] = z[rr];
            else
                atomicAdd(p.z + (size_t)i * p.R + r, z[rr]);
        }
    }
}

/* G += A^T Z over a block of rows: tiles of 32 rows in shared memory, each
 * thread owning up to 16 of the J x R outputs. */
#define GRAM_ROWS_PER_BLOCK 4096
__global__ void __launch_bounds__(256) gram_kernel(const float *A, const float *Z, uint32_t rows, int J, int R, float *G)
{
    __shared__ float as[32][TK_TUCKER_MAX_RANK], zs[32][TK_TUCKER_MAX_RANK];
    const int outputs = J * R, t = threadIdx.x;
    float acc[16];
#pragma unroll
    for (int k = 0; k < 16; ++k) acc[k] = 0.0f;
    size_t lo = (size_t)blockIdx.x * GRAM_ROWS_PER_BLOCK, hi = lo + GRAM_ROWS_PER_BLOCK;
    if (hi > rows) hi = rows;
    for (size_t base = lo; base < hi; base += 32) {
        int n = (int)(hi - base < 32 ? hi - base : 32);
        for (int k = t; k < 32 * TK_TUCKER_MAX_RANK; k += 256) {
            int row = k / TK_TUCKER_MAX_RANK, col = k % TK_TUCKER_MAX_RANK;
            as[row][col] = row < n && col < J ? A[(base + row) * J + col] : 0.0f;
            zs[row][col] = row < n && col < R ? Z[(base + row) * R + col] : 0.0f;
        }
        __syncthreads();
        for (int row = 0; row < n; ++row)
#pragma unroll
            for (int k = 0; k < 16; ++k) {
                int o = t + 256 * k;
                if (o < outputs) acc[k] = fmaf(as[row][o / R], zs[row][o % R], acc[k]);
            }
        __syncthreads();
    }
#pragma unroll
    for (int k = 0; k < 16; ++k) {
        int o = t + 256 * k;
        if (o < outputs) atomicAdd(G + o, acc[k]);
    }
}

__global__ void update_core_kernel(float *B, const float *G, int count, float lr, float inv_nnz, float lambda)
{
    for (int k = threadIdx.x; k < count; k += blockDim.x) B[k] += lr * (G[k] * inv_nnz - lambda * B[k]);
}

/* Warp per row: apply (and clear) the split rows' deltas, then C[i] = A[i] B. */
__global__ void __launch_bounds__(WARPS_PER_BLOCK * 32)
    refresh_kernel(float *A, float *delta, const float *B, float *C, uint32_t rows, int J, int R)
{
    extern __shared__ float bs[];
    for (int k = threadIdx.x; k < J * R; k += blockDim.x) bs[k] = B[k];
    __syncthreads();
    const int lane = threadIdx.x & 31;
    const size_t warps = (size_t)gridDim.x * WARPS_PER_BLOCK;
    for (size_t i = (size_t)blockIdx.x * WARPS_PER_BLOCK + (threadIdx.x >> 5); i < rows; i += warps) {
        float a[2];
        for (int jj = 0; jj < 2; ++jj) {
            int j = lane + 32 * jj;
            a[jj] = 0.0f;
            if (j < J) {
                a[jj] = A[i * J + j];
                if (delta) {
                    float d = delta[i * J + j];
                    if (d != 0.0f) {
                        a[jj] += d;
                        A[i * J + j] = a[jj];
                        delta[i * J + j] = 0.0f;
                    }
                }
            }
        }
        float c[2] = {0.0f, 0.0f};
        for (int j = 0; j < J; ++j) {
            float aj = __shfl_sync(FULL_MASK, a[j >> 5], j & 31);
            for (int rr = 0; rr < 2; ++rr) {
                int r = lane + 32 * rr;
                if (r < R) c[rr] = fmaf(aj, bs[j * R + r], c[rr]);
            }
        }
        for (int rr = 0; rr < 2; ++rr) {
            int r = lane + 32 * rr;
            if (r < R) C[i * R + r] = c[rr];
        }
    }
}

/* ---- host side ------------------------------------------------------------------------ */

static dev_state *state(const tk_tucker_solver *s) { return static_cast<dev_state *>(s->cuda); }

/* Device bytes of an array of count T (16 bytes of slack keep empty arrays allocatable). */
template <typename T> static size_t dev_bytes(size_t count) { return count * sizeof(T) + 16; }

/* Everything tk_tucker_cuda_create puts on the device: the model (A, B, C of every mode),
 * every mode's B-CSF storage, and the pass scratch.  None of it is chunked. */
static size_t resident_bytes(const tk_tucker_solver *s)
{
    const size_t J = (size_t)s->rank_j, R = (size_t)s->rank_r;
    size_t bytes = 0, maxdim = 0;
    for (int n = 0; n < s->order; ++n) {
        const size_t rows = s->dims[n];
        const tk_tucker_bcsf *b = &s->bcsf[n];
        if (rows > maxdim) maxdim = rows;
        bytes += dev_bytes<float>(rows * J) + dev_bytes<float>(J * R) + dev_bytes<float>(rows * R);
        bytes += dev_bytes<unsigned long long>(b->num_parts + 1) + 2 * dev_bytes<uint32_t>(b->num_parts);
        bytes += dev_bytes<uint32_t>(b->nnz * (size_t)(s->order - 1)) + dev_bytes<float>(b->nnz);
    }
    return bytes + dev_bytes<float>(maxdim * J) + dev_bytes<float>(maxdim * R) + J * R * sizeof(float) +
           sizeof(unsigned long long);
}

/* The whole model must be resident: a refusal names all of it, not the one buffer that
 * did not fit. */
static tk_status out_of_memory(const tk_tucker_solver *s)
{
    char what[192];
    snprintf(what, sizeof what,
             "the resident model and tensor (order %d, ranks %d and %d, %zu entries; FastTucker does not chunk)",
             s->order, s->rank_j, s->rank_r, s->nnz);
    return tk_cuda_out_of_memory("FastTucker on CUDA", what, resident_bytes(s));
}

static tk_status dev_alloc(const tk_tucker_solver *s, void **dst, size_t bytes)
{
    cudaError_t err = tk_cuda_malloc(dst, bytes);
    if (err == cudaErrorMemoryAllocation) return out_of_memory(s);
    CK(err);
    return TK_OK;
}

template <typename T>
static tk_status upload(const tk_tucker_solver *s, T **dst, const T *src, size_t count)
{
    tk_status st = dev_alloc(s, reinterpret_cast<void **>(dst), dev_bytes<T>(count));
    if (st != TK_OK) return st;
    if (count) CK(cudaMemcpy(*dst, src, count * sizeof(T), cudaMemcpyHostToDevice));
    return TK_OK;
}

static int refresh_blocks(const dev_state *d, uint32_t rows)
{
    size_t need = ((size_t)rows + WARPS_PER_BLOCK - 1) / WARPS_PER_BLOCK;
    size_t cap = (size_t)d->sms * 16;
    return (int)(need < cap ? (need ? need : 1) : cap);
}

static tk_status refresh(const tk_tucker_solver *s, int n, bool with_delta)
{
    dev_state *d = state(s);
    refresh_kernel<<<refresh_blocks(d, s->dims[n]), WARPS_PER_BLOCK * 32, (size_t)s->rank_j * s->rank_r * sizeof(float)>>>(
        d->a[n], with_delta ? d->delta : nullptr, d->b[n], d->c[n], s->dims[n], s->rank_j, s->rank_r);
    CK(cudaGetLastError());
    return TK_OK;
}

extern "C" tk_status tk_tucker_cuda_create(tk_tucker_solver *s, const tk_tucker_model *m)
{
    const tk_status usable = tk_cuda_require_device(s->opts.cuda_device);
    if (usable != TK_OK) return usable;
    dev_state *d = new (std::nothrow) dev_state;
    if (!d) return tk_set_error(TK_ERR_MEMORY, "cannot allocate the CUDA state");
    s->cuda = d;
    d->device = s->opts.cuda_device;
    CK(cudaSetDevice(d->device));
    CK(cudaDeviceGetAttribute(&d->sms, cudaDevAttrMultiProcessorCount, d->device));
    /* Refused up front when it cannot fit, before any upload; a partial set-up is freed
     * by tk_tucker_cuda_destroy (the front end calls it on every failure). */
    size_t free_b = 0, total_b = 0;
    tk_status st = tk_cuda_memory_get(&free_b, &total_b);
    if (st != TK_OK) return st;
    if (resident_bytes(s) > free_b) return out_of_memory(s);
    const size_t J = (size_t)s->rank_j, R = (size_t)s->rank_r;
    size_t maxdim = 0;
    for (int n = 0; n < s->order; ++n) {
        size_t rows = s->dims[n];
        if (rows > maxdim) maxdim = rows;
        if ((st = upload(s, &d->a[n], m->a[n], rows * J)) != TK_OK) return st;
        if ((st = upload(s, &d->b[n], m->b[n], J * R)) != TK_OK) return st;
        if ((st = dev_alloc(s, (void **)&d->c[n], dev_bytes<float>(rows * R))) != TK_OK) return st;
        const tk_tucker_bcsf *b = &s->bcsf[n];
        dev_mode &dm = d->mode[n];
        dm.parts = b->num_parts;
        unsigned long long *ptr = (unsigned long long *)malloc((b->num_parts + 1) * sizeof *ptr);
        if (!ptr) return tk_set_error(TK_ERR_MEMORY, "out of memory");
        for (size_t k = 0; k <= b->num_parts; ++k) ptr[k] = b->part_ptr[k];
        st = upload(s, &dm.part_ptr, ptr, b->num_parts + 1);
        free(ptr);
        if (st != TK_OK) return st;
        if ((st = upload(s, &dm.part_row, b->part_row, b->num_parts)) != TK_OK) return st;
        if ((st = upload(s, &dm.part_count, b->part_count, b->num_parts)) != TK_OK) return st;
        if ((st = upload(s, &dm.idx, b->idx, b->nnz * (size_t)(s->order - 1))) != TK_OK) return st;
        if ((st = upload(s, &dm.val, b->val, b->nnz)) != TK_OK) return st;
    }
    if ((st = dev_alloc(s, (void **)&d->delta, dev_bytes<float>(maxdim * J))) != TK_OK) return st;
    CK(cudaMemset(d->delta, 0, maxdim * J * sizeof(float)));
    if ((st = dev_alloc(s, (void **)&d->z, dev_bytes<float>(maxdim * R))) != TK_OK) return st;
    if ((st = dev_alloc(s, (void **)&d->g, J * R * sizeof(float))) != TK_OK) return st;
    if ((st = dev_alloc(s, (void **)&d->counter, sizeof(unsigned long long))) != TK_OK) return st;
    CK(cudaEventCreate(&d->start));
    CK(cudaEventCreate(&d->stop));
    for (int n = 0; n < s->order; ++n)
        if ((st = refresh(s, n, false)) != TK_OK) return st;
    CK(cudaDeviceSynchronize());
    /* The device copy is what the passes use; the host B-CSF is no longer needed. */
    for (int n = 0; n < s->order; ++n) tk_tucker_bcsf_free(&s->bcsf[n]);
    return TK_OK;
}

extern "C" void tk_tucker_cuda_destroy(tk_tucker_solver *s)
{
    dev_state *d = state(s);
    if (!d) return;
    cudaSetDevice(d->device);
    for (int n = 0; n < TK_TUCKER_MAX_ORDER; ++n) {
        tk_cuda_free(d->a[n]);
        tk_cuda_free(d->b[n]);
        tk_cuda_free(d->c[n]);
        tk_cuda_free(d->mode[n].part_row);
        tk_cuda_free(d->mode[n].part_count);
        tk_cuda_free(d->mode[n].part_ptr);
        tk_cuda_free(d->mode[n].idx);
        tk_cuda_free(d->mode[n].val);
    }
    tk_cuda_free(d->delta);
    tk_cuda_free(d->z);
    tk_cuda_free(d->g);
    tk_cuda_free(d->counter);
    if (d->start) cudaEventDestroy(d->start);
    if (d->stop) cudaEventDestroy(d->stop);
    delete d;
    s->cuda = nullptr;
}

static pass_args make_args(const tk_tucker_solver *s, int n)
{
    const dev_state *d = state(s);
    const dev_mode &dm = d->mode[n];
    pass_args p;
    memset(&p, 0, sizeof p);
    p.levels = s->order - 1;
    p.J = s->rank_j;
    p.R = s->rank_r;
    for (int k = 0, m = 0; m < s->order; ++m)
        if (m != n) p.cother[k++] = d->c[m];
    p.part_row = dm.part_row;
    p.part_count = dm.part_count;
    p.part_ptr = dm.part_ptr;
    p.idx = dm.idx;
    p.val = dm.val;
    p.parts = dm.parts;
    p.a = d->a[n];
    p.b = d->b[n];
    p.cn = d->c[n];
    p.delta = d->delta;
    p.z = d->z;
    p.counter = d->counter;
    return p;
}

/* Enough resident warps to cover the GPU; each loops over sub-slices. */
static int pass_blocks(const dev_state *d, unsigned long long parts)
{
    unsigned long long need = (parts + WARPS_PER_BLOCK - 1) / WARPS_PER_BLOCK;
    unsigned long long cap = (unsigned long long)d->sms * 8;
    return (int)(need < cap ? (need ? need : 1) : cap);
}

extern "C" tk_status tk_tucker_cuda_factors(tk_tucker_solver *s, double *ms)
{
    dev_state *d = state(s);
    CK(cudaSetDevice(d->device));
    CK(cudaEventRecord(d->start));
    for (int n = 0; n < s->order; ++n) {
        pass_args p = make_args(s, n);
        p.lr = (float)s->opts.lr_a;
        p.lambda = (float)s->opts.lambda_a;
        CK(cudaMemsetAsync(d->counter, 0, sizeof *d->counter));
        int blocks = pass_blocks(d, p.parts), threads = WARPS_PER_BLOCK * 32;
        bool wide_j = s->rank_j > 32, wide_r = s->rank_r > 32;
        if (!wide_j && !wide_r)
            factor_kernel<1, 32><<<blocks, threads>>>(p);
        else if (!wide_j)
            factor_kernel<1, 64><<<blocks, threads>>>(p);
        else if (!wide_r)
            factor_kernel<2, 32><<<blocks, threads>>>(p);
        else
            factor_kernel<2, 64><<<blocks, threads>>>(p);
        CK(cudaGetLastError());
        tk_status st = refresh(s, n, true);
        if (st != TK_OK) return st;
    }
    CK(cudaEventRecord(d->stop));
    CK(cudaEventSynchronize(d->stop));
    float t = 0;
    CK(cudaEventElapsedTime(&t, d->start, d->stop));
    *ms = t;
    return TK_OK;
}

extern "C" tk_status tk_tucker_cuda_core(tk_tucker_solver *s, double *ms)
{
    dev_state *d = state(s);
    CK(cudaSetDevice(d->device));
    CK(cudaEventRecord(d->start));
    const int J = s->rank_j, R = s->rank_r;
    for (int n = 0; n < s->order; ++n) {
        pass_args p = make_args(s, n);
        CK(cudaMemsetAsync(d->counter, 0, sizeof *d->counter));
        CK(cudaMemsetAsync(d->z, 0, (size_t)s->dims[n] * R * sizeof(float)));
        CK(cudaMemsetAsync(d->g, 0, (size_t)J * R * sizeof(float)));
        int blocks = pass_blocks(d, p.parts), threads = WARPS_PER_BLOCK * 32;
        if (R > 32)
            core_kernel<2><<<blocks, threads>>>(p);
        else
            core_kernel<1><<<blocks, threads>>>(p);
        CK(cudaGetLastError());
        unsigned gram_blocks = (unsigned)((s->dims[n] + GRAM_ROWS_PER_BLOCK - 1) / GRAM_ROWS_PER_BLOCK);
        gram_kernel<<<gram_blocks, 256>>>(d->a[n], d->z, s->dims[n], J, R, d->g);
        CK(cudaGetLastError());
        update_core_kernel<<<1, 1024>>>(d->b[n], d->g, J * R, (float)s->opts.lr_b,
                                        s->nnz ? (float)(1.0 / (double)s->nnz) : 0.0f, (float)s->opts.lambda_b);
        CK(cudaGetLastError());
        tk_status st = refresh(s, n, false);
        if (st != TK_OK) return st;
    }
    CK(cudaEventRecord(d->stop));
    CK(cudaEventSynchronize(d->stop));
    float t = 0;
    CK(cudaEventElapsedTime(&t, d->start, d->stop));
    *ms = t;
    return TK_OK;
}

extern "C" tk_status tk_tucker_cuda_model(const tk_tucker_solver *s, tk_tucker_model *out)
{
    const dev_state *d = state(s);
    CK(cudaSetDevice(d->device));
    for (int n = 0; n < s->order; ++n) {
        CK(cudaMemcpy(out->a[n], d->a[n], (size_t)s->dims[n] * s->rank_j * sizeof(float), cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(out->b[n], d->b[n], (size_t)s->rank_j * s->rank_r * sizeof(float), cudaMemcpyDeviceToHost));
    }
    return TK_OK;
}
