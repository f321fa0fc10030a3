/* The fixels plan: the checked options, the SH functions at the direction set and the
 * climb's tensor map, built once and read by every execute. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/plan_hand_out.h"
#include "common/timer.h"
#include "fixels_internal.h"
#include "tk_bench_hooks.h"
#include "tracking/tracking_tensor.h"

void tk_fixels_options_init(tk_fixels_options *o, int lmax)
{
    /* fod2fixel's defaults (FMLS_*_DEFAULT of fmls.h); every other field zero */
    *o = (tk_fixels_options){.lmax = lmax,
                             .basis = TK_SH_TOURNIER,
                             .peak_value_threshold = 0.1,
                             .lobe_merge_ratio = 1.0,
                             .backend = TK_BACKEND_CPU};
}

static tk_status check_options(const tk_fixels_options *o)
{
    if (!o) return tk_set_error(TK_ERR_ARGUMENT, "no options given");
    if (o->lmax < 2 || o->lmax > TK_SH_MAX_LMAX || o->lmax % 2)
        return tk_set_error(TK_ERR_ARGUMENT, "lmax must be even, from 2 to %d, got %d", TK_SH_MAX_LMAX, o->lmax);
    if (o->basis != TK_SH_TOURNIER && o->basis != TK_SH_DESCOTEAUX)
        return tk_set_error(TK_ERR_ARGUMENT, "unknown SH basis %d", (int)o->basis);
    if (!(o->integral_threshold >= 0) || !isfinite(o->integral_threshold))
        return tk_set_error(TK_ERR_ARGUMENT, "the integral threshold must be finite and >= 0");
    if (!(o->peak_value_threshold >= 0) || !isfinite(o->peak_value_threshold))
        return tk_set_error(TK_ERR_ARGUMENT, "the peak value threshold must be finite and >= 0");
    if (!(o->lobe_merge_ratio >= 0 && o->lobe_merge_ratio <= 1))
        return tk_set_error(TK_ERR_ARGUMENT, "the lobe merge ratio must be from 0 to 1");
    if (o->max_fixels < 0 || o->max_fixels > TK_FIXELS_MAX)
        return tk_set_error(TK_ERR_ARGUMENT, "the most fixels per voxel must be from 0 (no limit) to %d, got %d",
                            TK_FIXELS_MAX, o->max_fixels);
    if (o->directions != 0 && o->directions != TK_FIXELS_DIRECTIONS && o->directions != TK_FIXELS_DIRECTIONS_DENSE)
        return tk_set_error(TK_ERR_ARGUMENT, "the direction set must have %d (fod2fixel's) or %d directions, got %d",
                            TK_FIXELS_DIRECTIONS, TK_FIXELS_DIRECTIONS_DENSE, o->directions);
    if (o->backend != TK_BACKEND_CPU && o->backend != TK_BACKEND_OMP && o->backend != TK_BACKEND_CUDA)
        return tk_set_error(TK_ERR_ARGUMENT, "unknown fixels backend %d", (int)o->backend);
    if (!tk_device_count_checked(o->cuda_device_count, "cuda_device_count")) return TK_ERR_ARGUMENT;
    return TK_OK;
}

/* The CUDA states, one a device (each sizes its chunks to its own free memory). */
static tk_status create_cuda_states(tk_fixels_plan *p)
{
    const int devices = tk_device_count_checked(p->opts.cuda_device_count, "cuda_device_count");
    tk_status s = tk_cuda_require_devices(p->opts.cuda_device, devices);
    for (int d = 0; d < devices && s == TK_OK; ++d) {
        s = tk_fixels_cuda_create(p, p->opts.cuda_device + d, &p->cuda[d]);
        if (s == TK_OK) p->num_devices = d + 1;
    }
    return s;
}

