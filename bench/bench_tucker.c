/* tk-bench tucker: FastTucker iteration times on a Netflix-shaped synthetic tensor,
 * beside the issue's goals and the seed's figures, with test RMSE against the
 * double CPU reference of the same algorithm. */
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
#include "bench_tucker_accuracy.h"
#include "bench_tucker_scaling.h"
#include "cli.h"
#include "tk_bench_hooks.h"
#include "tk_tucker.h"

static const char *prog = "tk-bench tucker";

/* Seconds of the solver's set-up (issue 26: the B-CSF built on the GPU), H100, Netflix size. */
#define GOAL_SETUP_S 2.0
/* Per-iteration seconds: factor updates, core updates. */
#define GOAL_FACTOR_S 0.06
#define GOAL_CORE_S 0.12
#define SEED_3080TI_FACTOR_S 0.2947
#define SEED_3080TI_CORE_S 0.8353
#define SEED_COO_H100_FACTOR_S 0.58 /* 0.58-0.61 measured */
#define SEED_COO_H100_CORE_S 0.65   /* 0.65-0.66 measured */
#define NETFLIX_NNZ 99072112L

enum { B_CUDA, B_OMP, B_OMP_DOUBLE, B_CPU, B_COUNT };
static const char *bname[B_COUNT] = {"cuda", "omp", "omp-double", "cpu"};

/* --shape */
typedef struct {
    uint32_t dims[TK_TUCKER_MAX_ORDER];
    int order;
} tucker_shape;

/* --rank-j, --rank-r, and --rank for both */
typedef struct {
    long j, r;
} tucker_ranks;

typedef struct {
    long nnz, iters, threads;
    tucker_ranks rank;
    double test_fraction, lr_a, lr_b, lambda, noise;
    tucker_shape shape;
    int backends[B_COUNT], table_only, als, to_accuracy, updates, init;
    long threshold, max_iters, seed, deflate, round_iters;
    bench_tucker_scaling scaling; /* --gpus, --weak, --allreduce */
} bench_args;

typedef struct {
    int ran;
    double factor_s, core_s, setup_s, rmse, mae, nnz_per_s;
    tk_tucker_setup_info setup; /* where the set-up's time went */
} bench_result;

static int parse_shape(const char *prog_name, const char *flag, const char *v, void *dest)
{
    tucker_shape *shape = dest;
    const char *c = v;
    int n = 0;
    while (*c) {
        char *end = NULL;
        unsigned long d = strtoul(c, &end, 10);
        if (end == c || d == 0 || d > UINT32_MAX || n == TK_TUCKER_MAX_ORDER || (*end && *end != ',')) {
            tk_cli_error(prog_name, "%s expects 3..%d sizes like 480189,17770,2182, got '%s'; give them "
                                    "comma-separated", flag, TK_TUCKER_MAX_ORDER, v);
            return 0;
        }
        shape->dims[n++] = (uint32_t)d;
        c = *end ? end + 1 : end;
    }
    if (n < 3) {
        tk_cli_error(prog_name, "%s needs 3 or more sizes, got '%s'; give 3 to 10 sizes", flag, v);
        return 0;
    }
    shape->order = n;
    return 1;
}

/* --rank J: J and R at once. */
static int parse_rank(const char *prog_name, const char *flag, const char *v, void *dest)
{
    tucker_ranks *rank = dest;
    long r;
    if (!tk_cli_parse_int(prog_name, flag, v, TK_TUCKER_MIN_RANK, TK_TUCKER_MAX_RANK, &r)) return 0;
    rank->j = rank->r = r;
    return 1;
}

/* --backends, with a message of its own: omp-double is no tk_backend. */
static int parse_backends(const char *prog_name, const char *flag, const char *v, void *dest)
{
    char unknown[256];
    if (!strcmp(v, "none")) { /* only the --gpus rows */
        memset(dest, 0, B_COUNT * sizeof(int));
        return 1;
    }
    if (bench_pick_names(v, bname, B_COUNT, (int *)dest, unknown, sizeof unknown)) return 1;
    tk_cli_error(prog_name, "%s: unknown backend '%s'; use cuda, omp, omp-double, cpu or none", flag, unknown);
    return 0;
}

