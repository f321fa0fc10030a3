/* tk-tucker: sparse FastTucker decomposition (train, predict, synth). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "cli_options.h"
#include "tk_output_set.h"
#include "tk_tucker.h"
#ifdef TK_TUCKER_WITH_IMAGES
#include "tk_tucker_complete.h" /* tools/itk: the ITK image mode, when built with ITK */
#endif

static const char *prog = "tk-tucker";

/* `tk-tucker --help`: the commands; each command's own --help lists its options. */
static void usage(FILE *f)
{
    fprintf(f,
            "usage: tk-tucker train TRAIN.tns [--test TEST.tns | --test-fraction F] --out MODEL_DIR [options]\n"
            "       tk-tucker predict MODEL_DIR QUERIES.tns OUT.tns\n"
            "       tk-tucker synth --shape I1,I2,... --nnz N [options] OUT.tns\n"
            "       tk-tucker complete IN_IMAGE OUT_IMAGE [--mask MASK] [options]  (built with ITK)\n"
            "       tk-tucker --xml   the Slicer description of complete (a 3D Slicer CLI module)\n"
            "       tk-tucker --version\n"
            "\n"
            "Sparse FastTucker decomposition (cuFasterTucker's model and SGD updates) of a\n"
            "FROSTT .tns tensor: 1-based indices, value last, '#' comments.  A binary cache\n"
            "FILE.tns.tkc is kept beside each input for fast reloads.\n"
            "\n"
            "tk-tucker COMMAND --help: the options of COMMAND (every command takes the standard\n"
            "options --backend, --device, --threads, --quiet, --force, --version).\n");
}

static long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

static int exit_code(tk_status s) { return s == TK_ERR_ARGUMENT ? TK_EXIT_USAGE : TK_EXIT_FAILURE; }

/* The .tns.tkc cache this run wrote beside an input it then refused: not left behind. */
static void drop_cache(const char *tns)
{
    size_t n = strlen(tns);
    char *cache = malloc(n + 5);
    if (!cache) return;
    memcpy(cache, tns, n);
    memcpy(cache + n, ".tkc", 5);
    unlink(cache);
    free(cache);
}

/* ---- train ----------------------------------------------------------------------- */

typedef struct {
    const char *train, *test, *out;
    double test_fraction;
    long rank_j, rank_r, iters, every, fiber_threshold, deflate;
    int resume, dbl, als, factor_update, init;
    long rounds_done; /* a resumed checkpoint's deflation rounds already run */
    uint64_t seed;
    char init_line[32]; /* the manifest's "init" value: this run's start, or a resumed checkpoint's */
    char deflate_line[32]; /* the manifest's "deflate" value: this run's rounds, or a resumed checkpoint's */
    tk_tucker_options o;
    tk_standard_values std;
    int gpus, gpus_given; /* --gpus (tk_cli_resolve_gpus): data-parallel SGD over the GPUs, NCCL */
    char train_entries[48]; /* "NNZ:FINGERPRINT" of the training entries (tk_tucker_coo_fingerprint) */
} train_args;

static const tk_opt_choice factor_updates[] = {
    {"als", TK_TUCKER_FACTOR_ALS, 0}, {"sgd", TK_TUCKER_FACTOR_SGD, 0}, {NULL, 0, 0}};
/* auto (0, the default) is resolved to one of the others once the training entries are read */
enum { INIT_AUTO = 0, INIT_RANDOM = 1, INIT_SPECTRAL = 2 };
static const tk_opt_choice inits[] = {
    {"auto", INIT_AUTO, 0}, {"random", INIT_RANDOM, 0}, {"spectral", INIT_SPECTRAL, 0}, {NULL, 0, 0}};

#define TRAIN(member) offsetof(train_args, member)
static const tk_option train_options[] = {
    {.name = "test", .value_name = "TEST.tns", .kind = TK_OPT_TEXT, .offset = TRAIN(test),
     .help = "held-out entries: the test RMSE and MAE of every iteration"},
    {.name = "test-fraction", .value_name = "F", .kind = TK_OPT_DOUBLE, .min = 0, .max = 0.99,
     .offset = TRAIN(test_fraction), .help = "hold out this fraction of TRAIN.tns instead (seeded by --seed)"},
    {.name = "out", .value_name = "MODEL_DIR", .kind = TK_OPT_TEXT, .offset = TRAIN(out),
     .help = "the model directory (required)"},
    {.name = "rank-j", .value_name = "J", .kind = TK_OPT_LONG, .min = TK_TUCKER_MIN_RANK, .max = TK_TUCKER_MAX_RANK,
     .offset = TRAIN(rank_j), .help = "factor rank, 4..64 (default 32)"},
    {.name = "rank-r", .value_name = "R", .kind = TK_OPT_LONG, .min = TK_TUCKER_MIN_RANK, .max = TK_TUCKER_MAX_RANK,
     .offset = TRAIN(rank_r), .help = "core rank, 4..64 (default 32)"},
    {.name = "iters", .value_name = "K", .kind = TK_OPT_LONG, .min = 1, .max = 1000000, .offset = TRAIN(iters),
     .help = "iterations (default 40)"},
    {.name = "factor-update", .value_name = "als|sgd", .kind = TK_OPT_CHOICE, .choices = factor_updates,
     .offset = TRAIN(factor_update),
     .help = "als (default): exact row solves with a ridge of lambda-a per entry\n(ALS-WR), the core as it "
             "starts unless --lr-b is given; sgd: the\nseed's SGD steps (lr-a 0.05, lr-b 1, lambda-a 0.001)"},
    {.name = "als", .kind = TK_OPT_FLAG, .offset = TRAIN(als),
     .help = "the same as --factor-update als, the default (kept for older\nscripts)"},
    {.name = "lr-a", .value_name = "X", .kind = TK_OPT_DOUBLE, .min = 0, .max = 1e6, .offset = TRAIN(o.lr_a),
     .help = "sgd's factor learning rate (default 0.05; lower it for large\nvalues, e.g. 0.005 for 1..5)"},
    {.name = "lr-b", .value_name = "X", .kind = TK_OPT_DOUBLE, .min = 0, .max = 1e6, .offset = TRAIN(o.lr_b),
     .help = "core learning rate (default 0: the core as it starts; sgd 1; scales\nthe mean core gradient)"},
    {.name = "lambda-a", .value_name = "X", .kind = TK_OPT_DOUBLE, .min = 0, .max = 1e6, .offset = TRAIN(o.lambda_a),
     .help = "factor regularization, per entry of a row (default 0.0003; sgd\n0.001)"},
    {.name = "lambda-b", .value_name = "X", .kind = TK_OPT_DOUBLE, .min = 0, .max = 1e6, .offset = TRAIN(o.lambda_b),
     .help = "core regularization (default 0.001)"},
    {.name = "fiber-threshold", .value_name = "T", .kind = TK_OPT_LONG, .min = 1, .max = (double)(1L << 40),
     .offset = TRAIN(fiber_threshold), .help = "B-CSF sub-slice size (default 128)"},
    {.name = "double", .kind = TK_OPT_FLAG, .offset = TRAIN(dbl),
     .help = "cpu/omp in double precision (the reference path; --backend auto\nthen runs omp)"},
    {.name = "seed", .value_name = "S", .kind = TK_OPT_SEED, .offset = TRAIN(seed),
     .help = "seed of the start and of --test-fraction (default 0)"},
    {.name = "checkpoint-every", .value_name = "K", .kind = TK_OPT_LONG, .min = 1, .max = 1000000,
     .offset = TRAIN(every), .help = "save the model every K iterations (default: at the end only)"},
    {.name = "resume", .kind = TK_OPT_FLAG, .offset = TRAIN(resume),
     .help = "continue from the model saved in MODEL_DIR (no --force needed)"},
    {.name = "init", .value_name = "auto|random|spectral", .kind = TK_OPT_CHOICE, .choices = inits,
     .offset = TRAIN(init),
     .help = "the start: random; spectral: each mode's top-J eigenvectors of\nX(n)X(n)^T less its diagonal, the "
             "cores by least squares (for\nsparse tensors a random start does not learn; benchmarks.md \"A\n"
             "spectral start\"); auto (default): spectral with --deflate 1 where\nthe best-sampled unfolding has "
             "fewer than 8 entries a column or\nthe largest mode fewer than 32 J a row, else random (always random\n"
             "with sgd; benchmarks.md \"The default start\"); spectral not with\n--resume"},
    {.name = "deflate", .value_name = "K", .kind = TK_OPT_LONG, .min = 0, .max = 1000, .offset = TRAIN(deflate),
     .help = "after --iters iterations from the spectral start, K rounds of\n"
             "{deflation, --iters more}: each mode keeps its model's strong\n"
             "directions, takes the weak ones from the residual's spectral\n"
             "vectors, the cores fitted again (benchmarks.md \"Deflation\");\n"
             "--iters x (K + 1) iterations in all (default 0; 1 where --init\n"
             "auto chooses spectral); the start is then spectral: not with\n"
             "--init random, nor with --resume"},
};
#undef TRAIN

