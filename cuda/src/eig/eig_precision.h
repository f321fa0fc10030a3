/* The precision macros of the eigensolver's shared texts (eig_body.h, eig_lanes_body.h),
 * written once for the CPU and the GPU: define EIG_DOUBLE to 1 or 0, then include this.
 * No include guard on purpose: each inclusion switches to EIG_DOUBLE's precision (it
 * drops the previous one's macros first). */
#undef EIG_REAL
#undef EIG_NAME
#undef EIG_LIBM
#undef EIG_EPS
#undef EIG_SAFMIN
#undef EIG_SQRT
#undef EIG_FABS
#undef EIG_LDEXP
#undef EIG_FREXP
#undef EIG_HYPOT
#undef EIG_NAN

#if EIG_DOUBLE
#define EIG_REAL double
#define EIG_NAME(x) x##_d
#define EIG_LIBM(fn) fn /* the libm function of this precision: sqrt, fabs, ... */
#define EIG_EPS 0x1p-52
#define EIG_SAFMIN 0x1p-1022
#else
#define EIG_REAL float
#define EIG_NAME(x) x##_f
#define EIG_LIBM(fn) fn##f
#define EIG_EPS 0x1p-23f
#define EIG_SAFMIN 0x1p-126f
#endif
#define EIG_SQRT EIG_LIBM(sqrt)
#define EIG_FABS EIG_LIBM(fabs)
#define EIG_LDEXP EIG_LIBM(ldexp)
#define EIG_FREXP EIG_LIBM(frexp)
#define EIG_HYPOT EIG_LIBM(hypot)
#define EIG_NAN ((EIG_REAL)NAN)