/* --gpus 1,2: GPU counts of the scaling rows, ascending. */
static int parse_gpus(const char *prog_name, const char *flag, const char *v, void *dest)
{
    bench_tucker_scaling *b = dest;
    if (!bench_parse_long_list(prog_name, flag, v, 1, TK_TUCKER_MAX_DEVICES, b->gpus, BENCH_TUCKER_MAX_GPU_COUNTS,
                               &b->count) ||
        b->count == 0) {
        tk_cli_error(prog_name, "%s expects GPU counts like 1,2,4 (1..%d, at most %d of them), got '%s'", flag,
                     TK_TUCKER_MAX_DEVICES, BENCH_TUCKER_MAX_GPU_COUNTS, v);
        return 0;
    }
    for (int k = 1; k < b->count; ++k)
        if (b->gpus[k] <= b->gpus[k - 1]) {
            tk_cli_error(prog_name, "%s: list the GPU counts in ascending order, got '%s'", flag, v);
            return 0;
        }
    return 1;
}

/* --updates: which rows --to-accuracy trains (a run at the full shape spends minutes on each). */
enum { UPDATES_BOTH, UPDATES_ALS, UPDATES_SGD };
static const tk_opt_choice update_choices[] = {{"both", UPDATES_BOTH, 0}, {"als", UPDATES_ALS, 0}, {"sgd", UPDATES_SGD, 0},
                                               {NULL, 0, 0}};

/* --init: the --to-accuracy rows' start (tk-tucker train's choices; auto, the default, resolved
 * once the tensor is drawn). */
enum { INIT_AUTO, INIT_RANDOM, INIT_SPECTRAL };
static const tk_opt_choice init_choices[] = {
    {"auto", INIT_AUTO, 0}, {"random", INIT_RANDOM, 0}, {"spectral", INIT_SPECTRAL, 0}, {NULL, 0, 0}};

