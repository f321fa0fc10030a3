/* The kernels of the fused KL updates of a 3-way PARAFAC model (X^_ijk = sum_a A_ia B_ja C_ka),
 * the pass templated on a policy type (pltf_tuning.h).  One pass over X per factor update
 * computes X^, the ratio X / X^ and its contraction with the other two factors entry by
 * entry, so neither X^ nor X / X^ is ever stored.
 *
 * Layout of a pass: a block walks a contiguous range of fibers X[i, j, :], one
 * thread per k (coalesced reads of X), C[k, :] held in that thread's registers for
 * the whole pass.  For the update of C each thread accumulates its own row of the
 * numerator; for A (B) the fibers are walked with i (j) outermost, so a block's
 * per-thread sums belong to one row until the row changes, when the block reduces
 * them and adds them to the numerator.  Unmasked, the denominator D(1) is the
 * product of the other factors' column sums. */
#ifndef TK_PLTF_FUSED_KERNELS_CUH
#define TK_PLTF_FUSED_KERNELS_CUH

#include "pltf_device.cuh"

/* MODE: the factor updated (0: A over i, 1: B over j, 2: C over k). */
template <class Policy, int MAXR, int MODE, bool MASKED>
__global__ void __launch_bounds__(Policy::fused_max_threads, Policy::fused_min_blocks(MAXR)) kl_parafac_pass(const float *__restrict__ x, const float *__restrict__ mask,
                                                         const float *__restrict__ A, const float *__restrict__ B,
                                                         const float *__restrict__ C, int I, int J, int K, int R,
                                                         long long fibers_per_block, float *num, float *den)
{
    constexpr int FIBERS_PER_STAGE = Policy::fused_fibers_per_stage;
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

#endif