static tk_status build(tk_fixels_plan *p)
{
    const int k = p->k, n = p->opts.directions ? p->opts.directions : TK_FIXELS_DIRECTIONS;
    const double *dirs = NULL, *weights = NULL;
    tk_status s = tk_fixels_direction_set(n, &dirs, &weights);
    if (s != TK_OK) return s;
    p->basis = malloc(sizeof(double) * (size_t)n * k);
    p->map = malloc(sizeof(double) * (size_t)k * k);
    double *row = malloc(sizeof(double) * (size_t)k * k);
    if (!p->basis || !p->map || !row) {
        free(row);
        return tk_set_error(TK_ERR_MEMORY, "out of memory for a fixels plan");
    }
    for (int d = 0; d < n && s == TK_OK; ++d) {
        s = tk_sh_eval(p->opts.basis, p->opts.legacy, p->opts.lmax, dirs + 3 * d, row);
        for (int c = 0; c < k; ++c) p->basis[(size_t)c * n + d] = row[c];
    }
    if (s == TK_OK) s = tk_sh_to_tensor_map(p->opts.basis, p->opts.legacy, p->opts.lmax, row);
    /* column-major, as the tracker's climb reads it (tracking_peak.h) */
    if (s == TK_OK)
        for (int r = 0; r < k; ++r)
            for (int c = 0; c < k; ++c) p->map[(size_t)c * k + r] = row[(size_t)r * k + c];
    free(row);
    if (s == TK_OK && p->opts.lmax <= TK_TRACK_ROWS_MAX_ORDER)
        tk_tracking_rows_recipe(p->opts.lmax, p->rows_src, p->rows_weight);
    const tk_fixels_options *o = &p->opts;
    p->view = (tk_fixels_view){.n = n,
                               .dirs = (const double(*)[3])dirs,
                               .weights = weights,
                               .adj = tk_fixels_adjacency(n),
                               .basis = p->basis,
                               .map = p->map,
                               .rows_src = (const int(*)[6])p->rows_src,
                               .rows_weight = (const double(*)[6])p->rows_weight,
                               .k = k,
                               .lmax = o->lmax,
                               .slots = p->slots,
                               .max_lobes = n,
                               .max_fixels = o->max_fixels,
                               .integral_threshold = o->integral_threshold,
                               .peak_value_threshold = o->peak_value_threshold,
                               .lobe_merge_ratio = o->lobe_merge_ratio};
    return s;
}

tk_status tk_fixels_plan_create(const tk_fixels_options *opts, tk_fixels_plan **plan)
{
    tk_clear_error();
    if (!plan) return tk_set_error(TK_ERR_ARGUMENT, "no place for the plan given");
    *plan = NULL;
    tk_status s = check_options(opts);
    if (s != TK_OK) return s;
    tk_fixels_plan *p = calloc(1, sizeof *p);
    if (!p) return tk_set_error(TK_ERR_MEMORY, "out of memory for a fixels plan");
    p->opts = *opts;
    p->k = (int)tk_sh_num_coeffs(opts->lmax);
    p->slots = opts->max_fixels > 0 ? opts->max_fixels : TK_FIXELS_MAX;
    s = build(p);
    if (s == TK_OK && opts->backend == TK_BACKEND_CUDA) s = create_cuda_states(p);
    return TK_PLAN_HAND_OUT(s, p, tk_fixels_plan_destroy, plan);
}

int tk_fixels_plan_slots(const tk_fixels_plan *plan)
{
    return plan ? plan->slots : 0;
}

int tk_fixels_plan_directions(const tk_fixels_plan *plan)
{
    return plan ? plan->view.n : 0;
}

tk_status tk_fixels_plan_set_one_thread(tk_fixels_plan *plan, int on)
{
    if (!plan || !plan->num_devices) return tk_set_error(TK_ERR_ARGUMENT, "not a cuda fixels plan");
    for (int d = 0; d < plan->num_devices; ++d) tk_fixels_cuda_set_one_thread(plan->cuda[d], on);
    return TK_OK;
}

tk_status tk_fixels_plan_set_fused(tk_fixels_plan *plan, int on)
{
    if (!plan || !plan->num_devices) return tk_set_error(TK_ERR_ARGUMENT, "not a cuda fixels plan");
    for (int d = 0; d < plan->num_devices; ++d) tk_fixels_cuda_set_fused(plan->cuda[d], on);
    return TK_OK;
}

tk_status tk_fixels_plan_set_slim(tk_fixels_plan *plan, int on)
{
    if (!plan || !plan->num_devices) return tk_set_error(TK_ERR_ARGUMENT, "not a cuda fixels plan");
    for (int d = 0; d < plan->num_devices; ++d) tk_fixels_cuda_set_slim(plan->cuda[d], on);
    return TK_OK;
}

