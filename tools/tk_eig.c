/* tk-eig: eigenvalues (and optionally right eigenvectors) of a batch of small real
 * nonsymmetric matrices stored in a .npy file. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_options.h"
#include "tk_eig.h"
#include "tk_npy.h"
#include "tk_output_set.h"

static const char *prog = "tk-eig";

typedef struct {
    const char *input, *output, *vectors, *status;
    tk_eig_options opts;
    int precision; /* -1: the input's */
    int balance;
    int gpus, gpus_given; /* --gpus (tk_cli_resolve_gpus) */
    tk_standard_values std;
} eig_args;

static const tk_opt_choice precisions[] = {
    {"auto", -1, 0}, {"single", TK_PRECISION_SINGLE, 0}, {"double", TK_PRECISION_DOUBLE, 0}, {NULL, 0, 0}};

#define NPY ".npy"
static const tk_option files[] = {
    {.position = 1, .value_name = "INPUT.npy", .kind = TK_OPT_TEXT,
     .xml = {.kind = TK_XML_FILE, .name = "inputMatrices", .label = "Input matrices",
             .description = "A .npy array of real n x n matrices, shape (..., n, n), float32 or float64, C order",
             .channel = TK_XML_INPUT, .file_extensions = NPY}},
    {.position = 2, .value_name = "OUTPUT.npy", .kind = TK_OPT_TEXT,
     .xml = {.kind = TK_XML_FILE, .name = "outputEigenvalues", .label = "Output eigenvalues",
             .description = "A .npy array of complex eigenvalues, shape (..., n), each row sorted by real part, "
                            "then imaginary part",
             .channel = TK_XML_OUTPUT, .file_extensions = NPY}},
    {.name = "vectors", .value_name = "VECS.npy", .kind = TK_OPT_TEXT, .offset = offsetof(eig_args, vectors),
     .help = "right eigenvectors too: complex, shape (..., n, n), column k\nbelongs to eigenvalue k (as "
             "numpy.linalg.eig); unit 2-norm,\nlargest-modulus component real and positive",
     .xml = {.kind = TK_XML_FILE, .name = "vectors", .label = "Output eigenvectors",
             .description = "Optional: right eigenvectors, shape (..., n, n), column j for eigenvalue j, unit 2-norm",
             .channel = TK_XML_OUTPUT, .file_extensions = NPY}},
    {.name = "status", .value_name = "STATUS.npy", .kind = TK_OPT_TEXT, .offset = offsetof(eig_args, status),
     .help = "int8 per matrix, shape (...): 0 converged, 1 not converged\nwithin the iteration cap, 2 non-finite "
             "input (NaN or Inf);\nthe values (and vectors) of a failed matrix are NaN",
     .xml = {.kind = TK_XML_FILE, .name = "status", .label = "Output status",
             .description = "Optional: int8 per matrix: 0 converged, 1 not converged, 2 non-finite input",
             .channel = TK_XML_OUTPUT, .file_extensions = NPY}},
};

static const tk_option computation[] = {
    {.name = "precision", .value_name = "auto|single|double", .kind = TK_OPT_CHOICE, .choices = precisions,
     .offset = offsetof(eig_args, precision), .help = "(default auto: the input's)",
     .xml = {.name = "precision", .label = "Precision", .description = "auto: the input's; single or double otherwise",
             .default_value = "auto"}},
    {.name = "no-balance", .kind = TK_OPT_FLAG, .clears = 1, .offset = offsetof(eig_args, balance),
     .help = "skip the balancing step (LAPACK's balanc='N')",
     .xml = {.name = "noBalance", .label = "No balancing",
             .description = "Skip the balancing LAPACK does before the QR iteration", .default_value = "false"}},
};

