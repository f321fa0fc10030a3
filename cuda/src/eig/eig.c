/* Batched eigenvalues: options, validation, dispatch and the per-matrix tally. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/device_arrays.h"
#include "common/multi_device.h"
#include "eig_internal.h"

void tk_eig_options_init(tk_eig_options *opts, int n)
{
    memset(opts, 0, sizeof *opts);
    opts->n = n;
    opts->precision = TK_PRECISION_DOUBLE;
    opts->backend = TK_BACKEND_CPU;
    opts->balance = 1;
}

int tk_eig_max_iter(const tk_eig_options *o)
{
    if (o->max_iter > 0) return o->max_iter;
    return 30 * (o->n > 10 ? o->n : 10);
}

const char *tk_eig_status_name(int status)
{
    switch (status) {
    case TK_EIG_CONVERGED: return "converged";
    case TK_EIG_NOT_CONVERGED: return "not converged";
    case TK_EIG_NONFINITE: return "non-finite";
    default: return "unknown";
    }
}

static tk_status validate_options(const tk_eig_options *o)
{
    if (!o) return tk_set_error(TK_ERR_ARGUMENT, "no options given");
    if (o->n < 1 || o->n > TK_EIG_MAX_N)
        return tk_set_error(TK_ERR_UNSUPPORTED, "matrix order %d is outside the supported 1..%d", o->n, TK_EIG_MAX_N);
    if (o->precision != TK_PRECISION_SINGLE && o->precision != TK_PRECISION_DOUBLE)
        return tk_set_error(TK_ERR_ARGUMENT, "unknown precision %d", (int)o->precision);
    if (o->backend != TK_BACKEND_CPU && o->backend != TK_BACKEND_OMP && o->backend != TK_BACKEND_CUDA)
        return tk_set_error(TK_ERR_ARGUMENT, "unknown backend %d", (int)o->backend);
    if (o->max_iter < 0) return tk_set_error(TK_ERR_ARGUMENT, "max_iter must be >= 0, got %d", o->max_iter);
    if (o->num_threads < 0) return tk_set_error(TK_ERR_ARGUMENT, "num_threads must be >= 0, got %d", o->num_threads);
    if (o->cuda_lanes < 0 || o->cuda_lanes > 64 || (o->cuda_lanes & (o->cuda_lanes - 1)))
        return tk_set_error(TK_ERR_ARGUMENT, "cuda_lanes must be 0 (automatic), 1, 2, 4, 8, 16, 32 or 64, got %d",
                            o->cuda_lanes);
    if (o->cuda_reduce_lanes < 0 || o->cuda_reduce_lanes == 1 || o->cuda_reduce_lanes > 32 ||
        (o->cuda_reduce_lanes & (o->cuda_reduce_lanes - 1)))
        return tk_set_error(TK_ERR_ARGUMENT, "cuda_reduce_lanes must be 0 (the table's), 2, 4, 8, 16 or 32, got %d",
                            o->cuda_reduce_lanes);
    if (o->cuda_slots < 0 || o->cuda_slots > 16)
        return tk_set_error(TK_ERR_ARGUMENT, "cuda_slots must be 0 (the table's) or 1..16, got %d", o->cuda_slots);
    if (!tk_device_count_checked(o->cuda_device_count, "cuda_device_count")) return TK_ERR_ARGUMENT;
    return TK_OK;
}

static tk_status validate_batch(const tk_eig_options *o, size_t count, const void *matrices, const tk_eig_result *out)
{
    if (o->cuda_lanes == 1 && out && out->vectors)
        return tk_set_error(TK_ERR_ARGUMENT, "cuda_lanes 1 (a thread per matrix) computes eigenvalues only, not vectors");
    if (!out || (count && !out->values)) return tk_set_error(TK_ERR_ARGUMENT, "no output array for the eigenvalues");
    if (count && !matrices) return tk_set_error(TK_ERR_ARGUMENT, "no matrices given");
    const size_t elem = o->precision == TK_PRECISION_DOUBLE ? sizeof(double) : sizeof(float);
    const size_t nn = (size_t)o->n * (size_t)o->n;
    if (count > SIZE_MAX / (2 * nn * elem))
        return tk_set_error(TK_ERR_MEMORY, "%zu matrices of order %d overflow memory sizes", count, o->n);
    return TK_OK;
}

/* Statuses other than TK_EIG_CONVERGED (0), eight at a time: a byte-wise loop over a
 * batch of 500,000 took a quarter of a millisecond, a tenth of a whole GPU solve at
 * n = 5. */
static size_t count_failed(const int8_t *status, size_t count)
{
    size_t bad = 0, b = 0;
    for (; b + 8 <= count; b += 8) {
        uint64_t w;
        memcpy(&w, status + b, sizeof w);
        if (!w) continue;
        for (int k = 0; k < 8; ++k) bad += status[b + (size_t)k] != TK_EIG_CONVERGED;
    }
    for (; b < count; ++b) bad += status[b] != TK_EIG_CONVERGED;
    return bad;
}

