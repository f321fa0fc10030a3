/* Launch choices of the FastTucker CUDA kernels, as data per architecture (CUB's
 * device/dispatch/tuning shape).  The compile-time part (block shape, tiles) is a policy type
 * the kernels are templated on; the run-time part (how many blocks per SM cover the GPU) is a
 * table row picked by the device's compute capability.  Every architecture uses today's one
 * set of numbers (measurements: Documentation/benchmarks.md, "Sparse FastTucker"); a GPU that
 * wants others gets its own row, and a policy type where the block shape must change. */
#ifndef TK_TUCKER_TUNING_H
#define TK_TUCKER_TUNING_H

/* Block shape of the kernels, fixed at compile time (launch bounds, shared arrays). */
struct tk_tucker_policy_sm70 {
    /* Pass and refresh kernels: one warp per B-CSF sub-slice (pass) or model row (refresh). */
    static constexpr int warps_per_block = 8;
    static constexpr int threads_per_block = warps_per_block * 32;
    /* G += A^T Z: a block sums gram_rows_per_block rows in tiles of gram_tile_rows, each of
     * its gram_threads threads owning up to gram_outputs_per_thread of the J x R outputs
     * (gram_threads * gram_outputs_per_thread covers TK_TUCKER_MAX_RANK^2). */
    static constexpr int gram_threads = 256;
    static constexpr int gram_outputs_per_thread = 16;
    static constexpr int gram_tile_rows = 32;
    static constexpr int gram_rows_per_block = 4096;
    /* The factor pass a lane a sub-slice (J, R <= 32): blocks of 4 warps, 3 an SM, so that a
     * thread's 168 registers (its row, q and v = B q) fit 12 warps an SM without spilling. */
    static constexpr int lanes_threads_per_block = 128;
    static constexpr int lanes_blocks_per_sm = 3;
    /* B += lr (G / nnz - lambda B): one block of this many threads. */
    static constexpr int core_update_threads = 1024;
};

/* The policy every architecture compiles today. */
typedef tk_tucker_policy_sm70 tk_tucker_policy;

/* Grid sizes: enough resident blocks to cover the GPU, each looping over its work. */
typedef struct tk_tucker_tuning {
    int min_cc;                /* first compute capability (major * 10 + minor) of the row */
    int pass_blocks_per_sm;    /* factor and core passes (sub-slices from a global counter) */
    int refresh_blocks_per_sm; /* refresh: C(n) = A(n) B(n), a warp per row */
} tk_tucker_tuning;

static const tk_tucker_tuning tk_tucker_tuning_table[] = {
    {0, 8, 16}, /* every GPU so far (tuned on sm_90) */
};

/* The last row whose min_cc the device reaches. */
static inline tk_tucker_tuning tk_tucker_tuning_for(int cc)
{
    const int rows = (int)(sizeof tk_tucker_tuning_table / sizeof tk_tucker_tuning_table[0]);
    tk_tucker_tuning t = tk_tucker_tuning_table[0];
    for (int k = 1; k < rows; ++k)
        if (cc >= tk_tucker_tuning_table[k].min_cc) t = tk_tucker_tuning_table[k];
    return t;
}

#endif
