/* NRRD checks before teem (inside ITK) reads the file (image_probe.h).  Accepted: one data
 * file (attached, or "data file: NAME" beside the header), raw or gzip encoding, 1 to
 * TK_IMAGE_MAX_AXES axes (ITK 5.2 overran its stack at "dimension: 10").  Refused:
 * fields teem does not know, duplicate fields, multi-file data ("LIST", patterns), text
 * encodings, and data that are not exactly what the header claims. */
#define _FILE_OFFSET_BITS 64
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gzip_check.h"
#include "image_probe.h"
#include "tk_status.h"

enum { HEADER_CAP = 1 << 20, VALUE_CAP = 4096 };

/* teem's fields (NRRD0005), with their older spellings; the per-axis and space fields are
 * checked for numbers where the readers build matrices from them. */
static const char *const kFields[] = {
    "dimension", "type", "sizes", "encoding", "endian", "data file", "datafile", "byte skip", "byteskip",
    "line skip", "lineskip", "space", "space dimension", "space directions", "space origin", "space units",
    "spacings", "thicknesses", "axis mins", "axismins", "axis maxs", "axismaxs", "centers", "centerings", "labels",
    "units", "kinds", "content", "min", "max", "old min", "oldmin", "old max", "oldmax", "number", "block size",
    "blocksize", "sample units", "sampleunits", "measurement frame", NULL};

static unsigned type_bytes(const char *t)
{
    static const struct { const char *name; unsigned bytes; } types[] = {
        {"signed char", 1}, {"int8", 1}, {"int8_t", 1}, {"uchar", 1}, {"unsigned char", 1}, {"uint8", 1},
        {"uint8_t", 1}, {"short", 2}, {"short int", 2}, {"signed short", 2}, {"signed short int", 2}, {"int16", 2},
        {"int16_t", 2}, {"ushort", 2}, {"unsigned short", 2}, {"unsigned short int", 2}, {"uint16", 2},
        {"uint16_t", 2}, {"int", 4}, {"signed int", 4}, {"int32", 4}, {"int32_t", 4}, {"uint", 4},
        {"unsigned int", 4}, {"uint32", 4}, {"uint32_t", 4}, {"longlong", 8}, {"long long", 8},
        {"long long int", 8}, {"signed long long", 8}, {"signed long long int", 8}, {"int64", 8}, {"int64_t", 8},
        {"ulonglong", 8}, {"unsigned long long", 8}, {"unsigned long long int", 8}, {"uint64", 8},
        {"uint64_t", 8}, {"float", 4}, {"double", 8}, {NULL, 0}};
    for (int k = 0; types[k].name; ++k)
        if (!strcmp(t, types[k].name)) return types[k].bytes;
    return 0;
}

/* Every number in a geometry field finite and below 1e6 in magnitude ("none", and "nan"
 * where allow_nan: the spacing of a vector axis). */
static int check_numbers(const char *path, const char *field, const char *value, int allow_nan)
{
    char copy[VALUE_CAP];
    snprintf(copy, sizeof copy, "%s", value);
    char *tokens[256];
    const int n = tk_image_split(copy, " \t(),", tokens, 256);
    if (n > 256) return tk_set_error(TK_ERR_FORMAT, "%s: NRRD field \"%s\": too many values", path, field), 0;
    for (int k = 0; k < n; ++k) {
        double v;
        if (!strcmp(tokens[k], "none") || (allow_nan && !strcmp(tokens[k], "nan")) || (allow_nan && !strcmp(tokens[k], "NaN")))
            continue;
        if (!tk_image_parse_double(tokens[k], &v) || !(fabs(v) < 1e6))
            return tk_set_error(TK_ERR_FORMAT, "%s: NRRD field \"%s\": '%.40s' is not a finite number below 1e6", path,
                                field, tokens[k]), 0;
    }
    return 1;
}

