/* tk-pltf: fit any PLTF model (PARAFAC, Tucker, ...) to a .npy tensor with
 * beta-divergence multiplicative updates, optionally masked. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "cli_options.h"
#include "cli_xml.h"
#include "tk_npy.h"
#include "tk_output_set.h"
#include "tk_pltf.h"
#ifdef TK_PLTF_WITH_IMAGES
#include "tk_pltf_complete.h" /* tools/itk: the ITK image mode, when built with ITK */
#endif

static const char *prog = "tk-pltf";

typedef struct {
    const char *model, *input, *mask, *dims, *out;
    tk_pltf_options opts;
    int divergence, print_every;
    tk_standard_values std;
} pltf_args;

static const tk_opt_choice divergences[] = {{"kl", TK_PLTF_KL, 0},
                                            {"euclidean", TK_PLTF_EUCLIDEAN, 0},
                                            {"eu", TK_PLTF_EUCLIDEAN, 1},
                                            {"is", TK_PLTF_IS, 0},
                                            {NULL, 0, 0}};

#define OPTS(member) offsetof(pltf_args, opts.member)
static const tk_option fit_options[] = {
    {.name = "model", .value_name = "MODEL", .kind = TK_OPT_TEXT, .offset = offsetof(pltf_args, model),
     .help = "the model (required): \"OUT=F1,F2,...\" or a preset"},
    {.name = "input", .value_name = "X.npy", .kind = TK_OPT_TEXT, .offset = offsetof(pltf_args, input),
     .help = "the tensor to fit (required)"},
    {.name = "dims", .value_name = "a=N[,b=M...]", .kind = TK_OPT_TEXT, .offset = offsetof(pltf_args, dims),
     .help = "sizes of the latent indices"},
    {.name = "out", .value_name = "DIR", .kind = TK_OPT_TEXT, .offset = offsetof(pltf_args, out),
     .help = "the folder of the factors and xhat.npy (required)"},
    {.name = "mask", .value_name = "M.npy", .kind = TK_OPT_TEXT, .offset = offsetof(pltf_args, mask),
     .help = "same shape as X; nonzero = observed (unobserved X is never read)"},
    {.name = "iters", .value_name = "K", .kind = TK_OPT_INT, .min = 0, .max = 100000000, .offset = OPTS(iterations),
     .help = "iterations, each updating every factor once (default 100)"},
    {.name = "divergence", .value_name = "kl|euclidean|is", .kind = TK_OPT_CHOICE, .choices = divergences,
     .offset = offsetof(pltf_args, divergence), .help = "(default kl; kl needs X >= 0, is needs X > 0)"},
    {.name = "seed", .value_name = "S", .kind = TK_OPT_SEED, .offset = OPTS(seed),
     .help = "seed of the random non-negative start (default 0)"},
    {.name = "naive-gtm", .kind = TK_OPT_FLAG, .offset = OPTS(naive_gtm),
     .help = "the seed's full-joint-tensor GTM (slow; for comparison)"},
    {.name = "print-every", .value_name = "K", .kind = TK_OPT_INT, .min = 1, .max = 100000000,
     .offset = offsetof(pltf_args, print_every), .help = "print the divergence every K iterations (default 1)"},
};
#undef OPTS

static const tk_option_group groups[] = {
    {.title = "options", .options = fit_options, .count = TK_OPT_COUNT(fit_options)},
    TK_STANDARD_GROUP(pltf_args, std),
};

