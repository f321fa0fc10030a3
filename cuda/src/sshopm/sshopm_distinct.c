/* Distinct eigenpairs: merge the starts that reached the same pair and classify
 * each pair's stability on the sphere. */
#include "sshopm_internal.h"
#include "common/free_all.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/precision_double.h"
#include "sshopm_math.h"
#include "common/precision_end.h"
#include "sshopm_merge_hd.h"

const char *tk_stability_name(tk_stability s)
{
    switch (s) {
    case TK_STABILITY_MAX: return "max";
    case TK_STABILITY_MIN: return "min";
    case TK_STABILITY_SADDLE: return "saddle";
    case TK_STABILITY_DEGENERATE: return "degenerate";
    }
    return "unknown";
}

tk_stability tk_sym_stability_d(int order, int dim, const double *packed, const double *x, double lambda,
                                double rel_tol)
{
    size_t nn = (size_t)dim * (size_t)dim;
    double *m2 = malloc(sizeof(double) * (nn * 3 + (size_t)dim * 3));
    if (!m2) return TK_STABILITY_DEGENERATE;
    double *eig = m2 + nn, *work = eig + dim;
    tk_sym_axm2_d(order, dim, packed, x, m2);
    const tk_stability s = tk_merge_stability_of_m2(order, dim, m2, x, lambda, rel_tol, work, eig);
    free(m2);
    return s;
}

void tk_eigenpairs_free(tk_eigenpairs *p)
{
    if (!p) return;
    TK_FREE_ALL(p->tensor, p->lambda, p->x, p->stability, p->num_starts);
    memset(p, 0, sizeof *p);
}

tk_status tk_eigenpairs_reserve(tk_eigenpairs *p, size_t count)
{
    if (count <= p->capacity && p->tensor) return TK_OK;
    size_t cap = p->capacity + p->capacity / 2;
    if (cap < count) cap = count;
    if (cap < 16) cap = 16;
    const size_t n = (size_t)p->dim;
    if (cap > SIZE_MAX / sizeof(double) / (n ? n : 1))
        return tk_set_error(TK_ERR_MEMORY, "%zu eigenpairs overflow memory sizes", count);
    /* each array grown on its own: a failed realloc leaves the old one in place */
    void *t = realloc(p->tensor, sizeof(size_t) * cap);
    if (t) p->tensor = t;
    void *l = t ? realloc(p->lambda, sizeof(double) * cap) : NULL;
    if (l) p->lambda = l;
    void *x = l ? realloc(p->x, sizeof(double) * cap * n) : NULL;
    if (x) p->x = x;
    void *s = x ? realloc(p->stability, sizeof(tk_stability) * cap) : NULL;
    if (s) p->stability = s;
    void *c = s ? realloc(p->num_starts, sizeof(int32_t) * cap) : NULL;
    if (c) p->num_starts = c;
    if (!c) return tk_set_error(TK_ERR_MEMORY, "out of memory for %zu eigenpairs", count);
    p->capacity = cap;
    return TK_OK;
}

tk_status tk_eigenpairs_append(tk_eigenpairs *out, const tk_eigenpairs *more, size_t tensor_offset)
{
    tk_status status = tk_eigenpairs_reserve(out, out->count + more->count);
    if (status != TK_OK) return status;
    const size_t at = out->count, c = more->count, n = (size_t)out->dim;
    for (size_t p = 0; p < c; ++p) out->tensor[at + p] = more->tensor[p] + tensor_offset;
    if (c) {
        memcpy(out->lambda + at, more->lambda, sizeof(double) * c);
        memcpy(out->x + at * n, more->x, sizeof(double) * c * n);
        memcpy(out->stability + at, more->stability, sizeof(tk_stability) * c);
        memcpy(out->num_starts + at, more->num_starts, sizeof(int32_t) * c);
    }
    out->count += c;
    return TK_OK;
}

void tk_canonical_sign(int dim, double *x) { tk_merge_canonical_sign(dim, x); }

typedef struct {
    size_t tensor, first;
    double lambda;
} pair_key;

static int compare_pairs(const void *pa, const void *pb)
{
    const pair_key *a = pa, *b = pb;
    if (a->tensor != b->tensor) return a->tensor < b->tensor ? -1 : 1;
    if (a->lambda != b->lambda) return a->lambda > b->lambda ? -1 : 1;
    return a->first < b->first ? -1 : (a->first > b->first);
}

