/* Shared by the fuzz targets: what a target asserts (TK_FUZZ_CHECK), the scratch files
 * the file-based parsers read and the command lines the argument parsers read.  Each target
 * defines LLVMFuzzerTestOneInput; it is linked either with libFuzzer (clang,
 * Testing/fuzz/libfuzzer) or with replay_main.c (any compiler), which runs it over the seed
 * corpus and the regression inputs. */
#ifndef TK_FUZZ_COMMON_H
#define TK_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#ifdef __cplusplus
extern "C" {
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A broken invariant: print why (to file descriptor 2, whatever stderr points at) and
 * abort, which libFuzzer reports as a crash (and saves the input) and the replay test
 * as a failure. */
void tk_fuzz_fail(const char *file, int line, const char *cond, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5), noreturn))
#endif
    ;
#define TK_FUZZ_CHECK(cond, ...)                                       \
    do {                                                                \
        if (!(cond)) tk_fuzz_fail(__FILE__, __LINE__, #cond, __VA_ARGS__); \
    } while (0)

/* This process's scratch directory (under $TMPDIR, else /tmp), made on first use and
 * removed with its files at exit. */
const char *tk_fuzz_scratch_dir(void);
/* scratch/name as a new string (free()). */
char *tk_fuzz_scratch_path(const char *name);
/* Write bytes to path (replacing it); aborts if the scratch file cannot be written,
 * which is the harness's failure, not the parser's. */
void tk_fuzz_write_file(const char *path, const void *data, size_t size);

/* The input as a command line: argv[0] is program, then come the input's NUL-separated
 * strings (at most max_args - 1 of them; the rest are dropped) and argv[argc] = NULL, so argv
 * holds max_args + 1 pointers.  The strings lie in a copy of the input, *text, which the
 * caller frees (free()).  Returns argc. */
int tk_fuzz_command_line(const uint8_t *data, size_t size, const char *program, int max_args, char **argv,
                         char **text);

/* Read a whole file (replay driver); NULL on failure. */
unsigned char *tk_fuzz_read_file(const char *path, size_t *size);

#ifdef __cplusplus
}
#endif
#endif
