/* Warp reductions, written once for every core's kernels (the shape of CUB's WarpReduce,
 * reduced to what the cores use).  Width: the lanes of one group (a power of two up to 32);
 * groups are aligned (lane / Width), and every lane of the mask takes part.
 *   tk_warp_allreduce: every lane of the group gets the result (XOR butterfly).
 *   tk_warp_reduce_down: lane 0 of the group gets the result (shuffle down); the other lanes
 *   hold partial values.  The two sum floating-point values in different orders: a kernel
 *   keeps the one it was validated with, so results stay bitwise the same. */
#ifndef TK_WARP_REDUCE_CUH
#define TK_WARP_REDUCE_CUH

#define TK_WARP_ALL_LANES 0xffffffffu

struct tk_op_sum {
    template <typename T> __device__ __forceinline__ T operator()(T a, T b) const { return a + b; }
};
/* Maximum and minimum: one template, so that the two stay alike (floating point through the
 * device's fmax/fmin, ints through sm_80's one-instruction warp reduction where there is one). */
template <bool Max> struct tk_op_extreme {
    template <typename T> __device__ __forceinline__ T operator()(T a, T b) const
    {
        return Max ? (a > b ? a : b) : (a < b ? a : b);
    }
    __device__ __forceinline__ float operator()(float a, float b) const { return Max ? fmaxf(a, b) : fminf(a, b); }
    __device__ __forceinline__ double operator()(double a, double b) const { return Max ? fmax(a, b) : fmin(a, b); }
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
    static __device__ __forceinline__ int redux(unsigned mask, int v)
    {
        return Max ? __reduce_max_sync(mask, v) : __reduce_min_sync(mask, v);
    }
#endif
};
typedef tk_op_extreme<true> tk_op_max;
typedef tk_op_extreme<false> tk_op_min;

/* The shuffle of one step of a group reduction: XOR (butterfly) or down. */
enum tk_warp_shuffle { TK_SHUFFLE_XOR, TK_SHUFFLE_DOWN };

template <int Width, tk_warp_shuffle Shuffle, typename T, typename Op>
__device__ __forceinline__ T tk_warp_reduce_by(T v, Op op, unsigned mask)
{
    static_assert(Width >= 1 && Width <= 32 && (Width & (Width - 1)) == 0, "Width: a power of two up to 32");
#pragma unroll
    for (int o = Width / 2; o >= 1; o >>= 1) {
        if constexpr (Shuffle == TK_SHUFFLE_XOR) v = op(v, __shfl_xor_sync(mask, v, o));
        else v = op(v, __shfl_down_sync(mask, v, o, Width));
    }
    return v;
}

template <int Width = 32, typename T, typename Op>
__device__ __forceinline__ T tk_warp_allreduce(T v, Op op, unsigned mask = TK_WARP_ALL_LANES)
{
    return tk_warp_reduce_by<Width, TK_SHUFFLE_XOR>(v, op, mask);
}

template <int Width = 32, typename T, typename Op>
__device__ __forceinline__ T tk_warp_reduce_down(T v, Op op, unsigned mask = TK_WARP_ALL_LANES)
{
    return tk_warp_reduce_by<Width, TK_SHUFFLE_DOWN>(v, op, mask);
}

/* An int's minimum or maximum (tk_op_min, tk_op_max) over the whole warp, in every lane:
 * sm_80's one-instruction reduction where there is one, the XOR butterfly on sm_75. */
template <typename Op> __device__ __forceinline__ int tk_warp_allreduce_int(int v, Op op, unsigned mask = TK_WARP_ALL_LANES)
{
#if __CUDA_ARCH__ >= 800
    (void)op;
    return Op::redux(mask, v);
#else
    return tk_warp_allreduce<32>(v, op, mask);
#endif
}

#endif
