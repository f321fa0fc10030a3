/* Fused KL updates of a 3-way PARAFAC model (X^_ijk = sum_a A_ia B_ja C_ka) on the
 * GPU: one pass over X per factor update computes X^, the ratio X / X^ and its
 * contraction with the other two factors entry by entry, so neither X^ nor X / X^
 * is ever stored.
 *
 * Layout of a pass: a block walks a contiguous range of fibers X[i, j, :], one
 * thread per k (coalesced reads of X), C[k, :] held in that thread's registers for
 * the whole pass.  For the update of C each thread accumulates its own row of the
 * numerator; for A (B) the fibers are walked with i (j) outermost, so a block's
 * per-thread sums belong to one row until the row changes, when the block reduces
 * them and adds them to the numerator.  Unmasked, the denominator D(1) is the
 * product of the other factors' column sums. */
#include "pltf_cuda_internal.h"

#define FIBERS_PER_STAGE 8
#define XHAT_FLOOR 1e-30f

template <int MAXR>
__device__ void block_flush(float (&acc)[MAXR], int R, float *red, float *target)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
#pragma unroll
    for (int a = 0; a < MAXR; ++a) {
        float v = acc[a];
        for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
        if (lane == 0) red[warp * MAXR + a] = v;
        acc[a] = 0;
    }
    __syncthreads();
    for (int a = threadIdx.x; a < R; a += blockDim.x) {
        float s = 0;
        for (int w = 0; w < warps; ++w) s += red[w * MAXR + a];
        atomicAdd(&target[a], s);
    }
    __syncthreads();
}

/* MODE: the factor updated (0: A over i, 1: B over j, 2: C over k). */
template <int MAXR, int MODE, bool MASKED>
__global__ void __launch_bounds__(256, MAXR <= 32 ? 2 : 1) kl_parafac_pass(const float *__restrict__ x, const float *__restrict__ mask,
                                                         const float *__restrict__ A, const float *__restrict__ B,
                                                         const float *__restrict__ C, int I, int J, int K, int R,
                                                         long long fibers_per_block, float *num, float *den)
{
    extern __shared__ float smem[];
    float *P = smem;                                /* per staged fiber: the row factor (or A*B for MODE 2) */
    float *Q = P + FIBERS_PER_STAGE * MAXR;         /* per staged fiber: the other factor */
    float *red = Q + FIBERS_PER_STAGE * MAXR;       /* block reductions */
    const int t = threadIdx.x;
    const bool active = t < K;
    float ck[MAXR], acc[MAXR], dacc[MAXR];
#pragma unroll
    for (int a = 0; a < MAXR; ++a) ck[a] = active && a < R ? C[(size_t)t * R + a] : 0.0f, acc[a] = 0.0f, dacc[a] = 0.0f;
    const long long F = (long long)I * J, f0 = blockIdx.x * fibers_per_block;
    const long long f1 = f0 + fibers_per_block < F ? f0 + fibers_per_block : F;
    int row = -1;
    for (long long fb = f0; fb < f1; fb += FIBERS_PER_STAGE) {
        const int nf = (int)(f1 - fb < FIBERS_PER_STAGE ? f1 - fb : FIBERS_PER_STAGE);
        /* The stage's data first, so that its loads are in flight together;
         * an unobserved entry's x is never read. */
        float xs[FIBERS_PER_STAGE];
#pragma unroll
        for (int s = 0; s < FIBERS_PER_STAGE; ++s) {
            xs[s] = -1.0f; /* marks "skip": observed data is never negative */
            const long long f = fb + s;
            if (active && s < nf) {
                const int i = MODE == 1 ? (int)(f % I) : (int)(f / J), j = MODE == 1 ? (int)(f / I) : (int)(f % J);
                const size_t off = ((size_t)i * J + j) * K + t;
                if (!MASKED || mask[off] != 0.0f) xs[s] = x[off];
            }
        }
        __syncthreads();
        /* Rows past R are zero: the unrolled loops below run to MAXR. */
        for (int e = t; e < nf * MAXR; e += blockDim.x) {
            const int s = e / MAXR, a = e - s * MAXR;
            const long long f = fb + s;
            const int i = MODE == 1 ? (int)(f % I) : (int)(f / J), j = MODE == 1 ? (int)(f / I) : (int)(f % J);
            const float ai = a < R ? A[(size_t)i * R + a] : 0.0f, bj = a < R ? B[(size_t)j * R + a] : 0.0f;
            if (MODE == 2) P[e] = ai * bj;
            else if (MODE == 0) P[e] = ai, Q[e] = bj;
            else P[e] = bj, Q[e] = ai;
        }
        __syncthreads();
#pragma unroll
        for (int s = 0; s < FIBERS_PER_STAGE; ++s) {
            if (s >= nf) break;
            if (MODE != 2) {
                const long long f = fb + s;
                const int r = MODE == 0 ? (int)(f / J) : (int)(f / I);
                if (r != row) { /* uniform across the block: every thread takes this branch */
                    if (row >= 0) {
                        block_flush<MAXR>(acc, R, red, num + (size_t)row * R);
                        if constexpr (MASKED) block_flush<MAXR>(dacc, R, red, den + (size_t)row * R);
                    }
                    row = r;
                }
            }
            const float xv = xs[s];
            if (xv < 0.0f) continue;
            float w[MAXR], xhat = 0.0f;
            const float *p = P + s * MAXR, *q = Q + s * MAXR;
#pragma unroll
            for (int a = 0; a < MAXR; ++a) {
                if (MODE == 2) {
                    w[a] = p[a];
                    xhat = fmaf(w[a], ck[a], xhat);
                } else {
                    w[a] = q[a] * ck[a];
                    xhat = fmaf(p[a], w[a], xhat);
                }
            }
            const float ratio = xv / fmaxf(xhat, XHAT_FLOOR);
#pragma unroll
            for (int a = 0; a < MAXR; ++a) {
                acc[a] = fmaf(ratio, w[a], acc[a]);
                if constexpr (MASKED) dacc[a] += w[a];
            }
        }
    }
    if (MODE == 2) {
        if (active)
#pragma unroll
            for (int a = 0; a < MAXR; ++a)
                if (a < R) {
                    atomicAdd(&num[(size_t)t * R + a], acc[a]);
                    if constexpr (MASKED) atomicAdd(&den[(size_t)t * R + a], dacc[a]);
                }
    } else if (row >= 0) {
        block_flush<MAXR>(acc, R, red, num + (size_t)row * R);
        if constexpr (MASKED) block_flush<MAXR>(dacc, R, red, den + (size_t)row * R);
    }
}

