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

/* The device-array entry points (device_arrays.h): nothing to run them on. */
#include "device_arrays.h"

#define TK_NO_CUDA_DEVICE_ARRAYS                                                                              \
    "this build has no CUDA backend (built without a CUDA compiler): device arrays (CuPy, PyTorch CUDA) need " \
    "a CUDA build; pass host arrays"

tk_status tk_device_arrays_plan_check(int plan_devices)
{
    (void)plan_devices;
    return tk_set_error(TK_ERR_UNSUPPORTED, TK_NO_CUDA_DEVICE_ARRAYS);
}

tk_status tk_device_array_check(const void *ptr, size_t bytes, int device, const char *what)
{
    (void)ptr, (void)bytes, (void)device, (void)what;
    return tk_set_error(TK_ERR_UNSUPPORTED, TK_NO_CUDA_DEVICE_ARRAYS);
}

tk_status tk_cuda_stream_wait(void *stream, const char *who)
{
    (void)stream, (void)who;
    return tk_set_error(TK_ERR_UNSUPPORTED, TK_NO_CUDA_DEVICE_ARRAYS);
}
