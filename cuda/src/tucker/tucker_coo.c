/* COO sparse tensors: allocation, checks, lexicographic sort, train/test split. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tucker_internal.h"

tk_status tk_tucker_coo_alloc(tk_tucker_coo *t, int order, const uint32_t *dims, size_t nnz)
{
    memset(t, 0, sizeof *t);
    if (order < 2 || order > TK_TUCKER_MAX_ORDER)
        return tk_set_error(TK_ERR_ARGUMENT, "tensor order %d is outside 2..%d", order, TK_TUCKER_MAX_ORDER);
    if (nnz > SIZE_MAX / sizeof(uint32_t) / (size_t)order)
        return tk_set_error(TK_ERR_MEMORY, "%zu entries of order %d overflow memory sizes", nnz, order);
    t->order = order;
    if (dims) memcpy(t->dims, dims, sizeof(uint32_t) * (size_t)order);
    t->nnz = nnz;
    t->idx = malloc(nnz * (size_t)order * sizeof(uint32_t) + 1);
    t->val = malloc(nnz * sizeof(float) + 1);
    if (!t->idx || !t->val) {
        tk_tucker_coo_free(t);
        return tk_set_error(TK_ERR_MEMORY, "cannot allocate %zu entries of order %d", nnz, order);
    }
    return TK_OK;
}

void tk_tucker_coo_free(tk_tucker_coo *t)
{
    if (!t) return;
    free(t->idx);
    free(t->val);
    memset(t, 0, sizeof *t);
}

tk_status tk_tucker_coo_check(const tk_tucker_coo *t, const char *name)
{
    if (!name) name = "tensor";
    if (t->order < 2 || t->order > TK_TUCKER_MAX_ORDER)
        return tk_set_error(TK_ERR_ARGUMENT, "%s: order %d is outside 2..%d", name, t->order, TK_TUCKER_MAX_ORDER);
    for (int n = 0; n < t->order; ++n)
        if (t->dims[n] == 0) return tk_set_error(TK_ERR_ARGUMENT, "%s: mode %d has size 0", name, n + 1);
    for (size_t e = 0; e < t->nnz; ++e) {
        if (!isfinite(t->val[e]))
            return tk_set_error(TK_ERR_DATA, "%s: entry %zu has a non-finite value", name, e + 1);
        for (int n = 0; n < t->order; ++n)
            if (t->idx[e * (size_t)t->order + (size_t)n] >= t->dims[n])
                return tk_set_error(TK_ERR_DATA, "%s: entry %zu has index %u in mode %d, beyond its size %u", name,
                                    e + 1, t->idx[e * (size_t)t->order + (size_t)n] + 1, n + 1, t->dims[n]);
    }
    return TK_OK;
}

/* Stable counting sort of the permutation perm by key mode `mode` of t. */
static void counting_pass(const tk_tucker_coo *t, int mode, const size_t *perm, size_t *next, size_t *count)
{
    size_t rows = t->dims[mode], order = (size_t)t->order;
    memset(count, 0, (rows + 1) * sizeof *count);
    for (size_t e = 0; e < t->nnz; ++e) ++count[t->idx[perm[e] * order + (size_t)mode] + 1];
    for (size_t i = 0; i < rows; ++i) count[i + 1] += count[i];
    for (size_t e = 0; e < t->nnz; ++e) next[count[t->idx[perm[e] * order + (size_t)mode]]++] = perm[e];
}

tk_status tk_tucker_coo_sort(tk_tucker_coo *t)
{
    size_t order = (size_t)t->order, maxdim = 0;
    for (int n = 0; n < t->order; ++n)
        if (t->dims[n] > maxdim) maxdim = t->dims[n];
    size_t *perm = malloc(t->nnz * sizeof *perm + 1), *next = malloc(t->nnz * sizeof *next + 1);
    size_t *count = malloc((maxdim + 1) * sizeof *count);
    uint32_t *idx = malloc(t->nnz * order * sizeof *idx + 1);
    float *val = malloc(t->nnz * sizeof *val + 1);
    tk_status st = TK_OK;
    if (!perm || !next || !count || !idx || !val) {
        st = tk_set_error(TK_ERR_MEMORY, "cannot allocate the sort buffers for %zu entries", t->nnz);
        goto done;
    }
    for (size_t e = 0; e < t->nnz; ++e) perm[e] = e;
    /* LSD radix: least significant mode first, each pass stable. */
    for (int n = t->order - 1; n >= 0; --n) {
        counting_pass(t, n, perm, next, count);
        size_t *swap = perm;
        perm = next;
        next = swap;
    }
    for (size_t e = 0; e < t->nnz; ++e) {
        memcpy(idx + e * order, t->idx + perm[e] * order, order * sizeof *idx);
        val[e] = t->val[perm[e]];
    }
    free(t->idx);
    free(t->val);
    t->idx = idx;
    t->val = val;
    idx = NULL;
    val = NULL;
done:
    free(perm);
    free(next);
    free(count);
    free(idx);
    free(val);
    return st;
}

tk_status tk_tucker_coo_split(const tk_tucker_coo *all, double test_fraction, uint64_t seed, tk_tucker_coo *train,
                              tk_tucker_coo *test)
{
    if (!(test_fraction >= 0 && test_fraction < 1))
        return tk_set_error(TK_ERR_ARGUMENT, "test fraction %g is outside [0, 1)", test_fraction);
    size_t ntest = 0, order = (size_t)all->order;
    uint64_t key = tk_tucker_mix(seed ^ 0x7E57u);
    for (size_t e = 0; e < all->nnz; ++e) ntest += tk_tucker_unit(tk_tucker_mix(key + e)) < test_fraction;
    tk_status st = tk_tucker_coo_alloc(train, all->order, all->dims, all->nnz - ntest);
    if (st == TK_OK) st = tk_tucker_coo_alloc(test, all->order, all->dims, ntest);
    if (st != TK_OK) {
        tk_tucker_coo_free(train);
        return st;
    }
    size_t itr = 0, ite = 0;
    for (size_t e = 0; e < all->nnz; ++e) {
        int to_test = tk_tucker_unit(tk_tucker_mix(key + e)) < test_fraction;
        tk_tucker_coo *d = to_test ? test : train;
        size_t k = to_test ? ite++ : itr++;
        memcpy(d->idx + k * order, all->idx + e * order, order * sizeof(uint32_t));
        d->val[k] = all->val[e];
    }
    return TK_OK;
}

/* FNV-1a over a byte range, continuing from h. */
static uint64_t fnv1a(uint64_t h, const void *data, size_t bytes)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

uint64_t tk_tucker_coo_fingerprint(const tk_tucker_coo *t)
{
    uint64_t h = 0xcbf29ce484222325ull;
    const uint64_t order = (uint64_t)t->order, nnz = (uint64_t)t->nnz;
    h = fnv1a(h, &order, sizeof order);
    h = fnv1a(h, t->dims, sizeof(uint32_t) * (size_t)t->order);
    h = fnv1a(h, &nnz, sizeof nnz);
    if (t->nnz) {
        h = fnv1a(h, t->idx, sizeof(uint32_t) * t->nnz * (size_t)t->order);
        h = fnv1a(h, t->val, sizeof(float) * t->nnz);
    }
    return h;
}
