/* The cpu (sequential) and omp backends of FastTucker, in float or double. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "tucker_internal.h"

/* ---- ALS row solves, in double whatever the solver's precision ------------------------------
 * CUDA's als_gather_kernel and als_solve_kernel (tucker_kernels.cuh) do the same operations in
 * the same order.  A row's normal equations sum v v^T over its entries (the Netflix shape's most
 * popular movie: about 370,000), solved by Cholesky: in double, so that the rows are the
 * least-squares solutions LAPACK's dgels gives (tk_test_tucker_als_rows), at little cost on the
 * CPU (the entries' products stay in the solver's precision).  Double was first meant to cure
 * the H100's divergence at the Netflix shape (test RMSE 2.29); the float pair ended 20
 * iterations there at the same test RMSE (benchmarks.md "Time to accuracy"): not the cause. */

/* M (J x J, upper triangle) += v v^T, rhs += x v. */
static void als_add(double *M, double *rhs, const double *v, double x, int J)
{
    for (int i = 0; i < J; ++i) {
        const double vi = v[i];
        double *mi = M + (size_t)i * (size_t)J;
        for (int j = i; j < J; ++j) mi[j] += vi * v[j];
        rhs[i] += x * vi;
    }
}

/* One row's move: count entries gave M and rhs (count 0: the row's minimiser of f is 0).
 * (M + ridge I) y = rhs (ridge: tk_tucker_als_ridge of lambda_a, count and per_entry) by
 * Cholesky U^T U (U in U, M left intact); then a += omega (y - a),
 * kept only where it does not raise the row's loss (a safeguard: the solve is that loss's
 * minimiser, so only round-off on a near-singular M can raise it), else a stays; a
 * factorization that fails (lambda_a 0 and n < J) keeps a too.  a: the row, in and out. */
static void als_solve(const double *M, const double *rhs, double count, int J, double lambda_a, int per_entry,
                      double *U, double *a)
{
    if (count == 0) {
        for (int j = 0; j < J; ++j) a[j] = 0;
        return;
    }
    const double ridge = tk_tucker_als_ridge(lambda_a, count, per_entry);
    double y[TK_TUCKER_MAX_RANK], next[TK_TUCKER_MAX_RANK];
    /* not positive definite (lambda_a 0 and n < J): the row stays */
    if (!tk_tucker_cholesky_solve(M, ridge, rhs, J, U, y)) return;
    for (int j = 0; j < J; ++j) next[j] = a[j] + TK_TUCKER_ALS_OMEGA * (y[j] - a[j]);
    const double before = tk_tucker_als_row_loss(M, rhs, ridge, a, J),
                 after = tk_tucker_als_row_loss(M, rhs, ridge, next, J);
    if (!(after <= before)) return;
    for (int j = 0; j < J; ++j) a[j] = next[j];
}

#include "common/precision_float.h"
#include "tucker_cpu_body.h"
#include "common/precision_end.h"

#include "common/precision_double.h"
#include "tucker_cpu_body.h"
#include "common/precision_end.h"

static int thread_count(const tk_tucker_solver *s)
{
    if (s->opts.backend != TK_BACKEND_OMP) return 1;
#ifdef _OPENMP
    return s->opts.num_threads > 0 ? s->opts.num_threads : omp_get_max_threads();
#else
    return 1;
#endif
}

static size_t real_size(const tk_tucker_solver *s) { return s->opts.precision == TK_PRECISION_DOUBLE ? sizeof(double) : sizeof(float); }

