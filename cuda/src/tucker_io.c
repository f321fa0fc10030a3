/* Model directories: .npy factor and core matrices plus a manifest, replaced
 * as a whole by one atomic directory swap. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tk_npy.h"
#include "tucker_internal.h"

static char *join(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s/%s", dir, name);
    return p;
}

static int has_manifest(const char *dir)
{
    char *p = join(dir, "manifest.txt");
    struct stat st;
    int ok = p && stat(p, &st) == 0 && S_ISREG(st.st_mode);
    free(p);
    return ok;
}

/* Remove a model directory we wrote: our files only, then the directory. */
static void remove_model_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *n = e->d_name;
        size_t len = strlen(n);
        int ours = !strcmp(n, "manifest.txt") ||
                   ((n[0] == 'A' || n[0] == 'B') && len > 4 && !strcmp(n + len - 4, ".npy"));
        if (ours) {
            char *p = join(dir, n);
            if (p) unlink(p);
            free(p);
        }
    }
    closedir(d);
    rmdir(dir);
}

/* Leftovers of saves killed mid-way (DIR.tmpPID of a process that is gone). */
static void remove_stale_temporaries(const char *dir)
{
    const char *slash = strrchr(dir, '/');
    size_t plen = slash ? (size_t)(slash - dir) : 0;
    char *parent = malloc(plen + 2);
    if (!parent) return;
    if (slash) {
        memcpy(parent, dir, plen ? plen : 1);
        parent[plen ? plen : 1] = '\0';
    } else {
        strcpy(parent, ".");
    }
    const char *base = slash ? slash + 1 : dir;
    size_t blen = strlen(base);
    DIR *d = opendir(parent);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        const char *n = e->d_name;
        if (strncmp(n, base, blen) || strncmp(n + blen, ".tmp", 4)) continue;
        char *end = NULL;
        long pid = strtol(n + blen + 4, &end, 10);
        if (end == n + blen + 4 || *end || pid <= 0 || pid == (long)getpid()) continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue; /* still running */
        char *p = join(parent, n);
        if (p) remove_model_dir(p);
        free(p);
    }
    if (d) closedir(d);
    free(parent);
}

static tk_status write_manifest(const char *path, const tk_tucker_model *m, const char *extra)
{
    FILE *f = fopen(path, "w");
    if (!f) return tk_set_error(TK_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
    fprintf(f, "format = tk-tucker-model 1\norder = %d\ndims = ", m->order);
    for (int n = 0; n < m->order; ++n) fprintf(f, "%s%u", n ? "," : "", m->dims[n]);
    fprintf(f, "\nrank_j = %d\nrank_r = %d\n", m->rank_j, m->rank_r);
    if (extra) fputs(extra, f);
    int bad = ferror(f);
    if (fsync(fileno(f)) != 0) bad = 1;
    if (fclose(f) != 0 || bad) return tk_set_error(TK_ERR_IO, "%s: write failed", path);
    return TK_OK;
}

tk_status tk_tucker_model_save(const char *dir, const tk_tucker_model *m, const char *extra_manifest)
{
    struct stat st;
    int exists = stat(dir, &st) == 0;
    if (exists && (!S_ISDIR(st.st_mode) || !has_manifest(dir))) {
        DIR *d = S_ISDIR(st.st_mode) ? opendir(dir) : NULL;
        int empty = 0;
        if (d) {
            struct dirent *e;
            empty = 1;
            while ((e = readdir(d)))
                if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) empty = 0;
            closedir(d);
        }
        if (!empty)
            return tk_set_error(TK_ERR_IO, "%s exists and is not a tk-tucker model directory (no manifest.txt): "
                                           "refusing to replace it", dir);
        rmdir(dir);
        exists = 0;
    }
    size_t n = strlen(dir);
    char *tmp = malloc(n + 32);
    if (!tmp) return tk_set_error(TK_ERR_MEMORY, "out of memory");
    snprintf(tmp, n + 32, "%s.tmp%ld", dir, (long)getpid());
    remove_stale_temporaries(dir);
    remove_model_dir(tmp);
    if (mkdir(tmp, 0777) != 0) {
        tk_status s = tk_set_error(TK_ERR_IO, "%s: cannot create: %s", dir, strerror(errno));
        free(tmp);
        return s;
    }
    tk_status s = TK_OK;
    for (int k = 0; k < m->order && s == TK_OK; ++k) {
        char name[32];
        size_t shape_a[2] = {m->dims[k], (size_t)m->rank_j}, shape_b[2] = {(size_t)m->rank_j, (size_t)m->rank_r};
        snprintf(name, sizeof name, "A%d.npy", k + 1);
        char *p = join(tmp, name);
        s = p ? tk_npy_write(p, TK_NPY_FLOAT32, 2, shape_a, m->a[k]) : TK_ERR_MEMORY;
        free(p);
        if (s != TK_OK) break;
        snprintf(name, sizeof name, "B%d.npy", k + 1);
        p = join(tmp, name);
        s = p ? tk_npy_write(p, TK_NPY_FLOAT32, 2, shape_b, m->b[k]) : TK_ERR_MEMORY;
        free(p);
    }
    if (s == TK_OK) {
        char *p = join(tmp, "manifest.txt");
        s = p ? write_manifest(p, m, extra_manifest) : TK_ERR_MEMORY;
        free(p);
    }
    if (s == TK_OK) {
        /* The commit: one atomic exchange (or a plain rename for a new directory). */
        if (exists) {
            if (renameat2(AT_FDCWD, tmp, AT_FDCWD, dir, RENAME_EXCHANGE) != 0)
                s = tk_set_error(TK_ERR_IO, "%s: cannot swap in the new model: %s", dir, strerror(errno));
        } else if (rename(tmp, dir) != 0) {
            s = tk_set_error(TK_ERR_IO, "%s: cannot move the new model into place: %s", dir, strerror(errno));
        }
    }
    remove_model_dir(tmp); /* the old model after a swap, or the failed new one */
    free(tmp);
    return s;
}