static const tk_option_group train_groups[] = {
    {.title = "train options", .options = train_options, .count = TK_OPT_COUNT(train_options)},
    TK_GPUS_GROUP(train_args, gpus),
    TK_STANDARD_GROUP(train_args, std),
};

static const tk_command train_command = {
    .prog = "tk-tucker",
    .subcommand = "train",
    .usage = "tk-tucker train TRAIN.tns [--test TEST.tns | --test-fraction F] --out MODEL_DIR [options]",
    .description = "Fits a FastTucker model to TRAIN.tns by exact row solves of the factors (ALS-WR;\n"
                   "--factor-update sgd: the seed's SGD).  Each iteration prints its update time,\n"
                   "train RMSE, test RMSE and test MAE.\n",
    .epilog = "MODEL_DIR: A1.npy..AN.npy (I_n x J), B1.npy..BN.npy (J x R), manifest.txt;\n"
              "replaced atomically at each save, so a killed run loses at most one interval.\n"
              "An existing model is replaced only with --force (or continued with --resume).\n"
              "With --seed, cpu and omp runs are reproducible (bit for bit, any thread count).\n"
              "--gpus: the GPUs train one model, each the rows of every mode it owns (NCCL;\n"
              "Documentation/scaling.md), the same model as one GPU's to float rounding; a build\n"
              "without NCCL runs on one GPU.\n",
    .groups = train_groups,
    .count = TK_OPT_COUNT(train_groups),
    .max_positional = 1,
    .positional_hint = "give one TRAIN.tns",
};

/* The run's start and rounds, and the manifest lines that record them. */
static void set_start(train_args *a, int init, long deflate)
{
    a->init = init;
    a->deflate = deflate;
    snprintf(a->init_line, sizeof a->init_line, "%s",
             init == INIT_SPECTRAL ? "spectral" : init == INIT_RANDOM ? "random" : "auto");
    snprintf(a->deflate_line, sizeof a->deflate_line, "%ld", deflate);
}

static int parse_train(int argc, char **argv, train_args *a)
{
    memset(a, 0, sizeof *a);
    tk_tucker_options_init(&a->o);
    a->rank_j = a->rank_r = TK_TUCKER_DEFAULT_RANK;
    a->iters = TK_TUCKER_DEFAULT_ITERATIONS;
    a->fiber_threshold = (long)a->o.fiber_threshold;
    tk_parsed parsed;
    if (!tk_cli_parse_options(&train_command, argc, argv, 2, a, &parsed)) return 0;
    a->gpus_given = tk_cli_given(&train_command, &parsed, "gpus");
    a->train = parsed.positional[0];
    a->o.fiber_threshold = (size_t)a->fiber_threshold;
    a->o.num_threads = a->std.threads;
    a->o.cuda_device = a->std.device;
    if (a->dbl) a->o.precision = TK_PRECISION_DOUBLE;
    if (a->als && a->factor_update == TK_TUCKER_FACTOR_SGD) {
        tk_cli_error(prog, "--als with --factor-update sgd: give one of them");
        return 0;
    }
    a->o.factor_update = (tk_tucker_factor_update)a->factor_update;
    if (a->o.factor_update == TK_TUCKER_FACTOR_SGD) {
        /* the seed's settings, where not given (tk_tucker_options_init_sgd) */
        tk_tucker_options sgd;
        tk_tucker_options_init_sgd(&sgd);
        if (!tk_cli_given(&train_command, &parsed, "lr-b")) a->o.lr_b = sgd.lr_b;
        if (!tk_cli_given(&train_command, &parsed, "lambda-a")) a->o.lambda_a = sgd.lambda_a;
    } else if (tk_cli_given(&train_command, &parsed, "lr-a")) {
        tk_cli_error(prog, "--lr-a: exact row solves (the default, als) take no factor rate; drop --lr-a, or add "
                           "--factor-update sgd");
        return 0;
    }
    if (!a->train || !a->out) {
        tk_cli_error(prog, "train needs TRAIN.tns and --out MODEL_DIR; give both (see --help)");
        return 0;
    }
    if (a->test && a->test_fraction > 0) {
        tk_cli_error(prog, "--test and --test-fraction were both given; give one of them, not both");
        return 0;
    }
    const int deflate_given = tk_cli_given(&train_command, &parsed, "deflate");
    if (deflate_given && a->init == INIT_RANDOM) {
        tk_cli_error(prog, "--deflate with --init random: the deflation rounds continue a spectral start; drop --init "
                           "random (or give --init spectral), or drop --deflate");
        return 0;
    }
    /* rounds asked for: the start they continue */
    if (deflate_given && a->init == INIT_AUTO) a->init = INIT_SPECTRAL;
    if (deflate_given && a->resume) {
        tk_cli_error(prog, "--deflate with --resume: the rounds run in one training from --init spectral's start; "
                           "drop --deflate (a resumed run continues the checkpoint's schedule, its rounds included), or "
                           "train without --resume");
        return 0;
    }
    if (a->init == INIT_SPECTRAL && a->resume) {
        tk_cli_error(prog, "--init spectral with --resume: a resumed run continues the checkpoint's model (its start "
                           "is recorded in its manifest); drop --init, or train without --resume");
        return 0;
    }
    set_start(a, a->init, a->deflate);
    if (a->o.precision == TK_PRECISION_DOUBLE && a->std.backend == TK_BACKEND_CUDA) {
        tk_cli_error(prog, "--double with --backend cuda: cuda computes in float; use --backend cpu or omp, or drop "
                           "--double");
        return 0;
    }
    return 1;
}

