/* FROSTT .tns text files (1-based indices, value last, '#' comments) and the
 * binary cache kept beside them for fast reloads. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tk_output_set.h"
#include "tucker_internal.h"

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

static tk_status grow(tk_tucker_coo *t, size_t *cap, size_t order)
{
    size_t ncap = *cap ? *cap * 2 : 4096;
    uint32_t *idx = realloc(t->idx, ncap * order * sizeof *idx);
    if (!idx) return TK_ERR_MEMORY;
    t->idx = idx;
    float *val = realloc(t->val, ncap * sizeof *val);
    if (!val) return TK_ERR_MEMORY;
    t->val = val;
    *cap = ncap;
    return TK_OK;
}

/* Parse the whole text image; line numbers are 1-based. */
static tk_status parse_tns(const char *path, const char *text, size_t size, int order, const uint32_t *dims_hint,
                           int values_optional, tk_tucker_coo *out)
{
    memset(out, 0, sizeof *out);
    size_t cap = 0, line = 0, nnz = 0;
    uint32_t dims[TK_TUCKER_MAX_ORDER] = {0};
    const char *p = text, *end = text + size;
    tk_status st = TK_OK;
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol) eol = end;
        ++line;
        const char *s = p;
        p = eol + 1;
        while (s < eol && is_space(*s)) ++s;
        if (s == eol || *s == '#') continue;
        /* Split into fields. */
        const char *field[TK_TUCKER_MAX_ORDER + 2];
        size_t len[TK_TUCKER_MAX_ORDER + 2];
        int nf = 0;
        while (s < eol) {
            if (nf == TK_TUCKER_MAX_ORDER + 2) {
                ++nf;
                break;
            }
            field[nf] = s;
            while (s < eol && !is_space(*s) && *s != '#') ++s;
            len[nf] = (size_t)(s - field[nf]);
            ++nf;
            while (s < eol && is_space(*s)) ++s;
            if (s < eol && *s == '#') break; /* trailing comment */
        }
        if (order == 0) {
            if (nf < 3 || nf > TK_TUCKER_MAX_ORDER + 1) {
                st = tk_set_error(TK_ERR_FORMAT, "%s:%zu: %d columns: expected 2..%d indices and a value; fix the line", path, line,
                                  nf, TK_TUCKER_MAX_ORDER);
                goto fail;
            }
            order = nf - 1;
        }
        int has_value = nf == order + 1;
        if (values_optional && nf == order) {
            has_value = 0;
        } else if (nf != order + 1) {
            st = tk_set_error(TK_ERR_FORMAT, "%s:%zu: %d columns where %d indices and a value (%d columns) were expected; fix the line (a file cut short: copy it again)",
                              path, line, nf, order, order + 1);
            if (values_optional)
                st = tk_set_error(TK_ERR_FORMAT, "%s:%zu: %d columns where %d indices (and optionally a value) were expected; fix the line",
                                  path, line, nf, order);
            goto fail;
        }
        if (nnz == cap && grow(out, &cap, (size_t)order) != TK_OK) {
            st = tk_set_error(TK_ERR_MEMORY, "%s:%zu: out of memory after %zu entries; free memory or split the file", path, line, nnz);
            goto fail;
        }
        char buf[64];
        if (!has_value) out->val[nnz] = 0;
        for (int k = 0; k < order + has_value; ++k) {
            if (len[k] >= sizeof buf) {
                st = tk_set_error(TK_ERR_FORMAT, "%s:%zu: column %d is too long to be a number; fix the line", path, line, k + 1);
                goto fail;
            }
            memcpy(buf, field[k], len[k]);
            buf[len[k]] = '\0';
            if (strlen(buf) != len[k]) { /* zero-filled blocks of a torn write must not read as numbers */
                st = tk_set_error(TK_ERR_FORMAT, "%s:%zu: column %d holds a NUL byte (a corrupt or binary file?); check that it is a text .tns file", path,
                                  line, k + 1);
                goto fail;
            }
            char *stop = NULL;
            errno = 0;
            if (k < order) {
                if (buf[0] == '-') {
                    st = tk_set_error(TK_ERR_FORMAT, "%s:%zu: index '%s' in column %d is negative (indices are 1-based); fix the line",
                                      path, line, buf, k + 1);
                    goto fail;
                }
                unsigned long long v = strtoull(buf, &stop, 10);
                if (stop == buf || *stop) {
                    st = tk_set_error(TK_ERR_FORMAT, "%s:%zu: index '%s' in column %d is not an integer; fix the line", path, line,
                                      buf, k + 1);
                    goto fail;
                }
                if (v == 0) {
                    st = tk_set_error(TK_ERR_FORMAT, "%s:%zu: index 0 in column %d (indices are 1-based); add 1 to every index of a 0-based file", path, line,
                                      k + 1);
                    goto fail;
                }
                if (errno || v > UINT32_MAX) {
                    st = tk_set_error(TK_ERR_FORMAT, "%s:%zu: index '%s' in column %d is larger than %u; fix the line", path, line,
                                      buf, k + 1, UINT32_MAX);
                    goto fail;
                }
                out->idx[nnz * (size_t)order + (size_t)k] = (uint32_t)(v - 1);
                if (v > dims[k]) dims[k] = (uint32_t)v;
            } else {
                double v = strtod(buf, &stop);
                if (stop == buf || *stop) {
                    st = tk_set_error(TK_ERR_FORMAT, "%s:%zu: value '%s' is not a number; fix the line", path, line, buf);
                    goto fail;
                }
                if (!isfinite(v) || !isfinite((float)v)) {
                    st = tk_set_error(TK_ERR_DATA, "%s:%zu: value '%s' is not finite in single precision; fix or remove the entry", path, line, buf);
                    goto fail;
                }
                out->val[nnz] = (float)v;
            }
        }
        ++nnz;
    }
    if (order == 0) {
        st = tk_set_error(TK_ERR_FORMAT, "%s: no entries (only comments or blank lines); give a file of entries 'i j k value'", path);
        goto fail;
    }
    out->order = order;
    out->nnz = nnz;
    for (int n = 0; n < order; ++n) out->dims[n] = dims_hint && dims_hint[n] > dims[n] ? dims_hint[n] : dims[n];
    return TK_OK;
