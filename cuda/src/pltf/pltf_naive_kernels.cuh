/* The kernels of the seed's GTM on the GPU, kept for comparison: the full joint tensor over
 * all indices, a slice at a time, as the product of the operands, then summed over the
 * indices not in the output.  Grid-stride loops: any launch shape (pltf_tuning.h) covers them. */
#ifndef TK_PLTF_NAIVE_KERNELS_CUH
#define TK_PLTF_NAIVE_KERNELS_CUH

#include "pltf_device.cuh"

#define NAIVE_MAX_JOINT 16

struct naive_params {
    int num_operands, num_summed;
    unsigned long long out_count;
    /* summed axes: shape and each operand's stride along them */
    unsigned long long sshape[NAIVE_MAX_JOINT];
    unsigned long long sstride[TK_PLTF_MAX_OPERANDS][NAIVE_MAX_JOINT];
    /* output axes: shape and each operand's stride along them */
    int num_out;
    unsigned long long oshape[NAIVE_MAX_JOINT];
    unsigned long long ostride[TK_PLTF_MAX_OPERANDS][NAIVE_MAX_JOINT];
    const float *op[TK_PLTF_MAX_OPERANDS];
};

/* joint[(s - s0) * out_count + o] = prod_t op_t[entry of (s, o)]: summed major, so
 * the reduction below reads it coalesced. */
template <typename IDX> /* 32-bit index arithmetic where the joint space allows: a fair baseline */
__global__ void naive_joint(naive_params p, unsigned long long s0, unsigned long long entries, float *joint)
{
    for (unsigned long long e = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; e < entries;
         e += (unsigned long long)gridDim.x * blockDim.x) {
        IDX s = (IDX)(s0 + e / p.out_count), o = (IDX)(e % p.out_count);
        IDX off[TK_PLTF_MAX_OPERANDS];
        for (int t = 0; t < p.num_operands; ++t) off[t] = 0;
        for (int d = p.num_out - 1; d >= 0; --d) {
            IDX v = o % (IDX)p.oshape[d];
            o /= (IDX)p.oshape[d];
            for (int t = 0; t < p.num_operands; ++t) off[t] += v * (IDX)p.ostride[t][d];
        }
        for (int d = p.num_summed - 1; d >= 0; --d) {
            IDX v = s % (IDX)p.sshape[d];
            s /= (IDX)p.sshape[d];
            for (int t = 0; t < p.num_operands; ++t) off[t] += v * (IDX)p.sstride[t][d];
        }
        float prod = 1.0f;
        for (int t = 0; t < p.num_operands; ++t) prod *= p.op[t][off[t]];
        joint[e] = prod;
    }
}

__global__ void naive_sum(const float *__restrict__ joint, unsigned long long slices, unsigned long long out_count,
                          float *out)
{
    for (unsigned long long o = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; o < out_count;
         o += (unsigned long long)gridDim.x * blockDim.x) {
        float sum = out[o];
        for (unsigned long long s = 0; s < slices; ++s) sum += joint[s * out_count + o];
        out[o] = sum;
    }
}

#endif
