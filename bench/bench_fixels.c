/* tk-bench fixels: fixel segmentation throughput beside MRtrix3's fod2fixel, on the same real
 * FOD voxels (dwi2fod's lmax-8 FOD of DIPY's small_64D, tiled), the same threads, in the same
 * run: both tools as whole processes on one .mif (file I/O included: the issue's >= 20x goal
 * compares those two), and the core memory to memory on cpu and omp. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "bench_common.h"
#include "bench_json.h"
#include "bench_options.h"
#include "cli.h"
#include "mif_io.h"
#include "tk_fixels.h"
#include "tk_npy.h"

static const char *prog = "tk-bench fixels";

typedef struct {
    long voxels, threads, repeat, gpus; /* gpus: -1 unless given (bench_scaling_gpus) */
    int backends[3];
    const char *fod2fixel, *tk_fixels, *input;
    int directions;
} fixels_args;

static const tk_opt_choice direction_sets[] = {{"1281", 1281, 0}, {"5121", 5121, 0}, {NULL, 0, 0}};

static int parse_program(const char *prog_name, const char *flag, const char *value, void *dest)
{
    (void)prog_name, (void)flag;
    *(const char **)dest = strcmp(value, "off") ? value : NULL;
    return 1;
}

#define ARG(member) offsetof(fixels_args, member)
static const tk_option options[] = {
    BENCH_TEXT("input", "SH.npy", ARG(input), "the FOD voxels, tiled (default\n" TK_BENCH_TRACK_FOD ")"),
    BENCH_LONG("voxels", "V", 1, 100000000, ARG(voxels), "voxels (default 20000)"),
    BENCH_BACKENDS_OPTION(ARG(backends), "the core's backends to measure (default cpu,omp,cuda)"),
    BENCH_THREADS_OPTION(ARG(threads), "threads of omp, fod2fixel and tk-fixels (default: all cores)"),
    BENCH_LONG("repeat", "R", 1, 7, ARG(repeat), "runs of each figure, the median reported (default 3)"),
    BENCH_GPUS_OPTION(ARG(gpus), "the cuda run"),
    BENCH_CHOICE("directions", "1281|5121", direction_sets, ARG(directions),
                 "tk-fixels' and the core's direction set (default 1281, fod2fixel's)"),
    BENCH_CUSTOM("fod2fixel", "fod2fixel|off", parse_program, ARG(fod2fixel),
                 "MRtrix3's fod2fixel to compare with, or off (default on PATH)"),
    BENCH_CUSTOM("tk-fixels", "PATH|off", parse_program, ARG(tk_fixels),
                 "tk-fixels to time as a whole process, or off (default: the one\nbeside tk-bench, else on PATH)"),
};
#undef ARG

static const bench_suite suite = {
    .prog = "tk-bench fixels",
    .description = "Fixel segmentation (FMLS, fod2fixel's) of real FOD voxels: fod2fixel and tk-fixels as whole\n"
                   "processes on the same .mif (the index, directions and -afd written), in turn, --repeat times,\n"
                   "each the median; the core memory to memory (cpu, omp; cuda: transfers included).\n",
    .options = options,
    .count = TK_OPT_COUNT(options),
};

static const char *beside_me(char *buf, size_t size, const char *name)
{
    ssize_t n = readlink("/proc/self/exe", buf, size - 16);
    if (n > 0) {
        buf[n] = '\0';
        char *slash = strrchr(buf, '/');
        if (slash) {
            strcpy(slash + 1, name);
            if (access(buf, X_OK) == 0) return buf;
        }
    }
    return name;
}

static float *tiled(const char *path, size_t voxels, int *lmax)
{
    tk_npy_array arr;
    if (tk_npy_read(path, &arr) != TK_OK) {
        tk_cli_error(prog, "%s", tk_last_error());
        return NULL;
    }
    const size_t k = arr.ndim ? arr.shape[arr.ndim - 1] : 0;
    *lmax = tk_sh_lmax_for_count(k);
    float *sh = NULL;
    if (arr.dtype != TK_NPY_FLOAT32 || *lmax < 2 || arr.count == 0)
        tk_cli_error(prog, "%s: expected float32 SH coefficients on the last axis", path);
    else if ((sh = malloc(sizeof(float) * k * voxels)) != NULL)
        for (size_t v = 0; v < voxels; ++v)
            memcpy(sh + v * k, (const float *)arr.data + (v % (arr.count / k)) * k, sizeof(float) * k);
    else
        tk_cli_error(prog, "out of memory for %zu voxels; use fewer --voxels", voxels);
    tk_npy_free(&arr);
    return sh;
}

