/* The peak finder's plan: the checked options, the tables of their (lmax, basis), and on CUDA
 * the device state, built once and reused by every execute; the one-shot calls build one,
 * run it and free it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/device_arrays.h"
#include "common/plan_hand_out.h"
#include "common/timer.h"
#include "fibers_plan.h"

void tk_fibers_options_init(tk_fibers_options *o, int lmax)
{
    /* sh2peaks' defaults: three peaks, no thresholds; every other field zero */
    *o = (tk_fibers_options){.lmax = lmax, .basis = TK_SH_TOURNIER, .num_peaks = 3, .backend = TK_BACKEND_CPU};
}

/* The options a plan accepts (lmax and basis: tk_fibers_tables_create). */
static tk_status check_options(const tk_fibers_options *o)
{
    if (!o) return tk_set_error(TK_ERR_ARGUMENT, "no options given");
    if (o->num_peaks < 1 || o->num_peaks > TK_FIBERS_MAX_CANDIDATES)
        return tk_set_error(TK_ERR_ARGUMENT, "the number of peaks must be from 1 to %d, got %d",
                            TK_FIBERS_MAX_CANDIDATES, o->num_peaks);
    if (!(o->relative_threshold >= 0 && o->relative_threshold <= 1))
        return tk_set_error(TK_ERR_ARGUMENT, "the relative threshold must be from 0 to 1");
    if (!(o->min_separation_deg >= 0 && o->min_separation_deg <= 90))
        return tk_set_error(TK_ERR_ARGUMENT, "the minimum separation must be from 0 to 90 degrees");
    if (isnan(o->threshold)) return tk_set_error(TK_ERR_ARGUMENT, "the threshold is NaN");
    if (o->backend != TK_BACKEND_CPU && o->backend != TK_BACKEND_OMP && o->backend != TK_BACKEND_CUDA)
        return tk_set_error(TK_ERR_ARGUMENT, "unknown fiber backend %d", (int)o->backend);
    if (!tk_device_count_checked(o->cuda_device_count, "cuda_device_count")) return TK_ERR_ARGUMENT;
    return TK_OK;
}

/* The CUDA states, one a device: each sized for its share of max_voxels (an execute gives
 * each device a contiguous share of its voxels, tk_run_on_devices). */
static tk_status create_cuda_states(tk_fibers_plan *p, size_t max_voxels)
{
    const int devices = tk_device_count_checked(p->opts.cuda_device_count, "cuda_device_count");
    tk_status s = tk_cuda_require_devices(p->opts.cuda_device, devices);
    size_t first;
    const size_t share = tk_device_range(max_voxels, devices, 0, &first); /* the largest share */
    for (int d = 0; d < devices && s == TK_OK; ++d) {
        tk_fibers_options one = p->opts;
        one.cuda_device = p->opts.cuda_device + d, one.cuda_device_count = 1;
        s = tk_fibers_cuda_create(&p->tables, &one, share, &p->cuda[d]);
        if (s == TK_OK) p->num_devices = d + 1;
    }
    return s;
}

tk_status tk_fibers_plan_create(const tk_fibers_options *opts, size_t max_voxels, tk_fibers_plan **plan)
{
    tk_clear_error();
    if (!plan) return tk_set_error(TK_ERR_ARGUMENT, "no place for the plan given");
    *plan = NULL;
    tk_status s = check_options(opts);
    if (s != TK_OK) return s;
    tk_fibers_plan *p = calloc(1, sizeof *p);
    if (!p) return tk_set_error(TK_ERR_MEMORY, "out of memory for a peak-finder plan");
    p->opts = *opts, p->max_voxels = max_voxels;
    s = tk_fibers_tables_create(opts->lmax, opts->basis, opts->legacy, &p->tables);
    if (s == TK_OK && opts->backend == TK_BACKEND_CUDA) s = create_cuda_states(p, max_voxels);
    return TK_PLAN_HAND_OUT(s, p, tk_fibers_plan_destroy, plan);
}

void tk_fibers_plan_destroy(tk_fibers_plan *plan)
{
    if (!plan) return;
    for (int d = 0; d < plan->num_devices; ++d) tk_fibers_cuda_destroy(plan->cuda[d]);
    tk_fibers_tables_free(&plan->tables);
    free(plan);
}

/* One execute's arrays and each device's answers (run_device). */
typedef struct {
    tk_fibers_plan *plan;
    const float *sh;
    const uint8_t *mask;
    float *directions, *amplitudes;
    size_t bad[TK_MAX_CUDA_DEVICES];
    double kernel_ms[TK_MAX_CUDA_DEVICES];
} fibers_devices_run;

/* Device `index`'s share of an execute: its voxels' slice of every array. */
static tk_status run_device(void *ctx, int index, size_t first, size_t count)
{
    fibers_devices_run *r = ctx;
    const size_t k = (size_t)r->plan->tables.k, np = (size_t)r->plan->opts.num_peaks;
    return tk_fibers_cuda_execute(r->plan->cuda[index], count, r->sh + first * k, r->mask ? r->mask + first : NULL,
                                  r->directions ? r->directions + first * np * 3 : NULL,
                                  r->amplitudes ? r->amplitudes + first * np : NULL, &r->bad[index],
                                  &r->kernel_ms[index]);
}

/* The CUDA execute over the plan's devices: the bad voxels summed, the kernel time the
 * longest device's (they run at once). */
