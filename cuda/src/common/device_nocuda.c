/* tk_cuda_device_usable in a build made without a CUDA compiler. */
#include <stdio.h>

#include "multi_device.h"
#include "tk_device.h"
#include "tk_types.h"

int tk_cuda_device_usable(int device, char *reason, size_t size)
{
    (void)device;
    if (reason && size) snprintf(reason, size, "this build has no CUDA backend (built without a CUDA compiler)");
    return 0;
}

int tk_has_cuda(void) { return 0; }

int tk_cuda_device_count(void) { return 0; }

tk_status tk_cuda_require_devices(int first, int count)
{
    (void)first, (void)count;
    return tk_set_error(TK_ERR_UNSUPPORTED, "this build has no CUDA backend (built without a CUDA compiler): use cpu or omp");
}