tk_status tk_sshopm_distinct(const tk_sshopm_options *o, size_t num_tensors, const void *packed,
                             const tk_sshopm_starts_result *st, double merge_tol, tk_eigenpairs *out)
{
    tk_clear_error();
    memset(out, 0, sizeof *out);
    if (!o || !st || !st->lambda || !st->x || !st->converged || (num_tensors && !packed))
        return tk_set_error(TK_ERR_ARGUMENT, "distinct eigenpairs need lambda, x and converged of every start");
    const int n = o->dim, m = o->order, dbl = o->precision == TK_PRECISION_DOUBLE;
    const size_t k = tk_sym_num_unique(m, n), S = (size_t)o->num_starts;
    if (merge_tol <= 0) merge_tol = tk_merge_default_tol(dbl);
    const double stability_tol = tk_merge_stability_tol(dbl);

    /* Worst case every start is its own pair. */
    size_t cap = num_tensors * S;
    double *xs = malloc(sizeof(double) * (cap ? cap : 1) * (size_t)n);
    pair_key *keys = malloc(sizeof(pair_key) * (cap ? cap : 1));
    int32_t *counts = malloc(sizeof(int32_t) * (cap ? cap : 1));
    double *tensor_d = malloc(sizeof(double) * k);
    if (!xs || !keys || !counts || !tensor_d) {
        free(xs), free(keys), free(counts), free(tensor_d);
        return tk_set_error(TK_ERR_MEMORY, "out of memory merging %zu starts", cap);
    }
    size_t count = 0;
    for (size_t t = 0; t < num_tensors; ++t) {
        size_t first_of_tensor = count;
        for (size_t s = 0; s < S; ++s) {
            size_t slot = t * S + s;
            if (!st->converged[slot]) continue;
            double *x = xs + count * (size_t)n;
            tk_merge_unit(n, m, dbl, st->x, slot, x);
            double lambda = dbl ? ((const double *)st->lambda)[slot] : ((const float *)st->lambda)[slot];
            size_t match = count;
            for (size_t p = first_of_tensor; p < count && match == count; ++p)
                if (tk_merge_same(n, m, x, xs + p * (size_t)n, merge_tol)) match = p;
            if (match < count) {
                ++counts[match];
                continue;
            }
            keys[count] = (pair_key){t, slot, lambda};
            counts[count] = 1;
            ++count;
        }
    }
    out->dim = n;
    out->count = count;
    size_t alloc = count ? count : 1;
    out->capacity = alloc;
    out->tensor = malloc(sizeof(size_t) * alloc);
    out->lambda = malloc(sizeof(double) * alloc);
    out->x = malloc(sizeof(double) * alloc * (size_t)n);
    out->stability = malloc(sizeof(tk_stability) * alloc);
    out->num_starts = malloc(sizeof(int32_t) * alloc);
    pair_key *sorted = malloc(sizeof(pair_key) * alloc);
    if (!out->tensor || !out->lambda || !out->x || !out->stability || !out->num_starts || !sorted) {
        free(xs), free(keys), free(counts), free(tensor_d), free(sorted);
        tk_eigenpairs_free(out);
        return tk_set_error(TK_ERR_MEMORY, "out of memory for %zu eigenpairs", count);
    }
    /* Sort copies whose `first` is the position in the unsorted arrays (pairs were
     * appended in start order, so it also breaks ties by the first start). */
    for (size_t p = 0; p < count; ++p) {
        sorted[p] = keys[p];
        sorted[p].first = p;
    }
    qsort(sorted, count, sizeof(pair_key), compare_pairs);
    for (size_t p = 0; p < count; ++p) {
        size_t src = sorted[p].first;
        size_t t = keys[src].tensor;
        out->tensor[p] = t;
        out->lambda[p] = keys[src].lambda;
        out->num_starts[p] = counts[src];
        memcpy(out->x + p * (size_t)n, xs + src * (size_t)n, sizeof(double) * (size_t)n);
        for (size_t e = 0; e < k; ++e)
            tensor_d[e] = dbl ? ((const double *)packed)[t * k + e] : ((const float *)packed)[t * k + e];
        out->stability[p] = tk_sym_stability_d(m, n, tensor_d, out->x + p * (size_t)n, out->lambda[p], stability_tol);
    }
    free(xs), free(keys), free(counts), free(tensor_d), free(sorted);
    return TK_OK;
}
