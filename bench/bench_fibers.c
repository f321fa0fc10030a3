/* tk-bench fibers: peak-finder throughput and accuracy on an FOD-like volume, beside
 * MRtrix3's sh2peaks run on the same data, the same threads, in the same run.
 *
 * The volume: per voxel 1-3 fibers of random directions and weights, each the lmax-
 * truncated spike (what constrained spherical deconvolution aims at) with a mild
 * smoothing, plus coefficient noise: real CSD FODs look like this, including their
 * negative lobes and small spurious bumps.
 *
 * Accuracy: each reported peak is refined by an independent Newton ascent on the SH
 * series itself (finite-difference derivatives of tk_sh_eval, no tensor); the angle it
 * moves is the peak's error.  sh2peaks' peaks are matched to ours within 1 degree. */
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
#include "tk_bench_hooks.h"
#include "tk_fibers.h"
#include "tk_npy.h"


static const char *prog = "tk-bench fibers";
static const double kPi = 3.14159265358979323846;

typedef struct {
    long voxels, cuda_voxels, lmax, num, threads, repeat, accuracy_voxels, cuda_timeline;
    long gpus;        /* --gpus: -1 unless given (bench_scaling_gpus) */
    int scaling_gpus; /* its resolved count; 0: no scaling line */
    int backends[3];
    const char *sh2peaks, *input, *tk_fibers;
    int inputs[4]; /* which volumes: see kInputNames */
} fibers_args;

/* The volumes a run measures, each as users' files hold them: real FOD voxels from a brain's
 * interior, a noise-free phantom (what simulations write), and a whole-brain volume (the real
 * voxels inside a zero background, as dwi2fod writes outside its mask); the FOD-like synthetic
 * volume of earlier runs on request. */
enum { INPUT_REAL, INPUT_PHANTOM, INPUT_WHOLE_BRAIN, INPUT_FOD_LIKE, INPUT_COUNT };
static const char *const kInputNames[INPUT_COUNT] = {"real", "phantom", "wholebrain", "fodlike"};

static double rng_gauss(bench_rng *r)
{
    double u = bench_rng_uniform(r) + 1e-300, v = bench_rng_uniform(r);
    return sqrt(-2 * log(u)) * cos(2 * kPi * v);
}

static void random_unit(bench_rng *r, double *v)
{
    double n;
    do {
        for (int i = 0; i < 3; ++i) v[i] = rng_gauss(r);
        n = sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    } while (n < 1e-6);
    for (int i = 0; i < 3; ++i) v[i] /= n;
}

static float *fod_like_volume(int lmax, size_t voxels, uint64_t seed)
{
    const int k = (int)tk_sh_num_coeffs(lmax);
    float *sh = malloc(sizeof(float) * k * voxels);
    double y[TK_SH_MAX_LMAX * TK_SH_MAX_LMAX], smooth[TK_SH_MAX_LMAX + 1];
    if (!sh) return NULL;
    for (int l = 0; l <= lmax; l += 2) smooth[l] = exp(-0.01 * l * (l + 1));
    bench_rng r = bench_rng_seed(seed, 7);
    for (size_t v = 0; v < voxels; ++v) {
        float *c = sh + v * k;
        for (int j = 0; j < k; ++j) c[j] = (float)(0.005 * rng_gauss(&r));
        for (int f = 0; f < 1 + (int)(v % 3); ++f) {
            double dir[3], w = 0.3 + 0.7 * bench_rng_uniform(&r);
            random_unit(&r, dir);
            tk_sh_eval(TK_SH_TOURNIER, 0, lmax, dir, y);
            for (int l = 0, j = 0; l <= lmax; l += 2)
                for (int m = -l; m <= l; ++m, ++j) c[j] += (float)(w * smooth[l] * y[j]);
        }
    }
    return sh;
}

/* Legendre coefficients a_l (even l <= lmax) of the Watson lobe exp(kappa (t^2 - 1)) on
 * [-1, 1], by 64-point Gauss-Legendre quadrature (exact to rounding for kappa 10). */
static void watson_legendre(double kappa, int lmax, double *a)
{
    enum { N = 64 };
    double t[N], w[N];
    for (int i = 0; i < N; ++i) { /* nodes by Newton on P_N from Chebyshev guesses */
        double x = cos(kPi * (i + 0.75) / (N + 0.5)), dp = 1;
        for (int it = 0; it < 100; ++it) {
            double p0 = 1, p1 = x;
            for (int n = 2; n <= N; ++n) {
                double p2 = ((2 * n - 1) * x * p1 - (n - 1) * p0) / n;
                p0 = p1, p1 = p2;
            }
            dp = N * (x * p1 - p0) / (x * x - 1);
            double dx = p1 / dp;
            x -= dx;
            if (fabs(dx) < 1e-16) break;
        }
        t[i] = x, w[i] = 2 / ((1 - x * x) * dp * dp);
    }
    for (int l = 0; l <= lmax; l += 2) {
        double sum = 0;
        for (int i = 0; i < N; ++i) {
            double p0 = 1, p1 = t[i], pl = l == 0 ? 1 : t[i];
            for (int n = 2; n <= l; ++n) {
                double p2 = ((2 * n - 1) * t[i] * p1 - (n - 1) * p0) / n;
                p0 = p1, p1 = p2, pl = p2;
            }
            sum += w[i] * exp(kappa * (t[i] * t[i] - 1)) * pl;
        }
        a[l] = (2 * l + 1) / 2.0 * sum;
    }
}

