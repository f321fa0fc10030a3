/* NumPy .npy reader and writer (format 1.0, 2.0, 3.0), shared by every tool. */
#define _POSIX_C_SOURCE 200809L
#include "tk_npy.h"
#include "tk_output_set.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TK_NPY_MAX_HEADER 65536

static const struct {
    const char *code; /* the descr without its byte-order character */
    tk_npy_dtype dtype;
    size_t size;
    const char *name;
} dtypes[] = {
    {"f4", TK_NPY_FLOAT32, 4, "float32"},   {"f8", TK_NPY_FLOAT64, 8, "float64"},
    {"c8", TK_NPY_COMPLEX64, 8, "complex64"}, {"c16", TK_NPY_COMPLEX128, 16, "complex128"},
    {"i1", TK_NPY_INT8, 1, "int8"},         {"u1", TK_NPY_UINT8, 1, "uint8"},
    {"i4", TK_NPY_INT32, 4, "int32"},       {"i8", TK_NPY_INT64, 8, "int64"},
    /* NumPy bool (masks) reads as uint8 0/1; written back it is uint8. */
    {"b1", TK_NPY_UINT8, 1, "uint8"},
};
#define NUM_DTYPES (sizeof dtypes / sizeof dtypes[0])

size_t tk_npy_dtype_size(tk_npy_dtype d)
{
    for (size_t i = 0; i < NUM_DTYPES; ++i)
        if (dtypes[i].dtype == d) return dtypes[i].size;
    return 0;
}

const char *tk_npy_dtype_name(tk_npy_dtype d)
{
    for (size_t i = 0; i < NUM_DTYPES; ++i)
        if (dtypes[i].dtype == d) return dtypes[i].name;
    return "unknown";
}

void tk_npy_free(tk_npy_array *a)
{
    if (!a) return;
    free(a->data);
    memset(a, 0, sizeof *a);
}

/* ---- header dictionary ------------------------------------------------------ */

typedef struct {
    const char *p, *end, *name;
} cursor;

static void skip_space(cursor *c)
{
    while (c->p < c->end && isspace((unsigned char)*c->p)) ++c->p;
}

static int accept(cursor *c, char ch)
{
    skip_space(c);
    if (c->p < c->end && *c->p == ch) {
        ++c->p;
        return 1;
    }
    return 0;
}

/* A quoted Python string into buf; 0 on failure. */
static int parse_string(cursor *c, char *buf, size_t cap)
{
    skip_space(c);
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"')) return 0;
    char quote = *c->p++;
    size_t len = 0;
    while (c->p < c->end && *c->p != quote) {
        /* a NUL would end the C string early: 'descr\0junk' must not read as 'descr' */
        if (len + 1 >= cap || *c->p == '\0') return 0;
        buf[len++] = *c->p++;
    }
    if (c->p >= c->end) return 0;
    ++c->p;
    buf[len] = '\0';
    return 1;
}

static tk_status header_error(const cursor *c, const char *what)
{
    return tk_set_error(TK_ERR_FORMAT, "%s: malformed .npy header: %s; save the array again with numpy.save", c->name,
                        what);
}

