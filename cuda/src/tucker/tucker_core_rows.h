/* The core fit's per-row sums (tucker_spectral.c's core_rows): the entries of one mode's rows
 * and the sums of a row, shared by the portable text and its AVX2 copy
 * (tucker_core_rows_avx2.c). */
#ifndef TK_TUCKER_CORE_ROWS_H
#define TK_TUCKER_CORE_ROWS_H

#include <stddef.h>
#include <stdint.h>

#include "tk_tucker.h"

/* The entries of t copied in order of mode n's index, row i's at row_ptr[i] .. row_ptr[i + 1]:
 * the other modes' indices (others[], order - 1 an entry) and the values.  A copy rather than a
 * permutation: the core fit visits every entry 3 x 20 times, and gathering them through a
 * permutation missed the cache on each (two thirds of the start's time at 3.9M entries). */
typedef struct rows_of_mode {
    int others[TK_TUCKER_MAX_ORDER - 1];
    size_t *row_ptr;
    uint32_t *idx;
    float *val;
} rows_of_mode;

/* Entries ahead whose C rows the row sums prefetch (random reads in a large mode's C). */
#define TK_TUCKER_CORE_PREFETCH 16

/* The C rows of the entry TK_TUCKER_CORE_PREFETCH after p asked for early, so that their misses
 * overlap the sums of the entries before it. */
static inline void tk_tucker_core_prefetch(const rows_of_mode *rm, int K, double *const *C, int R, size_t p,
                                           size_t nnz)
{
    if (p + TK_TUCKER_CORE_PREFETCH < nnz)
        for (int k = 0; k < K; ++k)
            __builtin_prefetch(C[rm->others[k]] + (size_t)rm->idx[(p + TK_TUCKER_CORE_PREFETCH) * K + k] * R);
}

/* Row i's S_i = sum q q^T (upper triangle; the rest 0) into S and t_i = sum x q into T, R = 4 or
 * 8, K = order - 1 other modes, with AVX2's four-lane products and sums (no FMA, no
 * contraction): the same operations on the same values in the same order as the portable
 * core_row_sums, so the same bits. */
void tk_tucker_core_row_sums_avx2(const rows_of_mode *rm, int K, double *const *C, int R, size_t nnz, size_t i,
                                  double *S, double *T);

#endif
