/* tk_cuda_device_usable: is there a GPU that runs this build's kernels?  And the check every
 * CUDA core makes before its work (tk_cuda_require_device, cuda_memory.h), with its reasons. */
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <stdio.h>

#include "cuda_memory.h"
#include "multi_device.h"
#include "tk_types.h"
#include "tk_device.h"
#include "tk_status.h"

/* Does nothing: launching it proves the device takes a context and has machine code (or
 * PTX it can compile) for this build's architectures. */
__global__ void tk_device_probe_kernel(int *unused) { (void)unused; }

static int say(char *reason, size_t size, const char *what, cudaError_t e)
{
    if (reason && size) snprintf(reason, size, "%s%s", what, e == cudaSuccess ? "" : cudaGetErrorString(e));
    return 0;
}

/* Why cudaGetDeviceCount failed, in the user's terms.  The runtime answers "CUDA driver
 * version is insufficient for CUDA runtime version" both when the driver is too old and
 * when there is no NVIDIA driver at all (its library, libcuda.so.1, cannot be loaded: a
 * machine without an NVIDIA GPU): the second is no upgrade away, so it is said plainly. */
static int say_count_failure(char *reason, size_t size, cudaError_t e)
{
    if (!reason || !size) return 0;
    if (e == cudaErrorInsufficientDriver || e == cudaErrorNoDevice) {
        void *driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
        if (!driver) {
            const char *why = dlerror();
            /* dlerror names the library: "libcuda.so.1: cannot open shared object file: ..." */
            snprintf(reason, size, "no NVIDIA driver (%s)", why ? why : "libcuda.so.1 cannot be loaded");
            return 0;
        }
        dlclose(driver);
    }
    int driver_version = 0, runtime_version = 0;
    if (e == cudaErrorInsufficientDriver && cudaDriverGetVersion(&driver_version) == cudaSuccess &&
        cudaRuntimeGetVersion(&runtime_version) == cudaSuccess && driver_version > 0) {
        snprintf(reason, size, "the NVIDIA driver supports CUDA %d.%d, this build needs CUDA %d.%d: update the driver",
                 driver_version / 1000, driver_version % 1000 / 10, runtime_version / 1000, runtime_version % 1000 / 10);
        return 0;
    }
    return say(reason, size, "", e);
}

extern "C" int tk_cuda_device_usable(int device, char *reason, size_t size)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        cudaGetLastError(); /* not sticky: leave no error for the caller's next CUDA call */
        return say_count_failure(reason, size, e);
    }
    if (count == 0) return say(reason, size, "no CUDA-capable device is detected", cudaSuccess);
    if (device < 0 || device >= count) {
        if (reason && size) snprintf(reason, size, "CUDA device %d does not exist (%d found)", device, count);
        return 0;
    }
    int previous = 0;
    if ((e = cudaGetDevice(&previous)) != cudaSuccess || (e = cudaSetDevice(device)) != cudaSuccess) {
        cudaGetLastError();
        return say(reason, size, "", e);
    }
    tk_device_probe_kernel<<<1, 1>>>(NULL);
    e = cudaGetLastError();
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    cudaGetLastError();
    cudaSetDevice(previous);
    if (e != cudaSuccess) {
        cudaDeviceProp prop;
        if (cudaGetDeviceProperties(&prop, device) == cudaSuccess && reason && size) {
            snprintf(reason, size, "GPU %d (%s, compute capability %d.%d) cannot run this build's code: %s", device,
                     prop.name, prop.major, prop.minor, cudaGetErrorString(e));
            cudaGetLastError();
            return 0;
        }
        cudaGetLastError();
        return say(reason, size, "", e);
    }
    return 1;
}

/* The cores' check before their work: cudaGetDeviceCount alone where it succeeds (no kernel
 * launch, no device-wide synchronisation: other threads may be running kernels), and
 * tk_cuda_device_usable's reason where it does not, so that a C API call and --backend auto
 * say the same ("no NVIDIA driver (...)" on a machine without one, not the runtime's "CUDA
 * driver version is insufficient"). */
