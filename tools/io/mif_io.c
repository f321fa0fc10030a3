/* MRtrix3's .mif / .mif.gz / .mih: see mif_io.h for the format as read and written here
 * (after MRtrix3 3.0's core/formats/mrtrix*.cpp, mrtrix_utils and datatype.cpp). */
/* fseeko and off_t: without zlib.h (a build without zlib) nothing else declares them */
#define _FILE_OFFSET_BITS 64
#define _POSIX_C_SOURCE 200809L
#include "mif_io.h"

#include "gzip_check.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "tk_status.h"

#ifdef TK_HAVE_ZLIB
#include <zlib.h>
#endif

/* A header is text of a few kilobytes (dw_scheme tables make it longer): one longer than
 * this, or a line longer than the line limit, is no .mif header. */
#define MAX_HEADER_BYTES (16u << 20)
#define MAX_LINE_BYTES (1u << 20)

/* ---- reading bytes: stdio, or zlib (which reads uncompressed files as they are) ---- */

typedef struct source {
    FILE *f;
#ifdef TK_HAVE_ZLIB
    gzFile g;
#endif
    uint64_t pos; /* bytes consumed (of the uncompressed stream) */
} source;

static int src_open(source *s, const char *path)
{
    memset(s, 0, sizeof *s);
#ifdef TK_HAVE_ZLIB
    s->g = gzopen(path, "rb");
    if (!s->g) return 0;
    gzbuffer(s->g, 1 << 17);
    return 1;
#else
    s->f = fopen(path, "rb");
    return s->f != NULL;
#endif
}

static void src_close(source *s)
{
#ifdef TK_HAVE_ZLIB
    if (s->g) gzclose(s->g);
    s->g = NULL;
#endif
    if (s->f) fclose(s->f);
    s->f = NULL;
}

static int src_getc(source *s)
{
    int c;
#ifdef TK_HAVE_ZLIB
    c = gzgetc(s->g);
#else
    c = getc(s->f);
#endif
    if (c != EOF) ++s->pos;
    return c;
}

static int is_gzip_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    unsigned char magic[2] = {0, 0};
    const int gz = fread(magic, 1, 2, f) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
    fclose(f);
    return gz;
}

/* ---- small parsers ---------------------------------------------------------------------- */

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n') ++s;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n')) s[--n] = '\0';
    return s;
}

/* Splits value at commas into at most max trimmed tokens; the count, or -1 for more. */
static int split(char *value, char **tokens, int max)
{
    int n = 0;
    for (char *p = value;;) {
        char *comma = strchr(p, ',');
        if (comma) *comma = '\0';
        if (n == max) return -1;
        tokens[n++] = trim(p);
        if (!comma) break;
        p = comma + 1;
    }
    return n;
}

static int parse_size(const char *t, size_t *out)
{
    if (!*t) return 0;
    for (const char *p = t; *p; ++p)
        if (!isdigit((unsigned char)*p)) return 0;
    errno = 0;
    unsigned long long v = strtoull(t, NULL, 10);
    if (errno || v > (unsigned long long)SIZE_MAX) return 0;
    *out = (size_t)v;
    return 1;
}

static int parse_double(const char *t, double *out)
{
    if (!*t) return 0;
    char *end;
    errno = 0;
    double v = strtod(t, &end);
    if (*end || errno == ERANGE) return 0;
    *out = v;
    return 1;
}

static int parse_layout(const char *t, int *out)
{
    int sign = 1;
    if (*t == '+' || *t == '-') sign = *t++ == '-' ? -1 : 1;
    size_t rank;
    if (!parse_size(t, &rank) || rank >= TK_MIF_MAX_AXES) return 0;
    *out = sign * (int)(rank + 1);
    return 1;
}

static const struct {
    const char *name;
    tk_mif_type type;
    int endian; /* 0 little, 1 big, -1 this machine's */
} kTypes[] = {
    {"bit", TK_MIF_BIT, 0},           {"int8", TK_MIF_INT8, 0},         {"uint8", TK_MIF_UINT8, 0},
    {"int16", TK_MIF_INT16, -1},      {"int16le", TK_MIF_INT16, 0},     {"int16be", TK_MIF_INT16, 1},
    {"uint16", TK_MIF_UINT16, -1},    {"uint16le", TK_MIF_UINT16, 0},   {"uint16be", TK_MIF_UINT16, 1},
    {"int32", TK_MIF_INT32, -1},      {"int32le", TK_MIF_INT32, 0},     {"int32be", TK_MIF_INT32, 1},
    {"uint32", TK_MIF_UINT32, -1},    {"uint32le", TK_MIF_UINT32, 0},   {"uint32be", TK_MIF_UINT32, 1},
    {"int64", TK_MIF_INT64, -1},      {"int64le", TK_MIF_INT64, 0},     {"int64be", TK_MIF_INT64, 1},
    {"uint64", TK_MIF_UINT64, -1},    {"uint64le", TK_MIF_UINT64, 0},   {"uint64be", TK_MIF_UINT64, 1},
    {"float32", TK_MIF_FLOAT32, -1},  {"float32le", TK_MIF_FLOAT32, 0}, {"float32be", TK_MIF_FLOAT32, 1},
    {"float64", TK_MIF_FLOAT64, -1},  {"float64le", TK_MIF_FLOAT64, 0}, {"float64be", TK_MIF_FLOAT64, 1},
};

