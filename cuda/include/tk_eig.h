/** TensorKernels: eigenvalues (and optionally right eigenvectors) of a batch of small
 * real nonsymmetric matrices (one public header).
 *
 * Method.  Per matrix, as LAPACK's dgeev does it: balancing (permutations that
 * isolate eigenvalues, then diagonal scaling by powers of two; switchable),
 * Householder reduction to upper Hessenberg form, and the implicit double-shift
 * (Francis) QR iteration with deflation.  Eigenvectors come from back-substitution
 * on the real Schur form, transformed back by the accumulated orthogonal factor
 * and the balancing.
 *
 * Storage.  A batch of B matrices of order n is B*n*n values, each matrix row-major
 * (C order), in opts->precision.
 *   values:  B*n complex numbers, each as (re, im) in opts->precision; each row is
 *            sorted by real part ascending, then imaginary part ascending, so a
 *            conjugate pair appears as (x - iy, x + iy).
 *   vectors: B*n*n complex numbers, matrix b's element [i][k] is component i of the
 *            eigenvector of values[b][k] (columns are eigenvectors, as numpy's eig);
 *            each vector has unit 2-norm and its largest-magnitude component real
 *            and positive.
 *   status:  one int8 per matrix (tk_eig_matrix_status).  A matrix that fails gets
 *            NaN values (and vectors); the others are unaffected.
 * \file
 * \ingroup tk_group_eig */
#ifndef TK_EIG_H
#define TK_EIG_H

#include "tk_export.h"

#include <stddef.h>
#include <stdint.h>

#include "tk_status.h"
#include "tk_types.h"

TK_API_BEGIN

#define TK_EIG_MAX_N 64

typedef enum {
    TK_EIG_CONVERGED = 0,     /**< all eigenvalues found */
    TK_EIG_NOT_CONVERGED = 1, /**< the QR iteration hit its cap: values are NaN */
    TK_EIG_NONFINITE = 2      /**< the matrix holds NaN or Inf: values are NaN */
} tk_eig_matrix_status;

typedef struct tk_eig_options {
    int n;                  /**< matrix order, 1..TK_EIG_MAX_N */
    tk_precision precision; /**< of the matrices and of the results */
    tk_backend backend;
    int balance;            /**< nonzero (default): LAPACK-style balancing first */
    int max_iter;           /**< QR iterations per eigenvalue; 0: LAPACK's 30 * max(10, n) */
    int num_threads;        /**< omp: 0 = the OpenMP default */
    int cuda_device;        /**< cuda: device ordinal */
    int cuda_device_count;  /**< cuda: spread each batch over devices cuda_device ..
                               cuda_device + count - 1, a contiguous share of the matrices each,
                               results bit for bit those of one device; 0 or 1 (default): one
                               device.  More than exist: TK_ERR_ARGUMENT.  Ignored on cpu and
                               omp (Documentation/multi_gpu.md) */
    size_t cuda_chunk;      /**< cuda: matrices per transfer chunk; 0 = chosen from free memory (and
                               halved where it does not fit); a chosen one that does not fit is
                               TK_ERR_MEMORY (tk_cuda_memory.h) */
    int cuda_lanes;         /**< cuda: threads per matrix, 1 (values only), 2, 4, 8, 16, 32 or 64;
                               0 = chosen from n (the tuning knob of tk-bench eig --cuda-lanes) */
    int cuda_reduce_lanes;  /**< cuda, values only: lanes per matrix of the lockstep reduction kernel
                               (2, 4, 8, 16 or 32; ignored where that count cannot hold order n);
                               0 = the tuning table's (tk-bench eig --cuda-reduce-lanes) */
    int cuda_qr_grid;       /**< cuda, lockstep kernels: > 0 runs the persistent QR kernel on that many
                               blocks at any n, < 0 the non-persistent one; 0 = the tuning table's
                               (tk-bench eig --cuda-qr-grid) */
    int cuda_slots;         /**< cuda: buffers of the copy/compute pipeline, 1..16; 0 = the tuning
                               table's (tk-bench eig --cuda-slots) */
    int cuda_timeline;      /**< cuda: nonzero prints each chunk's copy and kernel intervals and the
                               host's set-up and clean-up times to stderr (tk-bench eig --cuda-timeline) */
} tk_eig_options;

