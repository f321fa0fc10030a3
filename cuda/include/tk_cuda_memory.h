/** TensorKernels: GPU memory as the CUDA backends of every core see it.
 *
 * Out of GPU memory never gives a wrong result: the batched cores (SS-HOPM, fibers,
 * eigenvalues) size their chunks to the free memory (less some headroom) and halve a
 * chunk whose buffers still do not fit; the cores whose whole model must be resident
 * (FastTucker, PLTF) fail with TK_ERR_MEMORY and a message such as "... needs 3.20 GiB
 * of GPU memory, 1.10 GiB free of 79.10 GiB".  Every device buffer is freed on every
 * error path.
 *
 * Testing and debugging knob: the environment variable TK_CUDA_MEMORY_LIMIT_MB, a whole
 * number of MiB (2^20 bytes), makes the CUDA backends of this process behave as if only
 * that much device memory were theirs: the free memory they plan with is
 * min(real free, limit - what they hold now), and an allocation beyond the limit fails
 * exactly as a real cudaErrorMemoryAllocation does.  It is read at every call, is shared
 * by all threads, and counts only the cores' own buffers (not the CUDA context, cuBLAS
 * workspaces or constant memory).  Unset or empty: no limit.
 * \file
 * \ingroup tk_group_common */
#ifndef TK_CUDA_MEMORY_H
#define TK_CUDA_MEMORY_H

#include "tk_export.h"

#include <stddef.h>

#include "tk_status.h"

TK_API_BEGIN

#define TK_CUDA_MEMORY_LIMIT_ENV "TK_CUDA_MEMORY_LIMIT_MB"

/** Free and total memory of a device as the cores see it (the limit above applied to
 * free).  TK_ERR_UNSUPPORTED in a build without CUDA, TK_ERR_CUDA without a device,
 * TK_ERR_ARGUMENT for a TK_CUDA_MEMORY_LIMIT_MB that is not a whole number. */
tk_status tk_cuda_memory_info(int device, size_t *free_bytes, size_t *total_bytes);

/** Bytes of device memory the cores of this process hold right now, over all threads
 * and devices (0 between calls of the batched cores and after a solver or
 * factorization is destroyed: the tests' leak check).  0 without CUDA. */
size_t tk_cuda_memory_in_use(void);

TK_API_END
#endif
