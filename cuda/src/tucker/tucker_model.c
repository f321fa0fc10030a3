/* FastTucker models: allocation, random start, prediction, loss and gradient. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tucker_internal.h"

tk_status tk_tucker_model_alloc(tk_tucker_model *m, int order, const uint32_t *dims, int rank_j, int rank_r)
{
    memset(m, 0, sizeof *m);
    if (order < 3 || order > TK_TUCKER_MAX_ORDER)
        return tk_set_error(TK_ERR_ARGUMENT, "FastTucker needs order 3..%d, got %d", TK_TUCKER_MAX_ORDER, order);
    if (rank_j < TK_TUCKER_MIN_RANK || rank_j > TK_TUCKER_MAX_RANK || rank_r < TK_TUCKER_MIN_RANK ||
        rank_r > TK_TUCKER_MAX_RANK)
        return tk_set_error(TK_ERR_ARGUMENT, "ranks J=%d, R=%d: both must be %d..%d", rank_j, rank_r,
                            TK_TUCKER_MIN_RANK, TK_TUCKER_MAX_RANK);
    m->order = order;
    m->rank_j = rank_j;
    m->rank_r = rank_r;
    for (int n = 0; n < order; ++n) {
        if (dims[n] == 0) return tk_set_error(TK_ERR_ARGUMENT, "mode %d has size 0", n + 1);
        m->dims[n] = dims[n];
        m->a[n] = calloc((size_t)dims[n] * (size_t)rank_j, sizeof(float));
        m->b[n] = calloc((size_t)rank_j * (size_t)rank_r, sizeof(float));
        if (!m->a[n] || !m->b[n]) {
            tk_tucker_model_free(m);
            // A mode has as many rows as its largest index, so a sparse numbering costs as much as a dense one.
            return tk_set_error(TK_ERR_MEMORY,
                                "out of memory for factor %d (%u x %d float32: %.3g GiB); free memory, or lower the "
                                "rank J, or number mode %d's indices 1..K without gaps",
                                n + 1, dims[n], rank_j, (double)dims[n] * rank_j * sizeof(float) / (1 << 30), n + 1);
        }
    }
    return TK_OK;
}

void tk_tucker_model_free(tk_tucker_model *m)
{
    if (!m) return;
    for (int n = 0; n < TK_TUCKER_MAX_ORDER; ++n) {
        free(m->a[n]);
        free(m->b[n]);
    }
    memset(m, 0, sizeof *m);
}

tk_status tk_tucker_model_copy(tk_tucker_model *dst, const tk_tucker_model *src)
{
    tk_status st = tk_tucker_model_alloc(dst, src->order, src->dims, src->rank_j, src->rank_r);
    if (st != TK_OK) return st;
    for (int n = 0; n < src->order; ++n) {
        memcpy(dst->a[n], src->a[n], (size_t)src->dims[n] * (size_t)src->rank_j * sizeof(float));
        memcpy(dst->b[n], src->b[n], (size_t)src->rank_j * (size_t)src->rank_r * sizeof(float));
    }
    return TK_OK;
}

tk_status tk_tucker_model_init(tk_tucker_model *m, uint64_t seed, double target_mean)
{
    double J = m->rank_j, R = m->rank_r, N = m->order, s, lo;
    if (target_mean > 0) {
        /* a . b ~ J s^2 / 4 per mode, prediction ~ R (J s^2 / 4)^N. */
        double c = pow(target_mean / R, 1.0 / N);
        s = sqrt(4.0 * c / J);
        lo = 0;
    } else {
        /* var(a . b) = J s^4 / 9; var(prediction) = R (J s^4 / 9)^N = 0.25. */
        s = pow(9.0 / J * pow(0.25 / R, 1.0 / N), 0.25);
        lo = -1;
    }
    uint64_t key = tk_tucker_mix(seed ^ 0x1A17u);
    for (int n = 0; n < m->order; ++n) {
        size_t na = (size_t)m->dims[n] * (size_t)m->rank_j, nb = (size_t)m->rank_j * (size_t)m->rank_r;
        uint64_t ka = tk_tucker_mix(key + 2 * (uint64_t)n), kb = tk_tucker_mix(key + 2 * (uint64_t)n + 1);
        for (size_t k = 0; k < na; ++k) m->a[n][k] = (float)(s * (lo + (1 - lo) * tk_tucker_unit(tk_tucker_mix(ka + k))));
        for (size_t k = 0; k < nb; ++k) m->b[n][k] = (float)(s * (lo + (1 - lo) * tk_tucker_unit(tk_tucker_mix(kb + k))));
    }
    return TK_OK;
}

