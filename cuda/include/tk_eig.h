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
    size_t cuda_chunk;      /**< cuda: matrices per transfer chunk; 0 = chosen from free memory (and
                               halved where it does not fit); a chosen one that does not fit is
                               TK_ERR_MEMORY (tk_cuda_memory.h) */
    int cuda_lanes;         /**< cuda: threads per matrix, 1 (values only), 2, 4, 8, 16, 32 or 64;
                               0 = chosen from n (the tuning knob of tk-bench eig --cuda-lanes) */
} tk_eig_options;

/** Defaults: double, cpu, balancing on, LAPACK's iteration cap. */
void tk_eig_options_init(tk_eig_options *opts, int n);

typedef struct tk_eig_result {
    void *values;    /**< required: B*n complex (2*B*n reals) */
    void *vectors;   /**< optional (NULL: not computed): B*n*n complex */
    int8_t *status;  /**< optional: B */
} tk_eig_result;

/** Solve a batch.  Returns TK_OK when the batch ran, even if some matrices failed:
 * their status says so.  counts: *num_failed (optional) receives how many did not
 * converge or were non-finite. */
tk_status tk_eig_solve(const tk_eig_options *opts, size_t count, const void *matrices, tk_eig_result *out,
                       tk_timing *timing, size_t *num_failed);


/** A short name of a per-matrix status ("converged", "not converged", "non-finite"). */
const char *tk_eig_status_name(int status);

/* ---- Pinned host memory (CUDA) ----------------------------------------------- */

/** Page-locked host memory, so tk_eig_solve on the CUDA backend copies straight from
 * and into the caller's arrays (no staging copy).  Without CUDA: plain malloc/free. */
void *tk_eig_host_alloc(size_t bytes);
void tk_eig_host_free(void *ptr);

TK_API_END
#endif
