/** TensorKernels: symmetric tensor Z-eigenpairs by SS-HOPM (one public header).
 *
 * Storage.  A symmetric tensor of order m and dimension n is stored packed: its
 * K = binom(m+n-1, m) unique entries in lexicographic order of non-decreasing
 * index tuples (m=4, n=3: 0000, 0001, 0002, 0011, 0012, 0022, 0111, ..., 2222 with
 * 0-based indices).  A batch of T tensors is T*K contiguous values.
 *
 * Eigenpairs.  (lambda, x) with A x^(m-1) = lambda x and |x| = 1.  SS-HOPM
 * (Kolda and Mayo 2011) iterates x <- s (A x^(m-1) + alpha x) / |...|; alpha >= 0
 * converges to local maxima of A x^m on the sphere, alpha < 0 to local minima.
 * The adaptive shift picks alpha at every step from the projected Hessian, as
 * GEAP does (Kolda and Mayo 2014).
 * \file
 * \ingroup tk_group_sshopm */
#ifndef TK_SSHOPM_H
#define TK_SSHOPM_H

#include "tk_export.h"

#include <stddef.h>
#include <stdint.h>

#include "tk_status.h"
#include "tk_types.h"

TK_API_BEGIN

/**< ---- Packed symmetric storage (the seed's Algorithms 2-4) ------------------ */

/** K = binom(m+n-1, m), or 0 when m < 1, n < 1 or K overflows size_t. */
size_t tk_sym_num_unique(int order, int dim);

/** The first index tuple (all zeros) and its lexicographic successor (UPDATEINDEX).
 * tk_sym_index_next returns 0 after the last tuple (n-1, ..., n-1). */
void tk_sym_index_first(int order, int *index);
int tk_sym_index_next(int order, int dim, int *index);

/** Position of a non-decreasing tuple in the packed order; a tuple in any order
 * is sorted first (so this maps a full-tensor index to its unique entry). */
size_t tk_sym_rank(int order, int dim, const int *index);

/** Number of full-tensor entries in the index class of a sorted tuple: m!/(k1!...kn!). */
double tk_sym_multiplicity(int order, const int *sorted_index);

/** A x^m (Algorithm 2), A x^(m-1) (Algorithm 3) and the n x n matrix A x^(m-2),
 * by the index walk over the packed entries.  Reference kernels: exact sums,
 * no tables. */
double tk_sym_axm_d(int order, int dim, const double *packed, const double *x);
float tk_sym_axm_f(int order, int dim, const float *packed, const float *x);
void tk_sym_axm1_d(int order, int dim, const double *packed, const double *x, double *y);
void tk_sym_axm1_f(int order, int dim, const float *packed, const float *x, float *y);
void tk_sym_axm2_d(int order, int dim, const double *packed, const double *x, double *y);

/** Full (n^m, C order) <-> packed.  Packing checks symmetry: every full entry must
 * equal its class's first entry within tol * max|A| (tol = 0: exactly); on
 * failure *bad_full_offset is the offending entry's offset and TK_ERR_DATA returned. */
tk_status tk_sym_pack_d(int order, int dim, const double *full, double tol, double *packed,
                        size_t *bad_full_offset);
void tk_sym_unpack_d(int order, int dim, const double *packed, double *full);

/* ---- SS-HOPM ---------------------------------------------------------------- */

typedef enum { TK_IMPL_GENERAL = 0, TK_IMPL_UNROLLED = 1 } tk_impl;
typedef enum { TK_SHIFT_FIXED = 0, TK_SHIFT_ADAPTIVE = 1 } tk_shift_mode;
typedef enum {
    TK_STABILITY_MAX = 0,       /**< local maximum of A x^m on the sphere */
    TK_STABILITY_MIN = 1,       /**< local minimum */
    TK_STABILITY_SADDLE = 2,    /**< projected Hessian indefinite */
    TK_STABILITY_DEGENERATE = 3 /**< projected Hessian singular: the test is inconclusive */
} tk_stability;

