/* The CUDA peak finder in a build without a CUDA compiler: a clear error. */
#include "fibers_internal.h"

tk_status tk_fibers_find_cuda(const tk_fibers_options *opts, const tk_fibers_plan *plan, size_t num_voxels,
                              const float *sh, const uint8_t *mask, float *directions, float *amplitudes,
                              size_t *bad_voxels, tk_timing *timing)
{
    (void)opts, (void)plan, (void)num_voxels, (void)sh, (void)mask, (void)directions, (void)amplitudes;
    (void)bad_voxels, (void)timing;
    return tk_set_error(TK_ERR_UNSUPPORTED,
                        "fiber directions: no CUDA backend in this build (built without a CUDA compiler): use cpu or omp");
}
