/* Coupled PLTF (GCTF): several views share factors by name; each shared factor's
 * update adds the numerators and denominators of every view that holds it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pltf_internal.h"

/* Prefix the last error with the view it came from (copied first: the message
 * buffer is the one being written). */
static tk_status view_error(tk_status st, int v)
{
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", tk_last_error());
    return tk_set_error(st, "view %d: %s", v, msg);
}

typedef struct {
    int num_factors;
    char names[TK_PLTF_MAX_FACTORS][TK_PLTF_MAX_INDICES + 1];
    size_t counts[TK_PLTF_MAX_FACTORS];
    int of[TK_PLTF_MAX_VIEWS][TK_PLTF_MAX_FACTORS]; /* view's factor -> distinct factor */
} factor_map;

static tk_status build_map(int nv, const tk_pltf_view *views, factor_map *map)
{
    memset(map, 0, sizeof *map);
    if (nv < 1 || nv > TK_PLTF_MAX_VIEWS)
        return tk_set_error(TK_ERR_ARGUMENT, "coupled PLTF: %d views (1 to %d supported)", nv, TK_PLTF_MAX_VIEWS);
    size_t size_of[TK_PLTF_MAX_INDICES] = {0};
    int first_view[TK_PLTF_MAX_INDICES];
    for (int v = 0; v < nv; ++v) {
        const tk_pltf_model *m = views[v].model;
        if (!m || !views[v].x) return tk_set_error(TK_ERR_ARGUMENT, "coupled PLTF: view %d has no model or data", v);
        tk_status st = tk_pltf_check_dims(m);
        if (st == TK_OK) st = tk_pltf_check_model_for_updates(m);
        if (st != TK_OK) return view_error(st, v);
        for (int id = 0; id < TK_PLTF_MAX_INDICES; ++id) {
            if (!m->dims[id]) continue;
            if (!size_of[id]) {
                size_of[id] = m->dims[id], first_view[id] = v;
            } else if (size_of[id] != m->dims[id]) {
                return tk_set_error(TK_ERR_ARGUMENT,
                                    "coupled PLTF: index '%c' has size %zu in view %d (\"%s\") but %zu in view %d (\"%s\")",
                                    tk_pltf_index_letter(id), size_of[id], first_view[id],
                                    views[first_view[id]].model->text, m->dims[id], v, m->text);
            }
        }
        for (int f = 0; f < m->num_factors; ++f) {
            char name[TK_PLTF_MAX_INDICES + 1];
            tk_pltf_factor_name(m, f, name);
            int g = 0;
            while (g < map->num_factors && strcmp(map->names[g], name)) ++g;
            for (int e = 0; e < f; ++e)
                if (map->of[v][e] == g && g < map->num_factors)
                    return tk_set_error(TK_ERR_ARGUMENT, "coupled PLTF: factor '%s' occurs twice in view %d (\"%s\")",
                                        name, v, m->text);
            if (g == map->num_factors) {
                if (g == TK_PLTF_MAX_FACTORS)
                    return tk_set_error(TK_ERR_ARGUMENT, "coupled PLTF: more than %d distinct factors",
                                        TK_PLTF_MAX_FACTORS);
                memcpy(map->names[g], name, sizeof name);
                map->counts[g] = tk_pltf_factor_count(m, f);
                ++map->num_factors;
            }
            map->of[v][f] = g;
        }
    }
    return TK_OK;
}

int tk_pltf_coupled_factors(int nv, const tk_pltf_view *views, char (*names)[TK_PLTF_MAX_INDICES + 1])
{
    factor_map map;
    if (build_map(nv, views, &map) != TK_OK) return -1;
    if (names) memcpy(names, map.names, sizeof(map.names[0]) * (size_t)map.num_factors);
    return map.num_factors;
}

typedef struct {
    void *x, *mask, *xhat, *qnum, *qden;
    size_t count;
    tk_pltf_term out, terms[TK_PLTF_MAX_FACTORS], dterms[TK_PLTF_MAX_FACTORS][TK_PLTF_MAX_FACTORS];
    tk_pltf_plan plan_x, plan_d[TK_PLTF_MAX_FACTORS];
} view_state;