int tk_tucker_manifest_get(const char *manifest, const char *key, char *out, size_t size)
{
    size_t klen = strlen(key);
    for (const char *line = manifest; line && *line;) {
        const char *eol = strchr(line, '\n');
        size_t len = eol ? (size_t)(eol - line) : strlen(line);
        if (len > klen && !strncmp(line, key, klen) && (line[klen] == ' ' || line[klen] == '=')) {
            const char *v = line + klen;
            while (v < line + len && (*v == ' ' || *v == '=')) ++v;
            size_t vlen = (size_t)(line + len - v);
            if (vlen >= size) vlen = size - 1;
            memcpy(out, v, vlen);
            out[vlen] = '\0';
            return 1;
        }
        line = eol ? eol + 1 : NULL;
    }
    return 0;
}

/* DIR/name as a float32 matrix of the manifest's shape with finite entries; checked before
 * the model is allocated, so a manifest claiming absurd sizes costs nothing. */
static tk_status read_matrix(const char *dir, const char *name, size_t rows, size_t cols, tk_npy_array *a)
{
    memset(a, 0, sizeof *a);
    char *p = join(dir, name);
    if (!p) return tk_set_error(TK_ERR_MEMORY, "out of memory");
    tk_status s = tk_npy_read(p, a);
    if (s == TK_OK && (a->dtype != TK_NPY_FLOAT32 || a->ndim != 2 || a->shape[0] != rows || a->shape[1] != cols)) {
        char shape[96] = "";
        int len = 0;
        for (int d = 0; d < a->ndim && len < 64; ++d)
            len += snprintf(shape + len, sizeof shape - (size_t)len, "%s%zu", d ? ", " : "", a->shape[d]);
        s = tk_set_error(TK_ERR_FORMAT, "%s: holds %s (%s), but the manifest says float32 (%zu, %zu)", p,
                         tk_npy_dtype_name(a->dtype), shape, rows, cols);
    }
    for (size_t k = 0; s == TK_OK && k < rows * cols; ++k) {
        const float v = ((const float *)a->data)[k];
        if (v != v || v - v != 0)
            s = tk_set_error(TK_ERR_DATA, "%s: non-finite entry (NaN or Inf) at row %zu, column %zu", p, k / cols,
                             k % cols);
    }
    if (s != TK_OK) tk_npy_free(a);
    free(p);
    return s;
}

/* Blanks a hand-edited manifest may leave at the end of a value (a CR among them). */
static const char *skip_blanks(const char *c)
{
    while (*c == ' ' || *c == '\t' || *c == '\r') ++c;
    return c;
}

