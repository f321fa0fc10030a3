/* The CUDA backend of the eigensolver in a build made without a CUDA compiler. */
#include <stdlib.h>

#include "eig_internal.h"
#include "tk_bench_hooks.h"

tk_status tk_eig_solve_cuda(const tk_eig_options *opts, size_t count, const void *matrices, void *values,
                            void *vectors, int8_t *status, double *kernel_ms)
{
    (void)opts, (void)count, (void)matrices, (void)values, (void)vectors, (void)status, (void)kernel_ms;
    return tk_set_error(TK_ERR_UNSUPPORTED, "this build has no CUDA backend (no CUDA compiler was found): use cpu or omp");
}

tk_status tk_eig_cuda_measure(const tk_eig_options *opts, size_t count, const void *matrices,
                              tk_eig_cuda_profile *profile)
{
    (void)opts, (void)count, (void)matrices, (void)profile;
    return tk_set_error(TK_ERR_UNSUPPORTED, "this build has no CUDA backend (no CUDA compiler was found): use cpu or omp");
}

void *tk_eig_host_alloc(size_t bytes) { return malloc(bytes ? bytes : 1); }
void tk_eig_host_free(void *ptr) { free(ptr); }