/* A noise-free phantom as Data/fibers/make_phantom.py draws one: per voxel 1-3 fibers of
 * random directions and equal fractions, each a Watson lobe (kappa 10) projected exactly on
 * the even harmonics up to lmax (Funk-Hecke: c_lm = a_l 4 pi / (2l + 1) Y_lm(u)), scaled so
 * that one fiber's peak is 1.  No noise: single fibers are exactly axially symmetric. */
static float *phantom_volume(int lmax, size_t voxels, uint64_t seed)
{
    const int k = (int)tk_sh_num_coeffs(lmax);
    double a[TK_SH_MAX_LMAX + 1], y[TK_SH_MAX_LMAX * TK_SH_MAX_LMAX], peak = 0;
    float *sh = malloc(sizeof(float) * k * voxels);
    if (!sh) return NULL;
    watson_legendre(10.0, lmax, a);
    for (int l = 0; l <= lmax; l += 2) peak += a[l]; /* P_l(1) = 1 */
    bench_rng r = bench_rng_seed(seed, 11);
    for (size_t v = 0; v < voxels; ++v) {
        float *c = sh + v * k;
        const int fibers = 1 + (int)(v % 3);
        for (int j = 0; j < k; ++j) c[j] = 0;
        for (int f = 0; f < fibers; ++f) {
            double dir[3];
            random_unit(&r, dir);
            tk_sh_eval(TK_SH_TOURNIER, 0, lmax, dir, y);
            for (int l = 0, j = 0; l <= lmax; l += 2)
                for (int m = -l; m <= l; ++m, ++j) c[j] += (float)(a[l] * 4 * kPi / (2 * l + 1) * y[j] / peak / fibers);
        }
    }
    return sh;
}

/* A whole-brain-shaped volume: a cube of `block` voxels whose centred ball (40% of them)
 * holds the real voxels in turn and zero elsewhere (dwi2fod's output outside its mask),
 * voxels in x-fastest order as an image file holds them; repeated to fill `voxels`, so that
 * the first `block` (the CPU's and the files') and the whole (CUDA's) have the same share. */
static float *whole_brain_volume(const float *real, size_t real_voxels, int k, size_t block, size_t voxels)
{
    float *sh = calloc(voxels * (size_t)k, sizeof(float));
    if (!sh) return NULL;
    const size_t n = (size_t)ceil(cbrt((double)block));
    const double radius = cbrt(0.4 * 3 / (4 * kPi)); /* the ball's share of the unit cube: 0.4 */
    size_t next = 0;
    for (size_t v = 0; v < voxels; ++v) {
        const size_t b = v % block;
        const double x = ((b % n) + 0.5) / n - 0.5, y = ((b / n % n) + 0.5) / n - 0.5, z = ((b / n / n) + 0.5) / n - 0.5;
        if (x * x + y * y + z * z > radius * radius) continue;
        memcpy(sh + v * k, real + (next++ % real_voxels) * k, sizeof(float) * k);
    }
    return sh;
}

static int all_finite(const tk_npy_array *arr)
{
    for (size_t i = 0; i < arr->count; ++i)
        if (!isfinite(arr->dtype == TK_NPY_FLOAT32 ? ((const float *)arr->data)[i] : ((const double *)arr->data)[i]))
            return 0;
    return 1;
}

/* The voxels of an .npy of SH coefficients (any shape whose last axis is an SH count),
 * repeated to fill voxels; sets *lmax from the count. */
static float *tiled_input(const char *path, size_t voxels, long *lmax)
{
    tk_npy_array arr;
    if (tk_npy_read(path, &arr) != TK_OK) {
        tk_cli_error(prog, "%s", tk_last_error());
        return NULL;
    }
    float *sh = NULL;
    const size_t k = arr.ndim ? arr.shape[arr.ndim - 1] : 0;
    const int l = tk_sh_lmax_for_count(k);
    if ((arr.dtype != TK_NPY_FLOAT32 && arr.dtype != TK_NPY_FLOAT64) || l < 2 || arr.count == 0) {
        tk_cli_error(prog, "%s: expected float32 or float64 SH coefficients on the last axis (6, 15, 28, 45, ...), got %s "
                           "with %zu on the last axis; give an (..., K) array of SH coefficients", path, tk_npy_dtype_name(arr.dtype), k);
    } else if (!all_finite(&arr)) {
        tk_cli_error(prog, "%s: a coefficient is not finite (NaN or Inf); give finite data (a benchmark needs "
                           "it)", path);
    } else if ((sh = malloc(sizeof(float) * k * voxels)) != NULL) {
        const size_t have = arr.count / k;
        for (size_t v = 0; v < voxels; ++v)
            for (size_t j = 0; j < k; ++j) {
                size_t at = (v % have) * k + j;
                sh[v * k + j] = arr.dtype == TK_NPY_FLOAT32 ? ((const float *)arr.data)[at]
                                                            : (float)((const double *)arr.data)[at];
            }
        *lmax = l;
    } else {
        tk_cli_error(prog, "%s: out of memory for %zu voxels of %zu coefficients; use fewer --voxels", path,
                     voxels, k);
    }
    tk_npy_free(&arr);
    return sh;
}