/** Defaults: double, cpu, balancing on, LAPACK's iteration cap. */
void tk_eig_options_init(tk_eig_options *opts, int n);

typedef struct tk_eig_result {
    void *values;    /**< required: B*n complex (2*B*n reals) */
    void *vectors;   /**< optional (NULL: not computed): B*n*n complex */
    int8_t *status;  /**< optional: B */
} tk_eig_result;

/** Solve a batch (a plan made, executed once and destroyed).  Returns TK_OK when the batch ran, even if some matrices failed:
 * their status says so.  counts: *num_failed (optional) receives how many did not
 * converge or were non-finite. */
tk_status tk_eig_solve(const tk_eig_options *opts, size_t count, const void *matrices, tk_eig_result *out,
                       tk_timing *timing, size_t *num_failed);


/* ---- Plans: set-up once, solve many batches ------------------------------------ */

/** A plan for batches of one order, precision and backend (the pattern of cuFFT's
 * plans): the CUDA backend's device buffers, pinned staging buffers, streams, events and
 * kernel layout are made once by tk_eig_plan_create and reused by every
 * tk_eig_plan_execute; tk_eig_plan_destroy frees all of them (no GPU memory outlives the
 * plan, and no cache is kept between plans).  A cuda plan is not shared between threads:
 * give each thread its own.  A cpu or omp plan's execute only reads the plan, so threads may
 * execute one at once (the ITK filter's regions do). */
typedef struct tk_eig_plan tk_eig_plan;

/** Validate the options (copied into the plan) and make a plan for batches of up to
 * max_batch matrices (larger batches run in chunks of the plan's size; 0: the buffers are
 * made at the first execute, for its batch, and grow with larger batches).  Whether vectors are wanted is decided by
 * each execute's result arrays; a plan first asked for vectors then grows its buffers. */
tk_status tk_eig_plan_create(const tk_eig_options *opts, size_t max_batch, tk_eig_plan **plan);

/** Solve a batch with a plan: the arguments and results of tk_eig_solve. */
tk_status tk_eig_plan_execute(tk_eig_plan *plan, size_t count, const void *matrices, tk_eig_result *out,
                              tk_timing *timing, size_t *num_failed);

/** tk_eig_plan_execute on arrays in the memory of the plan's GPU (cudaMalloc's, CuPy's,
 * PyTorch's): d_matrices and the arrays of *d_out are device pointers in the host execute's
 * layouts, d_out->status required (the caller counts the failed matrices there: their count
 * would be a copy to the host); d_out itself and timing are host memory.  No byte of the arrays
 * crosses to the host; the results are the host execute's, bit for bit.  cuda_stream: the
 * caller's cudaStream_t (NULL: the legacy default stream); the call waits for the work queued
 * on it and is synchronous, as the host execute: on return the results are written and nothing
 * of the call is left queued.  Errors: TK_ERR_UNSUPPORTED in a build without CUDA and for a
 * plan over several GPUs; TK_ERR_ARGUMENT for a cpu/omp plan and for an array that is not
 * device memory of the plan's GPU (named). */
tk_status tk_eig_plan_execute_device(tk_eig_plan *plan, size_t count, const void *d_matrices,
                                     const tk_eig_result *d_out, void *cuda_stream, tk_timing *timing);

/** Device memory the plan holds now, in bytes, summed over its devices (0 on the cpu and
 * omp backends). */
size_t tk_eig_plan_device_bytes(const tk_eig_plan *plan);

/** Free the plan and everything it holds (NULL: nothing). */
void tk_eig_plan_destroy(tk_eig_plan *plan);

/** A short name of a per-matrix status ("converged", "not converged", "non-finite"). */
const char *tk_eig_status_name(int status);

/* ---- Pinned host memory (CUDA) ----------------------------------------------- */

/** Page-locked host memory, so tk_eig_solve on the CUDA backend copies straight from
 * and into the caller's arrays (no staging copy).  Without CUDA: plain malloc/free. */
void *tk_eig_host_alloc(size_t bytes);
void tk_eig_host_free(void *ptr);

TK_API_END
#endif
