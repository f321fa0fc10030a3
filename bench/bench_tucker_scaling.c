/* tk-bench tucker --gpus: strong and weak scaling of FastTucker over the GPUs of one host
 * (bench_tucker_scaling.h).  Time per iteration = factor + core pass (CUDA events, the
 * slowest GPU's, NCCL included), mean over the iterations after the first. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench_common.h"
#include "bench_json.h"
#include "bench_tucker_scaling.h"
#include "cli.h"
#include "tk_bench_hooks.h"

/* Issue 27's goals. */
#define GOAL_STRONG_2 1.8
#define GOAL_STRONG_4 3.2
#define GOAL_WEAK_EFFICIENCY 0.85

typedef struct {
    int ran;
    double setup_s, iter_s, rmse;
} scaling_result;

tk_tucker_metrics bench_tucker_test_metrics(const tk_tucker_solver *s, const tk_tucker_model *init,
                                            const tk_tucker_coo *test)
{
    tk_tucker_metrics met;
    memset(&met, 0, sizeof met);
    tk_tucker_model m;
    if (tk_tucker_model_copy(&m, init) != TK_OK) return met;
    if (tk_tucker_solver_model(s, &m) != TK_OK || tk_tucker_evaluate(&m, test, 0, 0, &met) != TK_OK)
        memset(&met, 0, sizeof met);
    tk_tucker_model_free(&m);
    return met;
}

static void run_count(const bench_tucker_scaling *b, int gpus, const tk_tucker_coo *train, const tk_tucker_coo *test,
                      const tk_tucker_model *init, scaling_result *r)
{
    memset(r, 0, sizeof *r);
    tk_tucker_options o = b->solver;
    o.backend = TK_BACKEND_CUDA;
    o.cuda_device_count = gpus;
    tk_tucker_solver *s = NULL;
    if (tk_tucker_solver_create(&o, train, init, &s) != TK_OK) {
        printf("%d GPU(s): skipped: %s\n", gpus, tk_last_error());
        return;
    }
    tk_timing tf, tc;
    tk_tucker_solver_timing(s, &tf, NULL);
    r->setup_s = tf.setup_ms / 1e3;
    double sum = 0;
    long counted = 0;
    tk_status st = TK_OK;
    for (long it = 0; it < b->iters && st == TK_OK; ++it) {
        if ((st = tk_tucker_update_factors(s)) != TK_OK || (st = tk_tucker_update_core(s)) != TK_OK) break;
        tk_tucker_solver_timing(s, &tf, &tc);
        if (it > 0 || b->iters == 1) sum += (tf.kernel_ms + tc.kernel_ms) / 1e3, ++counted;
    }
    if (st != TK_OK) {
        printf("%d GPU(s): failed: %s\n", gpus, tk_last_error());
        tk_tucker_solver_destroy(s);
        return;
    }
    r->rmse = bench_tucker_test_metrics(s, init, test).rmse;
    tk_tucker_solver_destroy(s);
    r->ran = 1;
    r->iter_s = sum / (double)counted;
}

static const char *strong_goal(int gpus, double speedup)
{
    if (gpus == 2) return bench_verdict(speedup >= GOAL_STRONG_2);
    if (gpus == 4) return bench_verdict(speedup >= GOAL_STRONG_4);
    return "-";
}

/* One row: strong scaling's speed-up (x) or weak scaling's efficiency (%), against the first count. */
static void print_row(int weak, int gpus, size_t nnz, const scaling_result *r, double ratio, const char *verdict)
{
    printf("%-6s %4d %12zu %9.2f %10.4f %11.6f %8.2f%s %8s\n", weak ? "weak" : "strong", gpus, nnz, r->setup_s,
           r->iter_s, r->rmse, weak ? 100 * ratio : ratio, weak ? "%" : "x", verdict);
    tk_bench_json_row("scaling"), tk_bench_json_str("kind", weak ? "weak" : "strong"), tk_bench_json_num("gpus", gpus);
    tk_bench_json_num("train_nnz", (double)nnz), tk_bench_json_num("setup_s", r->setup_s);
    tk_bench_json_num("iteration_s", r->iter_s), tk_bench_json_num("test_rmse", r->rmse);
    tk_bench_json_num(weak ? "efficiency" : "speedup", ratio);
    fflush(stdout);
}

/* Weak scaling: g / g0 times the entries and the first mode's size (g0: the first count,
 * the baseline), so each GPU's share is the baseline's. */