/* A manifest integer: the whole value, else -1 (every count here is positive). */
static long manifest_long(const char *v)
{
    char *end = NULL;
    errno = 0;
    long x = strtol(v, &end, 10);
    return end == v || errno || *skip_blanks(end) ? -1 : x;
}

tk_status tk_tucker_model_load(const char *dir, tk_tucker_model *m, char **manifest)
{
    memset(m, 0, sizeof *m);
    if (manifest) *manifest = NULL;
    char *p = join(dir, "manifest.txt");
    if (!p) return tk_set_error(TK_ERR_MEMORY, "out of memory");
    FILE *f = fopen(p, "rb");
    if (!f) {
        tk_status s = tk_set_error(TK_ERR_IO, "%s: not a model directory (cannot open manifest.txt: %s)", dir,
                                   strerror(errno));
        free(p);
        return s;
    }
    char *text = calloc(1, 65537);
    size_t got = text ? fread(text, 1, 65536, f) : 0;
    fclose(f);
    tk_status s = TK_OK;
    char v[4096];
    long order = 0, rj = 0, rr = 0;
    uint32_t dims[TK_TUCKER_MAX_ORDER] = {0};
    if (!text || !got || !tk_tucker_manifest_get(text, "format", v, sizeof v) || strcmp(v, "tk-tucker-model 1")) {
        s = tk_set_error(TK_ERR_FORMAT, "%s: not a tk-tucker model manifest", p);
        goto done;
    }
    if (!tk_tucker_manifest_get(text, "order", v, sizeof v) || (order = manifest_long(v)) < 3 ||
        order > TK_TUCKER_MAX_ORDER || !tk_tucker_manifest_get(text, "rank_j", v, sizeof v) ||
        (rj = manifest_long(v)) < TK_TUCKER_MIN_RANK || rj > TK_TUCKER_MAX_RANK ||
        !tk_tucker_manifest_get(text, "rank_r", v, sizeof v) || (rr = manifest_long(v)) < TK_TUCKER_MIN_RANK ||
        rr > TK_TUCKER_MAX_RANK || !tk_tucker_manifest_get(text, "dims", v, sizeof v)) {
        s = tk_set_error(TK_ERR_FORMAT, "%s: order (3..%d), dims, rank_j or rank_r (%d..%d) missing or invalid", p,
                         TK_TUCKER_MAX_ORDER, TK_TUCKER_MIN_RANK, TK_TUCKER_MAX_RANK);
        goto done;
    }
    {
        char *c = v;
        for (long k = 0; k < order; ++k) {
            char *end = NULL;
            unsigned long d = strtoul(c, &end, 10);
            if (end == c || d == 0 || d > UINT32_MAX || (k + 1 < order ? *end != ',' : *skip_blanks(end) != '\0')) {
                s = tk_set_error(TK_ERR_FORMAT, "%s: dims '%s' do not list %ld sizes", p, v, order);
                goto done;
            }
            dims[k] = (uint32_t)d;
            c = end + 1;
        }
    }
    {
        tk_npy_array arrays[2 * TK_TUCKER_MAX_ORDER];
        memset(arrays, 0, sizeof arrays);
        for (int k = 0; k < order && s == TK_OK; ++k) {
            char name[32];
            snprintf(name, sizeof name, "A%d.npy", k + 1);
            s = read_matrix(dir, name, dims[k], (size_t)rj, &arrays[2 * k]);
            if (s != TK_OK) break;
            snprintf(name, sizeof name, "B%d.npy", k + 1);
            s = read_matrix(dir, name, (size_t)rj, (size_t)rr, &arrays[2 * k + 1]);
        }
        if (s == TK_OK) s = tk_tucker_model_alloc(m, (int)order, dims, (int)rj, (int)rr);
        for (int k = 0; k < order && s == TK_OK; ++k) {
            memcpy(m->a[k], arrays[2 * k].data, (size_t)dims[k] * (size_t)rj * sizeof(float));
            memcpy(m->b[k], arrays[2 * k + 1].data, (size_t)rj * (size_t)rr * sizeof(float));
        }
        for (int k = 0; k < 2 * order; ++k) tk_npy_free(&arrays[k]);
    }
done:
    free(p);
    if (s != TK_OK) {
        tk_tucker_model_free(m);
        free(text);
    } else if (manifest) {
        *manifest = text;
    } else {
        free(text);
    }
    return s;
}
