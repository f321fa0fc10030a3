/* The CUDA backend of FastTucker in a build made without a CUDA compiler. */
#include "tucker_internal.h"

static tk_status no_cuda(void)
{
    return tk_set_error(TK_ERR_UNSUPPORTED, "this build has no CUDA backend (no CUDA compiler was found): use cpu or omp");
}

tk_status tk_tucker_cuda_create(tk_tucker_solver *s, const tk_tucker_model *m)
{
    (void)s, (void)m;
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
