/* The suites' command lines on top of the option tables (bench_options.h). */
#include "bench_options.h"

#include <stdio.h>
#include <string.h>

#include "cli.h"

/* A suite's command and what it points to: one group, "options", holds the suite's table
 * and --help (the suites are small enough for one). */
typedef struct {
    tk_option rows[BENCH_MAX_OPTIONS + 1];
    tk_option_group group;
    char usage[64];
    tk_command cmd;
} suite_command;

static const tk_command *make_command(const bench_suite *suite, suite_command *c)
{
    const size_t count = suite->count < BENCH_MAX_OPTIONS ? suite->count : BENCH_MAX_OPTIONS;
    memcpy(c->rows, suite->options, count * sizeof *c->rows);
    c->rows[count] =
        (tk_option){.name = "help", .short_name = 'h', .kind = TK_OPT_META, .help = "print this help, then exit"};
    c->group = (tk_option_group){.title = "options", .options = c->rows, .count = count + 1};
    snprintf(c->usage, sizeof c->usage, "%s [options]", suite->prog);
    c->cmd = (tk_command){.prog = suite->prog, .usage = c->usage, .description = suite->description,
                          .groups = &c->group, .count = 1};
    return &c->cmd;
}

int bench_parse_suite(const bench_suite *suite, int argc, char **argv, void *args, tk_parsed *parsed)
{
    suite_command c;
    tk_parsed unused;
    if (suite->count > BENCH_MAX_OPTIONS) { /* a table grown past what tk_parsed records */
        tk_cli_error(suite->prog, "%zu options, more than the %d a suite may have; split the table", suite->count,
                     BENCH_MAX_OPTIONS);
        return 0;
    }
    return tk_cli_parse_options(make_command(suite, &c), argc, argv, 1, args, parsed ? parsed : &unused);
}

int bench_given(const bench_suite *suite, const tk_parsed *parsed, const char *long_name)
{
    suite_command c;
    return tk_cli_given(make_command(suite, &c), parsed, long_name);
}

/* The next word of a comma-separated list into word (empty words skipped, as strtok does);
 * the rest of the list, or NULL after the last word. */
static const char *next_word(const char *list, char *word, size_t size)
{
    list += strspn(list, ",");
    if (!*list) return NULL;
    const size_t len = strcspn(list, ",");
    snprintf(word, size, "%.*s", (int)len, list);
    return list + len;
}

int bench_pick_names(const char *list, const char *const *names, int count, int *on, char *unknown,
                     size_t unknown_size)
{
    char word[256];
    memset(on, 0, sizeof *on * (size_t)count);
    while ((list = next_word(list, word, sizeof word))) {
        int found = 0;
        for (int i = 0; i < count; ++i)
            if (!strcmp(word, names[i])) on[i] = found = 1;
        if (!found) {
            snprintf(unknown, unknown_size, "%s", word);
            return 0;
        }
    }
    return 1;
}

int bench_parse_names(const char *prog, const char *flag, const char *list, const char *const *names, int count,
                      int *on)
{
    char unknown[256], expected[256] = "";
    if (bench_pick_names(list, names, count, on, unknown, sizeof unknown)) return 1;
    for (int i = 0; i < count; ++i) {
        const size_t len = strlen(expected);
        snprintf(expected + len, sizeof expected - len, "%s%s", i ? ", " : "", names[i]);
    }
    tk_cli_error(prog, "%s expects a list of %s, got '%s'; use those names", flag, expected, unknown);
    return 0;
}

int bench_parse_backends(const char *prog, const char *flag, const char *value, void *dest)
{
    static const char *const names[3] = {"cpu", "omp", "cuda"}; /* TK_BACKEND_CPU, _OMP, _CUDA */
    return bench_parse_names(prog, flag, value, names, 3, (int *)dest);
}

int bench_parse_long_list(const char *prog, const char *flag, const char *list, long lo, long hi, long *out, int max,
                          int *n)
{
    char word[256];
    *n = 0;
    while ((list = next_word(list, word, sizeof word))) {
        if (*n == max || !tk_cli_parse_int(prog, flag, word, lo, hi, &out[*n])) return 0;
        ++*n;
    }
    return *n > 0;
}
