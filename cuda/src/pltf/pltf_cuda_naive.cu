/* Dispatch of the seed's GTM on the GPU, kept for comparison (kernels:
 * pltf_naive_kernels.cuh): the joint tensor is materialized in slices of at most
 * policy::naive_slice entries (1 GiB), fewer where GPU memory is short. */
#include <string.h>

#include "common/cuda_check.cuh"
#include "pltf_cuda_internal.h"
#include "pltf_naive_kernels.cuh"
#include "pltf_tuning.h"

typedef tk_pltf_policy policy;

/* Blocks of policy::naive_threads covering count entries, at most policy::naive_max_grid. */
static unsigned grid_for(unsigned long long count)
{
    const unsigned long long blocks = (count + policy::naive_threads - 1) / policy::naive_threads;
    return (unsigned)(blocks < policy::naive_max_grid ? blocks : policy::naive_max_grid);
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
    unsigned long long slices = policy::naive_slice / p.out_count;
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
        const unsigned grid = grid_for(entries);
        if (small) naive_joint<unsigned><<<grid, policy::naive_threads>>>(p, s0, entries, (float *)joint);
        else naive_joint<unsigned long long><<<grid, policy::naive_threads>>>(p, s0, entries, (float *)joint);
        naive_sum<<<grid_for(p.out_count), policy::naive_threads>>>((const float *)joint, ns, p.out_count, (float *)out);
        err = cudaGetLastError();
    }
    e->release(e, joint);
    return tk_cuda_status(err, "PLTF on CUDA", "naive GTM kernels");
}
