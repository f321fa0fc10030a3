/* A run: the inputs checked, the seeds tracked chunk by chunk (the streamlines of a chunk in
 * parallel on the omp backend, each from its own random stream), and each chunk handed to the
 * sink in seed order, so that the output is the same for any thread count and chunk size and
 * the memory held is one chunk's. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "common/avx2_copy.h"
#include "common/timer.h"
#include "tracking_internal.h"
#include "tracking_run.h"
#include "tracking_streamline.h"

#ifdef TK_TRACK_AVX2_TU
int tk_tracking_streamline_avx2(const tk_tracking_field *f, const double *seed, tk_philox *rng, tk_tracking_work *w,
                                size_t *n);
#endif

/* Whether the CPU threads grow their streamlines with the AVX2 build of the growth
 * (tracking_streamline_avx2.c: the same bits, faster): where it was compiled, the CPU has AVX2
 * and TK_TRACK_NO_AVX2 is unset or 0 (the baseline build, for A/B runs on one binary). */
static int tk_tracking_use_avx2(void)
{
#ifdef TK_TRACK_AVX2_TU
    return tk_avx2_copy_enabled("TK_TRACK_NO_AVX2");
#else
    return 0;
#endif
}

#ifndef TK_TRACK_AVX2_TU
/* no AVX2 build: the baseline growth only */
#define tk_tracking_streamline_avx2 tk_tracking_streamline
#endif

/* Whether a CPU run tracks each chunk's seeds in the spatial order of tk_tracking_seed_order
 * (the same output; TK_TRACK_SEED_ORDER=0: in seed order, for A/B runs on one binary). */
static int tk_tracking_use_seed_order(void)
{
    const char *env = getenv("TK_TRACK_SEED_ORDER");
    return !(env && strcmp(env, "0") == 0);
}

/* The threads an execute of plan runs on the CPU. */
static int plan_threads(const tk_tracking_plan *plan)
{
    int threads = 1;
#ifdef _OPENMP
    if (plan->opts.backend == TK_BACKEND_OMP) threads = plan->opts.num_threads > 0 ? plan->opts.num_threads : omp_get_max_threads();
#endif
    return threads;
}

static tk_status check_inputs(const tk_tracking_plan *plan, const float *sh, size_t sh_values,
                              const tk_tracking_regions *r, const tk_tracking_seeds *seeds, tk_tracking_sink sink)
{
    if (!plan) return tk_set_error(TK_ERR_ARGUMENT, "no tracking plan given");
    if (!sh) return tk_set_error(TK_ERR_ARGUMENT, "no SH volume given");
    if (!sink) return tk_set_error(TK_ERR_ARGUMENT, "no sink for the streamlines given");
    const size_t *d = plan->grid.dims, n = d[0] * d[1] * d[2];
    if (sh_values != n * (size_t)plan->k)
        return tk_set_error(TK_ERR_ARGUMENT,
                            "the SH volume holds %zu values, but the %zu x %zu x %zu grid at lmax %d needs %zu", sh_values,
                            d[0], d[1], d[2], plan->opts.lmax, n * (size_t)plan->k);
    if (r && (r->stop_mask || r->exclude || r->num_include) && r->mask_voxels != n)
        return tk_set_error(TK_ERR_ARGUMENT, "the region masks hold %zu voxels, but the grid has %zu", r->mask_voxels, n);
    if (r && r->num_include && !r->include) return tk_set_error(TK_ERR_ARGUMENT, "the include regions are missing");
    for (size_t i = 0; r && i < r->num_include; ++i)
        if (!r->include[i]) return tk_set_error(TK_ERR_ARGUMENT, "include region %zu is missing", i);
    if (seeds && seeds->mask && seeds->mask_voxels != n)
        return tk_set_error(TK_ERR_ARGUMENT, "the seed mask holds %zu voxels, but the grid has %zu", seeds->mask_voxels, n);
    /* the volume's own check (non-finite values) is the run's: tk_tracking_volume_prepare on
     * the CPU, on the GPU once it is there for cuda (tracking_cuda.cu: the host's pass over it
     * was, with the upload, the largest host cost of a GPU run) */
    return TK_OK;
}

/* A thread's output within a chunk: its kept streamlines' points, one after another. */
typedef struct {
    tk_tracking_work work;
    float *pts;
    size_t len, cap; /* points */
    tk_tracking_stats stats;
    int failed;
} thread_state;

static int append_points(thread_state *t, const double *p, size_t n)
{
    if (t->len + n > t->cap) {
        size_t cap = t->cap ? t->cap : 4096;
        while (cap < t->len + n) cap *= 2;
        float *grown = realloc(t->pts, cap * 3 * sizeof *grown);
        if (!grown) return 0;
        t->pts = grown, t->cap = cap;
    }
    for (size_t i = 0; i < 3 * n; ++i) t->pts[3 * t->len + i] = (float)p[i];
    t->len += n;
    return 1;
}

