/* GPU memory queries in a build made without a CUDA compiler. */
#include "tk_cuda_memory.h"

tk_status tk_cuda_memory_info(int device, size_t *free_bytes, size_t *total_bytes)
{
    (void)device;
    *free_bytes = *total_bytes = 0;
    return tk_set_error(TK_ERR_UNSUPPORTED, "this build has no CUDA backend (no CUDA compiler was found)");
}

size_t tk_cuda_memory_in_use(void) { return 0; }
