/* The device allocator of the CUDA cores: counts what they hold, applies the
 * TK_CUDA_MEMORY_LIMIT_MB test knob, and words out-of-memory errors (tk_cuda_memory.h). */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "cuda_memory.h"

/* Live allocations (pointer, size) of every thread: the limit needs what is held, the
 * tests' leak check what is left.  A few dozen at a time, so a plain array. */
static pthread_mutex_t held_lock = PTHREAD_MUTEX_INITIALIZER;
static void **held_ptr;
static size_t *held_size;
static size_t held_count, held_cap, held_bytes;

enum { LIMIT_NONE, LIMIT_SET, LIMIT_MALFORMED };

/* TK_CUDA_MEMORY_LIMIT_MB, read at every call so that a test can set it and unset it. */
static int read_limit(size_t *bytes, const char **text)
{
    const char *s = getenv(TK_CUDA_MEMORY_LIMIT_ENV);
    *text = s;
    if (!s || !*s) return LIMIT_NONE;
    if (*s < '0' || *s > '9') return LIMIT_MALFORMED; /* no sign, no blanks */
    char *end = NULL;
    errno = 0;
    unsigned long long mib = strtoull(s, &end, 10);
    if (errno || *end || mib > (unsigned long long)(SIZE_MAX >> 20)) return LIMIT_MALFORMED;
    *bytes = (size_t)mib << 20;
    return LIMIT_SET;
}

/* Record a live allocation; 0 when the table cannot grow. */
static int remember(void *ptr, size_t bytes)
{
    if (held_count == held_cap) {
        size_t cap = held_cap ? 2 * held_cap : 64;
        void **p = (void **)realloc(held_ptr, cap * sizeof *p);
        if (!p) return 0;
        held_ptr = p;
        size_t *s = (size_t *)realloc(held_size, cap * sizeof *s);
        if (!s) return 0;
        held_size = s;
        held_cap = cap;
    }
    held_ptr[held_count] = ptr, held_size[held_count++] = bytes;
    return 1;
}

extern "C" cudaError_t tk_cuda_malloc(void **ptr, size_t bytes)
{
    *ptr = NULL;
    size_t limit = 0;
    const char *text;
    const int limited = read_limit(&limit, &text) == LIMIT_SET;
    /* Reserve first, so that two threads cannot both pass the limit with one free slice. */
    pthread_mutex_lock(&held_lock);
    if (limited && (held_bytes > limit || bytes > limit - held_bytes)) {
        pthread_mutex_unlock(&held_lock);
        return cudaErrorMemoryAllocation;
    }
    held_bytes += bytes;
    pthread_mutex_unlock(&held_lock);

    cudaError_t err = cudaMalloc(ptr, bytes);
    pthread_mutex_lock(&held_lock);
    if (err == cudaSuccess && *ptr && !remember(*ptr, bytes)) {
        cudaFree(*ptr);
        err = cudaErrorMemoryAllocation;
    }
    if (err != cudaSuccess || !*ptr) held_bytes -= bytes;
    pthread_mutex_unlock(&held_lock);
    if (err != cudaSuccess) {
        *ptr = NULL;
        /* An allocation failure is not sticky; clear it so that it is not reported again
         * by the next cudaGetLastError() (after a kernel launch). */
        if (err == cudaErrorMemoryAllocation) cudaGetLastError();
    }
    return err;
}

extern "C" void tk_cuda_free(void *ptr)
{
    if (!ptr) return;
    pthread_mutex_lock(&held_lock);
    for (size_t i = 0; i < held_count; ++i)
        if (held_ptr[i] == ptr) {
            held_bytes -= held_size[i];
            held_ptr[i] = held_ptr[held_count - 1], held_size[i] = held_size[held_count - 1];
            --held_count;
            break;
        }
    pthread_mutex_unlock(&held_lock);
    cudaFree(ptr);
}

extern "C" cudaError_t tk_cuda_malloc_all(tk_cuda_buffer *buffers, int count)
{
    for (int i = 0; i < count; ++i) *buffers[i].slot = NULL;
    for (int i = 0; i < count; ++i) {
        if (!buffers[i].bytes) continue;
        cudaError_t err = tk_cuda_malloc(buffers[i].slot, buffers[i].bytes);
        if (err != cudaSuccess) {
            tk_cuda_free_all(buffers, i);
            return err;
        }
    }
    return cudaSuccess;
}

