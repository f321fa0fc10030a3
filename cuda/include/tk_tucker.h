/** TensorKernels: sparse FastTucker decomposition by ALS or SGD (one public header).
 *
 * Model (FastTucker, Li et al., cuFasterTucker).  An order-N tensor X (N = 3..10)
 * with observed entries Omega is approximated by factor matrices A(n) (I_n x J)
 * and core matrices B(n) (J x R):
 *
 *     x^(i_1..i_N) = sum_r prod_n  a(n)_{i_n} . b(n)_{:,r}
 *
 * i.e. the Tucker core is the rank-R Kruskal tensor of the B(n).  The reusable
 * intermediates C(n) = A(n) B(n) (I_n x R) are stored, so one prediction is
 * sum_r prod_n C(n)[i_n][r].  Objective (the seed's eq. 6):
 *
 *     f = sum_Omega (x - x^)^2 + lambda_a sum_n |A(n)|^2 + lambda_b sum_n |B(n)|^2
 *
 * One iteration = factor updates (for n = 1..N; v = B(n) q, q_r = prod_{k != n}
 * C(k)[i_k][r] for each entry), then core updates.  Factor updates, ALS (the default,
 * factor_update): each row a(n)_{i} of n_i entries moves to the exact minimiser over that row
 * of f with the ridge per entry (ALS-WR: lambda_a n_i |a|^2 in place of lambda_a |a|^2, the
 * regularization the SGD steps below apply, once per entry),
 * (sum v v^T + lambda_a n_i I) a = sum x v over the row's entries (Cholesky; alternating least
 * squares), summed and solved in double on every backend; a row without entries goes to 0
 * (its minimiser), and a row keeps its value where the solve fails or would raise its loss;
 * the solver first balances the core (tk_tucker_model_balance_core).  SGD (the seed's): each
 * entry moves its row
 * by  s (e v - lambda_a a),  e = x - a . v: eqs. 10 and 9, with step s = lr_a,
 * capped at 1/|v|^2 where lr_a would overshoot the entry.  Then
 * core updates (for n = 1..N: B(n) += lr_b (G / |Omega| - lambda_b B(n)) with
 * G = sum_Omega e a(n)_{i_n} q^T: the seed's eq. 11 with the gradient accumulated
 * over all entries, as its Algorithm 5 does).  C(n) is refreshed after each mode.
 *
 * Storage.  COO: entries in the given order, each handled alone (the reference
 * and the seed's "COO variant").  B-CSF: for each mode n the entries sorted by
 * (i_n, the other indices in mode order), grouped into slices of one i_n, slices
 * split into sub-slices of at most fiber_threshold entries.  Runs of entries that
 * share leading indices (CSF fibers) share the product of their C rows, a slice
 * shares a(n)_{i_n} and C(n)[i_n], and the core gradient is accumulated per
 * slice (z = sum e q, then G += a z^T) instead of per entry.
 *
 * Parallel semantics (every backend, so they agree): an ALS row sums the
 * equations of all its sub-slices, so its solve does not depend on the split.
 * In an SGD factor update each
 * sub-slice runs sequential SGD on its own copy of a(n)_{i_n}, starting from the
 * row's value at the start of the mode; a row split into S sub-slices takes the
 * mean of their S changes.  A row with one sub-slice therefore gets plain
 * sequential SGD over its entries, exactly as COO gives it when the COO entries
 * are sorted (tk_tucker_coo_sort).  Rows never race, so cpu and omp give
 * bit-identical models for any thread count; cuda differs only by float rounding
 * (atomic sums of sub-slice changes and of the core gradient).
 *
 * Several GPUs (cuda_device_count > 1, NCCL; one process drives them all): each
 * device holds the whole model (A, B, C of every mode) and, for each mode n, a
 * contiguous range of mode n's sub-slices cut at row boundaries with about equal
 * entries (tk_tucker_bcsf_row_split), so it owns those rows of A(n).  Factor pass of
 * mode n: every device updates its rows, then each broadcasts its rows of A(n) and
 * the others recompute their C(n) rows.  Core pass of mode n: every device sums its
 * entries' part of the J x R gradient, NCCL reduces the parts on the first device,
 * which updates B(n) and broadcasts it, and every device refreshes C(n).  All
 * devices thus hold the same model bit for bit, and the algorithm is the one above:
 * the result differs from one GPU's only where one GPU's float atomics already make
 * it depend on timing (the split rows' mean change and the gradient's summation
 * order), i.e. by float rounding compounded over the iterations.
 * \file
 * \ingroup tk_group_tucker */