fail:
    tk_tucker_coo_free(out);
    return st;
}

static tk_status slurp(const char *path, char **text, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f) return tk_set_error(TK_ERR_IO, "%s: cannot open: %s; check the name and that it is readable", path, strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(f);
        return tk_set_error(TK_ERR_IO, "%s: not a regular file; give a .tns file", path);
    }
    *size = (size_t)st.st_size;
    *text = malloc(*size + 1);
    if (!*text) {
        fclose(f);
        return tk_set_error(TK_ERR_MEMORY, "%s: cannot hold %zu bytes in memory; free memory or split the file", path, *size);
    }
    size_t got = fread(*text, 1, *size, f);
    fclose(f);
    if (got != *size) {
        free(*text);
        return tk_set_error(TK_ERR_IO, "%s: short read (%zu of %zu bytes); read it again once nothing writes it", path, got, *size);
    }
    return TK_OK;
}

/* The entries of a .tns file (queries: index lines, values optional); order 0, for
 * entries files only, takes the order from the file. */
static tk_status read_tns(const char *path, int order, const uint32_t *dims_hint, int queries, tk_tucker_coo *out)
{
    memset(out, 0, sizeof *out);
    const int order_known = order != 0 || queries;
    if (order_known && (order < 2 || order > TK_TUCKER_MAX_ORDER))
        return tk_set_error(TK_ERR_ARGUMENT, "order %d is outside 2..%d", order, TK_TUCKER_MAX_ORDER);
    char *text = NULL;
    size_t size = 0;
    tk_status st = slurp(path, &text, &size);
    if (st != TK_OK) return st;
    st = parse_tns(path, text, size, order, dims_hint, queries, out);
    free(text);
    return st;
}

tk_status tk_tns_read(const char *path, int order, const uint32_t *dims_hint, tk_tucker_coo *out)
{
    return read_tns(path, order, dims_hint, 0, out);
}

tk_status tk_tns_read_queries(const char *path, int order, tk_tucker_coo *out)
{
    return read_tns(path, order, NULL, 1, out);
}

/* ---- binary cache ---------------------------------------------------------------- */

#define CACHE_MAGIC "TKTNSC01"

typedef struct cache_header {
    char magic[8];
    uint64_t text_size;
    int64_t mtime_sec, mtime_nsec;
    uint32_t order, pad;
    uint32_t dims[TK_TUCKER_MAX_ORDER];
    uint64_t nnz;
} cache_header;

static void text_stamp(const struct stat *st, cache_header *h)
{
    h->text_size = (uint64_t)st->st_size;
    h->mtime_sec = (int64_t)st->st_mtim.tv_sec;
    h->mtime_nsec = (int64_t)st->st_mtim.tv_nsec;
}

static int read_cache(const char *cache, const cache_header *want, int order, tk_tucker_coo *out)
{
    FILE *f = fopen(cache, "rb");
    if (!f) return 0;
    cache_header h;
    int ok = fread(&h, sizeof h, 1, f) == 1 && !memcmp(h.magic, CACHE_MAGIC, 8) && h.text_size == want->text_size &&
             h.mtime_sec == want->mtime_sec && h.mtime_nsec == want->mtime_nsec && h.order >= 2 &&
             h.order <= TK_TUCKER_MAX_ORDER && (order == 0 || (uint32_t)order == h.order);
    if (ok) {
        /* The entries must fill the rest of the file exactly; divided, not multiplied, so
         * that no entry count wraps the product into a match. */
        struct stat st;
        const uint64_t entry = (uint64_t)h.order * sizeof(uint32_t) + sizeof(float);
        ok = fstat(fileno(f), &st) == 0 && (uint64_t)st.st_size >= sizeof h &&
             ((uint64_t)st.st_size - sizeof h) % entry == 0 && ((uint64_t)st.st_size - sizeof h) / entry == h.nnz;
    }
    if (ok) ok = tk_tucker_coo_alloc(out, (int)h.order, h.dims, (size_t)h.nnz) == TK_OK;
    if (ok) {
        ok = fread(out->idx, sizeof(uint32_t) * h.order, (size_t)h.nnz, f) == h.nnz &&
             fread(out->val, sizeof(float), (size_t)h.nnz, f) == h.nnz;
        if (ok) ok = tk_tucker_coo_check(out, cache) == TK_OK;
        if (!ok) tk_tucker_coo_free(out);
    }
    fclose(f);
    tk_clear_error();
    return ok;
}

