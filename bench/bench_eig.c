/* tk-bench eig: batched eigenvalues of small random nonsymmetric matrices, the seed's
 * Table 4 set-up, each figure beside the reference it must beat. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#ifdef TK_HAVE_LAPACKE
#include <lapacke.h>
#endif

#include "bench.h"
#include "bench_common.h"
#include "bench_options.h"
#include "cli.h"
#include "tk_bench_hooks.h"
#include "tk_eig.h"

/* The seed's Table 4: ms for 500,000 random double matrices on a TITAN X. */
#define SEED_MATRICES 500000.0
static double seed_ms(int n)
{
    static const double ms[6] = {20.01, 125.61, 338.79, 751.42, 1337.03, 2191.16};
    return (n % 5 == 0 && n >= 5 && n <= 30) ? ms[n / 5 - 1] : 0;
}

/* --backends: what is measured, each on or off. */
enum { EIG_LAPACK, EIG_CPU, EIG_OMP, EIG_CUDA, EIG_TORCH, EIG_MEASURES };
static const char *const kMeasureNames[EIG_MEASURES] = {"lapack", "cpu", "omp", "cuda", "torch"};

/* --sizes: the orders measured. */
typedef struct {
    long n[64];
    int count;
} eig_size_list;

typedef struct {
    long matrices, threads, torch_matrices;
    eig_size_list sizes;
    int measure[EIG_MEASURES];
    /* the GPU tuning knobs (0: the tuning table's) and balancing (--no-balance clears it) */
    long cuda_lanes, cuda_chunk, cuda_reduce_lanes, cuda_qr_grid, cuda_slots;
    int cuda_timeline, balance;
    long gpus;       /* --gpus: -1 unless given (bench_scaling_gpus) */
    int device_count; /* the GPUs of the cuda runs: 1, or the scaling line's count */
} eig_bench_args;

static void fill_random(double *a, size_t count, uint64_t seed)
{
    bench_rng r = bench_rng_seed(seed, 1);
    for (size_t i = 0; i < count; ++i) a[i] = bench_rng_symmetric(&r); /* uniform in [-1, 1), as the seed's */
}

/* Goals judged, missed, and measurements skipped, for the closing line. */
static int goals_judged, goals_missed, skipped;
static void verdict(int met)
{
    ++goals_judged;
    goals_missed += !met;
    printf("%s\n", bench_verdict(met));
}

#ifdef TK_HAVE_LAPACKE
/* OpenBLAS threads inside our OpenMP threads would only oversubscribe. */
extern void openblas_set_num_threads(int) __attribute__((weak));

/* One LAPACKE dgeev per matrix (eigenvalues only), OpenMP across matrices, a
 * workspace per thread from one query (so LAPACK is timed, not malloc).  The data
 * are row-major; read column-major they are A^T, whose eigenvalues are A's. */
static double lapack_ms(int n, size_t count, const double *a, long threads, size_t *failed)
{
    const size_t nn = (size_t)n * (size_t)n;
    size_t bad = 0;
    int nthreads = 1;
#ifdef _OPENMP
    nthreads = threads > 0 ? (int)threads : omp_get_max_threads();
#endif
    (void)threads;
    double t0 = tk_cli_now_ms();
#pragma omp parallel num_threads(nthreads) reduction(+ : bad)
    {
        double *w = malloc(sizeof(double) * (nn + 2 * (size_t)n));
        double query = 0;
        LAPACKE_dgeev_work(LAPACK_COL_MAJOR, 'N', 'N', n, w, n, w, w, NULL, 1, NULL, 1, &query, -1);
        lapack_int lwork = (lapack_int)query;
        double *work = malloc(sizeof(double) * (size_t)(lwork > 1 ? lwork : 1));
#pragma omp for schedule(dynamic, 64)
        for (long long b = 0; b < (long long)count; ++b) {
            if (!w || !work) {
                ++bad;
                continue;
            }
            memcpy(w, a + (size_t)b * nn, sizeof(double) * nn);
            lapack_int info = LAPACKE_dgeev_work(LAPACK_COL_MAJOR, 'N', 'N', n, w, n, w + nn, w + nn + n, NULL, 1,
                                                 NULL, 1, work, lwork);
            bad += info != 0;
        }
        free(work);
        free(w);
    }
    *failed = bad;
    return tk_cli_now_ms() - t0;
}

