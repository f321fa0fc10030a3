/* Internal interface between the SS-HOPM front end and its backends. */
#ifndef TK_SSHOPM_INTERNAL_H
#define TK_SSHOPM_INTERNAL_H

#include "common/timer.h"
#include "tk_sshopm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Tables of one (order, dim) shared by every tensor (the seed keeps these in
 * constant memory): the degree-(m-1) classes, their multiplicities, and for each
 * output j and class t the unique entry of the class t + j. */
typedef struct tk_sshopm_tables {
    int order, dim, k1;
    size_t k;
    unsigned char *idx1;  /* k1 * (order - 1) */
    unsigned *map;        /* dim * k1 */
    double *mult1;        /* k1 */
} tk_sshopm_tables;

tk_status tk_sshopm_tables_build(int order, int dim, tk_sshopm_tables *tables);
void tk_sshopm_tables_free(tk_sshopm_tables *tables);

/* Scratch values one start needs on the CPU. */
size_t tk_sshopm_cpu_scratch(int dim);

/* Backends.  starts: num_starts * dim unit vectors in opts->precision. */
tk_status tk_sshopm_solve_cpu(const tk_sshopm_options *opts, const tk_sshopm_tables *tables, size_t num_tensors,
                              const void *packed, const void *starts, tk_sshopm_starts_result *out);

/* The CUDA backend's part of a plan (sshopm_cuda.cu): opts, tables and starts are the
 * plan's and outlive it.  max_batch 0: the buffers are made at the first execute.
 * execute sets timing->kernel_ms. */
typedef struct tk_sshopm_cuda tk_sshopm_cuda;
tk_status tk_sshopm_cuda_create(const tk_sshopm_options *opts, const tk_sshopm_tables *tables, const void *starts,
                                size_t max_batch, tk_sshopm_cuda **cuda);
tk_status tk_sshopm_cuda_execute(tk_sshopm_cuda *cuda, size_t num_tensors, const void *packed,
                                 tk_sshopm_starts_result *out, tk_timing *timing);
/* The same on arrays in the device's memory (copies device to device), the batch's data
 * checked on the device first (a non-finite entry: the host execute's TK_ERR_DATA). */
tk_status tk_sshopm_cuda_execute_device(tk_sshopm_cuda *cuda, size_t num_tensors, const void *packed,
                                        tk_sshopm_starts_result *out, tk_timing *timing);
void tk_sshopm_cuda_destroy(tk_sshopm_cuda *cuda);
/* Whether the device merges this shape's pairs (dimension up to TK_KERNEL_MAX_DIM); else the
 * front end downloads the starts and merges on the host. */
int tk_sshopm_cuda_merges_on_device(const tk_sshopm_options *opts);
/* The distinct pairs of a batch appended to out (indices of this batch), merged on the
 * device; *kernel_ms the solve kernels' time. */
tk_status tk_sshopm_cuda_execute_distinct(tk_sshopm_cuda *cuda, size_t num_tensors, const void *packed,
                                          double merge_tol, tk_eigenpairs *out, double *kernel_ms);

/* Room for `count` pairs in out's arrays (out->dim set), grown by half again at least;
 * on failure the arrays are as they were. */
tk_status tk_eigenpairs_reserve(tk_eigenpairs *out, size_t count);
/* more's pairs after out's, their tensor indices plus tensor_offset. */
tk_status tk_eigenpairs_append(tk_eigenpairs *out, const tk_eigenpairs *more, size_t tensor_offset);

/* x and -x as one direction (even order, fibers): flip x so its largest-magnitude entry
 * is positive (the first such entry on ties). */
void tk_canonical_sign(int dim, double *x);

#ifdef __cplusplus
}
#endif
#endif
