/* Internal: the device allocator every CUDA core goes through (cuda_memory.cu).  It
 * counts what the cores hold, applies TK_CUDA_MEMORY_LIMIT_MB (tk_cuda_memory.h) and
 * words out-of-memory errors alike for all cores; and the device check they all make first
 * (device_cuda.cu). */
#ifndef TK_CUDA_MEMORY_INTERNAL_H
#define TK_CUDA_MEMORY_INTERNAL_H

#include <cuda_runtime.h>
#include <stddef.h>

#include "tk_cuda_memory.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Before a core's work: TK_OK where CUDA device `device` exists; else TK_ERR_ARGUMENT for a
 * device number beyond those found, or TK_ERR_CUDA with tk_cuda_device_usable's reason
 * ("no usable CUDA GPU (no NVIDIA driver (libcuda.so.1: ...)); use the cpu or omp backend"). */
tk_status tk_cuda_require_device(int device);

/* cudaMalloc under the limit.  A refusal (real or from the limit) returns
 * cudaErrorMemoryAllocation with the runtime's last error cleared, so that a later
 * cudaGetLastError() after a kernel launch does not report this allocation. */
cudaError_t tk_cuda_malloc(void **ptr, size_t bytes);
/* cudaFree of a pointer from tk_cuda_malloc (NULL: nothing). */
void tk_cuda_free(void *ptr);

/* Several buffers, all or none: on failure the ones already allocated are freed and
 * every slot is NULL again.  bytes[i] == 0 leaves slot i NULL. */
typedef struct tk_cuda_buffer {
    void **slot;
    size_t bytes;
} tk_cuda_buffer;
cudaError_t tk_cuda_malloc_all(tk_cuda_buffer *buffers, int count);
void tk_cuda_free_all(tk_cuda_buffer *buffers, int count);

/* Whether host pointer ptr is in page-locked memory the device can copy from or to directly
 * (cudaMallocHost, cudaHostRegister); NULL counts as pinned (nothing to stage).  The cores
 * stage pageable caller arrays through pinned buffers of their own: a pageable copy runs at
 * a tenth of the bus's rate and holds the host thread (Documentation/benchmarks.md). */
int tk_cuda_is_pinned(const void *ptr);

/* Free and total memory of the current device, the limit applied. */
tk_status tk_cuda_memory_get(size_t *free_bytes, size_t *total_bytes);

/* What a plan may use of free_bytes: all of it less the headroom (an eighth, at most
 * 256 MiB) that the CUDA runtime, libraries and other threads need meanwhile. */
size_t tk_cuda_budget(size_t free_bytes);

/* TK_ERR_MEMORY: "<who>: <what> needs <bytes> of GPU memory, <free> free of <total>",
 * with the limit named when one is set. */
tk_status tk_cuda_out_of_memory(const char *who, const char *what, size_t bytes);

/* A size for messages: "512 bytes", "1.5 KiB", "12.0 MiB", "3.20 GiB". */
void tk_cuda_format_bytes(size_t bytes, char *buf, size_t size);

#ifdef __cplusplus
}
#endif
#endif
