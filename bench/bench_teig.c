/* tk-bench teig: SS-HOPM throughput, the seed's Table 6.1 set-up and dMRI-sized runs. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "bench_common.h"
#include "bench_json.h"
#include "bench_options.h"
#include "cli.h"
#include "tk_sshopm.h"

/* The seed's Table 6.1(a), GFLOP/s on a Core i7 (4 cores) and a GeForce 9800 GT. */
static double seed_gflops(tk_backend b, tk_impl impl)
{
    static const double table[3][2] = {{0.24, 1.86}, {0.92, 6.85}, {5.95, 131.73}};
    return table[b][impl];
}

typedef struct {
    long tensors, starts, iters, dmri_tensors, threads, gpus;
    int precision_double, run_table, run_dmri;
    int backends[3];
} bench_args;

static void fill_random(void *data, size_t count, int dbl, uint64_t seed)
{
    bench_rng r = bench_rng_seed(seed, 1);
    for (size_t i = 0; i < count; ++i) {
        double v = bench_rng_symmetric(&r);
        if (dbl) ((double *)data)[i] = v;
        else ((float *)data)[i] = (float)v;
    }
}

static const char *impl_name(tk_impl impl) { return impl == TK_IMPL_UNROLLED ? "unrolled" : "general"; }

/* The distinct-pairs path on the same batch (issue 26: end to end >= 50% of the kernel rate):
 * a plan's execute straight to the distinct pairs, timed after a warm-up execute into the same
 * arrays (the plan's buffers made and the pairs' pages touched, as a program running batch
 * after batch has them).  The same fixed iterations as the kernel row; the tolerance only
 * decides which starts count as converged.  kernel_gf: the kernel row's rate, the anchor. */
static void run_distinct(const tk_sshopm_options *base, long tensors, const void *packed, long iters,
                         double kernel_gf)
{
    tk_sshopm_options o = *base;
    o.tol = tk_sshopm_default_tol(o.precision);
    const size_t T = (size_t)tensors;
    tk_sshopm_plan *plan = NULL;
    tk_eigenpairs pairs = {0};
    tk_timing t = {0};
    const int ok = tk_sshopm_plan_create(&o, T, &plan) == TK_OK &&
                   tk_sshopm_plan_execute_distinct(plan, T, packed, 0, &pairs, NULL) == TK_OK &&
                   tk_sshopm_plan_execute_distinct(plan, T, packed, 0, &pairs, &t) == TK_OK;
    tk_bench_json_row("dmri_distinct");
    tk_bench_json_str("impl", impl_name(o.impl));
    tk_bench_json_num("order", o.order);
    tk_bench_json_num("dim", o.dim);
    tk_bench_json_num("tensors", (double)tensors);
    if (!ok) {
        printf("%-9s %-5s (%d,%d) %9ld  distinct pairs skipped: %s\n", impl_name(o.impl), "cuda", o.order, o.dim,
               tensors, tk_last_error());
        tk_bench_json_str("skipped", tk_last_error());
    } else {
        const double flops = (double)T * (double)o.num_starts * (double)iters * tk_sshopm_flops_per_iteration(o.order, o.dim);
        const double gf = flops / (t.kernel_ms * 1e6), e2e = flops / (t.total_ms * 1e6);
        const double share = kernel_gf > 0 ? e2e / kernel_gf : NAN;
        printf("%-9s %-5s (%d,%d) %9ld %10.3f %10.3f %11s %11.4g %11.4g  distinct pairs: %.2f a tensor; e2e %.0f%% of "
               "the kernel row's %.4g, goal 50%%: %s\n",
               impl_name(o.impl), "dist", o.order, o.dim, tensors, t.kernel_ms, t.total_ms, "-", gf, e2e,
               (double)pairs.count / (double)T, 100 * share, kernel_gf, bench_verdict(share >= 0.5));
        tk_bench_json_num("kernel_ms", t.kernel_ms);
        tk_bench_json_num("total_ms", t.total_ms);
        tk_bench_json_num("gflops", gf);
        tk_bench_json_num("gflops_e2e", e2e);
        tk_bench_json_num("kernel_row_gflops", kernel_gf);
        tk_bench_json_num("e2e_share_of_kernel", share);
        tk_bench_json_num("goal_share", 0.5);
        tk_bench_json_bool("goal_met", share >= 0.5);
        tk_bench_json_num("pairs", (double)pairs.count);
    }
    fflush(stdout);
    tk_eigenpairs_free(&pairs);
    tk_sshopm_plan_destroy(plan);
}

