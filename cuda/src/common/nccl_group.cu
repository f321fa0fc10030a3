/* The GPUs of one host through NCCL, driven by one thread (nccl_group.h). */
#include <cuda_runtime.h>
#include <nccl.h>

#include <new>

#include "common/cuda_check.cuh"
#include "common/cuda_memory.h"
#include "common/multi_device.h" /* TK_MAX_CUDA_DEVICES, tk_cuda_require_devices */
#include "nccl_group.h"

struct tk_nccl_group {
    int first = 0, count = 0;
    ncclComm_t comm[TK_MAX_CUDA_DEVICES] = {};
};

static tk_status nccl_status(ncclResult_t r, const char *call)
{
    if (r == ncclSuccess) return TK_OK;
    return tk_set_error(TK_ERR_CUDA, "NCCL: %s failed: %s (%s)", call, ncclGetErrorString(r), ncclGetLastError(nullptr));
}
#define NCCL_TRY(call)                                            \
    do {                                                          \
        const ncclResult_t tk_nccl_r_ = (call);                   \
        if (tk_nccl_r_ != ncclSuccess) return nccl_status(tk_nccl_r_, #call); \
    } while (0)

/* Every device's calls of one collective inside one group, so that one thread can issue
 * them all without any of them waiting for the others. */
template <class Each> static tk_status grouped(tk_nccl_group *g, const char *what, Each each)
{
    NCCL_TRY(ncclGroupStart());
    ncclResult_t first_error = ncclSuccess;
    for (int p = 0; p < g->count; ++p) {
        ncclResult_t r = each(p);
        if (r != ncclSuccess && first_error == ncclSuccess) first_error = r;
    }
    ncclResult_t end = ncclGroupEnd();
    if (first_error != ncclSuccess) return nccl_status(first_error, what);
    return nccl_status(end, what);
}

extern "C" tk_status tk_nccl_open(int first, int count, tk_nccl_group **out)
{
    *out = nullptr;
    if (count < 1 || count > TK_MAX_CUDA_DEVICES)
        return tk_set_error(TK_ERR_ARGUMENT, "NCCL: %d devices (1..%d)", count, TK_MAX_CUDA_DEVICES);
    const tk_status usable = tk_cuda_require_devices(first, count);
    if (usable != TK_OK) return usable;
    tk_nccl_group *g = new (std::nothrow) tk_nccl_group;
    if (!g) return tk_set_error(TK_ERR_MEMORY, "NCCL: cannot allocate the group");
    int devices[TK_MAX_CUDA_DEVICES];
    for (int p = 0; p < count; ++p) devices[p] = first + p;
    ncclResult_t r = ncclCommInitAll(g->comm, count, devices);
    if (r != ncclSuccess) {
        delete g;
        return nccl_status(r, "ncclCommInitAll");
    }
    g->first = first;
    g->count = count;
    *out = g;
    return TK_OK;
}

extern "C" void tk_nccl_close(tk_nccl_group *g)
{
    if (!g) return;
    for (int p = 0; p < g->count; ++p)
        if (g->comm[p]) ncclCommDestroy(g->comm[p]);
    delete g;
}

extern "C" int tk_nccl_count(const tk_nccl_group *g) { return g ? g->count : 0; }

extern "C" tk_status tk_nccl_broadcast_ranges(tk_nccl_group *g, float *const *buf, const size_t *offset)
{
    NCCL_TRY(ncclGroupStart());
    ncclResult_t first_error = ncclSuccess;
    for (int root = 0; root < g->count; ++root) {
        const size_t lo = offset[root], n = offset[root + 1] - offset[root];
        if (!n) continue;
        for (int p = 0; p < g->count; ++p) {
            /* In place: the root's send buffer is its receive buffer. */
            ncclResult_t r = ncclBroadcast(buf[p] + lo, buf[p] + lo, n, ncclFloat, root, g->comm[p], 0);
            if (r != ncclSuccess && first_error == ncclSuccess) first_error = r;
        }
    }
    ncclResult_t end = ncclGroupEnd();
    if (first_error != ncclSuccess) return nccl_status(first_error, "ncclBroadcast");
    return nccl_status(end, "ncclBroadcast");
}

extern "C" tk_status tk_nccl_reduce_to_first(tk_nccl_group *g, float *const *buf, size_t count)
{
    return grouped(g, "ncclReduce",
                   [&](int p) { return ncclReduce(buf[p], buf[p], count, ncclFloat, ncclSum, 0, g->comm[p], 0); });
}

extern "C" tk_status tk_nccl_broadcast_first(tk_nccl_group *g, float *const *buf, size_t count)
{
    return grouped(g, "ncclBroadcast",
                   [&](int p) { return ncclBroadcast(buf[p], buf[p], count, ncclFloat, 0, g->comm[p], 0); });
}

extern "C" tk_status tk_nccl_allreduce(tk_nccl_group *g, float *const *buf, size_t count)
{
    return grouped(g, "ncclAllReduce",
                   [&](int p) { return ncclAllReduce(buf[p], buf[p], count, ncclFloat, ncclSum, g->comm[p], 0); });
}

extern "C" tk_status tk_nccl_synchronize(tk_nccl_group *g)
{
    for (int p = 0; p < g->count; ++p) {
        TK_CUDA_TRY_RETURN("NCCL", cudaSetDevice(g->first + p));
        TK_CUDA_TRY_RETURN("NCCL", cudaDeviceSynchronize());
    }
    return TK_OK;
}

/* ---- measurement (tk_bench_hooks.h) ---------------------------------------------------- */

#include <algorithm>
#include <vector>

#include "common/timer.h"
#include "tk_bench_hooks.h"

extern "C" tk_status tk_nccl_allreduce_measure(int count, size_t bytes, int repeat, double *ms, double *bus_gbps)
{
    *ms = *bus_gbps = 0;
    if (repeat < 1) repeat = 1;
    tk_nccl_group *g = nullptr;
    tk_status st = tk_nccl_open(0, count, &g);
    if (st != TK_OK) return st;
    float *buf[TK_MAX_CUDA_DEVICES] = {};
    const size_t floats = bytes / sizeof(float);
    for (int p = 0; p < count && st == TK_OK; ++p) {
        cudaError_t err = cudaSetDevice(p);
        if (err == cudaSuccess) err = tk_cuda_malloc(reinterpret_cast<void **>(&buf[p]), floats * sizeof(float) + 16);
        if (err == cudaSuccess) err = cudaMemset(buf[p], 0, floats * sizeof(float));
        st = tk_cuda_status(err, "NCCL all-reduce measurement", "cudaMalloc/cudaMemset");
    }
    std::vector<double> times;
    for (int k = 0; k <= repeat && st == TK_OK; ++k) {
        double t0 = tk_now_ms();
        st = tk_nccl_allreduce(g, buf, floats);
        if (st == TK_OK) st = tk_nccl_synchronize(g);
        if (k > 0) times.push_back(tk_now_ms() - t0); /* the first is the warm-up */
    }
    if (st == TK_OK) {
        std::sort(times.begin(), times.end());
        *ms = times[times.size() / 2];
        *bus_gbps = *ms > 0 ? 2.0 * (count - 1) / count * (double)(floats * sizeof(float)) / (*ms * 1e6) : 0;
    }
    for (int p = 0; p < count; ++p) {
        cudaSetDevice(p);
        tk_cuda_free(buf[p]);
    }
    tk_nccl_close(g);
    return st;
}
