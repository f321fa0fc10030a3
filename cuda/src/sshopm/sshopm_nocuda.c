/* The CUDA backend of a build made without a CUDA compiler. */
#include "sshopm_internal.h"

tk_status tk_sshopm_solve_cuda(const tk_sshopm_options *opts, const tk_sshopm_tables *tables, size_t num_tensors,
                               const void *packed, const void *starts, tk_sshopm_starts_result *out,
                               tk_timing *timing)
{
    (void)opts, (void)tables, (void)num_tensors, (void)packed, (void)starts, (void)out, (void)timing;
    return tk_set_error(TK_ERR_UNSUPPORTED, "this build has no CUDA backend (no CUDA compiler was found): use cpu or omp");
}