double tk_tucker_model_value(const tk_tucker_model *m, const uint32_t *index)
{
    double sum = 0;
    for (int r = 0; r < m->rank_r; ++r) {
        double prod = 1;
        for (int n = 0; n < m->order; ++n) {
            const float *a = m->a[n] + (size_t)index[n] * (size_t)m->rank_j;
            double dot = 0;
            for (int j = 0; j < m->rank_j; ++j) dot += (double)a[j] * m->b[n][j * m->rank_r + r];
            prod *= dot;
        }
        sum += prod;
    }
    return sum;
}

/* C(n) = A(n) B(n) in double, the intermediates every prediction reuses. */
static double **intermediates(const tk_tucker_model *m)
{
    double **c = calloc((size_t)m->order, sizeof *c);
    if (!c) return NULL;
    int J = m->rank_j, R = m->rank_r;
    for (int n = 0; n < m->order; ++n) {
        c[n] = malloc((size_t)m->dims[n] * (size_t)R * sizeof(double));
        if (!c[n]) {
            for (int k = 0; k < n; ++k) free(c[k]);
            free(c);
            return NULL;
        }
        const float *A = m->a[n], *B = m->b[n];
        double *C = c[n];
        long rows = (long)m->dims[n];
#pragma omp parallel for schedule(static)
        for (long i = 0; i < rows; ++i)
            for (int r = 0; r < R; ++r) {
                double dot = 0;
                for (int j = 0; j < J; ++j) dot += (double)A[(size_t)i * (size_t)J + (size_t)j] * B[j * R + r];
                C[(size_t)i * (size_t)R + (size_t)r] = dot;
            }
    }
    return c;
}

static void free_intermediates(double **c, int order)
{
    if (!c) return;
    for (int n = 0; n < order; ++n) free(c[n]);
    free(c);
}

tk_status tk_tucker_check_shape(const tk_tucker_model *m, const tk_tucker_coo *t)
{
    if (t->order != m->order)
        return tk_set_error(TK_ERR_ARGUMENT, "the tensor has order %d but the model %d", t->order, m->order);
    for (int n = 0; n < m->order; ++n)
        if (t->dims[n] > m->dims[n])
            return tk_set_error(TK_ERR_ARGUMENT, "mode %d of the tensor has size %u, beyond the model's %u", n + 1,
                                t->dims[n], m->dims[n]);
    return TK_OK;
}

static double predict_c(double *const *c, int order, int R, const uint32_t *index)
{
    double sum = 0;
    for (int r = 0; r < R; ++r) {
        double prod = 1;
        for (int n = 0; n < order; ++n) prod *= c[n][(size_t)index[n] * (size_t)R + (size_t)r];
        sum += prod;
    }
    return sum;
}

tk_status tk_tucker_predict(const tk_tucker_model *m, const tk_tucker_coo *t, float *out)
{
    tk_status st = tk_tucker_check_shape(m, t);
    if (st != TK_OK) return st;
    double **c = intermediates(m);
    if (!c) return tk_set_error(TK_ERR_MEMORY, "cannot allocate the model's intermediates");
    long nnz = (long)t->nnz;
#pragma omp parallel for schedule(static)
    for (long e = 0; e < nnz; ++e)
        out[e] = (float)predict_c(c, m->order, m->rank_r, t->idx + (size_t)e * (size_t)t->order);
    free_intermediates(c, m->order);
    return TK_OK;
}

tk_status tk_tucker_predict_dense(const tk_tucker_model *m, float *out)
{
    int N = m->order, R = m->rank_r;
    size_t outer = 1, inner = m->dims[0];
    for (int n = 1; n < N; ++n) outer *= m->dims[n];
    double **c = intermediates(m);
    if (!c) return tk_set_error(TK_ERR_MEMORY, "cannot allocate the model's intermediates");
    /* Each line along mode 1 shares the product of the other modes' C rows. */
#pragma omp parallel for schedule(static)
    for (long line = 0; line < (long)outer; ++line) {
        double shared[TK_TUCKER_MAX_RANK];
        for (int r = 0; r < R; ++r) shared[r] = 1;
        size_t rest = (size_t)line;
        for (int n = 1; n < N; ++n) {
            size_t i = rest % m->dims[n];
            rest /= m->dims[n];
            for (int r = 0; r < R; ++r) shared[r] *= c[n][i * (size_t)R + (size_t)r];
        }
        float *dst = out + (size_t)line * inner;
        for (size_t i = 0; i < inner; ++i) {
            double sum = 0;
            for (int r = 0; r < R; ++r) sum += shared[r] * c[0][i * (size_t)R + (size_t)r];
            dst[i] = (float)sum;
        }
    }
    free_intermediates(c, N);
    return TK_OK;
}

