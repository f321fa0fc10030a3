/* tk-eig: eigenvalues (and optionally right eigenvectors) of a batch of small real
 * nonsymmetric matrices stored in a .npy file. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "tk_eig_xml.h"
#include "tk_eig.h"
#include "tk_npy.h"
#include "tk_output_set.h"

static const char *prog = "tk-eig";

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tk-eig INPUT.npy OUTPUT.npy [options]\n"
            "\n"
            "Eigenvalues of every real n x n matrix in INPUT.npy (float32 or float64, C order,\n"
            "shape (..., n, n), n = 1..%d), as LAPACK's dgeev computes them: balancing,\n"
            "Hessenberg reduction, implicit double-shift QR.\n"
            "\n"
            "OUTPUT.npy: complex128 (complex64 for single precision), shape (..., n); each row\n"
            "is sorted by real part ascending, then imaginary part ascending, so a complex\n"
            "conjugate pair appears as x-iy, x+iy.\n"
            "\n"
            "options:\n"
            "  --vectors VECS.npy       right eigenvectors too: complex, shape (..., n, n), column k\n"
            "                           belongs to eigenvalue k (as numpy.linalg.eig); unit 2-norm,\n"
            "                           largest-modulus component real and positive\n"
            "  --status STATUS.npy      int8 per matrix, shape (...): 0 converged, 1 not converged\n"
            "                           within the iteration cap, 2 non-finite input (NaN or Inf);\n"
            "                           the values (and vectors) of a failed matrix are NaN\n"
            "  --precision auto|single|double  (default auto: the input's)\n"
            "  --backend auto|cpu|omp|cuda  auto (default): cuda where a usable GPU is found, else\n"
            "                           omp with a warning on stderr\n"
            "  --threads P              threads of the omp backend (default: all)\n"
            "  --no-balance             skip the balancing step (LAPACK's balanc='N')\n"
            "  --quiet                  no progress bar or warnings (the CPU fallback's included)\n"
            "\n"
            "Matrices that fail do not stop the run: they are counted in a warning on stderr\n"
            "and marked in STATUS.npy.  Outputs are written atomically.\n",
            TK_EIG_MAX_N);
}

typedef struct {
    const char *input, *output, *vectors, *status;
    tk_eig_options opts;
    int precision_given, quiet;
    tk_backend backend;
} eig_args;

static int parse_args(int argc, char **argv, eig_args *a)
{
    memset(a, 0, sizeof *a);
    tk_eig_options_init(&a->opts, 0);
    a->backend = TK_BACKEND_AUTO;
    for (int i = 1; i < argc; ++i) {
        const char *arg = argv[i], *v;
        long iv;
#define VALUE(flag) (v = tk_cli_value(prog, argc, argv, &i, flag))
        if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
            usage(stdout);
            exit(0);
        } else if (tk_cli_is(arg, "--vectors")) {
            if (!VALUE("--vectors")) return 0;
            a->vectors = v;
        } else if (tk_cli_is(arg, "--status")) {
            if (!VALUE("--status")) return 0;
            a->status = v;
        } else if (tk_cli_is(arg, "--precision")) {
            if (!VALUE("--precision")) return 0;
            if (!strcmp(v, "single")) a->opts.precision = TK_PRECISION_SINGLE;
            else if (!strcmp(v, "double")) a->opts.precision = TK_PRECISION_DOUBLE;
            else if (strcmp(v, "auto")) {
                tk_cli_error(prog, "--precision expects auto, single or double, got '%s'; use one of those", v);
                return 0;
            }
            a->precision_given = strcmp(v, "auto") != 0;
        } else if (tk_cli_is(arg, "--backend")) {
            if (!VALUE("--backend") || !tk_cli_parse_backend(prog, v, 1, &a->backend)) return 0;
        } else if (tk_cli_is(arg, "--threads")) {
            if (!VALUE("--threads") || !tk_cli_parse_int(prog, "--threads", v, 1, 4096, &iv)) return 0;
            a->opts.num_threads = (int)iv;
        } else if (!strcmp(arg, "--no-balance")) {
            a->opts.balance = 0;
        } else if (!strcmp(arg, "--quiet") || !strcmp(arg, "-q")) {
            a->quiet = 1;
        } else if (arg[0] == '-' && arg[1]) {
            tk_cli_error(prog, "unknown option '%s'; see --help for the options", arg);
            return 0;
        } else if (!a->input) {
            a->input = arg;
        } else if (!a->output) {
            a->output = arg;
        } else {
            tk_cli_error(prog, "unexpected argument '%s'; give INPUT.npy and OUTPUT.npy once (see --help)", arg);
            return 0;
        }
#undef VALUE
    }
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

static void shape_text(const tk_npy_array *arr, char *buf, size_t size)
{
    int len = snprintf(buf, size, "(");
    for (int d = 0; d < arr->ndim && len < (int)size - 32; ++d)
        len += snprintf(buf + len, size - (size_t)len, "%zu%s", arr->shape[d], d + 1 < arr->ndim ? ", " : "");
    snprintf(buf + len, size - (size_t)len, arr->ndim == 1 ? ",)" : ")");
}

int main(int argc, char **argv)
{
    if (tk_xml_requested(argc, argv)) return tk_xml_print(stdout, &tk_eig_xml) ? 0 : TK_EXIT_FAILURE;
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

    tk_npy_array arr;
    if (tk_npy_read(a.input, &arr) != TK_OK) {
        tk_cli_error(prog, "%s", tk_last_error());
        tk_outset_free(set);
        return TK_EXIT_FAILURE;
    }
    int exit_code = TK_EXIT_FAILURE;
    void *matrices = NULL, *values = NULL, *vectors = NULL;
    int8_t *status = NULL;
    char shape[256];
    shape_text(&arr, shape, sizeof shape);
    if (arr.dtype != TK_NPY_FLOAT32 && arr.dtype != TK_NPY_FLOAT64) {
        tk_cli_error(prog, "%s: dtype %s is not supported (expected float32 or float64 matrices); convert the "
                           "array (numpy's astype) and save it again", a.input,
                     tk_npy_dtype_name(arr.dtype));
        goto done;
    }
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
    if (!a.precision_given)
        a.opts.precision = arr.dtype == TK_NPY_FLOAT64 ? TK_PRECISION_DOUBLE : TK_PRECISION_SINGLE;
    a.opts.n = (int)n;
    tk_backend run;
    if (!tk_cli_resolve_backend(prog, a.backend, a.opts.cuda_device, TK_BACKEND_OMP, a.quiet, &run)) goto done;
    a.opts.backend = (tk_backend)run;
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

    /* Chunks drive the progress bar; the CUDA backend streams within each chunk. */
    size_t chunk = a.opts.backend == TK_BACKEND_CUDA ? ((size_t)1 << 20) : ((size_t)1 << 14);
    if (chunk > count) chunk = count ? count : 1;
    size_t failed[3] = {0, 0, 0}, first_failed[3] = {0, 0, 0};
    tk_progress bar;
    tk_progress_begin(&bar, prog, count, a.quiet);
    for (size_t first = 0; first < count; first += chunk) {
        const size_t todo = count - first < chunk ? count - first : chunk;
        tk_eig_result r = {(char *)values + first * 2 * n * elem,
                           vectors ? (char *)vectors + first * 2 * nn * elem : NULL, status + first};
        if (tk_eig_solve(&a.opts, todo, (const char *)matrices + first * nn * elem, &r, NULL, NULL) != TK_OK) {
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
    if (!a.quiet) {
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
    tk_outset_free(set);
    tk_npy_free(&arr);
    free(matrices);
    free(values);
    free(vectors);
    free(status);
    return exit_code;
}
