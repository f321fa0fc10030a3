/* Precision macros, written once: include this before a kernel text that is compiled once per
 * precision (a *_body.h or *_kernels.h of a core), then precision_end.h after it.
 *   TK_REAL       the element type
 *   TK_SFX(name)  the name of this precision's copy (name_f / name_d)
 *   TK_FMA        fused multiply-add: the device's fmaf on the GPU; on the CPU a plain a*b+c
 *                 that -ffp-contract=fast contracts where the target has FMA (libm's soft
 *                 fmaf would not)
 *   TK_SQRT, TK_RSQRT
 * No include guard on purpose: it is included once per body. */
#define TK_REAL float
#define TK_SFX(name) name##_f
#ifdef __CUDACC__
#define TK_FMA fmaf
#define TK_SQRT sqrtf
#define TK_RSQRT rsqrtf
#else
#define TK_FMA(a, b, c) ((a) * (b) + (c))
#define TK_SQRT sqrtf
#define TK_RSQRT(v) (1.0f / sqrtf(v))
#endif