/* ---- the independent accuracy oracle ----------------------------------------------- */

static double sh_value(int lmax, const double *c, const double *x)
{
    double y[TK_SH_MAX_LMAX * TK_SH_MAX_LMAX], s = 0;
    tk_sh_eval(TK_SH_TOURNIER, 0, lmax, x, y);
    for (size_t j = 0; j < tk_sh_num_coeffs(lmax); ++j) s += c[j] * y[j];
    return s;
}

static void on_sphere(const double *x, const double *u, const double *w, double a, double b, double *out)
{
    for (int i = 0; i < 3; ++i) out[i] = x[i] + a * u[i] + b * w[i];
    double n = sqrt(out[0] * out[0] + out[1] * out[1] + out[2] * out[2]);
    for (int i = 0; i < 3; ++i) out[i] /= n;
}

/* Angle in degrees from x to the maximum that a finite-difference Newton ascent reaches;
 * *is_max (may be NULL) says whether it reached a strict local maximum. */
static double refine_angle(int lmax, const double *c, const float *peak, int *is_max)
{
    if (is_max) *is_max = 0;
    double x[3] = {peak[0], peak[1], peak[2]}, x0[3];
    double n = sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2]);
    for (int i = 0; i < 3; ++i) x0[i] = x[i] /= n;
    const double h = 2e-4;
    for (int it = 0; it < 50; ++it) {
        double u[3], w[3], a[3] = {0, 0, 0}, p[3];
        int small = fabs(x[0]) < fabs(x[1]) ? (fabs(x[0]) < fabs(x[2]) ? 0 : 2) : (fabs(x[1]) < fabs(x[2]) ? 1 : 2);
        a[small] = 1;
        double d = a[0] * x[0] + a[1] * x[1] + a[2] * x[2];
        for (int i = 0; i < 3; ++i) u[i] = a[i] - d * x[i];
        double un = sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);
        for (int i = 0; i < 3; ++i) u[i] /= un;
        w[0] = x[1] * u[2] - x[2] * u[1], w[1] = x[2] * u[0] - x[0] * u[2], w[2] = x[0] * u[1] - x[1] * u[0];
        double f[3][3];
        for (int i = -1; i <= 1; ++i)
            for (int j = -1; j <= 1; ++j) on_sphere(x, u, w, i * h, j * h, p), f[i + 1][j + 1] = sh_value(lmax, c, p);
        double g0 = (f[2][1] - f[0][1]) / (2 * h), g1 = (f[1][2] - f[1][0]) / (2 * h);
        double h00 = (f[2][1] - 2 * f[1][1] + f[0][1]) / (h * h), h11 = (f[1][2] - 2 * f[1][1] + f[1][0]) / (h * h);
        double h01 = (f[2][2] - f[2][0] - f[0][2] + f[0][0]) / (4 * h * h), det = h00 * h11 - h01 * h01;
        if (!(h00 < 0 && det > 0)) break; /* not at a maximum's basin: report the distance so far */
        double s0 = -(h11 * g0 - h01 * g1) / det, s1 = -(h00 * g1 - h01 * g0) / det;
        on_sphere(x, u, w, s0, s1, p);
        memcpy(x, p, sizeof p);
        if (sqrt(s0 * s0 + s1 * s1) < 1e-10) {
            if (is_max) *is_max = 1;
            break;
        }
    }
    double dot = fabs(x[0] * x0[0] + x[1] * x0[1] + x[2] * x0[2]);
    return acos(dot > 1 ? 1 : dot) * 180 / kPi;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median and maximum angle to the refined maxima over the present peaks of the first `wanted`
 * voxels that have any. */
static void accuracy(const fibers_args *a, const float *sh, const float *dirs, size_t voxels, size_t wanted,
                     double *median, double *worst)
{
    const int k = (int)tk_sh_num_coeffs((int)a->lmax), np = (int)a->num;
    double *angles = malloc(sizeof(double) * wanted * np), c[TK_SH_MAX_LMAX * TK_SH_MAX_LMAX];
    size_t n = 0, with_peaks = 0;
    for (size_t v = 0; v < voxels && with_peaks < wanted && angles; ++v) {
        if (isnan(dirs[v * np * 3])) continue; /* no peak (a background voxel): not counted */
        ++with_peaks;
        for (int j = 0; j < k; ++j) c[j] = sh[v * k + j];
        for (int p = 0; p < np; ++p) {
            const float *d = dirs + (v * np + p) * 3;
            if (!isnan(d[0])) angles[n++] = refine_angle((int)a->lmax, c, d, NULL);
        }
    }
    *median = *worst = NAN;
    if (n) {
        qsort(angles, n, sizeof(double), cmp_double);
        *median = angles[n / 2], *worst = angles[n - 1];
    }
    free(angles);
}

/* b: a tk_backend, the index of a->backends */
static const char *backend_name(int b) { return tk_backend_name((tk_backend)b); }