static tk_status parse_header(cursor *c, tk_npy_array *out, int *big_endian)
{
    int have_descr = 0, have_order = 0, have_shape = 0;
    if (!accept(c, '{')) return header_error(c, "expected '{'");
    for (;;) {
        char key[32], value[32];
        if (accept(c, '}')) break;
        if (!parse_string(c, key, sizeof key)) return header_error(c, "expected a quoted key");
        if (!accept(c, ':')) return header_error(c, "expected ':' after a key");
        if (!strcmp(key, "descr")) {
            if (!parse_string(c, value, sizeof value))
                return header_error(c, "'descr' must be a simple dtype string (structured dtypes are not supported)");
            char order = value[0];
            if (order != '<' && order != '>' && order != '|' && order != '=')
                return tk_set_error(TK_ERR_FORMAT, "%s: unsupported dtype '%s'; save the array again with numpy.save", c->name, value);
            size_t i = 0;
            while (i < NUM_DTYPES && strcmp(dtypes[i].code, value + 1)) ++i;
            if (i == NUM_DTYPES)
                return tk_set_error(TK_ERR_FORMAT,
                                    "%s: unsupported dtype '%s' (expected float32, float64, complex64, complex128, "
                                    "int8, uint8, int32 or int64); convert the array (numpy's astype) and save it "
                                    "again",
                                    c->name, value);
            out->dtype = dtypes[i].dtype;
            *big_endian = order == '>';
            have_descr = 1;
        } else if (!strcmp(key, "fortran_order")) {
            skip_space(c);
            if (c->end - c->p >= 5 && !strncmp(c->p, "False", 5)) {
                c->p += 5;
            } else if (c->end - c->p >= 4 && !strncmp(c->p, "True", 4)) {
                return tk_set_error(TK_ERR_FORMAT, "%s: Fortran-order arrays are not supported; save it in C order "
                                    "(numpy.ascontiguousarray)",
                                    c->name);
            } else {
                return header_error(c, "'fortran_order' must be True or False");
            }
            have_order = 1;
        } else if (!strcmp(key, "shape")) {
            if (!accept(c, '(')) return header_error(c, "'shape' must be a tuple");
            out->ndim = 0;
            out->count = 1;
            while (!accept(c, ')')) {
                skip_space(c);
                if (c->p >= c->end || !isdigit((unsigned char)*c->p))
                    return header_error(c, "shape entries must be non-negative integers");
                size_t v = 0;
                while (c->p < c->end && isdigit((unsigned char)*c->p)) {
                    unsigned digit = (unsigned)(*c->p++ - '0');
                    if (v > (SIZE_MAX - digit) / 10) return header_error(c, "a shape entry overflows");
                    v = v * 10 + digit;
                }
                if (c->p < c->end && (*c->p == 'L' || *c->p == 'l')) ++c->p; /* Python 2 longs */
                if (out->ndim == TK_NPY_MAX_DIMS) return header_error(c, "too many dimensions");
                out->shape[out->ndim++] = v;
                if (v && out->count > SIZE_MAX / v)
                    return tk_set_error(TK_ERR_FORMAT, "%s: shape's element count overflows (a damaged header); save the array again "
                                           "with numpy.save", c->name);
                out->count *= v;
                if (!accept(c, ',')) {
                    if (!accept(c, ')')) return header_error(c, "expected ',' or ')' in shape");
                    break;
                }
            }
            have_shape = 1;
        } else {
            return tk_set_error(TK_ERR_FORMAT, "%s: malformed .npy header: unknown key '%s'", c->name, key);
        }
        if (!accept(c, ',')) {
            if (!accept(c, '}')) return header_error(c, "expected ',' or '}'");
            break;
        }
    }
    if (!have_descr || !have_order || !have_shape)
        return header_error(c, "it needs 'descr', 'fortran_order' and 'shape'");
    return TK_OK;
}

static void swap_bytes(void *data, size_t count, size_t item, tk_npy_dtype dtype)
{
    /* complex values swap per real component */
    size_t word = (dtype == TK_NPY_COMPLEX64 || dtype == TK_NPY_COMPLEX128) ? item / 2 : item;
    size_t words = count * (item / word);
    unsigned char *b = data;
    for (size_t w = 0; w < words; ++w, b += word)
        for (size_t i = 0; i < word / 2; ++i) {
            unsigned char t = b[i];
            b[i] = b[word - 1 - i];
            b[word - 1 - i] = t;
        }
}

/* Parse the preamble; *header_end is the offset of the data. */
static tk_status parse_preamble(const unsigned char *bytes, size_t size, const char *name, tk_npy_array *out,
                                int *big_endian, size_t *header_end)
{
    if (size < 10 || memcmp(bytes, "\x93NUMPY", 6))
        return tk_set_error(TK_ERR_FORMAT, "%s: not a .npy file (missing the \\x93NUMPY magic); give an array saved with numpy.save", name);
    unsigned major = bytes[6];
    size_t len, start;
    if (major == 1) {
        len = (size_t)bytes[8] | (size_t)bytes[9] << 8;
        start = 10;
    } else if (major == 2 || major == 3) {
        if (size < 12) return tk_set_error(TK_ERR_FORMAT, "%s: truncated .npy header; copy or save the file again", name);
        len = (size_t)bytes[8] | (size_t)bytes[9] << 8 | (size_t)bytes[10] << 16 | (size_t)bytes[11] << 24;
        start = 12;
    } else {
        return tk_set_error(TK_ERR_FORMAT, "%s: unsupported .npy format version %u.%u; save it with numpy.save (versions 1 to 3)", name,
                            major, bytes[7]);
    }
    /* numpy's own loader stops at 10 KB (max_header_size); 64 KiB is what tk_npy_read
     * reads ahead, so both entry points accept the same files. */
    if (len > TK_NPY_MAX_HEADER)
        return tk_set_error(TK_ERR_FORMAT, "%s: .npy header of %zu bytes, longer than the %d supported", name, len,
                            TK_NPY_MAX_HEADER);
    if (len > size - start)
        return tk_set_error(TK_ERR_FORMAT, "%s: truncated .npy header; copy or save the file again", name);
    cursor c = {(const char *)bytes + start, (const char *)bytes + start + len, name};
    memset(out, 0, sizeof *out);
    tk_status s = parse_header(&c, out, big_endian);
    if (s != TK_OK) return s;
    *header_end = start + len;
    return TK_OK;
}