tk_status tk_fixels_plan_set_split(tk_fixels_plan *plan, int on)
{
    if (!plan || !plan->num_devices) return tk_set_error(TK_ERR_ARGUMENT, "not a cuda fixels plan");
    for (int d = 0; d < plan->num_devices; ++d) tk_fixels_cuda_set_split(plan->cuda[d], on);
    return TK_OK;
}

size_t tk_fixels_plan_redone(const tk_fixels_plan *plan)
{
    size_t n = 0;
    for (int d = 0; plan && d < plan->num_devices; ++d) n += tk_fixels_cuda_redone(plan->cuda[d]);
    return n;
}

void tk_fixels_plan_destroy(tk_fixels_plan *plan)
{
    if (!plan) return;
    for (int d = 0; d < plan->num_devices; ++d) tk_fixels_cuda_destroy(plan->cuda[d]);
    free(plan->basis);
    free(plan->map);
    free(plan);
}

/* One execute's arrays and each device's answers (run_device). */
typedef struct {
    const tk_fixels_plan *plan;
    const float *sh;
    const uint8_t *mask;
    const tk_fixels_output *out;
    size_t bad[TK_MAX_CUDA_DEVICES], truncated[TK_MAX_CUDA_DEVICES];
    double kernel_ms[TK_MAX_CUDA_DEVICES];
} fixels_devices_run;

/* Device `index`'s share of an execute: its voxels' slice of every array. */
static tk_status run_device(void *ctx, int index, size_t first, size_t count)
{
    fixels_devices_run *r = ctx;
    const size_t k = (size_t)r->plan->k, S = (size_t)r->plan->slots;
    const tk_fixels_output *all = r->out;
    tk_fixels_output mine = {
        .count = all->count + first,
        .afd = all->afd ? all->afd + first * S : NULL,
        .peak_amp = all->peak_amp ? all->peak_amp + first * S : NULL,
        .mean_dir = all->mean_dir ? all->mean_dir + first * S * 3 : NULL,
        .peak_dir = all->peak_dir ? all->peak_dir + first * S * 3 : NULL,
        .lobe_of_dir = all->lobe_of_dir ? all->lobe_of_dir + first * (size_t)r->plan->view.n : NULL};
    const tk_status s = tk_fixels_cuda_execute(r->plan->cuda[index], count, r->sh + first * k,
                                               r->mask ? r->mask + first : NULL, &mine, &r->kernel_ms[index]);
    r->bad[index] = mine.bad_voxels, r->truncated[index] = mine.truncated;
    return s;
}

/* The CUDA execute over the plan's devices: the counts summed, the kernel time the longest
 * device's (they run at once). */
static tk_status cuda_execute(const tk_fixels_plan *plan, size_t num_voxels, const float *sh, const uint8_t *mask,
                              tk_fixels_output *out, double *kernel_ms)
{
    fixels_devices_run r = {.plan = plan, .sh = sh, .mask = mask, .out = out};
    const tk_status s = tk_run_on_devices(plan->opts.cuda_device, plan->num_devices, num_voxels, run_device, &r);
    out->bad_voxels = out->truncated = 0;
    for (int d = 0; d < plan->num_devices; ++d) {
        out->bad_voxels += r.bad[d], out->truncated += r.truncated[d];
        if (r.kernel_ms[d] > *kernel_ms) *kernel_ms = r.kernel_ms[d];
    }
    return s;
}

tk_status tk_fixels_plan_execute(const tk_fixels_plan *plan, size_t num_voxels, const float *sh, const uint8_t *mask,
                                 tk_fixels_output *out, tk_timing *timing)
{
    tk_clear_error();
    const double start_ms = tk_now_ms();
    if (timing) memset(timing, 0, sizeof *timing);
    if (!plan) return tk_set_error(TK_ERR_ARGUMENT, "no plan given");
    if (!out || !out->count) return tk_set_error(TK_ERR_ARGUMENT, "no output counts given");
    if (num_voxels && !sh) return tk_set_error(TK_ERR_ARGUMENT, "no SH data given");
    double kernel_ms = 0;
    tk_status s;
    if (plan->num_devices) {
        s = cuda_execute(plan, num_voxels, sh, mask, out, &kernel_ms);
    } else {
        s = tk_fixels_cpu_execute(plan, num_voxels, sh, mask, out);
        kernel_ms = tk_now_ms() - start_ms;
    }
    if (timing) timing->total_ms = tk_now_ms() - start_ms, timing->kernel_ms = kernel_ms;
    return s;
}
