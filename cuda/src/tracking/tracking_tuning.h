/* The CUDA tracker's launch choices, as data.  One thread a seed: a thread's scratch (the
 * interpolated series, the peak search's tensors, the SH basis values) is several KiB of
 * local memory, so small blocks keep enough of them resident; the gather is a block a
 * streamline. */
#ifndef TK_TRACKING_TUNING_H
#define TK_TRACKING_TUNING_H

struct tk_tracking_policy {
    static constexpr int block_threads = 64;   /* tracking_kernel */
    static constexpr int gather_threads = 128; /* tracking_gather_kernel */
    static constexpr int gather_blocks = 65535;
};

#endif