extern "C" void tk_cuda_free_all(tk_cuda_buffer *buffers, int count)
{
    for (int i = 0; i < count; ++i) {
        tk_cuda_free(*buffers[i].slot);
        *buffers[i].slot = NULL;
    }
}

extern "C" size_t tk_cuda_memory_in_use(void)
{
    pthread_mutex_lock(&held_lock);
    size_t bytes = held_bytes;
    pthread_mutex_unlock(&held_lock);
    return bytes;
}

extern "C" tk_status tk_cuda_memory_get(size_t *free_bytes, size_t *total_bytes)
{
    size_t limit = 0;
    const char *text;
    const int kind = read_limit(&limit, &text);
    if (kind == LIMIT_MALFORMED)
        return tk_set_error(TK_ERR_ARGUMENT, "%s must be a whole number of MiB, got \"%s\"", TK_CUDA_MEMORY_LIMIT_ENV,
                            text);
    size_t f = 0, t = 0;
    cudaError_t err = cudaMemGetInfo(&f, &t);
    if (err != cudaSuccess)
        return tk_set_error(TK_ERR_CUDA, "CUDA: cudaMemGetInfo failed: %s", cudaGetErrorString(err));
    if (kind == LIMIT_SET) {
        const size_t held = tk_cuda_memory_in_use(), left = limit > held ? limit - held : 0;
        if (left < f) f = left;
    }
    *free_bytes = f;
    *total_bytes = t;
    return TK_OK;
}

extern "C" tk_status tk_cuda_memory_info(int device, size_t *free_bytes, size_t *total_bytes)
{
    int current = 0;
    const tk_status usable = tk_cuda_require_device(device);
    if (usable != TK_OK) return usable;
    cudaError_t err = cudaGetDevice(&current);
    if (err == cudaSuccess) err = cudaSetDevice(device);
    if (err != cudaSuccess) return tk_set_error(TK_ERR_CUDA, "CUDA: cannot use device %d: %s", device, cudaGetErrorString(err));
    tk_status st = tk_cuda_memory_get(free_bytes, total_bytes);
    cudaSetDevice(current); /* the caller's current device, as it was */
    return st;
}

extern "C" int tk_cuda_is_pinned(const void *ptr)
{
    if (!ptr) return 1;
    cudaPointerAttributes attr;
    if (cudaPointerGetAttributes(&attr, ptr) != cudaSuccess) {
        cudaGetLastError(); /* clear the sticky-free error of an unknown pointer */
        return 0;
    }
    return attr.type == cudaMemoryTypeHost;
}

extern "C" size_t tk_cuda_budget(size_t free_bytes)
{
    size_t headroom = free_bytes / 8;
    if (headroom > ((size_t)256 << 20)) headroom = (size_t)256 << 20;
    return free_bytes - headroom;
}

extern "C" void tk_cuda_format_bytes(size_t bytes, char *buf, size_t size)
{
    const double b = (double)bytes;
    if (bytes >= ((size_t)1 << 30)) snprintf(buf, size, "%.2f GiB", b / (double)((size_t)1 << 30));
    else if (bytes >= ((size_t)1 << 20)) snprintf(buf, size, "%.1f MiB", b / (double)((size_t)1 << 20));
    else if (bytes >= 1024) snprintf(buf, size, "%.1f KiB", b / 1024.0);
    else snprintf(buf, size, "%zu bytes", bytes);
}

extern "C" tk_status tk_cuda_out_of_memory(const char *who, const char *what, size_t bytes)
{
    char need[32], free_text[32] = "unknown", total_text[32] = "unknown", limit_text[96] = "";
    size_t f = 0, t = 0, limit = 0;
    const char *text;
    tk_cuda_format_bytes(bytes, need, sizeof need);
    /* the query after the failure, so "free" is what is free now */
    if (tk_cuda_memory_get(&f, &t) == TK_OK) {
        tk_cuda_format_bytes(f, free_text, sizeof free_text);
        tk_cuda_format_bytes(t, total_text, sizeof total_text);
    }
    if (read_limit(&limit, &text) == LIMIT_SET)
        snprintf(limit_text, sizeof limit_text, " (%s=%s limits this process)", TK_CUDA_MEMORY_LIMIT_ENV, text);
    return tk_set_error(TK_ERR_MEMORY, "%s: %s needs %s of GPU memory, %s free of %s%s", who, what, need, free_text,
                        total_text, limit_text);
}
