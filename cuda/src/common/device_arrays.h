/* Internal: what the per-voxel cores' device-array entry points share (tk_fibers_plan_execute_device,
 * tk_sshopm_plan_execute_device, tk_eig_plan_execute_device): the checks they make before any
 * work, the caller's stream, and the probe that counts the bytes of callers' arrays the cores
 * copy between host and device (the tests' proof that device arrays never cross). */
#ifndef TK_DEVICE_ARRAYS_H
#define TK_DEVICE_ARRAYS_H

#include <stddef.h>

#include "tk_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Before a device-array execute of a plan that runs on `plan_devices` GPUs (0: the CPU):
 * TK_ERR_UNSUPPORTED in a build without CUDA ("no CUDA backend", as every core words it),
 * TK_ERR_ARGUMENT for a cpu/omp plan (device arrays are never copied to the host behind the
 * caller's back), TK_ERR_UNSUPPORTED for a plan over several GPUs (the arrays live on one). */
tk_status tk_device_arrays_plan_check(int plan_devices);

/* TK_OK where [ptr, ptr + bytes) is CUDA device (or managed) memory of `device`; else
 * TK_ERR_ARGUMENT naming `what` ("sh is host memory, not device memory of CUDA device 0", ...).
 * NULL with bytes > 0 is refused; bytes == 0 passes.  No CUDA: TK_ERR_UNSUPPORTED. */
tk_status tk_device_array_check(const void *ptr, size_t bytes, int device, const char *what);

/* Waits for the work queued on the caller's stream (a cudaStream_t; NULL: the legacy default
 * stream) so that the arrays it writes are complete before a core reads them. */
tk_status tk_cuda_stream_wait(void *stream, const char *who);

/* The transfer probe: every copy of a caller's array (an input, or a result) between host and
 * device memory adds its bytes here (transfer_count.c), read by tk_test_array_transfer_bytes
 * (tk_bench_hooks.h).  A process-wide atomic counter: a test probe, not state of a core. */
void tk_count_array_transfer(size_t bytes);

#ifdef __cplusplus
}
#endif
#endif