tk_status tk_tucker_host_create(tk_tucker_solver *s, const tk_tucker_model *m)
{
    size_t rs = real_size(s), J = (size_t)s->rank_j, R = (size_t)s->rank_r, maxdim = 0;
    for (int n = 0; n < s->order; ++n) {
        size_t rows = s->dims[n];
        if (rows > maxdim) maxdim = rows;
        s->host.a[n] = malloc(rows * J * rs);
        s->host.b[n] = malloc(J * R * rs);
        s->host.c[n] = malloc(rows * R * rs);
        if (!s->host.a[n] || !s->host.b[n] || !s->host.c[n])
            return tk_set_error(TK_ERR_MEMORY, "cannot allocate the model of mode %d (%zu rows)", n + 1, rows);
        for (size_t k = 0; k < rows * J; ++k) {
            if (s->opts.precision == TK_PRECISION_DOUBLE)
                ((double *)s->host.a[n])[k] = m->a[n][k];
            else
                ((float *)s->host.a[n])[k] = m->a[n][k];
        }
        for (size_t k = 0; k < J * R; ++k) {
            if (s->opts.precision == TK_PRECISION_DOUBLE)
                ((double *)s->host.b[n])[k] = m->b[n][k];
            else
                ((float *)s->host.b[n])[k] = m->b[n][k];
        }
    }
    s->host.z = malloc(maxdim * R * rs);
    if (!s->host.z) return tk_set_error(TK_ERR_MEMORY, "cannot allocate the core gradient buffer");
    int threads = thread_count(s);
    for (int n = 0; n < s->order; ++n) {
        if (s->opts.precision == TK_PRECISION_DOUBLE)
            refresh_d(s, n, threads);
        else
            refresh_f(s, n, threads);
    }
    return TK_OK;
}

void tk_tucker_host_destroy(tk_tucker_solver *s)
{
    for (int n = 0; n < TK_TUCKER_MAX_ORDER; ++n) {
        free(s->host.a[n]);
        free(s->host.b[n]);
        free(s->host.c[n]);
    }
    free(s->host.z);
    memset(&s->host, 0, sizeof s->host);
}

/* One pass (factors or core) in its four copies: COO (sequential) or B-CSF, float or double. */
typedef struct host_pass {
    tk_status (*coo_f)(tk_tucker_solver *, int), (*coo_d)(tk_tucker_solver *, int);
    tk_status (*bcsf_f)(tk_tucker_solver *, int, int), (*bcsf_d)(tk_tucker_solver *, int, int);
} host_pass;

/* The pass over every mode in turn, in the solver's storage and precision. */
static tk_status every_mode(tk_tucker_solver *s, const host_pass *pass)
{
    int threads = thread_count(s), dbl = s->opts.precision == TK_PRECISION_DOUBLE, coo = s->opts.storage == TK_TUCKER_COO;
    for (int n = 0; n < s->order; ++n) {
        tk_status st = coo ? (dbl ? pass->coo_d(s, n) : pass->coo_f(s, n))
                           : (dbl ? pass->bcsf_d(s, n, threads) : pass->bcsf_f(s, n, threads));
        if (st != TK_OK) return st;
    }
    return TK_OK;
}

tk_status tk_tucker_host_factors(tk_tucker_solver *s)
{
    static const host_pass sgd = {factors_coo_f, factors_coo_d, factors_bcsf_f, factors_bcsf_d};
    static const host_pass als = {factors_coo_als_f, factors_coo_als_d, factors_bcsf_als_f, factors_bcsf_als_d};
    return every_mode(s, s->opts.factor_update == TK_TUCKER_FACTOR_SGD ? &sgd : &als);
}

tk_status tk_tucker_host_core(tk_tucker_solver *s)
{
    static const host_pass core = {core_coo_f, core_coo_d, core_bcsf_f, core_bcsf_d};
    return every_mode(s, &core);
}

void tk_tucker_host_model(const tk_tucker_solver *s, tk_tucker_model *out)
{
    size_t J = (size_t)s->rank_j, R = (size_t)s->rank_r;
    for (int n = 0; n < s->order; ++n) {
        size_t na = (size_t)s->dims[n] * J;
        for (size_t k = 0; k < na; ++k)
            out->a[n][k] = (s->opts.precision == TK_PRECISION_DOUBLE) ? (float)((double *)s->host.a[n])[k] : ((float *)s->host.a[n])[k];
        for (size_t k = 0; k < J * R; ++k)
            out->b[n][k] = (s->opts.precision == TK_PRECISION_DOUBLE) ? (float)((double *)s->host.b[n])[k] : ((float *)s->host.b[n])[k];
    }
}
