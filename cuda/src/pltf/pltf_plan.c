/* GTM as pairwise contractions: the order of least multiply-adds by dynamic
 * programming over operand subsets (multiply-adds plus memory traffic), each step
 * one batched GEMM on the engine. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pltf_internal.h"

static uint64_t term_mask(const tk_pltf_term *t)
{
    uint64_t m = 0;
    for (int d = 0; d < t->ndim; ++d) m |= (uint64_t)1 << t->idx[d];
    return m;
}

static double mask_size(const size_t *dims, uint64_t m)
{
    double s = 1;
    for (int id = 0; id < TK_PLTF_MAX_INDICES; ++id)
        if (m >> id & 1) s *= (double)dims[id];
    return s;
}

static int lowest_bit(unsigned v)
{
    int b = 0;
    while (!(v >> b & 1)) ++b;
    return b;
}

tk_status tk_pltf_plan_make(tk_pltf_plan *p, const size_t *dims, int n, const tk_pltf_term *operands,
                            const tk_pltf_term *out)
{
    memset(p, 0, sizeof *p);
    if (n < 1 || n > TK_PLTF_MAX_OPERANDS)
        return tk_set_error(TK_ERR_ARGUMENT, "GTM: %d operands (1 to %d supported)", n, TK_PLTF_MAX_OPERANDS);
    p->num_operands = n;
    memcpy(p->operands, operands, sizeof(tk_pltf_term) * (size_t)n);
    p->out = *out;
    memcpy(p->dims, dims, sizeof p->dims);
    const unsigned full = (1u << n) - 1;
    uint64_t idx_of[TK_PLTF_MAX_OPERANDS], all = 0;
    for (int i = 0; i < n; ++i) all |= idx_of[i] = term_mask(&operands[i]);
    const uint64_t out_mask = term_mask(out);
    if (out_mask & ~all) return tk_set_error(TK_ERR_ARGUMENT, "GTM: an output index appears in no operand");
    p->split = calloc((size_t)full + 1, sizeof *p->split);
    p->keep = calloc((size_t)full + 1, sizeof *p->keep);
    double *cost = calloc((size_t)full + 1, sizeof *cost);
    uint64_t *idx = calloc((size_t)full + 1, sizeof *idx);
    if (!p->split || !p->keep || !cost || !idx) {
        free(cost), free(idx), tk_pltf_plan_free(p);
        return tk_set_error(TK_ERR_MEMORY, "GTM: out of memory for the contraction plan");
    }
    for (unsigned s = 1; s <= full; ++s) {
        int low = lowest_bit(s);
        idx[s] = idx[s & (s - 1)] | idx_of[low];
    }
    for (unsigned s = 1; s <= full; ++s) {
        p->keep[s] = idx[s] & (out_mask | idx[full & ~s]);
        if (!(s & (s - 1))) {
            /* A leaf pays for summing out the indices no one else needs. */
            cost[s] = p->keep[s] == idx[s] ? 0 : mask_size(dims, idx[s]);
            continue;
        }
        const unsigned low = 1u << lowest_bit(s), rest = s & ~low;
        double best = -1;
        /* Splits (a, s - a) with a holding s's lowest operand: each pair once. */
        for (unsigned sub = rest;; sub = (sub - 1) & rest) {
            unsigned a = sub | low, b = s & ~a;
            if (b) {
                /* multiply-adds, plus the entries read and written: between orders of
                 * equal flops this prefers one large GEMM to many small batched ones
                 * and fewer relayouts of big operands */
                double c = cost[a] + cost[b] + mask_size(dims, p->keep[a] | p->keep[b]) + mask_size(dims, p->keep[a]) +
                           mask_size(dims, p->keep[b]) + mask_size(dims, p->keep[s]);
                if (best < 0 || c < best) best = c, p->split[s] = (uint16_t)a;
            }
            if (!sub) break;
        }
        cost[s] = best;
    }
    p->cost = cost[full];
    free(cost), free(idx);
    return TK_OK;
}

