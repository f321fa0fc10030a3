/* The slim pull kernel's entry points (fixels_slim.cuh), built in a unit of its own at each
 * register cap: fixels_slim_r128.cu (the slim kernel whole's) and fixels_slim_r80.cu (the split
 * form's; TK_FIXELS_SLIM_REGS=128 or 80 runs both forms from one unit for A/B).
 * Why several: the slim kernel whole was measured no faster at 112 and 13% slower at 96 on an
 * H200 (session 18: its climbs spill), but the split form's segmentation kernel, without the
 * climbs, spills 140 bytes at 80, where the fewer registers hold 24 warps an SM instead of 16
 * (at 96, measured in a unit since dropped: 4 bytes, up to 21 warps, no faster on an H100).  Included by fixels_cuda.cu after
 * fixels_warp.cuh (fx_warp_io, tk_fixels_view). */
#ifndef TK_FIXELS_SLIM_H
#define TK_FIXELS_SLIM_H

#include <cuda_runtime.h>

/* A unit's kernel (for the occupancy calculator and the attributes; split: the split form's
 * segmentation kernel), its launch on stream q (split NULL: the one kernel; else the split form's
 * three, fixels_split.cuh, on that hand-off), and its phase cycles (TK_FX_PHASE_TIMING) added into
 * cycles[TK_FX_PHASES], then zeroed. */
typedef struct {
    int registers;
    const void *(*kernel)(int split);
    cudaError_t (*launch)(unsigned blocks, unsigned threads, size_t smem, cudaStream_t q, tk_fixels_view view,
                          size_t num_voxels, const double *samples, fx_warp_io io, unsigned *next,
                          const fx_split_io *split);
    cudaError_t (*phases)(unsigned long long *cycles);
} fx_slim_entry;

extern const fx_slim_entry fx_slim_r128, fx_slim_r80;

#endif
