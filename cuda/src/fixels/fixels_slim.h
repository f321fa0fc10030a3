/* The slim pull kernel's entry points (fixels_slim.cuh), one set a register cap, each built in a
 * unit of its own (fixels_slim_r128.cu, _r112.cu, _r96.cu: compiled side by side, and picked at
 * run time, TK_FIXELS_SLIM_REGS, for A/B runs on one build).  Included by fixels_cuda.cu after
 * fixels_warp.cuh (fx_warp_io, tk_fixels_view). */
#ifndef TK_FIXELS_SLIM_H
#define TK_FIXELS_SLIM_H

#include <cuda_runtime.h>

/* A unit's kernel (for the occupancy calculator and the attributes), its launch on stream q, and
 * its phase cycles (TK_FX_PHASE_TIMING) added into cycles[TK_FX_PHASES], then zeroed. */
typedef struct {
    int registers;
    const void *(*kernel)(void);
    cudaError_t (*launch)(unsigned blocks, unsigned threads, size_t smem, cudaStream_t q, tk_fixels_view view,
                          size_t num_voxels, const double *samples, fx_warp_io io, unsigned *next);
    cudaError_t (*phases)(unsigned long long *cycles);
} fx_slim_entry;

extern const fx_slim_entry fx_slim_r128, fx_slim_r112, fx_slim_r96;

#endif
