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
    /* On the sphere the Hessian of A x^m at an eigenpair is, up to the factor m,
     * U^T ((m-1) A x^(m-2) - lambda I) U with U a basis of the tangent space. */
    size_t nn = (size_t)dim * (size_t)dim;
    double *m2 = malloc(sizeof(double) * (nn * 3 + (size_t)dim * 3));
    if (!m2) return TK_STABILITY_DEGENERATE;
    double *eig = m2 + nn, *work = eig + dim;
    tk_sym_axm2_d(order, dim, packed, x, m2);
    tk_k_tangent_eigenvalues_d(dim, m2, x, work, eig);
    double scale = fabs(lambda);
    for (int i = 0; i < dim - 1; ++i) {
        eig[i] = (order - 1) * eig[i] - lambda;
        scale = fmax(scale, fabs(eig[i] + lambda));
    }
    double threshold = rel_tol * fmax(scale, 1e-300);
    int negative = 0, positive = 0;
    for (int i = 0; i < dim - 1; ++i) {
        negative += eig[i] < -threshold;
        positive += eig[i] > threshold;
    }
    free(m2);
    if (negative == dim - 1) return TK_STABILITY_MAX;
    if (positive == dim - 1) return TK_STABILITY_MIN;
    if (negative && positive) return TK_STABILITY_SADDLE;
    return TK_STABILITY_DEGENERATE;
}

void tk_eigenpairs_free(tk_eigenpairs *p)
{
    if (!p) return;
    TK_FREE_ALL(p->tensor, p->lambda, p->x, p->stability, p->num_starts);
    memset(p, 0, sizeof *p);
}

void tk_canonical_sign(int dim, double *x)
{
    int big = 0;
    for (int i = 1; i < dim; ++i)
        if (fabs(x[i]) > fabs(x[big])) big = i;
    if (x[big] < 0)
        for (int i = 0; i < dim; ++i) x[i] = -x[i];
}

static double distance(int dim, const double *a, const double *b, double sign)
{
    double d2 = 0;
    for (int i = 0; i < dim; ++i) d2 += (a[i] - sign * b[i]) * (a[i] - sign * b[i]);
    return sqrt(d2);
}

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
    if (merge_tol <= 0) merge_tol = dbl ? 1e-5 : 1e-3;
    const double stability_tol = dbl ? 1e-8 : 1e-4;

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
            double *x = xs + count * (size_t)n, norm2 = 0;
            for (int i = 0; i < n; ++i) {
                x[i] = dbl ? ((const double *)st->x)[slot * n + i] : ((const float *)st->x)[slot * n + i];
                norm2 += x[i] * x[i];
            }
            for (int i = 0; i < n; ++i) x[i] /= sqrt(norm2);
            if (m % 2 == 0) tk_canonical_sign(n, x);
            double lambda = dbl ? ((const double *)st->lambda)[slot] : ((const float *)st->lambda)[slot];
            size_t match = count;
            for (size_t p = first_of_tensor; p < count && match == count; ++p) {
                const double *y = xs + p * (size_t)n;
                double d = distance(n, x, y, 1.0);
                if (m % 2 == 0) d = fmin(d, distance(n, x, y, -1.0));
                if (d <= merge_tol) match = p;
            }
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