/* --init auto, once the training entries are known: the spectral start with one deflation round
 * where the data samples even its best unfolding thinly (tk_tucker_prefers_spectral), else the
 * random start; which, and why, on stderr.  With --factor-update sgd always the random start:
 * the seed's algorithm from the seed's start (the rule was measured with the row solves). */
static void resolve_auto_start(train_args *a, const tk_tucker_coo *train)
{
    if (a->init != INIT_AUTO) return;
    if (a->o.factor_update == TK_TUCKER_FACTOR_SGD) {
        set_start(a, INIT_RANDOM, 0);
        if (!a->std.quiet) fprintf(stderr, "%s: start: random (--init auto with --factor-update sgd)\n", prog);
        return;
    }
    const int spectral = tk_tucker_prefers_spectral(train, (int)a->rank_j);
    set_start(a, spectral ? INIT_SPECTRAL : INIT_RANDOM, spectral ? 1 : 0);
    if (!a->std.quiet) {
        tk_tucker_sampling s;
        tk_tucker_sampling_of(train, &s);
        fprintf(stderr,
                "%s: start: %s (--init auto: %.3g entries a column of the best-sampled unfolding, mode %d's, and %.3g "
                "a row of the largest mode, mode %d; the spectral start where fewer than %g or %g = 32 J)\n",
                prog, spectral ? "spectral, then 1 deflation round after --iters" : "random", s.column_entries,
                s.column_mode + 1, s.row_entries, s.row_mode + 1, TK_TUCKER_SPECTRAL_BELOW_COLUMN_ENTRIES,
                TK_TUCKER_SPECTRAL_BELOW_ROW_ENTRIES_PER_RANK * (double)a->rank_j);
    }
}

/* The settings a resumed run must share with the checkpoint, as manifest lines.  train_entries
 * names the training entries themselves (their count and fingerprint), which the Python package
 * writes too (tensorkernels.tucker.train): a checkpoint of either resumes in either.
 * test_fraction and train_bytes (the file's size) are kept for checkpoints written before
 * train_entries, which are compared on those. */
static void settings_text(const train_args *a, char *out, size_t size)
{
    snprintf(out, size,
             "seed = %llu\nlr_a = %.17g\nlr_b = %.17g\nlambda_a = %.17g\nlambda_b = %.17g\nfiber_threshold = %zu\n"
             "precision = %s\ntest_fraction = %.17g\ntrain_bytes = %ld\ntrain_entries = %s\nfactor_update = %s\n%s",
             (unsigned long long)a->seed, a->o.lr_a, a->o.lr_b, a->o.lambda_a, a->o.lambda_b, a->o.fiber_threshold,
             (a->o.precision == TK_PRECISION_DOUBLE) ? "double" : "float", a->test_fraction, file_size(a->train),
             a->train_entries, a->o.factor_update == TK_TUCKER_FACTOR_SGD ? "sgd" : "als",
             a->o.factor_update == TK_TUCKER_FACTOR_SGD ? "" : "als_ridge = per_entry\n");
}

static int check_resume(const train_args *a, const char *manifest, const tk_tucker_model *m, const tk_tucker_coo *train)
{
    char mine[2048], want[256], have[256];
    settings_text(a, mine, sizeof mine);
    /* the data: the entries where the checkpoint names them, else (an older tool's) the file's
     * size with the split */
    const int by_entries = tk_tucker_manifest_get(manifest, "train_entries", have, sizeof have) != 0;
    static const char *with_entries[] = {"seed", "lr_a", "lr_b", "lambda_a", "lambda_b", "fiber_threshold",
                                         "precision", "train_entries"};
    static const char *with_file[] = {"seed", "lr_a", "lr_b", "lambda_a", "lambda_b", "fiber_threshold",
                                      "precision", "test_fraction", "train_bytes"};
    /* a checkpoint from before ALS (no factor_update line) was trained by SGD */
    tk_tucker_manifest_get(mine, "factor_update", want, sizeof want);
    if (!tk_tucker_manifest_get(manifest, "factor_update", have, sizeof have)) snprintf(have, sizeof have, "sgd");
    if (strcmp(want, have)) {
        tk_cli_error(prog, "--resume: the factor updates are %s here but %s in the checkpoint in %s; %s, or train "
                           "without --resume", want, have, a->out,
                     strcmp(have, "sgd") ? "drop --factor-update sgd" : "add --factor-update sgd");
        return 0;
    }
    /* an ALS checkpoint from before ALS-WR (no als_ridge line) had a flat ridge lambda_a: its f
     * is not this one's, so it is not continued as if it were */
    if (!strcmp(have, "als") && !tk_tucker_manifest_get(manifest, "als_ridge", want, sizeof want)) {
        tk_cli_error(prog, "--resume: the checkpoint in %s was trained by row solves with the flat ridge of an older "
                           "tk-tucker (no als_ridge line), this one's ridge is per entry; train without --resume",
                     a->out);
        return 0;
    }
    const char *const *keys = by_entries ? with_entries : with_file;
    const size_t num_keys = by_entries ? sizeof with_entries / sizeof *with_entries : sizeof with_file / sizeof *with_file;
    for (size_t k = 0; k < num_keys; ++k) {
        tk_tucker_manifest_get(mine, keys[k], want, sizeof want);
        if (!tk_tucker_manifest_get(manifest, keys[k], have, sizeof have) || strcmp(want, have)) {
            tk_cli_error(prog, "--resume: %s is %s here but %s in the checkpoint in %s; run with the checkpoint's "
                               "settings, or train without --resume", keys[k], want, have, a->out);
            return 0;
        }
    }
    if (m->rank_j != a->rank_j || m->rank_r != a->rank_r || m->order != train->order) {
        tk_cli_error(prog, "--resume: the checkpoint has order %d, J=%d, R=%d, but this run order %d, J=%ld, R=%ld; "
                           "give the checkpoint's --rank-j and --rank-r, or train without --resume", m->order,
                     m->rank_j, m->rank_r, train->order, a->rank_j, a->rank_r);
        return 0;
    }
    return 1;
}

