/* A large host copy split over a few OpenMP threads (host_copy.h says why). */
#include "common/host_copy.h"

#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

void tk_host_copy(void *dst, const void *src, size_t bytes)
{
#ifdef _OPENMP
    int threads = omp_get_max_threads();
    if (threads > TK_HOST_COPY_THREADS) threads = TK_HOST_COPY_THREADS;
    if (bytes >= TK_HOST_COPY_SPLIT_BYTES && threads > 1) {
        /* equal parts on 4 KiB boundaries (each thread its own pages), rounded up so that
         * `threads` of them cover every byte; the last is the shorter */
        const size_t share = (bytes + (size_t)threads - 1) / (size_t)threads;
        const size_t part = (share + 4095) & ~(size_t)4095;
#pragma omp parallel for num_threads(threads) schedule(static, 1)
        for (int t = 0; t < threads; ++t) {
            const size_t at = (size_t)t * part;
            if (at < bytes) memcpy((char *)dst + at, (const char *)src + at, bytes - at < part ? bytes - at : part);
        }
        return;
    }
#endif
    memcpy(dst, src, bytes);
}
