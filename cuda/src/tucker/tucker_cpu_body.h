/* The cpu/omp kernels of FastTucker, compiled once per precision: TK_REAL is
 * float or double, TK_SFX(name) names the copy.  Included by tucker_cpu.c. */

/* q = prod over the other modes of their C rows, reusing the prefix products of
 * the previous entry from the first level whose index changed (the CSF fiber
 * reuse).  pre holds (order - 1) rows of R; returns the full product row. */
static const TK_REAL *TK_SFX(fiber_product)(TK_REAL *const *c, const int *others, int levels, int R,
                                            const uint32_t *ix, const uint32_t *prev, TK_REAL *pre)
{
    int d = 0;
    if (prev)
        while (d < levels && ix[d] == prev[d]) ++d;
    if (d == levels) return pre + (size_t)(levels - 1) * (size_t)R;
    for (int k = d; k < levels; ++k) {
        const TK_REAL *row = c[others[k]] + (size_t)ix[k] * (size_t)R;
        TK_REAL *dst = pre + (size_t)k * (size_t)R;
        if (k == 0)
            for (int r = 0; r < R; ++r) dst[r] = row[r];
        else
            for (int r = 0; r < R; ++r) dst[r] = dst[r - R] * row[r];
    }
    return pre + (size_t)(levels - 1) * (size_t)R;
}

/* v = B q: the shared intermediate of the factor gradient (seed eq. 10), from
 * Bt = B^T (R x J) so the inner loop runs over j and vectorizes; each v[j] still
 * sums r = 0..R-1 in order, as the GPU lanes do. */
static void TK_SFX(core_times)(const TK_REAL *Bt, const TK_REAL *q, int J, int R, TK_REAL *v)
{
    for (int j = 0; j < J; ++j) v[j] = 0;
    for (int r = 0; r < R; ++r) {
        const TK_REAL qr = q[r], *col = Bt + (size_t)r * (size_t)J;
        for (int j = 0; j < J; ++j) v[j] += col[j] * qr;
    }
}

static void TK_SFX(transpose)(const TK_REAL *B, int J, int R, TK_REAL *Bt)
{
    for (int j = 0; j < J; ++j)
        for (int r = 0; r < R; ++r) Bt[r * J + j] = B[j * R + r];
}

/* One SGD step of row a on entry value x (seed eqs. 9, 10).  The step is capped
 * at 1 / |v|^2, the step that fits this entry exactly: a larger one overshoots it
 * (and past 2 / |v|^2 diverges), which the seed's fixed rate allows once the
 * factors grow.  Below the cap this is the seed's update unchanged. */
static void TK_SFX(sgd_step)(TK_REAL *a, const TK_REAL *v, TK_REAL x, int J, TK_REAL lr, TK_REAL lambda)
{
    TK_REAL pred = 0, vv = 0;
    for (int j = 0; j < J; ++j) pred += a[j] * v[j], vv += v[j] * v[j];
    TK_REAL err = x - pred, step = lr * vv > 1 ? 1 / vv : lr;
    for (int j = 0; j < J; ++j) a[j] += step * (err * v[j] - lambda * a[j]);
}

/* C(n)[i] = A(n)[i] B(n) for rows [lo, hi). */
static void TK_SFX(refresh_rows)(tk_tucker_solver *s, int n, long lo, long hi)
{
    int J = s->rank_j, R = s->rank_r;
    const TK_REAL *A = (const TK_REAL *)s->host.a[n], *B = (const TK_REAL *)s->host.b[n];
    TK_REAL *C = (TK_REAL *)s->host.c[n];
    for (long i = lo; i < hi; ++i) {
        TK_REAL *c = C + (size_t)i * (size_t)R;
        const TK_REAL *a = A + (size_t)i * (size_t)J;
        for (int r = 0; r < R; ++r) c[r] = 0;
        for (int j = 0; j < J; ++j) {
            const TK_REAL aj = a[j], *brow = B + (size_t)j * (size_t)R;
            for (int r = 0; r < R; ++r) c[r] += aj * brow[r];
        }
    }
}

static void TK_SFX(refresh)(tk_tucker_solver *s, int n, int threads)
{
    long rows = (long)s->dims[n];
    (void)threads;
#pragma omp parallel for schedule(static) num_threads(threads)
    for (long b = 0; b < (rows + 255) / 256; ++b)
        TK_SFX(refresh_rows)(s, n, b * 256, (b + 1) * 256 < rows ? (b + 1) * 256 : rows);
}