typedef struct tk_sshopm_options {
    int order;               /**< m >= 2 */
    int dim;                 /**< n >= 2 */
    tk_precision precision;  /**< of the tensors, starts and results passed in and out */
    tk_backend backend;
    tk_impl impl;            /**< UNROLLED exists for the (m, n) of tk_sshopm_has_unrolled */
    tk_shift_mode shift_mode;
    double shift;            /**< FIXED: alpha.  ADAPTIVE: its sign picks maxima (>= 0) or minima (< 0) */
    double tol;              /**< converged when |x_{k+1} - x_k| <= tol */
    int max_iter;            /**< iteration cap per start */
    int fixed_iterations;    /**< nonzero: run exactly max_iter iterations (benchmarks) */
    int num_starts;          /**< starts per tensor, shared by every tensor */
    uint64_t seed;           /**< random starts when starts == NULL */
    const void *starts;      /**< optional: num_starts * dim start vectors (normalized here) */
    int num_threads;         /**< OMP backend: 0 = the OpenMP default */
    int cuda_device;         /**< CUDA backend: device ordinal */
    int cuda_device_count;   /**< CUDA backend: spread each batch over devices cuda_device ..
                              *   cuda_device + count - 1, a contiguous share of the tensors
                              *   each, results bit for bit those of one device; 0 or 1
                              *   (default): one device.  More than exist: TK_ERR_ARGUMENT.
                              *   Ignored on cpu and omp (Documentation/multi_gpu.md) */
} tk_sshopm_options;

/** Defaults: float, cpu, general, fixed shift 0, tol 1e-6 (1e-12 for double once
 * precision is set before tk_sshopm_default_tol), 1000 iterations, 128 starts, seed 0. */
void tk_sshopm_options_init(tk_sshopm_options *opts, int order, int dim);
double tk_sshopm_default_tol(tk_precision precision);

/** 1 if an unrolled kernel exists for (order, dim): (4,3), (6,3), (8,3). */
int tk_sshopm_has_unrolled(int order, int dim);

/** Per-start results of num_tensors tensors (packed, in opts->precision), each
 * array indexed [tensor * num_starts + start]: lambda (precision), x (precision,
 * times dim), iterations (int32) and converged (uint8).  Any output may be NULL. */
typedef struct tk_sshopm_starts_result {
    void *lambda;
    void *x;
    int32_t *iterations;
    uint8_t *converged;
} tk_sshopm_starts_result;

/** Solve a batch: a plan made, executed once and destroyed. */
tk_status tk_sshopm_solve(const tk_sshopm_options *opts, size_t num_tensors, const void *packed,
                          tk_sshopm_starts_result *out, tk_timing *timing);

/* ---- Plans: set-up once, solve many batches ------------------------------------ */

/** A plan for batches of one (order, dim), precision, backend and set of starts (the
 * pattern of cuFFT's plans): the start vectors, index tables and, on CUDA, the device
 * buffers and events are made once by tk_sshopm_plan_create and reused by every
 * tk_sshopm_plan_execute; tk_sshopm_plan_destroy frees all of them (no GPU memory
 * outlives the plan).  A plan is not shared between threads: give each thread its own. */
typedef struct tk_sshopm_plan tk_sshopm_plan;

/** Validate the options (copied, with the start vectors they name) and make a plan for
 * batches of up to max_batch tensors (larger batches run in chunks of the plan's size;
 * 0: the device buffers are made at the first execute, for its batch, and grow with larger
 * batches). */
tk_status tk_sshopm_plan_create(const tk_sshopm_options *opts, size_t max_batch, tk_sshopm_plan **plan);

/** Solve num_tensors packed tensors with a plan: the arguments and results of
 * tk_sshopm_solve; timing->setup_ms is 0 (the set-up was the plan's). */
tk_status tk_sshopm_plan_execute(tk_sshopm_plan *plan, size_t num_tensors, const void *packed,
                                 tk_sshopm_starts_result *out, tk_timing *timing);

/** tk_sshopm_plan_execute on arrays in the memory of the plan's GPU (cudaMalloc's, CuPy's,
 * PyTorch's): d_packed and the arrays of *d_out (each may be NULL but d_packed) are device
 * pointers in the host execute's layouts; d_out itself and timing are host memory.  No byte of
 * the arrays crosses to the host; the results are the host execute's, bit for bit, and a
 * non-finite entry is refused in its words (checked on the device).  cuda_stream: the caller's
 * cudaStream_t (NULL: the legacy default stream); the call waits for the work queued on it and
 * is synchronous, as the host execute: on return the results are written and nothing of the
 * call is left queued.  Errors: TK_ERR_UNSUPPORTED in a build without CUDA and for a plan over
 * several GPUs; TK_ERR_ARGUMENT for a cpu/omp plan and for an array that is not device memory
 * of the plan's GPU (named). */