#ifndef TK_TUCKER_H
#define TK_TUCKER_H

#include "tk_export.h"

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "tk_status.h"
#include "tk_types.h"

TK_API_BEGIN

#define TK_TUCKER_MAX_ORDER 10
#define TK_TUCKER_MIN_RANK 4
#define TK_TUCKER_MAX_RANK 64
#define TK_TUCKER_DEFAULT_RANK 32
#define TK_TUCKER_DEFAULT_FIBER_THRESHOLD 128
/** The default lambda_a of the ALS factor update: the ridge of a row of n entries is
 * lambda_a n (ALS-WR), tk_tucker_options_init. */
#define TK_TUCKER_DEFAULT_ALS_LAMBDA 3e-4
/** Iterations `tk-tucker train` and tensorkernels.tucker.train run by default, with either
 * factor update: the user guide's example reaches its noise floor by ALS in 26 (benchmarks.md). */
#define TK_TUCKER_DEFAULT_ITERATIONS 40
#define TK_TUCKER_MAX_DEVICES 16 /**< GPUs one solver drives at most */

/* ---- sparse tensors (COO) ----------------------------------------------------- */

typedef struct tk_tucker_coo {
    int order;
    uint32_t dims[TK_TUCKER_MAX_ORDER];
    size_t nnz;
    uint32_t *idx; /**< nnz * order, 0-based, entry-major */
    float *val;    /**< nnz */
} tk_tucker_coo;

tk_status tk_tucker_coo_alloc(tk_tucker_coo *t, int order, const uint32_t *dims, size_t nnz);
void tk_tucker_coo_free(tk_tucker_coo *t);
/** Indices inside dims and finite values; name is used in the message. */
tk_status tk_tucker_coo_check(const tk_tucker_coo *t, const char *name);
/** A 64-bit fingerprint (FNV-1a) of the entries: their order, dims, count, indices and values,
 * bytes in order.  What a training checkpoint records of the data it was trained on
 * ("train_entries"), so that a resumed run, by tk-tucker or by the Python package, proves it
 * continues on the same entries whatever file (or none) they came from. */
uint64_t tk_tucker_coo_fingerprint(const tk_tucker_coo *t);
/** Sort entries lexicographically by (i_1, ..., i_N) (stable radix sort). */
tk_status tk_tucker_coo_sort(tk_tucker_coo *t);
/** Split into train and test: each entry goes to test with probability
 * test_fraction, decided by a hash of (seed, entry position), so the split is
 * reproducible.  Either output may get no entries. */
tk_status tk_tucker_coo_split(const tk_tucker_coo *all, double test_fraction, uint64_t seed, tk_tucker_coo *train,
                              tk_tucker_coo *test);

/* ---- FROSTT .tns text files ---------------------------------------------------- */

/** Read "i_1 ... i_N value" lines (1-based indices, '#' comments, blank lines).
 * order 0: taken from the first entry line.  dims: the largest index per mode,
 * or larger if dims_hint (may be NULL) says so.  Errors name the file and line
 * (non-numeric field, index < 1, wrong column count, non-finite value). */
tk_status tk_tns_read(const char *path, int order, const uint32_t *dims_hint, tk_tucker_coo *out);
/** Like tk_tns_read, but first tries a binary cache "PATH.tkc" beside the file,
 * used only when it records the text's size and modification time; a missing
 * or stale cache is rewritten (atomically; a cache that cannot be written is
 * not an error).  *from_cache (may be NULL) tells which happened. */