/* Median of repeat timed runs; 0 if the backend cannot run here (printed). */
static int time_backend(const fibers_args *a, int b, int devices, const float *sh, size_t voxels, float *dirs,
                        float *amps, tk_timing *best, tk_fibers_work *work)
{
    tk_fibers_options o;
    tk_fibers_options_init(&o, (int)a->lmax);
    o.num_peaks = (int)a->num;
    o.backend = (tk_backend)b;
    o.cuda_device_count = devices;
    o.num_threads = (int)a->threads;
    o.cuda_timeline = (int)a->cuda_timeline;
    /* one plan for every run, as a caller with many volumes keeps one; a warm-up run so that
     * the CUDA context and the first touch of the buffers stay out of the figures */
    tk_fibers_plan *plan = NULL;
    if (tk_fibers_plan_create(&o, voxels, &plan) != TK_OK ||
        tk_fibers_plan_execute(plan, voxels < 4096 ? voxels : 4096, sh, NULL, dirs, amps, NULL, NULL) != TK_OK) {
        printf("%-10s %9zu  skipped: %s\n", backend_name(b), voxels, tk_last_error());
        tk_fibers_plan_destroy(plan);
        return 0;
    }
    double totals[64], kernels[64];
    int runs = (int)(a->repeat < 64 ? a->repeat : 64);
    tk_timing t;
    for (int r = 0; r < runs; ++r) {
        if (tk_fibers_plan_execute_counted(plan, voxels, sh, NULL, dirs, amps, NULL, &t, work) != TK_OK) {
            printf("%-10s %9zu  failed: %s\n", backend_name(b), voxels, tk_last_error());
            tk_fibers_plan_destroy(plan);
            return 0;
        }
        totals[r] = t.total_ms, kernels[r] = t.kernel_ms;
    }
    tk_fibers_plan_destroy(plan);
    *best = t; /* the Newton counts are the same in every run */
    best->total_ms = bench_median(totals, runs), best->kernel_ms = bench_median(kernels, runs);
    return 1;
}

/* The volume as one .mif that both whole processes read (voxels in a line), in a fresh
 * temporary folder; 0 (message printed) where it cannot be written. */
typedef struct {
    char dir[64], in[96], out[96], threads[32], num[32];
} bench_files;

static int write_bench_input(const fibers_args *a, const float *sh, size_t voxels, bench_files *f)
{
    snprintf(f->dir, sizeof f->dir, "/tmp/tk-bench-fibers-XXXXXX");
    if (!mkdtemp(f->dir)) return printf("whole processes skipped: no temporary folder\n"), 0;
    snprintf(f->in, sizeof f->in, "%s/sh.mif", f->dir), snprintf(f->out, sizeof f->out, "%s/peaks.mif", f->dir);
    snprintf(f->threads, sizeof f->threads, "%ld", a->threads > 0 ? a->threads : sysconf(_SC_NPROCESSORS_ONLN));
    snprintf(f->num, sizeof f->num, "%ld", a->num);
    const size_t dim[4] = {voxels, 1, 1, tk_sh_num_coeffs((int)a->lmax)};
    if (!tk_mif_write_f32(f->in, dim, sh)) {
        printf("whole processes skipped: %s\n", tk_last_error());
        rmdir(f->dir);
        return 0;
    }
    return 1;
}

static void remove_bench_files(const bench_files *f) { remove(f->in), remove(f->out), rmdir(f->dir); }

/* sh2peaks on the volume, same threads: wall seconds (its file I/O included), or -1
 * (message printed); *peaks: its output, voxel-major. */
static double run_sh2peaks(const fibers_args *a, const bench_files *f, size_t voxels, float **peaks)
{
    *peaks = NULL;
    char *argv[] = {(char *)a->sh2peaks, "-quiet", "-force", "-nthreads", (char *)f->threads, "-num", (char *)f->num,
                    (char *)f->in, (char *)f->out, NULL};
    const double seconds = bench_timed_process(argv);
    if (seconds < 0) {
        printf("sh2peaks   skipped: '%s' did not run (install mrtrix3, or --sh2peaks off)\n", a->sh2peaks);
        return -1;
    }
    size_t odim[4];
    if (!tk_mif_read_f32(f->out, odim, peaks) || odim[0] * odim[1] * odim[2] != voxels || odim[3] != 3 * (size_t)a->num) {
        printf("sh2peaks   output unreadable: %s\n", tk_last_error());
        free(*peaks), *peaks = NULL;
    }
    remove(f->out);
    return seconds;
}

/* tk-fibers (omp, the same threads and peaks) on the same file as sh2peaks: wall seconds,
 * or -1 (message printed). */
static double run_tk_fibers(const fibers_args *a, const bench_files *f)
{
    char *argv[] = {(char *)a->tk_fibers, "--quiet", "--backend", "omp", "--threads", (char *)f->threads, "--num",
                    (char *)f->num, (char *)f->in, (char *)f->out, NULL};
    const double seconds = bench_timed_process(argv);
    if (seconds < 0) printf("tk-fibers  skipped: '%s' did not run on %s (--tk-fibers PATH, or off)\n", a->tk_fibers, f->in);
    remove(f->out);
    return seconds;
}

