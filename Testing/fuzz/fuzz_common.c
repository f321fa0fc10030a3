/* Scratch files and command lines of the fuzz targets (see fuzz_common.h). */
#define _XOPEN_SOURCE 700
#include "fuzz_common.h"

#include <ftw.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char scratch[4096];

void tk_fuzz_fail(const char *file, int line, const char *cond, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    dprintf(2, "%s:%d: fuzz invariant failed: %s: ", file, line, cond);
    vdprintf(2, fmt, args);
    dprintf(2, "\n");
    va_end(args);
    abort();
}

/* The scratch tree and everything the targets wrote into it. */
static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    if (flag == FTW_DP) rmdir(path);
    else unlink(path);
    return 0;
}

static void remove_scratch(void)
{
    if (scratch[0]) nftw(scratch, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

const char *tk_fuzz_scratch_dir(void)
{
    if (!scratch[0]) {
        const char *tmp = getenv("TMPDIR");
        snprintf(scratch, sizeof scratch, "%s/tk_fuzz_XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(scratch)) {
            perror("tk_fuzz_scratch_dir: mkdtemp");
            abort();
        }
        atexit(remove_scratch);
    }
    return scratch;
}

char *tk_fuzz_scratch_path(const char *name)
{
    const char *dir = tk_fuzz_scratch_dir();
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    if (!p) abort();
    snprintf(p, n, "%s/%s", dir, name);
    return p;
}

void tk_fuzz_write_file(const char *path, const void *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) {
        perror(path);
        abort();
    }
}

int tk_fuzz_command_line(const uint8_t *data, size_t size, const char *program, int max_args, char **argv,
                         char **text)
{
    char *copy = malloc(size + 1);
    if (!copy) abort();
    memcpy(copy, data, size);
    copy[size] = '\0';  /* the last string ends even where the input does not end in NUL */
    int argc = 0;
    argv[argc++] = (char *)program;  /* parsers take char **, as main does; none writes to it */
    for (char *p = copy; p < copy + size && argc < max_args; p += strlen(p) + 1) argv[argc++] = p;
    argv[argc] = NULL;
    *text = copy;
    return argc;
}

unsigned char *tk_fuzz_read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, len = 0;
    unsigned char *buf = malloc(cap);
    for (size_t got; buf && (got = fread(buf + len, 1, cap - len, f)) > 0;) {
        len += got;
        if (len == cap) {
            unsigned char *more = realloc(buf, cap *= 2);
            if (!more) free(buf);
            buf = more;
        }
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return NULL;
    }
    *size = len;
    return buf;
}