static const char *lapack_library(void)
{
    Dl_info info;
    void *sym = dlsym(RTLD_DEFAULT, "dgeev_");
    if (sym && dladdr(sym, &info) && info.dli_fname) return info.dli_fname;
    return "unknown";
}
#endif

/* torch.linalg.eigvals as a reference, where python3 can import torch: a child
 * python3 times it on the CPU (P threads) and, where CUDA is available, on the GPU with
 * the matrices already there, for `count` random matrices of order n (the same
 * distribution; torch draws its own).  The script holds no single quote: it goes to the
 * shell inside them. */
static const char torch_script[] =
    "import sys, time\n"
    "import torch\n"
    "n, count, threads = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])\n"
    "torch.set_num_threads(threads)\n"
    "print(\"version\", torch.__version__, flush=True)\n"
    "for dev in [\"cpu\"] + ([\"cuda\"] if torch.cuda.is_available() else []):\n"
    "    d = torch.device(dev)\n"
    "    g = torch.Generator(device=d).manual_seed(n)\n"
    "    x = torch.rand(count, n, n, dtype=torch.float64, device=d, generator=g) * 2 - 1\n"
    "    torch.linalg.eigvals(x[:16])\n"
    "    if dev == \"cuda\": torch.cuda.synchronize()\n"
    "    t0 = time.perf_counter()\n"
    "    torch.linalg.eigvals(x)\n"
    "    if dev == \"cuda\": torch.cuda.synchronize()\n"
    "    print(dev, (time.perf_counter() - t0) * 1e3, flush=True)\n";

typedef struct {
    double cpu_ms, cuda_ms; /* < 0: not measured */
    char version[64];
} torch_times;

/* 0 when python3 or torch is missing or the script failed (why: in `why`). */
static int torch_measure(int n, long count, int threads, torch_times *t, char *why, size_t why_size)
{
    char cmd[sizeof torch_script + 128], line[256];
    snprintf(cmd, sizeof cmd, "python3 -c '%s' %d %ld %d 2>&1", torch_script, n, count, threads);
    t->cpu_ms = t->cuda_ms = -1, t->version[0] = 0;
    fflush(stdout);
    FILE *p = popen(cmd, "r");
    if (!p) return snprintf(why, why_size, "cannot run python3"), 0;
    char last[256] = "";
    while (fgets(line, sizeof line, p)) {
        double ms;
        char ver[64];
        if (sscanf(line, "version %63s", ver) == 1) snprintf(t->version, sizeof t->version, "%s", ver);
        else if (sscanf(line, "cpu %lf", &ms) == 1) t->cpu_ms = ms;
        else if (sscanf(line, "cuda %lf", &ms) == 1) t->cuda_ms = ms;
        else snprintf(last, sizeof last, "%s", line);
    }
    const int rc = pclose(p);
    if (t->cpu_ms >= 0) return 1;
    last[strcspn(last, "\n")] = 0;
    snprintf(why, why_size, "python3 with torch did not run (exit %d%s%s)", rc, *last ? ": " : "", last);
    return 0;
}

/* The torch lines of order n, beside our host-to-host and omp times (< 0: not
 * measured); the first failure prints why and turns torch off for the other sizes. */
static void torch_lines(int n, size_t count, long torch_count, int threads, double cuda_e2e, double omp_ms, int *on)
{
    static int said;
    const long k = (size_t)torch_count < count ? torch_count : (long)count;
    const double scale = (double)count / (double)k;
    torch_times t;
    char why[320], ref[64], ratio[32], name[40];
    if (!torch_measure(n, k, threads, &t, why, sizeof why)) {
        printf("# torch: skipped: %s\n", why);
        *on = 0;
        return;
    }
    if (!said++)
        printf("# torch %s: linalg.eigvals on %ld matrices per size, times scaled to %zu%s\n", t.version, k, count,
               t.cuda_ms < 0 ? "; no CUDA for torch here" : "");
    const double ours[2] = {cuda_e2e, omp_ms}, theirs[2] = {t.cuda_ms, t.cpu_ms};
    for (int d = 0; d < 2; ++d) {
        if (theirs[d] < 0) continue;
        const double ms = theirs[d] * scale;
        if (d) snprintf(name, sizeof name, "torch cpu (%d thr)", threads);
        else snprintf(name, sizeof name, "torch cuda (on device)");
        if (ours[d] > 0) {
            snprintf(ref, sizeof ref, "%s %.3f ms", d ? "omp" : "cuda host-to-host", ours[d]);
            snprintf(ratio, sizeof ratio, "%.1fx", ms / ours[d]);
        } else {
            snprintf(ref, sizeof ref, "-"), snprintf(ratio, sizeof ratio, "-");
        }
        printf("%-3d %-22s %12.2f   %-26s %9s   (reference: ours faster by the ratio)\n", n, name, ms, ref, ratio);
    }
}