tk_status tk_tns_read_cached(const char *path, int order, tk_tucker_coo *out, int *from_cache);
/** Query files: like tk_tns_read with the order given, but lines may hold the N
 * indices alone (values read as 0) or indices and a value. */
tk_status tk_tns_read_queries(const char *path, int order, tk_tucker_coo *out);
/** Write atomically (temporary, then rename); values with 9 significant digits. */
tk_status tk_tns_write(const char *path, const tk_tucker_coo *t);
/** The same text to an open stream (an output set's temporary), every write checked; name
 * is for messages.  The caller closes f. */
tk_status tk_tns_write_file(FILE *f, const char *name, const tk_tucker_coo *t);

/* ---- models --------------------------------------------------------------------- */

typedef struct tk_tucker_model {
    int order, rank_j, rank_r;
    uint32_t dims[TK_TUCKER_MAX_ORDER];
    float *a[TK_TUCKER_MAX_ORDER]; /**< dims[n] x rank_j, row-major */
    float *b[TK_TUCKER_MAX_ORDER]; /**< rank_j x rank_r, row-major */
} tk_tucker_model;

tk_status tk_tucker_model_alloc(tk_tucker_model *m, int order, const uint32_t *dims, int rank_j, int rank_r);
void tk_tucker_model_free(tk_tucker_model *m);
tk_status tk_tucker_model_copy(tk_tucker_model *dst, const tk_tucker_model *src);
/** Random start.  target_mean > 0 (rating-like data; pass the mean training
 * value): entries uniform in [0, s) with s set so the mean prediction is about
 * target_mean.  Otherwise entries uniform in [-s, s) with predictions of RMS
 * about 0.5. */
tk_status tk_tucker_model_init(tk_tucker_model *m, uint64_t seed, double target_mean);
/** The same model (to float rounding) with every core balanced: B(n) = sigma Q, Q's min(J, R)
 * rows (J <= R) or columns (J > R) orthonormal and sigma keeping B(n)'s Frobenius norm; A(n)
 * takes the rest, so A(n) B(n) stays.  The ALS solver starts from this form (it keeps the core
 * fixed, and its ridge lambda_a |a|^2 then weighs every direction of a row's A(n) B(n) alike,
 * where a random core's small singular values make the ridge pull hardest on the directions
 * the fit needs).  A core already balanced (to 1e-5 of sigma^2) or of lower rank than
 * min(J, R) is left bit for bit, so a resumed ALS run continues the same model. */
void tk_tucker_model_balance_core(tk_tucker_model *m);
/** The model's value at one 0-based index tuple (double accumulation). */
double tk_tucker_model_value(const tk_tucker_model *m, const uint32_t *index);
/** Values at every entry of t (indices only are used); out has t->nnz floats. */
tk_status tk_tucker_predict(const tk_tucker_model *m, const tk_tucker_coo *t, float *out);

/** Values at every cell of the model's full grid, written with the FIRST index
 * fastest (ITK's and Fortran's order): out has prod(dims) floats. */
tk_status tk_tucker_predict_dense(const tk_tucker_model *m, float *out);

typedef struct tk_tucker_metrics {
    double sse;   /**< sum of squared errors */
    double rmse;
    double mae;
    double loss;  /**< sse + lambda terms (the seed's eq. 6) */
    size_t count;
} tk_tucker_metrics;

/** Errors of m on t in double; deterministic for any thread count. */
tk_status tk_tucker_evaluate(const tk_tucker_model *m, const tk_tucker_coo *t, double lambda_a, double lambda_b,
                             tk_tucker_metrics *out);
/** Full gradient of f (above) in double: grad_a[n] has dims[n]*J values,
 * grad_b[n] J*R (caller-allocated). */
tk_status tk_tucker_gradient(const tk_tucker_model *m, const tk_tucker_coo *t, double lambda_a, double lambda_b,
                             double *const *grad_a, double *const *grad_b);