typedef struct {
    tk_pltf_engine e;
    factor_map map;
    void *z[TK_PLTF_MAX_FACTORS], *num, *den, *tmp;
    view_state v[TK_PLTF_MAX_VIEWS];
} coupled_state;

static tk_status view_xhat(coupled_state *c, const tk_pltf_view *views, int v)
{
    const void *ops[TK_PLTF_MAX_FACTORS];
    for (int f = 0; f < views[v].model->num_factors; ++f) ops[f] = c->z[c->map.of[v][f]];
    return tk_pltf_plan_run(&c->v[v].plan_x, &c->e, ops, c->v[v].xhat);
}

/* num += D_{v,f}(q) */
static tk_status view_delta_add(coupled_state *c, const tk_pltf_view *views, int v, int f, const void *q, void *sum)
{
    const tk_pltf_model *m = views[v].model;
    const void *ops[TK_PLTF_MAX_FACTORS];
    ops[0] = q;
    for (int g = 0, k = 1; g < m->num_factors; ++g)
        if (g != f) ops[k++] = c->z[c->map.of[v][g]];
    tk_status st = tk_pltf_plan_run(&c->v[v].plan_d[f], &c->e, ops, c->tmp);
    return st == TK_OK ? c->e.add(&c->e, sum, c->tmp, tk_pltf_factor_count(m, f)) : st;
}

static tk_status coupled_iterate(coupled_state *c, int nv, const tk_pltf_view *views, const tk_pltf_options *o,
                                 tk_pltf_result *res)
{
    const tk_pltf_divergence d = o->divergence;
    const double exponent = d == TK_PLTF_IS ? 0.5 : 1.0;
    tk_status st = TK_OK;
    const double t0 = tk_now_ms();
    for (int t = 0; t <= o->iterations; ++t) {
        if (o->track_divergence || t == o->iterations) {
            double total = 0;
            for (int v = 0; v < nv; ++v) {
                double div;
                if ((st = view_xhat(c, views, v)) != TK_OK) return st;
                st = c->e.divergence(&c->e, d, c->v[v].x, c->v[v].mask, c->v[v].xhat, c->v[v].count, &div);
                if (st != TK_OK) return st;
                total += div;
            }
            if (res->divergence) res->divergence[t] = total;
            res->final_divergence = total, res->iterations_done = t;
            if (o->on_iteration && o->on_iteration(o->user, t, total)) break;
        }
        if (t == o->iterations) break;
        for (int g = 0; g < c->map.num_factors; ++g) {
            const size_t n = c->map.counts[g];
            if ((st = c->e.fill(&c->e, c->num, 0.0, n)) != TK_OK || (st = c->e.fill(&c->e, c->den, 0.0, n)) != TK_OK)
                return st;
            for (int v = 0; v < nv; ++v)
                for (int f = 0; f < views[v].model->num_factors; ++f) {
                    if (c->map.of[v][f] != g) continue;
                    view_state *s = &c->v[v];
                    if ((st = view_xhat(c, views, v)) != TK_OK) return st;
                    st = c->e.mu_terms(&c->e, d, s->x, s->mask, s->xhat, s->count, s->qnum, s->qden);
                    if (st == TK_OK) st = view_delta_add(c, views, v, f, s->qnum, c->num);
                    if (st == TK_OK) st = view_delta_add(c, views, v, f, s->qden, c->den);
                    if (st != TK_OK) return st;
                }
            if ((st = c->e.mu_apply(&c->e, c->z[g], c->num, c->den, n, exponent)) != TK_OK) return st;
        }
        if (!o->track_divergence) res->iterations_done = t + 1;
    }
    if ((st = c->e.sync(&c->e)) != TK_OK) return st;
    res->iterate_ms = tk_now_ms() - t0;
    return TK_OK;
}

/* Uniform in [0.5, 1.5), each factor scaled by the geometric mean over the views
 * holding it of (data mean / latent terms)^(1 / factors of that view). */