/* Factor updates of mode n over its B-CSF.  Rows are independent: each thread
 * takes whole rows, so the result does not depend on the schedule. */
static tk_status TK_SFX(factors_bcsf)(tk_tucker_solver *s, int n, int threads)
{
    const tk_tucker_bcsf *b = &s->bcsf[n];
    int J = s->rank_j, R = s->rank_r, levels = s->order - 1;
    TK_REAL lr = (TK_REAL)s->opts.lr_a, lambda = (TK_REAL)s->opts.lambda_a;
    TK_REAL *A = (TK_REAL *)s->host.a[n];
    TK_REAL Bt[TK_TUCKER_MAX_RANK * TK_TUCKER_MAX_RANK];
    TK_SFX(transpose)((const TK_REAL *)s->host.b[n], J, R, Bt);
    TK_REAL *const *C = (TK_REAL *const *)s->host.c;
    long parts = (long)b->num_parts;
    (void)threads;
#pragma omp parallel num_threads(threads)
    {
        TK_REAL pre[(TK_TUCKER_MAX_ORDER - 1) * TK_TUCKER_MAX_RANK], v[TK_TUCKER_MAX_RANK];
        TK_REAL a0[TK_TUCKER_MAX_RANK], a[TK_TUCKER_MAX_RANK], acc[TK_TUCKER_MAX_RANK];
#pragma omp for schedule(dynamic, 64)
        for (long p = 0; p < parts; ++p) {
            if (p > 0 && b->part_row[p] == b->part_row[p - 1]) continue; /* not the row's first part */
            uint32_t i = b->part_row[p], S = b->part_count[p];
            TK_REAL *row = A + (size_t)i * (size_t)J;
            for (int j = 0; j < J; ++j) a0[j] = row[j], acc[j] = 0;
            for (uint32_t k = 0; k < S; ++k) {
                for (int j = 0; j < J; ++j) a[j] = a0[j];
                const uint32_t *prev = NULL;
                for (size_t e = b->part_ptr[p + k]; e < b->part_ptr[p + k + 1]; ++e) {
                    const uint32_t *ix = b->idx + e * (size_t)levels;
                    const TK_REAL *q = TK_SFX(fiber_product)(C, b->others, levels, R, ix, prev, pre);
                    prev = ix;
                    TK_SFX(core_times)(Bt, q, J, R, v);
                    TK_SFX(sgd_step)(a, v, (TK_REAL)b->val[e], J, lr, lambda);
                }
                for (int j = 0; j < J; ++j) acc[j] += a[j] - a0[j];
            }
            /* One sub-slice: plain sequential SGD, kept exact (a0 + (a - a0) may round). */
            if (S == 1)
                for (int j = 0; j < J; ++j) row[j] = a[j];
            else
                for (int j = 0; j < J; ++j) row[j] = a0[j] + acc[j] / (TK_REAL)S;
            TK_SFX(refresh_rows)(s, n, (long)i, (long)i + 1);
        }
    }
    return TK_OK;
}

/* ALS: the row's normal equations gain entry v, x (in double: tucker_cpu.c's als_add). */
static void TK_SFX(normal_add)(double *M, double *rhs, const TK_REAL *v, TK_REAL x, int J)
{
    double vd[TK_TUCKER_MAX_RANK];
    for (int j = 0; j < J; ++j) vd[j] = (double)v[j];
    als_add(M, rhs, vd, (double)x, J);
}

/* ALS: row a moves by tucker_cpu.c's als_solve (count entries gave M, rhs). */
static void TK_SFX(normal_solve)(const tk_tucker_solver *s, const double *M, const double *rhs, double count, int J,
                                 double *U, TK_REAL *a)
{
    double ad[TK_TUCKER_MAX_RANK];
    for (int j = 0; j < J; ++j) ad[j] = (double)a[j];
    als_solve(M, rhs, count, J, s->opts.lambda_a, s->als_ridge_per_entry, U, ad);
    for (int j = 0; j < J; ++j) a[j] = (TK_REAL)ad[j];
}