/* sh2peaks' peaks (scaled by amplitude) that none of ours (ours_np per voxel) matches within
 * 1 degree; of those, *not_maxima are no local maximum of the series (an independent ascent
 * from them ends elsewhere or nowhere) and *negative have an amplitude <= 0 (sh2peaks has no
 * threshold by default; ours is 0). */
static size_t unmatched_reference_peaks(const fibers_args *a, const float *sh, const float *ref, const float *ours,
                                        int ours_np, size_t voxels, size_t *total, size_t *not_maxima,
                                        size_t *negative)
{
    const int np = (int)a->num, k = (int)tk_sh_num_coeffs((int)a->lmax);
    size_t missing = 0;
    *total = *not_maxima = *negative = 0;
    for (size_t v = 0; v < voxels; ++v)
        for (int p = 0; p < np; ++p) {
            const float *r = ref + (v * np + p) * 3;
            double n = sqrt((double)r[0] * r[0] + (double)r[1] * r[1] + (double)r[2] * r[2]);
            if (!(n > 0)) continue;
            ++*total;
            int hit = 0;
            for (int q = 0; q < ours_np && !hit; ++q) {
                const float *o = ours + (v * ours_np + q) * 3;
                hit = !isnan(o[0]) && fabs(r[0] * o[0] + r[1] * o[1] + r[2] * o[2]) / n > cos(kPi / 180);
            }
            missing += !hit;
            if (!hit) {
                double c[TK_SH_MAX_LMAX * TK_SH_MAX_LMAX];
                float unit[3] = {(float)(r[0] / n), (float)(r[1] / n), (float)(r[2] / n)};
                int is_max = 0;
                for (int j = 0; j < k; ++j) c[j] = sh[v * k + j];
                double moved = refine_angle((int)a->lmax, c, unit, &is_max), dir[3] = {unit[0], unit[1], unit[2]};
                if (!is_max || moved > 1.0) ++*not_maxima;
                else if (sh_value((int)a->lmax, c, dir) <= 0) ++*negative;
            }
        }
    return missing;
}

/* --sh2peaks and --tk-fibers: a program, or off (NULL). */
static int parse_program(const char *prog_name, const char *flag, const char *value, void *dest)
{
    (void)prog_name, (void)flag;
    *(const char **)dest = strcmp(value, "off") ? value : NULL;
    return 1;
}

static int parse_inputs(const char *prog_name, const char *flag, const char *value, void *dest)
{
    return bench_parse_names(prog_name, flag, value, kInputNames, INPUT_COUNT, (int *)dest);
}

#define ARG(member) offsetof(fibers_args, member)
static const tk_option options[] = {
    BENCH_CUSTOM("inputs", "real,phantom,wholebrain", parse_inputs, ARG(inputs),
                 "the volumes to measure, of real, phantom, wholebrain, fodlike\n(default: all but fodlike)"),
    BENCH_TEXT("input", "SH.npy", ARG(input), "the real voxels (default the bundled real FOD,\n" TK_BENCH_REAL_FOD ")"),
    BENCH_LONG("voxels", "V", 1, 100000000, ARG(voxels), "voxels of each volume (default 64000)"),
    BENCH_LONG("cuda-voxels", "V", 0, 100000000, ARG(cuda_voxels), "voxels of the larger CUDA run (default 600000)"),
    BENCH_LONG("lmax", "L", 2, TK_SH_MAX_LMAX, ARG(lmax),
               "even SH order of the phantom and fodlike volumes (default 8)"),
    BENCH_LONG("num", "N", 1, 64, ARG(num), "peaks per voxel (default 3)"),
    BENCH_BACKENDS_OPTION(ARG(backends), "the backends to measure (default omp,cuda)"),
    BENCH_THREADS_OPTION(ARG(threads), "threads of omp, sh2peaks and tk-fibers (default: all cores)"),
    BENCH_LONG("repeat", "R", 1, 64, ARG(repeat), "runs of each figure, the median reported (default 5)"),
    BENCH_LONG("accuracy-voxels", "V", 0, 100000000, ARG(accuracy_voxels),
               "voxels whose peaks the accuracy is measured on (default 2000)"),
    BENCH_CUSTOM("sh2peaks", "sh2peaks|off", parse_program, ARG(sh2peaks),
                 "MRtrix3's sh2peaks to compare with, or off (default\nsh2peaks on PATH)"),
    BENCH_CUSTOM("tk-fibers", "PATH|off", parse_program, ARG(tk_fibers),
                 "tk-fibers to time as a whole process, or off (default: the\none beside tk-bench, else on PATH)"),
    BENCH_LONG("cuda-timeline", "0|1", 0, 1, ARG(cuda_timeline),
               "1: each chunk's CUDA kernel times on stderr (the plan option)"),
    BENCH_GPUS_OPTION(ARG(gpus), "the larger cuda run"),
};
#undef ARG

