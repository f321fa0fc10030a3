/* tk-bench track: streamlines/s of the tracking core (SD_STREAM and iFOD1) on a brain-sized
 * FOD volume, the sink doing nothing (file writing excluded) and, beside it, the same run
 * into a .tck file, with MRtrix3's tckgen run on the same volume, mask, settings, seed count
 * and threads in the same run.
 *
 * The volume: the bundled real FOD (MRtrix3's dwi2fod on DIPY's small_64D, 10 x 10 x 10
 * voxels) tiled periodically to 100 x 100 x 60 voxels of 2 mm (issue 23's set-up): real
 * FOD shapes and orientations, a brain's extent.  The tiles' seams are discontinuities a
 * brain does not have, so streamline lengths are indicative, but tckgen sees the same seams.
 * The white-matter-like mask: the voxels whose l = 0 coefficient is at least
 * --mask-threshold (default 0.25, about half of the real voxels: the ones with the most
 * FOD mass).  Seeds: uniform random points in the mask (a voxel drawn at random, then a
 * point uniform in its cube), as tckgen -seed_image MASK -seeds N draws them; the same
 * count and distribution, not the same points. */
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
#include "tk_npy.h"
#include "tk_streamlines.h"
#include "tk_tracking.h"


static const char *prog = "tk-bench track";

/* issue 23's set-up */
enum { NX = 100, NY = 100, NZ = 60 };
static const double kVoxMm = 2, kStepMm = 1, kAngleDeg = 45, kCutoff = 0.1, kMinMm = 10, kMaxMm = 250;
/* issue 23's GPU goals, streamlines/s, by algorithm; and the CPU one: omp >= 10x tckgen */
static const double kCudaGoal[2] = {2e6, 5e5};
static const double kTckgenGoal = 10;

typedef struct {
    long seeds, cpu_seeds, threads, repeat;
    double mask_threshold;
    int backends[3], algorithms[2], write;
    const char *tckgen, *input;
    long gpus; /* -1 unless given (bench_scaling_gpus) */
    long chunk_seeds; /* 0: the library's default */
} track_args;

static const char *const kAlgorithmNames[2] = {"sd_stream", "ifod1"};
static const char *const kTckgenAlgorithm[2] = {"SD_STREAM", "iFOD1"};

/* The volume, its mask and the seeds of one run. */
typedef struct {
    int lmax;
    size_t k, voxels, mask_voxels;
    float *sh;
    uint8_t *mask;
    tk_tracking_grid grid;
} track_volume;

/* The real FOD block (an (X, Y, Z, K) array, or (N, K) with N a cube: x fastest) tiled to
 * NX x NY x NZ and the mask from its l = 0 coefficients; 0 (message printed) on failure. */