/* The GPU tuning flags into the options. */
static void apply_cuda_flags(const eig_bench_args *a, tk_eig_options *o)
{
    o->cuda_lanes = (int)a->cuda_lanes, o->cuda_chunk = (size_t)a->cuda_chunk;
    o->cuda_reduce_lanes = (int)a->cuda_reduce_lanes, o->cuda_qr_grid = (int)a->cuda_qr_grid;
    o->cuda_slots = (int)a->cuda_slots, o->cuda_timeline = a->cuda_timeline;
    o->cuda_device_count = a->device_count;
}

static double backend_ms(const eig_bench_args *args, int n, size_t count, const double *a, double *values,
                         int8_t *status, tk_backend backend, long threads, size_t *failed, double *kernel_ms)
{
    tk_eig_options o;
    tk_eig_options_init(&o, n);
    o.backend = backend;
    o.balance = args->balance;
    if (backend == TK_BACKEND_CUDA) apply_cuda_flags(args, &o);
    o.num_threads = (int)threads;
    tk_eig_result r = {values, NULL, status};
    tk_timing t;
    if (tk_eig_solve(&o, count, a, &r, &t, failed) != TK_OK) return -1;
    if (kernel_ms) *kernel_ms = t.kernel_ms;
    return t.total_ms;
}

/* Quiet before each timed host-to-host CUDA run.  The driver goes on working on the
 * device memory a call freed for a while after the call returns, and the next call's
 * host-to-device copies share the machine with that work: on an H200
 * (scripts/device/copy_probe.cu), copies into a new allocation made right after freeing
 * one of 1.3 GB ran at 18-35 GB/s instead of 54 for about 10 ms, and not at all slower
 * 0.3 s later.  tk-eig makes one call a process, so its runs are timed apart; the
 * back-to-back figure is printed beside them. */
#define CUDA_PAUSE_MS 500

static void pause_ms(int ms)
{
    struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0) {
    }
}

/* One timed run of a median-of-three (-1: it failed); kernel_ms, where given, its kernel time. */
typedef double (*timed_run)(void *ctx, double *kernel_ms);

/* The median of three runs, each after `pause` ms of quiet (-1 as soon as one fails), after
 * `warmups` untimed ones; kernel_ms, where given, is the median run's.  The LAPACK, omp and
 * host-to-host figures are each the median of three runs: on the lent GPU machine a single
 * LAPACK run at n = 5 took anywhere from 203 to 332 ms from one benchmark run to the next. */
static double median_of_three(timed_run run, void *ctx, int pause, int warmups, double *kernel_ms)
{
    double runs[3], kerns[3] = {0, 0, 0};
    for (int w = 0; w < warmups; ++w)
        if (run(ctx, NULL) < 0) return -1;
    for (int r = 0; r < 3; ++r) {
        if (pause) pause_ms(pause);
        if ((runs[r] = run(ctx, &kerns[r])) < 0) return -1;
    }
    const int mid = bench_median_index(runs, 3);
    if (kernel_ms) *kernel_ms = kerns[mid];
    return runs[mid];
}

/* A one-shot solve's arguments (backend_ms), or a kept plan's execute's (plan set). */
typedef struct {
    const eig_bench_args *args;
    int n;
    size_t count;
    const double *a;
    double *values;
    int8_t *status;
    tk_backend backend;
    long threads;
    size_t *failed;
    tk_eig_plan *plan;
} eig_run;

static double one_shot_run(void *ctx, double *kernel_ms)
{
    const eig_run *e = ctx;
    return backend_ms(e->args, e->n, e->count, e->a, e->values, e->status, e->backend, e->threads, e->failed, kernel_ms);
}