static const bench_suite suite = {
    .prog = "tk-bench fibers",
    .description = "Peak-finder speed and accuracy on the volumes users have, each in turn:\n"
                   "  real        the voxels of --input (tournier07 coefficients on the last axis; lmax from\n"
                   "              their count), repeated\n"
                   "  phantom     a noise-free phantom (1-3 Watson fibers a voxel, kappa 10, as\n"
                   "              Data/fibers/make_phantom.py with noise 0; lmax from --lmax)\n"
                   "  wholebrain  the real voxels in a ball of 40%% of a cube, zero outside (dwi2fod's background)\n"
                   "  fodlike     the synthetic FOD-like volume of earlier runs (1-3 smoothed spikes + noise)\n"
                   "cpu/omp/cuda: median of --repeat executes of one tk_fibers_plan, memory to memory (CUDA:\n"
                   "transfers included; kernel = the kernels alone); Newton = iterations per voxel (cpu/omp).\n"
                   "sh2peaks and tk-fibers (omp) run as whole processes on the same .mif file, threads and peak\n"
                   "count, reading and writing files, in turn --repeat times (at most 7), each time the median:\n"
                   "the 20x goal compares those two.  Accuracy: angle from\n"
                   "each peak to the maximum an independent finite-difference Newton ascent reaches.\n",
    .options = options,
    .count = TK_OPT_COUNT(options),
};

/* tk-fibers beside this tk-bench (the build's bin/ or the install's), else on PATH. */
static const char *default_tk_fibers(char *buf, size_t size)
{
    ssize_t n = readlink("/proc/self/exe", buf, size - 16);
    if (n > 0) {
        buf[n] = '\0';
        char *slash = strrchr(buf, '/');
        if (slash) {
            strcpy(slash + 1, "tk-fibers");
            if (access(buf, X_OK) == 0) return buf;
        }
    }
    return "tk-fibers";
}

/* One input's volume of `voxels` voxels (message printed on failure). */
static float *input_volume(fibers_args *a, int input, size_t voxels)
{
    const char *real = a->input ? a->input : TK_BENCH_REAL_FOD;
    switch (input) {
    case INPUT_PHANTOM:
    case INPUT_FOD_LIKE: {
        float *sh = input == INPUT_PHANTOM ? phantom_volume((int)a->lmax, voxels, 1)
                                           : fod_like_volume((int)a->lmax, voxels, 1);
        /* they fail only for memory: said here, or the run would end with exit 1 and no word */
        if (!sh)
            tk_cli_error(prog, "--voxels %zu: out of memory for the %s volume (%.3g GiB at lmax %ld); use fewer --voxels",
                         voxels, kInputNames[input],
                         (double)voxels * (double)tk_sh_num_coeffs((int)a->lmax) * sizeof(float) / (1 << 30), a->lmax);
        return sh;
    }
    case INPUT_REAL: return tiled_input(real, voxels, &a->lmax);
    default: {
        long lmax = a->lmax;
        const size_t inside = (size_t)(0.45 * voxels) + 1; /* enough real voxels for the ball */
        float *interior = tiled_input(real, inside, &lmax), *sh = NULL;
        if (interior)
            sh = whole_brain_volume(interior, inside, (int)tk_sh_num_coeffs((int)lmax), (size_t)a->voxels, voxels);
        if (interior && !sh) tk_cli_error(prog, "out of memory for %zu voxels; use fewer --voxels", voxels);
        if (sh) a->lmax = lmax;
        free(interior);
        return sh;
    }
    }
}

