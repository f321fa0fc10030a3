/* The samples of a chunk's voxels as one matrix product, ahead of the warp-a-voxel kernel
 * (fixels_warp.cuh's fixels_warp_pull_kernel): samples[v][d] = sum_c sh[v][c] basis[c][d], each
 * sum one FMA a coefficient in coefficient order from 0 (the doubles of the host's and the
 * one-thread kernel's sums, and of the fused kernel's block pass, fx_sample_pass).
 *
 * Why a kernel of its own: in the fused kernel the block's warps sample their voxels together
 * (each basis value read once for them all), so a block holds its shared memory until its slowest
 * voxel is segmented, and the pass is a fifth of the kernel's cycles; a tiled product reads each
 * basis value once for TK_FX_GEMM_VOXELS voxels and lets the segmentation take voxels one warp at
 * a time.  The cost: the samples go through global memory (8 bytes a direction a voxel, written
 * once and read once). */
#ifndef TK_FIXELS_SAMPLES_CUH
#define TK_FIXELS_SAMPLES_CUH

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

/* A block's tile: TK_FX_GEMM_VOXELS voxels by TK_FX_GEMM_DIRS directions, the coefficients
 * TK_FX_GEMM_COEFS at a time through shared memory; warp w of the block's TK_FX_GEMM_THREADS
 * takes voxels TK_FX_GEMM_PER_WARP w .. + TK_FX_GEMM_PER_WARP - 1 of the tile, lane l directions
 * l + 32 j (consecutive lanes, consecutive doubles: the basis tile's loads without conflicts, the
 * samples' stores coalesced). */
#define TK_FX_GEMM_THREADS 256
#define TK_FX_GEMM_PER_WARP 8
#define TK_FX_GEMM_VOXELS (TK_FX_GEMM_THREADS / 32 * TK_FX_GEMM_PER_WARP)
#define TK_FX_GEMM_DIRS_A_LANE 4
#define TK_FX_GEMM_DIRS (32 * TK_FX_GEMM_DIRS_A_LANE)
#define TK_FX_GEMM_COEFS 16

/* A voxel's row of samples: n rounded up to two doubles (16-byte rows for the copy into shared
 * memory). */
__host__ __device__ static inline size_t fx_samples_stride(int n)
{
    return ((size_t)n + 1u) / 2u * 2u;
}

/* samples (num_voxels rows of fx_samples_stride(n) doubles) = sh (num_voxels x k floats, as
 * doubles) times basis (k x n, coefficient-major).  Grid: (ceil(n / TK_FX_GEMM_DIRS),
 * ceil(num_voxels / TK_FX_GEMM_VOXELS)), TK_FX_GEMM_THREADS threads.  Masked and non-finite
 * voxels are sampled as the others (the segmentation reads none of theirs). */
#ifndef TK_FX_WARP_DEVICE_ONLY /* the kernel in fixels_cuda.cu's unit alone */
__global__ void __launch_bounds__(TK_FX_GEMM_THREADS)
    fixels_samples_kernel(const double *basis, int n, int k, size_t num_voxels, const float *sh, double *samples)
{
    __shared__ __align__(16) double coef[TK_FX_GEMM_COEFS][TK_FX_GEMM_VOXELS];
    __shared__ __align__(16) double tile[TK_FX_GEMM_COEFS][TK_FX_GEMM_DIRS];
    const int warp = (int)(threadIdx.x >> 5), lane = (int)(threadIdx.x & 31);
    const size_t v0 = (size_t)blockIdx.y * TK_FX_GEMM_VOXELS;
    const int d0 = (int)blockIdx.x * TK_FX_GEMM_DIRS;
    const size_t stride = fx_samples_stride(n);
    double acc[TK_FX_GEMM_PER_WARP][TK_FX_GEMM_DIRS_A_LANE];
#pragma unroll
    for (int i = 0; i < TK_FX_GEMM_PER_WARP; ++i)
#pragma unroll
        for (int j = 0; j < TK_FX_GEMM_DIRS_A_LANE; ++j) acc[i][j] = 0.0;
    for (int c0 = 0; c0 < k; c0 += TK_FX_GEMM_COEFS) {
        const int kc = k - c0 < TK_FX_GEMM_COEFS ? k - c0 : TK_FX_GEMM_COEFS;
        __syncthreads(); /* the last tile's products are done */
        /* the tile's voxels' coefficients: consecutive threads, consecutive coefficients of a
         * voxel (coalesced reads) */
        for (int i = (int)threadIdx.x; i < TK_FX_GEMM_VOXELS * kc; i += TK_FX_GEMM_THREADS) {
            const int j = i / kc, c = i % kc;
            const size_t v = v0 + (size_t)j;
            coef[c][j] = v < num_voxels ? (double)sh[v * (size_t)k + (size_t)(c0 + c)] : 0.0;
        }
        for (int i = (int)threadIdx.x; i < TK_FX_GEMM_DIRS * kc; i += TK_FX_GEMM_THREADS) {
            const int c = i / TK_FX_GEMM_DIRS, dd = i % TK_FX_GEMM_DIRS;
            tile[c][dd] = d0 + dd < n ? __ldg(&basis[(size_t)(c0 + c) * (size_t)n + (size_t)(d0 + dd)]) : 0.0;
        }
        __syncthreads();
        for (int c = 0; c < kc; ++c) {
            double b[TK_FX_GEMM_DIRS_A_LANE], a[TK_FX_GEMM_PER_WARP];
#pragma unroll
            for (int j = 0; j < TK_FX_GEMM_DIRS_A_LANE; ++j) b[j] = tile[c][lane + 32 * j];
#pragma unroll
            for (int i = 0; i < TK_FX_GEMM_PER_WARP; i += 2) {
                const double2 two = *(const double2 *)&coef[c][TK_FX_GEMM_PER_WARP * warp + i];
                a[i] = two.x, a[i + 1] = two.y;
            }
#pragma unroll
            for (int i = 0; i < TK_FX_GEMM_PER_WARP; ++i)
#pragma unroll
                for (int j = 0; j < TK_FX_GEMM_DIRS_A_LANE; ++j) acc[i][j] = fma(b[j], a[i], acc[i][j]);
        }
    }
#pragma unroll
    for (int i = 0; i < TK_FX_GEMM_PER_WARP; ++i) {
        const size_t v = v0 + (size_t)(TK_FX_GEMM_PER_WARP * warp + i);
        if (v >= num_voxels) break;
#pragma unroll
        for (int j = 0; j < TK_FX_GEMM_DIRS_A_LANE; ++j) {
            const int d = d0 + lane + 32 * j;
            if (d < (int)stride) samples[v * stride + (size_t)d] = acc[i][j]; /* the padding: 0 */
        }
    }
}

#endif /* TK_FX_WARP_DEVICE_ONLY */

#endif
