/* The command lines of tk-bench's suites: each suite declares its options in one table
 * (tools/cli/cli_options.h), from which its parsing and --help come; this adds what the
 * suites share on top of that table: a row a line, the options several suites take, --help,
 * the parse call and the comma-separated lists (--backends, --sizes, ...). */
#ifndef TK_BENCH_OPTIONS_H
#define TK_BENCH_OPTIONS_H

#include <stddef.h>

#include "cli_options.h"

/* One suite's command line: "tk-bench teig", its description (as tk_command's: printed as
 * a printf format, so a % is written %%) and its options, at most BENCH_MAX_OPTIONS; --help / -h is added to them, and the synopsis is
 * "PROG [options]" (the table's --help lists each option with its default).  The suites take
 * no standard group: their --threads has its own range (1..4096, no 0) and --backend and
 * --device mean nothing to them. */
typedef struct bench_suite {
    const char *prog;
    const char *description;
    const tk_option *options;
    size_t count;
} bench_suite;
#define BENCH_MAX_OPTIONS 31 /* and --help: tk_parsed records 32 a group */

/* The rows of a suite's table, one option a row: its name, the value's name in --help, how
 * it is read, where it goes (OFFSET: an offsetof in the suite's arguments) and its --help
 * text.  BENCH_LONG and BENCH_DOUBLE take a number in [LO, HI]; BENCH_FLAG stores 1,
 * BENCH_CLEAR_FLAG 0 (--no-balance clears balance); BENCH_CUSTOM's PARSE stores the value. */
#define BENCH_LONG(NAME, VALUE, LO, HI, OFFSET, HELP)                                                                 \
    {.name = NAME, .value_name = VALUE, .kind = TK_OPT_LONG, .min = LO, .max = HI, .offset = (OFFSET), .help = HELP}
#define BENCH_DOUBLE(NAME, VALUE, LO, HI, OFFSET, HELP)                                                               \
    {.name = NAME, .value_name = VALUE, .kind = TK_OPT_DOUBLE, .min = LO, .max = HI, .offset = (OFFSET), .help = HELP}
#define BENCH_TEXT(NAME, VALUE, OFFSET, HELP)                                                                         \
    {.name = NAME, .value_name = VALUE, .kind = TK_OPT_TEXT, .offset = (OFFSET), .help = HELP}
#define BENCH_CHOICE(NAME, VALUE, CHOICES, OFFSET, HELP)                                                              \
    {.name = NAME, .value_name = VALUE, .kind = TK_OPT_CHOICE, .choices = CHOICES, .offset = (OFFSET), .help = HELP}
#define BENCH_CUSTOM(NAME, VALUE, PARSE, OFFSET, HELP)                                                                \
    {.name = NAME, .value_name = VALUE, .kind = TK_OPT_CUSTOM, .parse = PARSE, .offset = (OFFSET), .help = HELP}
#define BENCH_FLAG(NAME, OFFSET, HELP) {.name = NAME, .kind = TK_OPT_FLAG, .offset = (OFFSET), .help = HELP}
#define BENCH_CLEAR_FLAG(NAME, OFFSET, HELP)                                                                          \
    {.name = NAME, .kind = TK_OPT_FLAG, .clears = 1, .offset = (OFFSET), .help = HELP}

/* Options several suites take, with the same name, range and parsing; what they mean there
 * (HELP) is the suite's.  --threads P: 1..4096 threads (the suites' default 0: all cores);
 * --backends cpu,omp,cuda: an int[3] indexed by tk_backend. */
#define BENCH_THREADS_OPTION(OFFSET, HELP) BENCH_LONG("threads", "P", 1, 4096, OFFSET, HELP)
#define BENCH_BACKENDS_OPTION(OFFSET, HELP) BENCH_CUSTOM("backends", "cpu,omp,cuda", bench_parse_backends, OFFSET, HELP)
/* --gpus N: a long, -1 unless given (bench_scaling_gpus). */
#define BENCH_GPUS_OPTION(OFFSET, WHAT)                                                                             \
    BENCH_LONG("gpus", "N", 0, 64, OFFSET,                                                                          \
               WHAT " on 1 GPU and on N (0: every visible GPU), with the\nspeed-up (default: not measured)")

/* Parse argv[1..argc-1] into args (the suite's defaults set by the caller) by the suite's
 * table; --help prints the help and exits 0.  parsed (for bench_given) may be NULL.  1, or 0
 * after a message naming the flag (exit TK_EXIT_USAGE). */
int bench_parse_suite(const bench_suite *suite, int argc, char **argv, void *args, tk_parsed *parsed);
/* 1 when the option long_name was on the command line bench_parse_suite parsed. */
int bench_given(const bench_suite *suite, const tk_parsed *parsed, const char *long_name);

/* A comma-separated list of names (empty words skipped) into on[0..count-1]: on[i] = 1 for
 * each names[i] listed, 0 for the others.  1, or 0 with the first unknown word in unknown. */
int bench_pick_names(const char *list, const char *const *names, int count, int *on, char *unknown,
                     size_t unknown_size);
/* The same, saying "FLAG expects a list of a, b, c, got 'x'; use those names" on an unknown word. */
int bench_parse_names(const char *prog, const char *flag, const char *list, const char *const *names, int count,
                      int *on);
/* TK_OPT_CUSTOM parser of --backends cpu,omp,cuda into an int[3] indexed by tk_backend. */
int bench_parse_backends(const char *prog, const char *flag, const char *value, void *dest);

/* A comma-separated list of at most max integers in [lo, hi] (empty words skipped) into out,
 * their number in *n.  1, or 0 (a message for a word out of range; none for an empty or too
 * long list). */
int bench_parse_long_list(const char *prog, const char *flag, const char *list, long lo, long hi, long *out, int max,
                          int *n);

#endif