/* ALS: rows [lo, hi) of mode n have no entries; their minimiser of f is 0 (A and C rows). */
static void TK_SFX(zero_rows)(tk_tucker_solver *s, int n, uint32_t lo, uint32_t hi)
{
    if (hi <= lo) return;
    const size_t J = (size_t)s->rank_j, R = (size_t)s->rank_r, rows = (size_t)(hi - lo);
    memset((TK_REAL *)s->host.a[n] + (size_t)lo * J, 0, rows * J * sizeof(TK_REAL));
    memset((TK_REAL *)s->host.c[n] + (size_t)lo * R, 0, rows * R * sizeof(TK_REAL));
}

/* Exact row solves of mode n over its B-CSF: every entry of a row, all its sub-slices, adds
 * to that row's normal equations, so the answer does not depend on the split. */
static tk_status TK_SFX(factors_bcsf_als)(tk_tucker_solver *s, int n, int threads)
{
    const tk_tucker_bcsf *b = &s->bcsf[n];
    int J = s->rank_j, R = s->rank_r, levels = s->order - 1;
    TK_REAL *A = (TK_REAL *)s->host.a[n];
    TK_REAL Bt[TK_TUCKER_MAX_RANK * TK_TUCKER_MAX_RANK];
    TK_SFX(transpose)((const TK_REAL *)s->host.b[n], J, R, Bt);
    TK_REAL *const *C = (TK_REAL *const *)s->host.c;
    long parts = (long)b->num_parts;
    (void)threads;
#pragma omp parallel num_threads(threads)
    {
        TK_REAL pre[(TK_TUCKER_MAX_ORDER - 1) * TK_TUCKER_MAX_RANK], v[TK_TUCKER_MAX_RANK];
        double M[TK_TUCKER_MAX_RANK * TK_TUCKER_MAX_RANK], U[TK_TUCKER_MAX_RANK * TK_TUCKER_MAX_RANK];
        double rhs[TK_TUCKER_MAX_RANK];
#pragma omp for schedule(dynamic, 64)
        for (long p = 0; p < parts; ++p) {
            if (p > 0 && b->part_row[p] == b->part_row[p - 1]) continue; /* not the row's first part */
            uint32_t i = b->part_row[p], S = b->part_count[p];
            memset(M, 0, (size_t)J * (size_t)J * sizeof(double));
            memset(rhs, 0, (size_t)J * sizeof(double));
            for (uint32_t k = 0; k < S; ++k) {
                const uint32_t *prev = NULL;
                for (size_t e = b->part_ptr[p + k]; e < b->part_ptr[p + k + 1]; ++e) {
                    const uint32_t *ix = b->idx + e * (size_t)levels;
                    const TK_REAL *q = TK_SFX(fiber_product)(C, b->others, levels, R, ix, prev, pre);
                    prev = ix;
                    TK_SFX(core_times)(Bt, q, J, R, v);
                    TK_SFX(normal_add)(M, rhs, v, (TK_REAL)b->val[e], J);
                }
            }
            const double count = (double)(b->part_ptr[p + S] - b->part_ptr[p]);
            TK_SFX(normal_solve)(s, M, rhs, count, J, U, A + (size_t)i * (size_t)J);
            TK_SFX(refresh_rows)(s, n, (long)i, (long)i + 1);
        }
    }
    /* Rows without entries have no sub-slice: the gaps between the (ascending) slice rows. */
    uint32_t next = 0;
    for (long p = 0; p < parts; ++p) {
        if (p > 0 && b->part_row[p] == b->part_row[p - 1]) continue;
        TK_SFX(zero_rows)(s, n, next, b->part_row[p]);
        next = b->part_row[p] + 1;
    }
    TK_SFX(zero_rows)(s, n, next, b->rows);
    return TK_OK;
}

/* COO storage: q of entry e for mode n, the product of the other modes' C rows (no fiber
 * reuse: entries come in file order); *full gets the entry's indices. */
static const TK_REAL *TK_SFX(coo_product)(const tk_tucker_solver *s, const int *others, size_t e,
                                          const uint32_t **full, TK_REAL *pre)
{
    const int N = s->order, levels = N - 1;
    uint32_t ix[TK_TUCKER_MAX_ORDER];
    *full = s->coo->idx + e * (size_t)N;
    for (int k = 0; k < levels; ++k) ix[k] = (*full)[others[k]];
    return TK_SFX(fiber_product)((TK_REAL *const *)s->host.c, others, levels, s->rank_r, ix, NULL, pre);
}

