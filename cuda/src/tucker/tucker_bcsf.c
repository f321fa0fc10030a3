/* B-CSF storage for one mode: entries sorted by (i_mode, other indices in mode
 * order), slices of one i_mode split into sub-slices of at most fiber_threshold
 * entries.  CSF fibers stay implicit: runs of equal leading indices, which the
 * kernels detect to reuse their shared products. */
#include <stdlib.h>
#include <string.h>

#include "tucker_internal.h"

void tk_tucker_bcsf_free(tk_tucker_bcsf *b)
{
    if (!b) return;
    /* Every array a B-CSF owns; the rest of it is sizes. */
    void *owned[] = {b->part_row, b->part_count, b->part_ptr, b->idx, b->val};
    for (size_t k = 0; k < sizeof owned / sizeof owned[0]; ++k) free(owned[k]);
    memset(b, 0, sizeof *b);
}

static int is_sorted(const tk_tucker_coo *t)
{
    size_t order = (size_t)t->order;
    for (size_t e = 1; e < t->nnz; ++e) {
        const uint32_t *p = t->idx + (e - 1) * order, *q = p + order;
        for (size_t n = 0; n < order; ++n) {
            if (p[n] < q[n]) break;
            if (p[n] > q[n]) return 0;
        }
    }
    return 1;
}

/* Stable counting sort of perm by one mode; count has dims[mode] + 1 slots. */
static void sort_pass(const tk_tucker_coo *t, int mode, const size_t *perm, size_t *next, size_t *count)
{
    size_t rows = t->dims[mode], order = (size_t)t->order;
    memset(count, 0, (rows + 1) * sizeof *count);
    for (size_t e = 0; e < t->nnz; ++e) ++count[t->idx[(perm ? perm[e] : e) * order + (size_t)mode] + 1];
    for (size_t i = 0; i < rows; ++i) count[i + 1] += count[i];
    for (size_t e = 0; e < t->nnz; ++e) {
        size_t src = perm ? perm[e] : e;
        next[count[t->idx[src * order + (size_t)mode]]++] = src;
    }
}

tk_status tk_tucker_bcsf_build(const tk_tucker_coo *t, int mode, size_t fiber_threshold, tk_tucker_bcsf *out)
{
    memset(out, 0, sizeof *out);
    if (mode < 0 || mode >= t->order) return tk_set_error(TK_ERR_ARGUMENT, "mode %d is outside the tensor", mode + 1);
    if (fiber_threshold < 1) return tk_set_error(TK_ERR_ARGUMENT, "the fiber threshold must be at least 1");
    size_t order = (size_t)t->order, nnz = t->nnz, maxdim = 0, others = order - 1;
    for (size_t n = 0; n < order; ++n)
        if (t->dims[n] > maxdim) maxdim = t->dims[n];
    out->order = t->order;
    out->mode = mode;
    out->rows = t->dims[mode];
    out->nnz = nnz;
    tk_tucker_other_modes(t->order, mode, out->others);

    size_t *perm = malloc(nnz * sizeof *perm + 1), *next = malloc(nnz * sizeof *next + 1);
    size_t *count = malloc((maxdim + 1) * sizeof *count);
    out->idx = malloc(nnz * others * sizeof *out->idx + 1);
    out->val = malloc(nnz * sizeof *out->val + 1);
    tk_status st = TK_OK;
    if (!perm || !next || !count || !out->idx || !out->val) {
        st = tk_set_error(TK_ERR_MEMORY, "cannot allocate the B-CSF of mode %d (%zu entries)", mode + 1, nnz);
        goto done;
    }
    /* Sorted input needs one stable pass by the mode; otherwise LSD radix over
     * the other modes first. */
    const size_t *src = NULL;
    if (!is_sorted(t)) {
        for (int k = (int)others - 1; k >= 0; --k) {
            sort_pass(t, out->others[k], src, next, count);
            size_t *swap = perm;
            perm = next;
            next = swap;
            src = perm;
        }
    }
    sort_pass(t, mode, src, next, count);
    /* count[i] now ends row i: rows start at count[i-1]. */
    size_t parts = 0;
    for (size_t i = 0, lo = 0; i < out->rows; ++i) {
        size_t c = count[i] - lo;
        parts += (c + fiber_threshold - 1) / fiber_threshold;
        lo = count[i];
    }
    out->num_parts = parts;
    out->part_row = malloc(parts * sizeof *out->part_row + 1);
    out->part_count = malloc(parts * sizeof *out->part_count + 1);
    out->part_ptr = malloc((parts + 1) * sizeof *out->part_ptr);
    if (!out->part_row || !out->part_count || !out->part_ptr) {
        st = tk_set_error(TK_ERR_MEMORY, "cannot allocate %zu sub-slices of mode %d", parts, mode + 1);
        goto done;
    }
    size_t p = 0;
    for (size_t i = 0, lo = 0; i < out->rows; ++i) {
        size_t c = count[i] - lo, s = (c + fiber_threshold - 1) / fiber_threshold;
        /* Equal sizes (within one) balance the workers better than full + remainder. */
        for (size_t k = 0; k < s; ++k) {
            out->part_row[p] = (uint32_t)i;
            out->part_count[p] = (uint32_t)s;
            out->part_ptr[p] = lo + c * k / s;
            ++p;
        }
        lo = count[i];
    }
    out->part_ptr[parts] = nnz;
    for (size_t e = 0; e < nnz; ++e) {
        const uint32_t *ix = t->idx + next[e] * order;
        for (size_t k = 0; k < others; ++k) out->idx[e * others + k] = ix[out->others[k]];
        out->val[e] = t->val[next[e]];
    }
done: /* st says whether it failed */
    free(perm);
    free(next);
    free(count);
    if (st != TK_OK) tk_tucker_bcsf_free(out);
    return st;
}

tk_status tk_tucker_bcsf_build_modes(const tk_tucker_coo *t, size_t fiber_threshold, int parallel, tk_tucker_bcsf *out)
{
    /* Each build is a sequential radix sort: one mode a thread.  A failed build is
     * repeated here so that its message lands in this thread. */
    tk_status built[TK_TUCKER_MAX_ORDER], st = TK_OK;
    const int order = t->order;
#pragma omp parallel for schedule(dynamic, 1) if (parallel)
    for (int n = 0; n < order; ++n) built[n] = tk_tucker_bcsf_build(t, n, fiber_threshold, &out[n]);
    for (int n = 0; n < order && st == TK_OK; ++n)
        if (built[n] != TK_OK) st = tk_tucker_bcsf_build(t, n, fiber_threshold, &out[n]);
    if (st != TK_OK)
        for (int n = 0; n < order; ++n) tk_tucker_bcsf_free(&out[n]);
    return st;
}

tk_status tk_tucker_bcsf_row_split(const tk_tucker_bcsf *b, int pieces, size_t *first)
{
    if (pieces < 1) return tk_set_error(TK_ERR_ARGUMENT, "cannot split into %d pieces", pieces);
    size_t p = 0;
    first[0] = 0;
    for (int k = 1; k < pieces; ++k) {
        size_t target = b->nnz * (size_t)k / (size_t)pieces;
        while (p < b->num_parts && b->part_ptr[p] < target) ++p;
        /* Never cut a row: its sub-slices average into one update. */
        while (p > 0 && p < b->num_parts && b->part_row[p] == b->part_row[p - 1]) ++p;
        first[k] = p;
    }
    first[pieces] = b->num_parts;
    return TK_OK;
}