static int host_big_endian(void)
{
    const uint16_t one = 1;
    unsigned char b;
    memcpy(&b, &one, 1);
    return b == 0;
}

static size_t type_bytes(tk_mif_type t)
{
    switch (t) {
    case TK_MIF_BIT:
    case TK_MIF_INT8:
    case TK_MIF_UINT8: return 1;
    case TK_MIF_INT16:
    case TK_MIF_UINT16: return 2;
    case TK_MIF_INT32:
    case TK_MIF_UINT32:
    case TK_MIF_FLOAT32: return 4;
    default: return 8;
    }
}

/* ---- the header ------------------------------------------------------------------------- */

void tk_mif_header_init(tk_mif_header *h, int ndim, const size_t *dim)
{
    memset(h, 0, sizeof *h);
    h->ndim = ndim < 1 ? 1 : ndim > TK_MIF_MAX_AXES ? TK_MIF_MAX_AXES : ndim;
    for (int a = 0; a < h->ndim; ++a) {
        h->dim[a] = dim[a];
        h->vox[a] = 1;
        h->layout[a] = a + 1;
    }
    for (int r = 0; r < 3; ++r) h->transform[r][r] = 1;
    h->type = TK_MIF_FLOAT32;
    h->scale = 1;
}

size_t tk_mif_count(const tk_mif_header *h)
{
    size_t n = 1;
    for (int a = 0; a < h->ndim; ++a)
        if (h->dim[a] && n > SIZE_MAX / h->dim[a]) return 0;
        else n *= h->dim[a];
    return n;
}

/* Storage strides (elements) and the position of index (0, ..., 0) from h->layout. */
static void strides(const tk_mif_header *h, int64_t stride[TK_MIF_MAX_AXES], int64_t *start)
{
    *start = 0;
    for (int a = 0; a < h->ndim; ++a) {
        const int rank = abs(h->layout[a]) - 1;
        int64_t s = 1;
        for (int b = 0; b < h->ndim; ++b)
            if (abs(h->layout[b]) - 1 < rank) s *= (int64_t)h->dim[b];
        stride[a] = h->layout[a] > 0 ? s : -s;
        if (h->layout[a] < 0) *start += (int64_t)(h->dim[a] - 1) * s;
    }
}

/* The layout is a permutation of ranks 0..ndim-1 with signs: 1, else 0 and the problem. */
static int layout_ok(const tk_mif_header *h, char *why, size_t n)
{
    int seen[TK_MIF_MAX_AXES] = {0};
    for (int a = 0; a < h->ndim; ++a) {
        const int rank = abs(h->layout[a]) - 1;
        if (h->layout[a] == 0 || rank >= h->ndim) {
            snprintf(why, n, "layout: axis %d has rank %d, outside 0..%d", a, rank, h->ndim - 1);
            return 0;
        }
        if (seen[rank]++) {
            snprintf(why, n, "layout: rank %d is given to two axes", rank);
            return 0;
        }
    }
    return 1;
}

typedef struct parse_state {
    const char *path;
    int have_dim, have_vox, have_layout, have_type, have_scaling, have_file, nvox, rows;
    double vox[TK_MIF_MAX_AXES];
    char file_value[4200];
} parse_state;

/* What the user can do, the end of every refusal (the tools' messages: the file, what is
 * wrong, what to do). */
#define FIX "; fix the header, or re-save the image with MRtrix3 (mrconvert IN OUT.mif)"
#define DAMAGED "; copy or export the file again: it is damaged or incomplete"
#define NOT_MIF "; give an MRtrix3 image, or convert it to one (mrconvert IN OUT.mif)"

static int bad(const char *path, const char *fmt, const char *a, const char *b)
{
    char what[600];
    snprintf(what, sizeof what, fmt, a ? a : "", b ? b : "");
    return tk_set_error(TK_ERR_FORMAT, "%s: malformed .mif header: %s" FIX, path, what), 0;
}

/* a header that ends (or turns into data) before its END line: cut short, or no .mif */
static int cut(const char *path, const char *what)
{
    return tk_set_error(TK_ERR_FORMAT, "%s: malformed .mif header: %s%s", path, what,
                        strstr(what, "not a .mif") ? NOT_MIF : DAMAGED), 0;
}

/* The entries that list one value per axis (dim, vox, layout): how one value is parsed into
 * slot a of its array, and the refusals that name the entry. */
typedef struct list_kind {
    const char *twice, *too_many, *not_list;
    int (*parse_at)(const char *token, void *values, int a);
} list_kind;

static int dim_at(const char *t, void *values, int a)
{
    size_t *dim = values;
    return parse_size(t, &dim[a]) && dim[a] != 0;
}
static int vox_at(const char *t, void *values, int a) { return parse_double(t, (double *)values + a); }
static int layout_at(const char *t, void *values, int a) { return parse_layout(t, (int *)values + a); }

static const list_kind kDim = {"two 'dim' entries", "dim: more than 16 axes",
                               "dim: '%s' is not a list of sizes of 1 or more", dim_at};
static const list_kind kVox = {"two 'vox' entries", "vox: more than 16 values", "vox: '%s' is not a list of numbers",
                               vox_at};
