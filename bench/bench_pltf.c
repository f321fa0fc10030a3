/* tk-bench pltf: KL-PARAFAC by multiplicative updates, the seed's set-up on the CPU
 * and a 256^3 rank-32 run on CUDA, each against the seed's full-joint-tensor GTM
 * measured in the same run and the references the issue names. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "bench_common.h"
#include "bench_options.h"
#include "cli.h"
#include "tk_pltf.h"

/* --seed-iters: the iteration counts of the seed set-up. */
typedef struct {
    long iters[8];
    int count;
} seed_iter_list;

typedef struct {
    long size, rank, iters, naive_iters, seed_naive_max, repeat;
    int run_seed, run_large;
    int backends[3];
    seed_iter_list seed;
} bench_args;

/* b: a tk_backend, the index of a.backends */
static const char *backend_name(int b) { return tk_backend_name((tk_backend)b); }

/* Data from a random non-negative rank-r PARAFAC model plus 10% noise. */
static double *make_data(tk_pltf_model *m, uint64_t seed)
{
    size_t count = tk_pltf_out_count(m);
    double *x = malloc(sizeof(double) * count), *f[3] = {0};
    bench_rng r = bench_rng_seed(seed, 1);
    int ok = x != NULL;
    for (int k = 0; k < 3 && ok; ++k) {
        size_t n = tk_pltf_factor_count(m, k);
        ok = (f[k] = malloc(sizeof(double) * n)) != NULL;
        for (size_t i = 0; ok && i < n; ++i) f[k][i] = bench_rng_uniform(&r);
    }
    const double *ops[3] = {f[0], f[1], f[2]};
    if (ok) ok = tk_pltf_gtm(m, TK_BACKEND_OMP, 0, ops, x) == TK_OK;
    for (size_t i = 0; ok && i < count; ++i) x[i] *= 0.9 + 0.2 * bench_rng_uniform(&r);
    for (int k = 0; k < 3; ++k) free(f[k]);
    if (!ok) {
        free(x);
        return NULL;
    }
    return x;
}

static long g_repeat = 3;

/* The best of g_repeat timed factorizations (other load on the machine only ever
 * adds time); returns ms per iteration (< 0 when it could not run). */
static double time_fit(const tk_pltf_model *m, const double *x, int backend, int iters, int naive, int no_fused,
                       double *divergence, char *why, size_t why_size)
{
    tk_pltf_options o;
    tk_pltf_options_init(&o);
    o.divergence = TK_PLTF_KL;
    o.backend = (tk_backend)backend;
    o.naive_gtm = naive;
    o.no_fused = no_fused;
    o.track_divergence = 0; /* the final divergence only: timing the updates */
    o.seed = 1;
    tk_pltf_result r;
    memset(&r, 0, sizeof r);
    double *f[3] = {0};
    int ok = 1;
    for (int k = 0; k < 3; ++k) ok = ok && (f[k] = r.factors[k] = malloc(sizeof(double) * tk_pltf_factor_count(m, k)));
    double ms = -1;
    if (ok) {
        /* Warm-up: CUDA context, cuBLAS handle and lazily loaded kernels. */
        o.iterations = 1;
        if (backend == TK_BACKEND_CUDA && tk_pltf_factorize(m, &o, x, NULL, &r) != TK_OK) {
            snprintf(why, why_size, "%s", tk_last_error());
        } else {
            o.iterations = iters;
            for (long rep = 0; rep < g_repeat; ++rep) {
                if (tk_pltf_factorize(m, &o, x, NULL, &r) != TK_OK) {
                    snprintf(why, why_size, "%s", tk_last_error());
                    ms = -1;
                    break;
                }
                if (ms < 0 || r.iterate_ms / iters < ms) ms = r.iterate_ms / iters;
                if (divergence) *divergence = r.final_divergence;
            }
        }
    } else {
        snprintf(why, why_size, "out of host memory");
    }
    for (int k = 0; k < 3; ++k) free(f[k]);
    return ms;
}

