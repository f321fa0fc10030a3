/* Internal interface between the eigenvalue front end and its backends. */
#ifndef TK_EIG_INTERNAL_H
#define TK_EIG_INTERNAL_H

#include "common/timer.h"
#include "tk_eig.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Validated options; status is never NULL (the front end supplies scratch). */
tk_status tk_eig_solve_cpu(const tk_eig_options *opts, size_t count, const void *matrices, void *values,
                           void *vectors, int8_t *status);

/* The CUDA backend's part of a plan (eig_cuda.cu), for batches of up to max_batch
 * matrices (0: set up at the first execute), set up for vectors or not (`want`; an
 * execute of the other kind sets the plan up again). */
typedef struct tk_eig_cuda tk_eig_cuda;
tk_status tk_eig_cuda_create(const tk_eig_options *opts, size_t max_batch, int want, tk_eig_cuda **cuda);
tk_status tk_eig_cuda_execute(tk_eig_cuda *cuda, size_t count, const void *matrices, void *values, void *vectors,
                              int8_t *status, double *kernel_ms);
/* The same on arrays in the device's memory (copied device to device; status required). */
tk_status tk_eig_cuda_execute_device(tk_eig_cuda *cuda, size_t count, const void *matrices, void *values,
                                     void *vectors, int8_t *status, double *kernel_ms);
size_t tk_eig_cuda_device_bytes(const tk_eig_cuda *cuda);
void tk_eig_cuda_destroy(tk_eig_cuda *cuda);

/* The iteration cap the options ask for (LAPACK's 30 * max(10, n) by default). */
int tk_eig_max_iter(const tk_eig_options *opts);

#ifdef __cplusplus
}
#endif
#endif
