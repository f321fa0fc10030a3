/* Macros that let one kernel text compile as C11 (CPU) and as CUDA device code. */
#ifndef TK_HD_H
#define TK_HD_H
#ifdef __CUDACC__
#define TK_HD __host__ __device__
#define TK_RESTRICT __restrict__
#define TK_ALWAYS_INLINE __attribute__((always_inline))
#else
#define TK_HD
#define TK_RESTRICT restrict
/* the straight-line kernels must inline into the per-lane loops to vectorize */
#define TK_ALWAYS_INLINE __attribute__((always_inline))
#endif
/* Largest order and dimension the per-start scratch of the adaptive shift and the
 * GPU general kernel hold on the stack. */
#define TK_KERNEL_MAX_ORDER 32
#define TK_KERNEL_MAX_DIM 16
#endif