static double plan_run(void *ctx, double *kernel_ms)
{
    const eig_run *e = ctx;
    tk_eig_result r = {e->values, NULL, e->status};
    tk_timing t;
    if (tk_eig_plan_execute(e->plan, e->count, e->a, &r, &t, e->failed) != TK_OK) return -1;
    if (kernel_ms) *kernel_ms = t.kernel_ms;
    return t.total_ms;
}

/* The median of three executes of one kept plan (the caller that solves batch after batch,
 * as a cuFFT user keeps a plan), each after `pause` ms of quiet, after a warm-up execute (the
 * first touches the plan's buffers): the plan's device and pinned buffers, streams and events
 * are made once, so the figure is the copies and kernels of a batch without the one-shot
 * call's set-up and destroy (on some lent H100s 0.25-1.2 ms of a 3 ms batch at n = 5).  -1
 * when the plan or an execute fails. */
static double median_plan_ms(const eig_bench_args *args, int n, size_t count, const double *a, double *values,
                             int8_t *status, int pause, size_t *failed)
{
    tk_eig_options o;
    tk_eig_options_init(&o, n);
    o.backend = TK_BACKEND_CUDA;
    o.balance = args->balance;
    apply_cuda_flags(args, &o);
    eig_run e = {.args = args, .n = n, .count = count, .a = a, .values = values, .status = status, .failed = failed};
    if (tk_eig_plan_create(&o, count, &e.plan) != TK_OK) return -1;
    const double ms = median_of_three(plan_run, &e, pause, 1, NULL);
    tk_eig_plan_destroy(e.plan);
    return ms;
}

/* The median of three one-shot solves (median_of_three). */
static double median_backend_ms(const eig_bench_args *args, int n, size_t count, const double *a, double *values,
                                int8_t *status, tk_backend backend, long threads, int pause, size_t *failed,
                                double *kernel_ms)
{
    eig_run e = {.args = args, .n = n, .count = count, .a = a, .values = values, .status = status,
                 .backend = backend, .threads = threads, .failed = failed};
    return median_of_three(one_shot_run, &e, pause, 0, kernel_ms);
}

static int parse_sizes(const char *prog, const char *flag, const char *value, void *dest)
{
    eig_size_list *sizes = dest;
    return bench_parse_long_list(prog, flag, value, 1, TK_EIG_MAX_N, sizes->n, 64, &sizes->count);
}

static int parse_measures(const char *prog, const char *flag, const char *value, void *dest)
{
    return bench_parse_names(prog, flag, value, kMeasureNames, EIG_MEASURES, (int *)dest);
}

#define ARG(member) offsetof(eig_bench_args, member)
static const tk_option options[] = {
    BENCH_LONG("matrices", "M", 1, 100000000, ARG(matrices), "random matrices per size (default 500000, the seed's)"),
    BENCH_CUSTOM("sizes", "N,N,...", parse_sizes, ARG(sizes), "the orders, at most 64 (default 5,10,15,20,25,30)"),
    BENCH_CUSTOM("backends", "lapack,cpu,omp,cuda,torch", parse_measures, ARG(measure),
                 "what to measure (default: all but cpu)"),
    BENCH_THREADS_OPTION(ARG(threads), "CPU threads of lapack, omp and torch (default: all cores)"),
    BENCH_LONG("cuda-lanes", "G", 0, 64, ARG(cuda_lanes),
               "threads per matrix on the GPU (1, 2, 4, 8, 16, 32, 64;\ndefault: from n)"),
    BENCH_LONG("cuda-chunk", "M", 0, 100000000, ARG(cuda_chunk),
               "at most M matrices per chunk of the host-to-host run\n(default: from n and memory)"),
    BENCH_LONG("cuda-reduce-lanes", "R", 0, 32, ARG(cuda_reduce_lanes),
               "lanes per matrix of the lockstep reduction kernel (2..32;\ndefault: the table's)"),
    BENCH_LONG("cuda-qr-grid", "B", -1, 1000000, ARG(cuda_qr_grid),
               "the persistent QR kernel on B blocks at any n (-1: the other\nkernel; default: the table's)"),
    BENCH_LONG("cuda-slots", "S", 0, 16, ARG(cuda_slots),
               "buffers of the host-to-host pipeline (1..16; default: the\ntable's)"),
    BENCH_FLAG("cuda-timeline", ARG(cuda_timeline),
               "print each chunk's copies and kernels and the host's set-up\nto stderr"),
    BENCH_CLEAR_FLAG("no-balance", ARG(balance),
                     "this library without balancing (LAPACK's dgeev still\nbalances: for tuning)"),
    BENCH_GPUS_OPTION(ARG(gpus), "cuda host-to-host"),
    BENCH_LONG("torch-matrices", "K", 1, 100000000, ARG(torch_matrices),
               "torch runs on K matrices (slow on the GPU), scaled to\n--matrices (default 10000)"),
};
#undef ARG