/** Options of the spectral start (tk_tucker_spectral_start). */
typedef struct tk_tucker_spectral_options {
    int subspace_iterations; /**< steps of subspace iteration per mode (default 40) */
    int core_sweeps;         /**< sweeps of the cores' alternating least squares (default 20) */
    uint64_t seed;           /**< the iteration's random basis and the cores' random start (default 0) */
    int num_threads;         /**< OpenMP threads; 0: OpenMP's default.  The model does not depend on it */
} tk_tucker_spectral_options;

/** Defaults: 40 subspace iterations, 20 core sweeps, seed 0, OpenMP's threads. */
void tk_tucker_spectral_options_init(tk_tucker_spectral_options *o);
/** A spectral start for m (allocated by tk_tucker_model_alloc with the data's order, dims at
 * least train's and the ranks; its values are overwritten), on the host in double, then
 * stored as float; any backend trains from it.  For each mode n, the eigenvectors of the J
 * eigenvalues of largest magnitude of X(n) X(n)^T with its diagonal removed (Montanari and
 * Sun's unfolding estimator: the diagonal holds each entry's own square, noise that points
 * the vectors at the busiest rows; duplicate entries are summed first), found by subspace
 * iteration that never forms the Gram (each step O(nnz J)), then ordered by descending
 * eigenvalue (the Ritz step); A(n) = those vectors x sqrt(I_n)
 * (entries of unit mean square; a mode smaller than J keeps its other columns 0).  Then the
 * cores B(n) by alternating exact least squares over the entries with the A(n) fixed: from a
 * random start scaled to the data's RMS, each B(n) the J R-unknown normal equations' solution
 * with a ridge of 1e-6 of their mean diagonal.  On a planted tensor where ALS from the random
 * start (tk_tucker_model_init) learns nothing it carries the signal into ALS
 * (Documentation/benchmarks.md, "A spectral start"); elsewhere it can be slower than the
 * random start (the tools' default start picks between them: tk_tucker_prefers_spectral).  The same model for any thread count.  Errors:
 * TK_ERR_ARGUMENT (m not allocated or of another shape, no entries, negative options),
 * TK_ERR_MEMORY (O(nnz) index and value arrays per mode, (J R)^2 doubles); m's values are
 * then unspecified.  Workspace is allocated and freed inside. */
tk_status tk_tucker_spectral_start(const tk_tucker_coo *train, const tk_tucker_spectral_options *o,
                                   tk_tucker_model *m);

/** Options of a deflation round (tk_tucker_spectral_deflate). */
typedef struct tk_tucker_deflate_options {
    double keep_fraction;    /**< a mode keeps its model's directions above this fraction of the largest (default 0.03) */
    int subspace_iterations; /**< steps of subspace iteration on each residual Gram (default 40) */
    int core_sweeps;         /**< sweeps of the cores' alternating least squares (default 20) */
    uint64_t seed;           /**< the iteration's random basis and the cores' random start (default 0) */
    int num_threads;         /**< OpenMP threads; 0: OpenMP's default.  The model does not depend on it */
} tk_tucker_deflate_options;

