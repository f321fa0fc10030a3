/* Ends a precision_float.h / precision_double.h section.  No include guard on purpose. */
#undef TK_REAL
#undef TK_SFX
#undef TK_FMA
#undef TK_SQRT
#undef TK_RSQRT