extern "C" tk_status tk_cuda_require_device(int device)
{
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e == cudaSuccess && count > 0 && device >= 0 && device < count) return TK_OK;
    cudaGetLastError(); /* not sticky: leave no error for the caller's next CUDA call */
    if (e == cudaSuccess && count > 0)
        return tk_set_error(TK_ERR_ARGUMENT, "CUDA device %d does not exist (%d found); use a device from 0 to %d",
                            device, count, count - 1);
    char reason[512] = "";
    tk_cuda_device_usable(device, reason, sizeof reason);
    return tk_set_error(TK_ERR_CUDA, "no usable CUDA GPU (%s); use the cpu or omp backend", reason);
}

/* A plan over several devices: all of them must exist.  The count is checked against
 * cudaGetDeviceCount alone (as tk_cuda_require_device), so that asking for 2 GPUs on a
 * machine with 1 names both numbers. */
extern "C" tk_status tk_cuda_require_devices(int first, int count)
{
    const tk_status one = tk_cuda_require_device(first);
    if (one != TK_OK || count <= 1) return one;
    int found = 0;
    const cudaError_t e = cudaGetDeviceCount(&found);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return tk_cuda_require_device(first); /* words the failure as the one-device check does */
    }
    if (first + count > found)
        return tk_set_error(TK_ERR_ARGUMENT,
                            "%d CUDA devices from device %d asked for, but %d found (devices 0 to %d); ask for at most %d",
                            count, first, found, found - 1, found - first);
    return TK_OK;
}

extern "C" int tk_cuda_device_count(void)
{
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return count;
}

extern "C" int tk_has_cuda(void) { return 1; }

/* ---- the device-array entry points' checks (device_arrays.h) ------------------------ */
#include "device_arrays.h"

extern "C" tk_status tk_device_arrays_plan_check(int plan_devices)
{
    if (plan_devices == 0)
        return tk_set_error(TK_ERR_ARGUMENT,
                            "device arrays need a plan on the cuda backend (this plan runs on the CPU, and a device "
                            "array is not copied to the host behind the caller's back): make the plan with backend "
                            "cuda, or pass host arrays");
    if (plan_devices > 1)
        return tk_set_error(TK_ERR_UNSUPPORTED,
                            "device arrays live on one GPU, but this plan spreads over %d (cuda_device_count): make "
                            "it with cuda_device_count 1 on the arrays' device",
                            plan_devices);
    return TK_OK;
}

extern "C" tk_status tk_device_array_check(const void *ptr, size_t bytes, int device, const char *what)
{
    if (bytes == 0) return TK_OK;
    if (!ptr) return tk_set_error(TK_ERR_ARGUMENT, "%s: no array given", what);
    cudaPointerAttributes attr;
    const cudaError_t e = cudaPointerGetAttributes(&attr, ptr);
    if (e != cudaSuccess) {
        cudaGetLastError(); /* an unknown pointer's error is not sticky: clear it */
        return tk_set_error(TK_ERR_ARGUMENT, "%s is not memory CUDA knows (%s): pass an array in the memory of CUDA "
                            "device %d", what, cudaGetErrorString(e), device);
    }
    if (attr.type != cudaMemoryTypeDevice && attr.type != cudaMemoryTypeManaged)
        return tk_set_error(TK_ERR_ARGUMENT, "%s is host memory, not device memory of CUDA device %d: pass a device "
                            "array, or call the host execute", what, device);
    if (attr.device != device)
        return tk_set_error(TK_ERR_ARGUMENT, "%s is on CUDA device %d, but the plan runs on device %d: make the plan "
                            "for the array's device", what, attr.device, device);
    return TK_OK;
}

extern "C" tk_status tk_cuda_stream_wait(void *stream, const char *who)
{
    const cudaError_t e = cudaStreamSynchronize((cudaStream_t)stream);
    if (e != cudaSuccess) return tk_set_error(TK_ERR_CUDA, "%s: waiting for the caller's stream failed: %s", who,
                                              cudaGetErrorString(e));
    return TK_OK;
}