/* The run's iterations in all: --iters from the start, then --iters after each deflation round. */
static long total_iterations(const train_args *a) { return a->iters * (a->deflate + 1); }

static tk_status save(const train_args *a, const tk_tucker_model *m, long iteration, const tk_tucker_metrics *tr,
                      const tk_tucker_metrics *te)
{
    char extra[4096], settings[2048];
    settings_text(a, settings, sizeof settings);
    snprintf(extra, sizeof extra,
             "iteration = %ld\niters = %ld\nbackend = %s\ntrain = %s\ntest = %s\ninit = %s\ndeflate = %s\n"
             "round_iters = %ld\n%s"
             "train_rmse = %.9g\ntest_rmse = %.9g\ntest_mae = %.9g\n",
             iteration, total_iterations(a), tk_backend_name(a->o.backend), a->train, a->test ? a->test : "",
             a->init_line, a->deflate_line, a->iters, settings,
             tr->rmse, te->count ? te->rmse : NAN, te->count ? te->mae : NAN);
    return tk_tucker_model_save(a->out, m, extra);
}

/* A manifest value that must be a whole number in [lo, hi] (hi LONG_MAX: no upper bound); 0 after
 * saying the checkpoint is damaged. */
static int manifest_long(const train_args *a, const char *manifest, const char *key, long lo, long hi, long *out)
{
    char v[64];
    if (!tk_tucker_manifest_get(manifest, key, v, sizeof v)) return 1; /* absent: *out keeps its default */
    char *end = NULL;
    errno = 0;
    const long x = strtol(v, &end, 10);
    if (end == v || *end || errno || x < lo || x > hi) {
        char range[64];
        if (hi == LONG_MAX) snprintf(range, sizeof range, ">= %ld", lo);
        else snprintf(range, sizeof range, "from %ld to %ld", lo, hi);
        tk_cli_error(prog, "--resume: %s/manifest.txt: %s '%s' is not a whole number %s (the checkpoint is damaged); "
                           "fix that line, or train without --resume", a->out, key, v, range);
        return 0;
    }
    *out = x;
    return 1;
}

/* A resumed run continues its checkpoint's schedule: the same deflation rounds, those not run by
 * iteration `start` after each --iters as in the first run, so that the same command resumed
 * after a crash gives the model of a run never interrupted.  The rounds already run are counted
 * with the checkpoint's own phase (round_iters, or for a checkpoint from before that line its
 * iterations in all / (rounds + 1)). */
static int resume_schedule(train_args *a, const char *manifest, long start)
{
    long rounds = 0, total = 0, phase = 0;
    if (!manifest_long(a, manifest, "deflate", 0, 1000, &rounds) ||
        !manifest_long(a, manifest, "iters", 0, 1000000L * 1001, &total) ||
        !manifest_long(a, manifest, "round_iters", 1, 1000000, &phase))
        return 0;
    if (!phase) phase = total / (rounds + 1) > 0 ? total / (rounds + 1) : 1;
    a->deflate = rounds;
    a->rounds_done = start >= 1 ? (start - 1) / phase : 0;
    if (a->rounds_done > rounds) a->rounds_done = rounds;
    return 1;
}

/* Fail before training, not after it, when MODEL_DIR cannot take a model. */
static int out_dir_usable(const char *dir)
{
    struct stat st;
    if (stat(dir, &st) != 0) return 1;
    size_t n = strlen(dir);
    char *manifest = malloc(n + 16);
    if (!manifest) return 0;
    snprintf(manifest, n + 16, "%s/manifest.txt", dir);
    int ok = S_ISDIR(st.st_mode) && (stat(manifest, &st) == 0 || rmdir(dir) == 0);
    free(manifest);
    if (!ok) tk_cli_error(prog, "%s exists and is not a tk-tucker model directory (no manifest.txt): refusing to "
                               "replace it; give a new or empty folder", dir);
    return ok;
}

/* The held-out RMSE of the constant prediction a recommender is first judged against: the
 * training entries' mean for every test entry (predicting 0 where the data are centred). */
static double mean_baseline_rmse(const tk_tucker_coo *train, const tk_tucker_coo *test)
{
    double mean = 0, sse = 0;
    for (size_t e = 0; e < train->nnz; ++e) mean += train->val[e];
    mean /= (double)train->nnz;
    for (size_t e = 0; e < test->nnz; ++e) sse += ((double)test->val[e] - mean) * ((double)test->val[e] - mean);
    return sqrt(sse / (double)test->nnz);
}

/* The spectral start (tk_tucker_spectral_start) with --seed and --threads, its time on stderr. */
static int start_spectral(const train_args *a, const tk_tucker_coo *train, tk_tucker_model *model)
{
    tk_tucker_spectral_options so;
    tk_tucker_spectral_options_init(&so);
    so.seed = a->seed;
    so.num_threads = a->std.threads;
    const double t0 = tk_cli_now_ms();
    tk_status s = tk_tucker_spectral_start(train, &so, model);
    if (s != TK_OK) {
        tk_cli_error(prog, "--init spectral: %s", tk_last_error());
        return 0;
    }
    if (!a->std.quiet) fprintf(stderr, "%s: spectral start: %.1f s\n", prog, (tk_cli_now_ms() - t0) / 1e3);
    return 1;
}

/* Deflation round `round` (tk_tucker_spectral_deflate) on the model trained so far, with --seed
 * and --threads, what each mode kept and its time on stderr. */
static int deflate_round(const train_args *a, const tk_tucker_coo *train, long round, tk_tucker_model *model)
{
    tk_tucker_deflate_options d;
    tk_tucker_deflate_options_init(&d);
    d.seed = a->seed;
    d.num_threads = a->std.threads;
    int kept[TK_TUCKER_MAX_ORDER];
    const double t0 = tk_cli_now_ms();
    if (tk_tucker_spectral_deflate(train, &d, model, kept) != TK_OK) {
        tk_cli_error(prog, "--deflate: round %ld: %s", round, tk_last_error());
        return 0;
    }
    if (!a->std.quiet) {
        fprintf(stderr, "%s: deflation round %ld: kept", prog, round);
        for (int n = 0; n < model->order; ++n) fprintf(stderr, "%s%d", n ? ", " : " ", kept[n]);
        fprintf(stderr, " of J = %d directions a mode, the rest from the residual: %.1f s\n", model->rank_j,
                (tk_cli_now_ms() - t0) / 1e3);
    }
    return 1;
}

