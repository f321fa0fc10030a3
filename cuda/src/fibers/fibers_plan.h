/* Internal: what a fibers plan holds, and the backends it dispatches to. */
#ifndef TK_FIBERS_PLAN_H
#define TK_FIBERS_PLAN_H

#include "common/multi_device.h"
#include "fibers_internal.h"
#include "tk_bench_hooks.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The CUDA backend's state, owned by a plan: the tables on the device, the chunk buffers,
 * the streams and their events (fibers_cuda.cu). */
typedef struct tk_fibers_cuda_state tk_fibers_cuda_state;

struct tk_fibers_plan {
    tk_fibers_options opts; /* checked, backend resolved (never AUTO) */
    size_t max_voxels;
    tk_fibers_tables tables;
    int num_devices;            /* CUDA: the devices cuda_device .. + num_devices - 1; 0 on the CPU */
    tk_fibers_cuda_state *cuda[TK_MAX_CUDA_DEVICES]; /* one state a device (NULL on the CPU) */
};

/* The cpu/omp backend: one execute of a plan's tables (fibers_peaks.c). */
tk_status tk_fibers_cpu_execute(const tk_fibers_tables *tables, const tk_fibers_options *opts, size_t num_voxels,
                                const float *sh, const uint8_t *mask, float *directions, float *amplitudes,
                                size_t *bad_voxels, tk_fibers_work *work);

/* The CUDA backend (fibers_cuda.cu, or fibers_nocuda.c's clear errors): device state sized
 * for chunks of up to max_voxels, an execute that streams any count through them, and its end
 * (frees every byte of device memory create took). */
tk_status tk_fibers_cuda_create(const tk_fibers_tables *tables, const tk_fibers_options *opts, size_t max_voxels,
                                tk_fibers_cuda_state **state);
tk_status tk_fibers_cuda_execute(tk_fibers_cuda_state *state, size_t num_voxels, const float *sh, const uint8_t *mask,
                                 float *directions, float *amplitudes, size_t *bad_voxels, double *kernel_ms);
/* The same on arrays already in the device's memory: the chunks are copied device to device. */
tk_status tk_fibers_cuda_execute_device(tk_fibers_cuda_state *state, size_t num_voxels, const float *sh,
                                        const uint8_t *mask, float *directions, float *amplitudes,
                                        size_t *bad_voxels, double *kernel_ms);
void tk_fibers_cuda_destroy(tk_fibers_cuda_state *state);

#ifdef __cplusplus
}
#endif
#endif
