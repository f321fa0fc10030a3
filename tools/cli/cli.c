#define _POSIX_C_SOURCE 200809L
#include "cli.h"
#include "tk_device.h"
#include "tk_npy.h"
#include "tk_output_set.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

double tk_cli_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

void tk_cli_error(const char *prog, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    fprintf(stderr, "%s: error: ", prog);
    vfprintf(stderr, fmt, args);
    fputc('\n', stderr);
    va_end(args);
}

int tk_cli_parse_int(const char *prog, const char *flag, const char *text, long lo, long hi, long *out)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || end == text || *end || v < lo || v > hi) {
        tk_cli_error(prog, "%s expects an integer from %ld to %ld, got '%s'; give a whole number in that range", flag,
                     lo, hi, text);
        return 0;
    }
    *out = v;
    return 1;
}

int tk_cli_parse_double(const char *prog, const char *flag, const char *text, double lo, double hi, double *out)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || end == text || *end || !isfinite(v) || v < lo || v > hi) {
        tk_cli_error(prog, "%s expects a number from %g to %g, got '%s'; give a number in that range", flag, lo, hi,
                     text);
        return 0;
    }
    *out = v;
    return 1;
}

int tk_cli_is(const char *arg, const char *flag)
{
    size_t n = strlen(flag);
    return !strncmp(arg, flag, n) && (arg[n] == '\0' || arg[n] == '=');
}

const char *tk_cli_value(const char *prog, int argc, char **argv, int *i, const char *flag)
{
    const char *eq = strchr(argv[*i], '=');
    if (eq) return eq + 1;
    if (*i + 1 >= argc) {
        tk_cli_error(prog, "%s needs a value; give it as %s VALUE or %s=VALUE", flag, flag, flag);
        return NULL;
    }
    return argv[++*i];
}

/* ---- progress --------------------------------------------------------------- */

static void progress_draw(tk_progress *p, int final)
{
    double now = tk_cli_now_ms(), elapsed = (now - p->start_ms) / 1e3;
    double frac = p->total ? (double)p->done / (double)p->total : 1.0;
    double rate = elapsed > 0 ? (double)p->done / elapsed : 0;
    double eta = rate > 0 ? (double)(p->total - p->done) / rate : 0;
    char bar[31];
    int filled = (int)(frac * 30);
    for (int i = 0; i < 30; ++i) bar[i] = i < filled ? '#' : '.';
    bar[30] = '\0';
    fprintf(stderr, "\r%s [%s] %5.1f%% %zu/%zu  %.3g/s  ETA %.0fs ", p->label, bar, 100 * frac, p->done, p->total,
            rate, eta);
    if (final) fputc('\n', stderr);
    fflush(stderr);
    p->last_ms = now;
}

void tk_progress_begin(tk_progress *p, const char *label, size_t total, int quiet)
{
    memset(p, 0, sizeof *p);
    p->label = label;
    p->total = total;
    p->enabled = !quiet && isatty(STDERR_FILENO);
    p->start_ms = p->last_ms = tk_cli_now_ms();
}

void tk_progress_advance(tk_progress *p, size_t amount)
{
    p->done += amount;
    if (p->enabled && tk_cli_now_ms() - p->last_ms > 100) progress_draw(p, 0);
}

void tk_progress_end(tk_progress *p)
{
    /* Only work that took a moment leaves a bar behind. */
    if (p->enabled && tk_cli_now_ms() - p->start_ms > 500) progress_draw(p, 1);
}

/* ---- memory ------------------------------------------------------------------- */

/* This machine's physical memory in bytes (0 when unknown). */
static double physical_memory(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? (double)pages * (double)page : 0;
}

int tk_cli_fits_memory(const char *prog, double bytes, const char *what)
{
    double have = physical_memory();
    if (have <= 0 || bytes <= have) return 1; /* unknown: let the allocation decide */
    tk_cli_error(prog, "%s needs %.3g GiB, more than this machine's %.3g GiB of memory; use smaller sizes, or a machine "
                       "with more memory", what, bytes / (1 << 30), have / (1 << 30));
    return 0;
}

