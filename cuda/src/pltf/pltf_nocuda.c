/* The PLTF CUDA engine of a build made without a CUDA compiler. */
#include "pltf_internal.h"

tk_status tk_pltf_engine_cuda(tk_pltf_engine *e, int device)
{
    (void)e, (void)device;
    return tk_set_error(TK_ERR_UNSUPPORTED, "this build has no CUDA backend (no CUDA compiler was found): use cpu or omp");
}