/* Factor updates of mode n entry by entry in COO order (sequential reference). */
static tk_status TK_SFX(factors_coo)(tk_tucker_solver *s, int n)
{
    int J = s->rank_j, R = s->rank_r, others[TK_TUCKER_MAX_ORDER];
    tk_tucker_other_modes(s->order, n, others);
    TK_REAL lr = (TK_REAL)s->opts.lr_a, lambda = (TK_REAL)s->opts.lambda_a;
    TK_REAL *A = (TK_REAL *)s->host.a[n];
    TK_REAL Bt[TK_TUCKER_MAX_RANK * TK_TUCKER_MAX_RANK];
    TK_SFX(transpose)((const TK_REAL *)s->host.b[n], J, R, Bt);
    TK_REAL pre[(TK_TUCKER_MAX_ORDER - 1) * TK_TUCKER_MAX_RANK], v[TK_TUCKER_MAX_RANK];
    for (size_t e = 0; e < s->coo->nnz; ++e) {
        const uint32_t *full;
        const TK_REAL *q = TK_SFX(coo_product)(s, others, e, &full, pre);
        TK_SFX(core_times)(Bt, q, J, R, v);
        TK_SFX(sgd_step)(A + (size_t)full[n] * (size_t)J, v, (TK_REAL)s->coo->val[e], J, lr, lambda);
    }
    TK_SFX(refresh)(s, n, 1);
    return TK_OK;
}

/* Exact row solves entry by entry in COO order: every row's normal equations gathered in
 * one buffer (dims[n] rows of J x J + J doubles and the entry count), then solved
 * (sequential reference). */
static tk_status TK_SFX(factors_coo_als)(tk_tucker_solver *s, int n)
{
    int J = s->rank_j, R = s->rank_r, others[TK_TUCKER_MAX_ORDER];
    tk_tucker_other_modes(s->order, n, others);
    const size_t rows = s->dims[n], stride = tk_tucker_eq_stride(J);
    double *eq = calloc(rows ? rows * stride : 1, sizeof(double));
    if (!eq)
        return tk_set_error(TK_ERR_MEMORY, "cannot allocate the normal equations of mode %d (%zu rows)", n + 1, rows);
    TK_REAL Bt[TK_TUCKER_MAX_RANK * TK_TUCKER_MAX_RANK];
    TK_SFX(transpose)((const TK_REAL *)s->host.b[n], J, R, Bt);
    TK_REAL pre[(TK_TUCKER_MAX_ORDER - 1) * TK_TUCKER_MAX_RANK], v[TK_TUCKER_MAX_RANK];
    for (size_t e = 0; e < s->coo->nnz; ++e) {
        const uint32_t *full;
        const TK_REAL *q = TK_SFX(coo_product)(s, others, e, &full, pre);
        TK_SFX(core_times)(Bt, q, J, R, v);
        double *row = eq + (size_t)full[n] * stride;
        TK_SFX(normal_add)(row, row + (size_t)J * (size_t)J, v, (TK_REAL)s->coo->val[e], J);
        row[(size_t)J * (size_t)J + (size_t)J] += 1;
    }
    TK_REAL *A = (TK_REAL *)s->host.a[n];
    double U[TK_TUCKER_MAX_RANK * TK_TUCKER_MAX_RANK];
    for (size_t i = 0; i < rows; ++i) {
        const double *row = eq + i * stride;
        TK_SFX(normal_solve)(s, row, row + (size_t)J * (size_t)J, row[(size_t)J * (size_t)J + (size_t)J], J, U,
                             A + i * (size_t)J);
    }
    free(eq);
    TK_SFX(refresh)(s, n, 1);
    return TK_OK;
}

/* B(n) += lr_b (G / nnz - lambda_b B(n)), then C(n) refreshed (seed Algorithm 5). */
static void TK_SFX(apply_core)(tk_tucker_solver *s, int n, const double *G, int threads)
{
    int J = s->rank_j, R = s->rank_r;
    TK_REAL *B = (TK_REAL *)s->host.b[n];
    double scale = s->nnz ? 1.0 / (double)s->nnz : 0, lr = s->opts.lr_b, lambda = s->opts.lambda_b;
    for (int k = 0; k < J * R; ++k) B[k] += (TK_REAL)(lr * (G[k] * scale - lambda * (double)B[k]));
    TK_SFX(refresh)(s, n, threads);
}

