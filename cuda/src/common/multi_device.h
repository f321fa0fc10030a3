/* Internal: one batch over several GPUs of one host (the per-voxel cores: fibers, SS-HOPM,
 * eigenvalues).  Their items (voxels, tensors, matrices) are independent, so a batch is cut
 * into contiguous ranges, one a device, and each device runs its range through its own plan
 * state (buffers, streams, chunk loop) in a host thread of its own; the results land in the
 * caller's arrays at the range's offset and are those of one device, bit for bit.
 *
 * Why a host thread a device: each device's chunk loop waits on its own copies and events;
 * one host thread issuing for all devices would serialise those waits.  Why contiguous
 * ranges: the caller's arrays are written straight at their offsets, no gather. */
#ifndef TK_MULTI_DEVICE_H
#define TK_MULTI_DEVICE_H

#include <stddef.h>

#include "tk_bench_hooks.h"
#include "tk_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The most devices one plan spreads over (the options' cuda_device_count). */
#define TK_MAX_CUDA_DEVICES 64

/* The number of devices an options' cuda_device_count asks for: 0 and 1 are one device;
 * a negative count or one above TK_MAX_CUDA_DEVICES is a TK_ERR_ARGUMENT naming `field`
 * (returns 0 then). */
int tk_device_count_checked(int cuda_device_count, const char *field);

/* tk_device_range and tk_run_on_devices: declared in tk_bench_hooks.h, where the tests
 * reach them. */

/* Before a plan over devices first .. first + count - 1 is made: TK_OK where all exist;
 * TK_ERR_ARGUMENT "COUNT CUDA devices from device FIRST asked for, but N found ..." where
 * they do not; tk_cuda_require_device's TK_ERR_CUDA without a usable GPU, and in a build
 * without CUDA TK_ERR_UNSUPPORTED "no CUDA backend" (device_cuda.cu, device_nocuda.c). */
tk_status tk_cuda_require_devices(int first, int count);

#ifdef __cplusplus
}
#endif
#endif