/* One timed solve; returns 0 when the backend is unavailable (printed as skipped). */
static int run_one(const bench_args *a, const char *table, int order, int dim, tk_backend backend, tk_impl impl,
                   long tensors, double goal)
{
    tk_sshopm_options o;
    tk_sshopm_options_init(&o, order, dim);
    o.precision = a->precision_double ? TK_PRECISION_DOUBLE : TK_PRECISION_SINGLE;
    o.backend = backend;
    o.impl = impl;
    o.shift = 0.0; /* the seed's alpha = 0; the iteration count is fixed either way */
    o.tol = 0;
    o.max_iter = (int)a->iters;
    o.fixed_iterations = 1;
    o.num_starts = (int)a->starts;
    o.num_threads = (int)a->threads;
    const size_t k = tk_sym_num_unique(order, dim), S = (size_t)a->starts, T = (size_t)tensors;
    const size_t elem = a->precision_double ? sizeof(double) : sizeof(float);
    void *packed = malloc(T * k * elem);
    tk_sshopm_starts_result r = {malloc(T * S * elem), malloc(T * S * (size_t)dim * elem), malloc(T * S * sizeof(int32_t)),
                                 malloc(T * S)};
    const int have_memory = packed && r.lambda && r.x && r.iterations && r.converged;
    int ok = have_memory;
    tk_timing timing = {0};
    tk_bench_json_row(table);
    tk_bench_json_str("impl", impl_name(impl));
    tk_bench_json_str("backend", tk_backend_name(backend));
    tk_bench_json_num("order", order);
    tk_bench_json_num("dim", dim);
    tk_bench_json_num("tensors", (double)tensors);
    if (ok) {
        fill_random(packed, T * k, a->precision_double, (uint64_t)order * 131 + (uint64_t)dim);
        /* Touch the result buffers once, as a program reusing them would have: the
         * end-to-end time is then the transfers, not this run's first page faults. */
        memset(r.lambda, 0, T * S * elem);
        memset(r.x, 0, T * S * (size_t)dim * elem);
        memset(r.iterations, 0, T * S * sizeof(int32_t));
        memset(r.converged, 0, T * S);
        /* A small warm-up solve: the first CUDA call pays for context creation. */
        if (backend == TK_BACKEND_CUDA) tk_sshopm_solve(&o, T < 64 ? T : 64, packed, &r, NULL);
        ok = tk_sshopm_solve(&o, T, packed, &r, &timing) == TK_OK;
    }
    if (!ok) {
        const char *why = have_memory ? tk_last_error() : "out of host memory";
        printf("%-9s %-5s (%d,%d) %9ld  skipped: %s\n", impl_name(impl), tk_backend_name(backend), order, dim,
               tensors, why);
        tk_bench_json_str("skipped", why);
    }
    if (ok) {
        double iterations = (double)T * (double)S * (double)a->iters;
        double flops = iterations * tk_sshopm_flops_per_iteration(order, dim);
        double kernel_gf = flops / (timing.kernel_ms * 1e6), total_gf = flops / (timing.total_ms * 1e6);
        double ref = (order == 4 && dim == 3 && !a->precision_double) ? seed_gflops(backend, impl) : 0;
        printf("%-9s %-5s (%d,%d) %9ld %10.3f %10.3f %11.4g %11.4g %11.4g", impl_name(impl), tk_backend_name(backend),
               order, dim, tensors, timing.kernel_ms, timing.total_ms, iterations / (timing.kernel_ms * 1e6), kernel_gf,
               total_gf);
        if (ref > 0) printf(" %9.2f %7.1fx", ref, kernel_gf / ref);
        else printf(" %9s %8s", "-", "-");
        if (goal > 0) printf("  goal %.4g: %s", goal, bench_verdict(kernel_gf >= goal));
        printf("\n");
        tk_bench_json_num("kernel_ms", timing.kernel_ms);
        tk_bench_json_num("total_ms", timing.total_ms);
        tk_bench_json_num("giter_per_s", iterations / (timing.kernel_ms * 1e6));
        tk_bench_json_num("gflops", kernel_gf);
        tk_bench_json_num("gflops_e2e", total_gf);
        tk_bench_json_num("seed_gflops", ref > 0 ? ref : NAN);
        tk_bench_json_num("goal_gflops", goal > 0 ? goal : NAN);
        if (goal > 0) tk_bench_json_bool("goal_met", kernel_gf >= goal);
        fflush(stdout);
        if (!strcmp(table, "dmri")) run_distinct(&o, tensors, packed, a->iters, kernel_gf);
    }
    fflush(stdout);
    free(packed);
    free(r.lambda), free(r.x), free(r.iterations), free(r.converged);
    return ok;
}