static void coupled_start(int nv, const tk_pltf_view *views, const factor_map *map, const double *means, uint64_t seed,
                          double *const *factors)
{
    double log_scale[TK_PLTF_MAX_FACTORS] = {0};
    int views_of[TK_PLTF_MAX_FACTORS] = {0};
    for (int v = 0; v < nv; ++v) {
        const tk_pltf_model *m = views[v].model;
        double terms = 1;
        for (int id = 0; id < TK_PLTF_MAX_INDICES; ++id) {
            int latent = m->dims[id] > 0;
            for (int o = 0; o < m->out_ndim; ++o) latent &= m->out[o] != id;
            if (latent) terms *= (double)m->dims[id];
        }
        const double per = log((means[v] > 0 ? means[v] : 1) / terms) / m->num_factors;
        for (int f = 0; f < m->num_factors; ++f) log_scale[map->of[v][f]] += per, ++views_of[map->of[v][f]];
    }
    uint64_t s = seed;
    for (int g = 0; g < map->num_factors; ++g) {
        const double scale = exp(log_scale[g] / views_of[g]);
        for (size_t i = 0; i < map->counts[g]; ++i)
            factors[g][i] = scale * (0.5 + (double)(tk_pltf_next_random(&s) >> 11) * 0x1.0p-53);
    }
}