static int cmd_train(int argc, char **argv)
{
    train_args a;
    if (!parse_train(argc, argv, &a)) return TK_EXIT_USAGE;
    int bad_output = tk_cli_check_output(prog, a.out, 1, NULL);
    if (bad_output) return bad_output;
    if (!out_dir_usable(a.out)) return TK_EXIT_FAILURE;
    /* a model there (out_dir_usable refused anything else) is continued, or replaced with --force */
    if (!a.resume && (bad_output = tk_cli_refuse_existing(prog, &a.std, a.out, 1))) return bad_output;
    tk_tucker_coo all = {0}, train = {0}, test = {0};
    tk_tucker_model model = {0};
    tk_tucker_solver *solver = NULL;
    char *manifest = NULL;
    int rc = TK_EXIT_FAILURE;
    int train_cached = 1;
    tk_status s = tk_tns_read_cached(a.train, 0, &all, &train_cached);
    if (s == TK_OK) s = tk_tucker_coo_check(&all, a.train);
    if (s != TK_OK) {
        tk_cli_error(prog, "%s", tk_last_error());
        if (!train_cached) drop_cache(a.train);
        goto done;
    }
    if (all.order < 3) {
        tk_cli_error(prog, "%s: FastTucker needs order 3..%d, the file has order %d; give a tensor of 3 or more modes", a.train, TK_TUCKER_MAX_ORDER,
                     all.order);
        if (!train_cached) drop_cache(a.train);
        goto done;
    }
    if (a.test) {
        int test_cached = 1;
        if ((s = tk_tns_read_cached(a.test, all.order, &test, &test_cached)) != TK_OK ||
            (s = tk_tucker_coo_check(&test, a.test)) != TK_OK) {
            tk_cli_error(prog, "%s", tk_last_error());
            if (!test_cached) drop_cache(a.test);
            goto done;
        }
        train = all;
        memset(&all, 0, sizeof all);
    } else if ((s = tk_tucker_coo_split(&all, a.test_fraction, a.seed, &train, &test)) != TK_OK) {
        tk_cli_error(prog, "%s", tk_last_error());
        goto done;
    }
    if (train.nnz == 0) {
        tk_cli_error(prog, "%s: no training entries", a.train);
        goto done;
    }
    snprintf(a.train_entries, sizeof a.train_entries, "%zu:%016llx", train.nnz,
             (unsigned long long)tk_tucker_coo_fingerprint(&train));
    /* --double is a CPU path: auto picks omp for it without asking for a GPU. */
    tk_backend run = a.std.backend == TK_BACKEND_AUTO && a.o.precision == TK_PRECISION_DOUBLE ? TK_BACKEND_OMP : a.std.backend;
    if (!tk_cli_resolve_backend(prog, run, a.o.cuda_device, TK_BACKEND_OMP, a.std.quiet, &run)) goto done;
    a.o.backend = (tk_backend)run;
    if (!tk_cli_resolve_gpus(prog, a.gpus, a.gpus_given, a.std.backend, run, a.o.cuda_device, &a.o.cuda_device_count)) {
        rc = TK_EXIT_USAGE;
        goto done;
    }
    /* "every visible GPU" by default, as far as this build reaches: without NCCL, one */
    if (!a.gpus_given && a.o.cuda_device_count > tk_tucker_max_devices()) a.o.cuda_device_count = tk_tucker_max_devices();
    if (a.o.cuda_device_count > TK_TUCKER_MAX_DEVICES) {
        tk_cli_error(prog, "--gpus %d: FastTucker drives at most %d GPUs; give --gpus %d or fewer", a.o.cuda_device_count,
                     TK_TUCKER_MAX_DEVICES, TK_TUCKER_MAX_DEVICES);
        rc = TK_EXIT_USAGE;
        goto done;
    }
    if (a.o.cuda_device_count > 1 && !a.std.quiet)
        fprintf(stderr, "%s: training on %d GPUs (devices %d to %d)\n", prog, a.o.cuda_device_count, a.o.cuda_device,
                a.o.cuda_device + a.o.cuda_device_count - 1);
    uint32_t dims[TK_TUCKER_MAX_ORDER];
    for (int n = 0; n < train.order; ++n) dims[n] = train.dims[n] > test.dims[n] ? train.dims[n] : test.dims[n];
    long start = 0;
    if (a.resume && file_size(a.out) >= 0) {
        if ((s = tk_tucker_model_load(a.out, &model, &manifest)) != TK_OK) {
            tk_cli_error(prog, "--resume: %s", tk_last_error());
            goto done;
        }
        if (!check_resume(&a, manifest, &model, &train)) {
            rc = TK_EXIT_USAGE;
            goto done;
        }
        for (int n = 0; n < train.order; ++n)
            if (model.dims[n] != dims[n]) {
                tk_cli_error(prog, "--resume: mode %d has size %u in the checkpoint but %u in the data; resume with the "
                                   "data it was trained on, or train without --resume", n + 1,
                             model.dims[n], dims[n]);
                goto done;
            }
        /* the whole value, >= 0: a damaged or hand-edited checkpoint is refused, not resumed
         * from a negative iteration */
        start = 0;
        if (!manifest_long(&a, manifest, "iteration", 0, LONG_MAX, &start)) {
            rc = TK_EXIT_FAILURE;
            goto done;
        }
        /* the checkpoint's start stays its record (a checkpoint from before --init: random) */
        if (!tk_tucker_manifest_get(manifest, "init", a.init_line, sizeof a.init_line))
            snprintf(a.init_line, sizeof a.init_line, "random");
        if (!tk_tucker_manifest_get(manifest, "deflate", a.deflate_line, sizeof a.deflate_line))
            snprintf(a.deflate_line, sizeof a.deflate_line, "0");
        if (!resume_schedule(&a, manifest, start)) {
            rc = TK_EXIT_FAILURE;
            goto done;
        }
        fprintf(stderr, "%s: resuming %s after iteration %ld\n", prog, a.out, start);
    } else {
        if (a.resume) fprintf(stderr, "%s: no checkpoint in %s: starting from iteration 0\n", prog, a.out);
        double rows = 0;
        for (int n = 0; n < train.order; ++n) rows += dims[n];
        char what[256];
        snprintf(what, sizeof what, "%s: the model of its shape (%.0f rows at J=%ld)", a.train, rows, a.rank_j);
        if (!tk_cli_fits_memory(prog, rows * (double)a.rank_j * sizeof(float), what)) {
            if (!train_cached) drop_cache(a.train);
            goto done;
        }
        if ((s = tk_tucker_model_alloc(&model, train.order, dims, (int)a.rank_j, (int)a.rank_r)) != TK_OK) {
            tk_cli_error(prog, "%s: the model of its shape: %s", a.train, tk_last_error());
            if (!train_cached) drop_cache(a.train);
            rc = exit_code(s);
            goto done;
        }
        /* Non-negative data (ratings) starts from a positive model at the data's mean. */
        double mean = 0, lo = INFINITY;
        for (size_t e = 0; e < train.nnz; ++e) mean += train.val[e], lo = fmin(lo, train.val[e]);
        mean /= (double)train.nnz;
        resolve_auto_start(&a, &train);
        if (a.init == INIT_SPECTRAL) {
            if (!start_spectral(&a, &train, &model)) goto done;
        } else {
            tk_tucker_model_init(&model, a.seed, lo >= 0 ? mean : 0);
        }
    }
    if ((s = tk_tucker_solver_create(&a.o, &train, &model, &solver)) != TK_OK) {
        tk_cli_error(prog, "%s", tk_last_error());
        rc = exit_code(s);
        goto done;
    }
    printf("iter  update_s  factor_s    core_s  train_rmse   test_rmse    test_mae\n");
    fflush(stdout);
    tk_progress bar;
    const long total = total_iterations(&a);
    tk_progress_begin(&bar, "tk-tucker train", (size_t)(total > start ? total - start : 0), a.std.quiet);
    tk_tucker_metrics mtr = {0}, mte = {0};
    for (long it = start + 1; it <= total; ++it) {
        if (a.deflate && it > 1 && (it - 1) % a.iters == 0 && (it - 1) / a.iters > a.rounds_done) {
            /* a deflation round on the model after the last iteration (model holds it), then
             * ALS again from the round's model: a new solver, as from a start */
            tk_progress_end(&bar);
            tk_tucker_solver_destroy(solver);
            solver = NULL;
            if (!deflate_round(&a, &train, (it - 1) / a.iters, &model)) goto done;
            if ((s = tk_tucker_solver_create(&a.o, &train, &model, &solver)) != TK_OK) {
                tk_cli_error(prog, "%s", tk_last_error());
                rc = exit_code(s);
                goto done;
            }
        }
        if ((s = tk_tucker_update_factors(solver)) != TK_OK || (s = tk_tucker_update_core(solver)) != TK_OK ||
            (s = tk_tucker_solver_model(solver, &model)) != TK_OK ||
            (s = tk_tucker_evaluate(&model, &train, a.o.lambda_a, a.o.lambda_b, &mtr)) != TK_OK ||
            (s = tk_tucker_evaluate(&model, &test, 0, 0, &mte)) != TK_OK) {
            tk_progress_end(&bar);
            tk_cli_error(prog, "iteration %ld: %s", it, tk_last_error());
            goto done;
        }
        if (!isfinite(mtr.rmse)) {
            tk_progress_end(&bar);
            tk_cli_error(prog, "iteration %ld: the model diverged (train RMSE %g): lower --lr-a / --lr-b", it, mtr.rmse);
            goto done;
        }
        tk_timing tf, tc;
        tk_tucker_solver_timing(solver, &tf, &tc);
        tk_progress_end(&bar);
        if (test.nnz)
            printf("%4ld %9.4f %9.4f %9.4f %11.6f %11.6f %11.6f\n", it, (tf.kernel_ms + tc.kernel_ms) / 1e3,
                   tf.kernel_ms / 1e3, tc.kernel_ms / 1e3, mtr.rmse, mte.rmse, mte.mae);
        else
            printf("%4ld %9.4f %9.4f %9.4f %11.6f %11s %11s\n", it, (tf.kernel_ms + tc.kernel_ms) / 1e3, tf.kernel_ms / 1e3,
                   tc.kernel_ms / 1e3, mtr.rmse, "-", "-");
        fflush(stdout);
        if ((a.every && it % a.every == 0) || it == total) {
            if ((s = save(&a, &model, it, &mtr, &mte)) != TK_OK) {
                tk_cli_error(prog, "%s", tk_last_error());
                goto done;
            }
        }
        tk_progress_advance(&bar, 1);
    }
    tk_progress_end(&bar);
    /* A model that predicts held-out entries no better than their mean has learnt nothing a
     * user can use (benchmarks.md, "Time to accuracy": tensors with too few entries for the
     * ranks end there, or worse, with either update); say so rather than leave a table. */
    if (test.nnz && train.nnz && total > start && !a.std.quiet) {
        const double base = mean_baseline_rmse(&train, &test);
        if (!(mte.rmse < base))
            fprintf(stderr,
                    "%s: warning: the test RMSE after iteration %ld, %.6g, is not below %.6g, that of predicting the "
                    "training entries' mean for every test entry: at J = %ld, R = %ld the model predicts held-out "
                    "entries no better than a constant (too few entries a row for the ranks, or data no model of "
                    "these ranks explains); try lower --rank-j / --rank-r%s\n",
                    prog, total, mte.rmse, base, a.rank_j, a.rank_r,
                    a.init == INIT_SPECTRAL ? ""
                                            : ", or, on a sparse tensor (a few entries a column of its unfoldings), "
                                              "--init spectral --deflate 1 (benchmarks.md, \"Deflation\")");
    }
    rc = 0;
done:
    tk_tucker_solver_destroy(solver);
    tk_tucker_model_free(&model);
    tk_tucker_coo_free(&all);
    tk_tucker_coo_free(&train);
    tk_tucker_coo_free(&test);
    free(manifest);
    return rc;
}