static void remove_dir(const char *dir)
{
    const char *names[] = {"index.mif", "directions.mif", "afd.mif"};
    char path[256];
    for (int i = 0; i < 3; ++i) snprintf(path, sizeof path, "%s/%s", dir, names[i]), remove(path);
    rmdir(dir);
}

/* The median of `repeat` executes of one plan for o (at most 7), -1 where none ran; *made:
 * the plan's status, *kernel_ms the median of the executes' kernel times (cuda: the chunks'
 * kernels, each timed on its stream, summed: the part of the total that is not transfers). */
static double median_execute_ms(const tk_fixels_options *o, size_t voxels, const float *sh, uint8_t *count, float *afd,
                                float *dirs, long repeat, tk_status *made, double *kernel_ms)
{
    tk_fixels_plan *plan = NULL;
    double ms[7], kms[7];
    int n = 0;
    if ((*made = tk_fixels_plan_create(o, &plan)) == TK_OK)
        for (int r = 0; r < repeat && r < 7; ++r) {
            tk_fixels_output res = {count, afd, NULL, dirs, NULL, NULL, 0, 0};
            tk_timing t;
            if (tk_fixels_plan_execute(plan, voxels, sh, NULL, &res, &t) == TK_OK) ms[n] = t.total_ms, kms[n++] = t.kernel_ms;
        }
    tk_fixels_plan_destroy(plan);
    *kernel_ms = n ? bench_median(kms, n) : -1;
    return n ? bench_median(ms, n) : -1;
}