static int make_volume(const track_args *a, track_volume *v)
{
    const char *path = a->input ? a->input : TK_BENCH_TRACK_FOD;
    tk_npy_array arr;
    memset(v, 0, sizeof *v);
    if (tk_npy_read(path, &arr) != TK_OK) {
        tk_cli_error(prog, "%s", tk_last_error());
        return 0;
    }
    size_t b[3] = {0, 0, 0};
    const size_t k = arr.ndim ? arr.shape[arr.ndim - 1] : 0;
    if (arr.ndim == 4) {
        b[0] = arr.shape[2], b[1] = arr.shape[1], b[2] = arr.shape[0]; /* C order: x is the last spatial axis */
    } else if (arr.ndim == 2) {
        const size_t n = (size_t)llround(cbrt((double)arr.shape[0]));
        if (n * n * n == arr.shape[0]) b[0] = b[1] = b[2] = n;
    }
    const int lmax = tk_sh_lmax_for_count(k);
    if (arr.dtype != TK_NPY_FLOAT32 || lmax < 2 || !b[0] || !b[1] || !b[2]) {
        tk_cli_error(prog, "%s: expected float32 tournier07 SH coefficients shaped (Z, Y, X, K) or (N, K) with N a "
                           "cube (voxels x fastest), got %s of %d axes; give such an .npy",
                     path, tk_npy_dtype_name(arr.dtype), arr.ndim);
        tk_npy_free(&arr);
        return 0;
    }
    v->lmax = lmax, v->k = k, v->voxels = (size_t)NX * NY * NZ;
    v->sh = malloc(sizeof(float) * k * v->voxels);
    v->mask = malloc(v->voxels);
    if (!v->sh || !v->mask) {
        tk_cli_error(prog, "out of memory for the %dx%dx%d volume", NX, NY, NZ);
        tk_npy_free(&arr), free(v->sh), free(v->mask);
        return 0;
    }
    const float *src = arr.data;
    for (size_t z = 0, at = 0; z < NZ; ++z)
        for (size_t y = 0; y < NY; ++y)
            for (size_t x = 0; x < NX; ++x, ++at) {
                const float *c = src + ((z % b[2] * b[1] + y % b[1]) * b[0] + x % b[0]) * k;
                memcpy(v->sh + at * k, c, sizeof(float) * k);
                v->mask[at] = c[0] >= a->mask_threshold;
                v->mask_voxels += v->mask[at];
            }
    tk_npy_free(&arr);
    memset(&v->grid, 0, sizeof v->grid);
    v->grid.dims[0] = NX, v->grid.dims[1] = NY, v->grid.dims[2] = NZ;
    for (int i = 0; i < 3; ++i) v->grid.vox2world[i * 4 + i] = kVoxMm;
    v->grid.vox2world[15] = 1;
    if (!v->mask_voxels) {
        tk_cli_error(prog, "--mask-threshold %g leaves the mask empty; give a smaller one", a->mask_threshold);
        free(v->sh), free(v->mask);
        return 0;
    }
    return 1;
}

/* n uniform random world points in the mask's voxels (a voxel's cube is its centre +- half
 * a voxel, MRtrix3's convention); NULL when out of memory. */
static double *mask_seeds(const track_volume *v, size_t n)
{
    size_t *inside = malloc(sizeof(size_t) * v->mask_voxels);
    double *p = malloc(sizeof(double) * 3 * (n ? n : 1));
    if (!inside || !p) return free(inside), free(p), NULL;
    for (size_t i = 0, m = 0; i < v->voxels; ++i)
        if (v->mask[i]) inside[m++] = i;
    bench_rng r = bench_rng_seed(23, 1);
    for (size_t s = 0; s < n; ++s) {
        const size_t at = inside[bench_rng_bits(&r) % v->mask_voxels];
        const size_t ijk[3] = {at % NX, at / NX % NY, at / NX / NY};
        for (int d = 0; d < 3; ++d) p[3 * s + d] = kVoxMm * ((double)ijk[d] + bench_rng_uniform(&r) - 0.5);
    }
    free(inside);
    return p;
}

/* The sink of the core-only figure: it only counts the points (one addition a chunk). */
static tk_status null_sink(const tk_tracking_chunk *chunk, void *user)
{
    *(uint64_t *)user += chunk->total_points;
    return TK_OK;
}

/* One timed run of the core: into nothing (path NULL) or a .tck file.  ms: the whole call
 * (the writer's open and close included); 0 (message printed) on failure. */
static int run_core(const tk_tracking_plan *plan, const track_volume *v, const double *points, size_t n,
                    const char *path, double *ms, tk_tracking_stats *stats, tk_timing *timing, uint64_t *total_points)
{
    uint64_t counted = 0;
    const tk_tracking_seeds seeds = {.points = points, .num_points = n};
    tk_streamlines_writer *w = NULL;
    const double t0 = tk_cli_now_ms();
    tk_status st = path ? tk_streamlines_writer_open(path, &v->grid, NULL, &w) : TK_OK;
    if (st == TK_OK)
        st = tk_tracking_plan_execute(plan, v->sh, v->voxels * v->k, NULL, &seeds, path ? tk_streamlines_sink : null_sink,
                                      path ? (void *)w : &counted, stats, timing);
    if (total_points) *total_points = counted;
    if (w) {
        if (st == TK_OK) st = tk_streamlines_writer_close(w);
        else tk_streamlines_writer_abort(w);
    }
    *ms = tk_cli_now_ms() - t0;
    return st == TK_OK;
}

