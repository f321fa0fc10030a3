/* Helpers shared by the command-line tools: option values, errors, progress bar,
 * atomic text output. */
#ifndef TK_CLI_H
#define TK_CLI_H

#include <stddef.h>
#include <stdio.h>

#include "tk_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Exit codes: 1 for failed work (bad data, I/O), 2 for a bad command line. */
#define TK_EXIT_FAILURE 1
#define TK_EXIT_USAGE 2

/* Print "PROG: error: ..." to stderr. */
void tk_cli_error(const char *prog, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Parse a whole string as a number in [lo, hi]; 0 and a message on failure. */
int tk_cli_parse_int(const char *prog, const char *flag, const char *text, long lo, long hi, long *out);
int tk_cli_parse_double(const char *prog, const char *flag, const char *text, double lo, double hi, double *out);

/* Split "--flag=value" and fetch the value of "--flag value": returns the value
 * or NULL (and prints why) when it is missing. *i advances past what was used. */
const char *tk_cli_value(const char *prog, int argc, char **argv, int *i, const char *flag);
/* 1 if argv[i] is --flag or --flag=... */
int tk_cli_is(const char *arg, const char *flag);

/* A progress bar on stderr with rate and ETA; silent when stderr is not a terminal or quiet. */
typedef struct tk_progress {
    const char *label;
    size_t total, done;
    double start_ms, last_ms;
    int enabled;
} tk_progress;
void tk_progress_begin(tk_progress *p, const char *label, size_t total, int quiet);
void tk_progress_advance(tk_progress *p, size_t amount);
void tk_progress_end(tk_progress *p);

/* Before the work, can an output go to path?  Its folder must exist and (where
 * permissions apply) be writable; path must not be a directory (unless is_dir: a folder
 * output such as a model directory, replaced as a whole) and must not be one of the
 * inputs (a NULL-terminated list; same file by device and inode, so links count).
 * Returns 0, or the exit code (TK_EXIT_FAILURE; TK_EXIT_USAGE for an input given as
 * an output) after a message naming path and the problem.  path NULL or "-": 0. */
int tk_cli_check_output(const char *prog, const char *path, int is_dir, const char *const *inputs);

/* 1 when bytes fit in this machine's physical memory; else 0 after "PROG: error: WHAT
 * needs N GiB, more than this machine's M GiB of memory".  For sizes known before any
 * allocation (a request that could never be served fails at once, and clearly). */
int tk_cli_fits_memory(const char *prog, double bytes, const char *what);

/* Text output through a one-output set (tk_output_set.h): a private temporary beside
 * path, every write checked, renamed on commit; path NULL or "-" writes to stdout. */
struct tk_outset;
typedef struct tk_output {
    FILE *file;
    struct tk_outset *set;
} tk_output;
int tk_output_open(tk_output *out, const char *path, const char *prog);
int tk_output_commit(tk_output *out, const char *prog); /* 0 on failure, removing the temporary */
void tk_output_abort(tk_output *out);

/* Read a .npy of float32 or float64 values: another dtype is refused ("expected float32 or
 * float64 OF_WHAT"; of_what NULL: nothing after it).  1, or 0 after the message (nothing
 * left to free). */
struct tk_npy_array;
int tk_cli_read_float_npy(const char *prog, const char *path, const char *of_what, struct tk_npy_array *arr);

/* An array's shape as numpy prints it, "(2, 3)", into buf (messages name the shape they
 * refuse); a 1-D shape is "(5,)" where tuple_comma (numpy's tuple), else "(5)". */
void tk_cli_shape_text(char *buf, size_t size, int ndim, const size_t *shape, int tuple_comma);

/* A .npy into output idx of an output set (tk_output_set.h), every write checked; 1, or 0
 * after "PROG: error: FLAG PATH: cannot write: REASON". */
int tk_cli_write_npy(const char *prog, struct tk_outset *set, int idx, const char *flag, int dtype, int ndim,
                     const size_t *shape, const void *data);

double tk_cli_now_ms(void);

/* --backend: auto (the default everywhere) runs on CUDA where tk_cuda_device_usable says
 * a GPU can run this build's code, else on the CPU with one warning line. */
/* Parse "auto", "cpu", "omp" or "cuda" (cpu only where accept_cpu; otherwise the tool has
 * one CPU path, named omp); 0 and a usage message on anything else. */
int tk_cli_parse_backend(const char *prog, const char *text, int accept_cpu, tk_backend *out);
/* The backend to run, in *run: auto becomes TK_BACKEND_CUDA with a usable GPU, else
 * cpu_fallback after "PROG: warning: no usable CUDA GPU (REASON); running on the CPU
 * (NAME)" on stderr (not when quiet); cpu and omp pass through.  An explicit cuda without
 * a usable GPU is an error: 0 after printing why (exit TK_EXIT_FAILURE). */
int tk_cli_resolve_backend(const char *prog, tk_backend requested, int device, tk_backend cpu_fallback,
                           int quiet, tk_backend *run);
/* "auto", "cpu", "omp", "cuda". */

#ifdef __cplusplus
}
#endif
#endif
