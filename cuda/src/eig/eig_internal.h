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
tk_status tk_eig_solve_cuda(const tk_eig_options *opts, size_t count, const void *matrices, void *values,
                            void *vectors, int8_t *status, double *kernel_ms);

/* The iteration cap the options ask for (LAPACK's 30 * max(10, n) by default). */
int tk_eig_max_iter(const tk_eig_options *opts);

#ifdef __cplusplus
}
#endif
#endif