#define ARG(member) offsetof(bench_args, member)
static const tk_option options[] = {
    BENCH_LONG("nnz", "N", 1, 4000000000.0, ARG(nnz), "nonzeros of the synthetic tensor (default 99072112, Netflix's)"),
    BENCH_CUSTOM("shape", "I1,I2,I3", parse_shape, ARG(shape), "its sizes, 3 to 10 (default 480189,17770,2182)"),
    BENCH_CUSTOM("rank", "J", parse_rank, ARG(rank), "both ranks, J and R (default 32)"),
    BENCH_LONG("rank-j", "J", TK_TUCKER_MIN_RANK, TK_TUCKER_MAX_RANK, ARG(rank.j),
               "the factor matrices' rank J (default 32)"),
    BENCH_LONG("rank-r", "R", TK_TUCKER_MIN_RANK, TK_TUCKER_MAX_RANK, ARG(rank.r), "the core's rank R (default 32)"),
    BENCH_LONG("iters", "K", 1, 10000, ARG(iters), "iterations (default 3)"),
    BENCH_CUSTOM("backends", "cuda,omp,omp-double,cpu", parse_backends, ARG(backends),
                 "the backends to measure (default cuda,omp-double;\nnone: only the --gpus rows)"),
    BENCH_THREADS_OPTION(ARG(threads), "threads of the CPU backends (default: all cores)"),
    BENCH_DOUBLE("test-fraction", "F", 0, 0.5, ARG(test_fraction),
                 "share of the nonzeros held out for the test RMSE\n(default 0.01)"),
    BENCH_DOUBLE("lr-a", "X", 0, 1e6, ARG(lr_a), "learning rate of the factor updates (default 0.05)"),
    BENCH_DOUBLE("lr-b", "X", 0, 1e6, ARG(lr_b), "learning rate of the core updates (default 1)"),
    BENCH_DOUBLE("lambda", "X", 0, 1e6, ARG(lambda), "regularization of both updates (default 0.001)"),
    BENCH_DOUBLE("noise", "S", 0, 1e6, ARG(noise), "noise of the synthetic values (default 0.1)"),
    BENCH_LONG("fiber-threshold", "T", 1, (double)(1L << 40), ARG(threshold),
               "B-CSF sub-slice size of the solver (default: the library's)"),
    BENCH_FLAG("table-only", ARG(table_only), "only the table: no progress bar on stderr"),
    BENCH_FLAG("als", ARG(als), "the per-iteration table's rows of exact row solves (ALS, core fixed)\n"
                                "for every backend (default: cuda's only)"),
    BENCH_FLAG("to-accuracy", ARG(to_accuracy),
               "instead of the per-iteration table: train with the library's default\nsettings (als: ALS-WR, "
               "core fixed) and with the seed's SGD (sgd), no\nrates (--lr-a, --lr-b, --lambda do not apply), "
               "until the test RMSE is\nwithin 5% of --noise; iterations and seconds (set-up included) beside\n"
               "cuFasterTucker COO's time for as many iterations"),
    BENCH_LONG("max-iters", "K", 1, 100000, ARG(max_iters), "with --to-accuracy: give up after K iterations "
                                                           "(default 200)"),
    BENCH_CHOICE("updates", "both|als|sgd", update_choices, ARG(updates),
                 "with --to-accuracy: the rows to train, the defaults' (als), the\nseed's SGD (sgd) or both (default both)"),
    BENCH_CHOICE("init", "auto|random|spectral", init_choices, ARG(init),
                 "with --to-accuracy: the rows' start, random, spectral (tk-tucker\ntrain --init spectral's, seeded "
                 "by the start's seed; its seconds\nare in train_s) or auto (default: tk-tucker train's, spectral "
                 "where\nthe best-sampled unfolding has fewer than 8 entries a column or the\nlargest mode fewer than 32 J a row)"),
    BENCH_LONG("deflate", "K", 0, 1000, ARG(deflate),
               "with a spectral start: up to K deflation rounds where --round-iters\nALS iterations leave the target "
               "unmet (default 1; makes the start\nspectral)"),
    BENCH_LONG("round-iters", "N", 1, 100000, ARG(round_iters),
               "with a spectral start: ALS iterations before each round (default\n30, tk-tucker train --iters' role; "
               "makes the start spectral)"),
    BENCH_LONG("seed", "S", 1, 1e9, ARG(seed), "seed of the synthetic tensor; the start's is S + 2 (default 1)"),
    BENCH_CUSTOM("gpus", "G1,G2,...", parse_gpus, ARG(scaling),
                 "after the table, strong scaling of cuda on these GPU counts (e.g. 1,2:\nthe first is the baseline; "
                 "several need NCCL); default: none"),
    BENCH_FLAG("weak", ARG(scaling.weak), "with --gpus: weak scaling too (each count on a tensor with\n"
                                          "proportionally more entries and first-mode rows)"),
    BENCH_FLAG("allreduce", ARG(scaling.allreduce), "with --gpus: NCCL all-reduce bandwidth of each count above 1"),
};
#undef ARG

#define TEXT_OF(x) #x
#define NUMBER_TEXT(x) TEXT_OF(x) /* the goals' figures in the help as written above */
static const bench_suite suite = {
    .prog = "tk-bench tucker",
    .description =
        "Netflix-shaped synthetic tensor (default 480189 x 17770 x 2182, 99,072,112 nonzeros, power-law\n"
        "index popularity) generated in memory; every backend starts from the same model.  Prints the\n"
        "mean per-iteration factor and core update times (iterations after the first) beside the goals\n"
        "(<= " NUMBER_TEXT(GOAL_FACTOR_S) " s, <= " NUMBER_TEXT(GOAL_CORE_S) " s on an H100, J = R = 32) and the "
        "seed's figures, nonzeros/s, the set-up\n"
        "(storage build and uploads; goal <= " NUMBER_TEXT(GOAL_SETUP_S) " s on the H100) with its phases and peak "
        "GPU memory, and the test\n"
        "RMSE/MAE after K iterations next to omp-double's (the double CPU reference).\n",
    .options = options,
    .count = TK_OPT_COUNT(options),
};
#undef NUMBER_TEXT
#undef TEXT_OF

