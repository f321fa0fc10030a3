/* tk-teig: eigenpairs of a batch of symmetric tensors by SS-HOPM. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_options.h"
#include "tk_npy.h"
#include "tk_sshopm.h"

static const char *prog = "tk-teig";

typedef struct {
    int order, dim;
    const char *input, *output;
    tk_sshopm_options opts;
    int precision, impl; /* -1: the input's precision; unrolled where it exists */
    double tol;          /* -1: the precision's default */
    int gpus, gpus_given; /* --gpus (tk_cli_resolve_gpus) */
    tk_standard_values std;
} teig_args;

/* --shift A|adaptive|adaptive-min into a tk_sshopm_options. */
static int parse_shift(const char *prog_name, const char *flag, const char *v, void *dest)
{
    tk_sshopm_options *o = dest;
    double dv;
    if (!strcmp(v, "adaptive")) {
        o->shift_mode = TK_SHIFT_ADAPTIVE, o->shift = 0;
    } else if (!strcmp(v, "adaptive-min")) {
        o->shift_mode = TK_SHIFT_ADAPTIVE, o->shift = -1;
    } else {
        if (!tk_cli_parse_double(prog_name, flag, v, -1e300, 1e300, &dv)) return 0;
        o->shift_mode = TK_SHIFT_FIXED, o->shift = dv;
    }
    return 1;
}

static const tk_opt_choice precisions[] = {
    {"single", TK_PRECISION_SINGLE, 0}, {"double", TK_PRECISION_DOUBLE, 0}, {NULL, 0, 0}};
static const tk_opt_choice impls[] = {{"general", TK_IMPL_GENERAL, 0}, {"unrolled", TK_IMPL_UNROLLED, 0}, {NULL, 0, 0}};

#define OPTS(member) offsetof(teig_args, opts.member)
static const tk_option teig_options[] = {
    {.name = "order", .value_name = "M", .kind = TK_OPT_INT, .min = 2, .max = 32, .offset = offsetof(teig_args, order),
     .help = "tensor order (required)"},
    {.name = "dim", .value_name = "N", .kind = TK_OPT_INT, .min = 2, .max = 255, .offset = offsetof(teig_args, dim),
     .help = "dimension of every axis (required)"},
    {.name = "input", .value_name = "T.npy", .kind = TK_OPT_TEXT, .offset = offsetof(teig_args, input),
     .help = "the tensors (required)"},
    {.name = "output", .value_name = "E.csv", .kind = TK_OPT_TEXT, .offset = offsetof(teig_args, output),
     .help = "write the eigenpairs here (default: standard output)"},
    {.name = "shift", .value_name = "A|adaptive|adaptive-min", .kind = TK_OPT_CUSTOM, .parse = parse_shift,
     .offset = offsetof(teig_args, opts),
     .help = "fixed shift A (>= 0 finds maxima, < 0 minima) or the\nadaptive shift for maxima / minima (default: "
             "adaptive)"},
    {.name = "starts", .value_name = "S", .kind = TK_OPT_INT, .min = 1, .max = 1 << 20, .offset = OPTS(num_starts),
     .help = "random starts per tensor (default 128)"},
    {.name = "seed", .value_name = "S", .kind = TK_OPT_SEED, .offset = OPTS(seed),
     .help = "seed of the random starts (default 0)"},
    {.name = "tol", .value_name = "T", .kind = TK_OPT_DOUBLE, .min = 0, .max = 1, .offset = offsetof(teig_args, tol),
     .help = "stop when |x_k+1 - x_k| <= T (default 1e-6 single, 1e-12 double)"},
    {.name = "max-iter", .value_name = "K", .kind = TK_OPT_INT, .min = 0, .max = 100000000, .offset = OPTS(max_iter),
     .help = "iteration cap per start (default 1000)"},
    {.name = "precision", .value_name = "single|double", .kind = TK_OPT_CHOICE, .choices = precisions,
     .offset = offsetof(teig_args, precision), .help = "(default: the input's)"},
    {.name = "impl", .value_name = "general|unrolled", .kind = TK_OPT_CHOICE, .choices = impls,
     .offset = offsetof(teig_args, impl), .help = "(default: unrolled where it exists for (M, N), else general)"},
};
#undef OPTS