/* Per seed of a chunk: which thread kept its streamline (-1: none), where and how long. */
typedef struct {
    int thread;
    size_t offset, count;
} seed_slot;

tk_status tk_tracking_plan_execute(const tk_tracking_plan *plan, const float *sh, size_t sh_values,
                                   const tk_tracking_regions *regions, const tk_tracking_seeds *seeds,
                                   tk_tracking_sink sink, void *user, tk_tracking_stats *stats, tk_timing *timing)
{
    const double t0 = tk_now_ms();
    tk_clear_error();
    if (stats) memset(stats, 0, sizeof *stats);
    if (timing) memset(timing, 0, sizeof *timing);
    tk_status s = check_inputs(plan, sh, sh_values, regions, seeds, sink);
    if (s != TK_OK) return s;
    const int cuda = plan->opts.backend == TK_BACKEND_CUDA;
    const int threads = plan_threads(plan);
    tk_tracking_seed_set set;
    s = tk_tracking_seed_set_init(&set, plan, seeds);
    if (s != TK_OK) return s;
    tk_tracking_volume vol = {.sh = sh};
    if (!cuda && (s = tk_tracking_volume_prepare(plan, sh, sh_values, set.total, threads, &vol)) != TK_OK) {
        tk_tracking_seed_set_free(&set);
        return s;
    }
    const tk_tracking_regions none = {0};
    const tk_tracking_field field = {.plan = plan, .sh = vol.sh, .regions = regions ? regions : &none};
    if (cuda) {
        tk_tracking_stats total = {0};
        double kernel_ms = 0;
        s = tk_tracking_cuda_execute(plan, &field, &set, sink, user, &total, &kernel_ms);
        if (stats) *stats = total;
        tk_tracking_seed_set_free(&set);
        if (timing) timing->total_ms = tk_now_ms() - t0, timing->kernel_ms = kernel_ms;
        return s;
    }
    const size_t chunk = plan->opts.chunk_seeds < set.total ? plan->opts.chunk_seeds : (size_t)set.total;
    thread_state *ts = calloc((size_t)threads, sizeof *ts);
    seed_slot *slots = malloc(chunk * sizeof *slots);
    size_t *out_counts = malloc(chunk * sizeof *out_counts);
    uint64_t *out_index = malloc(chunk * sizeof *out_index);
    size_t *order = malloc(chunk * sizeof *order);
    const int ordered = tk_tracking_use_seed_order();
    tk_tracking_seed_key *keys = ordered ? malloc(chunk * sizeof *keys) : NULL;
    float *out_pts = NULL;
    size_t out_cap = 0;
    if (!ts || !slots || !out_counts || !out_index || !order || (ordered && !keys)) s = tk_set_error(TK_ERR_MEMORY, "out of memory for a tracking chunk");
    for (int t = 0; s == TK_OK && t < threads; ++t) s = tk_tracking_work_init(&ts[t].work, plan, field.regions->num_include);
    tk_tracking_stats total = {0};
    const int avx2 = tk_tracking_use_avx2();
    for (uint64_t c0 = 0; s == TK_OK && c0 < set.total; c0 += chunk) {
        const size_t nc = (size_t)(set.total - c0 < chunk ? set.total - c0 : chunk);
        for (int t = 0; t < threads; ++t) ts[t].len = 0;
        if (ordered) tk_tracking_seed_order(&set, plan, c0, nc, keys, order);
        else
            for (size_t i = 0; i < nc; ++i) order[i] = i;
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(dynamic, 8) if (threads > 1)
#endif
        for (size_t j = 0; j < nc; ++j) {
            const size_t i = order[j];
            int me = 0;
#ifdef _OPENMP
            me = omp_get_thread_num();
#endif
            thread_state *t = &ts[me];
            seed_slot *slot = &slots[i];
            slot->thread = -1, slot->count = 0;
            if (t->failed) continue;
            tk_philox rng;
            tk_philox_init(&rng, plan->opts.rng_seed, c0 + i);
            double seed[3];
            tk_tracking_seed_position(&set, plan, c0 + i, &rng, seed);
            size_t n = 0;
            const int outcome = avx2 ? tk_tracking_streamline_avx2(&field, seed, &rng, &t->work, &n)
                                     : tk_tracking_streamline(&field, seed, &rng, &t->work, &n);
            if (outcome < 0) {
                t->failed = 1;
                continue;
            }
            tk_tracking_tally_seed(&t->stats, outcome);
            if (outcome != TK_TRACK_KEPT) continue;
            slot->offset = t->len;
            if (!append_points(t, t->work.pts, n)) {
                t->failed = 1;
                continue;
            }
            slot->thread = me, slot->count = n;
        }
        size_t kept = 0, points = 0;
        for (int t = 0; t < threads; ++t) {
            if (ts[t].failed) s = tk_set_error(TK_ERR_MEMORY, "out of memory for the streamlines of a chunk");
            points += ts[t].len;
        }
        if (s != TK_OK) break;
        if (points > out_cap) {
            free(out_pts);
            out_cap = points;
            out_pts = malloc(out_cap * 3 * sizeof *out_pts);
            if (!out_pts) {
                out_cap = 0;
                s = tk_set_error(TK_ERR_MEMORY, "out of memory for a chunk of %zu streamline points", points);
                break;
            }
        }
        size_t at = 0;
        for (size_t i = 0; i < nc; ++i) {
            if (slots[i].thread < 0) continue;
            memcpy(out_pts + 3 * at, ts[slots[i].thread].pts + 3 * slots[i].offset, slots[i].count * 3 * sizeof *out_pts);
            out_counts[kept] = slots[i].count, out_index[kept] = c0 + i;
            at += slots[i].count, ++kept;
        }
        const tk_tracking_chunk out = {.num_streamlines = kept,
                                       .num_points = out_counts,
                                       .seed_index = out_index,
                                       .points = out_pts,
                                       .total_points = at,
                                       .seeds_done = c0 + nc,
                                       .seeds_total = set.total};
        s = tk_tracking_hand_to_sink(sink, &out, user);
    }
    for (int t = 0; ts && t < threads; ++t) {
        const tk_tracking_stats *a = &ts[t].stats;
        total.seeds += a->seeds, total.accepted += a->accepted, total.rejected_seed += a->rejected_seed;
        total.rejected_no_propagation += a->rejected_no_propagation, total.rejected_too_short += a->rejected_too_short;
        total.rejected_exclude += a->rejected_exclude, total.rejected_missed_include += a->rejected_missed_include;
        tk_tracking_tally_ends(&total, ts[t].work.ends);
        tk_tracking_work_free(&ts[t].work);
        free(ts[t].pts);
    }
    if (stats) *stats = total;
    free(ts), free(slots), free(out_counts), free(out_index), free(out_pts), free(order), free(keys);
    tk_tracking_seed_set_free(&set);
    tk_tracking_volume_release(&vol);
    if (timing) timing->total_ms = timing->kernel_ms = tk_now_ms() - t0;
    return s;
}

