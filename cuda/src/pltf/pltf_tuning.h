/* Launch choices of the PLTF CUDA kernels, as data (CUB's device/dispatch/tuning shape).
 * The compile-time part is a policy type the fused pass is templated on; the rest are the
 * engine's grid sizes.  Every architecture uses today's one set of numbers (measurements:
 * Documentation/benchmarks.md, "PLTF"); a GPU that wants others gets its own policy type. */
#ifndef TK_PLTF_TUNING_H
#define TK_PLTF_TUNING_H

struct tk_pltf_policy_sm70 {
    /* Element-wise, permute, broadcast and divergence kernels: block size, and the most
     * blocks of a grid-stride launch. */
    static constexpr unsigned elementwise_threads = 256;
    static constexpr size_t max_grid_blocks = 65535u * 16u;
    /* The divergence's grid: at most this many blocks per SM (each adds one double). */
    static constexpr unsigned divergence_blocks_per_sm = 8;

    /* Fused KL-PARAFAC pass: a thread per k (so |k| <= fused_max_threads), fibers staged
     * fused_fibers_per_stage at a time, fused_blocks_per_sm blocks per SM; rank padded to
     * 16, 32 or 64 (the registers a thread holds), two blocks per SM up to rank 32. */
    static constexpr int fused_max_threads = 256;
    static constexpr int fused_fibers_per_stage = 8;
    static constexpr int fused_blocks_per_sm = 4;
    static constexpr int fused_max_rank = 64;
    static constexpr int fused_min_blocks(int maxr) { return maxr <= 32 ? 2 : 1; }
    static constexpr unsigned fused_colsum_threads = 64;
    static constexpr unsigned fused_apply_threads = 256;

    /* Naive GTM: joint slices of at most naive_slice entries (1 GiB of float). */
    static constexpr unsigned naive_threads = 256;
    static constexpr unsigned long long naive_max_grid = 1048576;
    static constexpr unsigned long long naive_slice = 1ull << 28;
};

/* The policy every architecture compiles today. */
typedef tk_pltf_policy_sm70 tk_pltf_policy;

#endif