static tk_status cuda_execute(tk_fibers_plan *plan, size_t num_voxels, const float *sh, const uint8_t *mask,
                              float *directions, float *amplitudes, size_t *bad_voxels, double *kernel_ms)
{
    fibers_devices_run r = {.plan = plan, .sh = sh, .mask = mask, .directions = directions, .amplitudes = amplitudes};
    const tk_status s = tk_run_on_devices(plan->opts.cuda_device, plan->num_devices, num_voxels, run_device, &r);
    size_t bad = 0;
    for (int d = 0; d < plan->num_devices; ++d) {
        bad += r.bad[d];
        if (r.kernel_ms[d] > *kernel_ms) *kernel_ms = r.kernel_ms[d];
    }
    if (s == TK_OK && bad_voxels) *bad_voxels = bad;
    return s;
}

tk_status tk_fibers_plan_execute_counted(tk_fibers_plan *plan, size_t num_voxels, const float *sh, const uint8_t *mask,
                                         float *directions, float *amplitudes, size_t *bad_voxels, tk_timing *timing,
                                         tk_fibers_work *work)
{
    tk_clear_error();
    const double start_ms = tk_now_ms();
    if (timing) memset(timing, 0, sizeof *timing);
    if (work) memset(work, 0, sizeof *work);
    if (bad_voxels) *bad_voxels = 0;
    if (!plan) return tk_set_error(TK_ERR_ARGUMENT, "no plan given");
    if (num_voxels && !sh) return tk_set_error(TK_ERR_ARGUMENT, "no SH data given");
    double kernel_ms = 0;
    tk_status s;
    if (plan->num_devices)
        s = cuda_execute(plan, num_voxels, sh, mask, directions, amplitudes, bad_voxels, &kernel_ms);
    else {
        s = tk_fibers_cpu_execute(&plan->tables, &plan->opts, num_voxels, sh, mask, directions, amplitudes,
                                  bad_voxels, work);
        kernel_ms = tk_now_ms() - start_ms;
    }
    if (timing) timing->total_ms = tk_now_ms() - start_ms, timing->kernel_ms = kernel_ms;
    return s;
}

tk_status tk_fibers_plan_execute(tk_fibers_plan *plan, size_t num_voxels, const float *sh, const uint8_t *mask,
                                 float *directions, float *amplitudes, size_t *bad_voxels, tk_timing *timing)
{
    return tk_fibers_plan_execute_counted(plan, num_voxels, sh, mask, directions, amplitudes, bad_voxels, timing,
                                          NULL);
}

tk_status tk_fibers_plan_execute_device(tk_fibers_plan *plan, size_t num_voxels, const float *d_sh,
                                        const uint8_t *d_mask, float *d_directions, float *d_amplitudes,
                                        size_t *bad_voxels, void *cuda_stream, tk_timing *timing)
{
    tk_clear_error();
    const double start_ms = tk_now_ms();
    if (timing) memset(timing, 0, sizeof *timing);
    if (bad_voxels) *bad_voxels = 0;
    if (!plan) return tk_set_error(TK_ERR_ARGUMENT, "no plan given");
    tk_status s = tk_device_arrays_plan_check(plan->num_devices);
    if (s != TK_OK) return s;
    const int device = plan->opts.cuda_device;
    const size_t k = (size_t)plan->tables.k, np = (size_t)plan->opts.num_peaks;
    if ((s = tk_device_array_check(d_sh, num_voxels * k * sizeof(float), device, "sh")) != TK_OK ||
        (d_mask && (s = tk_device_array_check(d_mask, num_voxels, device, "mask")) != TK_OK) ||
        (d_directions &&
         (s = tk_device_array_check(d_directions, num_voxels * np * 3 * sizeof(float), device, "directions")) != TK_OK) ||
        (d_amplitudes &&
         (s = tk_device_array_check(d_amplitudes, num_voxels * np * sizeof(float), device, "amplitudes")) != TK_OK))
        return s;
    if ((s = tk_cuda_stream_wait(cuda_stream, "fiber directions")) != TK_OK) return s;
    double kernel_ms = 0;
    s = tk_fibers_cuda_execute_device(plan->cuda[0], num_voxels, d_sh, d_mask, d_directions, d_amplitudes, bad_voxels,
                                      &kernel_ms);
    if (timing) timing->total_ms = tk_now_ms() - start_ms, timing->kernel_ms = kernel_ms;
    return s;
}

tk_status tk_fibers_find_counted(const tk_fibers_options *opts, size_t num_voxels, const float *sh,
                                 const uint8_t *mask, float *directions, float *amplitudes, size_t *bad_voxels,
                                 tk_timing *timing, tk_fibers_work *work)
{
    const double start_ms = tk_now_ms();
    if (timing) memset(timing, 0, sizeof *timing);
    if (work) memset(work, 0, sizeof *work);
    tk_fibers_plan *plan = NULL;
    tk_status s = tk_fibers_plan_create(opts, num_voxels, &plan);
    const double setup_ms = tk_now_ms() - start_ms;
    if (s == TK_OK)
        s = tk_fibers_plan_execute_counted(plan, num_voxels, sh, mask, directions, amplitudes, bad_voxels, timing,
                                           work);
    tk_fibers_plan_destroy(plan);
    /* the one-shot call's total includes building the plan (setup_ms) */
    if (timing) timing->setup_ms = setup_ms, timing->total_ms = tk_now_ms() - start_ms;
    return s;
}

tk_status tk_fibers_find_timed(const tk_fibers_options *opts, size_t num_voxels, const float *sh, const uint8_t *mask,
                               float *directions, float *amplitudes, size_t *bad_voxels, tk_timing *timing)
{
    return tk_fibers_find_counted(opts, num_voxels, sh, mask, directions, amplitudes, bad_voxels, timing, NULL);
}

tk_status tk_fibers_find(const tk_fibers_options *opts, size_t num_voxels, const float *sh, const uint8_t *mask,
                         float *directions, float *amplitudes, size_t *bad_voxels)
{
    return tk_fibers_find_counted(opts, num_voxels, sh, mask, directions, amplitudes, bad_voxels, NULL, NULL);
}
