/* tk-teig: eigenpairs of a batch of symmetric tensors by SS-HOPM. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "tk_npy.h"
#include "tk_sshopm.h"

static const char *prog = "tk-teig";

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tk-teig --order M --dim N --input T.npy [options]\n"
            "\n"
            "Z-eigenpairs (A x^(M-1) = lambda x, |x| = 1) of every tensor in T.npy by SS-HOPM.\n"
            "T.npy: float32 or float64, C order, packed (T, K) with K = binom(M+N-1, M) unique\n"
            "entries in lexicographic order, or full (T, N, ..., N) with M axes of length N.\n"
            "\n"
            "options:\n"
            "  --output E.csv          write the eigenpairs here (default: standard output)\n"
            "  --shift A|adaptive|adaptive-min\n"
            "                          fixed shift A (>= 0 finds maxima, < 0 minima) or the\n"
            "                          adaptive shift for maxima / minima (default: adaptive)\n"
            "  --starts S              random starts per tensor (default 128)\n"
            "  --seed S                seed of the random starts (default 0)\n"
            "  --tol T                 stop when |x_k+1 - x_k| <= T (default 1e-6 single, 1e-12 double)\n"
            "  --max-iter K            iteration cap per start (default 1000)\n"
            "  --precision single|double  (default: the input's)\n"
            "  --backend auto|cpu|omp|cuda  auto (default): cuda where a usable GPU is found, else omp\n"
            "                          with a warning on stderr\n"
            "  --impl general|unrolled (default: unrolled where it exists for (M, N), else general)\n"
            "  --threads P             threads of the omp backend (default: all)\n"
            "  --quiet                 no progress bar or warnings (the CPU fallback's included)\n"
            "\n"
            "Output CSV: tensor,lambda,x0,...,x{N-1},stability,starts: one row per distinct\n"
            "eigenpair (x and -x are one pair for even M), sorted by tensor, then lambda\n"
            "descending; stability is max, min, saddle or degenerate on the sphere.\n");
}

typedef struct {
    long order, dim;
    const char *input, *output;
    tk_sshopm_options opts;
    int precision_given, impl_given, tol_given, quiet;
    tk_backend backend;
} teig_args;

static int parse_args(int argc, char **argv, teig_args *a)
{
    memset(a, 0, sizeof *a);
    tk_sshopm_options_init(&a->opts, 0, 0);
    a->opts.shift_mode = TK_SHIFT_ADAPTIVE;
    a->backend = TK_BACKEND_AUTO;
    for (int i = 1; i < argc; ++i) {
        const char *arg = argv[i], *v;
        long iv;
        double dv;
#define VALUE(flag) (v = tk_cli_value(prog, argc, argv, &i, flag))
        if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
            usage(stdout);
            exit(0);
        } else if (tk_cli_is(arg, "--order")) {
            if (!VALUE("--order") || !tk_cli_parse_int(prog, "--order", v, 2, 32, &a->order)) return 0;
        } else if (tk_cli_is(arg, "--dim")) {
            if (!VALUE("--dim") || !tk_cli_parse_int(prog, "--dim", v, 2, 255, &a->dim)) return 0;
        } else if (tk_cli_is(arg, "--input")) {
            if (!VALUE("--input")) return 0;
            a->input = v;
        } else if (tk_cli_is(arg, "--output")) {
            if (!VALUE("--output")) return 0;
            a->output = v;
        } else if (tk_cli_is(arg, "--shift")) {
            if (!VALUE("--shift")) return 0;
            if (!strcmp(v, "adaptive")) {
                a->opts.shift_mode = TK_SHIFT_ADAPTIVE, a->opts.shift = 0;
            } else if (!strcmp(v, "adaptive-min")) {
                a->opts.shift_mode = TK_SHIFT_ADAPTIVE, a->opts.shift = -1;
            } else {
                if (!tk_cli_parse_double(prog, "--shift", v, -1e300, 1e300, &dv)) return 0;
                a->opts.shift_mode = TK_SHIFT_FIXED, a->opts.shift = dv;
            }
        } else if (tk_cli_is(arg, "--starts")) {
            if (!VALUE("--starts") || !tk_cli_parse_int(prog, "--starts", v, 1, 1 << 20, &iv)) return 0;
            a->opts.num_starts = (int)iv;
        } else if (tk_cli_is(arg, "--seed")) {
            if (!VALUE("--seed")) return 0;
            char *end = NULL;
            unsigned long long s = strtoull(v, &end, 10);
            if (!*v || *end || *v == '-') {
                tk_cli_error(prog, "--seed expects a non-negative integer, got '%s'; give a whole number >= 0", v);
                return 0;
            }
            a->opts.seed = (uint64_t)s;
        } else if (tk_cli_is(arg, "--tol")) {
            if (!VALUE("--tol") || !tk_cli_parse_double(prog, "--tol", v, 0, 1, &a->opts.tol)) return 0;
            a->tol_given = 1;
        } else if (tk_cli_is(arg, "--max-iter")) {
            if (!VALUE("--max-iter") || !tk_cli_parse_int(prog, "--max-iter", v, 0, 100000000, &iv)) return 0;
            a->opts.max_iter = (int)iv;
        } else if (tk_cli_is(arg, "--precision")) {
            if (!VALUE("--precision")) return 0;
            if (!strcmp(v, "single")) a->opts.precision = TK_PRECISION_SINGLE;
            else if (!strcmp(v, "double")) a->opts.precision = TK_PRECISION_DOUBLE;
            else {
                tk_cli_error(prog, "--precision expects single or double, got '%s'; use one of those", v);
                return 0;
            }
            a->precision_given = 1;
        } else if (tk_cli_is(arg, "--backend")) {
            if (!VALUE("--backend") || !tk_cli_parse_backend(prog, v, 1, &a->backend)) return 0;
        } else if (tk_cli_is(arg, "--impl")) {
            if (!VALUE("--impl")) return 0;
            if (!strcmp(v, "general")) a->opts.impl = TK_IMPL_GENERAL;
            else if (!strcmp(v, "unrolled")) a->opts.impl = TK_IMPL_UNROLLED;
            else {
                tk_cli_error(prog, "--impl expects general or unrolled, got '%s'; use one of those", v);
                return 0;
            }
            a->impl_given = 1;
        } else if (tk_cli_is(arg, "--threads")) {
            if (!VALUE("--threads") || !tk_cli_parse_int(prog, "--threads", v, 1, 4096, &iv)) return 0;
            a->opts.num_threads = (int)iv;
        } else if (!strcmp(arg, "--quiet") || !strcmp(arg, "-q")) {
            a->quiet = 1;
        } else {
            tk_cli_error(prog, "unknown option '%s'; see --help for the options", arg);
            return 0;
        }
#undef VALUE
    }
    if (!a->order || !a->dim || !a->input) {
        tk_cli_error(prog, "--order, --dim and --input are required; give all three (see --help)");
        return 0;
    }
    a->opts.order = (int)a->order;
    a->opts.dim = (int)a->dim;
    if (!a->impl_given) a->opts.impl = tk_sshopm_has_unrolled(a->opts.order, a->opts.dim) ? TK_IMPL_UNROLLED : TK_IMPL_GENERAL;
    if (a->opts.impl == TK_IMPL_UNROLLED && !tk_sshopm_has_unrolled(a->opts.order, a->opts.dim)) {
        tk_cli_error(prog, "--impl unrolled: no unrolled kernel for order %d, dimension %d (there are (4,3), (6,3), "
                           "(8,3)); use --impl general",
                     a->opts.order, a->opts.dim);
        return 0;
    }
    return 1;
}

/* The input as packed tensors in the requested precision; 0 after printing why. */
static int load_tensors(teig_args *a, void **packed_out, size_t *count_out)
{
    tk_npy_array arr;
    if (tk_npy_read(a->input, &arr) != TK_OK) {
        tk_cli_error(prog, "%s", tk_last_error());
        return 0;
    }
    if (arr.dtype != TK_NPY_FLOAT32 && arr.dtype != TK_NPY_FLOAT64) {
        tk_cli_error(prog, "%s: dtype %s is not supported (expected float32 or float64); convert the array "
                           "(numpy's astype) and save it again", a->input,
                     tk_npy_dtype_name(arr.dtype));
        tk_npy_free(&arr);
        return 0;
    }
    if (!a->precision_given) a->opts.precision = arr.dtype == TK_NPY_FLOAT64 ? TK_PRECISION_DOUBLE : TK_PRECISION_SINGLE;
    if (!a->tol_given) a->opts.tol = tk_sshopm_default_tol(a->opts.precision);
    const int m = a->opts.order, n = a->opts.dim;
    const size_t k = tk_sym_num_unique(m, n);
    int is_packed = arr.ndim == 2 && arr.shape[1] == k;
    int is_full = arr.ndim == m + 1;
    for (int d = 1; is_full && d <= m; ++d) is_full = arr.shape[d] == (size_t)n;
    if (!is_packed && !is_full) {
        char shape[256];
        int len = snprintf(shape, sizeof shape, "(");
        for (int d = 0; d < arr.ndim && len < 200; ++d)
            len += snprintf(shape + len, sizeof shape - (size_t)len, "%zu%s", arr.shape[d], d + 1 < arr.ndim ? ", " : "");
        snprintf(shape + len, sizeof shape - (size_t)len, ")");
        tk_cli_error(prog, "%s: shape %s fits neither packed (T, %zu) nor full (T%s) for order %d, dimension %d; "
                           "check --order and --dim, or the array's shape",
                     a->input, shape, k, m <= 8 ? ", N, ..., N" : ", N...", m, n);
        tk_npy_free(&arr);
        return 0;
    }
    const size_t count = arr.shape[0];
    const size_t per_full = is_packed ? k : arr.count / (count ? count : 1);
    const int dbl = a->opts.precision == TK_PRECISION_DOUBLE;
    void *packed = malloc((count ? count : 1) * k * (dbl ? sizeof(double) : sizeof(float)));
    double *full_d = malloc(sizeof(double) * per_full), *packed_d = malloc(sizeof(double) * k);
    int ok = packed && full_d && packed_d;
    if (!ok) tk_cli_error(prog, "%s: out of memory for %zu tensors; free memory, or split the file", a->input, count);
    const double sym_tol = arr.dtype == TK_NPY_FLOAT64 ? 1e-12 : 1e-6;
    for (size_t t = 0; ok && t < count; ++t) {
        for (size_t e = 0; e < per_full; ++e) {
            size_t src = t * per_full + e;
            full_d[e] = arr.dtype == TK_NPY_FLOAT64 ? ((double *)arr.data)[src] : ((float *)arr.data)[src];
            if (!isfinite(full_d[e])) {
                tk_cli_error(prog, "%s: tensor %zu has a non-finite value (NaN or Inf) at flat position %zu; fix or drop "
                                   "that tensor", a->input,
                             t, e);
                ok = 0;
                break;
            }
        }
        if (!ok) break;
        if (is_packed) {
            memcpy(packed_d, full_d, sizeof(double) * k);
        } else {
            size_t bad = 0;
            if (tk_sym_pack_d(m, n, full_d, sym_tol, packed_d, &bad) != TK_OK) {
                char where[160];
                int len = 0;
                size_t off = bad;
                int idx[32];
                for (int d = m - 1; d >= 0; --d) idx[d] = (int)(off % (size_t)n), off /= (size_t)n;
                for (int d = 0; d < m && len < 150; ++d)
                    len += snprintf(where + len, sizeof where - (size_t)len, "%d%s", idx[d], d + 1 < m ? ", " : "");
                tk_cli_error(prog, "%s: tensor %zu is not symmetric: entry (%s) differs from its permutations; make it "
                                   "symmetric (average over the permutations) or give packed tensors", a->input,
                             t, where);
                ok = 0;
                break;
            }
        }
        for (size_t e = 0; e < k; ++e) {
            if (dbl) ((double *)packed)[t * k + e] = packed_d[e];
            else ((float *)packed)[t * k + e] = (float)packed_d[e];
        }
    }
    free(full_d);
    free(packed_d);
    tk_npy_free(&arr);
    if (!ok) {
        free(packed);
        return 0;
    }
    *packed_out = packed;
    *count_out = count;
    return 1;
}