/* One batch on a plan over `devices` GPUs: the execute's time after a warm-up execute (the
 * plan's creation and the contexts stay out of it); -1 after printing why it failed. */
static double plan_ms(tk_sshopm_options o, int devices, size_t T, const void *packed,
                      tk_sshopm_starts_result *r, double *kernel_ms)
{
    o.cuda_device_count = devices;
    tk_sshopm_plan *plan = NULL;
    tk_timing t = {0};
    const int ok = tk_sshopm_plan_create(&o, T, &plan) == TK_OK &&
                   tk_sshopm_plan_execute(plan, T < 4096 ? T : 4096, packed, r, NULL) == TK_OK &&
                   tk_sshopm_plan_execute(plan, T, packed, r, &t) == TK_OK;
    if (!ok) printf("%-9s %d GPU(s) (%d,%d) %9ld  skipped: %s\n", impl_name(o.impl), devices, o.order, o.dim,
                    (long)T, tk_last_error());
    tk_sshopm_plan_destroy(plan);
    *kernel_ms = t.kernel_ms;
    return ok ? t.total_ms : -1;
}

/* The dMRI-sized (4,3) batch on one GPU and on `gpus`, each a contiguous share: both times
 * and the speed-up. */
static void scaling(const bench_args *a, int gpus)
{
    const int order = 4, dim = 3;
    const size_t k = tk_sym_num_unique(order, dim), S = (size_t)a->starts, T = (size_t)a->dmri_tensors;
    const size_t elem = a->precision_double ? sizeof(double) : sizeof(float);
    void *packed = malloc(T * k * elem);
    tk_sshopm_starts_result r = {malloc(T * S * elem), malloc(T * S * (size_t)dim * elem), malloc(T * S * sizeof(int32_t)),
                                 malloc(T * S)};
    printf("# Scaling over GPUs: %zu (4,3) tensors on 1 GPU and on %d, plan executes (transfers included)\n", T, gpus);
    printf("%-9s %-8s %9s %10s %10s %10s %10s\n", "impl", "GPUs", "tensors", "total_ms", "kernel_ms", "speed-up",
           "kernel_x");
    if (!packed || !r.lambda || !r.x || !r.iterations || !r.converged) {
        printf("skipped: out of host memory for %zu tensors\n", T);
    } else {
        /* the results' pages touched before any timing: the first run would pay their faults
         * (about 1.4 s for the 2 GB of 1M tensors' starts) and the later ones not */
        memset(r.lambda, 0, T * S * elem), memset(r.x, 0, T * S * (size_t)dim * elem);
        memset(r.iterations, 0, T * S * sizeof(int32_t)), memset(r.converged, 0, T * S);
        fill_random(packed, T * k, a->precision_double, 4 * 131 + 3);
        for (int impl = 1; impl >= 0; --impl) {
            tk_sshopm_options o;
            tk_sshopm_options_init(&o, order, dim);
            o.precision = a->precision_double ? TK_PRECISION_DOUBLE : TK_PRECISION_SINGLE;
            o.backend = TK_BACKEND_CUDA, o.impl = (tk_impl)impl;
            o.tol = 0, o.max_iter = (int)a->iters, o.fixed_iterations = 1, o.num_starts = (int)a->starts;
            double k1 = 0, kn = 0;
            const double one = plan_ms(o, 1, T, packed, &r, &k1);
            const double many = one < 0 ? -1 : plan_ms(o, gpus, T, packed, &r, &kn);
            if (many < 0) continue;
            printf("%-9s %-8d %9zu %10.3f %10.3f %10s %10s\n", impl_name(o.impl), 1, T, one, k1, "-", "-");
            printf("%-9s %-8d %9zu %10.3f %10.3f %9.2fx %9.2fx\n", impl_name(o.impl), gpus, T, many, kn, one / many,
                   k1 / kn);
            tk_bench_json_row("scaling");
            tk_bench_json_str("impl", impl_name(o.impl));
            tk_bench_json_num("gpus", gpus);
            tk_bench_json_num("tensors", (double)T);
            tk_bench_json_num("total_ms_1gpu", one), tk_bench_json_num("total_ms", many);
            tk_bench_json_num("kernel_ms_1gpu", k1), tk_bench_json_num("kernel_ms", kn);
            tk_bench_json_num("speedup", one / many);
            fflush(stdout);
        }
    }
    free(packed);
    free(r.lambda), free(r.x), free(r.iterations), free(r.converged);
}