static const list_kind kLayout = {"two 'layout' entries", "layout: more than 16 axes",
                                  "layout: '%s' is not a list of signed axis ranks (+0,+1,...)", layout_at};

/* A list entry of kind: given once (*seen counts), at most TK_MIF_MAX_AXES comma-separated
 * values, each parsed into values; their count, or -1 (message set, naming shown). */
static int list_entry(const parse_state *st, int *seen, const list_kind *kind, char *value, const char *shown,
                      void *values)
{
    char *tok[TK_MIF_MAX_AXES + 1];
    if ((*seen)++) return bad(st->path, kind->twice, NULL, NULL), -1;
    const int n = split(value, tok, TK_MIF_MAX_AXES);
    if (n < 0) return bad(st->path, kind->too_many, NULL, NULL), -1;
    for (int a = 0; a < n; ++a)
        if (!kind->parse_at(tok[a], values, a)) return bad(st->path, kind->not_list, shown, NULL), -1;
    return n;
}

/* One "key: value" entry; 0 (message set) when it is malformed. */
static int entry(parse_state *st, tk_mif_header *h, char *key, char *value)
{
    char *tok[TK_MIF_MAX_AXES + 1];
    char lkey[32];
    size_t k = 0;
    for (; key[k] && k + 1 < sizeof lkey; ++k) lkey[k] = (char)tolower((unsigned char)key[k]);
    lkey[k] = '\0';
    if (key[k]) return 1;  /* a long key is none of ours */
    const int required = !strcmp(lkey, "dim") || !strcmp(lkey, "vox") || !strcmp(lkey, "layout") ||
                         !strcmp(lkey, "datatype") || !strcmp(lkey, "transform") || !strcmp(lkey, "scaling") ||
                         !strcmp(lkey, "file");
    if (!required) return 1;  /* dw_scheme, command_history, comments, ...: not ours */
    if (!*value) return bad(st->path, "'%s:' has no value", key, NULL);
    char shown[64];
    snprintf(shown, sizeof shown, "%.60s", value);
    if (!strcmp(lkey, "dim")) {
        const int n = list_entry(st, &st->have_dim, &kDim, value, shown, h->dim);
        if (n < 0) return 0;
        h->ndim = n;
    } else if (!strcmp(lkey, "vox")) {
        const int n = list_entry(st, &st->have_vox, &kVox, value, shown, st->vox);
        if (n < 0) return 0;
        st->nvox = n;
    } else if (!strcmp(lkey, "layout")) {
        const int n = list_entry(st, &st->have_layout, &kLayout, value, shown, h->layout);
        if (n < 0) return 0;
        st->have_layout = n;  /* the count, checked against dim below */
    } else if (!strcmp(lkey, "datatype")) {
        if (st->have_type++) return bad(st->path, "two 'datatype' entries", NULL, NULL);
        for (size_t t = 0; t < sizeof kTypes / sizeof kTypes[0]; ++t)
            if (!strcasecmp(value, kTypes[t].name)) {
                h->type = kTypes[t].type;
                h->big_endian = kTypes[t].endian < 0 ? host_big_endian() : kTypes[t].endian;
                return 1;
            }
        if (!strncasecmp(value, "cfloat", 6))
            return tk_set_error(TK_ERR_UNSUPPORTED, "%s: complex data (datatype %s) is not supported; convert it to "
                                                    "real values (e.g. mrcalc IN -abs OUT.mif)", st->path, shown), 0;
        return bad(st->path, "datatype '%s' is none of Bit, Int8, UInt8, [U]Int16/32/64[LE|BE], Float32/64[LE|BE]",
                   shown, NULL);
    } else if (!strcmp(lkey, "transform")) {
        double row[4];
        const int n = split(value, tok, 4);
        if (n != 4) return bad(st->path, "transform: '%s' is not a row of 4 numbers", shown, NULL);
        for (int c = 0; c < 4; ++c)
            if (!parse_double(tok[c], &row[c]) || !isfinite(row[c]))
                return bad(st->path, "transform: '%s' is not a row of 4 finite numbers", shown, NULL);
        if (st->rows < 3) {
            memcpy(h->transform[st->rows], row, sizeof row);
        } else if (st->rows > 3 || row[0] != 0 || row[1] != 0 || row[2] != 0 || row[3] != 1) {
            return bad(st->path, "more than 3 'transform' rows (a 4th may only be 0,0,0,1)", NULL, NULL);
        }
        ++st->rows;
    } else if (!strcmp(lkey, "scaling")) {
        if (st->have_scaling++) return bad(st->path, "two 'scaling' entries", NULL, NULL);
        const int n = split(value, tok, 2);
        if (n != 2 || !parse_double(tok[0], &h->offset) || !parse_double(tok[1], &h->scale) || !isfinite(h->offset) ||
            !isfinite(h->scale))
            return bad(st->path, "scaling: '%s' is not 'offset,scale' (two finite numbers)", shown, NULL);
    } else {  /* file */
        if (st->have_file++)
            return tk_set_error(TK_ERR_UNSUPPORTED, "%s: the data are split over several files ('file' entries): "
                                "not supported; join them into one (mrconvert IN OUT.mif)", st->path), 0;
        snprintf(st->file_value, sizeof st->file_value, "%s", value);
    }
    return 1;
}