/* The streamline count a .tck header gives ("count: N"), or -1. */
static double tck_count(const char *path)
{
    char head[4096];
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    size_t n = fread(head, 1, sizeof head - 1, f);
    fclose(f);
    head[n] = '\0';
    const char *c = strstr(head, "\ncount:");
    return c ? strtod(c + 7, NULL) : -1;
}

/* tckgen's files: the volume and mask as .mif (voxel-major FOD: layout +1,+2,+3,+0), in a
 * fresh temporary folder; also where our .tck goes. */
typedef struct {
    char dir[64], fod[96], mask[96], out[96], ours[96];
} track_files;

static int make_dir(track_files *f)
{
    snprintf(f->dir, sizeof f->dir, "/tmp/tk-bench-track-XXXXXX");
    if (!mkdtemp(f->dir)) return printf("temporary folder refused: .tck writing and tckgen skipped\n"), 0;
    snprintf(f->fod, sizeof f->fod, "%s/fod.mif", f->dir), snprintf(f->mask, sizeof f->mask, "%s/mask.mif", f->dir);
    snprintf(f->out, sizeof f->out, "%s/tckgen.tck", f->dir), snprintf(f->ours, sizeof f->ours, "%s/ours.tck", f->dir);
    return 1;
}

static int write_tckgen_inputs(const track_volume *v, const track_files *f)
{
    const size_t dim[4] = {NX, NY, NZ, v->k};
    tk_mif_header h;
    tk_mif_header_init(&h, 4, dim);
    for (int i = 0; i < 3; ++i) h.vox[i] = kVoxMm;
    h.layout[0] = 2, h.layout[1] = 3, h.layout[2] = 4, h.layout[3] = 1; /* coefficients contiguous */
    float *m = malloc(sizeof(float) * v->voxels);
    int ok = m && tk_mif_write(f->fod, &h, v->sh);
    if (ok) {
        for (size_t i = 0; i < v->voxels; ++i) m[i] = v->mask[i];
        tk_mif_header_init(&h, 3, dim);
        for (int i = 0; i < 3; ++i) h.vox[i] = kVoxMm;
        ok = tk_mif_write(f->mask, &h, m);
    }
    free(m);
    if (!ok) printf("tckgen skipped: the volume could not be written (%s)\n", tk_last_error());
    return ok;
}

/* tckgen on the volume: wall seconds (reading the FOD included), or -1 (message printed);
 * *count: the streamlines it wrote. */
static double run_tckgen(const track_args *a, const track_files *f, int alg, long seeds, long threads, double *count)
{
    char n[32], t[32], step[32], angle[32], cutoff[32], minl[32], maxl[32];
    snprintf(n, sizeof n, "%ld", seeds), snprintf(t, sizeof t, "%ld", threads);
    snprintf(step, sizeof step, "%g", kStepMm), snprintf(angle, sizeof angle, "%g", kAngleDeg);
    snprintf(cutoff, sizeof cutoff, "%g", kCutoff), snprintf(minl, sizeof minl, "%g", kMinMm);
    snprintf(maxl, sizeof maxl, "%g", kMaxMm);
    char *argv[] = {(char *)a->tckgen, "-quiet", "-force", "-algorithm", (char *)kTckgenAlgorithm[alg], "-step", step,
                    "-angle", angle, "-cutoff", cutoff, "-minlength", minl, "-maxlength", maxl, "-seed_image",
                    (char *)f->mask, "-seeds", n, "-nthreads", t, (char *)f->fod, (char *)f->out, NULL};
    const double sec = bench_timed_process(argv);
    *count = sec > 0 ? tck_count(f->out) : -1;
    remove(f->out);
    if (sec < 0) printf("tckgen     skipped: '%s' did not run (install mrtrix3, or --tckgen off)\n", a->tckgen);
    return sec;
}

static int parse_program(const char *prog_name, const char *flag, const char *value, void *dest)
{
    (void)prog_name, (void)flag;
    *(const char **)dest = strcmp(value, "off") ? value : NULL;
    return 1;
}

static int parse_algorithms(const char *prog_name, const char *flag, const char *value, void *dest)
{
    return bench_parse_names(prog_name, flag, value, kAlgorithmNames, 2, (int *)dest);
}