/** Defaults: keep_fraction 0.03, 40 subspace iterations, 20 core sweeps, seed 0, OpenMP's threads. */
void tk_tucker_deflate_options_init(tk_tucker_deflate_options *o);
/** One deflation round on a trained model m (typically ALS's from tk_tucker_spectral_start),
 * on the host in double, then stored as float: the weak directions ALS could not find, taken
 * from what the model leaves unexplained (Documentation/benchmarks.md, "Deflation").  For each
 * mode n: C(n) = A(n) B(n), each column r weighted by the product over the other modes of
 * their C(k) column r's norm; its SVD; the mode keeps the left singular vectors of the
 * singular values above keep_fraction x the largest, at least 1 and at most J - 1 (ALS leaves
 * the directions it could not fit at about 0; a mode whose C(n) is 0 keeps none), and the rest
 * of its J columns are the top eigenvectors of the residual's off-diagonal Gram: the residual
 * r = x - m's prediction at the training entries (double) in place of the data, the start's
 * subspace iteration and Ritz step (eigenvalues of largest magnitude, duplicates summed).
 * A(n) = the orthonormalized [kept vectors, the residual's] (the first columns span the kept
 * directions) x sqrt(I_n); a mode smaller than J keeps its other columns 0, and one whose size
 * is at most the kept count takes none from the residual.  Then the cores are fitted again from
 * a random start as tk_tucker_spectral_start fits them.  kept (may be NULL; m->order ints) gets
 * each mode's count of kept directions.  J = 1 (a model not from tk_tucker_model_alloc, whose
 * ranks are at least 4): nothing to keep beside the residual's column, so m is left as it is
 * and kept[n] = 1.  A zero model keeps nothing: the round is then the spectral start (to
 * round-off).  Train m again afterwards (ALS); the round is the prototype's deflated_factors
 * and fit_cores (scripts/tucker_spectral_start.py).  The same model for any thread count.
 * Errors: TK_ERR_ARGUMENT (m not allocated or of another shape than train, no entries,
 * keep_fraction outside [0, 1), negative options), TK_ERR_MEMORY (nnz doubles of residuals,
 * an unfolding of O(nnz) per mode, (J R)^2 doubles); m's values are then unspecified.
 * Workspace is allocated and freed inside. */
tk_status tk_tucker_spectral_deflate(const tk_tucker_coo *train, const tk_tucker_deflate_options *o,
                                     tk_tucker_model *m, int *kept);

/** Where the default start ("auto": tk-tucker train and tk-bench tucker --to-accuracy without
 * --init, Python's tucker.train(init="auto"), all with the row solves) is the spectral start with
 * one deflation round rather than the random start: where the best-sampled unfolding has fewer
 * than TK_TUCKER_SPECTRAL_BELOW_COLUMN_ENTRIES entries a column, or the largest mode fewer than
 * TK_TUCKER_SPECTRAL_BELOW_ROW_ENTRIES_PER_RANK x J a row (a row solve has J unknowns).  A rule
 * of thumb measured on planted tensors (Documentation/benchmarks.md, "The default start"), not a
 * theorem: where a random start failed it often ended above predicting 0, where the spectral
 * start with a round missed the target it missed by little, so the lines sit where the random
 * start was seen to fail. */
#define TK_TUCKER_SPECTRAL_BELOW_COLUMN_ENTRIES 8.0
#define TK_TUCKER_SPECTRAL_BELOW_ROW_ENTRIES_PER_RANK 32.0

/** How densely a sparse tensor samples what the models fit (tk_tucker_sampling_of). */
typedef struct tk_tucker_sampling {
    double column_entries; /**< entries a column of the best-sampled unfolding: the largest over
                                the modes n of nnz / (the product of the other modes' sizes) */
    int column_mode;       /**< that n (0-based; the first of equals) */
    double row_entries;    /**< entries a row of the largest mode: nnz / its size */
    int row_mode;          /**< that mode (0-based; the first of equals) */
} tk_tucker_sampling;

/** t's sampling, duplicates counted; all 0 for NULL or a tensor of no entries. */
void tk_tucker_sampling_of(const tk_tucker_coo *t, tk_tucker_sampling *s);
/** 1 where the default start for training t at factor rank rank_j is the spectral start with
 * one deflation round (the lines above), 0 where it is the random start (tk_tucker_model_init),
 * and for NULL or a tensor of no entries. */
int tk_tucker_prefers_spectral(const tk_tucker_coo *t, int rank_j);

/* ---- model directories ------------------------------------------------------------ */

/** A model directory holds A1.npy..AN.npy (float32, I_n x J), B1.npy..BN.npy
 * (float32, J x R) and manifest.txt ("key = value" lines: format, order, dims,
 * rank_j, rank_r, then the caller's extra lines).  Saving builds a sibling
 * directory and swaps it in with one atomic rename, so a reader (or a run killed
 * at any instant) sees either the old model or the new one, never a mix.  An
 * existing directory is replaced only if it holds a manifest.txt. */