int tk_mif_read_header(const char *path, tk_mif_header *h)
{
    memset(h, 0, sizeof *h);
    h->scale = 1;
    struct stat sb;
    if (stat(path, &sb) != 0)
        return tk_set_error(TK_ERR_IO, "%s: cannot open: %s; check the name and that it is readable", path,
                            strerror(errno)), 0;
    if (S_ISDIR(sb.st_mode))
        return tk_set_error(TK_ERR_IO, "%s: is a directory, not an image; give an image file", path), 0;
    if (sb.st_size == 0) return tk_set_error(TK_ERR_FORMAT, "%s: empty file; copy or export the image again", path), 0;
    const int gz = is_gzip_file(path);
#ifndef TK_HAVE_ZLIB
    if (gz)
        return tk_set_error(TK_ERR_UNSUPPORTED,
                            "%s: gzip-compressed, and this build has no zlib; install zlib "
                            "(Debian: zlib1g-dev) and rebuild the tools, or decompress it",
                            path),
               0;
#endif
    source s;
    if (!src_open(&s, path))
        return tk_set_error(TK_ERR_IO, "%s: cannot open: %s; check the name and that it is readable", path,
                            strerror(errno)), 0;
    parse_state st;
    memset(&st, 0, sizeof st);
    st.path = path;
    char *line = malloc(MAX_LINE_BYTES + 1);
    if (!line) return src_close(&s), tk_set_error(TK_ERR_MEMORY, "%s: out of memory; free memory", path), 0;
    int ok = 0, lines = 0, ended = 0;
    for (;;) {
        size_t n = 0;
        int c;
        while ((c = src_getc(&s)) != EOF && c != '\n') {
            if (c == '\0') {
                cut(path, lines ? "binary data before the END line" : "not a .mif file (no 'mrtrix image' line)");
                goto done;
            }
            if (n == MAX_LINE_BYTES) {
                bad(path, "a line longer than 1 MiB", NULL, NULL);
                goto done;
            }
            line[n++] = (char)c;
        }
        line[n] = '\0';
        if (c == EOF && n == 0) break;
        if (s.pos > MAX_HEADER_BYTES) {
            cut(path, "no END line in the first 16 MiB");
            goto done;
        }
        if (lines++ == 0) {
            if (strcmp(trim(line), "mrtrix image")) {
                tk_set_error(TK_ERR_FORMAT, "%s: not a .mif file (the first line is not 'mrtrix image')" NOT_MIF, path);
                goto done;
            }
            continue;
        }
        char *hash = strchr(line, '#');
        if (hash) *hash = '\0';
        char *text = trim(line);
        if (!strcmp(text, "END")) {
            ended = 1;
            break;
        }
        if (!*text) continue;
        char *colon = strchr(text, ':');
        if (!colon) {
            char shown[64];
            snprintf(shown, sizeof shown, "%.60s", text);
            bad(path, "line '%s' is no 'key: value' entry", shown, NULL);
            goto done;
        }
        *colon = '\0';
        char *key = trim(text), *value = trim(colon + 1);
        if (!*key) {
            bad(path, "a line with no key before its ':'", NULL, NULL);
            goto done;
        }
        if (!entry(&st, h, key, value)) goto done;
    }
    /* a header on its own (.mih, its data in another file) may end without END */
    if (!ended && (!lines || !st.have_file || !strncmp(st.file_value, ". ", 2) || !strcmp(st.file_value, "."))) {
        cut(path, lines ? "no END line (the file ends in the header)" : "not a .mif file (no 'mrtrix image' line)");
        goto done;
    }
    {
        const uint64_t header_end = s.pos;
        const char *missing = !st.have_dim ? "dim" : !st.have_vox ? "vox" : !st.have_layout ? "layout"
                              : !st.have_type ? "datatype" : !st.have_file ? "file" : NULL;
        if (missing) {
            bad(path, "no '%s' entry", missing, NULL);
            goto done;
        }
        char a[32], b[32];
        if (st.have_layout != h->ndim) {
            snprintf(a, sizeof a, "%d", st.have_layout), snprintf(b, sizeof b, "%d", h->ndim);
            bad(path, "layout has %s entries for %s axes", a, b);
            goto done;
        }
        const int spatial = h->ndim < 3 ? h->ndim : 3;
        if (st.nvox < spatial || st.nvox > h->ndim) {
            snprintf(a, sizeof a, "%d", st.nvox), snprintf(b, sizeof b, "%d", h->ndim);
            bad(path, "vox has %s values for %s axes", a, b);
            goto done;
        }
        for (int i = 0; i < h->ndim; ++i) h->vox[i] = i < st.nvox ? st.vox[i] : NAN;
        for (int i = 0; i < spatial; ++i)
            if (!(isfinite(h->vox[i]) && h->vox[i] > 0)) {
                snprintf(a, sizeof a, "%d", i);
                bad(path, "vox: the size of spatial axis %s is not a positive number", a, NULL);
                goto done;
            }
        char why[128];
        if (!layout_ok(h, why, sizeof why)) {
            bad(path, "%s", why, NULL);
            goto done;
        }
        if (st.rows == 0) {  /* MRtrix3's default: axis-aligned, centred on the origin */
            for (int r = 0; r < 3; ++r) {
                h->transform[r][r] = 1;
                h->transform[r][3] = r < h->ndim ? -0.5 * (double)(h->dim[r] - 1) * h->vox[r] : 0;
            }
        } else if (st.rows < 3) {
            bad(path, "'transform' needs 3 rows", NULL, NULL);
            goto done;
        }
        /* MRtrix3 normalises the columns, scaling the voxel sizes to match */
        for (int c = 0; c < 3; ++c) {
            const double len = sqrt(h->transform[0][c] * h->transform[0][c] + h->transform[1][c] * h->transform[1][c] +
                                    h->transform[2][c] * h->transform[2][c]);
            if (!(len > 1e-12)) {
                snprintf(a, sizeof a, "%d", c);
                bad(path, "transform: column %s is zero (no orientation)", a, NULL);
                goto done;
            }
            if (fabs(len - 1) > 1e-6) {
                for (int r = 0; r < 3; ++r) h->transform[r][c] /= len;
                if (c < h->ndim) h->vox[c] *= len;
            }
        }
        /* where the data are */
        char name[4096] = "";
        char *fv = st.file_value, *space = fv;
        while (*space && *space != ' ' && *space != '\t') ++space;
        const size_t name_len = (size_t)(space - fv);
        if (name_len == 0 || name_len >= sizeof name) {
            bad(path, "file: '%s' names no data file", fv, NULL);
            goto done;
        }
        memcpy(name, fv, name_len);
        name[name_len] = '\0';
        char *rest = trim(space);
        size_t offset = 0;
        if (*rest && !parse_size(rest, &offset)) {
            bad(path, "file: the offset '%s' is not a whole number of bytes", rest, NULL);
            goto done;
        }
        h->data_offset = offset;
        h->gzip = gz;
        if (!strcmp(name, ".")) {
            if (offset < header_end) {
                snprintf(a, sizeof a, "%zu", offset), snprintf(b, sizeof b, "%llu", (unsigned long long)header_end);
                bad(path, "file: the data offset %s lies inside the header (which ends at byte %s)", a, b);
                goto done;
            }
            snprintf(h->data_path, sizeof h->data_path, "%s", path);
        } else {
            if (gz) {
                bad(path, "a compressed .mif must hold its data ('file: . OFFSET'), not name '%s'", name, NULL);
                goto done;
            }
            /* beside the header, unless absolute */
            const char *slash = strrchr(path, '/');
            const size_t dir = name[0] == '/' || !slash ? 0 : (size_t)(slash - path) + 1;
            if (dir + name_len >= sizeof h->data_path) {
                bad(path, "file: the data file's path is too long", NULL, NULL);
                goto done;
            }
            memcpy(h->data_path, path, dir);
            memcpy(h->data_path + dir, name, name_len + 1);
        }
        if (!tk_mif_count(h)) {
            bad(path, "dim: the number of values overflows", NULL, NULL);
            goto done;
        }
        ok = 1;
    }
done:
    free(line);
    src_close(&s);
    return ok;
}

