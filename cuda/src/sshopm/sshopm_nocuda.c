/* The CUDA backend of a build made without a CUDA compiler. */
#include "sshopm_internal.h"

tk_status tk_sshopm_cuda_create(const tk_sshopm_options *opts, const tk_sshopm_tables *tables, const void *starts,
                                size_t max_batch, tk_sshopm_cuda **cuda)
{
    (void)opts, (void)tables, (void)starts, (void)max_batch;
    *cuda = NULL;
    return tk_set_error(TK_ERR_UNSUPPORTED, "this build has no CUDA backend (no CUDA compiler was found): use cpu or omp");
}

tk_status tk_sshopm_cuda_execute(tk_sshopm_cuda *cuda, size_t num_tensors, const void *packed,
                                 tk_sshopm_starts_result *out, tk_timing *timing)
{
    (void)cuda, (void)num_tensors, (void)packed, (void)out, (void)timing;
    return tk_set_error(TK_ERR_UNSUPPORTED, "this build has no CUDA backend (no CUDA compiler was found): use cpu or omp");
}

tk_status tk_sshopm_cuda_execute_device(tk_sshopm_cuda *cuda, size_t num_tensors, const void *packed,
                                        tk_sshopm_starts_result *out, tk_timing *timing)
{
    return tk_sshopm_cuda_execute(cuda, num_tensors, packed, out, timing);
}

void tk_sshopm_cuda_destroy(tk_sshopm_cuda *cuda) { (void)cuda; }

int tk_sshopm_cuda_merges_on_device(const tk_sshopm_options *opts)
{
    (void)opts;
    return 0;
}

tk_status tk_sshopm_cuda_execute_distinct(tk_sshopm_cuda *cuda, size_t num_tensors, const void *packed,
                                          double merge_tol, tk_eigenpairs *out, double *kernel_ms)
{
    (void)cuda, (void)num_tensors, (void)packed, (void)merge_tol, (void)out, (void)kernel_ms;
    return tk_set_error(TK_ERR_UNSUPPORTED, "this build has no CUDA backend (no CUDA compiler was found): use cpu or omp");
}