static const tk_option_group groups[] = {
    {.title = "files", .label = "Input/Output", .description = "Files", .options = files, .count = TK_OPT_COUNT(files)},
    {.title = "options", .label = "Computation", .description = "How it computes", .advanced = 1, .options = computation, .count = TK_OPT_COUNT(computation)},
    TK_GPUS_GROUP(eig_args, gpus),
    TK_STANDARD_GROUP(eig_args, std),
};

static const tk_xml_module slicer = TK_XML_TOOL_MODULE(
    "Utilities", "Batched Eigenvalues",
    "Eigenvalues (and optionally right eigenvectors) of every small nonsymmetric matrix of a batch: "
    "balancing, Householder Hessenberg reduction and implicit double-shift QR, on the CPU or CUDA.",
    "Batched Hessenberg QR after the seed paper on GPU eigenvalues of many small matrices.");

static const tk_command command = {
    .prog = "tk-eig",
    .usage = "tk-eig INPUT.npy OUTPUT.npy [options]",
    .description =
        "Eigenvalues of every real n x n matrix in INPUT.npy (float32 or float64, C order,\n"
        "shape (..., n, n), n = 1..%d), as LAPACK's dgeev computes them: balancing,\n"
        "Hessenberg reduction, implicit double-shift QR.\n"
        "\n"
        "OUTPUT.npy: complex128 (complex64 for single precision), shape (..., n); each row\n"
        "is sorted by real part ascending, then imaginary part ascending, so a complex\n"
        "conjugate pair appears as x-iy, x+iy.\n",
    .help_arg = TK_EIG_MAX_N,
    .epilog = TK_GPUS_SHARE_NOTE
              "Matrices that fail do not stop the run: they are counted in a warning on stderr\n"
              "and marked in STATUS.npy.  Outputs are written atomically.\n",
    .groups = groups,
    .count = sizeof groups / sizeof *groups,
    .xml = &slicer,
    .max_positional = 2,
    .positional_hint = "give INPUT.npy and OUTPUT.npy once",
};

static int parse_args(int argc, char **argv, eig_args *a)
{
    memset(a, 0, sizeof *a);
    tk_eig_options_init(&a->opts, 0);
    a->precision = -1;
    a->balance = 1;
    tk_parsed parsed;
    if (!tk_cli_parse_options(&command, argc, argv, 1, a, &parsed)) return 0;
    a->gpus_given = tk_cli_given(&command, &parsed, "gpus");
    a->input = parsed.positional[0];
    a->output = parsed.positional[1];
    if (a->precision >= 0) a->opts.precision = (tk_precision)a->precision;
    a->opts.balance = a->balance;
    a->opts.num_threads = a->std.threads;
    a->opts.cuda_device = a->std.device;
    if (!a->input || !a->output) {
        tk_cli_error(prog, "INPUT.npy and OUTPUT.npy are required; give both (see --help)");
        return 0;
    }
    const char *paths[3] = {a->output, a->vectors, a->status};
    for (int p = 0; p < 3; ++p)
        for (int q = p + 1; q < 3; ++q)
            if (paths[p] && paths[q] && !strcmp(paths[p], paths[q])) {
                tk_cli_error(prog, "two outputs would go to the same file '%s'; give each output its own path", paths[p]);
                return 0;
            }
    return 1;
}