/* ---- collecting a whole run --------------------------------------------------------- */

static tk_status collect_sink(const tk_tracking_chunk *c, void *user)
{
    tk_tracking_result *r = user;
    const size_t ns = r->num_streamlines + c->num_streamlines, np = r->total_points + c->total_points;
    size_t *counts = realloc(r->num_points, (ns ? ns : 1) * sizeof *counts);
    if (counts) r->num_points = counts;
    size_t *offsets = realloc(r->offset, (ns ? ns : 1) * sizeof *offsets);
    if (offsets) r->offset = offsets;
    uint64_t *index = realloc(r->seed_index, (ns ? ns : 1) * sizeof *index);
    if (index) r->seed_index = index;
    float *pts = realloc(r->points, (np ? np : 1) * 3 * sizeof *pts);
    if (pts) r->points = pts;
    if (!counts || !offsets || !index || !pts)
        return tk_set_error(TK_ERR_MEMORY, "out of memory collecting %zu streamlines", ns);
    if (c->total_points) /* an empty chunk's points may be NULL */
        memcpy(r->points + 3 * r->total_points, c->points, c->total_points * 3 * sizeof *pts);
    size_t at = r->total_points;
    for (size_t i = 0; i < c->num_streamlines; ++i) {
        r->num_points[r->num_streamlines + i] = c->num_points[i];
        r->seed_index[r->num_streamlines + i] = c->seed_index[i];
        r->offset[r->num_streamlines + i] = at;
        at += c->num_points[i];
    }
    r->num_streamlines = ns, r->total_points = np;
    return TK_OK;
}

tk_status tk_tracking_collect(const tk_tracking_plan *plan, const float *sh, size_t sh_values,
                              const tk_tracking_regions *regions, const tk_tracking_seeds *seeds,
                              tk_tracking_result *result, tk_tracking_stats *stats)
{
    if (!result) return tk_set_error(TK_ERR_ARGUMENT, "no place for the result given");
    memset(result, 0, sizeof *result);
    return tk_tracking_plan_execute(plan, sh, sh_values, regions, seeds, collect_sink, result, stats, NULL);
}

void tk_tracking_result_free(tk_tracking_result *r)
{
    if (!r) return;
    free(r->num_points), free(r->offset), free(r->seed_index), free(r->points);
    memset(r, 0, sizeof *r);
}
