/* The CUDA tracker's launch choices, as data.  One thread a seed: a thread's scratch (the
 * interpolated series, the peak search's tensors, the SH basis values) is several KiB of
 * local memory, so small blocks keep enough of them resident; the gather is a block a
 * streamline. */
#ifndef TK_TRACKING_TUNING_H
#define TK_TRACKING_TUNING_H

/* Blocks of the warp kernel each SM should hold at once: the register budget follows
 * (65536 / (128 x blocks) a thread: 128 at 4, which measured 1.2x faster than the 168 the
 * compiler takes unbounded; 5 blocks, 102 registers, no faster).  A compile-time knob for
 * the tuning runs. */
#ifndef TK_TRACK_WARP_MIN_BLOCKS
#define TK_TRACK_WARP_MIN_BLOCKS 4
#endif

struct tk_tracking_policy {
    static constexpr int block_threads = 64;   /* tracking_kernel */
    static constexpr int warp_block_threads = 128; /* tracking_warp_kernel: four warps, a seed each;
                                                    tracking_group_kernel: 128 / G seeds */
    static constexpr int warp_min_blocks = TK_TRACK_WARP_MIN_BLOCKS;
    static constexpr int gather_threads = 128; /* tracking_gather_kernel */
    static constexpr int gather_blocks = 65535;
};

#endif
