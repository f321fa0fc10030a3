/* Device math of FastTucker on CUDA, shared by the factor and core passes: the pass's
 * parameters, the global sub-slice counter, and the CSF fiber product q of one entry.
 * Lanes own rank components: lane r holds q[rr] for r = lane + 32 rr. */
#ifndef TK_TUCKER_DEVICE_CUH
#define TK_TUCKER_DEVICE_CUH

#include <cuda_runtime.h>

#include "common/warp_reduce.cuh"
#include "tucker_internal.h"

/* One mode's B-CSF on the device (tk_tucker_bcsf, part_ptr widened to 64 bits). */
struct dev_mode {
    uint32_t *part_row = nullptr, *part_count = nullptr, *idx = nullptr;
    unsigned long long *part_ptr = nullptr;
    float *val = nullptr;
    unsigned long long parts = 0;
};

/* The parameters of a factor or core pass over mode n. */
struct pass_args {
    int levels, J, R;
    const float *cother[TK_TUCKER_MAX_ORDER - 1]; /* C of the other modes, in index-column order */
    dev_mode mode;    /* mode n's B-CSF */
    float *a;         /* A(n) */
    const float *b;   /* B(n) */
    const float *cn;  /* C(n) (core pass) */
    float *delta;     /* factor pass: changes of split rows */
    float *z;         /* core pass: z per row */
    double *eqd;      /* factor pass, ALS: the normal equations per row, from row_lo (tk_tucker_eq_stride),
                         the last word the entry count */
    uint32_t row_lo;  /* the first row of A(n) this device owns */
    float lr, lambda;
    unsigned long long *counter;
};

/* Two sums reduced together: tk_warp_allreduce over a pair runs both XOR butterflies in
 * one pass, their shuffles interleaved (independent chains), each summed in the order of a
 * single float's butterfly. */
struct float_pair {
    float x, y;
};
struct pair_sum {
    __device__ __forceinline__ float_pair operator()(float_pair a, float_pair b) const { return {a.x + b.x, a.y + b.y}; }
};
/* Found by tk_warp_allreduce through argument-dependent lookup: a pair shuffles word by word. */
__device__ __forceinline__ float_pair __shfl_xor_sync(unsigned mask, float_pair v, int lane_mask)
{
    return {__shfl_xor_sync(mask, v.x, lane_mask), __shfl_xor_sync(mask, v.y, lane_mask)};
}

/* The warp's next sub-slice: lane 0 takes it from the global counter, every lane gets it. */
__device__ __forceinline__ unsigned long long next_part(unsigned long long *counter, int lane)
{
    unsigned long long p = 0;
    if (lane == 0) p = atomicAdd(counter, 1ull);
    return __shfl_sync(TK_WARP_ALL_LANES, p, 0);
}

/* q for entry e (lane r holds q[rr] for r = lane + 32 rr), reusing pre (the product
 * of the first levels - 1 C rows) when those indices equal the previous entry's. */
template <int RPL>
__device__ __forceinline__ void fiber_product(const pass_args &p, unsigned long long e, unsigned long long first,
                                              int lane, float (&pre)[RPL], float (&q)[RPL])
{
    const int L = p.levels;
    const uint32_t *ix = p.mode.idx + e * (unsigned long long)L;
    bool reuse = e > first;
    for (int k = 0; k + 1 < L && reuse; ++k) reuse = __ldg(ix + k) == __ldg(ix + k - L);
    if (!reuse) {
#pragma unroll
        for (int rr = 0; rr < RPL; ++rr) pre[rr] = 1.0f;
        for (int k = 0; k + 1 < L; ++k) {
            const float *row = p.cother[k] + (size_t)__ldg(ix + k) * (size_t)p.R;
#pragma unroll
            for (int rr = 0; rr < RPL; ++rr) {
                int r = lane + 32 * rr;
                if (r < p.R) pre[rr] *= __ldg(row + r);
            }
        }
    }
    const float *last = p.cother[L - 1] + (size_t)__ldg(ix + L - 1) * (size_t)p.R;
#pragma unroll
    for (int rr = 0; rr < RPL; ++rr) {
        int r = lane + 32 * rr;
        q[rr] = r < p.R ? pre[rr] * __ldg(last + r) : 0.0f;
    }
}

#endif
