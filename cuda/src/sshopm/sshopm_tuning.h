/* Launch shapes of the SS-HOPM kernels per GPU architecture (the tuning layer), as data:
 * one policy a row, picked by the device's compute capability (the last row whose
 * min_cc the device reaches).  Today one row serves every architecture: the choices
 * the kernels were measured with (Documentation/benchmarks.md).  A policy is a type, so
 * that the unrolled kernel's __launch_bounds__ follows its block size.  C++ (CUDA) only. */
#ifndef TK_SSHOPM_TUNING_H
#define TK_SSHOPM_TUNING_H

#include <stddef.h>

struct tk_sshopm_policy_all {
    static constexpr int min_cc = 0;                 /* from this compute capability (10 * major + minor) on */
    static constexpr int unrolled_block = 128;       /* threads per block, one per (tensor, start) */
    static constexpr int general_block_max = 128;    /* general kernel: threads over a tensor's starts, rounded up
                                                        to whole warps below this */
    static constexpr int general_blocks_per_sm = 64; /* general kernel: grid of at most this many blocks per SM
                                                        (blocks loop over the tensors beyond it) */
};

/* The general kernel's block for `starts` starts per tensor. */
template <class Policy> static inline int tk_sshopm_general_block(int starts)
{
    return starts >= Policy::general_block_max ? Policy::general_block_max : ((starts + 31) / 32) * 32;
}

/* The general kernel's grid for `tensors` tensors on `sm_count` SMs. */
template <class Policy> static inline size_t tk_sshopm_general_grid(size_t tensors, int sm_count)
{
    const size_t cap = (size_t)sm_count * Policy::general_blocks_per_sm;
    return tensors < cap ? tensors : cap;
}

#endif
