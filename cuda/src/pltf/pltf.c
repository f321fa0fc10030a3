/* PLTF: GTM and the multiplicative-update factorization, over any engine. */
/* clock_gettime: POSIX, which -std=c11 hides unless asked for (gcc's -fopenmp happened to) */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pltf_internal.h"


const char *tk_pltf_divergence_name(tk_pltf_divergence d)
{
    switch (d) {
    case TK_PLTF_KL: return "kl";
    case TK_PLTF_EUCLIDEAN: return "euclidean";
    case TK_PLTF_IS: return "is";
    }
    return "unknown";
}

/* The defaults, as data; every field not named is 0. */
static const tk_pltf_options pltf_defaults = {
    .divergence = TK_PLTF_KL,
    .backend = TK_BACKEND_CPU,
    .iterations = 100,
    .track_divergence = 1,
};

void tk_pltf_options_init(tk_pltf_options *o) { *o = pltf_defaults; }

void tk_pltf_out_term(const tk_pltf_model *m, tk_pltf_term *t)
{
    t->ndim = m->out_ndim;
    memcpy(t->idx, m->out, sizeof(int) * (size_t)m->out_ndim);
}

void tk_pltf_factor_term(const tk_pltf_model *m, int f, tk_pltf_term *t)
{
    t->ndim = m->factor_ndim[f];
    memcpy(t->idx, m->factor[f], sizeof(int) * (size_t)m->factor_ndim[f]);
}

tk_status tk_pltf_make_engine(tk_pltf_engine *e, tk_backend b, int threads, int device)
{
    switch (b) {
    case TK_BACKEND_CPU: return tk_pltf_engine_cpu(e, 0, 0);
    case TK_BACKEND_OMP: return tk_pltf_engine_cpu(e, 1, threads);
    case TK_BACKEND_CUDA: return tk_pltf_engine_cuda(e, device);
    case TK_BACKEND_AUTO: break; /* resolved by the caller (tk_types.h) */
    }
    return tk_set_error(TK_ERR_ARGUMENT, "PLTF: unknown backend %d", (int)b);
}

double tk_pltf_plan_describe(const tk_pltf_model *m, char *buf, size_t size)
{
    tk_pltf_term terms[TK_PLTF_MAX_FACTORS], out;
    for (int f = 0; f < m->num_factors; ++f) tk_pltf_factor_term(m, f, &terms[f]);
    tk_pltf_out_term(m, &out);
    tk_pltf_plan p;
    if (tk_pltf_plan_make(&p, m->dims, m->num_factors, terms, &out) != TK_OK) {
        if (size) snprintf(buf, size, "(no plan: %s)", tk_last_error());
        return -1;
    }
    tk_pltf_plan_text(&p, buf, size);
    double cost = p.cost;
    tk_pltf_plan_free(&p);
    return cost;
}

tk_status tk_pltf_gtm(const tk_pltf_model *m, tk_backend backend, int naive, const double *const *operands,
                      double *out)
{
    tk_status st = tk_pltf_check_dims(m);
    if (st != TK_OK) return st;
    tk_pltf_term terms[TK_PLTF_MAX_FACTORS], oterm;
    for (int f = 0; f < m->num_factors; ++f) tk_pltf_factor_term(m, f, &terms[f]);
    tk_pltf_out_term(m, &oterm);
    tk_pltf_engine e;
    if ((st = tk_pltf_make_engine(&e, backend, 0, 0)) != TK_OK) return st;
    void *dev[TK_PLTF_MAX_FACTORS] = {0}, *dout = NULL;
    const size_t out_count = tk_pltf_out_count(m);
    for (int f = 0; f < m->num_factors && st == TK_OK; ++f) {
        size_t n = tk_pltf_factor_count(m, f);
        if ((st = e.alloc(&e, n, &dev[f])) == TK_OK) st = e.upload(&e, dev[f], operands[f], n);
    }
    if (st == TK_OK) st = e.alloc(&e, out_count, &dout);
    if (st == TK_OK) {
        if (naive) {
            st = e.naive_gtm(&e, m->dims, m->num_factors, terms, (const void *const *)dev, &oterm, dout);
        } else {
            tk_pltf_plan p;
            st = tk_pltf_plan_make(&p, m->dims, m->num_factors, terms, &oterm);
            if (st == TK_OK) st = tk_pltf_plan_run(&p, &e, (const void *const *)dev, dout);
            tk_pltf_plan_free(&p);
        }
    }
    if (st == TK_OK) st = e.download(&e, out, dout, out_count);
    for (int f = 0; f < m->num_factors; ++f)
        if (dev[f]) e.release(&e, dev[f]);
    if (dout) e.release(&e, dout);
    e.destroy(&e);
    return st;
}