/* Everything measured on one input. */
static int bench_input(fibers_args *a, int input)
{
    const size_t voxels = (size_t)a->voxels, np = (size_t)a->num;
    const size_t biggest = a->backends[2] && (size_t)a->cuda_voxels > voxels ? (size_t)a->cuda_voxels : voxels;
    float *sh = input_volume(a, input, biggest);
    if (!sh) return 0;
    const size_t k = tk_sh_num_coeffs((int)a->lmax);
    size_t zero = 0;
    for (size_t v = 0; v < voxels; ++v) {
        int all = 1;
        for (size_t j = 1; j < k && all; ++j) all = sh[v * k + j] == 0;
        zero += all;
    }
    float *dirs = malloc(sizeof(float) * biggest * np * 3), *amps = malloc(sizeof(float) * biggest * np);
    if (!dirs || !amps) {
        tk_cli_error(prog, "out of memory for %zu voxels; use fewer --voxels", biggest);
        free(sh), free(dirs), free(amps);
        return 0;
    }
    memset(dirs, 0, sizeof(float) * biggest * np * 3), memset(amps, 0, sizeof(float) * biggest * np);
    const size_t acc_voxels = (size_t)a->accuracy_voxels < voxels ? (size_t)a->accuracy_voxels : voxels;
    printf("\n## %s: %s, lmax %ld (%zu coefficients), %ld peaks, %s threads, %.0f%% of voxels zero\n",
           kInputNames[input],
           input == INPUT_PHANTOM    ? "noise-free Watson phantom"
           : input == INPUT_FOD_LIKE ? "FOD-like synthetic volume"
           : input == INPUT_REAL     ? (a->input ? a->input : TK_BENCH_REAL_FOD)
                                     : "real FOD in a zero background",
           a->lmax, k, a->num, a->threads ? "given" : "all", 100.0 * zero / voxels);
    printf("%-10s %9s %10s %10s %13s %13s %10s %10s %8s  %s\n", "program", "voxels", "total_ms", "kernel_ms", "voxels/s",
           "voxels/s_krn", "median_deg", "max_deg", "newton", "goal");
    double sh2_rate = 0;
    float *ref = NULL;
    bench_files files;
    const int have_files = (a->sh2peaks || a->tk_fibers) && write_bench_input(a, sh, voxels, &files);
    /* Both whole processes in turn, --repeat times (at most 7), each figure the median: a
     * single run of either on this shared 2-core machine has moved by a factor of two. */
    double sh2_runs[7], tk_runs[7];
    int sh2_n = 0, tk_n = 0;
    const int process_runs = (int)(a->repeat < 7 ? a->repeat : 7);
    for (int r = 0; have_files && r < process_runs; ++r) {
        if (a->sh2peaks && (r == 0 || sh2_n > 0)) {
            float *peaks = NULL;
            const double sec = run_sh2peaks(a, &files, voxels, &peaks);
            if (sec > 0) sh2_runs[sh2_n++] = sec;
            if (!ref) ref = peaks;
            else free(peaks);
        }
        if (a->tk_fibers && (r == 0 || tk_n > 0)) {
            const double sec = run_tk_fibers(a, &files);
            if (sec > 0) tk_runs[tk_n++] = sec;
        }
    }
    if (have_files && a->sh2peaks) {
        double seconds = sh2_n ? bench_median(sh2_runs, sh2_n) : -1;
        if (seconds > 0) {
            sh2_rate = voxels / seconds;
            double med = NAN, worst = NAN;
            if (ref) accuracy(a, sh, ref, voxels, acc_voxels, &med, &worst);
            printf("%-10s %9zu %10.1f %10s %13.0f %13s %10.5f %10.5f %8s  reference (whole process)\n", "sh2peaks", voxels,
                   seconds * 1000, "-", sh2_rate, "-", med, worst, "-");
            tk_bench_json_row("peaks"), tk_bench_json_str("input", kInputNames[input]);
            tk_bench_json_str("program", "sh2peaks"), tk_bench_json_num("voxels", voxels);
            tk_bench_json_num("total_ms", seconds * 1000), tk_bench_json_num("voxels_per_s", sh2_rate);
            tk_bench_json_num("median_deg", med), tk_bench_json_num("max_deg", worst);
        }
    }
    if (have_files && a->tk_fibers) {
        double seconds = tk_n ? bench_median(tk_runs, tk_n) : -1;
        if (seconds > 0) {
            const double rate = voxels / seconds;
            char goal[96] = "";
            if (sh2_rate > 0)
                snprintf(goal, sizeof goal, "%.1fx sh2peaks (goal 20x: %s)", rate / sh2_rate,
                         bench_verdict(rate >= 20 * sh2_rate));
            printf("%-10s %9zu %10.1f %10s %13.0f %13s %10s %10s %8s  whole process, omp; %s\n", "tk-fibers", voxels,
                   seconds * 1000, "-", rate, "-", "-", "-", "-", goal);
            tk_bench_json_row("peaks"), tk_bench_json_str("input", kInputNames[input]);
            tk_bench_json_str("program", "tk-fibers"), tk_bench_json_num("voxels", voxels);
            tk_bench_json_num("total_ms", seconds * 1000), tk_bench_json_num("voxels_per_s", rate);
            if (sh2_rate > 0) tk_bench_json_num("vs_sh2peaks", rate / sh2_rate);
        }
    }
    if (have_files) remove_bench_files(&files);
    for (int b = 0; b < 3; ++b) {
        if (!a->backends[b]) continue;
        for (int big = 0; big < (b == 2 && (size_t)a->cuda_voxels > voxels ? 2 : 1); ++big) {
            size_t n = big ? (size_t)a->cuda_voxels : voxels;
            tk_timing t;
            tk_fibers_work work;
            if (!time_backend(a, b, 1, sh, n, dirs, amps, &t, &work)) continue;
            double med = NAN, worst = NAN, rate = n / (t.total_ms / 1000), krate = n / (t.kernel_ms / 1000);
            accuracy(a, sh, dirs, n, acc_voxels, &med, &worst);
            char goal[160] = "", newton[32] = "-";
            if (b == 1 && sh2_rate > 0)
                snprintf(goal, sizeof goal, "memory to memory: %.1fx sh2peaks", rate / sh2_rate);
            if (b == 2 && a->lmax == 8 && big == ((size_t)a->cuda_voxels > voxels))
                snprintf(goal, sizeof goal, "goal 10M voxels/s: %s; issue 26's 30M: %s", bench_verdict(rate >= 1e7),
                         bench_verdict(rate >= 3e7));
            if (b < 2) snprintf(newton, sizeof newton, "%.1f", (double)work.newton_iterations / n);
            printf("%-10s %9zu %10.1f %10.1f %13.0f %13.0f %10.5f %10.5f %8s  %s\n", backend_name(b), n, t.total_ms,
                   t.kernel_ms, rate, krate, med, worst, newton, goal);
            tk_bench_json_row("peaks"), tk_bench_json_str("input", kInputNames[input]);
            tk_bench_json_str("program", backend_name(b)), tk_bench_json_num("voxels", n);
            tk_bench_json_num("total_ms", t.total_ms), tk_bench_json_num("kernel_ms", t.kernel_ms);
            tk_bench_json_num("voxels_per_s", rate), tk_bench_json_num("kernel_voxels_per_s", krate);
            tk_bench_json_num("median_deg", med), tk_bench_json_num("max_deg", worst);
            if (b < 2) tk_bench_json_num("newton_per_voxel", (double)work.newton_iterations / n);
            if (ref && !big) {
                /* sh2peaks may rank peaks differently where it misses one: match against all of ours */
                const int all = 16;
                float *every = malloc(sizeof(float) * voxels * all * 3);
                tk_fibers_options o;
                tk_fibers_options_init(&o, (int)a->lmax);
                o.num_peaks = all, o.backend = (tk_backend)b, o.num_threads = (int)a->threads;
                if (every && tk_fibers_find(&o, voxels, sh, NULL, every, NULL, NULL) == TK_OK) {
                    size_t total = 0, not_max = 0, negative = 0;
                    size_t missing =
                        unmatched_reference_peaks(a, sh, ref, every, all, voxels, &total, &not_max, &negative);
                    printf("%-10s sh2peaks peaks found within 1 degree: %zu of %zu; of the %zu others, %zu are no local "
                           "maximum of the series, %zu have amplitude <= 0 (our default threshold), %zu are missed\n",
                           backend_name(b), total - missing, total, missing, not_max, negative,
                           missing - not_max - negative);
                }
                free(every);
            }
            tk_timing tn;
            if (b == 2 && a->scaling_gpus && big == ((size_t)a->cuda_voxels > voxels) &&
                time_backend(a, b, a->scaling_gpus, sh, n, dirs, amps, &tn, NULL)) {
                /* the same run split over the GPUs, each a contiguous share of the voxels */
                char label[32];
                snprintf(label, sizeof label, "cuda x%d", a->scaling_gpus);
                printf("%-10s %9zu %10.1f %10.1f %13.0f %13.0f %10s %10s %8s  speed-up over 1 GPU %.2fx (kernels: the "
                       "slowest GPU's, %.2fx)\n",
                       label, n, tn.total_ms, tn.kernel_ms, n / (tn.total_ms / 1000), n / (tn.kernel_ms / 1000), "-", "-",
                       "-", t.total_ms / tn.total_ms, t.kernel_ms / tn.kernel_ms);
                tk_bench_json_row("peaks"), tk_bench_json_str("input", kInputNames[input]);
                tk_bench_json_str("program", label), tk_bench_json_num("voxels", n), tk_bench_json_num("gpus", a->scaling_gpus);
                tk_bench_json_num("total_ms", tn.total_ms), tk_bench_json_num("kernel_ms", tn.kernel_ms);
                tk_bench_json_num("speedup", t.total_ms / tn.total_ms);
            }
            fflush(stdout);
        }
    }
    free(sh), free(dirs), free(amps), free(ref);
    return 1;
}