static void run_weak(const bench_tucker_scaling *b, int gpus, const scaling_result *base)
{
    tk_tucker_synth_options so = b->synth;
    const double scale = (double)gpus / (double)b->gpus[0];
    so.nnz = (size_t)((double)so.nnz * scale);
    so.dims[0] = (uint32_t)((double)so.dims[0] * scale);
    tk_tucker_coo all, train, test;
    if (tk_tucker_synth(&so, &all, NULL) != TK_OK ||
        tk_tucker_coo_split(&all, b->test_fraction, 2, &train, &test) != TK_OK) {
        printf("weak %d GPUs: skipped: %s\n", gpus, tk_last_error());
        return;
    }
    tk_tucker_coo_free(&all);
    tk_tucker_model init;
    if (tk_tucker_model_alloc(&init, so.order, so.dims, so.rank_j, so.rank_r) == TK_OK) {
        tk_tucker_model_init(&init, 3, 0);
        scaling_result r;
        run_count(b, gpus, &train, &test, &init, &r);
        if (r.ran) {
            double eff = base->iter_s / r.iter_s;
            print_row(1, gpus, train.nnz, &r, eff,
                      bench_verdict(eff >= GOAL_WEAK_EFFICIENCY));
        }
        tk_tucker_model_free(&init);
    }
    tk_tucker_coo_free(&train);
    tk_tucker_coo_free(&test);
}

static void run_allreduce(const bench_tucker_scaling *b)
{
    const size_t sizes[] = {(size_t)b->synth.rank_j * (size_t)b->synth.rank_r * sizeof(float), 64u << 20, 1u << 30};
    printf("# NCCL all-reduce (float sum, in place, one thread driving all GPUs; median of 10 after a warm-up;\n"
           "# bus bandwidth = 2 (g - 1) / g x bytes / time, as nccl-tests prints it)\n");
    printf("%-9s %4s %12s %10s %10s\n", "allreduce", "gpus", "bytes", "ms", "bus_GB/s");
    for (int k = 0; k < b->count; ++k) {
        int g = (int)b->gpus[k];
        if (g < 2) continue;
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; ++i) {
            double ms = 0, gbps = 0;
            if (tk_nccl_allreduce_measure(g, sizes[i], 10, &ms, &gbps) != TK_OK) {
                printf("allreduce %d GPUs: %s\n", g, tk_last_error());
                break;
            }
            printf("%-9s %4d %12zu %10.4f %10.1f\n", "allreduce", g, sizes[i], ms, gbps);
            tk_bench_json_row("allreduce"), tk_bench_json_num("gpus", g), tk_bench_json_num("bytes", (double)sizes[i]);
            tk_bench_json_num("ms", ms), tk_bench_json_num("bus_gbps", gbps);
        }
    }
}

void bench_tucker_scaling_run(const bench_tucker_scaling *b, const tk_tucker_coo *train, const tk_tucker_coo *test,
                              const tk_tucker_model *init)
{
    if (b->count == 0) return;
    printf("# scaling over GPUs (cuda, NCCL): s per iteration = factor + core pass of the slowest GPU;\n"
           "# goals (issue 27): strong %.1fx on 2 and %.1fx on 4 GPUs; weak efficiency >= %.0f%%\n", GOAL_STRONG_2,
           GOAL_STRONG_4, 100 * GOAL_WEAK_EFFICIENCY);
    printf("%-6s %4s %12s %9s %10s %11s %9s %8s\n", "kind", "gpus", "train_nnz", "setup_s", "iter_s", "test_rmse",
           "vs_first", "goal");
    tk_bench_json_reference("goal strong scaling 2 GPUs", GOAL_STRONG_2, "x", "issue 27");
    tk_bench_json_reference("goal strong scaling 4 GPUs", GOAL_STRONG_4, "x", "issue 27");
    tk_bench_json_reference("goal weak scaling efficiency", GOAL_WEAK_EFFICIENCY, "fraction", "issue 27");
    scaling_result first = {0};
    for (int k = 0; k < b->count; ++k) {
        scaling_result r;
        run_count(b, (int)b->gpus[k], train, test, init, &r);
        if (!r.ran) continue;
        if (!first.ran) first = r;
        double speedup = first.iter_s / r.iter_s;
        print_row(0, (int)b->gpus[k], train->nnz, &r, speedup, strong_goal((int)b->gpus[k], speedup));
    }
    if (b->weak && first.ran) {
        for (int k = 1; k < b->count; ++k) run_weak(b, (int)b->gpus[k], &first);
    }
    if (b->allreduce) run_allreduce(b);
}