/* What a plan holds: its own copy of the options and the CUDA backend's device state, one
 * a device. */
struct tk_eig_plan {
    tk_eig_options opts;
    int num_devices; /* CUDA: devices opts.cuda_device .. + num_devices - 1; 0 on the CPU */
    tk_eig_cuda *cuda[TK_MAX_CUDA_DEVICES];
};

void tk_eig_plan_destroy(tk_eig_plan *plan)
{
    if (!plan) return;
    for (int d = 0; d < plan->num_devices; ++d) tk_eig_cuda_destroy(plan->cuda[d]);
    free(plan);
}

/* The CUDA states, one a device, each for its share of max_batch (an execute gives each
 * device a contiguous share of its matrices, tk_run_on_devices). */
static tk_status create_cuda_states(tk_eig_plan *plan, size_t max_batch, int want)
{
    const int devices = tk_device_count_checked(plan->opts.cuda_device_count, "cuda_device_count");
    tk_status st = tk_cuda_require_devices(plan->opts.cuda_device, devices);
    size_t first;
    const size_t share = tk_device_range(max_batch, devices, 0, &first); /* the largest share */
    for (int d = 0; d < devices && st == TK_OK; ++d) {
        tk_eig_options one = plan->opts; /* copied by the state */
        one.cuda_device = plan->opts.cuda_device + d, one.cuda_device_count = 1;
        st = tk_eig_cuda_create(&one, share, want, &plan->cuda[d]);
        if (st == TK_OK) plan->num_devices = d + 1;
    }
    return st;
}

/* Options already validated. */
static tk_status plan_create(const tk_eig_options *o, size_t max_batch, int want, tk_eig_plan **out)
{
    *out = NULL;
    tk_eig_plan *plan = calloc(1, sizeof *plan);
    if (!plan) return tk_set_error(TK_ERR_MEMORY, "out of memory for an eigenvalue plan");
    plan->opts = *o;
    if (o->backend == TK_BACKEND_CUDA) {
        const tk_status st = create_cuda_states(plan, max_batch, want);
        if (st != TK_OK) {
            tk_eig_plan_destroy(plan);
            return st;
        }
    }
    *out = plan;
    return TK_OK;
}

tk_status tk_eig_plan_create(const tk_eig_options *o, size_t max_batch, tk_eig_plan **plan)
{
    tk_clear_error();
    if (!plan) return tk_set_error(TK_ERR_ARGUMENT, "no place for the plan given");
    *plan = NULL;
    const tk_status st = validate_options(o);
    if (st != TK_OK) return st;
    return plan_create(o, max_batch, 0, plan);
}

size_t tk_eig_plan_device_bytes(const tk_eig_plan *plan)
{
    size_t bytes = 0;
    for (int d = 0; plan && d < plan->num_devices; ++d) bytes += tk_eig_cuda_device_bytes(plan->cuda[d]);
    return bytes;
}

/* One batch's arrays and each device's kernel time (run_device). */
typedef struct {
    tk_eig_plan *plan;
    const void *matrices;
    void *values, *vectors;
    int8_t *status;
    double kernel_ms[TK_MAX_CUDA_DEVICES];
} eig_devices_run;

/* Device `index`'s share of a batch: its matrices' slice of the input and of every result. */
static tk_status run_device(void *ctx, int index, size_t first, size_t count)
{
    eig_devices_run *r = ctx;
    const tk_eig_options *o = &r->plan->opts;
    const size_t elem = o->precision == TK_PRECISION_DOUBLE ? sizeof(double) : sizeof(float);
    const size_t n = (size_t)o->n;
    return tk_eig_cuda_execute(r->plan->cuda[index], count, (const char *)r->matrices + first * n * n * elem,
                               (char *)r->values + first * 2 * n * elem,
                               r->vectors ? (char *)r->vectors + first * 2 * n * n * elem : NULL, r->status + first,
                               &r->kernel_ms[index]);
}

/* The CUDA execute over the plan's devices; kernel_ms the longest device's (they run at once). */
static tk_status cuda_run(tk_eig_plan *plan, size_t count, const void *matrices, void *values, void *vectors,
                          int8_t *status, double *kernel_ms)
{
    eig_devices_run r = {.plan = plan, .matrices = matrices, .values = values, .vectors = vectors, .status = status};
    const tk_status st = tk_run_on_devices(plan->opts.cuda_device, plan->num_devices, count, run_device, &r);
    for (int d = 0; d < plan->num_devices; ++d)
        if (r.kernel_ms[d] > *kernel_ms) *kernel_ms = r.kernel_ms[d];
    return st;
}