double tk_pltf_divergence_value(tk_pltf_divergence d, const double *x, const uint8_t *mask, const double *xhat,
                                size_t count)
{
    double sum = 0;
    for (size_t i = 0; i < count; ++i) {
        if (mask && !mask[i]) continue;
        const double h = xhat[i] > 1e-300 ? xhat[i] : 1e-300, v = x[i];
        switch (d) {
        case TK_PLTF_KL: sum += (v > 0 ? v * log(v / h) - v : 0) + h; break;
        case TK_PLTF_EUCLIDEAN: sum += 0.5 * (v - xhat[i]) * (v - xhat[i]); break;
        case TK_PLTF_IS: sum += v / h - log(v / h) - 1; break;
        }
    }
    return sum;
}

/* splitmix64: a seeded stream that is the same on every platform. */
uint64_t tk_pltf_next_random(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

tk_status tk_pltf_check_model_for_updates(const tk_pltf_model *m)
{
    if (m->num_factors < 1) return tk_set_error(TK_ERR_ARGUMENT, "model \"%s\" has no factors", m->text);
    for (int f = 0; f < m->num_factors; ++f)
        for (int d = 0; d < m->factor_ndim[f]; ++d) {
            int id = m->factor[f][d], found = 0;
            for (int o = 0; o < m->out_ndim; ++o) found |= m->out[o] == id;
            for (int g = 0; g < m->num_factors; ++g)
                for (int e = 0; g != f && e < m->factor_ndim[g]; ++e) found |= m->factor[g][e] == id;
            if (!found) {
                char name[TK_PLTF_MAX_INDICES + 1];
                tk_pltf_factor_name(m, f, name);
                return tk_set_error(TK_ERR_ARGUMENT,
                                    "model \"%s\": latent index '%c' appears only in factor '%s' (it would be summed "
                                    "out of that factor alone; drop it)",
                                    m->text, tk_pltf_index_letter(id), name);
            }
        }
    return TK_OK;
}

tk_status tk_pltf_check_data(const tk_pltf_model *m, tk_pltf_divergence d, const double *x, const uint8_t *mask,
                            size_t count, double *mean)
{
    size_t observed = 0;
    double sum = 0;
    for (size_t i = 0; i < count; ++i) {
        if (mask && !mask[i]) continue;
        const double v = x[i];
        if (!isfinite(v)) return tk_set_error(TK_ERR_DATA, "observed entry %zu is not finite (%g)", i, v);
        if (d == TK_PLTF_KL && v < 0)
            return tk_set_error(TK_ERR_DATA,
                                "observed entry %zu is negative (%g): the KL divergence needs non-negative data", i, v);
        if (d == TK_PLTF_IS && !(v > 0))
            return tk_set_error(TK_ERR_DATA,
                                "observed entry %zu is %s (%g): the Itakura-Saito divergence needs positive data", i,
                                v < 0 ? "negative" : "zero", v);
        ++observed, sum += v;
    }
    if (!observed) return tk_set_error(TK_ERR_DATA, "model \"%s\": the mask leaves no observed entry", m->text);
    *mean = sum / (double)observed;
    return TK_OK;
}

/* Uniform in [0.5, 1.5), then scaled so that the mean of X^ is about the mean of
 * the observed data (each entry of X^ sums prod(latent sizes) products of mean 1). */
static void random_start(const tk_pltf_model *m, uint64_t seed, double data_mean, double *const *factors)
{
    double terms = 1;
    for (int id = 0; id < TK_PLTF_MAX_INDICES; ++id) {
        int latent = m->dims[id] > 0;
        for (int o = 0; o < m->out_ndim; ++o) latent &= m->out[o] != id;
        if (latent) terms *= (double)m->dims[id];
    }
    double target = data_mean > 0 ? data_mean : 1;
    const double scale = pow(target / terms, 1.0 / m->num_factors);
    uint64_t s = seed;
    for (int f = 0; f < m->num_factors; ++f) {
        size_t n = tk_pltf_factor_count(m, f);
        for (size_t i = 0; i < n; ++i) factors[f][i] = scale * (0.5 + (double)(tk_pltf_next_random(&s) >> 11) * 0x1.0p-53);
    }
}

typedef struct {
    tk_pltf_engine e;
    void *x, *mask, *xhat, *qnum, *qden, *num, *den;
    void *z[TK_PLTF_MAX_FACTORS];
    tk_pltf_plan plan_x, plan_d[TK_PLTF_MAX_FACTORS];
    tk_pltf_term out, terms[TK_PLTF_MAX_FACTORS], dterms[TK_PLTF_MAX_FACTORS][TK_PLTF_MAX_FACTORS];
    /* KL with every entry observed: D_f(1) needs no pass over X, it is the GTM of
     * the other factors onto the indices of Z_f they hold, broadcast over the rest. */
    int ones_den;
    tk_pltf_plan plan_ones[TK_PLTF_MAX_FACTORS];
    tk_pltf_term ones_out[TK_PLTF_MAX_FACTORS];
    void *ones_small;
    /* Shared "rest": the other factors contracted once per update, R_f, feed both
     * X^ = GTM(Z_f, R_f) and D_f(Q) = GTM(Q, R_f) (for PARAFAC R_f is the Khatri-Rao
     * product, and both GTMs are one GEMM each).  Used where the plans say it is
     * cheaper than separate X^ and D_f plans (not for Tucker's core, whose R_f would
     * be the size of X times the core). */
    int shared[TK_PLTF_MAX_FACTORS];
    tk_pltf_plan plan_rest[TK_PLTF_MAX_FACTORS], plan_xs[TK_PLTF_MAX_FACTORS], plan_ds[TK_PLTF_MAX_FACTORS];
    tk_pltf_term layout[TK_PLTF_MAX_FACTORS];
    void *x_f[TK_PLTF_MAX_FACTORS], *mask_f[TK_PLTF_MAX_FACTORS]; /* X, M in layout[f] (or X, M) */
    void *rest;
} run_state;

/* Index order of the shared path's X^ for factor f: Z_f's observed indices, then the
 * other observed ones.  With X (and the mask) kept in that order too, X^ is the GEMM
 * Z_f x R_f^T as it comes out and D_f(Q) the GEMM Q x R_f: no relayout per update
 * (the mode-n unfoldings of the Tensor Toolbox). */
static void shared_layout(const run_state *r, int f, tk_pltf_term *layout)
{
    uint64_t in_f = 0;
    layout->ndim = 0;
    for (int d = 0; d < r->terms[f].ndim; ++d) in_f |= (uint64_t)1 << r->terms[f].idx[d];
    for (int d = 0; d < r->terms[f].ndim; ++d)
        for (int o = 0; o < r->out.ndim; ++o)
            if (r->out.idx[o] == r->terms[f].idx[d]) layout->idx[layout->ndim++] = r->terms[f].idx[d];
    for (int o = 0; o < r->out.ndim; ++o)
        if (!(in_f >> r->out.idx[o] & 1)) layout->idx[layout->ndim++] = r->out.idx[o];
}

static int same_term(const tk_pltf_term *a, const tk_pltf_term *b)
{
    if (a->ndim != b->ndim) return 0;
    for (int d = 0; d < a->ndim; ++d)
        if (a->idx[d] != b->idx[d]) return 0;
    return 1;
}

static tk_status make_shared_plans(run_state *r, const tk_pltf_model *m, size_t count, size_t *rest_size)
{
    *rest_size = 0;
    if (m->num_factors < 3) return TK_OK; /* with one other factor R_f is that factor: nothing to share */
    /* Unfolded copies of X (and M) cost memory: at most 512 MiB of them. */
    const size_t per_copy = count * sizeof(double) * (r->mask ? 2 : 1);
    size_t budget = (size_t)512 << 20;
    for (int f = 0; f < m->num_factors; ++f) {
        uint64_t want = 0, held = 0;
        for (int d = 0; d < r->out.ndim; ++d) want |= (uint64_t)1 << r->out.idx[d];
        for (int d = 0; d < r->terms[f].ndim; ++d) want |= (uint64_t)1 << r->terms[f].idx[d];
        for (int k = 1; k < m->num_factors; ++k)
            for (int d = 0; d < r->dterms[f][k].ndim; ++d) held |= (uint64_t)1 << r->dterms[f][k].idx[d];
        held &= want;
        /* R_f's order: Z_f's latent indices, then its observed ones in X's order.
         * Latent first is how a batched step leaves it (e.g. the Khatri-Rao product
         * of ja and ka comes out as ajk), and both GEMMs take it as it is. */
        tk_pltf_term rest = {0, {0}};
        uint64_t observed = 0;
        for (int o = 0; o < r->out.ndim; ++o) observed |= (uint64_t)1 << r->out.idx[o];
        for (int d = 0; d < r->terms[f].ndim; ++d)
            if ((held & ~observed) >> r->terms[f].idx[d] & 1) rest.idx[rest.ndim++] = r->terms[f].idx[d];
        for (int o = 0; o < r->out.ndim; ++o)
            if (held >> r->out.idx[o] & 1) rest.idx[rest.ndim++] = r->out.idx[o];
        shared_layout(r, f, &r->layout[f]);
        if (!same_term(&r->layout[f], &r->out)) {
            if (budget >= per_copy) budget -= per_copy;
            else r->layout[f] = r->out;
        }
        tk_pltf_term pair[2] = {r->terms[f], rest};
        tk_status st = tk_pltf_plan_make(&r->plan_rest[f], m->dims, m->num_factors - 1, &r->dterms[f][1], &rest);
        if (st == TK_OK) st = tk_pltf_plan_make(&r->plan_xs[f], m->dims, 2, pair, &r->layout[f]);
        pair[0] = r->layout[f];
        if (st == TK_OK) st = tk_pltf_plan_make(&r->plan_ds[f], m->dims, 2, pair, &r->terms[f]);
        if (st != TK_OK) return st;
        const double shared = r->plan_rest[f].cost + r->plan_xs[f].cost + r->plan_ds[f].cost;
        r->shared[f] = shared < r->plan_x.cost + r->plan_d[f].cost;
        if (!r->shared[f] && !same_term(&r->layout[f], &r->out)) budget += per_copy, r->layout[f] = r->out;
        size_t n = 1;
        for (int d = 0; d < rest.ndim; ++d) n *= m->dims[rest.idx[d]];
        if (r->shared[f] && n > *rest_size) *rest_size = n;
    }
    return TK_OK;
}

/* X and M in factor f's shared layout, where it differs from X's own. */
static tk_status make_unfoldings(run_state *r, const tk_pltf_model *m, size_t count)
{
    size_t shape[TK_PLTF_MAX_INDICES];
    for (int d = 0; d < r->out.ndim; ++d) shape[d] = m->dims[r->out.idx[d]];
    for (int f = 0; f < m->num_factors; ++f) {
        r->x_f[f] = r->x, r->mask_f[f] = r->mask;
        if (!r->shared[f] || same_term(&r->layout[f], &r->out)) continue;
        int axes[TK_PLTF_MAX_INDICES];
        for (int d = 0; d < r->layout[f].ndim; ++d)
            for (int o = 0; o < r->out.ndim; ++o)
                if (r->out.idx[o] == r->layout[f].idx[d]) axes[d] = o;
        tk_status st = r->e.alloc(&r->e, count, &r->x_f[f]);
        if (st == TK_OK) st = r->e.reduce_permute(&r->e, r->x, r->out.ndim, shape, r->x_f[f], r->out.ndim, axes);
        if (st == TK_OK && r->mask) {
            if ((st = r->e.alloc(&r->e, count, &r->mask_f[f])) == TK_OK)
                st = r->e.reduce_permute(&r->e, r->mask, r->out.ndim, shape, r->mask_f[f], r->out.ndim, axes);
        }
        if (st != TK_OK) return st;
    }
    return TK_OK;
}

static tk_status make_ones_plans(run_state *r, const tk_pltf_model *m)
{
    for (int f = 0; f < m->num_factors; ++f) {
        uint64_t held = 0;
        for (int k = 1; k < m->num_factors; ++k)
            for (int d = 0; d < r->dterms[f][k].ndim; ++d) held |= (uint64_t)1 << r->dterms[f][k].idx[d];
        tk_pltf_term *o = &r->ones_out[f];
        o->ndim = 0;
        for (int d = 0; d < r->terms[f].ndim; ++d)
            if (held >> r->terms[f].idx[d] & 1) o->idx[o->ndim++] = r->terms[f].idx[d];
        if (m->num_factors < 2) continue;
        tk_status st = tk_pltf_plan_make(&r->plan_ones[f], m->dims, m->num_factors - 1, &r->dterms[f][1], o);
        if (st != TK_OK) return st;
    }
    return TK_OK;
}

static tk_status delta_of_ones(run_state *r, const tk_pltf_model *m, int f, void *dst)
{
    const size_t n = tk_pltf_factor_count(m, f);
    if (m->num_factors < 2) return r->e.fill(&r->e, dst, 1.0, n);
    const void *ops[TK_PLTF_MAX_FACTORS];
    for (int g = 0, k = 0; g < m->num_factors; ++g)
        if (g != f) ops[k++] = r->z[g];
    const tk_pltf_term *o = &r->ones_out[f];
    tk_status st = tk_pltf_plan_run(&r->plan_ones[f], &r->e, ops, r->ones_small);
    if (st != TK_OK) return st;
    int axes[TK_PLTF_MAX_INDICES];
    size_t shape[TK_PLTF_MAX_INDICES];
    for (int d = 0, s = 0; d < r->terms[f].ndim; ++d) {
        shape[d] = m->dims[r->terms[f].idx[d]];
        if (s < o->ndim && o->idx[s] == r->terms[f].idx[d]) axes[s++] = d;
    }
    return r->e.broadcast(&r->e, r->ones_small, o->ndim, axes, dst, r->terms[f].ndim, shape);
}

static tk_status compute_xhat(run_state *r, const tk_pltf_model *m, int naive)
{
    if (naive)
        return r->e.naive_gtm(&r->e, m->dims, m->num_factors, r->terms, (const void *const *)r->z, &r->out, r->xhat);
    return tk_pltf_plan_run(&r->plan_x, &r->e, (const void *const *)r->z, r->xhat);
}

/* D_f(q) onto factor f's layout: q with every factor but f. */
static tk_status delta(run_state *r, const tk_pltf_model *m, int f, const void *q, void *dst, int naive)
{
    const void *ops[TK_PLTF_MAX_FACTORS];
    ops[0] = q;
    for (int g = 0, k = 1; g < m->num_factors; ++g)
        if (g != f) ops[k++] = r->z[g];
    if (naive) return r->e.naive_gtm(&r->e, m->dims, m->num_factors, r->dterms[f], ops, &r->terms[f], dst);
    return tk_pltf_plan_run(&r->plan_d[f], &r->e, ops, dst);
}

static tk_status iterate(run_state *r, const tk_pltf_model *m, const tk_pltf_options *o, tk_pltf_result *res,
                         size_t count)
{
    const tk_pltf_divergence d = o->divergence;
    const double exponent = d == TK_PLTF_IS ? 0.5 : 1.0;
    int try_fused = r->e.fused_update && !o->naive_gtm && !o->no_fused;
    tk_status st = TK_OK;
    double t0 = tk_now_ms();
    for (int t = 0; t <= o->iterations; ++t) {
        int have_xhat = 0, stop = 0;
        if (o->track_divergence || t == o->iterations) {
            double div;
            if ((st = compute_xhat(r, m, o->naive_gtm)) != TK_OK) return st;
            if ((st = r->e.divergence(&r->e, d, r->x, r->mask, r->xhat, count, &div)) != TK_OK) return st;
            have_xhat = 1;
            if (res->divergence) res->divergence[t] = div;
            res->final_divergence = div;
            res->iterations_done = t;
            if (o->on_iteration && o->on_iteration(o->user, t, div)) stop = 1;
        }
        if (t == o->iterations || stop) break;
        for (int f = 0; f < m->num_factors; ++f) {
            if (try_fused) {
                st = r->e.fused_update(&r->e, m, d, f, r->z, r->x, r->mask);
                if (st == TK_OK) continue;
                if (st != TK_ERR_UNSUPPORTED) return st;
                try_fused = 0;
            }
            const int shared = !o->naive_gtm && r->shared[f];
            if (shared) {
                const void *others[TK_PLTF_MAX_FACTORS], *pair[2] = {r->z[f], r->rest};
                for (int g = 0, k = 0; g < m->num_factors; ++g)
                    if (g != f) others[k++] = r->z[g];
                if ((st = tk_pltf_plan_run(&r->plan_rest[f], &r->e, others, r->rest)) != TK_OK) return st;
                /* The X^ computed for the divergence is in X's order: reusable only there. */
                if ((!have_xhat || r->x_f[f] != r->x) &&
                    (st = tk_pltf_plan_run(&r->plan_xs[f], &r->e, pair, r->xhat)) != TK_OK)
                    return st;
            } else if (!have_xhat && (st = compute_xhat(r, m, o->naive_gtm)) != TK_OK) {
                return st;
            }
            have_xhat = 0;
            const void *xs = shared ? r->x_f[f] : r->x, *ms = shared ? r->mask_f[f] : r->mask;
            st = r->e.mu_terms(&r->e, d, xs, ms, r->xhat, count, r->qnum, r->ones_den ? NULL : r->qden);
            if (st != TK_OK) return st;
            if (shared) {
                const void *num_ops[2] = {r->qnum, r->rest}, *den_ops[2] = {r->qden, r->rest};
                if ((st = tk_pltf_plan_run(&r->plan_ds[f], &r->e, num_ops, r->num)) != TK_OK) return st;
                st = r->ones_den ? delta_of_ones(r, m, f, r->den) : tk_pltf_plan_run(&r->plan_ds[f], &r->e, den_ops, r->den);
            } else {
                if ((st = delta(r, m, f, r->qnum, r->num, o->naive_gtm)) != TK_OK) return st;
                st = r->ones_den ? delta_of_ones(r, m, f, r->den) : delta(r, m, f, r->qden, r->den, o->naive_gtm);
            }
            if (st != TK_OK) return st;
            st = r->e.mu_apply(&r->e, r->z[f], r->num, r->den, tk_pltf_factor_count(m, f), exponent);
            if (st != TK_OK) return st;
        }
        if (!o->track_divergence) res->iterations_done = t + 1;
    }
    if ((st = r->e.sync(&r->e)) != TK_OK) return st;
    res->iterate_ms = tk_now_ms() - t0;
    return TK_OK;
}

tk_status tk_pltf_factorize(const tk_pltf_model *m, const tk_pltf_options *o, const double *x, const uint8_t *mask,
                            tk_pltf_result *res)
{
    const double start = tk_now_ms();
    tk_status st = tk_pltf_check_dims(m);
    if (st != TK_OK) return st;
    if ((st = tk_pltf_check_model_for_updates(m)) != TK_OK) return st;
    if (o->iterations < 0) return tk_set_error(TK_ERR_ARGUMENT, "PLTF: negative iteration count %d", o->iterations);
    if (o->divergence != TK_PLTF_KL && o->divergence != TK_PLTF_EUCLIDEAN && o->divergence != TK_PLTF_IS)
        return tk_set_error(TK_ERR_ARGUMENT, "PLTF: unknown divergence %d", (int)o->divergence);
    for (int f = 0; f < m->num_factors; ++f)
        if (!res->factors[f]) return tk_set_error(TK_ERR_ARGUMENT, "PLTF: no buffer for factor %d", f);
    const size_t count = tk_pltf_out_count(m);
    double mean = 0;
    if ((st = tk_pltf_check_data(m, o->divergence, x, mask, count, &mean)) != TK_OK) return st;
    if (o->init_given) {
        for (int f = 0; f < m->num_factors; ++f)
            for (size_t i = 0, n = tk_pltf_factor_count(m, f); i < n; ++i)
                if (!(res->factors[f][i] >= 0) || !isfinite(res->factors[f][i]))
                    return tk_set_error(TK_ERR_DATA, "PLTF: start of factor %d, entry %zu is %g (must be finite, >= 0)",
                                        f, i, res->factors[f][i]);
    } else {
        random_start(m, o->seed, mean, res->factors);
    }

    run_state r;
    memset(&r, 0, sizeof r);
    if ((st = tk_pltf_make_engine(&r.e, o->backend, o->num_threads, o->cuda_device)) != TK_OK) return st;
    tk_pltf_out_term(m, &r.out);
    for (int f = 0; f < m->num_factors; ++f) tk_pltf_factor_term(m, f, &r.terms[f]);
    for (int f = 0; f < m->num_factors; ++f) {
        r.dterms[f][0] = r.out;
        for (int g = 0, k = 1; g < m->num_factors; ++g)
            if (g != f) r.dterms[f][k++] = r.terms[g];
    }
    size_t max_factor = 0;
    for (int f = 0; f < m->num_factors; ++f)
        if (tk_pltf_factor_count(m, f) > max_factor) max_factor = tk_pltf_factor_count(m, f);
    /* What stays resident for the whole fit, refused up front where the engine (the
     * GPU) cannot hold it: X, X^, the two update terms, the mask, the update buffers
     * and the factors. */
    if (r.e.check_fit) {
        size_t values = (mask ? 5 : 4) * count + 2 * max_factor;
        for (int f = 0; f < m->num_factors; ++f) values += tk_pltf_factor_count(m, f);
        char what[TK_PLTF_MAX_TEXT + 96];
        snprintf(what, sizeof what, "model \"%s\" with its data, reconstruction and update terms (all resident)",
                 m->text);
        st = r.e.check_fit(&r.e, values, what);
    }
    /* The data goes to the engine with unobserved entries zeroed: they are never read. */
    double *host = malloc(sizeof(double) * count);
    if (!host) st = tk_set_error(TK_ERR_MEMORY, "PLTF: out of memory for %zu values", count);
    const size_t sizes[6] = {count, count, count, count, max_factor, max_factor};
    void **bufs[6] = {&r.x, &r.xhat, &r.qnum, &r.qden, &r.num, &r.den};
    for (int b = 0; b < 6 && st == TK_OK; ++b) st = r.e.alloc(&r.e, sizes[b], bufs[b]);
    if (st == TK_OK) {
        for (size_t i = 0; i < count; ++i) host[i] = !mask || mask[i] ? x[i] : 0;
        st = r.e.upload(&r.e, r.x, host, count);
    }
    if (st == TK_OK && mask) {
        for (size_t i = 0; i < count; ++i) host[i] = mask[i] ? 1 : 0;
        if ((st = r.e.alloc(&r.e, count, &r.mask)) == TK_OK) st = r.e.upload(&r.e, r.mask, host, count);
    }
    for (int f = 0; f < m->num_factors && st == TK_OK; ++f) {
        size_t n = tk_pltf_factor_count(m, f);
        if ((st = r.e.alloc(&r.e, n, &r.z[f])) == TK_OK) st = r.e.upload(&r.e, r.z[f], res->factors[f], n);
    }
    free(host);
    if (st == TK_OK && !o->naive_gtm) {
        st = tk_pltf_plan_make(&r.plan_x, m->dims, m->num_factors, r.terms, &r.out);
        for (int f = 0; f < m->num_factors && st == TK_OK; ++f)
            st = tk_pltf_plan_make(&r.plan_d[f], m->dims, m->num_factors, r.dterms[f], &r.terms[f]);
        r.ones_den = o->divergence == TK_PLTF_KL && !mask;
        if (r.ones_den && st == TK_OK) st = make_ones_plans(&r, m);
        if (r.ones_den && st == TK_OK) st = r.e.alloc(&r.e, max_factor, &r.ones_small);
        size_t rest_size = 0;
        if (st == TK_OK) st = make_shared_plans(&r, m, count, &rest_size);
        if (st == TK_OK && rest_size) st = r.e.alloc(&r.e, rest_size, &r.rest);
        if (st == TK_OK) st = make_unfoldings(&r, m, count);
    }
    if (st == TK_OK) st = iterate(&r, m, o, res, count);
    for (int f = 0; f < m->num_factors && st == TK_OK; ++f)
        st = r.e.download(&r.e, res->factors[f], r.z[f], tk_pltf_factor_count(m, f));
    if (st == TK_OK && res->xhat) st = r.e.download(&r.e, res->xhat, r.xhat, count);

    tk_pltf_plan_free(&r.plan_x);
    for (int f = 0; f < m->num_factors; ++f) {
        tk_pltf_plan_free(&r.plan_d[f]), tk_pltf_plan_free(&r.plan_ones[f]);
        tk_pltf_plan_free(&r.plan_rest[f]), tk_pltf_plan_free(&r.plan_xs[f]), tk_pltf_plan_free(&r.plan_ds[f]);
    }
    void *all[9] = {r.x, r.mask, r.xhat, r.qnum, r.qden, r.num, r.den, r.ones_small, r.rest};
    for (int b = 0; b < 9; ++b)
        if (all[b]) r.e.release(&r.e, all[b]);
    for (int f = 0; f < m->num_factors; ++f) {
        if (r.x_f[f] && r.x_f[f] != r.x) r.e.release(&r.e, r.x_f[f]);
        if (r.mask_f[f] && r.mask_f[f] != r.mask) r.e.release(&r.e, r.mask_f[f]);
    }
    for (int f = 0; f < m->num_factors; ++f)
        if (r.z[f]) r.e.release(&r.e, r.z[f]);
    r.e.destroy(&r.e);
    res->total_ms = tk_now_ms() - start;
    return st;
}
