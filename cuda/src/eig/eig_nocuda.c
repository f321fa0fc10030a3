/* The CUDA backend of the eigensolver in a build made without a CUDA compiler. */
#include <stdlib.h>

#include "eig_internal.h"
#include "tk_bench_hooks.h"

#define TK_NO_CUDA_BACKEND "this build has no CUDA backend (no CUDA compiler was found): use cpu or omp"

tk_status tk_eig_cuda_create(const tk_eig_options *opts, size_t max_batch, int want, tk_eig_cuda **cuda)
{
    (void)opts, (void)max_batch, (void)want;
    *cuda = NULL;
    return tk_set_error(TK_ERR_UNSUPPORTED, TK_NO_CUDA_BACKEND);
}

tk_status tk_eig_cuda_execute(tk_eig_cuda *cuda, size_t count, const void *matrices, void *values, void *vectors,
                              int8_t *status, double *kernel_ms)
{
    (void)cuda, (void)count, (void)matrices, (void)values, (void)vectors, (void)status, (void)kernel_ms;
    return tk_set_error(TK_ERR_UNSUPPORTED, TK_NO_CUDA_BACKEND);
}

tk_status tk_eig_cuda_execute_device(tk_eig_cuda *cuda, size_t count, const void *matrices, void *values,
                                     void *vectors, int8_t *status, double *kernel_ms)
{
    return tk_eig_cuda_execute(cuda, count, matrices, values, vectors, status, kernel_ms);
}

size_t tk_eig_cuda_device_bytes(const tk_eig_cuda *cuda)
{
    (void)cuda;
    return 0;
}

void tk_eig_cuda_destroy(tk_eig_cuda *cuda) { (void)cuda; }

tk_status tk_eig_cuda_measure(const tk_eig_options *opts, size_t count, const void *matrices,
                              tk_eig_cuda_profile *profile)
{
    (void)opts, (void)count, (void)matrices, (void)profile;
    return tk_set_error(TK_ERR_UNSUPPORTED, TK_NO_CUDA_BACKEND);
}

void *tk_eig_host_alloc(size_t bytes) { return malloc(bytes ? bytes : 1); }
void tk_eig_host_free(void *ptr) { free(ptr); }