static const tk_command command = {
    .prog = "tk-pltf",
    .usage = "tk-pltf --model MODEL --input X.npy --dims a=N[,b=M...] --out DIR [options]\n"
             "       tk-pltf complete IN_IMAGE OUT_IMAGE [--model MODEL] [--mask MASK] [options]  (built with\n"
             "                 ITK; tk-pltf complete --help)\n"
             "       tk-pltf --xml   the Slicer description of complete (a 3D Slicer CLI module)",
    .description = "Fits X ~ X^ = sum over the latent indices of the product of the factors, with\n"
                   "multiplicative updates for a beta-divergence (Yilmaz and Cemgil's PLTF).\n"
                   "MODEL: \"OUT=F1,F2,...\" with one-letter indices, e.g. \"ijk=ia,ja,ka\" (PARAFAC) or\n"
                   "\"ijk=ip,jq,kr,pqr\" (Tucker-3), or a preset: parafac, tucker3.  X's axes follow OUT;\n"
                   "--dims gives the sizes of the latent indices (those not in OUT).\n",
    .epilog = "Output: the divergence per iteration on stdout (\"iteration divergence\"); DIR/<indices>.npy\n"
              "for every factor (e.g. DIR/ia.npy, DIR/pqr.npy) and DIR/xhat.npy, in X's dtype, each\n"
              "written to a temporary and renamed.  DIR is created if missing; files of the same\n"
              "names already there are replaced only with --force.\n",
    .groups = groups,
    .count = TK_OPT_COUNT(groups),
};

static int parse_args(int argc, char **argv, pltf_args *a)
{
    memset(a, 0, sizeof *a);
    tk_pltf_options_init(&a->opts);
    a->divergence = (int)a->opts.divergence;
    a->print_every = 1;
    tk_parsed parsed;
    if (!tk_cli_parse_options(&command, argc, argv, 1, a, &parsed)) return 0;
    a->opts.divergence = (tk_pltf_divergence)a->divergence;
    a->opts.num_threads = a->std.threads;
    a->opts.cuda_device = a->std.device;
    if (!a->model || !a->input || !a->out) {
        tk_cli_error(prog, "--model, --input and --out are required; give all three (see --help)");
        return 0;
    }
    return 1;
}

/* "(1, 0, 3)": the position of a flat offset along the observed indices. */
static void where_text(const tk_pltf_model *m, size_t flat, char *buf, size_t size)
{
    size_t pos[TK_PLTF_MAX_INDICES];
    for (int d = m->out_ndim - 1; d >= 0; --d) pos[d] = flat % m->dims[m->out[d]], flat /= m->dims[m->out[d]];
    tk_cli_shape_text(buf, size, m->out_ndim, pos, 0);
}

typedef struct {
    const pltf_args *a;
    tk_progress *bar;
    int last;
    double first;
} progress_ctx;

static int on_iteration(void *user, int it, double div)
{
    progress_ctx *p = user;
    if (it == 0) {
        p->first = div;
        /* the header only once the fit is under way: a failed start prints nothing on stdout */
        printf("# iteration %s-divergence\n", tk_pltf_divergence_name(p->a->opts.divergence));
    }
    if (it % p->a->print_every == 0 || it == p->a->opts.iterations) {
        printf("%d %.10g\n", it, div);
        fflush(stdout);
    }
    tk_progress_advance(p->bar, (size_t)(it - p->last));
    p->last = it;
    return 0;
}

/* Every output (DIR/<factor>.npy, DIR/xhat.npy) in one output set, registered before the
 * work: none may be an input (`--input fit/xhat.npy --out fit`) or written twice (a model
 * naming one factor twice); DIR is made on commit, when every file is written. */
static int register_outputs(tk_outset *set, const pltf_args *a, const tk_pltf_model *m, int *idx)
{
    if (tk_outset_input(set, "--input", a->input) || tk_outset_input(set, "--mask", a->mask)) return TK_EXIT_FAILURE;
    for (int f = 0; f <= m->num_factors; ++f) {
        char name[TK_PLTF_MAX_INDICES + 8];
        if (f < m->num_factors) tk_pltf_factor_name(m, f, name);
        else strcpy(name, "xhat");
        strcat(name, ".npy");
        if ((idx[f] = tk_outset_add_in_folder(set, "--out", a->out, name)) < 0) return -idx[f];
        /* after the output set's checks (an input there says so): --force */
        char path[4096];
        const size_t n = strlen(a->out);
        snprintf(path, sizeof path, "%s%s%s", a->out, n && a->out[n - 1] == '/' ? "" : "/", name);
        int existing = tk_cli_refuse_existing(prog, &a->std, path, 0);
        if (existing) return existing;
    }
    return 0;
}