void tk_pltf_plan_free(tk_pltf_plan *p)
{
    free(p->split), free(p->keep);
    p->split = NULL, p->keep = NULL;
}

/* An evaluated subset: its buffer, layout, and whether we own the buffer. */
typedef struct {
    void *data;
    tk_pltf_term term;
    int owned;
} value;

static size_t group_size(const size_t *dims, const int *ids, int n)
{
    size_t s = 1;
    for (int i = 0; i < n; ++i) s *= dims[ids[i]];
    return s;
}

static int term_equals(const tk_pltf_term *t, const int *ids, int n)
{
    if (t->ndim != n) return 0;
    for (int i = 0; i < n; ++i)
        if (t->idx[i] != ids[i]) return 0;
    return 1;
}

static void concat(tk_pltf_term *t, const int *a, int na, const int *b, int nb, const int *c, int nc)
{
    t->ndim = na + nb + nc;
    memcpy(t->idx, a, sizeof(int) * (size_t)na);
    memcpy(t->idx + na, b, sizeof(int) * (size_t)nb);
    memcpy(t->idx + na + nb, c, sizeof(int) * (size_t)nc);
}

/* Reorder (and reduce) v into the layout `want`; v is replaced. */
static tk_status relayout(const tk_pltf_plan *p, tk_pltf_engine *e, value *v, const tk_pltf_term *want, void *dst)
{
    size_t shape[TK_PLTF_MAX_INDICES];
    int axes[TK_PLTF_MAX_INDICES];
    for (int d = 0; d < v->term.ndim; ++d) shape[d] = p->dims[v->term.idx[d]];
    for (int d = 0; d < want->ndim; ++d)
        for (int s = 0; s < v->term.ndim; ++s)
            if (v->term.idx[s] == want->idx[d]) axes[d] = s;
    void *buf = dst;
    tk_status st = TK_OK;
    if (!buf) st = e->alloc(e, group_size(p->dims, want->idx, want->ndim), &buf);
    if (st == TK_OK) st = e->reduce_permute(e, v->data, v->term.ndim, shape, buf, want->ndim, axes);
    if (v->owned) e->release(e, v->data);
    v->data = buf, v->term = *want, v->owned = dst == NULL && buf != NULL;
    return st;
}