/* ---- the data --------------------------------------------------------------------------- */

static double element(const unsigned char *raw, size_t i, tk_mif_type t, int swap)
{
    if (t == TK_MIF_BIT) return (raw[i / 8] >> (7 - i % 8)) & 1;  /* MSB first, as MRtrix3 */
    const size_t n = type_bytes(t);
    unsigned char b[8];
    const unsigned char *p = raw + i * n;
    for (size_t k = 0; k < n; ++k) b[k] = p[swap ? n - 1 - k : k];
    switch (t) {
    case TK_MIF_INT8: return (int8_t)b[0];
    case TK_MIF_UINT8: return b[0];
    case TK_MIF_INT16: { int16_t v; memcpy(&v, b, 2); return v; }
    case TK_MIF_UINT16: { uint16_t v; memcpy(&v, b, 2); return v; }
    case TK_MIF_INT32: { int32_t v; memcpy(&v, b, 4); return v; }
    case TK_MIF_UINT32: { uint32_t v; memcpy(&v, b, 4); return v; }
    case TK_MIF_INT64: { int64_t v; memcpy(&v, b, 8); return (double)v; }
    case TK_MIF_UINT64: { uint64_t v; memcpy(&v, b, 8); return (double)v; }
    case TK_MIF_FLOAT32: { float v; memcpy(&v, b, 4); return v; }
    default: { double v; memcpy(&v, b, 8); return v; }
    }
}

uint64_t tk_mif_data_bytes(const tk_mif_header *h)
{
    const size_t count = tk_mif_count(h);
    if (!count) return 0;
    if (h->type == TK_MIF_BIT) return (uint64_t)(count / 8 + (count % 8 != 0));
    const size_t esize = type_bytes(h->type);
    return count > SIZE_MAX / esize ? 0 : (uint64_t)(count * esize);
}