#define ARG(member) offsetof(track_args, member)
static const tk_option options[] = {
    BENCH_CUSTOM("algorithms", "sd_stream,ifod1", parse_algorithms, ARG(algorithms),
                 "the algorithms to measure (default both)"),
    BENCH_BACKENDS_OPTION(ARG(backends), "the backends to measure (default cpu,omp,cuda)"),
    BENCH_LONG("seeds", "N", 1, 1000000000, ARG(seeds), "seeds of the cuda runs (default 1000000)"),
    BENCH_LONG("cpu-seeds", "N", 1, 1000000000, ARG(cpu_seeds),
               "seeds of the cpu and omp runs and of tckgen (default 500:\n"
               "iFOD1 on one core takes about 3 s a run)"),
    BENCH_THREADS_OPTION(ARG(threads), "threads of omp and tckgen (default: all cores)"),
    BENCH_LONG("repeat", "R", 1, 64, ARG(repeat), "runs of each figure, the median reported (default 3)"),
    BENCH_GPUS_OPTION(ARG(gpus), "the cuda runs"),
    BENCH_LONG("chunk-seeds", "N", 0, 100000000, ARG(chunk_seeds),
               "seeds a chunk of every run (tk_tracking_options.chunk_seeds; default 0: the library's)"),
    BENCH_DOUBLE("mask-threshold", "C0", -1e30, 1e30, ARG(mask_threshold),
                 "the mask: voxels whose l=0 coefficient is at least C0 (default 0.25)"),
    BENCH_LONG("write", "0|1", 0, 1, ARG(write), "1: also time each run into a .tck file (default 1)"),
    BENCH_TEXT("input", "SH.npy", ARG(input),
               "the FOD block to tile (default the bundled real FOD,\n" TK_BENCH_TRACK_FOD ")"),
    BENCH_CUSTOM("tckgen", "tckgen|off", parse_program, ARG(tckgen),
                 "MRtrix3's tckgen to compare with, or off (default tckgen\non PATH)"),
};
#undef ARG

static const bench_suite suite = {
    .prog = "tk-bench track",
    .description = "Tracking speed (issue 23): the bundled real FOD tiled to 100x100x60 voxels of 2 mm, seeds\n"
                   "uniform in a white-matter-like mask (l=0 coefficient >= --mask-threshold), step 1 mm,\n"
                   "angle 45, cutoff 0.1, lengths 10-250 mm, both directions.\n"
                   "core: one tk_tracking_plan_execute, the sink doing nothing (file writing excluded);\n"
                   "+tck: the same run into a .tck file (tools/streamlines), write = its extra time.\n"
                   "tckgen: the whole process on the same volume and mask as .mif, same settings, seeds\n"
                   "(-seed_image MASK -seeds N) and threads; tracking = its time less that of a 1-seed run\n"
                   "(reading the FOD, starting).  Goals: cuda sd_stream >= 2,000,000 and ifod1 >= 500,000\n"
                   "streamlines/s (core); omp >= 10x tckgen streamlines/s on the same cores.\n",
    .options = options,
    .count = TK_OPT_COUNT(options),
};

/* tckgen's streamlines/s on this algorithm: whole process and tracking only (the 1-seed
 * run's time taken off); 0 where it did not run. */
typedef struct {
    double whole, tracking;
} tckgen_rate;

static tckgen_rate measure_tckgen(const track_args *a, const track_files *f, int alg, long threads)
{
    tckgen_rate r = {0, 0};
    double count = -1, none = -1, runs[64];
    int done = 0;
    for (; done < (int)a->repeat; ++done)
        if ((runs[done] = run_tckgen(a, f, alg, a->cpu_seeds, threads, &count)) <= 0 || count < 0) break;
    if (done < (int)a->repeat) return r;
    const double sec = bench_median(runs, done);
    const double base = run_tckgen(a, f, alg, 1, threads, &none);
    r.whole = count / sec;
    r.tracking = base > 0 && sec > base ? count / (sec - base) : 0;
    printf("%-10s %-9s %9ld %8ld %9.0f %10.1f %10s %13.0f %13.0f  reference: whole process, %ld threads; "
           "tracking = less %.0f ms of a 1-seed run\n",
           "tckgen", kAlgorithmNames[alg], a->cpu_seeds, threads, count, sec * 1000, "-", r.whole, r.tracking, threads,
           base * 1000);
    tk_bench_json_row("track"), tk_bench_json_str("algorithm", kAlgorithmNames[alg]);
    tk_bench_json_str("program", "tckgen"), tk_bench_json_num("seeds", a->cpu_seeds);
    tk_bench_json_num("threads", threads), tk_bench_json_num("streamlines", count);
    tk_bench_json_num("total_ms", sec * 1000), tk_bench_json_num("startup_ms", base * 1000);
    tk_bench_json_num("streamlines_per_s", r.whole), tk_bench_json_num("tracking_streamlines_per_s", r.tracking);
    fflush(stdout);
    return r;
}