static double squared_norm(const float *x, size_t n)
{
    double s = 0;
    for (size_t k = 0; k < n; ++k) s += (double)x[k] * x[k];
    return s;
}

/* Partial sums over fixed chunks, added in chunk order: the same result for any
 * thread count. */
#define EVAL_CHUNK 65536

tk_status tk_tucker_evaluate(const tk_tucker_model *m, const tk_tucker_coo *t, double lambda_a, double lambda_b,
                             tk_tucker_metrics *out)
{
    memset(out, 0, sizeof *out);
    tk_status st = tk_tucker_check_shape(m, t);
    if (st != TK_OK) return st;
    double **c = intermediates(m);
    long chunks = (long)((t->nnz + EVAL_CHUNK - 1) / EVAL_CHUNK);
    double *part = malloc(2 * (size_t)(chunks + 1) * sizeof *part);
    if (!c || !part) {
        free_intermediates(c, m->order);
        free(part);
        return tk_set_error(TK_ERR_MEMORY, "cannot allocate the evaluation buffers");
    }
#pragma omp parallel for schedule(dynamic, 4)
    for (long k = 0; k < chunks; ++k) {
        size_t lo = (size_t)k * EVAL_CHUNK, hi = lo + EVAL_CHUNK < t->nnz ? lo + EVAL_CHUNK : t->nnz;
        double sse = 0, sae = 0;
        for (size_t e = lo; e < hi; ++e) {
            double err = (double)t->val[e] - predict_c(c, m->order, m->rank_r, t->idx + e * (size_t)t->order);
            sse += err * err;
            sae += fabs(err);
        }
        part[2 * k] = sse;
        part[2 * k + 1] = sae;
    }
    double sse = 0, sae = 0;
    for (long k = 0; k < chunks; ++k) {
        sse += part[2 * k];
        sae += part[2 * k + 1];
    }
    free(part);
    free_intermediates(c, m->order);
    double reg = 0;
    for (int n = 0; n < m->order; ++n)
        reg += lambda_a * squared_norm(m->a[n], (size_t)m->dims[n] * (size_t)m->rank_j) +
               lambda_b * squared_norm(m->b[n], (size_t)m->rank_j * (size_t)m->rank_r);
    out->count = t->nnz;
    out->sse = sse;
    out->rmse = t->nnz ? sqrt(sse / (double)t->nnz) : 0;
    out->mae = t->nnz ? sae / (double)t->nnz : 0;
    out->loss = sse + reg;
    return TK_OK;
}

tk_status tk_tucker_gradient(const tk_tucker_model *m, const tk_tucker_coo *t, double lambda_a, double lambda_b,
                             double *const *grad_a, double *const *grad_b)
{
    tk_status st = tk_tucker_check_shape(m, t);
    if (st != TK_OK) return st;
    int N = m->order, J = m->rank_j, R = m->rank_r;
    double **c = intermediates(m);
    if (!c) return tk_set_error(TK_ERR_MEMORY, "cannot allocate the model's intermediates");
    for (int n = 0; n < N; ++n) {
        for (size_t k = 0; k < (size_t)m->dims[n] * (size_t)J; ++k) grad_a[n][k] = 2 * lambda_a * m->a[n][k];
        for (size_t k = 0; k < (size_t)J * (size_t)R; ++k) grad_b[n][k] = 2 * lambda_b * m->b[n][k];
    }
    double q[TK_TUCKER_MAX_RANK], v[TK_TUCKER_MAX_RANK];
    /* Sequential: a reference, not a hot path. */
    for (size_t e = 0; e < t->nnz; ++e) {
        const uint32_t *ix = t->idx + e * (size_t)N;
        double err = (double)t->val[e] - predict_c(c, N, R, ix);
        for (int n = 0; n < N; ++n) {
            for (int r = 0; r < R; ++r) {
                q[r] = 1;
                for (int k = 0; k < N; ++k)
                    if (k != n) q[r] *= c[k][(size_t)ix[k] * (size_t)R + (size_t)r];
            }
            const float *B = m->b[n], *a = m->a[n] + (size_t)ix[n] * (size_t)J;
            for (int j = 0; j < J; ++j) {
                v[j] = 0;
                for (int r = 0; r < R; ++r) v[j] += (double)B[j * R + r] * q[r];
            }
            double *ga = grad_a[n] + (size_t)ix[n] * (size_t)J;
            for (int j = 0; j < J; ++j) ga[j] -= 2 * err * v[j];
            for (int j = 0; j < J; ++j)
                for (int r = 0; r < R; ++r) grad_b[n][j * R + r] -= 2 * err * (double)a[j] * q[r];
        }
    }
    free_intermediates(c, N);
    return TK_OK;
}