int tk_bench_fixels(int argc, char **argv)
{
    char exe[4096];
    fixels_args a = {20000, 0, 3, -1, {1, 1, 1}, "fod2fixel", NULL, NULL, 1281};
    a.tk_fixels = beside_me(exe, sizeof exe, "tk-fixels");
    if (!bench_parse_suite(&suite, argc, argv, &a, NULL)) return TK_EXIT_USAGE;
    const int scaling_gpus = a.backends[2] ? bench_scaling_gpus(a.gpus) : 0;
    const char *input = a.input ? a.input : TK_BENCH_TRACK_FOD;
    int lmax = 0;
    const size_t voxels = (size_t)a.voxels;
    float *sh = tiled(input, voxels, &lmax);
    if (!sh) return TK_EXIT_FAILURE;
    const size_t k = tk_sh_num_coeffs(lmax);
    char threads[32], dir[64], in[96], out[96];
    snprintf(threads, sizeof threads, "%ld", a.threads > 0 ? a.threads : sysconf(_SC_NPROCESSORS_ONLN));
    printf("# tk-bench fixels: %s tiled to %zu voxels, lmax %d, %d directions, %s threads; goal: tk-fixels >= 20x fod2fixel\n"
           "# (whole processes, same cores)\n", input, voxels, lmax, a.directions, threads);
    tk_bench_json_setting_num("lmax", lmax), tk_bench_json_setting_num("threads", a.threads);
    tk_bench_json_setting_num("directions", a.directions);
    tk_bench_json_reference("goal tk-fixels vs fod2fixel", 20, "x", "issue goal, whole processes, same cores");
    tk_bench_json_reference("goal cuda voxels/s (lmax 8)", 1e7, "voxels/s", "issue goal, transfers included");
    printf("%-10s %9s %10s %13s  %s\n", "program", "voxels", "total_ms", "voxels/s", "goal");
    snprintf(dir, sizeof dir, "/tmp/tk-bench-fixels-XXXXXX");
    double ref_rate = 0;
    if ((a.fod2fixel || a.tk_fixels) && mkdtemp(dir)) {
        snprintf(in, sizeof in, "%s/fod.mif", dir), snprintf(out, sizeof out, "%s/fx", dir);
        const size_t dim[4] = {voxels, 1, 1, k};
        if (tk_mif_write_f32(in, dim, sh)) {
            double runs[2][7];
            int n[2] = {0, 0};
            for (int r = 0; r < a.repeat; ++r) {
                char *ref[] = {(char *)a.fod2fixel, "-quiet", "-force", "-nthreads", threads, "-afd", "afd.mif", in, out, NULL};
                char *ours[] = {(char *)a.tk_fixels, "-q", "--force", "--backend", "omp", "--threads", threads, "--afd",
                                "afd.mif", "--directions", a.directions == 5121 ? "5121" : "1281", in, out, NULL};
                for (int t = 0; t < 2; ++t) {
                    if (!(t ? a.tk_fixels : a.fod2fixel) || (r > 0 && n[t] == 0)) continue;
                    const double s = bench_timed_process(t ? ours : ref);
                    if (s > 0) runs[t][n[t]++] = s;
                    remove_dir(out);
                }
            }
            for (int t = 0; t < 2; ++t) {
                const char *name = t ? "tk-fixels" : "fod2fixel";
                if (!(t ? a.tk_fixels : a.fod2fixel)) continue;
                if (!n[t]) {
                    printf("%-10s skipped: it did not run (--%s PATH, or off)\n", name, name);
                    continue;
                }
                const double s = bench_median(runs[t], n[t]), rate = voxels / s;
                char goal[96] = "reference (whole process)";
                if (t && ref_rate > 0)
                    snprintf(goal, sizeof goal, "%.1fx fod2fixel (goal 20x: %s)", rate / ref_rate,
                             bench_verdict(rate >= 20 * ref_rate));
                if (!t) ref_rate = rate;
                printf("%-10s %9zu %10.1f %13.0f  %s\n", name, voxels, s * 1000, rate, goal);
                tk_bench_json_row("fixels"), tk_bench_json_str("program", name), tk_bench_json_num("voxels", voxels);
                tk_bench_json_num("total_ms", s * 1000), tk_bench_json_num("voxels_per_s", rate);
            }
        }
        remove(in), rmdir(dir);
    }
    static const char *const names[3] = {"cpu", "omp", "cuda"};
    for (int b = 0; b < 3; ++b) {
        if (!a.backends[b]) continue;
        tk_fixels_options o;
        tk_fixels_options_init(&o, lmax);
        o.backend = (tk_backend)b, o.num_threads = (int)a.threads, o.directions = a.directions;
        const int S = 8;
        o.max_fixels = S;
        uint8_t *count = malloc(voxels);
        float *afd = malloc(sizeof(float) * voxels * S), *dirs = malloc(sizeof(float) * voxels * S * 3);
        tk_status made = TK_ERR_MEMORY;
        double kernel_ms = -1;
        const double m = count && afd && dirs ? median_execute_ms(&o, voxels, sh, count, afd, dirs, a.repeat, &made, &kernel_ms)
                                              : -1;
        if (m >= 0) {
            const double rate = voxels / (m / 1000);
            char goal[96] = "";
            if (b == 2)
                snprintf(goal, sizeof goal, "transfers included (kernels %.1f ms); goal 10M voxels/s at lmax 8: %s",
                         kernel_ms, bench_verdict(rate >= 1e7));
            else if (ref_rate > 0)
                snprintf(goal, sizeof goal, "memory to memory: %.1fx fod2fixel", rate / ref_rate);
            printf("%-10s %9zu %10.1f %13.0f  %s\n", names[b], voxels, m, rate, goal);
            tk_bench_json_row("fixels"), tk_bench_json_str("program", names[b]);
            tk_bench_json_num("voxels", voxels), tk_bench_json_num("total_ms", m), tk_bench_json_num("voxels_per_s", rate);
            if (b == 2) tk_bench_json_num("kernel_ms", kernel_ms);
            if (b == 2 && scaling_gpus) {
                /* the same run split over the GPUs, each a contiguous share of the voxels */
                o.cuda_device_count = scaling_gpus;
                double kernel_mg = -1;
                const double mg = median_execute_ms(&o, voxels, sh, count, afd, dirs, a.repeat, &made, &kernel_mg);
                char label[32];
                snprintf(label, sizeof label, "cuda x%d", scaling_gpus);
                if (mg < 0) {
                    printf("%-10s failed: %s\n", label, tk_last_error());
                } else {
                    printf("%-10s %9zu %10.1f %13.0f  speed-up over 1 GPU %.2fx\n", label, voxels, mg, voxels / (mg / 1000),
                           m / mg);
                    tk_bench_json_row("fixels"), tk_bench_json_str("program", label), tk_bench_json_num("gpus", scaling_gpus);
                    tk_bench_json_num("voxels", voxels), tk_bench_json_num("total_ms", mg);
                    tk_bench_json_num("speedup", m / mg);
                }
            }
        } else if (b == 2 && (made == TK_ERR_UNSUPPORTED || made == TK_ERR_CUDA)) {
            printf("%-10s skipped: %s\n", names[b], tk_last_error());
        } else {
            printf("%-10s failed: %s\n", names[b], tk_last_error());
        }
        free(count), free(afd), free(dirs);
    }
    free(sh);
    return 0;
}