/* ---- predict ------------------------------------------------------------------------ */

/* A .tns into output idx of set, every write checked; 0 after printing why. */
static int write_tns(tk_outset *set, int idx, const tk_tucker_coo *t)
{
    const char *path = tk_outset_path(set, idx);
    const int fd = tk_outset_open(set, idx, 0);
    if (fd < 0) return 0;
    FILE *f = fdopen(fd, "w");
    if (!f) {
        tk_cli_error(prog, "%s: cannot create: %s; check the folder and run again", path, strerror(errno));
        close(fd);
        return 0;
    }
    tk_status s = tk_tns_write_file(f, path, t);
    if (fclose(f) != 0 && s == TK_OK)
        s = tk_set_error(TK_ERR_IO, "%s: cannot write: %s; %s", path, strerror(errno), tk_write_advice(errno));
    if (s != TK_OK) tk_cli_error(prog, "%s", tk_last_error());
    return s == TK_OK;
}

typedef struct {
    tk_standard_values std;
} predict_args;

static const tk_option_group predict_groups[] = {TK_STANDARD_GROUP(predict_args, std)};

static const tk_command predict_command = {
    .prog = "tk-tucker",
    .subcommand = "predict",
    .usage = "tk-tucker predict MODEL_DIR QUERIES.tns OUT.tns [options]",
    .description = "The model's value at each query's indices (query values, if any, are ignored),\n"
                   "written as .tns with the same index columns; on the CPU.\n",
    .groups = predict_groups,
    .count = TK_OPT_COUNT(predict_groups),
    .max_positional = 3,
    .positional_hint = "predict takes MODEL_DIR QUERIES.tns OUT.tns; give those three",
};