static void header(void)
{
    printf("%-9s %-5s %-5s %9s %10s %10s %11s %11s %11s %9s %8s\n", "impl", "backend", "(m,n)", "tensors", "kernel_ms",
           "total_ms", "Giter/s", "GFLOP/s", "GFLOP/s_e2e", "seed", "vs_seed");
}

static const tk_opt_choice precisions[] = {{"single", 0, 0}, {"double", 1, 0}, {NULL, 0, 0}};

#define ARG(member) offsetof(bench_args, member)
static const tk_option options[] = {
    BENCH_LONG("tensors", "T", 1, 100000000, ARG(tensors),
               "random (4,3) tensors of the Table 6.1 set-up (default 1024)"),
    BENCH_LONG("starts", "S", 1, 4096, ARG(starts), "starts per tensor (default 128)"),
    BENCH_LONG("iters", "K", 1, 1000000, ARG(iters), "fixed iterations per start (default 100)"),
    BENCH_LONG("dmri-tensors", "T", 1, 100000000, ARG(dmri_tensors),
               "tensors of the diffusion-MRI-sized CUDA runs (default 1000000)"),
    BENCH_BACKENDS_OPTION(ARG(backends), "the backends to measure (default all three)"),
    BENCH_CHOICE("precision", "single|double", precisions, ARG(precision_double), "(default single)"),
    BENCH_THREADS_OPTION(ARG(threads), "threads of the omp backend (default: all cores)"),
    BENCH_CLEAR_FLAG("table-only", ARG(run_dmri), "only the seed's Table 6.1 set-up"),
    BENCH_CLEAR_FLAG("dmri-only", ARG(run_table), "only the diffusion-MRI-sized runs"),
    BENCH_GPUS_OPTION(ARG(gpus), "the diffusion-MRI-sized (4,3) runs"),
};
#undef ARG