int tk_mif_check_data(const char *path, const tk_mif_header *h)
{
    const uint64_t bytes = tk_mif_data_bytes(h);
    if (!bytes) return tk_set_error(TK_ERR_FORMAT, "%s: the data size overflows" FIX, path), 0;
    if (h->gzip) {
        /* the whole stream: it ends (CRC and length checked), nothing follows it, and it holds
         * exactly header and data (gzread would take a stream cut short after the data, or
         * followed by junk, as good) */
        uint64_t expected;
        if (__builtin_add_overflow(h->data_offset, bytes, &expected))
            return tk_set_error(TK_ERR_FORMAT, "%s: the data offset plus the data's size overflows" FIX, path), 0;
        return tk_inflate_check(h->data_path, 0, TK_INFLATE_GZIP, expected, path, NULL, 0, NULL, NULL);
    }
    const int same = !strcmp(path, h->data_path);
    char subject[8400];
    if (same) snprintf(subject, sizeof subject, "%s", path);
    else snprintf(subject, sizeof subject, "%s: its data file %s", path, h->data_path);
    struct stat sb;
    if (stat(h->data_path, &sb) != 0)
        return tk_set_error(TK_ERR_IO, "%s: cannot open%s%s: %s; %s", path, same ? "" : " its data file ",
                            same ? "" : h->data_path, strerror(errno),
                            same ? "check the name and that it is readable"
                                 : "put it beside the header under that name, readable, or fix the header"), 0;
    if (!S_ISREG(sb.st_mode))
        return tk_set_error(TK_ERR_IO, "%s: not a regular file; give the header a data file", subject), 0;
    const uint64_t size = (uint64_t)sb.st_size;
    if (size < h->data_offset)
        return tk_set_error(TK_ERR_FORMAT,
                            "%s: truncated: the data should start at byte %llu, past the end of the %llu "
                            "bytes" DAMAGED,
                            subject, (unsigned long long)h->data_offset, (unsigned long long)size),
               0;
    const uint64_t held = size - h->data_offset;
    if (held < bytes)
        return tk_set_error(TK_ERR_FORMAT, "%s: truncated: the header claims %llu bytes of data at offset %llu, the "
                                           "file holds %llu" DAMAGED, subject, (unsigned long long)bytes,
                            (unsigned long long)h->data_offset, (unsigned long long)held), 0;
    if (held > bytes)
        return tk_set_error(TK_ERR_FORMAT,
                            "%s: %llu bytes after the data that the header does not account for (a "
                            "wrong dim or datatype?)" FIX,
                            subject, (unsigned long long)(held - bytes)),
               0;
    return 1;
}

/* A .mif.gz's data as the stream is checked: the inflated bytes from the data offset on,
 * in a buffer that grows with them (a header claiming more than the stream holds is
 * found out before all of it is allocated). */
typedef struct collected {
    const char *path;
    unsigned char *buf;
    uint64_t offset, bytes, have;
} collected;

static int collect(void *ctx, const unsigned char *piece, uint64_t n, uint64_t at)
{
    collected *c = ctx;
    if (at + n <= c->offset) return 1;  /* the header */
    const uint64_t skip = at < c->offset ? c->offset - at : 0, pos = at + skip - c->offset, len = n - skip;
    if (pos + len > c->have) {
        uint64_t want = c->have ? 2 * c->have : (64u << 20);
        if (want < pos + len) want = pos + len;
        if (want > c->bytes) want = c->bytes;
        unsigned char *grown = realloc(c->buf, (size_t)want);
        if (!grown)
            return tk_set_error(TK_ERR_MEMORY, "%s: out of memory for %llu bytes of data; free memory", c->path,
                                (unsigned long long)c->bytes), 0;
        c->buf = grown, c->have = want;
    }
    memcpy(c->buf + pos, piece + skip, (size_t)len);
    return 1;
}

/* The data file's bytes as the header claims them (checked whole before any use: the rule
 * of tk_mif_check_data); *raw_out malloc'ed. */
static int read_raw(const char *path, const tk_mif_header *h, unsigned char **raw_out)
{
    const size_t count = tk_mif_count(h);
    const uint64_t bytes = tk_mif_data_bytes(h);
    if (!count || !bytes) return tk_set_error(TK_ERR_FORMAT, "%s: the number of values overflows" FIX, path), 0;
    if (count > SIZE_MAX / sizeof(float))
        return tk_set_error(TK_ERR_MEMORY, "%s: the image is too large; read a smaller image", path), 0;
    unsigned char *raw = NULL;
    *raw_out = NULL;
    if (h->gzip) {
        /* one pass: the data kept as the whole stream is proven (tk_mif_check_data's rule) */
        uint64_t expected;
        if (__builtin_add_overflow(h->data_offset, bytes, &expected))
            return tk_set_error(TK_ERR_FORMAT, "%s: the data offset plus the data's size overflows" FIX, path), 0;
        collected c = {path, NULL, h->data_offset, bytes, 0};
        if (!tk_inflate_check_into(h->data_path, 0, TK_INFLATE_GZIP, expected, path, collect, &c, NULL)) {
            free(c.buf);
            return 0;
        }
        raw = c.buf;
    } else {
        /* exactly the bytes the header claims, checked before any allocation */
        if (!tk_mif_check_data(path, h)) return 0;
        FILE *f = fopen(h->data_path, "rb");
        if (!f)
            return tk_set_error(TK_ERR_IO, "%s: cannot open its data file %s: %s; check that it is readable", path,
                                h->data_path, strerror(errno)), 0;
        raw = malloc((size_t)bytes);
        const int got =
            raw && fseeko(f, (off_t)h->data_offset, SEEK_SET) == 0 && fread(raw, 1, (size_t)bytes, f) == bytes;
        fclose(f);
        if (!got) {
            const int oom = raw == NULL;
            free(raw);
            return oom ? (tk_set_error(TK_ERR_MEMORY, "%s: out of memory for %llu bytes of data; free memory", path,
                                       (unsigned long long)bytes),
                          0)
                       : (tk_set_error(TK_ERR_IO,
                                       "%s: the data could not be read (the file changed while it was read?); "
                                       "read it again once nothing writes it",
                                       path),
                          0);
        }
    }
    *raw_out = raw;
    return 1;
}