/* The cache is a convenience: written through a quiet one-output set (no temporary left by
 * a signal or a killed run), and any failure just means no cache. */
static void write_cache(const char *cache, cache_header h, const tk_tucker_coo *t)
{
    memcpy(h.magic, CACHE_MAGIC, 8);
    h.order = (uint32_t)t->order;
    memcpy(h.dims, t->dims, sizeof h.dims);
    h.nnz = t->nnz;
    tk_outset *set = tk_outset_new(NULL);
    if (!set) return;
    const int idx = tk_outset_add(set, NULL, cache, NULL);
    const int fd = idx >= 0 ? tk_outset_open(set, idx, 0) : -1;
    int ok = fd >= 0 && !tk_write_all(fd, &h, sizeof h) &&
             !tk_write_all(fd, t->idx, sizeof(uint32_t) * (size_t)t->order * t->nnz) &&
             !tk_write_all(fd, t->val, sizeof(float) * t->nnz);
    if (fd >= 0 && close(fd) != 0) ok = 0;
    if (ok) tk_outset_commit(set);
    tk_outset_free(set);
}

tk_status tk_tns_read_cached(const char *path, int order, tk_tucker_coo *out, int *from_cache)
{
    if (from_cache) *from_cache = 0;
    struct stat st;
    if (stat(path, &st) != 0)
        return tk_set_error(TK_ERR_IO, "%s: cannot open: %s; check the name and that it is readable", path, strerror(errno));
    size_t n = strlen(path);
    char *cache = malloc(n + 5);
    if (!cache) return tk_set_error(TK_ERR_MEMORY, "out of memory");
    memcpy(cache, path, n);
    memcpy(cache + n, ".tkc", 5);
    cache_header h;
    memset(&h, 0, sizeof h);
    text_stamp(&st, &h);
    if (read_cache(cache, &h, order, out)) {
        if (from_cache) *from_cache = 1;
        free(cache);
        return TK_OK;
    }
    tk_status s = tk_tns_read(path, order, NULL, out);
    if (s == TK_OK) write_cache(cache, h, out);
    free(cache);
    return s;
}

tk_status tk_tns_write_file(FILE *f, const char *name, const tk_tucker_coo *t)
{
    char *buffer = malloc(1 << 20); /* large writes; per call, so threads may write concurrently */
    if (buffer) setvbuf(f, buffer, _IOFBF, 1 << 20);
    int ok = 1;
    errno = 0;
    for (size_t e = 0; e < t->nnz && ok; ++e) {
        const uint32_t *ix = t->idx + e * (size_t)t->order;
        for (int k = 0; k < t->order; ++k) ok = ok && fprintf(f, "%u ", ix[k] + 1) > 0;
        ok = ok && fprintf(f, "%.9g\n", (double)t->val[e]) > 0;
    }
    ok = fflush(f) == 0 && ok && !ferror(f);
    const int err = errno ? errno : EIO;
    setvbuf(f, NULL, _IONBF, 0); /* the buffer goes now; nothing is left in it */
    free(buffer);
    if (!ok)
        return tk_set_error(TK_ERR_IO, "%s: cannot write: %s; %s", name, strerror(err), tk_write_advice(err));
    return TK_OK;
}

tk_status tk_tns_write(const char *path, const tk_tucker_coo *t)
{
    /* Through a one-output set: a private temporary, checked, synced and renamed. */
    tk_outset *set = tk_outset_new(NULL);
    if (!set) return tk_set_error(TK_ERR_MEMORY, "out of memory");
    const int idx = tk_outset_add(set, NULL, path, NULL);
    const int fd = idx >= 0 ? tk_outset_open(set, idx, 0) : -1;
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    tk_status st = TK_ERR_IO; /* the set's message, where it failed */
    if (fd >= 0 && !f) {
        st = tk_set_error(TK_ERR_IO, "%s: cannot create: %s; check the folder and run again", path, strerror(errno));
        close(fd);
    } else if (f) {
        st = tk_tns_write_file(f, path, t);
        if (fclose(f) != 0 && st == TK_OK)
            st = tk_set_error(TK_ERR_IO, "%s: cannot write: %s; %s", path, strerror(errno), tk_write_advice(errno));
        if (st == TK_OK && tk_outset_commit(set) != 0) st = TK_ERR_IO;
    }
    tk_outset_free(set);
    return st;
}