static tk_status check_data_size(const tk_npy_array *a, size_t available, const char *name)
{
    size_t item = tk_npy_dtype_size(a->dtype);
    /* As numpy does: the non-zero axes too must multiply (times the item size) to an
     * addressable size, so that no product of axes a reader forms can wrap, even for an
     * array with no elements. */
    size_t span = item;
    for (int d = 0; d < a->ndim; ++d)
        if (a->shape[d] && span > SIZE_MAX / a->shape[d])
            return tk_set_error(TK_ERR_FORMAT, "%s: shape's axes multiply to more than %zu bytes, too many to address (a damaged "
                                "header); save the array again with numpy.save",
                                name, (size_t)SIZE_MAX);
        else if (a->shape[d])
            span *= a->shape[d];
    size_t need = a->count * item;
    if (need > available)
        return tk_set_error(TK_ERR_FORMAT, "%s: truncated: the header claims %zu bytes of data but the file holds %zu; copy or save the "
                            "file again",
                            name, need, available);
    if (need < available)
        return tk_set_error(TK_ERR_FORMAT, "%s: %zu unexpected bytes after the data (a damaged or concatenated file); save the "
                            "array again with numpy.save", name, available - need);
    return TK_OK;
}

tk_status tk_npy_parse(const void *bytes_in, size_t size, const char *name, tk_npy_array *out)
{
    const unsigned char *bytes = bytes_in;
    int big = 0;
    size_t start = 0;
    tk_status s = parse_preamble(bytes, size, name, out, &big, &start);
    if (s == TK_OK) s = check_data_size(out, size - start, name);
    if (s != TK_OK) {
        memset(out, 0, sizeof *out);
        return s;
    }
    size_t need = out->count * tk_npy_dtype_size(out->dtype);
    out->data = malloc(need ? need : 1);
    if (!out->data) return tk_set_error(TK_ERR_MEMORY, "%s: out of memory for %zu bytes; free memory, or split the array", name, need);
    memcpy(out->data, bytes + start, need);
    if (big) swap_bytes(out->data, out->count, tk_npy_dtype_size(out->dtype), out->dtype);
    return TK_OK;
}

/* "PATH: cannot open: REASON; what to do". */
static tk_status open_error(const char *path, int err)
{
    return tk_set_error(TK_ERR_IO, "%s: cannot open: %s; %s", path, strerror(err),
                        err == ENOENT || err == ENOTDIR ? "check the name and the folder"
                        : err == EACCES || err == EPERM ? "check the file's permissions"
                                                        : "check the file");
}

tk_status tk_npy_read(const char *path, tk_npy_array *out)
{
    memset(out, 0, sizeof *out);
    struct stat st;
    if (stat(path, &st) != 0) return open_error(path, errno);
    if (S_ISDIR(st.st_mode)) return tk_set_error(TK_ERR_IO, "%s: is a directory, not a .npy file; give a .npy file", path);
    FILE *f = fopen(path, "rb");
    if (!f) return open_error(path, errno);
    /* Read the preamble alone first, so that an absurd shape fails before any allocation. */
    unsigned char head[TK_NPY_MAX_HEADER + 12];
    size_t got = fread(head, 1, sizeof head, f);
    if (ferror(f)) {
        fclose(f);
        return tk_set_error(TK_ERR_IO, "%s: read error; check the disk, or copy the file again", path);
    }
    if (got == 0) {
        fclose(f);
        return tk_set_error(TK_ERR_FORMAT, "%s: empty file; give an array saved with numpy.save", path);
    }
    int big = 0;
    size_t start = 0;
    tk_status s = parse_preamble(head, got, path, out, &big, &start);
    if (s == TK_OK && S_ISREG(st.st_mode)) s = check_data_size(out, (size_t)st.st_size - start, path);
    if (s != TK_OK) {
        fclose(f);
        memset(out, 0, sizeof *out);
        return s;
    }
    size_t need = out->count * tk_npy_dtype_size(out->dtype);
    out->data = malloc(need ? need : 1);
    if (!out->data) {
        fclose(f);
        memset(out, 0, sizeof *out);
        return tk_set_error(TK_ERR_MEMORY, "%s: out of memory for %zu bytes of data; free memory, or split the array", path, need);
    }
    size_t from_head = got - start < need ? got - start : need;
    memcpy(out->data, head + start, from_head);
    size_t rest = fread((unsigned char *)out->data + from_head, 1, need - from_head, f);
    int extra = fgetc(f) != EOF;
    fclose(f);
    if (from_head + rest != need || extra || got - start > need) {
        tk_npy_free(out);
        return tk_set_error(TK_ERR_FORMAT, "%s: the file changed size while being read; wait until it is written, and run again",
                            path);
    }
    if (big) swap_bytes(out->data, out->count, tk_npy_dtype_size(out->dtype), out->dtype);
    return TK_OK;
}

