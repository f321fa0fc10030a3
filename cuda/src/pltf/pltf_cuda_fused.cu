/* Dispatch of the fused KL-PARAFAC updates (kernels: pltf_fused_kernels.cuh): which models
 * take them, the scratch, and the launch shape (pltf_tuning.h). */
#include "common/cuda_check.cuh"
#include "pltf_cuda_internal.h"
#include "pltf_fused_kernels.cuh"
#include "pltf_tuning.h"

typedef tk_pltf_policy policy;
/* Fibers a block stages at a time: its range is a multiple of this. */
static const long long FIBERS_PER_STAGE = policy::fused_fibers_per_stage;

template <int MAXR, int MODE, bool MASKED>
static void launch(unsigned blocks, unsigned threads, size_t shmem, const float *x, const float *mask, const float *A,
                   const float *B, const float *C, int I, int J, int K, int R, long long per_block, float *num,
                   float *den)
{
    kl_parafac_pass<policy, MAXR, MODE, MASKED><<<blocks, threads, shmem>>>(x, mask, A, B, C, I, J, K, R, per_block, num, den);
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
    /* Only KL on "ijk=ia,ja,ka" (any letters, any factor order), rank <= 64, |k| <= 256
     * (policy::fused_max_rank, fused_max_threads): a thread per k keeps C[k, :] and its
     * sums in registers, which needs blocks of at most 256 threads.  Other shapes take
     * the cuBLAS path. */
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
    if (R > (size_t)policy::fused_max_rank || K > (size_t)policy::fused_max_threads || I * J > ((size_t)1 << 40))
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
        if (err != cudaSuccess) return tk_cuda_status(err, "PLTF on CUDA", "cudaMalloc (fused scratch)");
        c->fused_cap = cap;
    }
    const float *Af = (const float *)factors[by_mode[0]], *Bf = (const float *)factors[by_mode[1]],
                *Cf = (const float *)factors[by_mode[2]];
    const bool masked = mask != NULL;
    TK_CUDA_TRY_RETURN("PLTF on CUDA", cudaMemsetAsync(c->fused_num, 0, rows * R * sizeof(float)));
    if (masked) TK_CUDA_TRY_RETURN("PLTF on CUDA", cudaMemsetAsync(c->fused_den, 0, rows * R * sizeof(float)));

    const unsigned threads = (unsigned)((K + 31) / 32 * 32);
    const long long F = (long long)(I * J);
    long long blocks = (long long)c->sm_count * policy::fused_blocks_per_sm;
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
    TK_CUDA_TRY_RETURN("PLTF on CUDA", cudaGetLastError());
    if (!masked) {
        const float *U = mode == 0 ? Bf : Af, *V = mode == 2 ? Bf : Cf;
        const int nu = (int)(mode == 0 ? J : I), nv = (int)(mode == 2 ? J : K);
        colsum_product<<<1, policy::fused_colsum_threads>>>(U, nu, V, nv, (int)R, c->fused_den);
        TK_CUDA_TRY_RETURN("PLTF on CUDA", cudaGetLastError());
    }
    const size_t n = rows * R;
    const unsigned apply_threads = policy::fused_apply_threads;
    fused_apply<<<(unsigned)((n + apply_threads - 1) / apply_threads), apply_threads>>>(
        (float *)factors[factor], c->fused_num, c->fused_den, (int)rows, (int)R, masked ? 1 : 0);
    TK_CUDA_TRY_RETURN("PLTF on CUDA", cudaGetLastError());
    return TK_OK;
}