/* Core gradient of mode n over its B-CSF: z_i = sum over row i of e q (one
 * prediction per entry from the slice's C(n) row), then G = A(n)^T Z. */
static tk_status TK_SFX(core_bcsf)(tk_tucker_solver *s, int n, int threads)
{
    const tk_tucker_bcsf *b = &s->bcsf[n];
    int J = s->rank_j, R = s->rank_r, levels = s->order - 1;
    const TK_REAL *A = (const TK_REAL *)s->host.a[n];
    TK_REAL *const *C = (TK_REAL *const *)s->host.c;
    TK_REAL *Z = (TK_REAL *)s->host.z;
    long parts = (long)b->num_parts, rows = (long)b->rows;
    memset(Z, 0, (size_t)rows * (size_t)R * sizeof(TK_REAL));
    (void)threads;
#pragma omp parallel num_threads(threads)
    {
        TK_REAL pre[(TK_TUCKER_MAX_ORDER - 1) * TK_TUCKER_MAX_RANK];
#pragma omp for schedule(dynamic, 64)
        for (long p = 0; p < parts; ++p) {
            if (p > 0 && b->part_row[p] == b->part_row[p - 1]) continue;
            uint32_t i = b->part_row[p], S = b->part_count[p];
            const TK_REAL *c = C[n] + (size_t)i * (size_t)R;
            TK_REAL *z = Z + (size_t)i * (size_t)R;
            const uint32_t *prev = NULL;
            for (size_t e = b->part_ptr[p]; e < b->part_ptr[p + S]; ++e) {
                const uint32_t *ix = b->idx + e * (size_t)levels;
                const TK_REAL *q = TK_SFX(fiber_product)(C, b->others, levels, R, ix, prev, pre);
                prev = ix;
                TK_REAL pred = 0;
                for (int r = 0; r < R; ++r) pred += c[r] * q[r];
                TK_REAL err = (TK_REAL)b->val[e] - pred;
                for (int r = 0; r < R; ++r) z[r] += err * q[r];
            }
        }
    }
    double G[TK_TUCKER_MAX_RANK * TK_TUCKER_MAX_RANK];
#pragma omp parallel for schedule(static) num_threads(threads)
    for (int j = 0; j < J; ++j) {
        double g[TK_TUCKER_MAX_RANK] = {0};
        for (long i = 0; i < rows; ++i) {
            double aij = (double)A[(size_t)i * (size_t)J + (size_t)j];
            if (aij == 0) continue;
            const TK_REAL *z = Z + (size_t)i * (size_t)R;
            for (int r = 0; r < R; ++r) g[r] += aij * (double)z[r];
        }
        for (int r = 0; r < R; ++r) G[j * R + r] = g[r];
    }
    TK_SFX(apply_core)(s, n, G, threads);
    return TK_OK;
}

/* Core gradient entry by entry in COO order: G += e a q^T (sequential reference). */
static tk_status TK_SFX(core_coo)(tk_tucker_solver *s, int n)
{
    const tk_tucker_coo *t = s->coo;
    int J = s->rank_j, R = s->rank_r, others[TK_TUCKER_MAX_ORDER];
    tk_tucker_other_modes(s->order, n, others);
    const TK_REAL *A = (const TK_REAL *)s->host.a[n];
    TK_REAL *const *C = (TK_REAL *const *)s->host.c;
    TK_REAL pre[(TK_TUCKER_MAX_ORDER - 1) * TK_TUCKER_MAX_RANK];
    double G[TK_TUCKER_MAX_RANK * TK_TUCKER_MAX_RANK] = {0};
    for (size_t e = 0; e < t->nnz; ++e) {
        const uint32_t *full;
        const TK_REAL *q = TK_SFX(coo_product)(s, others, e, &full, pre);
        const TK_REAL *c = C[n] + (size_t)full[n] * (size_t)R, *a = A + (size_t)full[n] * (size_t)J;
        TK_REAL pred = 0;
        for (int r = 0; r < R; ++r) pred += c[r] * q[r];
        double err = (double)((TK_REAL)t->val[e] - pred);
        for (int j = 0; j < J; ++j)
            for (int r = 0; r < R; ++r) G[j * R + r] += err * (double)a[j] * (double)q[r];
    }
    TK_SFX(apply_core)(s, n, G, 1);
    return TK_OK;
}