int main(int argc, char **argv)
{
    teig_args a;
    if (!parse_args(argc, argv, &a)) return TK_EXIT_USAGE;
    const char *inputs[] = {a.input, NULL};
    int bad_output = tk_cli_check_output(prog, a.output, 0, inputs);
    if (bad_output) return bad_output;
    void *packed = NULL;
    size_t count = 0;
    if (!load_tensors(&a, &packed, &count)) return TK_EXIT_FAILURE;
    tk_backend run;
    if (!tk_cli_resolve_backend(prog, a.backend, a.opts.cuda_device, TK_BACKEND_OMP, a.quiet, &run)) {
        free(packed);
        return TK_EXIT_FAILURE;
    }
    a.opts.backend = (tk_backend)run;

    const tk_sshopm_options *o = &a.opts;
    const int n = o->dim, dbl = o->precision == TK_PRECISION_DOUBLE;
    const size_t k = tk_sym_num_unique(o->order, n), S = (size_t)o->num_starts;
    /* Chunks bound the per-start memory and drive the progress bar. */
    size_t chunk = o->backend == TK_BACKEND_CUDA ? 65536 : 1024;
    if (chunk * S > ((size_t)1 << 26)) chunk = ((size_t)1 << 26) / S + 1;
    if (chunk > count) chunk = count ? count : 1;
    size_t elem = dbl ? sizeof(double) : sizeof(float);
    tk_sshopm_starts_result res = {malloc(chunk * S * elem), malloc(chunk * S * (size_t)n * elem),
                                   malloc(chunk * S * sizeof(int32_t)), malloc(chunk * S)};
    tk_output out;
    int status = TK_EXIT_FAILURE;
    if (!res.lambda || !res.x || !res.iterations || !res.converged) {
        tk_cli_error(prog, "out of memory for %zu starts; use fewer --starts", chunk * S);
        goto done_noout;
    }
    if (!tk_output_open(&out, a.output, prog)) goto done_noout;
    fprintf(out.file, "tensor,lambda");
    for (int i = 0; i < n; ++i) fprintf(out.file, ",x%d", i);
    fprintf(out.file, ",stability,starts\n");
    const char *fmt = dbl ? "%.17g" : "%.9g";
    size_t unconverged = 0;
    tk_progress bar;
    tk_progress_begin(&bar, "tk-teig", count, a.quiet);
    for (size_t first = 0; first < count; first += chunk) {
        size_t todo = count - first < chunk ? count - first : chunk;
        const void *chunk_data = (const char *)packed + first * k * elem;
        tk_eigenpairs pairs;
        if (tk_sshopm_solve(o, todo, chunk_data, &res, NULL) != TK_OK ||
            tk_sshopm_distinct(o, todo, chunk_data, &res, 0, &pairs) != TK_OK) {
            tk_progress_end(&bar);
            tk_cli_error(prog, "%s: %s", a.input, tk_last_error());
            tk_output_abort(&out);
            goto done_noout;
        }
        for (size_t s = 0; s < todo * S; ++s) unconverged += !res.converged[s];
        for (size_t p = 0; p < pairs.count; ++p) {
            fprintf(out.file, "%zu,", first + pairs.tensor[p]);
            fprintf(out.file, fmt, pairs.lambda[p]);
            for (int i = 0; i < n; ++i) {
                fputc(',', out.file);
                fprintf(out.file, fmt, pairs.x[p * (size_t)n + (size_t)i]);
            }
            fprintf(out.file, ",%s,%d\n", tk_stability_name(pairs.stability[p]), pairs.num_starts[p]);
        }
        tk_eigenpairs_free(&pairs);
        tk_progress_advance(&bar, todo);
    }
    tk_progress_end(&bar);
    if (unconverged && !a.quiet)
        fprintf(stderr, "%s: warning: %zu of %zu starts did not converge within %d iterations (left out)\n", prog,
                unconverged, count * S, o->max_iter);
    status = tk_output_commit(&out, prog) ? 0 : TK_EXIT_FAILURE;
done_noout:
    free(res.lambda);
    free(res.x);
    free(res.iterations);
    free(res.converged);
    free(packed);
    return status;
}
