/* The generic kernels of the PLTF CUDA engine: fill, permute-and-reduce, broadcast, and the
 * element-wise steps of the multiplicative updates and of the divergence.  Each walks its
 * elements in a grid-stride loop, so any block and grid size (pltf_tuning.h) covers them. */
#ifndef TK_PLTF_KERNELS_CUH
#define TK_PLTF_KERNELS_CUH

#include "pltf_device.cuh"

__global__ void fill_kernel(float *d, float v, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) d[i] = v;
}

struct permute_params {
    int dst_ndim, red_ndim;
    unsigned long long dshape[TK_PLTF_CUDA_MAX_AXES], dstride[TK_PLTF_CUDA_MAX_AXES];
    unsigned long long rshape[TK_PLTF_CUDA_MAX_AXES], rstride[TK_PLTF_CUDA_MAX_AXES];
    unsigned long long dst_count, red_count;
};

/* dst[i] = the sum of src over the reduced axes at the destination's entry i. */
__global__ void reduce_permute_kernel(const float *__restrict__ src, float *__restrict__ dst, permute_params p)
{
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < p.dst_count;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        const unsigned long long off = strided_offset(i, p.dst_ndim, p.dshape, p.dstride);
        float sum = 0;
        for (unsigned long long r = 0; r < p.red_count; ++r) sum += src[off + strided_offset(r, p.red_ndim, p.rshape, p.rstride)];
        dst[i] = sum;
    }
}

struct broadcast_params {
    int dst_ndim;
    unsigned long long shape[TK_PLTF_CUDA_MAX_AXES], sstride[TK_PLTF_CUDA_MAX_AXES], count;
};

/* dst[i] = src at the source's entry of dst's entry i (stride 0 along the broadcast axes). */
__global__ void broadcast_kernel(const float *__restrict__ src, float *__restrict__ dst, broadcast_params p)
{
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < p.count;
         i += (unsigned long long)gridDim.x * blockDim.x)
        dst[i] = src[strided_offset(i, p.dst_ndim, p.shape, p.sstride)];
}

__global__ void mu_terms_kernel(int d, const float *__restrict__ x, const float *__restrict__ mask,
                                const float *__restrict__ xh, size_t n, float *__restrict__ num, float *__restrict__ den)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        if (mask && mask[i] == 0.0f) { /* unobserved: x is never read */
            num[i] = 0;
            if (den) den[i] = 0;
            continue;
        }
        float q, r;
        mu_terms_at(d, x[i], xh[i], q, r);
        num[i] = q;
        if (den) den[i] = r;
    }
}

__global__ void add_kernel(float *dst, const float *__restrict__ src, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        dst[i] += src[i];
}

__global__ void mu_apply_kernel(float *z, const float *__restrict__ num, const float *__restrict__ den, size_t n,
                                float exponent)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        if (den[i] > 0.0f) {
            const float r = num[i] / den[i];
            z[i] *= exponent == 1.0f ? r : powf(r, exponent);
        }
}

/* *out += the divergence over the observed entries: per thread, then down each warp, then
 * thread 0 adds the block's warps in order (blocks of at most 32 warps). */
__global__ void divergence_kernel(int d, const float *__restrict__ x, const float *__restrict__ mask,
                                  const float *__restrict__ xh, size_t n, double *out)
{
    double sum = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        if (mask && mask[i] == 0.0f) continue;
        const double h = fmax((double)xh[i], 1e-30), v = x[i];
        if (d == TK_PLTF_KL) sum += (v > 0 ? v * log(v / h) - v : 0.0) + h;
        else if (d == TK_PLTF_EUCLIDEAN) sum += 0.5 * (v - xh[i]) * (v - xh[i]);
        else sum += v / h - log(v / h) - 1;
    }
    sum = tk_warp_reduce_down(sum, tk_op_sum());
    __shared__ double part[32];
    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = sum;
    __syncthreads();
    if (threadIdx.x == 0) {
        double total = 0;
        for (unsigned w = 0; w < blockDim.x / 32; ++w) total += part[w];
        atomicAdd(out, total);
    }
}

#endif
