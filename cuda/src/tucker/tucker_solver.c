/* FastTucker front end: options, storage build, backend dispatch, timing. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tk_bench_hooks.h"
#include "tucker_internal.h"


/* The defaults, as data; every field not named is 0 (float precision, device 0, threads
 * of OpenMP's choice).  ALS-WR with the core as it starts (lr_b 0): no rate to tune, and it
 * reaches the user guide's noise floor where the seed's SGD plateaus; lambda_a is per entry of
 * a row (tk_tucker_als_ridge), TK_TUCKER_DEFAULT_ALS_LAMBDA by benchmarks.md's "Time to
 * accuracy" table.  lr_a is SGD's, unused by ALS. */
static const tk_tucker_options tucker_defaults = {
    .backend = TK_BACKEND_CPU,
    .storage = TK_TUCKER_BCSF,
    .factor_update = TK_TUCKER_FACTOR_ALS,
    .lr_a = 0.05,
    .lr_b = 0,
    .lambda_a = TK_TUCKER_DEFAULT_ALS_LAMBDA,
    .lambda_b = 0.001,
    .fiber_threshold = TK_TUCKER_DEFAULT_FIBER_THRESHOLD,
};

void tk_tucker_options_init(tk_tucker_options *o) { *o = tucker_defaults; }

void tk_tucker_options_init_sgd(tk_tucker_options *o)
{
    *o = tucker_defaults;
    o->factor_update = TK_TUCKER_FACTOR_SGD;
    o->lr_b = 1.0, o->lambda_a = 0.001; /* the seed's core step and flat ridge (its lr_a is the table's) */
}

int tk_tucker_max_devices(void)
{
#if defined(TK_HAVE_NCCL)
    return TK_TUCKER_MAX_DEVICES;
#else
    return 1;
#endif
}


tk_status tk_tucker_solver_create(const tk_tucker_options *o, const tk_tucker_coo *train, const tk_tucker_model *model,
                                  tk_tucker_solver **out)
{
    *out = NULL;
    double t0 = tk_now_ms();
    tk_status shape = tk_tucker_check_shape(model, train);
    if (shape != TK_OK) return shape;
    if (!(o->lr_a >= 0) || !(o->lr_b >= 0) || !(o->lambda_a >= 0) || !(o->lambda_b >= 0))
        return tk_set_error(TK_ERR_ARGUMENT, "learning rates and lambdas must be finite and >= 0");
    if (o->fiber_threshold < 1) return tk_set_error(TK_ERR_ARGUMENT, "the fiber threshold must be at least 1");
    if (o->storage == TK_TUCKER_COO && o->backend != TK_BACKEND_CPU)
        return tk_set_error(TK_ERR_UNSUPPORTED, "COO storage runs on the cpu backend only (use B-CSF)");
    if (o->cuda_device_count < 0 || o->cuda_device_count > TK_TUCKER_MAX_DEVICES)
        return tk_set_error(TK_ERR_ARGUMENT, "the device count must be 0..%d (got %d)", TK_TUCKER_MAX_DEVICES,
                            o->cuda_device_count);
    if (o->cuda_device_count > 1 && o->backend != TK_BACKEND_CUDA)
        return tk_set_error(TK_ERR_ARGUMENT, "%d devices: several GPUs are for the cuda backend (this is %s)",
                            o->cuda_device_count, tk_backend_name(o->backend));
    if (o->backend == TK_BACKEND_CUDA && o->precision == TK_PRECISION_DOUBLE)
        return tk_set_error(TK_ERR_UNSUPPORTED, "the cuda backend runs in float; double is the cpu/omp reference");
    tk_tucker_solver *s = calloc(1, sizeof *s);
    if (!s) return tk_set_error(TK_ERR_MEMORY, "cannot allocate the solver");
    s->opts = *o;
    const char *ridge = getenv("TK_TUCKER_ALS_RIDGE"); /* "flat": the ALS ridge before ALS-WR, for A/B */
    s->als_ridge_per_entry = !(ridge && !strcmp(ridge, "flat"));
    s->order = model->order;
    s->rank_j = model->rank_j;
    s->rank_r = model->rank_r;
    memcpy(s->dims, model->dims, sizeof s->dims);
    s->nnz = train->nnz;
    tk_status st = TK_OK;
    /* B-CSF indexes rows of the model: use the model's dims. */
    tk_tucker_coo view = *train;
    memcpy(view.dims, model->dims, sizeof view.dims);
    if (o->storage == TK_TUCKER_COO) {
        s->coo = train;
    } else if (o->backend != TK_BACKEND_CUDA) {
        /* cuda builds its own, on the GPU where it fits (tk_tucker_cuda_create). */
        double b0 = tk_now_ms();
        st = tk_tucker_bcsf_build_modes(&view, o->fiber_threshold, o->backend != TK_BACKEND_CPU && train->nnz > 100000,
                                        s->bcsf);
        s->setup.build_ms = tk_now_ms() - b0;
    }
    /* ALS starts from the same model with its core balanced (tk_tucker_model_balance_core);
     * TK_TUCKER_ALS_CORE=asis: the core as given (A/B) */
    tk_tucker_model balanced;
    const tk_tucker_model *start = model;
    const char *core = getenv("TK_TUCKER_ALS_CORE");
    if (st == TK_OK && o->factor_update == TK_TUCKER_FACTOR_ALS && !(core && !strcmp(core, "asis"))) {
        if ((st = tk_tucker_model_copy(&balanced, model)) == TK_OK) {
            tk_tucker_model_balance_core(&balanced);
            start = &balanced;
        }
    }
    if (st == TK_OK)
        st = o->backend == TK_BACKEND_CUDA ? tk_tucker_cuda_create(s, start, &view) : tk_tucker_host_create(s, start);
    if (start == &balanced) tk_tucker_model_free(&balanced);
    if (st != TK_OK) {
        tk_tucker_solver_destroy(s);
        return st;
    }
    s->timing.setup_ms = tk_now_ms() - t0;
    *out = s;
    return TK_OK;
}

