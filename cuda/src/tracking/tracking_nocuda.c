/* The CUDA tracker in a build without a CUDA compiler: a clear error at plan create. */
#include "tk_bench_hooks.h"
#include "tracking_internal.h"

tk_status tk_tracking_cuda_create(const tk_tracking_plan *plan, tk_tracking_cuda_state **state)
{
    (void)plan;
    *state = NULL;
    return tk_set_error(TK_ERR_UNSUPPORTED,
                        "tracking: no CUDA backend in this build (built without a CUDA compiler): use cpu or omp");
}

/* never reached: create fails, so no plan holds CUDA state */
tk_status tk_tracking_cuda_execute(const tk_tracking_plan *plan, const tk_tracking_field *field,
                                   const tk_tracking_seed_set *set, tk_tracking_sink sink, void *user,
                                   tk_tracking_stats *stats, double *kernel_ms)
{
    (void)plan, (void)field, (void)set, (void)sink, (void)user, (void)stats, (void)kernel_ms;
    return tk_set_error(TK_ERR_UNSUPPORTED, "tracking: no CUDA backend in this build");
}

void tk_tracking_cuda_destroy(tk_tracking_cuda_state *state) { (void)state; }

/* nothing to set: no GPU launches */
void tk_tracking_cuda_set_launch_fill(size_t seeds) { (void)seeds; }
