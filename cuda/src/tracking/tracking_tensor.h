/* Internal: A x^(m-2) of a packed symmetric tensor in dimension 3, host and device, for the
 * trackers' peak search: the dimension-3 case of common/sym_tensor_hd.h, the text
 * sshopm/sym_storage.c's tk_sym_axm2_d runs on the host, so the CPU tracker's results are bit
 * for bit tk_sym_axm2_d's and the GPU's differ only by the device's rounding of libm
 * functions. */
#ifndef TK_TRACKING_TENSOR_H
#define TK_TRACKING_TENSOR_H

#include "common/sym_tensor_hd.h"
#include "tk_fibers.h"

/* y (3 x 3, row-major) = A x^(order-2), A packed (tk_sym_num_unique(order, 3) entries);
 * order from 2 to TK_SH_MAX_LMAX. */
TK_HD static inline void tk_tracking_axm2_3(int order, const double *packed, const double *x, double *y)
{
    int index[TK_SH_MAX_LMAX], count[3];
    for (int e = 0; e < 9; ++e) y[e] = 0.0;
    if (order < 2 || order > TK_SH_MAX_LMAX) return;
    tk_sym_hd_axm2(order, 3, packed, x, y, index, count);
}

#endif