/* Write values (double) as dtype into output idx; 0 after printing why. */
static int write_array(tk_outset *set, int idx, tk_npy_dtype dtype, int ndim, const size_t *shape,
                       const double *values, size_t count)
{
    const char *path = tk_outset_path(set, idx);
    void *data = (void *)values;
    float *f = NULL;
    if (dtype == TK_NPY_FLOAT32) {
        f = malloc((count ? count : 1) * sizeof(float));
        if (!f) {
            tk_cli_error(prog, "--out %s: out of memory; free memory and run again", path);
            return 0;
        }
        for (size_t i = 0; i < count; ++i) f[i] = (float)values[i];
        data = f;
    }
    int ok = tk_cli_write_npy(prog, set, idx, "--out", dtype, ndim, shape, data);
    free(f);
    return ok;
}

int main(int argc, char **argv)
{
#ifdef TK_PLTF_WITH_IMAGES
    if (tk_xml_requested(argc, argv)) return tk_cli_print_xml(stdout, &tk_pltf_complete_command) ? 0 : TK_EXIT_FAILURE;
    /* Slicer writes the options first: `tk-pltf --model M ... complete IN OUT`. */
    if (tk_pltf_complete_requested(argc, argv)) return tk_pltf_complete_main(argc, argv);
#else
    if ((argc > 1 && !strcmp(argv[1], "complete")) || tk_xml_requested(argc, argv)) {
        tk_cli_error(prog, "%s needs the image mode, which this build lacks; build TensorKernels with ITK "
                           "(-DTK_WITH_ITK=ON)", argv[1]);
        return TK_EXIT_USAGE;
    }
#endif
    pltf_args a;
    if (!parse_args(argc, argv, &a)) return TK_EXIT_USAGE;
    int bad_output = tk_cli_check_output(prog, a.out, 1, NULL); /* the files in it: register_outputs */
    if (bad_output) return bad_output;
    tk_pltf_model m;
    if (tk_pltf_parse(a.model, &m) != TK_OK) {
        tk_cli_error(prog, "--model: %s; see --help for how a model is written", tk_last_error());
        return TK_EXIT_USAGE;
    }
    for (int f = 0; f < m.num_factors; ++f) /* each factor is one file DIR/<indices>.npy */
        for (int g = 0; g < f; ++g) {
            char nf[TK_PLTF_MAX_INDICES + 1], ng[TK_PLTF_MAX_INDICES + 1];
            tk_pltf_factor_name(&m, f, nf);
            tk_pltf_factor_name(&m, g, ng);
            if (!strcmp(nf, ng) || !strcmp(nf, "xhat")) {
                tk_cli_error(prog, "--model \"%s\": factor %d repeats the indices '%s' of factor %d (each factor is "
                                   "saved as %s.npy); give each factor its own indices", m.text, f + 1, nf, g + 1, nf);
                return TK_EXIT_USAGE;
            }
        }
    tk_outset *set = tk_outset_new(prog);
    int out_idx[TK_PLTF_MAX_FACTORS + 1];
    if (!set) {
        tk_cli_error(prog, "out of memory; free memory and run again");
        return TK_EXIT_FAILURE;
    }
    if ((bad_output = register_outputs(set, &a, &m, out_idx))) {
        tk_outset_free(set);
        return bad_output;
    }
    tk_npy_array x, mk;
    memset(&mk, 0, sizeof mk);
    if (!tk_cli_read_float_npy(prog, a.input, NULL, &x)) {
        tk_outset_free(set);
        return TK_EXIT_FAILURE;
    }
    int status = TK_EXIT_FAILURE;
    double *xd = NULL, *xhat = NULL, *factors[TK_PLTF_MAX_FACTORS] = {0};
    uint8_t *mask = NULL;
    char shape[256], where[256];
    tk_cli_shape_text(shape, sizeof shape, x.ndim, x.shape, 0);
    if (x.ndim != m.out_ndim) {
        tk_cli_error(prog, "%s: shape %s has %d axes, but model \"%s\" observes %d (its indices before '='); "
                           "give an array of that many axes, or another --model", a.input,
                     shape, x.ndim, m.text, m.out_ndim);
        goto done;
    }
    if (tk_pltf_set_out_shape(&m, x.ndim, x.shape) != TK_OK) {
        tk_cli_error(prog, "%s: %s", a.input, tk_last_error());
        goto done;
    }
    if (a.dims && tk_pltf_set_dims(&m, a.dims) != TK_OK) {
        tk_cli_error(prog, "--dims: %s; give the sizes as --dims a=10,b=5", tk_last_error());
        status = TK_EXIT_USAGE;
        goto done;
    }
    for (int o = 0; o < m.out_ndim; ++o)
        if (m.dims[m.out[o]] != x.shape[o]) {
            tk_cli_error(prog, "--dims sets observed index '%c' to %zu, but %s has %zu along that axis; drop '%c' "
                               "from --dims (the input gives its size)",
                         tk_pltf_index_letter(m.out[o]), m.dims[m.out[o]], a.input, x.shape[o],
                         tk_pltf_index_letter(m.out[o]));
            status = TK_EXIT_USAGE;
            goto done;
        }
    if (tk_pltf_check_dims(&m) != TK_OK) {
        const char *why = tk_last_error();
        if (strstr(why, "no size given for index") && strlen(why) > 2)
            tk_cli_error(prog, "%s; give it with --dims, e.g. --dims %c=10", why, why[strlen(why) - 2]);
        else
            tk_cli_error(prog, "--dims: %s; give smaller sizes", why);
        status = TK_EXIT_USAGE;
        goto done;
    }
    if (a.mask) {
        if (tk_npy_read(a.mask, &mk) != TK_OK) {
            tk_cli_error(prog, "%s", tk_last_error());
            goto done;
        }
        char mshape[256];
        tk_cli_shape_text(mshape, sizeof mshape, mk.ndim, mk.shape, 0);
        int same = mk.ndim == x.ndim;
        for (int d = 0; same && d < x.ndim; ++d) same = mk.shape[d] == x.shape[d];
        if (!same) {
            tk_cli_error(prog, "%s: shape %s differs from the input's %s; give a mask of the input's shape", a.mask,
                         mshape, shape);
            goto done;
        }
        if (mk.dtype == TK_NPY_COMPLEX64 || mk.dtype == TK_NPY_COMPLEX128) {
            tk_cli_error(prog, "%s: dtype %s is not supported for a mask; save it as bool, uint8 or float (1: "
                               "observed)", a.mask, tk_npy_dtype_name(mk.dtype));
            goto done;
        }
    }
    const size_t count = x.count;
    double bytes = (double)count * (2 * sizeof(double) + 1);
    for (int f = 0; f < m.num_factors; ++f) { /* in double: a product of --dims may overflow size_t */
        double elems = 1;
        for (int d = 0; d < m.factor_ndim[f]; ++d) elems *= (double)m.dims[m.factor[f][d]];
        bytes += elems * sizeof(double);
    }
    if (!tk_cli_fits_memory(prog, bytes, "--dims: the factorization")) goto done;
    xd = malloc(sizeof(double) * (count ? count : 1));
    mask = a.mask ? malloc(count ? count : 1) : NULL;
    xhat = malloc(sizeof(double) * (count ? count : 1));
    for (int f = 0; f < m.num_factors; ++f) factors[f] = malloc(sizeof(double) * tk_pltf_factor_count(&m, f));
    int ok = xd && xhat && (!a.mask || mask);
    for (int f = 0; f < m.num_factors; ++f) ok = ok && factors[f];
    if (!ok) {
        tk_cli_error(prog, "out of memory for a %s tensor and its factors; use smaller --dims, or a machine "
                           "with more memory", shape);
        goto done;
    }
    size_t observed = 0;
    for (size_t i = 0; i < count; ++i) {
        if (mask) {
            double mv = 0;
            switch (mk.dtype) {
            case TK_NPY_FLOAT32: mv = ((const float *)mk.data)[i]; break;
            case TK_NPY_FLOAT64: mv = ((const double *)mk.data)[i]; break;
            case TK_NPY_INT8: mv = ((const int8_t *)mk.data)[i]; break;
            case TK_NPY_UINT8: mv = ((const uint8_t *)mk.data)[i]; break;
            case TK_NPY_INT32: mv = ((const int32_t *)mk.data)[i]; break;
            case TK_NPY_INT64: mv = (double)((const int64_t *)mk.data)[i]; break;
            default: break;
            }
            mask[i] = mv != 0;
            if (!mask[i]) {
                xd[i] = 0; /* unobserved: never read */
                continue;
            }
        }
        ++observed;
        const double v = x.dtype == TK_NPY_FLOAT64 ? ((const double *)x.data)[i] : ((const float *)x.data)[i];
        xd[i] = v;
        const tk_pltf_divergence dv = a.opts.divergence;
        const char *bad = !isfinite(v)                       ? "is not finite"
                          : dv == TK_PLTF_KL && v < 0        ? "is negative: the KL divergence needs X >= 0"
                          : dv == TK_PLTF_IS && v < 0        ? "is negative: the Itakura-Saito divergence needs X > 0"
                          : dv == TK_PLTF_IS && v == 0       ? "is zero: the Itakura-Saito divergence needs X > 0"
                                                             : NULL;
        if (bad) {
            where_text(&m, i, where, sizeof where);
            tk_cli_error(prog, "%s: entry %s = %g %s; %s", a.input, where, v, bad,
                         !isfinite(v) ? "fix it, or mask it out (--mask)"
                                      : "use --divergence euclidean, or mask it out (--mask)");
            goto done;
        }
    }
    if (!observed) {
        tk_cli_error(prog, "%s: the mask leaves no observed entry; mark the observed entries with 1", a.mask);
        goto done;
    }
    tk_backend run;
    if (!tk_cli_resolve_backend(prog, a.std.backend, a.opts.cuda_device, TK_BACKEND_OMP, a.std.quiet, &run)) goto done;
    a.opts.backend = (tk_backend)run;

    tk_progress bar;
    progress_ctx pc = {&a, &bar, 0, 0};
    a.opts.on_iteration = on_iteration;
    a.opts.user = &pc;
    tk_pltf_result res;
    memset(&res, 0, sizeof res);
    for (int f = 0; f < m.num_factors; ++f) res.factors[f] = factors[f];
    res.xhat = xhat;
    tk_progress_begin(&bar, prog, (size_t)a.opts.iterations, a.std.quiet);
    tk_status s = tk_pltf_factorize(&m, &a.opts, xd, mask, &res);
    tk_progress_end(&bar);
    if (s != TK_OK) {
        tk_cli_error(prog, "%s: %s", a.input, tk_last_error());
        status = s == TK_ERR_ARGUMENT ? TK_EXIT_USAGE : TK_EXIT_FAILURE;
        goto done;
    }
    for (int f = 0; f < m.num_factors; ++f) {
        size_t fshape[TK_PLTF_MAX_INDICES];
        for (int d = 0; d < m.factor_ndim[f]; ++d) fshape[d] = m.dims[m.factor[f][d]];
        if (!write_array(set, out_idx[f], x.dtype, m.factor_ndim[f], fshape, factors[f], tk_pltf_factor_count(&m, f)))
            goto done;
    }
    if (!write_array(set, out_idx[m.num_factors], x.dtype, x.ndim, x.shape, xhat, count)) goto done;
    if (tk_outset_commit(set) != 0) goto done; /* all files in place, or none */
    if (!a.std.quiet)
        fprintf(stderr, "%s: model %s, %d iterations on %s in %.1f ms; %s divergence %.6g -> %.6g\n", prog, m.text,
                res.iterations_done, a.opts.backend == TK_BACKEND_CPU ? "cpu" : a.opts.backend == TK_BACKEND_OMP ? "omp" : "cuda",
                res.iterate_ms, tk_pltf_divergence_name(a.opts.divergence), pc.first,
                res.final_divergence);
    status = 0;
done:
    tk_outset_free(set); /* what was not committed is removed */
    tk_npy_free(&x);
    if (a.mask) tk_npy_free(&mk);
    free(xd), free(xhat), free(mask);
    for (int f = 0; f < TK_PLTF_MAX_FACTORS; ++f) free(factors[f]);
    return status;
}