static int check(const char *path, tk_image_info *info, char *text)
{
    const size_t n = tk_image_read_prefix(path, text, HEADER_CAP);
    text[n] = 0;
    int dimension = 0, seen[64] = {0}, line_no = 0;
    uint64_t sizes[TK_IMAGE_MAX_AXES] = {0};
    int nsizes = -1, raw = -1;
    unsigned bytes_per = 0;
    int64_t byte_skip = 0, line_skip = 0;
    char endian[16] = "", data_file[VALUE_CAP] = "", type[64] = "";
    size_t pos = 0, data_start = 0;
    int blank = 0;
    while (pos < n) {
        const char *nl = memchr(text + pos, '\n', n - pos);
        if (!nl) {
            if (n == HEADER_CAP)
                return tk_set_error(TK_ERR_FORMAT, "%s: a NRRD header longer than 1 MiB", path), 0;
            nl = text + n;  /* a detached header may end without a newline */
        }
        size_t len = (size_t)(nl - (text + pos));
        char line[VALUE_CAP + 64];
        if (len >= sizeof line)
            return tk_set_error(TK_ERR_FORMAT, "%s: NRRD header line %d is longer than %zu bytes", path, line_no + 1,
                                sizeof line - 1), 0;
        memcpy(line, text + pos, len);
        line[len] = 0;
        if (len && line[len - 1] == '\r') line[--len] = 0;
        pos = (size_t)(nl - text) + 1;
        ++line_no;
        if (memchr(line, 0, len))
            return tk_set_error(TK_ERR_FORMAT, "%s: NRRD header line %d holds a NUL byte", path, line_no), 0;
        if (line_no == 1) continue;  /* the magic, checked by the sniffer */
        if (len == 0) {
            blank = 1;
            data_start = pos;
            break;
        }
        if (line[0] == '#') continue;
        char *colon = strstr(line, ": "), *keyvalue = strstr(line, ":=");
        if (keyvalue && (!colon || keyvalue < colon)) continue;  /* "key:=value" pairs: free text */
        if (!colon)
            return tk_set_error(TK_ERR_FORMAT, "%s: NRRD header line %d is not \"field: value\": '%.60s'", path, line_no,
                                line), 0;
        *colon = 0;
        const char *field = line, *value = colon + 2;
        while (*value == ' ') ++value;
        int id = -1;
        for (int k = 0; kFields[k]; ++k)
            if (!strcmp(field, kFields[k])) id = k;
        if (id < 0)
            return tk_set_error(TK_ERR_FORMAT, "%s: NRRD header line %d: unknown field \"%.60s\"", path, line_no, field), 0;
        if (seen[id]++)
            return tk_set_error(TK_ERR_FORMAT, "%s: NRRD header line %d: field \"%s\" given twice", path, line_no, field), 0;
        char copy[VALUE_CAP];
        snprintf(copy, sizeof copy, "%s", value);
        char *tok[TK_IMAGE_MAX_AXES + 2];
        if (!strcmp(field, "dimension")) {
            uint64_t d;
            if (!tk_image_parse_u64(value, &d) || d < 1 || d > TK_IMAGE_MAX_AXES)
                return tk_set_error(TK_ERR_FORMAT, "%s: NRRD dimension '%.40s' is not from 1 to %d (the tools read up "
                                                   "to 4-D images and 3-D vector volumes)", path, value,
                                    TK_IMAGE_MAX_AXES), 0;
            dimension = (int)d;
        } else if (!strcmp(field, "sizes")) {
            nsizes = tk_image_split(copy, " \t", tok, TK_IMAGE_MAX_AXES);
            for (int k = 0; k < nsizes && k < TK_IMAGE_MAX_AXES; ++k)
                if (!tk_image_parse_u64(tok[k], &sizes[k]) || sizes[k] < 1)
                    return tk_set_error(TK_ERR_FORMAT, "%s: NRRD sizes: '%.40s' is not an axis size of 1 or more",
                                        path, tok[k]), 0;
        } else if (!strcmp(field, "type")) {
            snprintf(type, sizeof type, "%s", value);
            if (!(bytes_per = type_bytes(value)))
                return tk_set_error(TK_ERR_FORMAT, "%s: NRRD type '%.40s' is not an integer or float type the tools "
                                                   "read", path, value), 0;
        } else if (!strcmp(field, "encoding")) {
            if (!strcmp(value, "raw")) raw = 1;
            else if (!strcmp(value, "gzip") || !strcmp(value, "gz")) raw = 0;
            else
                return tk_set_error(TK_ERR_FORMAT, "%s: NRRD encoding '%.40s': the tools read raw or gzip NRRD data "
                                                   "(convert it, e.g. unu save -e gzip)", path, value), 0;
        } else if (!strcmp(field, "endian")) {
            if (strcmp(value, "little") && strcmp(value, "big"))
                return tk_set_error(TK_ERR_FORMAT, "%s: NRRD endian '%.40s' is neither little nor big", path, value), 0;
            snprintf(endian, sizeof endian, "%s", value);
        } else if (!strcmp(field, "data file") || !strcmp(field, "datafile")) {
            if (!strncmp(value, "LIST", 4) || strchr(value, '%') || strpbrk(value, " \t") || !*value)
                return tk_set_error(TK_ERR_FORMAT, "%s: NRRD data file '%.60s': the tools read one data file (no LIST, "
                                                   "no numbered files)", path, value), 0;
            snprintf(data_file, sizeof data_file, "%s", value);
        } else if (!strcmp(field, "byte skip") || !strcmp(field, "byteskip")) {
            if (!tk_image_parse_i64(value, &byte_skip) || byte_skip < -1)
                return tk_set_error(TK_ERR_FORMAT, "%s: NRRD byte skip '%.40s' is not -1 or a byte count", path, value), 0;
        } else if (!strcmp(field, "line skip") || !strcmp(field, "lineskip")) {
            if (!tk_image_parse_i64(value, &line_skip) || line_skip < 0 || line_skip > 1000000)
                return tk_set_error(TK_ERR_FORMAT, "%s: NRRD line skip '%.40s' is not a line count", path, value), 0;
        } else if (!strcmp(field, "space directions") || !strcmp(field, "space origin") ||
                   !strcmp(field, "measurement frame") || !strcmp(field, "thicknesses")) {
            if (!check_numbers(path, field, value, !strcmp(field, "thicknesses"))) return 0;
        } else if (!strcmp(field, "spacings")) {
            if (!check_numbers(path, field, value, 1)) return 0;
        }
    }
    if (!dimension) return tk_set_error(TK_ERR_FORMAT, "%s: NRRD header without \"dimension\"", path), 0;
    if (nsizes != dimension)
        return tk_set_error(TK_ERR_FORMAT, "%s: NRRD sizes: %s%d values for dimension %d", path,
                            nsizes < 0 ? "no field, " : "", nsizes < 0 ? 0 : nsizes, dimension), 0;
    if (!bytes_per) return tk_set_error(TK_ERR_FORMAT, "%s: NRRD header without \"type\"", path), 0;
    if (raw < 0) return tk_set_error(TK_ERR_FORMAT, "%s: NRRD header without \"encoding\"", path), 0;
    if (bytes_per > 1 && !endian[0])
        return tk_set_error(TK_ERR_FORMAT, "%s: NRRD header without \"endian\" for %s data", path, type), 0;
    if (!raw && byte_skip < 0)
        return tk_set_error(TK_ERR_FORMAT, "%s: NRRD byte skip -1 is for raw data only", path), 0;
    uint64_t bytes = bytes_per;
    for (int k = 0; k < dimension; ++k)
        if (!(bytes = tk_image_mul(bytes, sizes[k])))
            return tk_set_error(TK_ERR_FORMAT, "%s: NRRD sizes: the data's size overflows 64 bits", path), 0;
    info->format = TK_IMAGE_NRRD;
    info->compressed = !raw;
    info->axes = dimension;
    memcpy(info->size, sizes, sizeof sizes);
    info->components = 1;
    info->bytes = bytes;

    const char *file = path;
    uint64_t offset = 0;
    if (data_file[0]) {
        tk_image_sibling(path, data_file, info->data_file, sizeof info->data_file);
        file = info->data_file;
        if (tk_image_file_size(path, file) < 0) return 0;
    } else {
        if (!blank)
            return tk_set_error(TK_ERR_FORMAT, "%s: NRRD header without a blank line before its data (and no \"data "
                                               "file\"): truncated?", path), 0;
        snprintf(info->data_file, sizeof info->data_file, "%s", path);
        offset = data_start;
    }
    /* line skip: whole lines of the data file before the data (teem skips them unread) */
    if (line_skip > 0) {
        FILE *f = fopen(file, "rb");
        if (!f) return tk_set_error(TK_ERR_IO, "%s: cannot open the data file %s", path, file), 0;
        int c = 0;
        if (fseeko(f, (off_t)offset, SEEK_SET) != 0) c = EOF;
        for (int64_t k = 0; k < line_skip && c != EOF;)
            if ((c = fgetc(f)) == '\n') ++k, offset = (uint64_t)ftello(f);
        fclose(f);
        if (c == EOF)
            return tk_set_error(TK_ERR_FORMAT, "%s: NRRD line skip %lld: %s ends first", path, (long long)line_skip,
                                file), 0;
    }
    char subject_buf[8400];
    const char *subject = tk_image_subject(path, file, subject_buf, sizeof subject_buf);
    if (!raw) {
        uint64_t expected;
        if (__builtin_add_overflow(bytes, (uint64_t)byte_skip, &expected))
            return tk_set_error(TK_ERR_FORMAT, "%s: NRRD byte skip plus the data's size overflows", path), 0;
        return tk_inflate_check(file, offset, TK_INFLATE_GZIP, expected, subject, NULL, 0, NULL, NULL);
    }
    const int64_t size = tk_image_file_size(path, file);
    if (size < 0) return 0;
    const uint64_t held = (uint64_t)size >= offset ? (uint64_t)size - offset : 0;
    if (byte_skip < 0) {  /* the data are the file's last bytes */
        if (held < bytes)
            return tk_set_error(TK_ERR_FORMAT, "%s: truncated: the header claims %llu bytes of data, the file holds %llu",
                                subject, (unsigned long long)bytes, (unsigned long long)held), 0;
        return 1;
    }
    if (held < (uint64_t)byte_skip || held - (uint64_t)byte_skip < bytes)
        return tk_set_error(TK_ERR_FORMAT, "%s: truncated: the header claims %llu bytes of data after %lld skipped, "
                                           "the file holds %llu", subject, (unsigned long long)bytes,
                            (long long)byte_skip, (unsigned long long)held), 0;
    if (held - (uint64_t)byte_skip > bytes)
        return tk_set_error(TK_ERR_FORMAT, "%s: %llu bytes after the data that the header does not account for (wrong "
                                           "sizes or type?)", subject,
                            (unsigned long long)(held - (uint64_t)byte_skip - bytes)), 0;
    return 1;
}

int tk_image_check_nrrd(const char *path, tk_image_info *info)
{
    /* the header's text on the heap (not in thread-local storage, which every thread of
     * the process, ITK's pool included, would carry) */
    char *text = malloc(HEADER_CAP + 1);
    if (!text) return tk_set_error(TK_ERR_MEMORY, "%s: out of memory for the NRRD header", path), 0;
    const int ok = check(path, info, text);
    free(text);
    return ok;
}