static const tk_option_group groups[] = {
    {.title = "options", .options = teig_options, .count = TK_OPT_COUNT(teig_options)},
    TK_GPUS_GROUP(teig_args, gpus),
    TK_STANDARD_GROUP(teig_args, std),
};

static const tk_command command = {
    .prog = "tk-teig",
    .usage = "tk-teig --order M --dim N --input T.npy [options]",
    .description = "Z-eigenpairs (A x^(M-1) = lambda x, |x| = 1) of every tensor in T.npy by SS-HOPM.\n"
                   "T.npy: float32 or float64, C order, packed (T, K) with K = binom(M+N-1, M) unique\n"
                   "entries in lexicographic order, or full (T, N, ..., N) with M axes of length N.\n",
    .epilog = TK_GPUS_SHARE_NOTE
              "Output CSV: tensor,lambda,x0,...,x{N-1},stability,starts: one row per distinct\n"
              "eigenpair (x and -x are one pair for even M), sorted by tensor, then lambda\n"
              "descending; stability is max, min, saddle or degenerate on the sphere.\n",
    .groups = groups,
    .count = TK_OPT_COUNT(groups),
};

static int parse_args(int argc, char **argv, teig_args *a)
{
    memset(a, 0, sizeof *a);
    tk_sshopm_options_init(&a->opts, 0, 0);
    a->opts.shift_mode = TK_SHIFT_ADAPTIVE;
    a->precision = a->impl = -1;
    a->tol = -1;
    tk_parsed parsed;
    if (!tk_cli_parse_options(&command, argc, argv, 1, a, &parsed)) return 0;
    a->gpus_given = tk_cli_given(&command, &parsed, "gpus");
    a->opts.num_threads = a->std.threads;
    a->opts.cuda_device = a->std.device;
    if (a->tol >= 0) a->opts.tol = a->tol;
    if (a->impl >= 0) a->opts.impl = (tk_impl)a->impl;
    if (a->precision >= 0) a->opts.precision = (tk_precision)a->precision;
    if (!a->order || !a->dim || !a->input) {
        tk_cli_error(prog, "--order, --dim and --input are required; give all three (see --help)");
        return 0;
    }
    a->opts.order = a->order;
    a->opts.dim = a->dim;
    if (a->impl < 0) a->opts.impl = tk_sshopm_has_unrolled(a->opts.order, a->opts.dim) ? TK_IMPL_UNROLLED : TK_IMPL_GENERAL;
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
    if (!tk_cli_read_float_npy(prog, a->input, NULL, &arr)) return 0;
    if (a->precision < 0) a->opts.precision = arr.dtype == TK_NPY_FLOAT64 ? TK_PRECISION_DOUBLE : TK_PRECISION_SINGLE;
    if (a->tol < 0) a->opts.tol = tk_sshopm_default_tol(a->opts.precision);
    const int m = a->opts.order, n = a->opts.dim;
    const size_t k = tk_sym_num_unique(m, n);
    int is_packed = arr.ndim == 2 && arr.shape[1] == k;
    int is_full = arr.ndim == m + 1;
    for (int d = 1; is_full && d <= m; ++d) is_full = arr.shape[d] == (size_t)n;
    if (!is_packed && !is_full) {
        char shape[256];
        tk_cli_shape_text(shape, sizeof shape, arr.ndim, arr.shape, 0);
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
    int bad_output = tk_cli_check_new_output(prog, &a.std, a.output, 0, inputs);
    if (bad_output) return bad_output;
    void *packed = NULL;
    size_t count = 0;
    if (!load_tensors(&a, &packed, &count)) return TK_EXIT_FAILURE;
    tk_backend run;
    if (!tk_cli_resolve_backend(prog, a.std.backend, a.opts.cuda_device, TK_BACKEND_OMP, a.std.quiet, &run)) {
        free(packed);
        return TK_EXIT_FAILURE;
    }
    a.opts.backend = (tk_backend)run;
    if (!tk_cli_resolve_gpus(prog, a.gpus, a.gpus_given, a.std.backend, run, a.opts.cuda_device, &a.opts.cuda_device_count)) {
        free(packed);
        return TK_EXIT_USAGE;
    }

    const tk_sshopm_options *o = &a.opts;
    const int n = o->dim, dbl = o->precision == TK_PRECISION_DOUBLE;
    const size_t k = tk_sym_num_unique(o->order, n), S = (size_t)o->num_starts;
    /* Chunks drive the progress bar (the per-start results stay inside the core, which
     * merges them: on CUDA on the GPU); on CUDA each GPU takes 65536 tensors of a chunk. */
    size_t chunk = o->backend == TK_BACKEND_CUDA ? 65536 * (size_t)o->cuda_device_count : 1024;
    if (chunk * S > ((size_t)1 << 26)) chunk = ((size_t)1 << 26) / S + 1;
    if (chunk > count) chunk = count ? count : 1;
    size_t elem = dbl ? sizeof(double) : sizeof(float);
    tk_eigenpairs pairs = {0}; /* every chunk's pairs, in arrays reused from chunk to chunk */
    tk_output out;
    int status = TK_EXIT_FAILURE;
    tk_sshopm_plan *plan = NULL; /* one plan for every chunk: on CUDA its device buffers, on each GPU */
    if (tk_sshopm_plan_create(o, chunk, &plan) != TK_OK) {
        tk_cli_error(prog, "%s: %s", a.input, tk_last_error());
        goto done_noout;
    }
    if (!tk_output_open(&out, a.output, prog)) goto done_noout;
    fprintf(out.file, "tensor,lambda");
    for (int i = 0; i < n; ++i) fprintf(out.file, ",x%d", i);
    fprintf(out.file, ",stability,starts\n");
    const char *fmt = dbl ? "%.17g" : "%.9g";
    size_t unconverged = 0;
    tk_progress bar;
    tk_progress_begin(&bar, "tk-teig", count, a.std.quiet);
    for (size_t first = 0; first < count; first += chunk) {
        size_t todo = count - first < chunk ? count - first : chunk;
        const void *chunk_data = (const char *)packed + first * k * elem;
        if (tk_sshopm_plan_execute_distinct(plan, todo, chunk_data, 0, &pairs, NULL) != TK_OK) {
            tk_progress_end(&bar);
            tk_cli_error(prog, "%s: %s", a.input, tk_last_error());
            tk_output_abort(&out);
            goto done_noout;
        }
        /* every converged start is in one pair: the rest did not converge */
        size_t converged = 0;
        for (size_t p = 0; p < pairs.count; ++p) converged += (size_t)pairs.num_starts[p];
        unconverged += todo * S - converged;
        for (size_t p = 0; p < pairs.count; ++p) {
            fprintf(out.file, "%zu,", first + pairs.tensor[p]);
            fprintf(out.file, fmt, pairs.lambda[p]);
            for (int i = 0; i < n; ++i) {
                fputc(',', out.file);
                fprintf(out.file, fmt, pairs.x[p * (size_t)n + (size_t)i]);
            }
            fprintf(out.file, ",%s,%d\n", tk_stability_name(pairs.stability[p]), pairs.num_starts[p]);
        }
        tk_progress_advance(&bar, todo);
    }
    tk_progress_end(&bar);
    if (unconverged && !a.std.quiet)
        fprintf(stderr, "%s: warning: %zu of %zu starts did not converge within %d iterations (left out)\n", prog,
                unconverged, count * S, o->max_iter);
    status = tk_output_commit(&out, prog) ? 0 : TK_EXIT_FAILURE;
done_noout:
    tk_sshopm_plan_destroy(plan);
    tk_eigenpairs_free(&pairs);
    free(packed);
    return status;
}