tk_status tk_tucker_model_save(const char *dir, const tk_tucker_model *m, const char *extra_manifest);
/** The same in two steps, for a tool whose outputs are committed together (tk_output_set.h,
 * not installed): register dir (a model of order) as an output of set before the work
 * (checks: a new, empty or model folder; no input; its temporary folder made): the index,
 * or minus an exit code after the set's message (tk_last_error()); then, after the work, write the model into it.  tk_outset_commit swaps it in. */
struct tk_outset;
int tk_tucker_model_register(struct tk_outset *set, const char *flag, const char *dir, int order);
tk_status tk_tucker_model_write(struct tk_outset *set, int idx, const tk_tucker_model *m, const char *extra_manifest);
/** Load a model directory; *manifest (may be NULL) gets the manifest text (free()). */
tk_status tk_tucker_model_load(const char *dir, tk_tucker_model *m, char **manifest);
/** The value of "key = value" in manifest text, copied into out; 0 if absent. */
int tk_tucker_manifest_get(const char *manifest, const char *key, char *out, size_t size);

/* ---- synthetic data ----------------------------------------------------------------- */

typedef struct tk_tucker_synth_options {
    int order;
    uint32_t dims[TK_TUCKER_MAX_ORDER];
    size_t nnz;
    int rank_j, rank_r;
    double noise;       /**< standard deviation of the added Gaussian noise */
    double popularity;  /**< power-law exponent of index popularity (0: uniform; default 0.5, about Netflix's most popular movie and user) */
    int unique;         /**< nonzero: no index tuple twice (sorts; slower at 1e8 entries) */
    uint64_t seed;
    int num_threads;    /**< 0: OpenMP default */
} tk_tucker_synth_options;

void tk_tucker_synth_options_init(tk_tucker_synth_options *o);
/** Entries of a random FastTucker model (returned in truth, may be NULL) plus
 * noise.  Index i of a mode is drawn with popularity ~ (rank of i)^-popularity
 * (ranks scattered by a fixed permutation), like users and items of rating data.
 * Deterministic for (options, seed) whatever the thread count. */
tk_status tk_tucker_synth(const tk_tucker_synth_options *o, tk_tucker_coo *out, tk_tucker_model *truth);

/* ---- training --------------------------------------------------------------------- */

typedef enum { TK_TUCKER_BCSF = 0, TK_TUCKER_COO = 1 } tk_tucker_storage;
/** How a factor pass moves the rows of A(n).  ALS (the default): each row takes the exact
 * minimiser of f over that row with everything else fixed, (sum v v^T + lambda_a n I) a =
 * sum x v over the row's n entries: a ridge of lambda_a per entry (ALS-WR, Zhou et al. 2008),
 * the regularization the SGD steps apply (one lambda_a a per entry); no learning rate (use it
 * with lr_b 0, the core as it starts, which the solver first balances:
 * tk_tucker_model_balance_core).  SGD: the seed's per-entry steps of size lr_a
 * (tk_tucker_options_init_sgd).  ALS reaches a planted model's noise floor where SGD plateaus
 * on the user guide's example; where rows have fewer entries than J it fits their noise
 * (Documentation/benchmarks.md, "Time to accuracy"). */
typedef enum { TK_TUCKER_FACTOR_ALS = 0, TK_TUCKER_FACTOR_SGD = 1 } tk_tucker_factor_update;

typedef struct tk_tucker_options {
    tk_backend backend;
    tk_tucker_storage storage;  /**< COO: cpu backend only */
    tk_precision precision;     /**< single (default); double: cpu/omp only, the reference path */
    tk_tucker_factor_update factor_update; /**< ALS (default) or SGD (lr_a) */
    double lr_a, lr_b, lambda_a, lambda_b;
    size_t fiber_threshold;     /**< B-CSF sub-slice size, >= 1 */
    int num_threads;            /**< omp: 0 = OpenMP default */
    int cuda_device;            /**< cuda: the (first) device */
    int cuda_device_count;      /**< cuda: devices cuda_device .. cuda_device + count - 1 (0 or 1: one);
                                     more than one needs a build with NCCL (data-parallel SGD, below) */
} tk_tucker_options;