static const char *dtype_code(tk_npy_dtype d)
{
    for (size_t i = 0; i < NUM_DTYPES; ++i)
        if (dtypes[i].dtype == d) return dtypes[i].code;
    return NULL;
}

/* The file's bytes to an open fd, every write checked (a full disk is an error). */
tk_status tk_npy_write_fd(int fd, const char *name, tk_npy_dtype dtype, int ndim, const size_t *shape, const void *data)
{
    const char *code = dtype_code(dtype);
    if (!code || ndim < 0 || ndim > TK_NPY_MAX_DIMS)
        return tk_set_error(TK_ERR_ARGUMENT, "%s: cannot write dtype %d with %d dimensions; report this as a bug", name,
                            (int)dtype, ndim);
    char head[1024 + 64];
    const size_t preamble = 10;
    char *dict = head + preamble;
    const size_t room = sizeof head - preamble - 64;
    int len = snprintf(dict, room, "{'descr': '%c%s', 'fortran_order': False, 'shape': (",
                       dtype == TK_NPY_INT8 || dtype == TK_NPY_UINT8 ? '|' : '<', code);
    size_t count = 1;
    for (int i = 0; i < ndim; ++i) {
        len += snprintf(dict + len, room - (size_t)len, "%zu%s", shape[i], ndim == 1 ? "," : (i + 1 < ndim ? ", " : ""));
        count *= shape[i];
    }
    len += snprintf(dict + len, room - (size_t)len, "), }");
    /* Pad with spaces and a newline so the data starts on a 64-byte boundary. */
    const size_t total = preamble + (size_t)len + 1, padded = (total + 63) / 64 * 64, header_len = padded - preamble;
    const unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(header_len & 0xff),
                                   (unsigned char)(header_len >> 8)};
    memcpy(head, pre, sizeof pre);
    memset(head + preamble + len, ' ', padded - 1 - preamble - (size_t)len);
    head[padded - 1] = '\n';
    int err = tk_write_all(fd, head, padded);
    const size_t bytes = count * tk_npy_dtype_size(dtype);
    if (!err && bytes) err = tk_write_all(fd, data, bytes);
    if (err)
        return tk_set_error(TK_ERR_IO, "%s: cannot write: %s; %s", name, strerror(err), tk_write_advice(err));
    return TK_OK;
}

tk_status tk_npy_write(const char *path, tk_npy_dtype dtype, int ndim, const size_t *shape, const void *data)
{
    /* One output through the output set: a private temporary, checked writes, fsync, rename. */
    tk_outset *set = tk_outset_new(NULL);
    if (!set) return tk_set_error(TK_ERR_MEMORY, "%s: out of memory; free memory and run again", path);
    tk_status s = TK_OK;
    int idx = tk_outset_add(set, NULL, path, NULL);
    int fd = idx >= 0 ? tk_outset_open(set, idx, 0) : -1;
    if (fd < 0) s = TK_ERR_IO; /* the set's message is tk_last_error() */
    if (s == TK_OK) {
        s = tk_npy_write_fd(fd, path, dtype, ndim, shape, data);
        int err = tk_fsync_close(fd);
        if (s == TK_OK && err)
            s = tk_set_error(TK_ERR_IO, "%s: cannot write: %s; %s", path, strerror(err), tk_write_advice(err));
    }
    if (s == TK_OK && tk_outset_commit(set) != 0) s = TK_ERR_IO;
    tk_outset_free(set);
    return s;
}