static const bench_suite suite = {
    .prog = "tk-bench eig",
    .description = "Eigenvalues (no vectors) of random double matrices, entries uniform in [-1, 1].\n"
                   "cuda kernel:    matrices already in GPU memory, CUDA events; reference: the seed's\n"
                   "                TITAN X (Table 4, scaled to --matrices); goal >= 20x faster\n"
                   "cuda e2e:       host to host (pinned), chunks over streams; reference: the H2D\n"
                   "                copy of the matrices plus the D2H copy of the values alone; goal <= 1.25x\n"
                   "cuda h2h, kept plan: the same through one tk_eig_plan made before its runs (no\n"
                   "                allocation in the timed calls); same goal\n"
                   "lapack:         one LAPACKE dgeev per matrix, OpenMP across matrices, all cores\n"
                   "omp:            this library on the same cores; goal >= 3x LAPACK\n"
                   "                (lapack, omp and host-to-host: the median of 3 runs; host-to-host runs\n"
                   "                0.5 s apart, as separate tk-eig calls are, and back to back beside them)\n"
                   "cuda vs lapack: host-to-host time; goal >= 30x LAPACK\n"
                   "torch:          torch.linalg.eigvals beside cuda host-to-host and omp, where python3 can\n"
                   "                import torch (GPU: matrices already there; CPU: P threads); no goal\n",
    .options = options,
    .count = TK_OPT_COUNT(options),
};

