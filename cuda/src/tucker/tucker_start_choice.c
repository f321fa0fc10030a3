/* Which start a training takes by default ("auto"): the random start, or the spectral start with
 * one deflation round, chosen from how densely the data samples its unfoldings' columns and its
 * largest mode's rows (Documentation/benchmarks.md, "The default start"). */
#include "tk_tucker.h"

void tk_tucker_sampling_of(const tk_tucker_coo *t, tk_tucker_sampling *s)
{
    s->column_entries = s->row_entries = 0;
    s->column_mode = s->row_mode = 0;
    if (!t || t->order < 1 || t->order > TK_TUCKER_MAX_ORDER) return;
    for (int n = 0; n < t->order; ++n) {
        /* X(n)'s columns are the other modes' index tuples: nnz / their count entries a
         * column; in double, since the product overflows 64 bits at ten modes of 2^32 */
        double columns = 1;
        for (int k = 0; k < t->order; ++k)
            if (k != n) columns *= t->dims[k] ? (double)t->dims[k] : 1.0;
        const double entries = (double)t->nnz / columns;
        if (entries > s->column_entries) s->column_entries = entries, s->column_mode = n;
        if (t->dims[n] > t->dims[s->row_mode]) s->row_mode = n;
    }
    s->row_entries = t->dims[s->row_mode] ? (double)t->nnz / (double)t->dims[s->row_mode] : 0;
}

int tk_tucker_prefers_spectral(const tk_tucker_coo *t, int rank_j)
{
    if (!t || !t->nnz) return 0;
    tk_tucker_sampling s;
    tk_tucker_sampling_of(t, &s);
    return s.column_entries < TK_TUCKER_SPECTRAL_BELOW_COLUMN_ENTRIES ||
           s.row_entries < TK_TUCKER_SPECTRAL_BELOW_ROW_ENTRIES_PER_RANK * rank_j;
}