/* ---- atomic output ------------------------------------------------------------ */

int tk_cli_check_output(const char *prog, const char *path, int is_dir, const char *const *inputs)
{
    if (!path || !strcmp(path, "-")) return 0;
    if (!*path) {
        tk_cli_error(prog, "an output path is empty; give a file name");
        return TK_EXIT_USAGE;
    }
    struct stat st, in;
    if (stat(path, &st) == 0) {
        for (const char *const *i = inputs; i && *i; ++i)
            if (stat(*i, &in) == 0 && in.st_dev == st.st_dev && in.st_ino == st.st_ino) {
                tk_cli_error(prog, "%s: is the input %s as well: refusing to overwrite an input; choose another output path",
                             path, *i);
                return TK_EXIT_USAGE;
            }
        if (!is_dir && S_ISDIR(st.st_mode)) {
            tk_cli_error(prog, "%s: cannot write: it is a directory; give a file name, not a folder's", path);
            return TK_EXIT_FAILURE;
        }
    }
    /* The folder the output (or its temporary) goes to. */
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/') --n; /* "model/" is the folder model */
    const char *slash = NULL;
    for (size_t k = 0; k < n; ++k)
        if (path[k] == '/') slash = path + k;
    char *folder = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
    if (!folder) {
        tk_cli_error(prog, "out of memory; free memory and run again");
        return TK_EXIT_FAILURE;
    }
    int code = 0;
    if (stat(folder, &st) != 0) {
        const int err = errno;
        tk_cli_error(prog, "%s: cannot write: the folder %s %s; %s", path, folder,
                     err == ENOENT ? "does not exist" : strerror(err),
                     err == ENOENT ? "create it first, or choose another folder" : "choose another folder");
        code = TK_EXIT_FAILURE;
    } else if (!S_ISDIR(st.st_mode)) {
        tk_cli_error(prog, "%s: cannot write: %s is not a folder; choose an output inside a folder", path, folder);
        code = TK_EXIT_FAILURE;
    } else if (access(folder, W_OK | X_OK) != 0) {
        tk_cli_error(prog, "%s: cannot write: the folder %s is not writable (%s); choose a folder you can write to", path,
                     folder, strerror(errno));
        code = TK_EXIT_FAILURE;
    }
    free(folder);
    return code;
}

int tk_output_open(tk_output *out, const char *path, const char *prog)
{
    memset(out, 0, sizeof *out);
    if (!path || !strcmp(path, "-")) {
        out->file = stdout;
        return 1;
    }
    /* One output of an output set: a private temporary, removed on a signal or at exit. */
    out->set = tk_outset_new(prog);
    if (!out->set) {
        tk_cli_error(prog, "out of memory; free memory and run again");
        return 0;
    }
    const int idx = tk_outset_add(out->set, NULL, path, NULL);
    const int fd = idx >= 0 ? tk_outset_open(out->set, idx, 0) : -1;
    if (fd >= 0 && !(out->file = fdopen(fd, "w"))) {
        tk_cli_error(prog, "%s: cannot create: %s; check the folder and run again", path, strerror(errno));
        close(fd);
    }
    if (!out->file) {
        tk_output_abort(out);
        return 0;
    }
    return 1;
}

int tk_output_commit(tk_output *out, const char *prog)
{
    if (out->file == stdout) {
        int ok = fflush(stdout) == 0 && !ferror(stdout);
        if (!ok) tk_cli_error(prog, "cannot write to standard output: %s; check where it goes (a closed pipe, a full disk)",
                             strerror(errno ? errno : EIO));
        return ok;
    }
    errno = 0;
    int ok = fflush(out->file) == 0 && !ferror(out->file);
    int err = ok ? 0 : (errno ? errno : EIO);
    if (fclose(out->file) != 0 && ok) {
        ok = 0;
        err = errno ? errno : EIO;
    }
    out->file = NULL;
    if (!ok)
        tk_cli_error(prog, "%s: cannot write: %s; %s", tk_outset_path(out->set, 0), strerror(err), tk_write_advice(err));
    else
        ok = tk_outset_commit(out->set) == 0; /* checked, synced and renamed; it says why not */
    tk_outset_free(out->set);
    out->set = NULL;
    return ok;
}

