/* The CUDA peak finder in a build without a CUDA compiler: a clear error. */
#include "fibers_plan.h"

tk_status tk_fibers_cuda_create(const tk_fibers_tables *tables, const tk_fibers_options *opts, size_t max_voxels,
                                tk_fibers_cuda_state **state)
{
    (void)tables, (void)opts, (void)max_voxels;
    *state = NULL;
    return tk_set_error(TK_ERR_UNSUPPORTED,
                        "fiber directions: no CUDA backend in this build (built without a CUDA compiler): use cpu or omp");
}

/* never reached: create fails, so no plan holds CUDA state */
tk_status tk_fibers_cuda_execute(tk_fibers_cuda_state *state, size_t num_voxels, const float *sh, const uint8_t *mask,
                                 float *directions, float *amplitudes, size_t *bad_voxels, double *kernel_ms)
{
    (void)state, (void)num_voxels, (void)sh, (void)mask, (void)directions, (void)amplitudes, (void)bad_voxels;
    (void)kernel_ms;
    return tk_set_error(TK_ERR_UNSUPPORTED, "fiber directions: no CUDA backend in this build");
}

void tk_fibers_cuda_destroy(tk_fibers_cuda_state *state) { (void)state; }

/* never reached: no plan holds CUDA state (tk_device_arrays_plan_check refuses first) */
tk_status tk_fibers_cuda_execute_device(tk_fibers_cuda_state *state, size_t num_voxels, const float *sh,
                                        const uint8_t *mask, float *directions, float *amplitudes,
                                        size_t *bad_voxels, double *kernel_ms)
{
    return tk_fibers_cuda_execute(state, num_voxels, sh, mask, directions, amplitudes, bad_voxels, kernel_ms);
}