static int parse(int argc, char **argv, bench_args *a)
{
    memset(a, 0, sizeof *a);
    a->nnz = NETFLIX_NNZ;
    a->iters = 3;
    a->rank.j = a->rank.r = 32;
    a->test_fraction = 0.01;
    a->lr_a = 0.05;
    a->lr_b = 1;
    a->lambda = 0.001;
    a->noise = 0.1;
    a->threshold = TK_TUCKER_DEFAULT_FIBER_THRESHOLD;
    a->max_iters = 200;
    a->deflate = 1;
    a->round_iters = 30;
    a->seed = 1;
    a->shape.order = 3;
    a->shape.dims[0] = 480189, a->shape.dims[1] = 17770, a->shape.dims[2] = 2182;
    a->backends[B_CUDA] = a->backends[B_OMP_DOUBLE] = 1;
    tk_parsed parsed;
    if (!bench_parse_suite(&suite, argc, argv, a, &parsed)) return 0;
    /* the spectral rows' flags mean nothing elsewhere: say so rather than ignore them */
    if (a->init != INIT_AUTO && !a->to_accuracy) {
        tk_cli_error(prog, "--init %s without --to-accuracy: the start is the time-to-accuracy rows'; add "
                           "--to-accuracy, or drop --init",
                     a->init == INIT_SPECTRAL ? "spectral" : "random");
        return 0;
    }
    static const char *const spectral_only[] = {"deflate", "round-iters"};
    for (size_t k = 0; k < sizeof spectral_only / sizeof spectral_only[0]; ++k) {
        if (!bench_given(&suite, &parsed, spectral_only[k])) continue;
        if (!a->to_accuracy) {
            tk_cli_error(prog, "--%s without --to-accuracy: the deflation rounds are the time-to-accuracy rows'; "
                               "add --to-accuracy, or drop --%s",
                         spectral_only[k], spectral_only[k]);
            return 0;
        }
        if (a->init == INIT_RANDOM) {
            tk_cli_error(prog, "--%s with --init random: the deflation rounds continue a spectral start; drop --init "
                               "random (or give --init spectral), or drop --%s",
                         spectral_only[k], spectral_only[k]);
            return 0;
        }
        a->init = INIT_SPECTRAL; /* rounds asked for: the start they continue */
    }
    return 1;
}

static void run_backend(const bench_args *a, int b, int als, const tk_tucker_coo *train, const tk_tucker_coo *test,
                        const tk_tucker_model *init, bench_result *r)
{
    memset(r, 0, sizeof *r);
    tk_tucker_options o;
    tk_tucker_options_init(&o);
    o.backend = b == B_CUDA ? TK_BACKEND_CUDA : b == B_CPU ? TK_BACKEND_CPU : TK_BACKEND_OMP;
    o.precision = b == B_OMP_DOUBLE ? TK_PRECISION_DOUBLE : TK_PRECISION_SINGLE;
    o.factor_update = als ? TK_TUCKER_FACTOR_ALS : TK_TUCKER_FACTOR_SGD; /* SGD: the seed's, to compare */
    o.lr_a = a->lr_a, o.lr_b = als ? 0 : a->lr_b, o.lambda_a = o.lambda_b = a->lambda; /* ALS: core fixed */
    o.fiber_threshold = (size_t)a->threshold;
    o.num_threads = (int)a->threads;
    tk_tucker_solver *s = NULL;
    tk_status st = tk_tucker_solver_create(&o, train, init, &s);
    if (st != TK_OK) {
        printf("%-11s skipped: %s\n", bname[b], tk_last_error());
        fflush(stdout);
        return;
    }
    tk_timing tf, tc;
    tk_tucker_solver_timing(s, &tf, NULL);
    r->setup_s = tf.setup_ms / 1e3;
    tk_tucker_solver_setup_info(s, &r->setup);
    double fsum = 0, csum = 0;
    long counted = 0;
    tk_progress bar;
    tk_progress_begin(&bar, bname[b], (size_t)a->iters, a->table_only);
    for (long it = 0; it < a->iters; ++it) {
        if ((st = tk_tucker_update_factors(s)) != TK_OK || (st = tk_tucker_update_core(s)) != TK_OK) break;
        tk_tucker_solver_timing(s, &tf, &tc);
        /* The first iteration carries warm-up (clocks, caches); skip it when there are more. */
        if (it > 0 || a->iters == 1) fsum += tf.kernel_ms / 1e3, csum += tc.kernel_ms / 1e3, ++counted;
        tk_progress_advance(&bar, 1);
    }
    tk_progress_end(&bar);
    if (st != TK_OK) {
        printf("%-11s failed: %s\n", bname[b], tk_last_error());
        tk_tucker_solver_destroy(s);
        return;
    }
    const tk_tucker_metrics met = bench_tucker_test_metrics(s, init, test);
    r->rmse = met.rmse, r->mae = met.mae;
    tk_tucker_solver_destroy(s);
    r->ran = 1;
    r->factor_s = fsum / (double)counted;
    r->core_s = csum / (double)counted;
    r->nnz_per_s = (double)train->nnz / (r->factor_s + r->core_s);
}

