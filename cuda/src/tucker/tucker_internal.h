/* Internal interface of the FastTucker core: solver state and backends. */
#ifndef TK_TUCKER_INTERNAL_H
#define TK_TUCKER_INTERNAL_H

#include <math.h>

#include "common/timer.h"
#include "common/tk_hd.h"
#include "tk_bench_hooks.h"
#include "tk_tucker.h"

#ifdef __cplusplus
extern "C" {
#endif

/* splitmix64: seeds and per-entry hashes (reproducible, thread-count independent). */
static inline uint64_t tk_tucker_mix(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}
/* Uniform in [0, 1) from a hash. */
static inline double tk_tucker_unit(uint64_t h) { return (double)(h >> 11) * (1.0 / 9007199254740992.0); }

/* The modes other than n, in order: the index columns of mode n's fiber products. */
static inline void tk_tucker_other_modes(int order, int n, int *others)
{
    for (int k = 0, m = 0; m < order; ++m)
        if (m != n) others[k++] = m;
}

/* ALS factor pass: the relaxation of each row's exact solve, a += omega (solution - a).  Any
 * omega in (0, 2) lowers f on that row (f is quadratic in it).  1, the plain solve: 1.1-1.2
 * crossed ALS's flat stretches in fewer iterations on some planted models but drove others to
 * degenerate factors (held-out RMSE 0.66 and 2.95 where 1 reached the floor; benchmarks.md,
 * "Time to accuracy"). */
#define TK_TUCKER_ALS_OMEGA 1.0

/* ALS on CUDA: one row's slot of normal equations, J x J, J, and the row's entry count. */
TK_HD static inline size_t tk_tucker_eq_stride(int J) { return (size_t)J * (size_t)J + (size_t)J + 1; }

/* ALS: the ridge of a row of count entries.  Per entry (ALS-WR, Zhou et al. 2008, the
 * default): lambda_a x count, the ridge of the objective the SGD pass descends (its step
 * s (e v - lambda_a a) charges lambda_a |a|^2 once per entry), so a row of many entries is
 * shrunk as little, relative to its data, as one of few, and both factor updates fit one f.
 * Flat (TK_TUCKER_ALS_RIDGE=flat, the ridge before; kept for A/B on one build): lambda_a.
 * The host's als_solve and the GPU's als_solve_kernel both take it from here. */
TK_HD static inline double tk_tucker_als_ridge(double lambda_a, double count, int per_entry)
{
    return per_entry ? lambda_a * count : lambda_a;
}

/* ALS: a row's loss up to a constant, x^T (M + ridge I) x - 2 x . rhs, M's upper triangle
 * read (the row's normal equations); the host's als_solve (tucker_cpu.c) and the GPU's
 * als_solve_kernel compare it before and after a row's move (the safeguard). */
TK_HD static inline double tk_tucker_als_row_loss(const double *M, const double *rhs, double ridge, const double *x,
                                                  int J)
{
    double quad = 0, lin = 0;
    for (int k = 0; k < J; ++k) {
        const double *mk = M + (size_t)k * (size_t)J;
        double s = 0;
        for (int j = k + 1; j < J; ++j) s += mk[j] * x[j];
        quad += x[k] * ((mk[k] + ridge) * x[k] + 2 * s);
        lin += x[k] * rhs[k];
    }
    return quad - 2 * lin;
}

/* Solve (M + ridge I) y = rhs for the symmetric n x n M (upper triangle read, M kept) by
 * Cholesky U^T U (U: n x n scratch, its upper triangle written): the ALS row solves' and the
 * spectral start's core solves (tucker_cpu.c, tucker_spectral.c).  0 where M + ridge I is not
 * positive definite (y then unspecified). */
static inline int tk_tucker_cholesky_solve(const double *M, double ridge, const double *rhs, int n, double *U,
                                           double *y)
{
    for (int k = 0; k < n; ++k) {
        double d = M[(size_t)k * n + k] + ridge;
        for (int t = 0; t < k; ++t) d -= U[(size_t)t * n + k] * U[(size_t)t * n + k];
        if (!(d > 0)) return 0;
        d = sqrt(d);
        for (int j = k + 1; j < n; ++j) {
            double s = M[(size_t)k * n + j];
            for (int t = 0; t < k; ++t) s -= U[(size_t)t * n + k] * U[(size_t)t * n + j];
            U[(size_t)k * n + j] = s / d;
        }
        U[(size_t)k * n + k] = d;
    }
    for (int k = 0; k < n; ++k) {
        double s = rhs[k];
        for (int t = 0; t < k; ++t) s -= U[(size_t)t * n + k] * y[t];
        y[k] = s / U[(size_t)k * n + k];
    }
    for (int k = n - 1; k >= 0; --k) {
        double s = y[k];
        for (int j = k + 1; j < n; ++j) s -= U[(size_t)k * n + j] * y[j];
        y[k] = s / U[(size_t)k * n + k];
    }
    return 1;
}

/* Host state of the cpu/omp backends, one precision (float or double arrays). */
typedef struct tk_tucker_host {
    void *a[TK_TUCKER_MAX_ORDER], *b[TK_TUCKER_MAX_ORDER], *c[TK_TUCKER_MAX_ORDER];
    void *z;  /* max dims x R: per-row core gradient parts */
} tk_tucker_host;

struct tk_tucker_solver {
    tk_tucker_options opts;
    int order, rank_j, rank_r;
    uint32_t dims[TK_TUCKER_MAX_ORDER];
    size_t nnz;
    const tk_tucker_coo *coo;              /* COO storage: the caller's entries */
    tk_tucker_bcsf bcsf[TK_TUCKER_MAX_ORDER]; /* B-CSF storage: one per mode */
    tk_tucker_host host;
    int als_ridge_per_entry;                /* tk_tucker_als_ridge's weighting: 1 unless TK_TUCKER_ALS_RIDGE=flat */
    void *cuda;                             /* CUDA backend state */
    struct { double factor_ms, core_ms, setup_ms; } timing; /* tk_tucker_solver_timing */
    tk_tucker_setup_info setup;             /* where the set-up's time went (tk_bench_hooks.h) */
};

/* Every mode's B-CSF of t on the host (tk_tucker_bcsf_build), one mode a thread where
 * parallel; out[0 .. order-1].  On failure every out is freed. */
tk_status tk_tucker_bcsf_build_modes(const tk_tucker_coo *t, size_t fiber_threshold, int parallel, tk_tucker_bcsf *out);

/* TK_OK when tensor t fits model m: the same order, no mode larger than the model's. */
tk_status tk_tucker_check_shape(const tk_tucker_model *m, const tk_tucker_coo *t);

tk_status tk_tucker_host_create(tk_tucker_solver *s, const tk_tucker_model *m);
void tk_tucker_host_destroy(tk_tucker_solver *s);
tk_status tk_tucker_host_factors(tk_tucker_solver *s);
tk_status tk_tucker_host_core(tk_tucker_solver *s);
void tk_tucker_host_model(const tk_tucker_solver *s, tk_tucker_model *out);

/* train: the entries with the model's dims; the B-CSF is built from it on the GPU where the
 * set-up fits there, else on the host (s->setup says which and why). */
tk_status tk_tucker_cuda_create(tk_tucker_solver *s, const tk_tucker_model *m, const tk_tucker_coo *train);
void tk_tucker_cuda_destroy(tk_tucker_solver *s);
tk_status tk_tucker_cuda_factors(tk_tucker_solver *s, double *ms);
tk_status tk_tucker_cuda_core(tk_tucker_solver *s, double *ms);
tk_status tk_tucker_cuda_model(const tk_tucker_solver *s, tk_tucker_model *out);
tk_status tk_tucker_cuda_model_of_device(const tk_tucker_solver *s, int index, tk_tucker_model *out);

#ifdef __cplusplus
}
#endif
#endif
