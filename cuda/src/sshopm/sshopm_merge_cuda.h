/* Internal (CUDA, C++): the device merge of one chunk's per-start results into distinct
 * eigenpairs (sshopm_merge_kernels.cu), enqueued on a stream by the distinct pipeline
 * (sshopm_distinct_cuda.cu).  The merge rule, order and stability test are the host's
 * (sshopm_merge_hd.h), so the pairs are tk_sshopm_distinct's. */
#ifndef TK_SSHOPM_MERGE_CUDA_H
#define TK_SSHOPM_MERGE_CUDA_H

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include "tk_sshopm.h"

/* One chunk of T tensors on the device.  The merge scratch is tensor-minor
 * ([pair][tensor]) so that the threads of a warp, a tensor each, read adjacent words. */
struct tk_merge_chunk {
    const void *packed;          /* T * K in the precision */
    double *packed_d;            /* T * K: the tensors in double for the stability test
                                    (float input is converted into it; double input: == packed) */
    const void *lambda, *x;      /* per start, T * S (x: T * S * n), in the precision */
    const unsigned char *converged;
    double *unit;                /* [pair * n + i][tensor]: each pair's unit vector */
    int *rep, *cnt, *ord;        /* [pair][tensor]: first start, starts merged, lambda order */
    unsigned long long *offset;  /* T + 1: pairs before each tensor; offset[T] = the chunk's pairs */
    /* the pairs, at most T * S, in tk_eigenpairs' layout */
    size_t *tensor;
    double *pair_lambda, *pair_x;
    tk_stability *stability;
    int32_t *num_starts;
};

/* Largest dimension the device merge holds on a thread's stack (TK_KERNEL_MAX_DIM). */
int tk_sshopm_merge_max_dim(void);

/* Enqueue the merge of chunk b (T tensors, the first of them tensor first_tensor of the
 * caller's batch) on `stream`: conversion to double, the per-tensor merge and sort, the
 * scan of the pair counts, the compaction with each pair's stability.  offset[T] is the
 * chunk's pair count when the stream gets there. */
cudaError_t tk_sshopm_merge_enqueue(const tk_merge_chunk &b, int order, int dim, int num_starts, int dbl, size_t T,
                                    size_t first_tensor, double merge_tol, int sm_count, cudaStream_t stream);

#endif