static int cmd_predict(int argc, char **argv)
{
    predict_args a;
    tk_parsed parsed;
    if (!tk_cli_parse_options(&predict_command, argc, argv, 2, &a, &parsed)) return TK_EXIT_USAGE;
    const char *const *pos = parsed.positional;
    if (parsed.num_positional != 3) {
        tk_cli_error(prog, "predict takes MODEL_DIR QUERIES.tns OUT.tns; give those three (see --help)");
        return TK_EXIT_USAGE;
    }
    const char *inputs[] = {pos[1], NULL};
    int bad_output = tk_cli_check_output(prog, pos[2], 0, inputs);
    if (bad_output) return bad_output;
    /* OUT.tns may be neither the queries nor a file of the model (MODEL_DIR/A1.npy). */
    tk_outset *set = tk_outset_new(prog);
    if (!set) {
        tk_cli_error(prog, "out of memory; free memory and run again");
        return TK_EXIT_FAILURE;
    }
    int out_idx = -1;
    if (tk_outset_input_dir(set, "MODEL_DIR", pos[0]) || tk_outset_input(set, "QUERIES", pos[1]) ||
        (out_idx = tk_outset_add(set, "OUT", pos[2], NULL)) < 0) {
        tk_outset_free(set);
        return out_idx < -1 ? -out_idx : TK_EXIT_FAILURE;
    }
    /* after the output set's checks (a file of the model says so): --force */
    if ((bad_output = tk_cli_refuse_existing(prog, &a.std, pos[2], 0))) {
        tk_outset_free(set);
        return bad_output;
    }
    tk_tucker_model m;
    tk_tucker_coo q;
    if (tk_tucker_model_load(pos[0], &m, NULL) != TK_OK) {
        tk_cli_error(prog, "%s", tk_last_error());
        tk_outset_free(set);
        return TK_EXIT_FAILURE;
    }
    int rc = TK_EXIT_FAILURE;
    if (tk_tns_read_queries(pos[1], m.order, &q) != TK_OK) {
        tk_cli_error(prog, "%s", tk_last_error());
        tk_tucker_model_free(&m);
        tk_outset_free(set);
        return rc;
    }
    if (q.nnz == 0) {
        tk_cli_error(prog, "%s: no queries (the file holds no entries); give a file of queries 'i j k' a line", pos[1]);
        goto done;
    }
    for (size_t e = 0; e < q.nnz; ++e)
        for (int n = 0; n < q.order; ++n)
            if (q.idx[e * (size_t)q.order + (size_t)n] >= m.dims[n]) {
                tk_cli_error(prog, "%s: query %zu has index %u in mode %d, beyond the model's size %u; use indices within the model's sizes", pos[1], e + 1,
                             q.idx[e * (size_t)q.order + (size_t)n] + 1, n + 1, m.dims[n]);
                goto done;
            }
    memcpy(q.dims, m.dims, sizeof q.dims);
    if (tk_tucker_predict(&m, &q, q.val) != TK_OK) {
        tk_cli_error(prog, "%s", tk_last_error());
        goto done;
    }
    if (!write_tns(set, out_idx, &q) || tk_outset_commit(set) != 0) goto done;
    rc = 0;
done:
    tk_outset_free(set);
    tk_tucker_model_free(&m);
    tk_tucker_coo_free(&q);
    return rc;
}

/* ---- synth -------------------------------------------------------------------------- */


static int parse_shape(const char *v, tk_tucker_synth_options *o)
{
    const char *c = v;
    int n = 0;
    while (*c) {
        char *end = NULL;
        unsigned long d = strtoul(c, &end, 10);
        if (end == c || d == 0 || d > UINT32_MAX || *c == '-' || n == TK_TUCKER_MAX_ORDER || (*end && *end != ',')) {
            tk_cli_error(prog, "--shape expects 3..%d positive sizes like 480189,17770,2182, got '%s'; give them "
                               "comma-separated",
                         TK_TUCKER_MAX_ORDER, v);
            return 0;
        }
        o->dims[n++] = (uint32_t)d;
        c = *end ? end + 1 : end;
    }
    if (n < 3) {
        tk_cli_error(prog, "--shape needs at least 3 sizes (FastTucker orders 3..%d), got '%s'; give 3 to %d "
                           "sizes", TK_TUCKER_MAX_ORDER, v, TK_TUCKER_MAX_ORDER);
        return 0;
    }
    o->order = n;
    return 1;
}

typedef struct {
    tk_tucker_synth_options o;
    const char *shape, *truth;
    long nnz, rank_j, rank_r;
    int allow_duplicates;
    tk_standard_values std;
} synth_args;

#define SYNTH(member) offsetof(synth_args, member)
static const tk_option synth_options[] = {
    {.name = "shape", .value_name = "I1,I2,...", .kind = TK_OPT_TEXT, .offset = SYNTH(shape),
     .help = "the tensor's sizes, 3 to 10 of them (required)"},
    {.name = "nnz", .value_name = "N", .kind = TK_OPT_LONG, .min = 1, .max = (double)(1L << 40), .offset = SYNTH(nnz),
     .help = "entries (required)"},
    {.name = "rank-j", .value_name = "J", .kind = TK_OPT_LONG, .min = TK_TUCKER_MIN_RANK, .max = TK_TUCKER_MAX_RANK,
     .offset = SYNTH(rank_j), .help = "factor rank of the true model (default 32)"},
    {.name = "rank-r", .value_name = "R", .kind = TK_OPT_LONG, .min = TK_TUCKER_MIN_RANK, .max = TK_TUCKER_MAX_RANK,
     .offset = SYNTH(rank_r), .help = "core rank of the true model (default 32)"},
    {.name = "noise", .value_name = "S", .kind = TK_OPT_DOUBLE, .min = 0, .max = 1e6, .offset = SYNTH(o.noise),
     .help = "Gaussian noise standard deviation (default 0.1)"},
    {.name = "popularity", .value_name = "P", .kind = TK_OPT_DOUBLE, .min = 0, .max = 10, .offset = SYNTH(o.popularity),
     .help = "power-law exponent of index popularity (default 0.5)"},
    {.name = "seed", .value_name = "S", .kind = TK_OPT_SEED, .offset = SYNTH(o.seed), .help = "(default 0)"},
    {.name = "truth", .value_name = "DIR", .kind = TK_OPT_TEXT, .offset = SYNTH(truth),
     .help = "also save the true model as a model directory"},
    {.name = "allow-duplicates", .kind = TK_OPT_FLAG, .offset = SYNTH(allow_duplicates),
     .help = "skip the check that every index tuple occurs once"},
};
#undef SYNTH

