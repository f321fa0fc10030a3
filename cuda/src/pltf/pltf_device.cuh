/* Device math of PLTF on CUDA, shared by its kernels: strided offsets of a linear index,
 * the per-entry terms of the multiplicative updates and of the divergences, and a block's
 * reduction of per-thread sums. */
#ifndef TK_PLTF_DEVICE_CUH
#define TK_PLTF_DEVICE_CUH

#include <cuda_runtime.h>

#include "common/warp_reduce.cuh"
#include "pltf_internal.h"

/* X^ below this is taken as this: a ratio x / X^ stays finite. */
#define XHAT_FLOOR 1e-30f

/* Most axes of a tensor the permute and broadcast kernels index. */
#define TK_PLTF_CUDA_MAX_AXES 16

/* The offset of linear (row-major) index i over shape[0..ndim), each axis with its stride. */
__device__ __forceinline__ unsigned long long strided_offset(unsigned long long i, int ndim,
                                                             const unsigned long long *shape,
                                                             const unsigned long long *stride)
{
    unsigned long long off = 0;
    for (int d = ndim - 1; d >= 0; --d) off += (i % shape[d]) * stride[d], i /= shape[d];
    return off;
}

/* The multiplicative update's terms of one observed entry: num q and den r of divergence d
 * (X^ h floored at XHAT_FLOOR). */
__device__ __forceinline__ void mu_terms_at(int d, float x, float xhat, float &q, float &r)
{
    const float h = fmaxf(xhat, XHAT_FLOOR);
    if (d == TK_PLTF_KL) q = x / h, r = 1.0f;
    else if (d == TK_PLTF_EUCLIDEAN) q = x, r = h;
    else q = x / (h * h), r = 1.0f / h;
}

/* target[a] += the block's sum of acc[a] for a < R (then acc is zero): each warp sums down
 * to lane 0, red (warps x MAXR floats) collects the warps, thread a adds them in warp order. */
template <int MAXR>
__device__ void block_flush(float (&acc)[MAXR], int R, float *red, float *target)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
#pragma unroll
    for (int a = 0; a < MAXR; ++a) {
        const float v = tk_warp_reduce_down(acc[a], tk_op_sum());
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

#endif
