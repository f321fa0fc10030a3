/* The fixels' CUDA backend in a build without a CUDA compiler: a clear error. */
#include "fixels_internal.h"

tk_status tk_fixels_cuda_create(const tk_fixels_plan *plan, int device, tk_fixels_cuda_state **state)
{
    (void)plan, (void)device;
    *state = NULL;
    return tk_set_error(TK_ERR_UNSUPPORTED,
                        "fixels: no CUDA backend in this build (built without a CUDA compiler): use cpu or omp");
}

/* never reached: create fails, so no plan holds CUDA state */
tk_status tk_fixels_cuda_execute(tk_fixels_cuda_state *state, size_t num_voxels, const float *sh, const uint8_t *mask,
                                 tk_fixels_output *out, double *kernel_ms)
{
    (void)state, (void)num_voxels, (void)sh, (void)mask, (void)out, (void)kernel_ms;
    return tk_set_error(TK_ERR_UNSUPPORTED, "fixels: no CUDA backend in this build");
}

void tk_fixels_cuda_destroy(tk_fixels_cuda_state *state) { (void)state; }

void tk_fixels_cuda_set_one_thread(tk_fixels_cuda_state *state, int on) { (void)state, (void)on; }

void tk_fixels_cuda_set_fused(tk_fixels_cuda_state *state, int on) { (void)state, (void)on; }
void tk_fixels_cuda_set_slim(tk_fixels_cuda_state *state, int on) { (void)state, (void)on; }
void tk_fixels_cuda_set_split(tk_fixels_cuda_state *state, int on) { (void)state, (void)on; }

size_t tk_fixels_cuda_redone(const tk_fixels_cuda_state *state)
{
    (void)state;
    return 0;
}
