/* Replays a fuzz target's inputs without libFuzzer: every regular file of every directory
 * (or file) named on the command line goes through LLVMFuzzerTestOneInput once, in name
 * order.  A broken invariant aborts (TK_FUZZ_CHECK); a sanitizer build reports memory
 * errors.  Missing directories are fine (a target may have no regressions yet). */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_common.h"

/* libFuzzer's optional set-up hook; weak, so targets without one link. */
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int replay_file(const char *path)
{
    size_t size = 0;
    unsigned char *data = tk_fuzz_read_file(path, &size);
    if (!data) {
        fprintf(stderr, "replay: cannot read %s\n", path);
        return 0;
    }
    fprintf(stderr, "replay: %s (%zu bytes)\n", path, size);
    /* an exact-size copy, so that ASan catches a read one past the end */
    unsigned char *copy = malloc(size ? size : 1);
    if (!copy) abort();
    memcpy(copy, data, size);
    free(data);
    LLVMFuzzerTestOneInput(copy, size);
    free(copy);
    return 1;
}

int main(int argc, char **argv)
{
    if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
    size_t replayed = 0;
    for (int a = 1; a < argc; ++a) {
        struct stat st;
        if (stat(argv[a], &st) != 0) continue;
        if (!S_ISDIR(st.st_mode)) {
            if (!replay_file(argv[a])) return 1;
            ++replayed;
            continue;
        }
        DIR *d = opendir(argv[a]);
        if (!d) {
            fprintf(stderr, "replay: cannot open %s\n", argv[a]);
            return 1;
        }
        char **names = NULL;
        size_t n = 0, cap = 0;
        for (struct dirent *e; (e = readdir(d));) {
            if (e->d_name[0] == '.') continue; /* ., .., .gitkeep */
            if (n == cap && !(names = realloc(names, (cap = cap ? 2 * cap : 64) * sizeof *names))) abort();
            if (!(names[n++] = strdup(e->d_name))) abort();
        }
        closedir(d);
        qsort(names, n, sizeof *names, by_name);
        for (size_t i = 0; i < n; ++i) {
            size_t len = strlen(argv[a]) + strlen(names[i]) + 2;
            char *path = malloc(len);
            if (!path) abort();
            snprintf(path, len, "%s/%s", argv[a], names[i]);
            struct stat fst;
            int regular = stat(path, &fst) == 0 && S_ISREG(fst.st_mode);
            int ok = regular ? replay_file(path) : 1;
            replayed += regular != 0;
            free(path);
            free(names[i]);
            if (!ok) return 1;
        }
        free(names);
    }
    printf("replayed %zu inputs\n", replayed);
    return 0;
}
