/* Fuzz target: a whole tool's command line, tk-eig's (parse_args in
 * tools/tk_eig.c), compiled here with the tool's main renamed so that its static
 * parser can be called without running the job.
 *
 * Input: NUL-separated arguments after the program name.  Inputs holding "--help", "-h",
 * "--version", "--xml" or "--list-options" are skipped: the parser answers those and exits
 * there, by design.
 *
 * Asserts: a refused command line printed "tk-eig: error: ..." on stderr; an accepted
 * one names INPUT and OUTPUT, each an argument (or the text after "--flag=") of the
 * list, no two outputs the same file, and --threads within 0..4096. */
#define _POSIX_C_SOURCE 200809L
#include <string.h>

#define main tk_eig_tool_main
#include "tk_eig.c"
#undef main

#include "fuzz_common.h"

#define MAX_ARGS 32

/* Is p one of the arguments, or inside one (the value after '=')? */
static int from_argv(const char *p, int argc, char **argv)
{
    for (int i = 0; i < argc; ++i)
        if (p >= argv[i] && p <= argv[i] + strlen(argv[i])) return 1;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *argv[MAX_ARGS + 1], *copy;
    const int argc = tk_fuzz_command_line(data, size, "tk-eig", MAX_ARGS, argv, &copy);
    for (int i = 1; i < argc; ++i) {
        const char *p = argv[i];
        if (!strcmp(p, "--help") || !strcmp(p, "-h") || !strcmp(p, "--version") || !strcmp(p, "--xml") ||
            !strcmp(p, "--list-options")) {
            free(copy);
            return 0;
        }
    }

    /* The parser's messages, captured to check that a refusal says why. */
    char *said = NULL;
    size_t said_size = 0;
    FILE *capture = open_memstream(&said, &said_size), *saved = stderr;
    if (!capture) abort();
    stderr = capture;
    eig_args a;
    int ok = parse_args(argc, argv, &a);
    stderr = saved;
    fclose(capture);

    if (!ok) {
        TK_FUZZ_CHECK(!strncmp(said, "tk-eig: error: ", 15), "refused without an error message (said '%s')", said);
    } else {
        TK_FUZZ_CHECK(a.input && a.output, "accepted without INPUT and OUTPUT");
        const char *paths[4] = {a.input, a.output, a.vectors, a.status};
        for (int p = 0; p < 4; ++p)
            TK_FUZZ_CHECK(!paths[p] || from_argv(paths[p], argc, argv), "path %d is not from the command line", p);
        for (int p = 1; p < 4; ++p)
            for (int q = p + 1; q < 4; ++q)
                TK_FUZZ_CHECK(!paths[p] || !paths[q] || strcmp(paths[p], paths[q]), "two outputs go to '%s'", paths[p]);
        TK_FUZZ_CHECK(a.opts.num_threads >= 0 && a.opts.num_threads <= 4096, "--threads %d", a.opts.num_threads);
    }
    free(said);
    free(copy);
    return 0;
}