static const bench_suite suite = {
    .prog = "tk-bench teig",
    .description = "Fixed iteration count, shift 0, random tensors with entries uniform in [-1, 1].\n"
                   "GFLOP/s counts the seed's 140 flops per iteration for (4,3) (tk_sshopm.h for other sizes);\n"
                   "'GFLOP/s' uses the kernel time (CUDA events on the GPU), 'GFLOP/s_e2e' the whole call\n"
                   "with transfers.  'seed' is the seed's Table 6.1 figure for the same implementation.\n"
                   "A 'dist' row after each diffusion-MRI row: the same batch straight to its distinct\n"
                   "eigenpairs (tk_sshopm_plan_execute_distinct: merged on the GPU, only the pairs\n"
                   "copied back), its end-to-end rate against the kernel row's (goal: at least 50%).\n",
    .options = options,
    .count = TK_OPT_COUNT(options),
};

int tk_bench_teig(int argc, char **argv)
{
    bench_args a = {1024, 128, 100, 1000000, 0, -1, 0, 1, 1, {1, 1, 1}};
    if (!bench_parse_suite(&suite, argc, argv, &a, NULL)) return TK_EXIT_USAGE;
    printf("# tk-bench teig: %s precision, %ld starts, %ld fixed iterations, shift 0\n",
           a.precision_double ? "double" : "single", a.starts, a.iters);
    tk_bench_json_setting_str("precision", a.precision_double ? "double" : "single");
    tk_bench_json_setting_num("tensors", (double)a.tensors);
    tk_bench_json_setting_num("starts", (double)a.starts);
    tk_bench_json_setting_num("iterations", (double)a.iters);
    tk_bench_json_setting_num("dmri_tensors", (double)a.dmri_tensors);
    tk_bench_json_setting_num("threads", (double)a.threads); /* 0: all */
    for (int b = 0; b < 3; ++b)
        for (int impl = 0; impl < 2; ++impl) {
            char name[64];
            snprintf(name, sizeof name, "seed Table 6.1 %s %s", tk_backend_name((tk_backend)b),
                     impl_name((tk_impl)impl));
            tk_bench_json_reference(name, seed_gflops((tk_backend)b, (tk_impl)impl), "GFLOP/s",
                                    "the seed paper's Table 6.1(a): (4,3) tensors, Core i7 (cpu, omp) / GeForce 9800 GT (cuda)");
        }
    tk_bench_json_reference("goal omp unrolled (4,3)", 6.85, "GFLOP/s", "the seed's CPU parallel figure");
    tk_bench_json_reference("goal cuda unrolled (4,3)", 10000, "GFLOP/s", "issue goal, dMRI-sized runs");
    tk_bench_json_reference("goal cuda general (4,3)", 2500, "GFLOP/s", "issue goal, dMRI-sized runs");
    if (a.run_table) {
        printf("# The seed's Table 6.1 set-up: %ld random (4,3) tensors; seed = its Core i7 / 9800 GT figure\n",
               a.tensors);
        header();
        for (int b = 0; b < 3; ++b) {
            if (!a.backends[b]) continue;
            for (int impl = 0; impl < 2; ++impl) {
                double goal = 0;
                if (b == TK_BACKEND_OMP && impl == TK_IMPL_UNROLLED) goal = 6.85; /* the seed's CPU parallel figure */
                run_one(&a, "table_6_1", 4, 3, (tk_backend)b, (tk_impl)impl, a.tensors, goal);
            }
        }
    }
    if (a.run_dmri && a.backends[2]) {
        printf("# Diffusion-MRI-sized runs: %ld tensors on CUDA (goal: unrolled (4,3) >= 10000 GFLOP/s, general >= 2500)\n",
               a.dmri_tensors);
        header();
        static const int shapes[2][2] = {{4, 3}, {8, 3}};
        for (int s = 0; s < 2; ++s)
            for (int impl = 1; impl >= 0; --impl) {
                double goal = shapes[s][0] == 4 ? (impl ? 10000 : 2500) : 0;
                run_one(&a, "dmri", shapes[s][0], shapes[s][1], TK_BACKEND_CUDA, (tk_impl)impl, a.dmri_tensors, goal);
            }
    }
    const int gpus = a.backends[2] ? bench_scaling_gpus(a.gpus) : 0;
    if (gpus) scaling(&a, gpus);
    return 0;
}