static tk_status eval(const tk_pltf_plan *p, tk_pltf_engine *e, const void *const *operands, unsigned s, value *out,
                      void *root_dst)
{
    const uint64_t keep = p->keep[s];
    if (!(s & (s - 1))) {
        int i = lowest_bit(s);
        out->data = (void *)operands[i], out->term = p->operands[i], out->owned = 0;
        if (term_mask(&out->term) == keep) return TK_OK;
        tk_pltf_term want = {0, {0}};
        for (int d = 0; d < out->term.ndim; ++d)
            if (keep >> out->term.idx[d] & 1) want.idx[want.ndim++] = out->term.idx[d];
        return relayout(p, e, out, &want, NULL);
    }
    value a, b;
    tk_status st = eval(p, e, operands, p->split[s], &a, NULL);
    if (st != TK_OK) return st;
    st = eval(p, e, operands, s & ~p->split[s], &b, NULL);
    if (st != TK_OK) {
        if (a.owned) e->release(e, a.data);
        return st;
    }
    const uint64_t mb = term_mask(&b.term);
    int batch[TK_PLTF_MAX_INDICES], left[TK_PLTF_MAX_INDICES], contr[TK_PLTF_MAX_INDICES], right[TK_PLTF_MAX_INDICES];
    int nb = 0, nl = 0, nc = 0, nr = 0;
    const uint64_t ma = term_mask(&a.term);
    for (int d = 0; d < a.term.ndim; ++d) {
        int id = a.term.idx[d];
        if (!(mb >> id & 1)) left[nl++] = id;
        else if (keep >> id & 1) batch[nb++] = id;
        else contr[nc++] = id;
    }
    for (int d = 0; d < b.term.ndim; ++d)
        if (!(ma >> b.term.idx[d] & 1)) right[nr++] = b.term.idx[d];
    tk_pltf_term want;
    int trans_a = 0, trans_b = 0;
    concat(&want, batch, nb, left, nl, contr, nc);
    if (!term_equals(&a.term, want.idx, want.ndim)) {
        tk_pltf_term alt;
        concat(&alt, batch, nb, contr, nc, left, nl);
        if (term_equals(&a.term, alt.idx, alt.ndim)) trans_a = 1;
        else st = relayout(p, e, &a, &want, NULL);
    }
    concat(&want, batch, nb, contr, nc, right, nr);
    if (st == TK_OK && !term_equals(&b.term, want.idx, want.ndim)) {
        tk_pltf_term alt;
        concat(&alt, batch, nb, right, nr, contr, nc);
        if (term_equals(&b.term, alt.idx, alt.ndim)) trans_b = 1;
        else st = relayout(p, e, &b, &want, NULL);
    }
    concat(&out->term, batch, nb, left, nl, right, nr);
    const size_t B = group_size(p->dims, batch, nb), M = group_size(p->dims, left, nl),
                 N = group_size(p->dims, right, nr), K = group_size(p->dims, contr, nc);
    out->data = NULL, out->owned = 0;
    if (st == TK_OK) {
        if (root_dst && term_equals(&p->out, out->term.idx, out->term.ndim)) {
            out->data = root_dst;
        } else {
            st = e->alloc(e, B * M * N, &out->data);
            out->owned = st == TK_OK;
        }
    }
    if (st == TK_OK) st = e->gemm(e, B, M, N, K, a.data, trans_a, b.data, trans_b, out->data);
    if (a.owned) e->release(e, a.data);
    if (b.owned) e->release(e, b.data);
    if (st != TK_OK && out->owned) e->release(e, out->data), out->owned = 0;
    return st;
}

tk_status tk_pltf_plan_run(const tk_pltf_plan *p, tk_pltf_engine *e, const void *const *operands, void *out)
{
    value v;
    const unsigned full = (1u << p->num_operands) - 1;
    tk_status st = eval(p, e, operands, full, &v, out);
    if (st != TK_OK) return st;
    if (v.data == out) return TK_OK;
    return relayout(p, e, &v, &p->out, out); /* permute (or copy) into place */
}

static int append_term(char *buf, size_t size, int len, const tk_pltf_term *t)
{
    for (int d = 0; d < t->ndim && (size_t)len + 1 < size; ++d) buf[len++] = tk_pltf_index_letter(t->idx[d]);
    buf[len] = '\0';
    return len;
}

/* Post-order listing of the pairwise steps (indices shown as sets). */
static int describe(const tk_pltf_plan *p, unsigned s, char *buf, size_t size, int len, tk_pltf_term *t)
{
    t->ndim = 0;
    if (!(s & (s - 1))) {
        *t = p->operands[lowest_bit(s)];
        return len;
    }
    tk_pltf_term a, b;
    len = describe(p, p->split[s], buf, size, len, &a);
    len = describe(p, s & ~p->split[s], buf, size, len, &b);
    for (int id = 0; id < TK_PLTF_MAX_INDICES; ++id)
        if (p->keep[s] >> id & 1) t->idx[t->ndim++] = id;
    if (len && (size_t)len + 2 < size) len += snprintf(buf + len, size - (size_t)len, "; ");
    if ((size_t)len + 1 < size) buf[len++] = '(', buf[len] = '\0';
    len = append_term(buf, size, len, &a);
    if ((size_t)len + 1 < size) buf[len++] = ',', buf[len] = '\0';
    len = append_term(buf, size, len, &b);
    if ((size_t)len + 3 < size) len += snprintf(buf + len, size - (size_t)len, ")->");
    return append_term(buf, size, len, t);
}

void tk_pltf_plan_text(const tk_pltf_plan *p, char *buf, size_t size)
{
    if (!size) return;
    buf[0] = '\0';
    tk_pltf_term t;
    describe(p, (1u << p->num_operands) - 1, buf, size, 0, &t);
}
