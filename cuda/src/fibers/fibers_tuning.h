/* Launch choices of the CUDA peak finder, as data (the shape of CUB's tuning policies): the
 * compile-time policy the kernels are templated on (block size, warps a block, the occupancy
 * the double-precision climbs are compiled for) and the host-side sizes per architecture
 * (grid-pass waves, chunk cap).  Every architecture from sm_70 on runs today's choices (the
 * H100 measurements behind them: Documentation/benchmarks.md, "Fibers on CUDA"); a faster
 * row for a new architecture goes here, not into the kernels or the dispatch. */
#ifndef TK_FIBERS_TUNING_H
#define TK_FIBERS_TUNING_H

#include <stddef.h>

/* The kernels' compile-time policy. */
struct tk_fibers_policy_sm70 {
    /* the grid pass runs a warp per voxel; each warp's shared memory holds its grid values */
    static constexpr int warps_per_block = 4;
    static constexpr int block_threads = 32 * warps_per_block;
    /* __launch_bounds__' minimum blocks per SM of the polish and climb kernels (double
     * Newton): caps their registers so that four blocks share an SM */
    static constexpr int climb_min_blocks = 4;
};
typedef tk_fibers_policy_sm70 tk_fibers_policy;

/* The host's sizes, per architecture (compute capability major * 10 + minor and up). */
typedef struct tk_fibers_tuning {
    int min_arch;
    int grid_waves;          /* the grid pass's blocks: at most this many times those resident at once (its
                              * warps take voxels from a counter, so blocks past the resident ones find
                              * it spent: one wave measured as eight, session 30) */
    size_t max_chunk_voxels; /* voxels per chunk (one per stream) at most */
} tk_fibers_tuning;

static const tk_fibers_tuning tk_fibers_tuning_table[] = {
    /* 2^17 voxels a chunk (from 2^18, session 27): with the pinned staging, smaller chunks let
     * the copies hide behind the kernels (the first chunk is a quarter of this: fibers_cuda.cu's
     * ramp); 2^16 and 2^17 measured alike on a lent H200, 2^15 slower on the whole-brain input */
    {70, 8, (size_t)1 << 17},
};

/* The row for an architecture: the last whose min_arch it reaches (the first row below all). */
static inline tk_fibers_tuning tk_fibers_tuning_for(int arch)
{
    tk_fibers_tuning row = tk_fibers_tuning_table[0];
    for (size_t i = 1; i < sizeof tk_fibers_tuning_table / sizeof tk_fibers_tuning_table[0]; ++i)
        if (arch >= tk_fibers_tuning_table[i].min_arch) row = tk_fibers_tuning_table[i];
    return row;
}

#endif
