/* Synthetic sparse tensors drawn from a known FastTucker model, with power-law
 * index popularity like the users and items of rating data. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tucker_internal.h"

void tk_tucker_synth_options_init(tk_tucker_synth_options *o)
{
    memset(o, 0, sizeof *o);
    o->order = 3;
    o->rank_j = TK_TUCKER_DEFAULT_RANK;
    o->rank_r = TK_TUCKER_DEFAULT_RANK;
    o->noise = 0.1;
    o->popularity = 0.5;
}

static uint64_t gcd64(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

typedef struct mode_law {
    double dim, alpha, top; /* top = (dim + 1)^(1 - alpha) - 1 */
    uint64_t stride, offset;
} mode_law;

/* Popularity rank with P(k) ~ k^-alpha (continuous inverse CDF on [1, dim + 1)),
 * scattered over the mode by a fixed coprime stride. */
static uint32_t draw_index(const mode_law *law, double u)
{
    double x;
    if (law->alpha == 0)
        x = 1 + u * law->dim;
    else if (fabs(law->alpha - 1) < 1e-9)
        x = exp(u * log(law->dim + 1));
    else
        x = pow(1 + u * law->top, 1 / (1 - law->alpha));
    uint64_t rank = (uint64_t)x - 1, dim = (uint64_t)law->dim;
    if (rank >= dim) rank = dim - 1;
    return (uint32_t)((rank * law->stride + law->offset) % dim);
}

static double gaussian(uint64_t h1, uint64_t h2)
{
    double u1 = tk_tucker_unit(h1), u2 = tk_tucker_unit(h2);
    if (u1 < 1e-300) u1 = 1e-300;
    return sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2);
}

/* Fill entries [lo, hi) from hash stream `round`. */
static void draw_entries(const tk_tucker_synth_options *o, const mode_law *law, double *const *c, uint64_t key,
                         uint64_t round, tk_tucker_coo *t, size_t lo, size_t hi)
{
    int N = o->order, R = o->rank_r;
    long count = (long)(hi - lo);
#pragma omp parallel for schedule(static)
    for (long k = 0; k < count; ++k) {
        size_t e = lo + (size_t)k;
        uint64_t h = tk_tucker_mix(key ^ (round * 0x100000001B3ull) ^ ((uint64_t)e * 0x9E3779B97F4A7C15ull));
        uint32_t *ix = t->idx + e * (size_t)N;
        for (int n = 0; n < N; ++n) ix[n] = draw_index(&law[n], tk_tucker_unit(tk_tucker_mix(h + (uint64_t)n)));
        double sum = 0;
        for (int r = 0; r < R; ++r) {
            double prod = 1;
            for (int n = 0; n < N; ++n) prod *= c[n][(size_t)ix[n] * (size_t)R + (size_t)r];
            sum += prod;
        }
        double noise = o->noise * gaussian(tk_tucker_mix(h + 100), tk_tucker_mix(h + 101));
        t->val[e] = (float)(sum + noise);
    }
}

/* Sorts, then drops repeated index tuples; returns the entries kept. */
static size_t dedupe(tk_tucker_coo *t)
{
    size_t N = (size_t)t->order, kept = 0;
    for (size_t e = 0; e < t->nnz; ++e) {
        if (kept && !memcmp(t->idx + (kept - 1) * N, t->idx + e * N, N * sizeof(uint32_t))) continue;
        if (kept != e) {
            memmove(t->idx + kept * N, t->idx + e * N, N * sizeof(uint32_t));
            t->val[kept] = t->val[e];
        }
        ++kept;
    }
    return kept;
}

tk_status tk_tucker_synth(const tk_tucker_synth_options *o, tk_tucker_coo *out, tk_tucker_model *truth)
{
    memset(out, 0, sizeof *out);
    if (o->order < 3 || o->order > TK_TUCKER_MAX_ORDER)
        return tk_set_error(TK_ERR_ARGUMENT, "synthetic order %d is outside 3..%d", o->order, TK_TUCKER_MAX_ORDER);
    if (!(o->noise >= 0) || !(o->popularity >= 0) || o->popularity > 10)
        return tk_set_error(TK_ERR_ARGUMENT, "noise must be >= 0 and popularity in [0, 10]");
    double cells = 1;
    for (int n = 0; n < o->order; ++n) cells *= (double)o->dims[n];
    if (o->unique && (double)o->nnz > 0.5 * cells)
        return tk_set_error(TK_ERR_ARGUMENT, "%zu distinct entries do not fit comfortably in %.0f cells", o->nnz, cells);
    tk_tucker_model model;
    tk_status st = tk_tucker_model_alloc(&model, o->order, o->dims, o->rank_j, o->rank_r);
    if (st != TK_OK) return st;
    tk_tucker_model_init(&model, o->seed ^ 0x5EED7207ull, 0);
    int N = o->order, J = o->rank_j, R = o->rank_r;
    double *c[TK_TUCKER_MAX_ORDER] = {0};
    mode_law law[TK_TUCKER_MAX_ORDER];
    for (int n = 0; n < N; ++n) {
        c[n] = malloc((size_t)o->dims[n] * (size_t)R * sizeof(double));
        if (!c[n]) {
            st = tk_set_error(TK_ERR_MEMORY, "cannot allocate the synthetic model");
            goto done;
        }
        long rows = (long)o->dims[n];
#pragma omp parallel for schedule(static)
        for (long i = 0; i < rows; ++i)
            for (int r = 0; r < R; ++r) {
                double dot = 0;
                for (int j = 0; j < J; ++j) dot += (double)model.a[n][(size_t)i * (size_t)J + (size_t)j] * model.b[n][j * R + r];
                c[n][(size_t)i * (size_t)R + (size_t)r] = dot;
            }
        uint64_t dim = o->dims[n], h = tk_tucker_mix(o->seed + 77 + (uint64_t)n);
        law[n].dim = (double)dim;
        law[n].alpha = o->popularity;
        law[n].top = pow((double)dim + 1, 1 - o->popularity) - 1;
        law[n].offset = h % dim;
        law[n].stride = (dim > 2 ? (tk_tucker_mix(h) % (dim - 1)) + 1 : 1);
        while (gcd64(law[n].stride, dim) != 1) ++law[n].stride;
    }
    st = tk_tucker_coo_alloc(out, N, o->dims, o->nnz);
    if (st != TK_OK) goto done;
    uint64_t key = tk_tucker_mix(o->seed ^ 0xDA7Aull);
    draw_entries(o, law, c, key, 0, out, 0, o->nnz);
    if (o->unique) {
        size_t want = o->nnz;
        for (uint64_t round = 1;; ++round) {
            if ((st = tk_tucker_coo_sort(out)) != TK_OK) goto done;
            size_t kept = dedupe(out);
            if (kept == want) break;
            if (round > 64) {
                st = tk_set_error(TK_ERR_DATA, "could not draw %zu distinct entries (popularity too skewed for the shape)",
                                  want);
                goto done;
            }
            draw_entries(o, law, c, key, round, out, kept, want);
        }
    }
    if (truth) {
        *truth = model;
        memset(&model, 0, sizeof model);
    }
done:
    for (int n = 0; n < N; ++n) free(c[n]);
    tk_tucker_model_free(&model);
    if (st != TK_OK) tk_tucker_coo_free(out);
    return st;
}
