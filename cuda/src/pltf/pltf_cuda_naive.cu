/* The seed's GTM on the GPU, kept for comparison: the full joint tensor over all
 * indices is materialized (in slices of at most 2^28 entries, 1 GiB) as the
 * product of the operands, then summed over the indices not in the output. */
#include <string.h>

#include "pltf_cuda_internal.h"

#define NAIVE_MAX_JOINT 16
#define NAIVE_SLICE ((size_t)1 << 28)

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

tk_status tk_pltf_cuda_naive_gtm(tk_pltf_engine *e, const size_t *dims, int n, const tk_pltf_term *terms,
                                 const void *const *operands, const tk_pltf_term *out_term, void *out)
{
    naive_params p;
    memset(&p, 0, sizeof p);
    p.num_operands = n;
    int in_out[TK_PLTF_MAX_INDICES] = {0}, summed_seen[TK_PLTF_MAX_INDICES] = {0};
    int summed[TK_PLTF_MAX_INDICES];
    p.num_out = out_term->ndim;
    for (int d = 0; d < out_term->ndim; ++d) in_out[out_term->idx[d]] = 1;
    for (int t = 0; t < n; ++t)
        for (int d = 0; d < terms[t].ndim; ++d) {
            int id = terms[t].idx[d];
            if (!in_out[id] && !summed_seen[id]) summed_seen[id] = 1, summed[p.num_summed++] = id;
        }
    if (p.num_summed > NAIVE_MAX_JOINT || p.num_out > NAIVE_MAX_JOINT)
        return tk_set_error(TK_ERR_UNSUPPORTED, "naive GTM on CUDA: more than %d axes", NAIVE_MAX_JOINT);
    unsigned long long summed_count = 1;
    p.out_count = 1;
    for (int d = 0; d < p.num_out; ++d) p.oshape[d] = dims[out_term->idx[d]], p.out_count *= p.oshape[d];
    for (int d = 0; d < p.num_summed; ++d) p.sshape[d] = dims[summed[d]], summed_count *= p.sshape[d];
    for (int t = 0; t < n; ++t) {
        p.op[t] = (const float *)operands[t];
        unsigned long long s = 1;
        for (int d = terms[t].ndim - 1; d >= 0; --d) {
            int id = terms[t].idx[d];
            for (int q = 0; q < p.num_out; ++q)
                if (out_term->idx[q] == id) p.ostride[t][q] = s;
            for (int q = 0; q < p.num_summed; ++q)
                if (summed[q] == id) p.sstride[t][q] = s;
            s *= dims[id];
        }
    }
    /* every offset below 2^32: the joint space and each operand */
    bool small = summed_count * p.out_count < (1ull << 32);
    for (int t = 0; t < n; ++t) {
        unsigned long long size = 1;
        for (int d = 0; d < terms[t].ndim; ++d) size *= dims[terms[t].idx[d]];
        small = small && size < (1ull << 32);
    }
    unsigned long long slices = NAIVE_SLICE / p.out_count;
    if (!slices) slices = 1;
    if (slices > summed_count) slices = summed_count;
    /* The joint slices are only a working buffer: fewer summed entries per slice where
     * GPU memory is short (the sums run in the same order whatever the slice). */
    void *joint = NULL;
    tk_status st;
    for (;;) {
        st = e->alloc(e, (size_t)(slices * p.out_count), &joint);
        if (st != TK_ERR_MEMORY || slices == 1) break;
        slices = (slices + 1) / 2;
    }
    if (st != TK_OK) return st;
    cudaError_t err = cudaMemsetAsync(out, 0, p.out_count * sizeof(float));
    for (unsigned long long s0 = 0; err == cudaSuccess && s0 < summed_count; s0 += slices) {
        unsigned long long ns = summed_count - s0 < slices ? summed_count - s0 : slices;
        unsigned long long entries = ns * p.out_count;
        unsigned long long blocks = (entries + 255) / 256;
        const unsigned grid = (unsigned)(blocks < 1048576 ? blocks : 1048576);
        if (small) naive_joint<unsigned><<<grid, 256>>>(p, s0, entries, (float *)joint);
        else naive_joint<unsigned long long><<<grid, 256>>>(p, s0, entries, (float *)joint);
        unsigned long long ob = (p.out_count + 255) / 256;
        naive_sum<<<(unsigned)(ob < 1048576 ? ob : 1048576), 256>>>((const float *)joint, ns, p.out_count, (float *)out);
        err = cudaGetLastError();
    }
    e->release(e, joint);
    return tk_pltf_cuda_check(err, "naive GTM kernels");
}
