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
#include "tk_output_set.h"
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

/* The names a model directory of ours holds: manifest.txt, A<k>.npy and B<k>.npy.  Anything
 * else in the folder (a user's notes) is theirs and is kept when the model is replaced. */
static int model_file(const char *n)
{
    if (!strcmp(n, "manifest.txt")) return 1;
    if (n[0] != 'A' && n[0] != 'B') return 0;
    char *end = NULL;
    long k = strtol(n + 1, &end, 10);
    return end != n + 1 && k >= 1 && k <= TK_TUCKER_MAX_ORDER && !strcmp(end, ".npy");
}

static int write_matrix(tk_outset *set, int idx, int k, const char *name, size_t rows, size_t cols, const float *data)
{
    const size_t shape[2] = {rows, cols};
    int fd = tk_outset_open(set, idx, k);
    if (fd < 0) return 0;
    tk_status s = tk_npy_write_fd(fd, name, TK_NPY_FLOAT32, 2, shape, data);
    if (close(fd) == 0 || s != TK_OK) return s == TK_OK;
    const int err = errno;
    tk_set_error(TK_ERR_IO, "%s: cannot write: %s; %s", name, strerror(err), tk_write_advice(err));
    return 0;
}

int tk_tucker_model_register(tk_outset *set, const char *flag, const char *dir, int order)
{
    struct stat st;
    if (stat(dir, &st) == 0 && (!S_ISDIR(st.st_mode) || !has_manifest(dir))) {
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
            return -tk_outset_fail(set, 1, "%s%s%s exists and is not a tk-tucker model directory (no manifest.txt): "
                                           "refusing to replace it; give a new or empty folder", flag ? flag : "",
                                   flag ? " " : "", dir);
    }
    if (order < 1 || order > TK_TUCKER_MAX_ORDER)
        return -tk_outset_fail(set, 1, "%s: a model of order %d cannot be saved", dir, order);
    /* The whole model written into a temporary folder beside dir, then swapped in at once
     * (tk_output_set.h), so that a run killed at any moment leaves the old model or the new
     * one, and files of the user's in dir stay. */
    char names[2 * TK_TUCKER_MAX_ORDER + 1][16];
    const char *list[2 * TK_TUCKER_MAX_ORDER + 2];
    int n = 0;
    for (int k = 0; k < order; ++k) {
        snprintf(names[n], sizeof names[n], "A%d.npy", k + 1);
        list[n] = names[n], ++n;
        snprintf(names[n], sizeof names[n], "B%d.npy", k + 1);
        list[n] = names[n], ++n;
    }
    snprintf(names[n], sizeof names[n], "manifest.txt");
    list[n] = names[n], ++n;
    list[n] = NULL;
    return tk_outset_add_folder(set, flag, dir, list, model_file);
}

tk_status tk_tucker_model_write(tk_outset *set, int idx, const tk_tucker_model *m, const char *extra_manifest)
{
    const char *dir = tk_outset_path(set, idx); /* dir/A1.npy: the folder is what comes before the last '/' */
    const char *slash = dir ? strrchr(dir, '/') : NULL;
    const int dlen = slash ? (int)(slash - dir) : 0;
    int ok = dir != NULL;
    for (int k = 0; ok && k < m->order; ++k) {
        char name[4096];
        snprintf(name, sizeof name, "%.*s/A%d.npy", dlen, dir, k + 1);
        ok = write_matrix(set, idx, 2 * k, name, m->dims[k], (size_t)m->rank_j, m->a[k]);
        snprintf(name, sizeof name, "%.*s/B%d.npy", dlen, dir, k + 1);
        ok = ok && write_matrix(set, idx, 2 * k + 1, name, (size_t)m->rank_j, (size_t)m->rank_r, m->b[k]);
    }
    if (ok) {
        char head[512];
        int len = snprintf(head, sizeof head, "format = tk-tucker-model 1\norder = %d\ndims = ", m->order);
        for (int k = 0; k < m->order; ++k) len += snprintf(head + len, sizeof head - (size_t)len, "%s%u", k ? "," : "", m->dims[k]);
        len += snprintf(head + len, sizeof head - (size_t)len, "\nrank_j = %d\nrank_r = %d\n", m->rank_j, m->rank_r);
        int fd = tk_outset_open(set, idx, 2 * m->order);
        int err = fd < 0 ? EIO : tk_write_all(fd, head, (size_t)len);
        if (!err && extra_manifest) err = tk_write_all(fd, extra_manifest, strlen(extra_manifest));
        if (fd >= 0 && close(fd) != 0 && !err) err = errno;
        if (fd >= 0 && err)
            tk_set_error(TK_ERR_IO, "%.*s/manifest.txt: cannot write: %s; %s", dlen, dir, strerror(err),
                         tk_write_advice(err));
        ok = !err;
    }
    return ok ? TK_OK : TK_ERR_IO; /* tk_last_error() says why */
}

tk_status tk_tucker_model_save(const char *dir, const tk_tucker_model *m, const char *extra_manifest)
{
    tk_outset *set = tk_outset_new(NULL);
    if (!set) return tk_set_error(TK_ERR_MEMORY, "out of memory");
    const int idx = tk_tucker_model_register(set, NULL, dir, m->order);
    tk_status s = idx < 0 ? TK_ERR_IO : tk_tucker_model_write(set, idx, m, extra_manifest);
    if (s == TK_OK && tk_outset_commit(set) != 0) s = TK_ERR_IO;
    tk_outset_free(set);
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
            /* a manifest saved with CRLF line ends (an editor on Windows) or trailing blanks
             * means the same values */
            while (vlen && (v[vlen - 1] == '\r' || v[vlen - 1] == ' ' || v[vlen - 1] == '\t')) --vlen;
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
        s = tk_set_error(TK_ERR_FORMAT, "%s: holds %s (%s), but the manifest says float32 (%zu, %zu); train the model again, or copy its folder again", p,
                         tk_npy_dtype_name(a->dtype), shape, rows, cols);
    }
    for (size_t k = 0; s == TK_OK && k < rows * cols; ++k) {
        const float v = ((const float *)a->data)[k];
        if (v != v || v - v != 0)
            s = tk_set_error(TK_ERR_DATA, "%s: non-finite entry (NaN or Inf) at row %zu, column %zu; train the model again", p, k / cols,
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
        tk_status s = tk_set_error(TK_ERR_IO, "%s: not a model directory (cannot open manifest.txt: %s); give the folder tk-tucker train --out wrote", dir,
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
        s = tk_set_error(TK_ERR_FORMAT, "%s: not a tk-tucker model manifest; give the folder tk-tucker train --out wrote", p);
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
