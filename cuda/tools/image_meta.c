/* MetaImage (.mha, .mhd) checks before MetaIO (inside ITK) reads the file (image_probe.h).
 * MetaIO 5.2 takes records "Key = Value" up to ElementDataFile, but reads what it does not
 * expect in ways that crash: a ':' for '=' or a junk line shifts what it takes as
 * ElementDataFile into its printf-style numbered-file patterns (SIGSEGV, SIGFPE), NDims
 * -5 makes it loop, keys are copied into fixed buffers.  So every record here must be
 * "Key = Value" (key: letters, digits, '_'; value at most 255 bytes), each key once,
 * NDims 1 to TK_IMAGE_MAX_AXES before the per-axis records, ElementDataFile the last
 * record and LOCAL or one file name (no LIST, no patterns: missing slices cannot be
 * noticed there), binary data, and the data exactly what the header claims (raw, or one
 * zlib/gzip stream inflating completely). */
#define _FILE_OFFSET_BITS 64
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gzip_check.h"
#include "image_probe.h"
#include "tk_status.h"

enum { HEADER_CAP = 1 << 16, VALUE_MAX = 255 };

static unsigned type_bytes(const char *t)
{
    static const struct { const char *name; unsigned bytes; } types[] = {
        {"MET_CHAR", 1}, {"MET_UCHAR", 1}, {"MET_SHORT", 2}, {"MET_USHORT", 2}, {"MET_INT", 4}, {"MET_UINT", 4},
        {"MET_LONG_LONG", 8}, {"MET_ULONG_LONG", 8}, {"MET_FLOAT", 4}, {"MET_DOUBLE", 8}, {NULL, 0}};
    for (int k = 0; types[k].name; ++k)
        if (!strcmp(t, types[k].name)) return types[k].bytes;
    return 0;
}

static int is_bool(const char *v) { return !strcmp(v, "True") || !strcmp(v, "False") || !strcmp(v, "true") || !strcmp(v, "false") || !strcmp(v, "1") || !strcmp(v, "0"); }
static int is_true(const char *v) { return !strcmp(v, "True") || !strcmp(v, "true") || !strcmp(v, "1"); }

/* count finite numbers below 1e6 in magnitude (positive where positive), as a record of
 * the geometry needs */
static int numbers(const char *path, const char *key, const char *value, int count, int positive)
{
    char copy[VALUE_MAX + 1], *tok[64];
    snprintf(copy, sizeof copy, "%s", value);
    const int n = tk_image_split(copy, " \t", tok, 63);
    if (n != count)
        return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage %s holds %d values, NDims needs %d", path, key,
                            n > 63 ? 64 : n, count), 0;
    for (int k = 0; k < n; ++k) {
        double v;
        if (!tk_image_parse_double(tok[k], &v) || !(fabs(v) < 1e6) || (positive && !(v > 0)))
            return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage %s: '%.40s' is not a %snumber below 1e6", path, key,
                                tok[k], positive ? "positive " : "finite "), 0;
    }
    return 1;
}