/* den[a] = (sum_p U[p, a]) (sum_q V[q, a]): D(1) of an unmasked update, the same for every row. */
__global__ void colsum_product(const float *__restrict__ U, int nu, const float *__restrict__ V, int nv, int R,
                               float *den)
{
    for (int a = threadIdx.x; a < R; a += blockDim.x) {
        float su = 0, sv = 0;
        for (int p = 0; p < nu; ++p) su += U[(size_t)p * R + a];
        for (int q = 0; q < nv; ++q) sv += V[(size_t)q * R + a];
        den[a] = su * sv;
    }
}

__global__ void fused_apply(float *Z, const float *__restrict__ num, const float *__restrict__ den, int rows, int R,
                            int den_per_row)
{
    const size_t n = (size_t)rows * R;
    for (size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x; e < n; e += (size_t)gridDim.x * blockDim.x) {
        const float d = den[den_per_row ? e : e % R];
        if (d > 0.0f) Z[e] *= num[e] / d;
    }
}

template <int MAXR, int MODE, bool MASKED>
static void launch(unsigned blocks, unsigned threads, size_t shmem, const float *x, const float *mask, const float *A,
                   const float *B, const float *C, int I, int J, int K, int R, long long per_block, float *num,
                   float *den)
{
    kl_parafac_pass<MAXR, MODE, MASKED><<<blocks, threads, shmem>>>(x, mask, A, B, C, I, J, K, R, per_block, num, den);
}

template <int MAXR>
static void launch_mode(int mode, bool masked, unsigned blocks, unsigned threads, size_t shmem, const float *x,
                        const float *mask, const float *A, const float *B, const float *C, int I, int J, int K, int R,
                        long long per_block, float *num, float *den)
{
#define TK_LAUNCH(MODE, M) launch<MAXR, MODE, M>(blocks, threads, shmem, x, mask, A, B, C, I, J, K, R, per_block, num, den)
    if (mode == 0) masked ? TK_LAUNCH(0, true) : TK_LAUNCH(0, false);
    else if (mode == 1) masked ? TK_LAUNCH(1, true) : TK_LAUNCH(1, false);
    else masked ? TK_LAUNCH(2, true) : TK_LAUNCH(2, false);
#undef TK_LAUNCH
}