static void seed_setup(const bench_args *a)
{
    tk_pltf_model m;
    tk_pltf_parse("parafac", &m);
    tk_pltf_set_dims(&m, "i=10,j=11,k=12,a=20");
    double *x = make_data(&m, 1);
    if (!x) {
        printf("seed set-up skipped: %s\n", tk_last_error());
        return;
    }
    static const struct {
        long iters;
        double seed_gpu_s, toolbox_s;
    } ref[] = {{100, 10.1, 2.5}, {200, 19.8, 4.1}, {300, 29.3, 5.8}};
    printf("# The seed's PARAFAC set-up: |i|=10 |j|=11 |k|=12 |a|=20, KL; seed GPU and Tensor Toolbox times from the seed\n");
    printf("# goal: 300 iterations <= 0.05 s on the CPU; naive = the seed's full-joint GTM on the same backend\n");
    printf("%-5s %6s %11s %12s %9s %11s %11s  %s\n", "backend", "iters", "ours_s", "naive_s", "vs_naive", "seed_gpu_s",
           "toolbox_s", "goal");
    for (int b = 0; b < 3; ++b) {
        if (!a->backends[b]) continue;
        for (int q = 0; q < a->seed.count; ++q) {
            const long it = a->seed.iters[q];
            char why[512] = "";
            double div = 0, ours = time_fit(&m, x, b, (int)it, 0, 0, &div, why, sizeof why);
            if (ours < 0) {
                printf("%-7s %6ld skipped: %s\n", backend_name(b), it, why);
                break;
            }
            double naive = it <= a->seed_naive_max ? time_fit(&m, x, b, (int)it, 1, 0, NULL, why, sizeof why) : -1;
            double seed_gpu = -1, toolbox = -1;
            for (size_t r = 0; r < sizeof ref / sizeof ref[0]; ++r)
                if (ref[r].iters == it) seed_gpu = ref[r].seed_gpu_s, toolbox = ref[r].toolbox_s;
            const double ours_s = ours * (double)it * 1e-3;
            printf("%-7s %6ld %11.5f ", backend_name(b), it, ours_s);
            if (naive > 0) printf("%12.5f %8.1fx ", naive * (double)it * 1e-3, naive / ours);
            else printf("%12s %9s ", "-", "-");
            if (seed_gpu > 0) printf("%11.1f %11.1f", seed_gpu, toolbox);
            else printf("%11s %11s", "-", "-");
            if (it == 300 && b != TK_BACKEND_CUDA) printf("  <= 0.05 s: %s", bench_verdict(ours_s <= 0.05));
            printf("\n");
            fflush(stdout);
        }
    }
    free(x);
}

static void large_run(const bench_args *a)
{
    tk_pltf_model m;
    tk_pltf_parse("parafac", &m);
    char dims[128];
    snprintf(dims, sizeof dims, "i=%ld,j=%ld,k=%ld,a=%ld", a->size, a->size, a->size, a->rank);
    tk_pltf_set_dims(&m, dims);
    printf("# KL-PARAFAC %ld^3, rank %ld: ms per iteration (three factor updates), %ld iterations; naive: %ld\n", a->size,
           a->rank, a->iters, a->naive_iters);
    printf("# goals (256^3 rank 32 on an H100): fused <= 0.85 ms/iteration and >= 50x the naive full-joint GTM;\n"
           "# reference: PyTorch torch.einsum multiplicative updates 1.71 ms/iteration on that H100\n");
    double *x = make_data(&m, 2);
    if (!x) {
        printf("skipped: out of host memory for a %ld^3 tensor\n", a->size);
        return;
    }
    printf("%-7s %-22s %12s %10s %10s  %s\n", "backend", "GTM", "ms/iter", "vs_naive", "vs_torch", "goal");
    for (int b = 0; b < 3; ++b) {
        if (!a->backends[b]) continue;
        char why[512] = "";
        double naive = a->naive_iters > 0 ? time_fit(&m, x, b, (int)a->naive_iters, 1, 0, NULL, why, sizeof why) : -1;
        if (naive < 0 && a->naive_iters > 0) {
            printf("%-7s %-22s skipped: %s\n", backend_name(b), "naive full-joint", why);
            if (b == TK_BACKEND_CUDA && strstr(why, "CUDA")) continue;
        } else if (naive > 0) {
            printf("%-7s %-22s %12.4f %10s %9.2fx\n", backend_name(b), "naive full-joint", naive, "1.0x", 1.71 / naive);
        }
        const char *names[2] = {b == TK_BACKEND_CUDA ? "fused kernels" : "pairwise GEMM (BLAS)", "pairwise GEMM (cuBLAS)"};
        for (int v = 0; v < (b == TK_BACKEND_CUDA ? 2 : 1); ++v) {
            double div = 0, ms = time_fit(&m, x, b, (int)a->iters, 0, v, &div, why, sizeof why);
            if (ms < 0) {
                printf("%-7s %-22s skipped: %s\n", backend_name(b), names[v], why);
                continue;
            }
            printf("%-7s %-22s %12.4f ", backend_name(b), names[v], ms);
            if (naive > 0) printf("%9.1fx ", naive / ms);
            else printf("%10s ", "-");
            printf("%9.2fx", 1.71 / ms);
            if (b == TK_BACKEND_CUDA && v == 0) {
                printf("  <= 0.85 ms: %s", bench_verdict(ms <= 0.85));
                if (naive > 0) printf(", >= 50x naive: %s", bench_verdict(naive / ms >= 50));
            }
            printf("  (KL after %ld: %.6g)\n", a->iters, div);
            fflush(stdout);
        }
    }
    free(x);
}