/* One backend on one algorithm: the core into nothing, then into a .tck file.  gpus > 1: the
 * cuda run over that many GPUs, and base_ms (the one-GPU core time) for its speed-up. */
static double measure_backend(const track_args *a, const track_volume *v, const track_files *f, int alg, int b,
                              long threads, tckgen_rate ref, int gpus, double base_ms)
{
    const long n = b == TK_BACKEND_CUDA ? a->seeds : a->cpu_seeds;
    char label[32] = "";
    if (gpus > 1) snprintf(label, sizeof label, "cuda x%d", gpus);
    const char *name = gpus > 1 ? label : tk_backend_name((tk_backend)b);
    tk_tracking_options o;
    tk_tracking_options_init(&o, v->lmax);
    o.algorithm = alg ? TK_TRACK_IFOD1 : TK_TRACK_SD_STREAM;
    o.step_mm = kStepMm, o.max_angle_deg = kAngleDeg, o.cutoff = kCutoff;
    o.min_length_mm = kMinMm, o.max_length_mm = kMaxMm;
    o.backend = (tk_backend)b, o.num_threads = b == TK_BACKEND_OMP ? (int)threads : 0;
    o.cuda_device_count = gpus > 1 ? gpus : 1;
    if (a->chunk_seeds > 0) o.chunk_seeds = (size_t)a->chunk_seeds;
    double *points = mask_seeds(v, (size_t)n);
    tk_tracking_plan *plan = NULL;
    tk_tracking_stats st;
    tk_timing t = {0};
    double ms = 0, tck_ms = -1;
    /* a warm-up run of a few seeds keeps the CUDA context, the device tables and the first
     * touch of the volume out of the figure */
    if (!points || tk_tracking_plan_create(&o, &v->grid, &plan) != TK_OK ||
        !run_core(plan, v, points, (size_t)(n < 256 ? n : 256), NULL, &ms, &st, NULL, NULL)) {
        printf("%-10s %-9s %9ld  skipped: %s\n", name, kAlgorithmNames[alg], n, points ? tk_last_error() : "out of memory");
        tk_tracking_plan_destroy(plan), free(points);
        return -1;
    }
    /* the core and the .tck runs in turn, each figure the median: a single run on a shared
     * machine moves by tens of percent (the statistics are the same in every run) */
    uint64_t total_points = 0;
    double core_runs[64], tck_runs[64], kernel_runs[64];
    int ok = 1, tck_n = 0, runs = (int)a->repeat;
    for (int r = 0; r < runs && ok; ++r) {
        ok = run_core(plan, v, points, (size_t)n, NULL, &core_runs[r], &st, &t, &total_points);
        kernel_runs[r] = t.kernel_ms;
        tk_tracking_stats wst;
        if (ok && a->write && f && tck_n == r) {
            if (run_core(plan, v, points, (size_t)n, f->ours, &tck_runs[tck_n], &wst, NULL, NULL)) ++tck_n;
            else printf("%-10s %-9s .tck writing failed: %s\n", name, kAlgorithmNames[alg], tk_last_error());
        }
    }
    if (ok) ms = bench_median(core_runs, runs), t.kernel_ms = bench_median(kernel_runs, runs);
    if (tck_n) tck_ms = bench_median(tck_runs, tck_n);
    if (f) remove(f->ours);
    tk_tracking_plan_destroy(plan), free(points);
    if (!ok) {
        printf("%-10s %-9s %9ld  failed: %s\n", name, kAlgorithmNames[alg], n, tk_last_error());
        return -1;
    }
    const double rate = st.accepted / (ms / 1000), whole = tck_ms > 0 ? st.accepted / (tck_ms / 1000) : NAN;
    char goal[256] = "", write_ms[32] = "-";
    if (tck_ms > 0) snprintf(write_ms, sizeof write_ms, "%.1f", tck_ms - ms); /* < 0: within the noise */
    if (b == TK_BACKEND_CUDA && gpus > 1)
        snprintf(goal, sizeof goal, "speed-up over 1 GPU %.2fx (the same streamlines)", base_ms > 0 ? base_ms / ms : NAN);
    else if (b == TK_BACKEND_CUDA)
        snprintf(goal, sizeof goal, "goal %.0f streamlines/s: %s", kCudaGoal[alg], bench_verdict(rate >= kCudaGoal[alg]));
    else if (ref.whole > 0) {
        /* tckgen's tracking time is its run less a 1-seed run's: under load the two can take as
         * long, and then there is no ratio to judge the goal by (the JSON has none either) */
        char vs_tracking[64] = "tckgen's tracking time not measurable";
        const char *verdict = "not judged";
        if (ref.tracking > 0) {
            snprintf(vs_tracking, sizeof vs_tracking, "%.1fx tckgen tracking", rate / ref.tracking);
            verdict = bench_verdict(rate >= kTckgenGoal * ref.tracking);
        }
        snprintf(goal, sizeof goal, "%s, %.1fx whole (+tck vs whole: %.1fx)%s%s", vs_tracking, rate / ref.whole,
                 whole / ref.whole, b == TK_BACKEND_OMP ? "; goal 10x: " : "; 1 thread vs tckgen's",
                 b == TK_BACKEND_OMP ? verdict : "");
    }
    printf("%-10s %-9s %9ld %8ld %9llu %10.1f %10s %13.0f %13.0f  %s\n", name, kAlgorithmNames[alg], n,
           b == TK_BACKEND_OMP ? threads : b == TK_BACKEND_CPU ? 1 : 0, (unsigned long long)st.accepted, ms, write_ms,
           rate, whole, goal);
    printf("%-10s %-9s           accepted %.1f%% of seeds, %.1f points a streamline; ends: model %llu, curvature "
           "%llu, max length %llu, image %llu; kernel %.1f ms\n",
           "", "", 100.0 * st.accepted / (double)n, st.accepted ? (double)total_points / st.accepted : 0,
           (unsigned long long)st.ended_model, (unsigned long long)st.ended_curvature,
           (unsigned long long)st.ended_max_length, (unsigned long long)st.ended_exit_image, t.kernel_ms);
    tk_bench_json_row("track"), tk_bench_json_str("algorithm", kAlgorithmNames[alg]);
    tk_bench_json_str("program", name), tk_bench_json_num("seeds", n);
    tk_bench_json_num("threads", b == TK_BACKEND_OMP ? threads : 1), tk_bench_json_num("streamlines", st.accepted);
    tk_bench_json_num("total_ms", ms), tk_bench_json_num("kernel_ms", t.kernel_ms);
    tk_bench_json_num("tck_ms", tck_ms > 0 ? tck_ms : NAN), tk_bench_json_num("streamlines_per_s", rate);
    tk_bench_json_num("tck_streamlines_per_s", whole);
    if (b == TK_BACKEND_CUDA && gpus <= 1) tk_bench_json_bool("goal_met", rate >= kCudaGoal[alg]);
    if (gpus > 1) tk_bench_json_num("gpus", gpus), tk_bench_json_num("speedup", base_ms > 0 ? base_ms / ms : NAN);
    if (b == TK_BACKEND_OMP && ref.tracking > 0) tk_bench_json_bool("goal_met", rate >= kTckgenGoal * ref.tracking);
    if (b != TK_BACKEND_CUDA && ref.tracking > 0) tk_bench_json_num("vs_tckgen_tracking", rate / ref.tracking);
    if (b != TK_BACKEND_CUDA && ref.whole > 0) tk_bench_json_num("vs_tckgen_whole", rate / ref.whole);
    fflush(stdout);
    return ms;
}

