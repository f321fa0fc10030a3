/* Internal: the walk over a packed symmetric tensor's unique entries, an index class's
 * multiplicity and A x^(m-2), written once for the host and the device (TK_HD).
 *
 * sshopm/sym_storage.c's reference functions (tk_sym_index_next, tk_sym_multiplicity,
 * tk_sym_axm2_d, any dimension) are these on the host, and the CPU and CUDA trackers' peak
 * search takes their dimension-3 case above lmax 8 (tracking/tracking_tensor.h, whose
 * monomial form below that takes the walk's weights).  One text for both keeps the arithmetic
 * and its order one: the unique entries in the packed order of the walk, each entry's weight
 * mult k_i (k_j - [i == j]) / (m (m - 1)), the x factors multiplied in index order less one i
 * and one j. */
#ifndef TK_SYM_TENSOR_HD_H
#define TK_SYM_TENSOR_HD_H

#include <stddef.h>

#include "common/tk_hd.h"

/* Algorithm 4 of the seed: the non-decreasing index tuple after `index` (bump the last
 * position that is not yet dim-1 and copy it right); 0 after (dim-1, ..., dim-1). */
TK_HD static inline int tk_sym_hd_index_next(int order, int dim, int *index)
{
    int p = order - 1;
    while (p >= 0 && index[p] == dim - 1) --p;
    if (p < 0) return 0;
    const int v = index[p] + 1;
    for (int q = p; q < order; ++q) index[q] = v;
    return 1;
}

/* NUMOCC0 of the seed, m! / (k_1! ... k_n!) of a sorted index tuple: m! divided by each k_i!
 * while walking the runs of equal indices. */
TK_HD static inline double tk_sym_hd_multiplicity(int order, const int *sorted_index)
{
    double num = 1.0, den = 1.0;
    int run = 0;
    for (int p = 0; p < order; ++p) {
        num *= (double)(p + 1);
        run = (p > 0 && sorted_index[p] == sorted_index[p - 1]) ? run + 1 : 1;
        den *= (double)run;
    }
    return num / den;
}

/* y (dim x dim, row-major, zeroed by the caller) gets A x^(order-2), A packed
 * (tk_sym_num_unique(order, dim) entries), order >= 2; index (order ints) and count (dim ints)
 * are the caller's scratch.  Entry (i, j) gathers every class holding i and j (twice i when
 * i == j), weighted by the multiplicity of the class less i and j. */
TK_HD static inline void tk_sym_hd_axm2(int order, int dim, const double *packed, const double *x, double *y,
                                        int *index, int *count)
{
    for (int p = 0; p < order; ++p) index[p] = 0;
    const double denom = (double)order * (order - 1);
    size_t k = 0;
    do {
        for (int i = 0; i < dim; ++i) count[i] = 0;
        for (int p = 0; p < order; ++p) ++count[index[p]];
        const double mult = tk_sym_hd_multiplicity(order, index);
        for (int i = 0; i < dim; ++i) {
            if (!count[i]) continue;
            for (int j = i; j < dim; ++j) {
                if (!count[j] || (i == j && count[i] < 2)) continue;
                /* multiplicity of class - {i, j} = mult * k_i * (k_j - [i==j]) / (m (m-1)) */
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
                y[(size_t)i * dim + j] += term;
                if (i != j) y[(size_t)j * dim + i] += term;
            }
        }
        ++k;
    } while (tk_sym_hd_index_next(order, dim, index));
}

/* The index classes of a dimension-3 tensor of `order` (at most TK_SYM_HD_MAX_ORDER), in the
 * packed order of the walk: count[k] how often class k holds each index (the exponents of
 * its monomial x^a y^b z^c) and mult[k] its multiplicity; returns how many classes.  What the
 * trackers' per-plan recipes (the monomial rows, the polynomial form) are built from. */
#define TK_SYM_HD_MAX_ORDER 16
TK_HD static inline int tk_sym_hd_classes3(int order, unsigned char (*count)[3], double *mult)
{
    int index[TK_SYM_HD_MAX_ORDER];
    for (int p = 0; p < order; ++p) index[p] = 0;
    int k = 0;
    do {
        count[k][0] = count[k][1] = count[k][2] = 0;
        for (int p = 0; p < order; ++p) ++count[k][index[p]];
        mult[k] = tk_sym_hd_multiplicity(order, index);
        ++k;
    } while (tk_sym_hd_index_next(order, 3, index));
    return k;
}

#endif
