/* tk_cuda_device_usable in a build made without a CUDA compiler. */
#include <stdio.h>

#include "tk_device.h"
#include "tk_types.h"

int tk_cuda_device_usable(int device, char *reason, size_t size)
{
    (void)device;
    if (reason && size) snprintf(reason, size, "this build has no CUDA backend (built without a CUDA compiler)");
    return 0;
}

int tk_has_cuda(void) { return 0; }
