/* Internal (CUDA, C++): the distinct-pairs pipeline of one device state (sshopm_distinct_cuda.cu).
 * A batch runs in chunks on two streams, each with its own device buffers and pinned host
 * staging: the upload of one chunk, the solve and merge kernels of another and the download
 * of a third's pairs overlap.  Only the pairs cross PCIe. */
#ifndef TK_SSHOPM_PIPELINE_H
#define TK_SSHOPM_PIPELINE_H

#include <cuda_runtime.h>

#include "sshopm_internal.h"

struct tk_sshopm_pipeline;

/* What the pipeline needs of its device state (sshopm_cuda.cu); the device is current and
 * the state's constant-memory tables uploaded. */
struct tk_sshopm_pipeline_host {
    const tk_sshopm_cuda *cuda;  /* for tk_sshopm_cuda_solve_async */
    const tk_sshopm_options *o;
    const tk_sshopm_tables *tb;
    const void *starts;          /* host, num_starts * dim in the precision */
    int sm_count;
    size_t max_batch;            /* the plan's (0: none) */
};

/* The solve kernel of T tensors at d_packed, enqueued on `stream` (sshopm_cuda.cu). */
cudaError_t tk_sshopm_cuda_solve_async(const tk_sshopm_cuda *c, const void *d_packed, const void *d_starts,
                                       void *d_lambda, void *d_x, int *d_iter, unsigned char *d_conv, size_t T,
                                       cudaStream_t stream);

/* The distinct pairs of T tensors appended to out (tensor indices of this batch), the
 * pipeline made or grown at need into *pipe; *kernel_ms the solve kernels' time (the
 * union of their spans on the two streams: never more than the call).  On failure the
 * streams are drained before it returns. */
tk_status tk_sshopm_pipeline_run(tk_sshopm_pipeline **pipe, const tk_sshopm_pipeline_host *host, size_t T,
                                 const void *packed, double merge_tol, tk_eigenpairs *out, double *kernel_ms);

/* Frees everything (NULL: nothing); the pipeline's device is made current meanwhile by the caller. */
void tk_sshopm_pipeline_destroy(tk_sshopm_pipeline *pipe);

#endif