int main(int argc, char **argv)
{
    eig_args a;
    if (!parse_args(argc, argv, &a)) return TK_EXIT_USAGE;
    const char *inputs[] = {a.input, NULL}, *outputs[] = {a.output, a.vectors, a.status};
    const char *flags[] = {"OUTPUT", "--vectors", "--status"};
    for (int o = 0; o < 3; ++o) {
        int bad_output = tk_cli_check_output(prog, outputs[o], 0, inputs);
        if (bad_output) return bad_output;
    }
    /* The values, --vectors and --status together: all in place, or none (tk_output_set.h). */
    tk_outset *set = tk_outset_new(prog);
    int idx[3] = {-1, -1, -1};
    if (!set || tk_outset_input(set, "INPUT", a.input)) {
        if (!set) tk_cli_error(prog, "out of memory; free memory and run again");
        tk_outset_free(set);
        return TK_EXIT_FAILURE;
    }
    for (int o = 0; o < 3; ++o)
        if (outputs[o] && (idx[o] = tk_outset_add(set, flags[o], outputs[o], NULL)) < 0) {
            tk_outset_free(set);
            return -idx[o];
        }
    /* after the output set's checks (an input, or one file twice, says so): --force */
    for (int o = 0; o < 3; ++o) {
        int existing = tk_cli_refuse_existing(prog, &a.std, outputs[o], 0);
        if (existing) {
            tk_outset_free(set);
            return existing;
        }
    }

    tk_npy_array arr;
    if (!tk_cli_read_float_npy(prog, a.input, "matrices", &arr)) {
        tk_outset_free(set);
        return TK_EXIT_FAILURE;
    }
    int exit_code = TK_EXIT_FAILURE;
    void *matrices = NULL, *values = NULL, *vectors = NULL;
    int8_t *status = NULL;
    tk_eig_plan *plan = NULL; /* one for every chunk: on CUDA its buffers and streams, on each GPU */
    char shape[256];
    tk_cli_shape_text(shape, sizeof shape, arr.ndim, arr.shape, 1);
    if (arr.ndim < 2) {
        tk_cli_error(prog, "%s: shape %s is not a stack of matrices (expected (..., n, n)); reshape it to "
                           "(..., n, n)", a.input, shape);
        goto done;
    }
    const size_t n = arr.shape[arr.ndim - 1];
    if (arr.shape[arr.ndim - 2] != n) {
        tk_cli_error(prog, "%s: shape %s: the matrices are not square (last two axes %zu and %zu); give square "
                           "matrices, shape (..., n, n)", a.input, shape,
                     arr.shape[arr.ndim - 2], n);
        goto done;
    }
    if (n < 1 || n > TK_EIG_MAX_N) {
        tk_cli_error(prog, "%s: shape %s: matrix order %zu is outside the supported 1..%d; use LAPACK "
                           "(numpy.linalg.eig) for larger matrices", a.input, shape, n,
                     TK_EIG_MAX_N);
        goto done;
    }
    const size_t nn = n * n, count = arr.count / nn;
    if (a.precision < 0)
        a.opts.precision = arr.dtype == TK_NPY_FLOAT64 ? TK_PRECISION_DOUBLE : TK_PRECISION_SINGLE;
    a.opts.n = (int)n;
    tk_backend run;
    if (!tk_cli_resolve_backend(prog, a.std.backend, a.opts.cuda_device, TK_BACKEND_OMP, a.std.quiet, &run)) goto done;
    a.opts.backend = (tk_backend)run;
    if (!tk_cli_resolve_gpus(prog, a.gpus, a.gpus_given, a.std.backend, run, a.opts.cuda_device, &a.opts.cuda_device_count)) {
        exit_code = TK_EXIT_USAGE;
        goto done;
    }
    const int dbl = a.opts.precision == TK_PRECISION_DOUBLE;
    const size_t elem = dbl ? sizeof(double) : sizeof(float);
    if ((arr.dtype == TK_NPY_FLOAT64) == dbl) {
        matrices = arr.data; /* already in the working precision: no copy */
        arr.data = NULL;
    } else {
        matrices = malloc((count ? count : 1) * nn * elem);
        if (!matrices) {
            tk_cli_error(prog, "%s: out of memory for %zu matrices of order %zu; split the batch into smaller files", a.input, count, n);
            goto done;
        }
        for (size_t e = 0; e < count * nn; ++e) {
            if (dbl) ((double *)matrices)[e] = ((const float *)arr.data)[e];
            else ((float *)matrices)[e] = (float)((const double *)arr.data)[e];
        }
    }
    values = malloc((count ? count : 1) * 2 * n * elem);
    vectors = a.vectors ? malloc((count ? count : 1) * 2 * nn * elem) : NULL;
    status = malloc(count ? count : 1);
    if (!values || (a.vectors && !vectors) || !status) {
        tk_cli_error(prog, "%s: out of memory for the results of %zu matrices of order %zu; split the batch into "
                           "smaller files", a.input, count, n);
        goto done;
    }

    /* Chunks drive the progress bar; the CUDA backend streams within each chunk (each GPU
     * a share of it). */
    size_t chunk = a.opts.backend == TK_BACKEND_CUDA ? ((size_t)a.opts.cuda_device_count << 20) : ((size_t)1 << 14);
    if (chunk > count) chunk = count ? count : 1;
    if (tk_eig_plan_create(&a.opts, chunk, &plan) != TK_OK) {
        tk_cli_error(prog, "%s: %s", a.input, tk_last_error());
        goto done;
    }
    size_t failed[3] = {0, 0, 0}, first_failed[3] = {0, 0, 0};
    tk_progress bar;
    tk_progress_begin(&bar, prog, count, a.std.quiet);
    for (size_t first = 0; first < count; first += chunk) {
        const size_t todo = count - first < chunk ? count - first : chunk;
        tk_eig_result r = {(char *)values + first * 2 * n * elem,
                           vectors ? (char *)vectors + first * 2 * nn * elem : NULL, status + first};
        if (tk_eig_plan_execute(plan, todo, (const char *)matrices + first * nn * elem, &r, NULL, NULL) != TK_OK) {
            tk_progress_end(&bar);
            tk_cli_error(prog, "%s: %s", a.input, tk_last_error());
            goto done;
        }
        tk_progress_advance(&bar, todo);
    }
    tk_progress_end(&bar);
    for (size_t b = 0; b < count; ++b) {
        int s = status[b];
        if (s > 0 && s < 3 && !failed[s]++) first_failed[s] = b;
    }

    /* shapes: (..., n) values, (..., n, n) vectors, (...) status */
    size_t out_shape[TK_NPY_MAX_DIMS];
    for (int d = 0; d < arr.ndim; ++d) out_shape[d] = arr.shape[d];
    const tk_npy_dtype cdtype = dbl ? TK_NPY_COMPLEX128 : TK_NPY_COMPLEX64;
    if (a.vectors && !tk_cli_write_npy(prog, set, idx[1], NULL, cdtype, arr.ndim, out_shape, vectors)) goto done;
    if (a.status) {
        size_t one = count;
        const int sdim = arr.ndim > 2 ? arr.ndim - 2 : 1;
        if (!tk_cli_write_npy(prog, set, idx[2], NULL, TK_NPY_INT8, sdim, arr.ndim > 2 ? out_shape : &one, status))
            goto done;
    }
    if (!tk_cli_write_npy(prog, set, idx[0], NULL, cdtype, arr.ndim - 1, out_shape, values)) goto done;
    if (tk_outset_commit(set) != 0) goto done;
    if (!a.std.quiet) {
        if (failed[TK_EIG_NONFINITE])
            fprintf(stderr, "%s: warning: %s: %zu of %zu matrices hold NaN or Inf (first: matrix %zu); their values are NaN\n",
                    prog, a.input, failed[TK_EIG_NONFINITE], count, first_failed[TK_EIG_NONFINITE]);
        if (failed[TK_EIG_NOT_CONVERGED])
            fprintf(stderr,
                    "%s: warning: %s: %zu of %zu matrices did not converge (first: matrix %zu); their values are NaN\n",
                    prog, a.input, failed[TK_EIG_NOT_CONVERGED], count, first_failed[TK_EIG_NOT_CONVERGED]);
    }
    exit_code = 0;
done:
    tk_eig_plan_destroy(plan);
    tk_outset_free(set);
    tk_npy_free(&arr);
    free(matrices);
    free(values);
    free(vectors);
    free(status);
    return exit_code;
}