static int check(const char *path, tk_image_info *info, char *text)
{
    const size_t n = tk_image_read_prefix(path, text, HEADER_CAP);
    text[n] = 0;
    static const char *const per_axis[] = {"DimSize", "ElementSpacing", "ElementSize", "Offset", "Position", "Origin",
                                           "CenterOfRotation", "TransformMatrix", "Rotation", "Orientation", NULL};
    char keys[64][64];
    int nkeys = 0, ndims = 0, line_no = 0, compressed = 0, have_type = 0, have_file = 0;
    uint64_t sizes[TK_IMAGE_MAX_AXES] = {0}, channels = 1, compressed_size = 0;
    int64_t header_size = 0;
    unsigned bytes_per = 0;
    char data_file[VALUE_MAX + 1] = "";
    size_t pos = 0;
    while (!have_file) {
        if (pos >= n)
            return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage header without ElementDataFile (its last record)%s", path,
                                n == HEADER_CAP ? " in its first 64 KiB" : ""), 0;
        const char *nl = memchr(text + pos, '\n', n - pos);
        const size_t len = nl ? (size_t)(nl - (text + pos)) : n - pos;
        char line[VALUE_MAX + 128];
        ++line_no;
        if (len >= sizeof line)
            return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage header line %d is longer than %zu bytes", path, line_no,
                                sizeof line - 1), 0;
        memcpy(line, text + pos, len);
        line[len] = 0;
        pos += len + 1;
        size_t end = len;
        while (end && (line[end - 1] == '\r' || line[end - 1] == ' ' || line[end - 1] == '\t')) line[--end] = 0;
        if (memchr(line, 0, len) && strlen(line) != end)
            return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage header line %d holds a NUL byte", path, line_no), 0;
        size_t k = 0;
        while (line[k] == ' ' || line[k] == '\t') ++k;
        if (!line[k]) continue;  /* blank lines: MetaIO skips them */
        const size_t key_at = k;
        while ((line[k] >= 'A' && line[k] <= 'Z') || (line[k] >= 'a' && line[k] <= 'z') ||
               (line[k] >= '0' && line[k] <= '9') || line[k] == '_')
            ++k;
        const size_t key_end = k;
        while (line[k] == ' ' || line[k] == '\t') ++k;
        if (key_end == key_at || line[k] != '=') {
            if (key_end > key_at && line[k] == ':')
                return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage header line %d: '%.60s' uses ':'; records are "
                                                   "'Key = Value'", path, line_no, line + key_at), 0;
            return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage header line %d is not a 'Key = Value' record: '%.60s'",
                                path, line_no, line + key_at), 0;
        }
        if (key_end - key_at >= 64)
            return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage header line %d: a key of %zu characters", path, line_no,
                                key_end - key_at), 0;
        char key[64];
        memcpy(key, line + key_at, key_end - key_at);
        key[key_end - key_at] = 0;
        const char *value = line + k + 1;
        while (*value == ' ' || *value == '\t') ++value;
        if (strlen(value) > VALUE_MAX)
            return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage %s: a value longer than %d bytes", path, key, VALUE_MAX), 0;
        for (int j = 0; j < nkeys; ++j)
            if (!strcmp(keys[j], key))
                return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage header line %d: %s given twice", path, line_no, key), 0;
        if (nkeys == 64) return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage header of more than 64 records", path), 0;
        snprintf(keys[nkeys++], 64, "%s", key);
        for (int j = 0; per_axis[j]; ++j)
            if (!strcmp(key, per_axis[j]) && !ndims)
                return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage %s comes before NDims", path, key), 0;
        char copy[VALUE_MAX + 1], *tok[TK_IMAGE_MAX_AXES + 1];
        snprintf(copy, sizeof copy, "%s", value);
        if (!strcmp(key, "ObjectType")) {
            if (strcmp(value, "Image"))
                return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage ObjectType '%.40s' is not Image", path, value), 0;
        } else if (!strcmp(key, "NDims")) {
            uint64_t d;
            if (!tk_image_parse_u64(value, &d) || d < 1 || d > TK_IMAGE_MAX_AXES)
                return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage NDims '%.40s' is not from 1 to %d", path, value,
                                    TK_IMAGE_MAX_AXES), 0;
            ndims = (int)d;
        } else if (!strcmp(key, "DimSize")) {
            const int got = tk_image_split(copy, " \t", tok, TK_IMAGE_MAX_AXES);
            if (got != ndims)
                return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage DimSize holds %d values for NDims %d", path,
                                    got > TK_IMAGE_MAX_AXES ? TK_IMAGE_MAX_AXES + 1 : got, ndims), 0;
            for (int j = 0; j < got; ++j)
                if (!tk_image_parse_u64(tok[j], &sizes[j]) || sizes[j] < 1)
                    return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage DimSize: '%.40s' is not an axis size of 1 or "
                                                       "more", path, tok[j]), 0;
        } else if (!strcmp(key, "ElementSpacing") || !strcmp(key, "ElementSize")) {
            if (!numbers(path, key, value, ndims, 1)) return 0;
        } else if (!strcmp(key, "Offset") || !strcmp(key, "Position") || !strcmp(key, "Origin") ||
                   !strcmp(key, "CenterOfRotation")) {
            if (!numbers(path, key, value, ndims, 0)) return 0;
        } else if (!strcmp(key, "TransformMatrix") || !strcmp(key, "Rotation") || !strcmp(key, "Orientation")) {
            if (!numbers(path, key, value, ndims * ndims, 0)) return 0;
        } else if (!strcmp(key, "ElementType")) {
            if (!(bytes_per = type_bytes(value)))
                return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage ElementType '%.40s' is not one the tools read "
                                                   "(MET_CHAR to MET_ULONG_LONG, MET_FLOAT, MET_DOUBLE)", path, value), 0;
            have_type = 1;
        } else if (!strcmp(key, "ElementNumberOfChannels")) {
            if (!tk_image_parse_u64(value, &channels) || channels < 1 || channels > 65536)
                return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage ElementNumberOfChannels '%.40s' is not from 1 to "
                                                   "65536", path, value), 0;
        } else if (!strcmp(key, "BinaryData")) {
            if (!is_bool(value) || !is_true(value))
                return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage BinaryData '%.40s': the tools read binary data only",
                                    path, value), 0;
        } else if (!strcmp(key, "BinaryDataByteOrderMSB") || !strcmp(key, "ElementByteOrderMSB")) {
            if (!is_bool(value))
                return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage %s '%.40s' is not True or False", path, key, value), 0;
        } else if (!strcmp(key, "CompressedData")) {
            if (!is_bool(value))
                return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage CompressedData '%.40s' is not True or False", path,
                                    value), 0;
            compressed = is_true(value);
        } else if (!strcmp(key, "CompressedDataSize")) {
            if (!tk_image_parse_u64(value, &compressed_size) || compressed_size < 1)
                return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage CompressedDataSize '%.40s' is not a byte count", path,
                                    value), 0;
        } else if (!strcmp(key, "HeaderSize")) {
            if (!tk_image_parse_i64(value, &header_size) || header_size < -1)
                return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage HeaderSize '%.40s' is not -1 or a byte count", path,
                                    value), 0;
        } else if (!strcmp(key, "ElementDataFile")) {
            if (!*value || !strncmp(value, "LIST", 4) || strchr(value, '%') || strpbrk(value, " \t"))
                return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage ElementDataFile '%.60s': the tools read LOCAL data or "
                                                   "one data file (no LIST, no numbered slice files)", path, value), 0;
            snprintf(data_file, sizeof data_file, "%s", value);
            have_file = 1;
        }
    }
    if (!ndims) return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage header without NDims", path), 0;
    if (!sizes[0]) return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage header without DimSize", path), 0;
    if (!have_type) return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage header without ElementType", path), 0;
    uint64_t bytes = tk_image_mul(bytes_per, channels);
    for (int k = 0; k < ndims && bytes; ++k) bytes = tk_image_mul(bytes, sizes[k]);
    if (!bytes) return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage DimSize: the data's size overflows 64 bits", path), 0;
    info->format = TK_IMAGE_METAIMAGE;
    info->compressed = compressed;
    info->axes = ndims;
    memcpy(info->size, sizes, sizeof sizes);
    info->components = channels;
    info->bytes = bytes;

    const char *file = path;
    uint64_t offset;
    if (!strcmp(data_file, "LOCAL")) {
        if (header_size != 0)
            return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage HeaderSize with LOCAL data (the data follow the header)",
                                path), 0;
        snprintf(info->data_file, sizeof info->data_file, "%s", path);
        offset = pos;  /* just after ElementDataFile's line */
        if (pos > n) offset = n;
    } else {
        tk_image_sibling(path, data_file, info->data_file, sizeof info->data_file);
        file = info->data_file;
        if (tk_image_file_size(path, file) < 0) return 0;
        offset = header_size > 0 ? (uint64_t)header_size : 0;
    }
    const int64_t size = tk_image_file_size(path, file);
    if (size < 0) return 0;
    char subject_buf[8400];
    const char *subject = tk_image_subject(path, file, subject_buf, sizeof subject_buf);
    if (compressed) {
        if (header_size < 0)
            return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage HeaderSize -1 is for raw data only", path), 0;
        uint64_t used = 0;
        if (!tk_inflate_check(file, offset, TK_INFLATE_AUTO, bytes, subject, NULL, 0, NULL, &used)) return 0;
        if (compressed_size && compressed_size != used)
            return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage CompressedDataSize %llu, but the compressed data take %llu "
                                               "bytes", path, (unsigned long long)compressed_size,
                                (unsigned long long)used), 0;
        return 1;
    }
    const uint64_t held = (uint64_t)size >= offset ? (uint64_t)size - offset : 0;
    if (held < bytes)
        return tk_set_error(TK_ERR_FORMAT, "%s: truncated: the header claims %llu bytes of data, %s holds %llu", path,
                            (unsigned long long)bytes, file, (unsigned long long)held), 0;
    if (held > bytes && header_size >= 0)
        return tk_set_error(TK_ERR_FORMAT, "%s: %llu bytes after the data that the header does not account for (wrong "
                                           "DimSize or ElementType?)", subject, (unsigned long long)(held - bytes)), 0;
    return 1;
}

int tk_image_check_meta(const char *path, tk_image_info *info)
{
    char *text = malloc(HEADER_CAP + 1);  /* (on the heap: see image_nrrd.c) */
    if (!text) return tk_set_error(TK_ERR_MEMORY, "%s: out of memory for the MetaImage header", path), 0;
    const int ok = check(path, info, text);
    free(text);
    return ok;
}