static const tk_option_group synth_groups[] = {
    {.title = "synth options", .options = synth_options, .count = TK_OPT_COUNT(synth_options)},
    TK_STANDARD_GROUP(synth_args, std),
};

static const tk_command synth_command = {
    .prog = "tk-tucker",
    .subcommand = "synth",
    .usage = "tk-tucker synth --shape I1,I2,... --nnz N [options] OUT.tns",
    .description = "A random sparse tensor drawn from a random FastTucker model, with noise.\n",
    .groups = synth_groups,
    .count = TK_OPT_COUNT(synth_groups),
    .max_positional = 1,
    .positional_hint = "give one OUT.tns",
};

static int cmd_synth(int argc, char **argv)
{
    synth_args a;
    memset(&a, 0, sizeof a);
    tk_tucker_synth_options_init(&a.o);
    a.rank_j = a.o.rank_j, a.rank_r = a.o.rank_r;
    a.nnz = -1;
    tk_parsed parsed;
    if (!tk_cli_parse_options(&synth_command, argc, argv, 2, &a, &parsed)) return TK_EXIT_USAGE;
    tk_tucker_synth_options o = a.o;
    o.unique = !a.allow_duplicates;
    o.order = 0;
    o.rank_j = (int)a.rank_j, o.rank_r = (int)a.rank_r;
    if (a.shape && !parse_shape(a.shape, &o)) return TK_EXIT_USAGE;
    const char *out = parsed.positional[0], *truth_dir = a.truth, *shape_text = a.shape;
    const long nnz = a.nnz;
    if (!o.order || nnz < 0 || !out) {
        tk_cli_error(prog, "synth needs --shape, --nnz and OUT.tns; give all three (see --help)");
        return TK_EXIT_USAGE;
    }
    o.nnz = (size_t)nnz;
    double cells = 1, rows = 0;
    for (int n = 0; n < o.order; ++n) cells *= o.dims[n], rows += o.dims[n];
    if (o.unique && (double)nnz > 0.5 * cells) {
        tk_cli_error(prog, "--nnz %ld: that many distinct entries do not fit comfortably in the %.0f cells of --shape %s "
                           "(at most half of them fit); use a smaller --nnz, a larger --shape, or --allow-duplicates",
                     nnz, cells, shape_text);
        return TK_EXIT_USAGE;
    }
    /* Refused before any allocation: the entries (twice while duplicates are weeded out) and the true model. */
    double bytes = (double)nnz * (4.0 * o.order + 4) * (o.unique ? 2 : 1) + rows * o.rank_j * 4.0;
    if (!tk_cli_fits_memory(prog, bytes, "--shape and --nnz: the tensor")) return TK_EXIT_FAILURE;
    int bad_output = tk_cli_check_new_output(prog, &a.std, out, 0, NULL);
    if (!bad_output) bad_output = tk_cli_check_output(prog, truth_dir, 1, NULL);
    if (bad_output) return bad_output;
    if (truth_dir && !out_dir_usable(truth_dir)) return TK_EXIT_FAILURE;
    if ((bad_output = tk_cli_refuse_existing(prog, &a.std, truth_dir, 1))) return bad_output;
    /* OUT.tns and the --truth model in one output set: both in place, or neither. */
    tk_outset *set = tk_outset_new(prog);
    int out_idx = -1, truth_idx = -1;
    if (!set) {
        tk_cli_error(prog, "out of memory; free memory and run again");
        return TK_EXIT_FAILURE;
    }
    if ((out_idx = tk_outset_add(set, "OUT", out, NULL)) < 0 ||
        (truth_dir && (truth_idx = tk_tucker_model_register(set, "--truth", truth_dir, o.order)) < 0)) {
        tk_outset_free(set);
        return out_idx < 0 ? -out_idx : -truth_idx;
    }
    tk_tucker_coo t;
    tk_tucker_model truth;
    tk_status s = tk_tucker_synth(&o, &t, truth_dir ? &truth : NULL);
    if (s != TK_OK) {
        tk_cli_error(prog, "%s", tk_last_error());
        tk_outset_free(set);
        return exit_code(s);
    }
    int rc = 0;
    if (truth_dir && tk_tucker_model_write(set, truth_idx, &truth, "source = tk-tucker synth (true model)\n") != TK_OK) {
        tk_cli_error(prog, "--truth %s", tk_last_error());
        rc = TK_EXIT_FAILURE;
    } else if (!write_tns(set, out_idx, &t) || tk_outset_commit(set) != 0) {
        rc = TK_EXIT_FAILURE;
    }
    tk_outset_free(set);
    tk_tucker_coo_free(&t);
    if (truth_dir) tk_tucker_model_free(&truth);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? TK_EXIT_USAGE : 0;
    }
    if (argc == 2 && !strcmp(argv[1], "--version")) {
        printf("%s TensorKernels %s\n", prog, tk_version());
        return 0;
    }
    if (!strcmp(argv[1], "train")) return cmd_train(argc, argv);
    if (!strcmp(argv[1], "predict")) return cmd_predict(argc, argv);
    if (!strcmp(argv[1], "synth")) return cmd_synth(argc, argv);
#ifdef TK_TUCKER_WITH_IMAGES
    if (tk_xml_requested(argc, argv)) return tk_cli_print_xml(stdout, &tk_tucker_complete_command) ? 0 : TK_EXIT_FAILURE;
    /* Slicer writes the options first: `tk-tucker --mask M ... complete IN OUT`. */
    if (!strcmp(argv[1], "complete") || !strncmp(argv[1], "--", 2)) return tk_tucker_complete_main(argc, argv);
#else
    if (!strcmp(argv[1], "complete") || tk_xml_requested(argc, argv)) {
        tk_cli_error(prog, "%s needs the image mode, which this build lacks; build TensorKernels with ITK "
                           "(-DTK_WITH_ITK=ON)", argv[1]);
        return TK_EXIT_USAGE;
    }
#endif
    tk_cli_error(prog, "unknown command '%s'; use train, predict, synth or complete (see --help)", argv[1]);
    return TK_EXIT_USAGE;
}