tk_status tk_pltf_factorize_coupled(int nv, const tk_pltf_view *views, const tk_pltf_options *o, tk_pltf_result *res)
{
    const double start = tk_now_ms();
    coupled_state *c = calloc(1, sizeof *c);
    if (!c) return tk_set_error(TK_ERR_MEMORY, "coupled PLTF: out of memory");
    tk_status st = build_map(nv, views, &c->map);
    if (st == TK_OK && o->iterations < 0)
        st = tk_set_error(TK_ERR_ARGUMENT, "PLTF: negative iteration count %d", o->iterations);
    double means[TK_PLTF_MAX_VIEWS];
    for (int v = 0; v < nv && st == TK_OK; ++v) {
        const tk_pltf_model *m = views[v].model;
        st = tk_pltf_check_data(m, o->divergence, views[v].x, views[v].mask, tk_pltf_out_count(m), &means[v]);
        if (st != TK_OK) st = view_error(st, v);
    }
    for (int g = 0; g < c->map.num_factors && st == TK_OK; ++g) {
        if (!res->factors[g]) st = tk_set_error(TK_ERR_ARGUMENT, "coupled PLTF: no buffer for factor %d", g);
        for (size_t i = 0; st == TK_OK && o->init_given && i < c->map.counts[g]; ++i)
            if (!(res->factors[g][i] >= 0) || !isfinite(res->factors[g][i]))
                st = tk_set_error(TK_ERR_DATA, "coupled PLTF: start of factor '%s', entry %zu is %g (must be finite, >= 0)",
                                  c->map.names[g], i, res->factors[g][i]);
    }
    if (st != TK_OK) {
        free(c);
        return st;
    }
    if (!o->init_given) coupled_start(nv, views, &c->map, means, o->seed, res->factors);
    if ((st = tk_pltf_make_engine(&c->e, o->backend, o->num_threads, o->cuda_device)) != TK_OK) {
        free(c);
        return st;
    }
    size_t max_factor = 0, max_count = 0;
    for (int g = 0; g < c->map.num_factors; ++g)
        if (c->map.counts[g] > max_factor) max_factor = c->map.counts[g];
    /* Refused up front where the engine (the GPU) cannot hold what stays resident: the
     * factors, their update buffers, and each view's X, X^, update terms and mask. */
    if (c->e.check_fit) {
        size_t values = 3 * max_factor;
        for (int g = 0; g < c->map.num_factors; ++g) values += c->map.counts[g];
        for (int v = 0; v < nv; ++v) values += (views[v].mask ? 5 : 4) * tk_pltf_out_count(views[v].model);
        char what[96];
        snprintf(what, sizeof what, "the %d coupled views with their factors (all resident)", nv);
        st = c->e.check_fit(&c->e, values, what);
    }
    for (int g = 0; g < c->map.num_factors && st == TK_OK; ++g)
        if ((st = c->e.alloc(&c->e, c->map.counts[g], &c->z[g])) == TK_OK)
            st = c->e.upload(&c->e, c->z[g], res->factors[g], c->map.counts[g]);
    void **scratch[3] = {&c->num, &c->den, &c->tmp};
    for (int b = 0; b < 3 && st == TK_OK; ++b) st = c->e.alloc(&c->e, max_factor, scratch[b]);
    for (int v = 0; v < nv && st == TK_OK; ++v) {
        const tk_pltf_model *m = views[v].model;
        view_state *s = &c->v[v];
        s->count = tk_pltf_out_count(m);
        if (s->count > max_count) max_count = s->count;
        tk_pltf_out_term(m, &s->out);
        for (int f = 0; f < m->num_factors; ++f) tk_pltf_factor_term(m, f, &s->terms[f]);
        for (int f = 0; f < m->num_factors; ++f) {
            s->dterms[f][0] = s->out;
            for (int g = 0, k = 1; g < m->num_factors; ++g)
                if (g != f) s->dterms[f][k++] = s->terms[g];
        }
        st = tk_pltf_plan_make(&s->plan_x, m->dims, m->num_factors, s->terms, &s->out);
        for (int f = 0; f < m->num_factors && st == TK_OK; ++f)
            st = tk_pltf_plan_make(&s->plan_d[f], m->dims, m->num_factors, s->dterms[f], &s->terms[f]);
        void **bufs[4] = {&s->x, &s->xhat, &s->qnum, &s->qden};
        for (int b = 0; b < 4 && st == TK_OK; ++b) st = c->e.alloc(&c->e, s->count, bufs[b]);
        double *host = st == TK_OK ? malloc(sizeof(double) * s->count) : NULL;
        if (st == TK_OK && !host) st = tk_set_error(TK_ERR_MEMORY, "coupled PLTF: out of memory");
        if (st == TK_OK) {
            /* unobserved entries are never read */
            for (size_t i = 0; i < s->count; ++i) host[i] = !views[v].mask || views[v].mask[i] ? views[v].x[i] : 0;
            st = c->e.upload(&c->e, s->x, host, s->count);
        }
        if (st == TK_OK && views[v].mask) {
            for (size_t i = 0; i < s->count; ++i) host[i] = views[v].mask[i] ? 1 : 0;
            if ((st = c->e.alloc(&c->e, s->count, &s->mask)) == TK_OK) st = c->e.upload(&c->e, s->mask, host, s->count);
        }
        free(host);
    }
    if (st == TK_OK) st = coupled_iterate(c, nv, views, o, res);
    for (int g = 0; g < c->map.num_factors && st == TK_OK; ++g)
        st = c->e.download(&c->e, res->factors[g], c->z[g], c->map.counts[g]);
    for (int v = 0; v < nv && st == TK_OK; ++v)
        if (views[v].xhat) st = c->e.download(&c->e, views[v].xhat, c->v[v].xhat, c->v[v].count);
    for (int v = 0; v < nv; ++v) {
        view_state *s = &c->v[v];
        tk_pltf_plan_free(&s->plan_x);
        for (int f = 0; f < TK_PLTF_MAX_FACTORS; ++f) tk_pltf_plan_free(&s->plan_d[f]);
        void *bufs[5] = {s->x, s->mask, s->xhat, s->qnum, s->qden};
        for (int b = 0; b < 5; ++b)
            if (bufs[b]) c->e.release(&c->e, bufs[b]);
    }
    for (int g = 0; g < c->map.num_factors; ++g)
        if (c->z[g]) c->e.release(&c->e, c->z[g]);
    void *scr[3] = {c->num, c->den, c->tmp};
    for (int b = 0; b < 3; ++b)
        if (scr[b]) c->e.release(&c->e, scr[b]);
    c->e.destroy(&c->e);
    free(c);
    res->total_ms = tk_now_ms() - start;
    return st;
}