void tk_output_abort(tk_output *out)
{
    if (out->file && out->file != stdout) fclose(out->file);
    tk_outset_free(out->set); /* the temporary goes with it */
    memset(out, 0, sizeof *out);
}

int tk_cli_write_npy(const char *prog, struct tk_outset *set, int idx, const char *flag, int dtype, int ndim,
                     const size_t *shape, const void *data)
{
    const char *path = tk_outset_path(set, idx);
    int fd = tk_outset_open(set, idx, 0); /* it says why it cannot */
    if (fd < 0) return 0;
    tk_status s = tk_npy_write_fd(fd, path, (tk_npy_dtype)dtype, ndim, shape, data);
    /* the commit syncs; a failed close is still a failed write */
    if (close(fd) != 0 && s == TK_OK) s = tk_set_error(TK_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
    if (s != TK_OK) tk_cli_error(prog, "%s%s%s", flag ? flag : "", flag ? " " : "", tk_last_error());
    return s == TK_OK;
}

int tk_cli_read_float_npy(const char *prog, const char *path, const char *of_what, tk_npy_array *arr)
{
    if (tk_npy_read(path, arr) != TK_OK) {
        tk_cli_error(prog, "%s", tk_last_error());
        return 0;
    }
    if (arr->dtype == TK_NPY_FLOAT32 || arr->dtype == TK_NPY_FLOAT64) return 1;
    tk_cli_error(prog, "%s: dtype %s is not supported (expected float32 or float64%s%s); convert the array "
                       "(numpy's astype) and save it again", path, tk_npy_dtype_name(arr->dtype),
                 of_what ? " " : "", of_what ? of_what : "");
    tk_npy_free(arr);
    return 0;
}

void tk_cli_shape_text(char *buf, size_t size, int ndim, const size_t *shape, int tuple_comma)
{
    int len = snprintf(buf, size, "(");
    for (int d = 0; d < ndim && len < (int)size - 24; ++d) /* room for one more "%zu, " */
        len += snprintf(buf + len, size - (size_t)len, "%zu%s", shape[d], d + 1 < ndim ? ", " : "");
    snprintf(buf + len, size - (size_t)len, tuple_comma && ndim == 1 ? ",)" : ")");
}

/* ---- backends ------------------------------------------------------------------ */


int tk_cli_parse_backend(const char *prog, const char *text, int accept_cpu, tk_backend *out)
{
    static const tk_backend all[] = {TK_BACKEND_AUTO, TK_BACKEND_CPU, TK_BACKEND_OMP, TK_BACKEND_CUDA};
    for (size_t i = 0; i < sizeof all / sizeof *all; ++i)
        if ((accept_cpu || all[i] != TK_BACKEND_CPU) && !strcmp(text, tk_backend_name(all[i]))) {
            *out = all[i];
            return 1;
        }
    tk_cli_error(prog, "--backend expects %s, got '%s'; use one of those", accept_cpu ? "auto, cpu, omp or cuda" : "auto, omp or cuda",
                 text);
    return 0;
}

int tk_cli_resolve_backend(const char *prog, tk_backend requested, int device, tk_backend cpu_fallback,
                           int quiet, tk_backend *run)
{
    *run = requested;
    if (requested != TK_BACKEND_AUTO && requested != TK_BACKEND_CUDA) return 1;
    char reason[512] = "";
    if (tk_cuda_device_usable(device, reason, sizeof reason)) {
        *run = TK_BACKEND_CUDA;
        return 1;
    }
    if (requested == TK_BACKEND_CUDA) {
        tk_cli_error(prog, "--backend cuda: no usable CUDA GPU (%s); use --backend auto, omp or cpu", reason);
        return 0;
    }
    if (!quiet)
        fprintf(stderr, "%s: warning: no usable CUDA GPU (%s); running on the CPU (%s)\n", prog, reason,
                tk_backend_name(cpu_fallback));
    *run = cpu_fallback;
    return 1;
}