/* raw's values as float into out, in the axis order given (NULL: 0, 1, ...), scaling applied. */
static void convert(const tk_mif_header *h, const unsigned char *raw, const int *order, float *out)
{
    const size_t count = tk_mif_count(h);
    int64_t stride[TK_MIF_MAX_AXES], pos;
    strides(h, stride, &pos);
    size_t idx[TK_MIF_MAX_AXES] = {0};
    int axes[TK_MIF_MAX_AXES];
    for (int a = 0; a < h->ndim; ++a) axes[a] = order ? order[a] : a;
    const int swap = h->big_endian != host_big_endian(), plain = h->scale == 1 && h->offset == 0;
    /* float32 in the host's byte order, unscaled (what MRtrix3 writes for FODs): copied */
    const int as_is = h->type == TK_MIF_FLOAT32 && !swap && plain;
    for (size_t n = 0; n < count; ++n) {
        if (as_is) {
            memcpy(out + n, raw + (size_t)pos * sizeof(float), sizeof(float));
        } else {
            const double v = element(raw, (size_t)pos, h->type, swap);
            out[n] = plain ? (float)v : (float)(h->offset + h->scale * v);
        }
        for (int q = 0; q < h->ndim; ++q) {  /* the next index, axes[0] fastest */
            const int a = axes[q];
            pos += stride[a];
            if (++idx[a] < h->dim[a]) break;
            pos -= stride[a] * (int64_t)h->dim[a];
            idx[a] = 0;
        }
    }
}

int tk_mif_read_data(const char *path, const tk_mif_header *h, float **data)
{
    *data = NULL;
    unsigned char *raw;
    if (!read_raw(path, h, &raw)) return 0;
    const size_t count = tk_mif_count(h);
    float *out = malloc(count * sizeof(float));
    if (!out) {
        free(raw);
        return tk_set_error(TK_ERR_MEMORY, "%s: out of memory for %zu values; free memory", path, count), 0;
    }
    convert(h, raw, NULL, out);
    free(raw);
    *data = out;
    return 1;
}

int tk_mif_read_data_into(const char *path, const tk_mif_header *h, const int *order, float *out)
{
    unsigned char *raw;
    if (!read_raw(path, h, &raw)) return 0;
    convert(h, raw, order, out);
    free(raw);
    return 1;
}

/* ---- writing ---------------------------------------------------------------------------- */

typedef struct sink {
    FILE *f;
#ifdef TK_HAVE_ZLIB
    gzFile g;
#endif
    int ok;
} sink;

static void put(sink *o, const void *bytes, size_t n)
{
    if (!o->ok || n == 0) return;
#ifdef TK_HAVE_ZLIB
    if (o->g) {
        for (size_t done = 0; done < n && o->ok;) {
            const size_t chunk = n - done > (1u << 30) ? (1u << 30) : n - done;
            o->ok = gzwrite(o->g, (const char *)bytes + done, (unsigned)chunk) == (int)chunk;
            done += chunk;
        }
        return;
    }
#endif
    o->ok = fwrite(bytes, 1, n, o->f) == n;
}

int tk_mif_write(const char *path, const tk_mif_header *h, const float *data)
{
    char why[160];
    if (h->ndim < 1 || h->ndim > TK_MIF_MAX_AXES)
        return tk_set_error(TK_ERR_ARGUMENT, "%s: cannot write a .mif of %d axes", path, h->ndim), 0;
    if (!layout_ok(h, why, sizeof why)) return tk_set_error(TK_ERR_ARGUMENT, "%s: cannot write: %s", path, why), 0;
    for (int a = 0; a < h->ndim && a < 3; ++a)
        if (!(isfinite(h->vox[a]) && h->vox[a] > 0))
            return tk_set_error(TK_ERR_ARGUMENT, "%s: cannot write: voxel size %g along axis %d", path, h->vox[a], a),
                   0;
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 4; ++c)
            if (!isfinite(h->transform[r][c]))
                return tk_set_error(TK_ERR_ARGUMENT, "%s: cannot write: a non-finite transform", path), 0;
    const size_t count = tk_mif_count(h);
    if (!count || count > SIZE_MAX / sizeof(float))
        return tk_set_error(TK_ERR_ARGUMENT, "%s: cannot write: the image size overflows", path), 0;
#ifndef TK_HAVE_ZLIB
    if (h->gzip) return tk_set_error(TK_ERR_UNSUPPORTED, "%s: cannot write .mif.gz: this build has no zlib", path), 0;