/** Defaults: cpu, B-CSF, float, ALS factor updates with lambda_a TK_TUCKER_DEFAULT_ALS_LAMBDA
 * per entry, lr_b 0 (the core as it starts; the core pass is skipped, which loses nothing while
 * J >= R), lambda_b 0.001, fiber threshold 128 (the seed's); lr_a 0.05 (SGD's, unused by ALS).
 * They reach a planted model's noise floor on the user guide's example without tuning
 * (issue 26). */
void tk_tucker_options_init(tk_tucker_options *o);
/** The seed's SGD settings (what the defaults were before ALS): SGD factor updates, lr_a 0.05,
 * lr_b 1 (it scales the mean core gradient), lambda_a = lambda_b = 0.001, the rest as
 * tk_tucker_options_init.  The factor step is stable while lr_a |v|^2 < 2, so scale lr_a down
 * for data of larger magnitude (ratings 1..5: try 0.005). */
void tk_tucker_options_init_sgd(tk_tucker_options *o);
/** The most GPUs a solver of this build drives: TK_TUCKER_MAX_DEVICES where it was built with
 * NCCL, else 1 (several GPUs are then refused with that reason). */
int tk_tucker_max_devices(void);
const char *tk_backend_name(tk_backend b);

typedef struct tk_tucker_solver tk_tucker_solver;


/** Build the storage for train and take a copy of model (its shape must match
 * train's order and dims).  train must stay valid until destroy only for COO.
 * cuda: the B-CSF is built on the (first) GPU from one copy of train's entries, the same
 * arrays as the host builds; where that set-up does not fit in the GPU's free memory
 * (about twice the resident B-CSF), the host builds it, slower, with the same result. */
tk_status tk_tucker_solver_create(const tk_tucker_options *o, const tk_tucker_coo *train, const tk_tucker_model *model,
                                  tk_tucker_solver **out);
void tk_tucker_solver_destroy(tk_tucker_solver *s);
/** One pass of factor updates over every mode, and one of core updates. */
tk_status tk_tucker_update_factors(tk_tucker_solver *s);
tk_status tk_tucker_update_core(tk_tucker_solver *s);
/** Copy the current model out (rounded to float on the double path). */
tk_status tk_tucker_solver_model(const tk_tucker_solver *s, tk_tucker_model *out);
/** The last tk_tucker_update_factors (factors) and tk_tucker_update_core (core): kernel_ms and
 * total_ms the pass (GPU: CUDA events), setup_ms the storage build and uploads at create.
 * Either may be NULL. */
void tk_tucker_solver_timing(const tk_tucker_solver *s, tk_timing *factors, tk_timing *core);

/* ---- B-CSF inspection (tests, benchmarks, multi-GPU partitioning) ------------------- */

typedef struct tk_tucker_bcsf {
    int order, mode;
    int others[TK_TUCKER_MAX_ORDER - 1]; /**< the other modes, ascending: index columns */
    uint32_t rows;            /**< dims[mode] */
    size_t nnz, num_parts;    /**< entries; sub-slices */
    uint32_t *part_row;       /**< num_parts: i_mode of each sub-slice */
    uint32_t *part_count;     /**< num_parts: sub-slices of that row (S) */
    size_t *part_ptr;         /**< num_parts + 1: entry offsets */
    uint32_t *idx;            /**< nnz * (order - 1): the other modes' indices */
    float *val;               /**< nnz */
} tk_tucker_bcsf;

tk_status tk_tucker_bcsf_build(const tk_tucker_coo *t, int mode, size_t fiber_threshold, tk_tucker_bcsf *out);
void tk_tucker_bcsf_free(tk_tucker_bcsf *b);
/** Cut the sub-slices into `pieces` contiguous ranges of whole rows with about
 * equal entries: first[p]..first[p+1] (pieces + 1 values), for one device each. */
tk_status tk_tucker_bcsf_row_split(const tk_tucker_bcsf *b, int pieces, size_t *first);

TK_API_END
#endif