tk_status tk_sshopm_plan_execute_device(tk_sshopm_plan *plan, size_t num_tensors, const void *d_packed,
                                        const tk_sshopm_starts_result *d_out, void *cuda_stream, tk_timing *timing);

/** Free the plan and everything it holds (NULL: nothing). */
void tk_sshopm_plan_destroy(tk_sshopm_plan *plan);

/** The start vectors a solve uses (num_starts * dim doubles, unit length). */
tk_status tk_sshopm_make_starts(const tk_sshopm_options *opts, double *starts);

/* ---- Distinct eigenpairs ---------------------------------------------------- */

typedef struct tk_eigenpairs {
    size_t count;
    int dim;
    size_t *tensor;          /**< which tensor each pair belongs to */
    double *lambda;
    double *x;               /**< count * dim */
    tk_stability *stability;
    int32_t *num_starts;     /**< how many starts reached the pair */
    size_t capacity;         /**< pairs the arrays have room for: tk_sshopm_plan_execute_distinct
                              *   reuses them, growing them only for a batch with more pairs */
} tk_eigenpairs;

/** Merge converged starts into distinct pairs per tensor: two starts are one pair
 * when their vectors are within merge_tol (for even m, x and -x are one pair,
 * reported with its largest-magnitude entry positive).  Each pair's stability is
 * classified in double from the projected Hessian.  Sorted by tensor, then lambda
 * descending.  merge_tol <= 0 picks a default for the precision. */
tk_status tk_sshopm_distinct(const tk_sshopm_options *opts, size_t num_tensors, const void *packed,
                             const tk_sshopm_starts_result *starts, double merge_tol,
                             tk_eigenpairs *out);
void tk_eigenpairs_free(tk_eigenpairs *pairs);

/** The distinct eigenpairs of a batch straight from the tensors: what tk_sshopm_plan_execute
 * followed by tk_sshopm_distinct gives (the same pairs, counts and stabilities, in the same
 * order, tensor indices 0 .. num_tensors - 1 of this batch), without the per-start results
 * leaving the backend.  cpu/omp solve and merge in chunks of the batch; CUDA merges on the
 * device (the host's merge rule, stability in double), copies back only the pairs, and
 * overlaps its chunks' uploads, kernels and downloads on streams through pinned buffers
 * the plan keeps.  out: zeroed ({0}) or an earlier result of this call, whose arrays are
 * reused where they have room (tk_eigenpairs_free frees them); on failure out holds no
 * pairs (count 0) and keeps its arrays.  timing->kernel_ms: on CUDA the time the GPU spent in
 * the solve kernels (CUDA events; the union of the chunks' kernel spans, which the two streams
 * overlap, so never more than total_ms), on cpu/omp the solve and merge; total_ms the whole
 * call. */
tk_status tk_sshopm_plan_execute_distinct(tk_sshopm_plan *plan, size_t num_tensors, const void *packed,
                                          double merge_tol, tk_eigenpairs *out, tk_timing *timing);

/** tk_sshopm_plan_execute_distinct on a plan made, executed once and destroyed. */
tk_status tk_sshopm_solve_distinct(const tk_sshopm_options *opts, size_t num_tensors, const void *packed,
                                   double merge_tol, tk_eigenpairs *out, tk_timing *timing);

/** Stability of one eigenpair of one packed double tensor. */
tk_stability tk_sym_stability_d(int order, int dim, const double *packed, const double *x,
                                double lambda, double rel_tol);

const char *tk_stability_name(tk_stability s);

/** Flops of one SS-HOPM iteration of one start, for GFLOP/s figures: the seed's
 * own count of one A x^(m-1), 140, for (m, n) = (4, 3); elsewhere, where the seed
 * gives none, the direct evaluation's n * (m * K1 + K1 - 1) with K1 = binom(m+n-2, m-1)
 * (m multiplies per term, K1 - 1 adds per entry).  Documentation/benchmarks.md. */
double tk_sshopm_flops_per_iteration(int order, int dim);

TK_API_END
#endif