#endif
    /* the header text, then "file: . OFFSET\nEND\n" padded to the data at a multiple of 16 */
    size_t cap = 1024 + (size_t)h->ndim * 96, len = 0;
    char *text = malloc(cap);
    if (!text) return tk_set_error(TK_ERR_MEMORY, "%s: out of memory", path), 0;
#define APPEND(...) (len += (size_t)snprintf(text + len, cap - len, __VA_ARGS__))
    APPEND("mrtrix image\ndim: ");
    for (int a = 0; a < h->ndim; ++a) APPEND("%s%zu", a ? "," : "", h->dim[a]);
    APPEND("\nvox: ");
    for (int a = 0; a < h->ndim; ++a) {
        if (isfinite(h->vox[a])) APPEND("%s%.17g", a ? "," : "", h->vox[a]);
        else APPEND("%snan", a ? "," : "");
    }
    APPEND("\nlayout: ");
    for (int a = 0; a < h->ndim; ++a)
        APPEND("%s%c%d", a ? "," : "", h->layout[a] > 0 ? '+' : '-', abs(h->layout[a]) - 1);
    APPEND("\ndatatype: Float32LE\n");
    for (int r = 0; r < 3; ++r)
        APPEND("transform: %.17g,%.17g,%.17g,%.17g\n", h->transform[r][0] + 0.0, h->transform[r][1] + 0.0,
               h->transform[r][2] + 0.0, h->transform[r][3] + 0.0);  /* + 0.0: no "-0" */
    size_t offset = len + 24;  /* "file: . " + up to 11 digits + "\nEND\n" */
    offset += (16 - offset % 16) % 16;
    APPEND("file: . %zu\nEND\n", offset);
#undef APPEND
    if (len > offset) {  /* cannot happen for offsets below 10^11 */
        free(text);
        return tk_set_error(TK_ERR_ARGUMENT, "%s: cannot write: header too long", path), 0;
    }
    memset(text + len, 0, offset - len);
    sink o;
    memset(&o, 0, sizeof o);
    o.ok = 1;
#ifdef TK_HAVE_ZLIB
    if (h->gzip) {
        o.g = gzopen(path, "wb6");
        if (!o.g) {
            free(text);
            return tk_set_error(TK_ERR_IO, "%s: cannot create: %s", path, strerror(errno)), 0;
        }
    } else
#endif
    {
        o.f = fopen(path, "wb");
        if (!o.f) {
            free(text);
            return tk_set_error(TK_ERR_IO, "%s: cannot create: %s", path, strerror(errno)), 0;
        }
    }
    put(&o, text, offset);
    free(text);
    if (host_big_endian()) {
        unsigned char b[4096];
        for (size_t i = 0; i < count && o.ok;) {
            size_t n = 0;
            for (; n < sizeof b / 4 && i < count; ++n, ++i) {
                unsigned char v[4];
                memcpy(v, &data[i], 4);
                for (int k = 0; k < 4; ++k) b[4 * n + (size_t)k] = v[3 - k];
            }
            put(&o, b, 4 * n);
        }
    } else {
        put(&o, data, count * sizeof(float));
    }
    int closed = 1;
#ifdef TK_HAVE_ZLIB
    if (o.g) closed = gzclose(o.g) == Z_OK;
#endif
    if (o.f) closed = fclose(o.f) == 0;
    if (!o.ok || !closed) return tk_set_error(TK_ERR_IO, "%s: write failed: %s", path, strerror(errno)), 0;
    return 1;
}

/* ---- tk-bench's exchange with sh2peaks -------------------------------------------------- */

int tk_mif_write_f32(const char *path, const size_t dim[4], const float *data)
{
    tk_mif_header h;
    tk_mif_header_init(&h, 4, dim);
    const int layout[4] = {2, 3, 4, 1};  /* +1,+2,+3,+0: a voxel's values together */
    memcpy(h.layout, layout, sizeof layout);
    return tk_mif_write(path, &h, data);
}

int tk_mif_read_f32(const char *path, size_t dim[4], float **data)
{
    *data = NULL;
    tk_mif_header h;
    if (!tk_mif_read_header(path, &h)) return 0;
    for (int a = 4; a < h.ndim; ++a)
        if (h.dim[a] != 1) return tk_set_error(TK_ERR_FORMAT, "%s: a %d-D image, expected 3-D or 4-D", path, h.ndim), 0;
    if (h.ndim < 3) return tk_set_error(TK_ERR_FORMAT, "%s: a %d-D image, expected 3-D or 4-D", path, h.ndim), 0;
    float *values;
    if (!tk_mif_read_data(path, &h, &values)) return 0;
    for (int a = 0; a < 3; ++a) dim[a] = h.dim[a];
    dim[3] = h.ndim > 3 ? h.dim[3] : 1;
    const size_t nvox = dim[0] * dim[1] * dim[2], nt = dim[3];
    float *out = malloc(nvox * nt * sizeof(float));
    if (!out) {
        free(values);
        return tk_set_error(TK_ERR_MEMORY, "%s: out of memory", path), 0;
    }
    for (size_t t = 0; t < nt; ++t)
        for (size_t v = 0; v < nvox; ++v) out[v * nt + t] = values[t * nvox + v];
    free(values);
    *data = out;
    return 1;
}