int tk_bench_tucker(int argc, char **argv)
{
    bench_args a;
    if (!parse(argc, argv, &a)) return TK_EXIT_USAGE;
    tk_tucker_synth_options so;
    tk_tucker_synth_options_init(&so);
    so.order = a.shape.order;
    memcpy(so.dims, a.shape.dims, sizeof so.dims);
    so.nnz = (size_t)a.nnz;
    so.rank_j = (int)a.rank.j, so.rank_r = (int)a.rank.r;
    so.noise = a.noise;
    so.seed = (uint64_t)a.seed;
    so.unique = 0; /* duplicates are rare and harmless for timing; dedup would sort 1e8 entries */
    double t0 = tk_cli_now_ms();
    tk_tucker_coo all, train, test;
    tk_tucker_model truth;
    memset(&truth, 0, sizeof truth);
    if (tk_tucker_synth(&so, &all, a.to_accuracy ? &truth : NULL) != TK_OK ||
        tk_tucker_coo_split(&all, a.test_fraction, 2, &train, &test) != TK_OK) {
        tk_cli_error(prog, "%s", tk_last_error());
        return TK_EXIT_FAILURE;
    }
    tk_tucker_coo_free(&all);
    tk_tucker_metrics truth_test;
    memset(&truth_test, 0, sizeof truth_test);
    if (a.to_accuracy) {
        tk_tucker_evaluate(&truth, &test, 0, 0, &truth_test);
        tk_tucker_model_free(&truth);
    }
    double gen_s = (tk_cli_now_ms() - t0) / 1e3;
    tk_tucker_model init;
    if (tk_tucker_model_alloc(&init, a.shape.order, a.shape.dims, (int)a.rank.j, (int)a.rank.r) != TK_OK) {
        tk_cli_error(prog, "%s", tk_last_error());
        tk_tucker_coo_free(&train);
        tk_tucker_coo_free(&test);
        return TK_EXIT_FAILURE;
    }
    tk_tucker_model_init(&init, (uint64_t)a.seed + 2, 0);
    double rms = 0;
    for (size_t e = 0; e < test.nnz; ++e) rms += (double)test.val[e] * test.val[e];
    rms = test.nnz ? sqrt(rms / (double)test.nnz) : 0;

    printf("# tk-bench tucker: order %d, shape", a.shape.order);
    for (int n = 0; n < a.shape.order; ++n) printf("%s%u", n ? "x" : " ", a.shape.dims[n]);
    printf(", %zu train + %zu test nonzeros (generated in %.1f s), J = %ld, R = %ld", train.nnz, test.nnz, gen_s,
           a.rank.j, a.rank.r);
    if (a.to_accuracy)
        printf("\n");
    else
        printf(", %ld iterations,\n", a.iters);
    if (!a.to_accuracy)
        printf("# SGD (the seed's; the goals and anchors are its passes'), lr_a %g, lr_b %g, lambda %g, fiber threshold "
               "%ld, noise %g (test RMS %.4f: predicting 0); 'als' rows: exact row solves, core fixed\n", a.lr_a,
               a.lr_b, a.lambda, a.threshold, a.noise, rms);
    else
        printf("# fiber threshold %ld, noise %g (test RMS %.4f: predicting 0)\n", a.threshold, a.noise, rms);
    if (a.to_accuracy) {
        /* --init auto: tk-tucker train's choice, from the training entries */
        const int spectral = a.init == INIT_SPECTRAL || (a.init == INIT_AUTO && tk_tucker_prefers_spectral(&train, (int)a.rank.j));
        tk_tucker_sampling sampling;
        tk_tucker_sampling_of(&train, &sampling);
        const bench_tucker_accuracy acc = {.max_iters = a.max_iters, .noise = a.noise, .truth_rmse = truth_test.rmse,
                                           .threads = (int)a.threads, .threshold = (size_t)a.threshold,
                                           .spectral = spectral, .deflate = a.deflate,
                                           .round_iters = a.round_iters, .start_seed = (uint64_t)a.seed + 2,
                                           .auto_start = a.init == INIT_AUTO,
                                           .sampling = sampling, .rank_j = (int)a.rank.j};
        tk_bench_json_setting_num("order", a.shape.order), tk_bench_json_setting_num("train_nnz", (double)train.nnz);
        tk_bench_json_setting_num("test_nnz", (double)test.nnz), tk_bench_json_setting_num("rank_j", a.rank.j);
        tk_bench_json_setting_num("rank_r", a.rank.r), tk_bench_json_setting_num("max_iterations", a.max_iters);
        bench_tucker_accuracy_header(&acc);
        static const int order[B_COUNT] = {B_OMP_DOUBLE, B_CPU, B_OMP, B_CUDA};
        for (int k = 0; k < B_COUNT; ++k) {
            int b = order[k];
            if (!a.backends[b]) continue;
            const tk_backend backend = b == B_CUDA ? TK_BACKEND_CUDA : b == B_CPU ? TK_BACKEND_CPU : TK_BACKEND_OMP;
            const tk_precision precision = b == B_OMP_DOUBLE ? TK_PRECISION_DOUBLE : TK_PRECISION_SINGLE;
            for (int als = 0; als < 2; ++als)
                if (a.updates == UPDATES_BOTH || (a.updates == UPDATES_ALS) == (als == 1)) {
                    /* auto: the seed's SGD from the seed's random start, as tk-tucker train */
                    bench_tucker_accuracy row = acc;
                    if (!als && a.init == INIT_AUTO) row.spectral = 0;
                    bench_tucker_accuracy_row(&row, bname[b], als, backend, precision, &train, &test, &init);
                }
        }
        tk_tucker_model_free(&init);
        tk_tucker_coo_free(&train);
        tk_tucker_coo_free(&test);
        return 0;
    }
    printf("# times: mean s per iteration (after the first); goals on an H100 with J = R = 32 at Netflix size;\n"
           "# seed: cuFasterTucker on an RTX 3080 Ti (B-CSF); seed COO: its COO variant built from the\n"
           "# authors' code on the H100 (0.58-0.61 s / 0.65-0.66 s)\n");
    printf("%-11s %9s %9s %9s %11s %11s %11s %10s %9s %9s %9s\n", "backend", "setup_s", "factor_s", "core_s", "nnz/s",
           "test_rmse", "test_mae", "vs_ref", "goal_f", "goal_c", "goal_s");
    tk_bench_json_setting_num("order", a.shape.order), tk_bench_json_setting_num("train_nnz", (double)train.nnz);
    tk_bench_json_setting_num("test_nnz", (double)test.nnz), tk_bench_json_setting_num("rank_j", a.rank.j);
    tk_bench_json_setting_num("rank_r", a.rank.r), tk_bench_json_setting_num("iterations", a.iters);
    tk_bench_json_reference("goal factor update", GOAL_FACTOR_S, "s/iteration", "issue goal: H100, J = R = 32, Netflix size");
    tk_bench_json_reference("goal core update", GOAL_CORE_S, "s/iteration", "issue goal: H100, J = R = 32, Netflix size");
    tk_bench_json_reference("goal set-up", GOAL_SETUP_S, "s", "issue 26 goal: H100, J = R = 32, Netflix size");
    tk_bench_json_reference("cuFasterTucker 3080Ti factor update", SEED_3080TI_FACTOR_S, "s/iteration", "the seed paper");
    tk_bench_json_reference("cuFasterTucker 3080Ti core update", SEED_3080TI_CORE_S, "s/iteration", "the seed paper");
    tk_bench_json_reference("cuFasterTucker COO H100 factor update", SEED_COO_H100_FACTOR_S, "s/iteration",
                            "the seed's COO code measured on an H100");
    tk_bench_json_reference("cuFasterTucker COO H100 core update", SEED_COO_H100_CORE_S, "s/iteration",
                            "the seed's COO code measured on an H100");
    bench_result res[B_COUNT];
    memset(res, 0, sizeof res);
    /* The reference first, so the others print beside it. */
    static const int order[B_COUNT] = {B_OMP_DOUBLE, B_CPU, B_OMP, B_CUDA};
    for (int k = 0; k < B_COUNT; ++k) {
        int b = order[k];
        if (!a.backends[b]) continue;
        run_backend(&a, b, 0, &train, &test, &init, &res[b]);
        bench_result *r = &res[b];
        if (!r->ran) continue;
        printf("%-11s %9.2f %9.4f %9.4f %11.4g %11.6f %11.6f", bname[b], r->setup_s, r->factor_s, r->core_s,
               r->nnz_per_s, r->rmse, r->mae);
        tk_bench_json_row("iteration"), tk_bench_json_str("backend", bname[b]);
        tk_bench_json_num("setup_s", r->setup_s), tk_bench_json_num("factor_s", r->factor_s);
        tk_bench_json_num("core_s", r->core_s), tk_bench_json_num("nnz_per_s", r->nnz_per_s);
        tk_bench_json_num("test_rmse", r->rmse), tk_bench_json_num("test_mae", r->mae);
        if (b == B_CUDA) {
            tk_bench_json_num("setup_gpu_built", r->setup.gpu_built);
            tk_bench_json_num("setup_build_s", r->setup.build_ms / 1e3);
            tk_bench_json_num("setup_upload_s", r->setup.upload_ms / 1e3);
            tk_bench_json_num("setup_sort_s", r->setup.sort_ms / 1e3);
            tk_bench_json_num("setup_layout_s", r->setup.layout_ms / 1e3);
            tk_bench_json_num("setup_device_s", r->setup.device_ms / 1e3);
            tk_bench_json_num("setup_peak_gpu_bytes", (double)r->setup.peak_device_bytes);
        }
        tk_bench_json_num("rmse_vs_reference", b != B_OMP_DOUBLE && res[B_OMP_DOUBLE].ran
                                                   ? (r->rmse - res[B_OMP_DOUBLE].rmse) / res[B_OMP_DOUBLE].rmse
                                                   : NAN);
        if (b != B_OMP_DOUBLE && res[B_OMP_DOUBLE].ran)
            printf(" %+9.2f%%", 100 * (r->rmse - res[B_OMP_DOUBLE].rmse) / res[B_OMP_DOUBLE].rmse);
        else
            printf(" %10s", "-");
        if (b == B_CUDA)
            printf(" %9s %9s %9s", bench_verdict(r->factor_s <= GOAL_FACTOR_S), bench_verdict(r->core_s <= GOAL_CORE_S),
                   bench_verdict(r->setup_s <= GOAL_SETUP_S));
        printf("\n");
        if (b == B_CUDA) {
            const tk_tucker_setup_info *si = &r->setup;
            if (si->gpu_built)
                printf("  set-up %.2f s (goal <= %.1f s): B-CSF built on the GPU in %.2f s (COO upload %.2f, sorts %.2f, "
                       "slices and gathers %.2f), devices and model %.2f s; peak GPU memory %.2f GiB\n",
                       r->setup_s, GOAL_SETUP_S, si->build_ms / 1e3, si->upload_ms / 1e3, si->sort_ms / 1e3,
                       si->layout_ms / 1e3, si->device_ms / 1e3, (double)si->peak_device_bytes / 1073741824.0);
            else
                printf("  set-up %.2f s (goal <= %.1f s): %s; host build %.2f s, uploads and model %.2f s; peak GPU "
                       "memory %.2f GiB\n",
                       r->setup_s, GOAL_SETUP_S, si->note, si->build_ms / 1e3, si->device_ms / 1e3,
                       (double)si->peak_device_bytes / 1073741824.0);
            printf("%-11s %9s %9.4f %9.4f   (%.1fx / %.1fx faster)\n", "  seed 3080Ti", "", SEED_3080TI_FACTOR_S,
                   SEED_3080TI_CORE_S, SEED_3080TI_FACTOR_S / r->factor_s, SEED_3080TI_CORE_S / r->core_s);
            printf("%-11s %9s %9.4f %9.4f   (%.1fx / %.1fx faster; goal 10x / 5x)\n", "  seed COO H100", "",
                   SEED_COO_H100_FACTOR_S, SEED_COO_H100_CORE_S, SEED_COO_H100_FACTOR_S / r->factor_s,
                   SEED_COO_H100_CORE_S / r->core_s);
            printf("%-11s %9s %9.4f %9.4f\n", "  goal", "", GOAL_FACTOR_S, GOAL_CORE_S);
        }
        fflush(stdout);
    }
    /* The row solves' time an iteration (ALS, core fixed; no goal: the goals are the SGD passes'):
     * cuda's always, every backend's with --als. */
    for (int k = 0; k < B_COUNT; ++k) {
        int b = order[k];
        if (!a.backends[b] || (b != B_CUDA && !a.als)) continue;
        bench_result r;
        run_backend(&a, b, 1, &train, &test, &init, &r);
        if (!r.ran) continue;
        char label[32];
        snprintf(label, sizeof label, "%s als", bname[b]);
        printf("%-11s %9.2f %9.4f %9.4f %11.4g %11.6f %11.6f %10s   (exact row solves, core fixed; no goal)\n",
               label, r.setup_s, r.factor_s, r.core_s, r.nnz_per_s, r.rmse, r.mae, "-");
        tk_bench_json_row("iteration als"), tk_bench_json_str("backend", bname[b]);
        tk_bench_json_num("setup_s", r.setup_s), tk_bench_json_num("factor_s", r.factor_s);
        tk_bench_json_num("core_s", r.core_s), tk_bench_json_num("test_rmse", r.rmse);
        fflush(stdout);
    }
    if (a.backends[B_CUDA] && res[B_CUDA].ran && res[B_OMP_DOUBLE].ran)
        printf("# test RMSE: cuda %.6f vs double reference %.6f: %s\n", res[B_CUDA].rmse, res[B_OMP_DOUBLE].rmse,
               res[B_CUDA].rmse <= res[B_OMP_DOUBLE].rmse * 1.001 ? "no worse (within 0.1%)" : "WORSE");
    if (a.scaling.count) {
        a.scaling.iters = a.iters;
        tk_tucker_options_init(&a.scaling.solver);
        /* the per-iteration table's algorithm: the seed's SGD unless --als */
        a.scaling.solver.factor_update = a.als ? TK_TUCKER_FACTOR_ALS : TK_TUCKER_FACTOR_SGD;
        a.scaling.solver.lr_a = a.lr_a, a.scaling.solver.lr_b = a.lr_b;
        a.scaling.solver.lambda_a = a.scaling.solver.lambda_b = a.lambda;
        a.scaling.solver.fiber_threshold = (size_t)a.threshold;
        a.scaling.synth = so;
        a.scaling.test_fraction = a.test_fraction;
        bench_tucker_scaling_run(&a.scaling, &train, &test, &init);
    }
    tk_tucker_model_free(&init);
    tk_tucker_coo_free(&train);
    tk_tucker_coo_free(&test);
    return 0;
}
