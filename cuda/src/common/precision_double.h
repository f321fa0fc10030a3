/* Precision macros in double: see precision_float.h.  No include guard on purpose. */
#define TK_REAL double
#define TK_SFX(name) name##_d
#ifdef __CUDACC__
#define TK_FMA fma
#define TK_SQRT sqrt
#define TK_RSQRT rsqrt
#else
#define TK_FMA(a, b, c) ((a) * (b) + (c))
#define TK_SQRT sqrt
#define TK_RSQRT(v) (1.0 / sqrt(v))
#endif