/* A validated, non-empty batch on a plan: the per-matrix tally and kernel_ms. */
static tk_status plan_run(tk_eig_plan *plan, size_t count, const void *matrices, tk_eig_result *out,
                          double *kernel_ms, size_t *num_failed)
{
    int8_t *status = out->status ? out->status : malloc(count);
    if (!status) return tk_set_error(TK_ERR_MEMORY, "out of memory for %zu status codes", count);
    tk_status st;
    if (plan->num_devices) {
        st = cuda_run(plan, count, matrices, out->values, out->vectors, status, kernel_ms);
    } else {
        const double k0 = tk_now_ms();
        st = tk_eig_solve_cpu(&plan->opts, count, matrices, out->values, out->vectors, status);
        *kernel_ms = tk_now_ms() - k0;
    }
    if (st == TK_OK && num_failed) *num_failed = count_failed(status, count);
    if (status != out->status) free(status);
    return st;
}

tk_status tk_eig_plan_execute(tk_eig_plan *plan, size_t count, const void *matrices, tk_eig_result *out,
                              tk_timing *timing, size_t *num_failed)
{
    tk_clear_error();
    const double t0 = tk_now_ms();
    if (!plan) return tk_set_error(TK_ERR_ARGUMENT, "no plan given");
    tk_status st = validate_batch(&plan->opts, count, matrices, out);
    if (st != TK_OK) return st;
    if (num_failed) *num_failed = 0;
    double kernel_ms = 0;
    if (count) st = plan_run(plan, count, matrices, out, &kernel_ms, num_failed);
    if (timing) {
        timing->kernel_ms = kernel_ms;
        timing->setup_ms = 0;
        timing->total_ms = count ? tk_now_ms() - t0 : 0;
    }
    return st;
}

tk_status tk_eig_plan_execute_device(tk_eig_plan *plan, size_t count, const void *d_matrices,
                                     const tk_eig_result *d_out, void *cuda_stream, tk_timing *timing)
{
    tk_clear_error();
    const double t0 = tk_now_ms();
    if (timing) memset(timing, 0, sizeof *timing);
    if (!plan) return tk_set_error(TK_ERR_ARGUMENT, "no plan given");
    tk_status st = tk_device_arrays_plan_check(plan->num_devices);
    if (st != TK_OK) return st;
    if ((st = validate_batch(&plan->opts, count, d_matrices, d_out)) != TK_OK) return st;
    if (count && !d_out->status)
        return tk_set_error(TK_ERR_ARGUMENT, "no status array given (device arrays: the failed matrices are counted "
                            "from it, on the device)");
    const tk_eig_options *o = &plan->opts;
    const size_t elem = o->precision == TK_PRECISION_DOUBLE ? sizeof(double) : sizeof(float);
    const size_t n = (size_t)o->n, device = (size_t)o->cuda_device;
    if ((st = tk_device_array_check(d_matrices, count * n * n * elem, (int)device, "matrices")) != TK_OK ||
        (st = tk_device_array_check(d_out->values, count * 2 * n * elem, (int)device, "values")) != TK_OK ||
        (d_out->vectors &&
         (st = tk_device_array_check(d_out->vectors, count * 2 * n * n * elem, (int)device, "vectors")) != TK_OK) ||
        (st = tk_device_array_check(d_out->status, count, (int)device, "status")) != TK_OK)
        return st;
    if ((st = tk_cuda_stream_wait(cuda_stream, "eig")) != TK_OK) return st;
    double kernel_ms = 0;
    if (count)
        st = tk_eig_cuda_execute_device(plan->cuda[0], count, d_matrices, d_out->values, d_out->vectors,
                                        d_out->status, &kernel_ms);
    if (timing) timing->kernel_ms = kernel_ms, timing->total_ms = tk_now_ms() - t0;
    return st;
}

tk_status tk_eig_solve(const tk_eig_options *o, size_t count, const void *matrices, tk_eig_result *out,
                       tk_timing *timing, size_t *num_failed)
{
    tk_clear_error();
    const double t0 = tk_now_ms();
    tk_status st = validate_options(o);
    if (st == TK_OK) st = validate_batch(o, count, matrices, out);
    if (st != TK_OK) return st;
    if (num_failed) *num_failed = 0;
    if (!count) {
        if (timing) timing->kernel_ms = timing->total_ms = timing->setup_ms = 0;
        return TK_OK;
    }
    tk_eig_plan *plan = NULL;
    if ((st = plan_create(o, count, out->vectors != NULL, &plan)) != TK_OK) return st;
    const double setup_ms = tk_now_ms() - t0;
    double kernel_ms = 0;
    st = plan_run(plan, count, matrices, out, &kernel_ms, num_failed);
    tk_eig_plan_destroy(plan);
    if (timing) {
        timing->kernel_ms = kernel_ms;
        timing->setup_ms = setup_ms;
        timing->total_ms = tk_now_ms() - t0;
    }
    return st;
}