tk_status tk_pltf_cuda_fused_update(tk_pltf_engine *e, const tk_pltf_model *m, tk_pltf_divergence d, int factor,
                                    void *const *factors, const void *x, const void *mask)
{
    /* Only KL on "ijk=ia,ja,ka" (any letters, any factor order), rank <= 64, |k| <= 256:
     * a thread per k keeps C[k, :] and its sums in registers, which needs blocks of
     * at most 256 threads.  Other shapes take the cuBLAS path. */
    if (d != TK_PLTF_KL || m->out_ndim != 3 || m->num_factors != 3)
        return tk_set_error(TK_ERR_UNSUPPORTED, "no fused kernel for this model");
    int by_mode[3] = {-1, -1, -1};
    const int latent = m->factor[0][1];
    for (int f = 0; f < 3; ++f) {
        if (m->factor_ndim[f] != 2 || m->factor[f][1] != latent)
            return tk_set_error(TK_ERR_UNSUPPORTED, "no fused kernel for this model");
        for (int o = 0; o < 3; ++o)
            if (m->factor[f][0] == m->out[o]) by_mode[o] = f;
    }
    for (int o = 0; o < 3; ++o)
        if (by_mode[o] < 0 || m->out[o] == latent) return tk_set_error(TK_ERR_UNSUPPORTED, "no fused kernel for this model");
    const size_t I = m->dims[m->out[0]], J = m->dims[m->out[1]], K = m->dims[m->out[2]], R = m->dims[latent];
    if (R > 64 || K > 256 || I * J > ((size_t)1 << 40))
        return tk_set_error(TK_ERR_UNSUPPORTED, "no fused kernel for rank %zu and |k| %zu", R, K);
    int mode = 0;
    while (by_mode[mode] != factor) ++mode;

    cuda_ctx *c = (cuda_ctx *)e->ctx;
    const size_t rows = m->dims[m->out[mode]];
    if (c->fused_cap < rows * R) {
        tk_cuda_free(c->fused_num), tk_cuda_free(c->fused_den);
        c->fused_num = c->fused_den = NULL, c->fused_cap = 0;
        size_t cap = 1024 * R > rows * R ? 1024 * R : rows * R;
        tk_cuda_buffer bufs[] = {{(void **)&c->fused_num, cap * sizeof(float)}, {(void **)&c->fused_den, cap * sizeof(float)}};
        cudaError_t err = tk_cuda_malloc_all(bufs, 2);
        if (err == cudaErrorMemoryAllocation)
            return tk_cuda_out_of_memory("PLTF on CUDA", "the fused KL update's scratch", 2 * cap * sizeof(float));
        TK_CUDA_TRY(err);
        c->fused_cap = cap;
    }
    const float *Af = (const float *)factors[by_mode[0]], *Bf = (const float *)factors[by_mode[1]],
                *Cf = (const float *)factors[by_mode[2]];
    const bool masked = mask != NULL;
    TK_CUDA_TRY(cudaMemsetAsync(c->fused_num, 0, rows * R * sizeof(float)));
    if (masked) TK_CUDA_TRY(cudaMemsetAsync(c->fused_den, 0, rows * R * sizeof(float)));

    const unsigned threads = (unsigned)((K + 31) / 32 * 32);
    const long long F = (long long)(I * J);
    long long blocks = (long long)c->sm_count * 4;
    if (blocks > (F + FIBERS_PER_STAGE - 1) / FIBERS_PER_STAGE) blocks = (F + FIBERS_PER_STAGE - 1) / FIBERS_PER_STAGE;
    long long per_block = (F + blocks - 1) / blocks;
    per_block = (per_block + FIBERS_PER_STAGE - 1) / FIBERS_PER_STAGE * FIBERS_PER_STAGE;
    blocks = (F + per_block - 1) / per_block;
    const int maxr = R <= 16 ? 16 : R <= 32 ? 32 : 64;
    const size_t shmem = sizeof(float) * (size_t)maxr * (2 * FIBERS_PER_STAGE + threads / 32);
    const float *xf = (const float *)x, *mf = (const float *)mask;
    if (maxr == 16)
        launch_mode<16>(mode, masked, (unsigned)blocks, threads, shmem, xf, mf, Af, Bf, Cf, (int)I, (int)J, (int)K,
                        (int)R, per_block, c->fused_num, c->fused_den);
    else if (maxr == 32)
        launch_mode<32>(mode, masked, (unsigned)blocks, threads, shmem, xf, mf, Af, Bf, Cf, (int)I, (int)J, (int)K,
                        (int)R, per_block, c->fused_num, c->fused_den);
    else
        launch_mode<64>(mode, masked, (unsigned)blocks, threads, shmem, xf, mf, Af, Bf, Cf, (int)I, (int)J, (int)K,
                        (int)R, per_block, c->fused_num, c->fused_den);
    TK_CUDA_TRY(cudaGetLastError());
    if (!masked) {
        const float *U = mode == 0 ? Bf : Af, *V = mode == 2 ? Bf : Cf;
        const int nu = (int)(mode == 0 ? J : I), nv = (int)(mode == 2 ? J : K);
        colsum_product<<<1, 64>>>(U, nu, V, nv, (int)R, c->fused_den);
        TK_CUDA_TRY(cudaGetLastError());
    }
    const size_t n = rows * R;
    fused_apply<<<(unsigned)((n + 255) / 256), 256>>>((float *)factors[factor], c->fused_num, c->fused_den, (int)rows,
                                                       (int)R, masked ? 1 : 0);
    TK_CUDA_TRY(cudaGetLastError());
    return TK_OK;
}