int tk_bench_track(int argc, char **argv)
{
    track_args a = {1000000, 500, 0, 3, 0.25, {1, 1, 1}, {1, 1}, 1, "tckgen", NULL, -1, 0};
    if (!bench_parse_suite(&suite, argc, argv, &a, NULL)) return TK_EXIT_USAGE;
    const long threads = a.threads > 0 ? a.threads : sysconf(_SC_NPROCESSORS_ONLN);
    track_volume v;
    if (!make_volume(&a, &v)) return TK_EXIT_FAILURE;
    printf("# tk-bench track: %s tiled to %dx%dx%d voxels of %g mm (lmax %d); mask: l=0 coefficient >= %g, %zu "
           "voxels (%.0f%%)\n# step %g mm, angle %g, cutoff %g, lengths %g-%g mm; goals: cuda sd_stream >= 2,000,000, "
           "ifod1 >= 500,000 streamlines/s\n# (core, file writing excluded); omp >= 10x tckgen streamlines/s, same "
           "threads and seeds\n",
           a.input ? a.input : TK_BENCH_TRACK_FOD, NX, NY, NZ, kVoxMm, v.lmax, a.mask_threshold, v.mask_voxels,
           100.0 * v.mask_voxels / v.voxels, kStepMm, kAngleDeg, kCutoff, kMinMm, kMaxMm);
    printf("%-10s %-9s %9s %8s %9s %10s %10s %13s %13s  %s\n", "program", "algorithm", "seeds", "threads",
           "accepted", "core_ms", "write_ms", "streaml/s", "+tck strl/s", "goal");
    tk_bench_json_setting_num("dims_x", NX), tk_bench_json_setting_num("dims_y", NY);
    tk_bench_json_setting_num("dims_z", NZ), tk_bench_json_setting_num("voxel_mm", kVoxMm);
    tk_bench_json_setting_num("mask_voxels", (double)v.mask_voxels), tk_bench_json_setting_num("threads", threads);
    tk_bench_json_setting_num("mask_threshold", a.mask_threshold), tk_bench_json_setting_num("lmax", v.lmax);
    tk_bench_json_setting_num("step_mm", kStepMm), tk_bench_json_setting_num("angle_deg", kAngleDeg);
    tk_bench_json_setting_num("cutoff", kCutoff), tk_bench_json_setting_num("min_length_mm", kMinMm);
    tk_bench_json_setting_num("max_length_mm", kMaxMm), tk_bench_json_setting_num("repeat", a.repeat);
    tk_bench_json_setting_num("cuda_seeds", a.seeds), tk_bench_json_setting_num("cpu_seeds", a.cpu_seeds);
    tk_bench_json_reference("goal cuda sd_stream streamlines/s", kCudaGoal[0], "streamlines/s", "issue 23, core");
    tk_bench_json_reference("goal cuda ifod1 streamlines/s", kCudaGoal[1], "streamlines/s", "issue 23, core");
    tk_bench_json_reference("goal omp vs tckgen", kTckgenGoal, "x", "issue 23, same cores and seeds");
    track_files files;
    const int have_dir = (a.write || a.tckgen) && make_dir(&files);
    const int cpu_side = a.backends[TK_BACKEND_CPU] || a.backends[TK_BACKEND_OMP];
    const int have_tckgen = have_dir && a.tckgen && cpu_side && write_tckgen_inputs(&v, &files);
    const int scaling_gpus = a.backends[TK_BACKEND_CUDA] ? bench_scaling_gpus(a.gpus) : 0;
    for (int alg = 0; alg < 2; ++alg) {
        if (!a.algorithms[alg]) continue;
        const tckgen_rate ref = have_tckgen ? measure_tckgen(&a, &files, alg, threads) : (tckgen_rate){0, 0};
        for (int b = 0; b < 3; ++b) {
            if (!a.backends[b]) continue;
            const double one = measure_backend(&a, &v, have_dir ? &files : NULL, alg, b, threads, ref, 1, 0);
            if (b == TK_BACKEND_CUDA && scaling_gpus && one > 0)
                measure_backend(&a, &v, have_dir ? &files : NULL, alg, b, threads, ref, scaling_gpus, one);
        }
    }
    if (have_tckgen) remove(files.fod), remove(files.mask);
    if (have_dir) rmdir(files.dir);
    free(v.sh), free(v.mask);
    return 0;
}