void tk_tucker_solver_destroy(tk_tucker_solver *s)
{
    if (!s) return;
    if (s->opts.backend == TK_BACKEND_CUDA)
        tk_tucker_cuda_destroy(s);
    else
        tk_tucker_host_destroy(s);
    for (int n = 0; n < TK_TUCKER_MAX_ORDER; ++n) tk_tucker_bcsf_free(&s->bcsf[n]);
    free(s);
}

tk_status tk_tucker_update_factors(tk_tucker_solver *s)
{
    double t0 = tk_now_ms(), ms = 0;
    tk_status st = s->opts.backend == TK_BACKEND_CUDA ? tk_tucker_cuda_factors(s, &ms) : tk_tucker_host_factors(s);
    s->timing.factor_ms = s->opts.backend == TK_BACKEND_CUDA ? ms : tk_now_ms() - t0;
    return st;
}

tk_status tk_tucker_update_core(tk_tucker_solver *s)
{
    /* B(n) += 0 (...) is no change: skip the pass (its C refresh would recompute the same). */
    if (s->opts.lr_b == 0) {
        s->timing.core_ms = 0;
        return TK_OK;
    }
    double t0 = tk_now_ms(), ms = 0;
    tk_status st = s->opts.backend == TK_BACKEND_CUDA ? tk_tucker_cuda_core(s, &ms) : tk_tucker_host_core(s);
    s->timing.core_ms = s->opts.backend == TK_BACKEND_CUDA ? ms : tk_now_ms() - t0;
    return st;
}

tk_status tk_tucker_solver_model(const tk_tucker_solver *s, tk_tucker_model *out)
{
    if (out->order != s->order || out->rank_j != s->rank_j || out->rank_r != s->rank_r)
        return tk_set_error(TK_ERR_ARGUMENT, "the output model's shape differs from the solver's");
    if (s->opts.backend == TK_BACKEND_CUDA) return tk_tucker_cuda_model(s, out);
    tk_tucker_host_model(s, out);
    return TK_OK;
}

void tk_tucker_solver_timing(const tk_tucker_solver *s, tk_timing *factors, tk_timing *core)
{
    if (factors) factors->kernel_ms = factors->total_ms = s->timing.factor_ms, factors->setup_ms = s->timing.setup_ms;
    if (core) core->kernel_ms = core->total_ms = s->timing.core_ms, core->setup_ms = s->timing.setup_ms;
}

tk_status tk_tucker_solver_setup_info(const tk_tucker_solver *s, tk_tucker_setup_info *out)
{
    *out = s->setup;
    return TK_OK;
}

tk_status tk_tucker_solver_device_model(const tk_tucker_solver *s, int index, tk_tucker_model *out)
{
    if (s->opts.backend != TK_BACKEND_CUDA)
        return index == 0 ? tk_tucker_solver_model(s, out)
                          : tk_set_error(TK_ERR_ARGUMENT, "device index %d: the %s backend has one copy", index,
                                         tk_backend_name(s->opts.backend));
    if (out->order != s->order || out->rank_j != s->rank_j || out->rank_r != s->rank_r)
        return tk_set_error(TK_ERR_ARGUMENT, "the output model's shape differs from the solver's");
    return tk_tucker_cuda_model_of_device(s, index, out);
}