/* Mode n's core in balanced form (tk_tucker_model_balance_core): B = L Q with Q's min(J, R) rows
 * (J <= R) or columns (J > R) orthonormal, by modified Gram-Schmidt in double; then
 * B <- sigma Q and A <- A B Q^T / sigma (J > R) or A L / sigma (J <= R), the same A B. */
static void balance_mode(float *A, float *B, size_t rows, int J, int R)
{
    const int rowwise = J <= R, k_count = rowwise ? J : R, len = rowwise ? R : J;
    /* vector k of the orthogonalized set, element t: row k of B (rowwise) or column k */
#define TK_BAL_AT(k, t) (rowwise ? (size_t)(k) * (size_t)R + (size_t)(t) : (size_t)(t) * (size_t)R + (size_t)(k))
    double Q[TK_TUCKER_MAX_RANK * TK_TUCKER_MAX_RANK], L[TK_TUCKER_MAX_RANK * TK_TUCKER_MAX_RANK];
    double frob = 0, gram_err = 0;
    for (int k = 0; k < J * R; ++k) frob += (double)B[k] * B[k];
    const double sigma = sqrt(frob / k_count);
    if (!(sigma > 0)) return;
    /* already balanced (a resumed model, or a second solver): leave it bit for bit */
    for (int k = 0; k < k_count; ++k)
        for (int l = 0; l <= k; ++l) {
            double g = 0;
            for (int t = 0; t < len; ++t) g += (double)B[TK_BAL_AT(k, t)] * B[TK_BAL_AT(l, t)];
            gram_err = fmax(gram_err, fabs(g - (k == l ? sigma * sigma : 0)));
        }
    if (gram_err <= 1e-5 * sigma * sigma) return;
    memset(L, 0, sizeof L);
    for (int k = 0; k < k_count; ++k) {
        double *q = Q + (size_t)k * (size_t)len;
        for (int t = 0; t < len; ++t) q[t] = B[TK_BAL_AT(k, t)];
        for (int l = 0; l < k; ++l) {
            const double *p = Q + (size_t)l * (size_t)len;
            double d = 0;
            for (int t = 0; t < len; ++t) d += q[t] * p[t];
            L[k * k_count + l] = d;
            for (int t = 0; t < len; ++t) q[t] -= d * p[t];
        }
        double nq = 0;
        for (int t = 0; t < len; ++t) nq += q[t] * q[t];
        nq = sqrt(nq);
        if (!(nq > 1e-12 * sigma)) return; /* B of lower rank: no balanced form, keep it */
        L[k * k_count + k] = nq;
        for (int t = 0; t < len; ++t) q[t] /= nq;
    }
    double row[TK_TUCKER_MAX_RANK], c[TK_TUCKER_MAX_RANK];
    for (size_t i = 0; i < rows; ++i) {
        float *a = A + i * (size_t)J;
        for (int j = 0; j < J; ++j) row[j] = a[j];
        if (rowwise) { /* a' = a L / sigma: B's rows are sum_l L[k][l] q_l */
            for (int l = 0; l < J; ++l) {
                double s = 0;
                for (int k = l; k < J; ++k) s += row[k] * L[k * J + l];
                c[l] = s / sigma;
            }
            for (int j = 0; j < J; ++j) a[j] = (float)c[j];
        } else { /* a' = (a B) Q^T / sigma, a B = a's model row in C */
            for (int r = 0; r < R; ++r) {
                double s = 0;
                for (int j = 0; j < J; ++j) s += row[j] * B[(size_t)j * (size_t)R + (size_t)r];
                c[r] = s;
            }
            for (int j = 0; j < J; ++j) {
                double s = 0;
                for (int r = 0; r < R; ++r) s += c[r] * Q[(size_t)r * (size_t)J + (size_t)j];
                a[j] = (float)(s / sigma);
            }
        }
    }
    for (int k = 0; k < k_count; ++k)
        for (int t = 0; t < len; ++t) B[TK_BAL_AT(k, t)] = (float)(sigma * Q[(size_t)k * (size_t)len + (size_t)t]);
#undef TK_BAL_AT
}

void tk_tucker_model_balance_core(tk_tucker_model *m)
{
    for (int n = 0; n < m->order; ++n) balance_mode(m->a[n], m->b[n], m->dims[n], m->rank_j, m->rank_r);
}
