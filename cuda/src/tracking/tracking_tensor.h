/* Internal: A x^(m-2) of a packed symmetric tensor of order m in dimension 3, the one
 * contraction the peak search needs, written once for the CPU and the CUDA tracker (TK_HD).
 *
 * Why not tk_sym_axm2_d (sshopm/sym_storage.c): that is a host function for any dimension.
 * This is the same walk and the same arithmetic in the same order for dimension 3 (the
 * unique entries in the packed order of tk_sym_index_next, each entry's weight mult k_i
 * (k_j - [i == j]) / (m (m - 1)), the x factors multiplied in index order less one i and
 * one j), so the CPU tracker's results are bit for bit those it had with tk_sym_axm2_d and
 * the GPU's differ from them only by the device's rounding of libm functions. */
#ifndef TK_TRACKING_TENSOR_H
#define TK_TRACKING_TENSOR_H

#include "common/tk_hd.h"
#include "tk_fibers.h"

/* y (3 x 3, row-major) = A x^(order-2), A packed (tk_sym_num_unique(order, 3) entries);
 * order from 2 to TK_SH_MAX_LMAX. */
TK_HD static inline void tk_tracking_axm2_3(int order, const double *packed, const double *x, double *y)
{
    int index[TK_SH_MAX_LMAX];
    for (int e = 0; e < 9; ++e) y[e] = 0.0;
    if (order < 2 || order > TK_SH_MAX_LMAX) return;
    for (int p = 0; p < order; ++p) index[p] = 0;
    const double denom = (double)order * (order - 1);
    for (int k = 0;; ++k) {
        int count[3] = {0, 0, 0};
        for (int p = 0; p < order; ++p) ++count[index[p]];
        /* the multiplicity m! / (k_0! k_1! k_2!), as tk_sym_multiplicity builds it */
        double num = 1.0, den = 1.0;
        int run = 0;
        for (int p = 0; p < order; ++p) {
            num *= (double)(p + 1);
            run = (p > 0 && index[p] == index[p - 1]) ? run + 1 : 1;
            den *= (double)run;
        }
        const double mult = num / den;
        for (int i = 0; i < 3; ++i) {
            if (!count[i]) continue;
            for (int j = i; j < 3; ++j) {
                if (!count[j] || (i == j && count[i] < 2)) continue;
                const double w = mult * count[i] * (count[j] - (i == j)) / denom;
                double term = packed[k] * w;
                int skip_i = 1, skip_j = 1;
                for (int q = 0; q < order; ++q) {
                    if (skip_i && index[q] == i) {
                        skip_i = 0;
                        continue;
                    }
                    if (skip_j && index[q] == j) {
                        skip_j = 0;
                        continue;
                    }
                    term *= x[index[q]];
                }
                y[i * 3 + j] += term;
                if (i != j) y[j * 3 + i] += term;
            }
        }
        /* the next non-decreasing index tuple (tk_sym_index_next) */
        int p = order - 1;
        while (p >= 0 && index[p] == 2) --p;
        if (p < 0) break;
        const int v = index[p] + 1;
        for (int q = p; q < order; ++q) index[q] = v;
    }
}

#endif
