/* The CUDA backend of FastTucker in a build made without a CUDA compiler. */
#include <string.h>

#include "tucker_internal.h"

static tk_status no_cuda(void)
{
    return tk_set_error(TK_ERR_UNSUPPORTED, "this build has no CUDA backend (no CUDA compiler was found): use cpu or omp");
}

tk_status tk_tucker_cuda_create(tk_tucker_solver *s, const tk_tucker_model *m, const tk_tucker_coo *train)
{
    (void)s, (void)m, (void)train;
    return no_cuda();
}
void tk_tucker_cuda_destroy(tk_tucker_solver *s) { (void)s; }
tk_status tk_tucker_cuda_factors(tk_tucker_solver *s, double *ms)
{
    (void)s, (void)ms;
    return no_cuda();
}
tk_status tk_tucker_cuda_core(tk_tucker_solver *s, double *ms)
{
    (void)s, (void)ms;
    return no_cuda();
}
tk_status tk_tucker_cuda_model(const tk_tucker_solver *s, tk_tucker_model *out)
{
    (void)s, (void)out;
    return no_cuda();
}
tk_status tk_tucker_cuda_model_of_device(const tk_tucker_solver *s, int index, tk_tucker_model *out)
{
    (void)s, (void)index, (void)out;
    return no_cuda();
}
tk_status tk_tucker_bcsf_build_cuda(const tk_tucker_coo *t, int mode, size_t fiber_threshold, int pieces, int piece,
                                    int device, tk_tucker_bcsf *out)
{
    (void)t, (void)mode, (void)fiber_threshold, (void)pieces, (void)piece, (void)device;
    memset(out, 0, sizeof *out);
    return no_cuda();
}
tk_status tk_tucker_solver_device_bcsf(const tk_tucker_solver *s, int index, int mode, tk_tucker_bcsf *out)
{
    (void)s, (void)index, (void)mode;
    memset(out, 0, sizeof *out);
    return no_cuda();
}