static int parse_seed_iters(const char *prog, const char *flag, const char *value, void *dest)
{
    seed_iter_list *list = dest;
    return bench_parse_long_list(prog, flag, value, 1, 1000000, list->iters, 8, &list->count);
}

#define ARG(member) offsetof(bench_args, member)
static const tk_option options[] = {
    BENCH_LONG("size", "N", 2, 2048, ARG(size), "the large run's tensor is N^3 (default 256)"),
    BENCH_LONG("rank", "R", 1, 1024, ARG(rank), "the large run's rank (default 32)"),
    BENCH_LONG("iters", "K", 1, 1000000, ARG(iters), "iterations of the large run (default 100)"),
    BENCH_LONG("naive-iters", "K", 0, 1000000, ARG(naive_iters),
               "iterations of the large run's naive full-joint GTM; 0: none\n(default 10)"),
    BENCH_CUSTOM("seed-iters", "K,K,...", parse_seed_iters, ARG(seed),
                 "the seed set-up's iteration counts, at most 8\n(default 100,200,300)"),
    BENCH_LONG("seed-naive-max", "K", 0, 1000000, ARG(seed_naive_max),
               "the seed set-up's naive full-joint GTM only up to K iterations\n(default 300)"),
    BENCH_BACKENDS_OPTION(ARG(backends), "the backends to measure; the seed set-up runs on the CPU\n"
                                         "ones (default: cpu there, cuda in the large run)"),
    BENCH_LONG("repeat", "R", 1, 1000, ARG(repeat), "each figure is the best of R runs (default 3)"),
    BENCH_CLEAR_FLAG("seed-only", ARG(run_large), "only the seed set-up"),
    BENCH_CLEAR_FLAG("large-only", ARG(run_seed), "only the large run"),
};
#undef ARG

static const bench_suite suite = {
    .prog = "tk-bench pltf",
    .description = "KL-PARAFAC by multiplicative updates, the divergence computed once at the end.\n"
                   "Seed set-up: |i|=10 |j|=11 |k|=12 |a|=20 on the CPU backends listed, against the seed's\n"
                   "GPU and the Tensor Toolbox (the seed's figures) and the naive full-joint GTM in this run.\n"
                   "Large run: size^3 rank R on each backend listed (default cuda): the fused kernels, the\n"
                   "cuBLAS pairwise path and the naive full-joint GTM (over --naive-iters iterations).\n"
                   "Each figure is the best of --repeat runs (after one warm-up run on CUDA).\n",
    .options = options,
    .count = TK_OPT_COUNT(options),
};

int tk_bench_pltf(int argc, char **argv)
{
    bench_args a = {256, 32, 100, 10, 300, 3, 1, 1, {1, 0, 1}, {{100, 200, 300}, 3}};
    tk_parsed parsed;
    if (!bench_parse_suite(&suite, argc, argv, &a, &parsed)) return TK_EXIT_USAGE;
    g_repeat = a.repeat;
    printf("# tk-bench pltf: CPU GEMM via %s; best of %ld runs\n",
           tk_pltf_has_cblas() ? "CBLAS (OpenBLAS)" : "plain C loops (no CBLAS)", a.repeat);
    if (a.run_seed) {
        bench_args s = a;
        s.backends[TK_BACKEND_CUDA] = 0; /* the seed set-up is the CPU goal; too small for a GPU */
        if (!s.backends[0] && !s.backends[1]) s.backends[0] = 1;
        seed_setup(&s);
    }
    if (a.run_large) {
        /* by default the large run is the GPU goal */
        if (!bench_given(&suite, &parsed, "backends")) a.backends[TK_BACKEND_CPU] = 0;
        large_run(&a);
    }
    return 0;
}