int tk_bench_fibers(int argc, char **argv)
{
    char exe[4096];
    fibers_args a = {64000, 600000, 8, 3, 0, 5, 2000, 0, -1, 0, {0, 1, 1}, "sh2peaks", NULL, NULL, {1, 1, 1, 0}};
    a.tk_fibers = default_tk_fibers(exe, sizeof exe);
    if (!bench_parse_suite(&suite, argc, argv, &a, NULL)) return TK_EXIT_USAGE;
    if (a.backends[2]) a.scaling_gpus = bench_scaling_gpus(a.gpus);
    if (a.lmax % 2) {
        tk_cli_error(prog, "--lmax must be even, got %ld; give an even number from 2 to %d", a.lmax, TK_SH_MAX_LMAX);
        return TK_EXIT_USAGE;
    }
    printf("# tk-bench fibers: accuracy is the median / largest angle (degrees) to the refined maxima over the\n"
           "# first %ld voxels; goals: tk-fibers (omp, whole process, file I/O included) >= 20x sh2peaks voxels/s\n"
           "# on the same cores, cuda >= 10,000,000 voxels/s at lmax 8 (transfers included; issue 26: >= 30,000,000\n"
           "# on each input), median angle <= 0.01 degrees, every sh2peaks peak found\n",
           a.accuracy_voxels);
    tk_bench_json_setting_num("lmax", a.lmax);
    tk_bench_json_setting_num("peaks", a.num), tk_bench_json_setting_num("threads", a.threads); /* 0: all */
    tk_bench_json_reference("goal cuda voxels/s (lmax 8)", 1e7, "voxels/s", "issue goal, transfers included");
    tk_bench_json_reference("goal cuda voxels/s, round two (lmax 8)", 3e7, "voxels/s",
                            "issue 26's goal on each input, transfers included");
    tk_bench_json_reference("goal tk-fibers vs sh2peaks", 20, "x", "issue goal, whole processes, same cores");
    tk_bench_json_reference("goal median angle", 0.01, "degrees", "issue goal");
    int failed = 0;
    for (int input = 0; input < INPUT_COUNT; ++input)
        if (a.inputs[input]) failed |= !bench_input(&a, input);
    return failed ? TK_EXIT_FAILURE : 0;
}
