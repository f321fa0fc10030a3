/* Internal: a host-to-host copy of a large array by several threads, for the CUDA cores'
 * staging of pageable caller arrays into pinned buffers.  One thread's memcpy from a
 * pageable array ran at about 5.4 GB/s on a lent H200's host, where the pinned buffer then
 * crosses the bus at 52 GB/s: one thread left the GPU waiting for its next chunk
 * (Documentation/benchmarks.md, "Fiber directions", session 27). */
#ifndef TK_HOST_COPY_H
#define TK_HOST_COPY_H

#include <stddef.h>

/* tk_host_copy(dst, src, bytes): memcpy split over up to TK_HOST_COPY_THREADS OpenMP threads
 * (fewer where OpenMP allows fewer; one below TK_HOST_COPY_SPLIT_BYTES, where starting threads
 * costs more than it saves).  Declared in tk_bench_hooks.h, where the tests reach it too. */
#include "tk_bench_hooks.h"

enum { TK_HOST_COPY_THREADS = 4 };
#define TK_HOST_COPY_SPLIT_BYTES ((size_t)1 << 20)

#endif
