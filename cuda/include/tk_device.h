/** TensorKernels: can the CUDA backends run here?  One query that every tool and filter
 * uses for `--backend auto` (CUDA when this answers yes, else the CPU) and to refuse an
 * explicit CUDA request early with the reason. \file
 * \ingroup tk_group_common */
#ifndef TK_DEVICE_H
#define TK_DEVICE_H

#include "tk_export.h"

#include <stddef.h>

TK_API_BEGIN

/** 1 when this build has the CUDA backends and GPU `device` exists and runs this build's
 * code (a trivial kernel is launched on it); else 0 with the reason in reason[0..size)
 * ("this build has no CUDA backend", "no NVIDIA driver (...)", "no CUDA-capable device
 * is detected", "the NVIDIA driver supports CUDA X.Y, this build needs ...", the CUDA
 * runtime's message, ...).  reason may be NULL.  Thread-safe; it creates the device's
 * context, which the CUDA backends need anyway. */
int tk_cuda_device_usable(int device, char *reason, size_t size);

/** How many CUDA devices this process sees (CUDA_VISIBLE_DEVICES applied): cudaGetDeviceCount's
 * answer, 0 where it fails (no driver, no device) and in a build without CUDA.  No kernel is
 * launched.  The tools' `--gpus 0` (every visible GPU) counts from `--device` to this. */
int tk_cuda_device_count(void);

TK_API_END
#endif