int tk_bench_eig(int argc, char **argv)
{
    eig_bench_args a = {.matrices = 500000, .torch_matrices = 10000, .sizes = {{5, 10, 15, 20, 25, 30}, 6},
                        .measure = {1, 0, 1, 1, 1}, .balance = 1, .gpus = -1, .device_count = 1};
    if (!bench_parse_suite(&suite, argc, argv, &a, NULL)) return TK_EXIT_USAGE;
    const int scaling_gpus = a.measure[EIG_CUDA] ? bench_scaling_gpus(a.gpus) : 0;
    int threads = 1;
#ifdef _OPENMP
    threads = a.threads > 0 ? (int)a.threads : omp_get_max_threads();
#endif
    const size_t count = (size_t)a.matrices;
    const double seed_scale = (double)count / SEED_MATRICES;
    printf("# tk-bench eig: %zu random double matrices per size, eigenvalues only, %d CPU threads\n", count, threads);
#ifdef TK_HAVE_LAPACKE
    if (openblas_set_num_threads) openblas_set_num_threads(1);
    if (a.measure[EIG_LAPACK]) printf("# lapack: LAPACKE_dgeev_work per matrix from %s\n", lapack_library());
#else
    if (a.measure[EIG_LAPACK]) {
        printf("# lapack: skipped: this build found no LAPACKE (liblapacke-dev); the ratios to LAPACK are left out\n");
        a.measure[EIG_LAPACK] = 0;
    }
#endif
    int have_lapack = 0;
#ifdef TK_HAVE_LAPACKE
    have_lapack = a.measure[EIG_LAPACK];
#endif
    if (count != (size_t)SEED_MATRICES) printf("# seed figures scaled linearly to %zu matrices\n", count);
    printf("%-3s %-22s %12s   %-26s %9s   %s\n", "n", "measure", "ms", "reference", "ratio", "goal");
    for (int s = 0; s < a.sizes.count; ++s) {
        const int n = (int)a.sizes.n[s];
        const size_t nn = (size_t)n * (size_t)n;
        double *mat = tk_eig_host_alloc(count * nn * sizeof(double));
        double *values = tk_eig_host_alloc(count * 2 * (size_t)n * sizeof(double));
        int8_t *status = tk_eig_host_alloc(count);
        if (!mat || !values || !status) {
            printf("%-3d skipped: out of host memory for %zu matrices\n", n, count);
            tk_eig_host_free(mat), tk_eig_host_free(values), tk_eig_host_free(status);
            ++skipped;
            continue;
        }
        fill_random(mat, count * nn, (uint64_t)n);
        memset(values, 0, count * 2 * (size_t)n * sizeof(double));
        memset(status, 0, count);
        double lap = -1, omp_ms = -1, cuda_e2e = -1;
        size_t failed = 0;
#ifdef TK_HAVE_LAPACKE
        if (a.measure[EIG_LAPACK]) {
            double runs[3];
            for (int r = 0; r < 3; ++r) runs[r] = lapack_ms(n, count, mat, threads, &failed);
            lap = bench_median(runs, 3);
            printf("%-3d %-22s %12.2f   %-26s %9s   %s", n, "lapack dgeev (omp)", lap, "-", "-", "-");
            printf(failed ? "   (%zu failed)\n" : "\n", failed);
        }
#endif
        if (a.measure[EIG_CPU]) {
            double ms = backend_ms(&a, n, count, mat, values, status, TK_BACKEND_CPU, 1, &failed, NULL);
            if (ms < 0) printf("%-3d %-22s skipped: %s\n", n, "cpu (1 thread)", tk_last_error());
            else printf("%-3d %-22s %12.2f   %-26s %9s   %s\n", n, "cpu (1 thread)", ms, "-", "-", "-");
        }
        if (a.measure[EIG_OMP]) {
            omp_ms = median_backend_ms(&a, n, count, mat, values, status, TK_BACKEND_OMP, threads, 0, &failed, NULL);
            if (omp_ms < 0) {
                printf("%-3d %-22s skipped: %s\n", n, "omp", tk_last_error());
                ++skipped;
            } else {
                char ref[64] = "-", ratio[32] = "-";
                if (lap > 0) {
                    snprintf(ref, sizeof ref, "lapack %.2f ms", lap);
                    snprintf(ratio, sizeof ratio, "%.2fx", lap / omp_ms);
                }
                printf("%-3d %-22s %12.2f   %-26s %9s   ", n, "omp", omp_ms, ref, ratio);
                if (lap > 0) {
                    printf(">= 3x lapack: ");
                    verdict(lap / omp_ms >= 3);
                } else {
                    printf("-\n");
                }
                if (failed) printf("    (%zu matrices did not converge)\n", failed);
            }
        }
        if (a.measure[EIG_CUDA]) {
            tk_eig_options o;
            tk_eig_options_init(&o, n);
            o.backend = TK_BACKEND_CUDA;
            o.balance = a.balance;
            apply_cuda_flags(&a, &o);
            tk_eig_cuda_profile prof;
            if (tk_eig_cuda_measure(&o, count, mat, &prof) != TK_OK) {
                printf("%-3d %-22s skipped: %s\n", n, "cuda", tk_last_error());
                ++skipped;
            } else {
                char name[64], ref[64];
                const double seed = seed_ms(n) * seed_scale;
                snprintf(name, sizeof name, "cuda kernel (%s)", prof.scheme);
                if (seed > 0) {
                    snprintf(ref, sizeof ref, "seed TITAN X %.2f ms", seed);
                    printf("%-3d %-22s %12.3f   %-26s %8.1fx   >= 20x seed: ", n, name, prof.kernel_ms, ref,
                           seed / prof.kernel_ms);
                    verdict(seed / prof.kernel_ms >= 20);
                } else {
                    printf("%-3d %-22s %12.3f   %-26s %9s   -\n", n, name, prof.kernel_ms, "(no seed figure)", "-");
                }
                /* warm-up of the streamed path, then the median of three host-to-host runs
                 * apart (the goal's) and of three back to back */
                backend_ms(&a, n, count < 1024 ? count : 1024, mat, values, status, TK_BACKEND_CUDA, 0, &failed, NULL);
                double kern = 0, kern_b2b = 0;
                cuda_e2e = median_backend_ms(&a, n, count, mat, values, status, TK_BACKEND_CUDA, 0, CUDA_PAUSE_MS,
                                             &failed, &kern);
                const double b2b = cuda_e2e < 0 ? -1
                                                : median_backend_ms(&a, n, count, mat, values, status, TK_BACKEND_CUDA,
                                                                    0, 0, &failed, &kern_b2b);
                if (cuda_e2e < 0 || b2b < 0) {
                    printf("%-3d %-22s skipped: %s\n", n, "cuda host-to-host", tk_last_error());
                    ++skipped;
                } else {
                    snprintf(ref, sizeof ref, "copies alone %.3f ms", prof.copy_ms);
                    printf("%-3d %-22s %12.3f   %-26s %8.2fx   <= 1.25x copies: ", n, "cuda host-to-host", cuda_e2e,
                           ref, cuda_e2e / prof.copy_ms);
                    verdict(cuda_e2e / prof.copy_ms <= 1.25);
                    printf("    (median of 3 runs %d ms apart; its kernels took %.3f ms in all; 3 runs back to back: "
                           "%.3f ms, %.2fx the copies)\n",
                           CUDA_PAUSE_MS, kern, b2b, b2b / prof.copy_ms);
                    if (failed) printf("    (%zu matrices did not converge)\n", failed);
                    const double kept = median_plan_ms(&a, n, count, mat, values, status, CUDA_PAUSE_MS, &failed);
                    if (kept < 0) {
                        printf("%-3d %-22s skipped: %s\n", n, "cuda h2h, kept plan", tk_last_error());
                        ++skipped;
                    } else {
                        printf("%-3d %-22s %12.3f   %-26s %8.2fx   <= 1.25x copies: ", n, "cuda h2h, kept plan", kept,
                               ref, kept / prof.copy_ms);
                        verdict(kept / prof.copy_ms <= 1.25);
                        printf("    (one plan made before its 3 executes, each %d ms apart: no device allocation in "
                               "the timed calls)\n",
                               CUDA_PAUSE_MS);
                    }
                    if (scaling_gpus) {
                        /* the same host-to-host run split over the GPUs (each a contiguous share) */
                        eig_bench_args multi = a;
                        multi.device_count = scaling_gpus;
                        backend_ms(&multi, n, count < 1024 ? count : 1024, mat, values, status, TK_BACKEND_CUDA, 0,
                                   &failed, NULL);
                        double kern_multi = 0;
                        const double ms = median_backend_ms(&multi, n, count, mat, values, status, TK_BACKEND_CUDA, 0,
                                                            CUDA_PAUSE_MS, &failed, &kern_multi);
                        char label[64];
                        snprintf(label, sizeof label, "cuda h2h, %d GPUs", scaling_gpus);
                        if (ms < 0) {
                            printf("%-3d %-22s skipped: %s\n", n, label, tk_last_error());
                            ++skipped;
                        } else {
                            snprintf(ref, sizeof ref, "1 GPU %.3f ms", cuda_e2e);
                            printf("%-3d %-22s %12.3f   %-26s %8.2fx   speed-up (kernels: the slowest GPU's %.3f ms, "
                                   "%.2fx)\n",
                                   n, label, ms, ref, cuda_e2e / ms, kern_multi, kern / kern_multi);
                        }
                    }
                    if (lap > 0) {
                        snprintf(ref, sizeof ref, "lapack %.2f ms", lap);
                        printf("%-3d %-22s %12.3f   %-26s %8.1fx   >= 30x lapack: ", n, "cuda vs lapack", cuda_e2e,
                               ref, lap / cuda_e2e);
                        verdict(lap / cuda_e2e >= 30);
                    } else if (omp_ms > 0) {
                        /* no LAPACK in this build: the omp backend as the CPU reference, no goal */
                        snprintf(ref, sizeof ref, "omp %.2f ms", omp_ms);
                        printf("%-3d %-22s %12.3f   %-26s %8.1fx   (no LAPACK: no goal)\n", n, "cuda vs omp", cuda_e2e,
                               ref, omp_ms / cuda_e2e);
                    }
                }
            }
        }
        if (a.measure[EIG_TORCH])
            torch_lines(n, count, (long)a.torch_matrices, threads, cuda_e2e, omp_ms, &a.measure[EIG_TORCH]);
        fflush(stdout);
        tk_eig_host_free(mat), tk_eig_host_free(values), tk_eig_host_free(status);
    }
    printf("# goals: %d of %d met", goals_judged - goals_missed, goals_judged);
    if (skipped) printf("; %d measurements skipped", skipped);
    if (!have_lapack) printf("; the LAPACK goals need a build with LAPACKE");
    printf("\n");
    return 0;
}
