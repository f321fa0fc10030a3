/* MetaImage (.mha, .mhd) checks before MetaIO (inside ITK) reads the file (image_probe.h).
 * MetaIO 5.2 takes records "Key = Value" up to ElementDataFile, but reads what it does not
 * expect in ways that crash: a ':' for '=' or a junk line shifts what it takes as
 * ElementDataFile into its printf-style numbered-file patterns (SIGSEGV, SIGFPE), NDims
 * -5 makes it loop, keys are copied into fixed buffers.  So every record here must be
 * "Key = Value" (key: letters, digits, '_'; value at most 255 bytes), each key once,
 * NDims 1 to TK_IMAGE_MAX_AXES before the per-axis records, ElementDataFile the last
 * record, binary data, and the data exactly what the header claims (raw, or one zlib/gzip
 * stream inflating completely), in LOCAL data, one data file, or data split over files:
 *   LIST [k[D]]          the names follow, one a line (each file a k-D block, k = NDims - 1
 *                        by default);
 *   NAME%03d [MIN [MAX STEP]]  numbered files, one slice of the last axis each;
 * every file named present and exactly one slice's bytes (compressed: each file one whole
 * stream of exactly them), names resolved as MetaIO resolves them (relative to the
 * header's folder unless absolute).  MetaIO reads a missing or short slice file as zeros,
 * divides by zero on some patterns and skips a last LIST line without a line end, so the
 * tools read split data with this file's code (tk_image_read_data), ITK's MetaIO only the
 * header. */
#define _FILE_OFFSET_BITS 64
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gzip_check.h"
#include "image_probe.h"
#include "tk_status.h"

/* What the user can do, the end of every refusal (the tools' messages: the file, what is
 * wrong, what to do). */
#define FIX "; fix the header, or re-save the image (e.g. with 3D Slicer or ITK)"
#define DAMAGED "; copy or export the file again: it is damaged or incomplete"
#define DAMAGED_OR_FIX "; copy or export it again if it is cut short, else fix the header"
#define SLICES "; fix the slice files or their list, or re-save the image in one file (e.g. as .mha)"
#define MEMORY "; free memory, or read a smaller image"

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

static int is_bool(const char *v)
{
    return !strcmp(v, "True") || !strcmp(v, "False") || !strcmp(v, "true") || !strcmp(v, "false") || !strcmp(v, "1") ||
           !strcmp(v, "0");
}
static int is_true(const char *v) { return !strcmp(v, "True") || !strcmp(v, "true") || !strcmp(v, "1"); }

/* count finite numbers below 1e6 in magnitude (positive where positive), as a record of
 * the geometry needs */
static int numbers(const char *path, const char *key, const char *value, int count, int positive)
{
    char copy[VALUE_MAX + 1], *tok[64];
    snprintf(copy, sizeof copy, "%s", value);
    const int n = tk_image_split(copy, " \t", tok, 63);
    if (n != count)
        return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage %s holds %d values, NDims needs %d" FIX, path, key,
                            n > 63 ? 64 : n, count), 0;
    for (int k = 0; k < n; ++k) {
        double v;
        if (!tk_image_parse_double(tok[k], &v) || !(fabs(v) < 1e6) || (positive && !(v > 0)))
            return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage %s: '%.40s' is not a %snumber below 1e6" FIX, path, key,
                                tok[k], positive ? "positive " : "finite "), 0;
    }
    return 1;
}

/* ---- the data -------------------------------------------------------------------------- */

static int host_msb(void)
{
    const uint16_t one = 1;
    unsigned char first;
    memcpy(&first, &one, 1);
    return first == 0;
}

/* What the header says about every data file. */
typedef struct data_rules {
    const char *path;            /* the header */
    int64_t header_size;         /* bytes to skip in each data file; -1: the data are its last bytes */
    int compressed;
    uint64_t compressed_size;    /* 0: not given */
} data_rules;

/* One data file: bytes of data from offset, raw (exactly: no fewer, no more after them
 * unless HeaderSize -1) or one zlib/gzip stream inflating to exactly them; kept in out
 * (this file's order) when out is not NULL. */
static int file_data(const data_rules *r, const char *file, uint64_t offset, uint64_t bytes, unsigned char *out,
                     const char *what)
{
    const int64_t size = tk_image_file_size(r->path, file);
    if (size < 0) return 0;
    char subject_buf[8400];
    const char *subject = what ? what : tk_image_subject(r->path, file, subject_buf, sizeof subject_buf);
    if (r->compressed) {
        if (r->header_size < 0)
            return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage HeaderSize -1 is for raw data only" FIX, r->path), 0;
        uint64_t used = 0, got = 0;
        if (!tk_inflate_check(file, offset, TK_INFLATE_AUTO, bytes, subject, out, out ? bytes : 0, &got, &used))
            return 0;
        if (r->compressed_size && r->compressed_size != used)
            return tk_set_error(TK_ERR_FORMAT,
                                "%s: MetaImage CompressedDataSize %llu, but the compressed data take %llu "
                                "bytes" FIX,
                                r->path, (unsigned long long)r->compressed_size, (unsigned long long)used),
                   0;
        return 1;
    }
    const uint64_t held = (uint64_t)size >= offset ? (uint64_t)size - offset : 0;
    if (held < bytes)
        return tk_set_error(TK_ERR_FORMAT, "%s: truncated: the header claims %llu bytes %s, %s holds %llu" DAMAGED,
                            subject, (unsigned long long)bytes, what ? "a slice file" : "of data",
                            !what && !strcmp(file, r->path) ? "the file" : "it", (unsigned long long)held),
               0;
    if (held > bytes && r->header_size >= 0)
        return tk_set_error(TK_ERR_FORMAT,
                            "%s: %llu bytes after the data that the header does not account for (wrong "
                            "DimSize or ElementType?)" FIX,
                            subject, (unsigned long long)(held - bytes)),
               0;
    if (!out) return 1;
    FILE *f = fopen(file, "rb");
    const uint64_t from = r->header_size < 0 ? (uint64_t)size - bytes : offset;
    const int ok = f && fseeko(f, (off_t)from, SEEK_SET) == 0 && fread(out, 1, (size_t)bytes, f) == bytes;
    if (f) fclose(f);
    return ok ? 1
              : (tk_set_error(TK_ERR_IO,
                              "%s: the data could not be read (the file changed while it was read?)"
                              "; read it again once nothing writes it",
                              subject),
                 0);
}

typedef struct slice_set {
    const data_rules *rules;
    uint64_t slice_bytes, files;
    unsigned char *out;          /* the whole image's data, or NULL */
} slice_set;

/* Slice file number k (0-based) of name (as written in the header). */
static int slice(const slice_set *s, uint64_t k, const char *name, tk_image_info *info)
{
    char file[4096];
    tk_image_sibling(s->rules->path, name, file, sizeof file);
    if (k == 0) snprintf(info->data_file, sizeof info->data_file, "%s", file);
    struct stat st;
    if (stat(file, &st) != 0)
        return tk_set_error(TK_ERR_IO, "%s: slice file %llu of %llu, %s, cannot be opened: %s" SLICES, s->rules->path,
                            (unsigned long long)k + 1, (unsigned long long)s->files, file, strerror(errno)), 0;
    const uint64_t offset = s->rules->header_size > 0 ? (uint64_t)s->rules->header_size : 0;
    char what[8500];
    snprintf(what, sizeof what, "%s: slice file %llu of %llu, %s", s->rules->path, (unsigned long long)k + 1,
             (unsigned long long)s->files, file);
    return file_data(s->rules, file, offset, s->slice_bytes, s->out ? s->out + k * s->slice_bytes : NULL, what);
}

/* LIST: one file name a line after ElementDataFile's (as MetaIO reads them: relative to the
 * header's folder unless absolute, trailing blanks dropped), each line ended by a newline
 * (MetaIO skips a last name without one), then nothing but blank lines. */
static int list_files(const slice_set *s, const char *text, size_t n, size_t pos, tk_image_info *info)
{
    const char *path = s->rules->path;
    FILE *f = fopen(path, "rb");
    if (!f || fseeko(f, (off_t)(pos > n ? n : pos), SEEK_SET) != 0) {
        if (f) fclose(f);
        return tk_set_error(TK_ERR_IO,
                            "%s: cannot read the list of slice files"
                            "; check that the header is still there and readable",
                            path),
               0;
    }
    (void)text;
    char line[4200];
    uint64_t k = 0;
    int ok = 1;
    while (ok && fgets(line, sizeof line, f)) {
        size_t len = strlen(line);
        const int ended = len && line[len - 1] == '\n';
        if (!ended && len == sizeof line - 1) {
            ok = (tk_set_error(TK_ERR_FORMAT,
                               "%s: MetaImage LIST: slice file name %llu is longer than 4096 bytes" SLICES, path,
                               (unsigned long long)k + 1),
                  0);
            break;
        }
        if (!ended && !feof(f)) {  /* fgets stopped early: a NUL byte (strlen ends there) */
            ok = (tk_set_error(TK_ERR_FORMAT, "%s: MetaImage LIST: a NUL byte in the list of slice files" SLICES, path),
                  0);
            break;
        }
        while (len && (line[len - 1] == '\n' || line[len - 1] == '\r' || line[len - 1] == ' ' || line[len - 1] == '\t'))
            line[--len] = 0;
        if (k == s->files) {
            if (len)
                ok = (tk_set_error(TK_ERR_FORMAT,
                                   "%s: MetaImage LIST: more file names than the %llu slice files "
                                   "DimSize gives ('%.60s')" SLICES,
                                   path, (unsigned long long)s->files, line),
                      0);
            continue;
        }
        int printable = len > 0 && line[0] != ' ' && line[0] != '\t' && (unsigned char)line[len - 1] < 0x80;
        for (size_t i = 0; i < len; ++i) printable = printable && (unsigned char)line[i] >= 0x20 && line[i] != 0x7f;
        if (!printable)
            ok = (tk_set_error(TK_ERR_FORMAT, "%s: MetaImage LIST: line %llu of the list, '%.60s', is not a file name "
                                              "(empty, blank first, or a control character)" SLICES, path,
                               (unsigned long long)k + 1, line), 0);
        else if (!ended)
            ok = (tk_set_error(TK_ERR_FORMAT, "%s: MetaImage LIST: the last file name, %s, has no line end (MetaIO "
                                              "skips such a line)" "; end it with a newline", path, line), 0);
        else
            ok = slice(s, k++, line, info);
    }
    fclose(f);
    if (ok && k < s->files)
        ok = (tk_set_error(TK_ERR_FORMAT,
                           "%s: MetaImage LIST: %llu file names for the %llu slice files DimSize gives" SLICES, path,
                           (unsigned long long)k, (unsigned long long)s->files),
              0);
    return ok;
}

/* NAME%d [MIN [MAX STEP]]: one conversion %d, %0Nd, %Nd or %-Nd (N below 100); files MIN,
 * MIN + STEP, ... up to MAX, exactly as many as the last axis' size (MetaIO's default: 1 to
 * that size; MIN alone: that many from MIN).  The three-number form MetaIO divides by the
 * size (and crashes on where that gives 0) is refused. */
static int numbered_files(const slice_set *s, const char *value, char **words, int nwords, tk_image_info *info)
{
    const char *path = s->rules->path, *name = words[0];
    const char *pc = strchr(name, '%');
    size_t i = (size_t)(pc - name) + 1;
    const int left = name[i] == '-', zero = !left && name[i] == '0';
    i += left || zero;
    int width = 0, digits = 0;
    while (name[i] >= '0' && name[i] <= '9' && digits < 3) width = 10 * width + (name[i++] - '0'), ++digits;
    if (name[i] != 'd' || digits > 2 || strchr(pc + 1, '%'))
        return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage ElementDataFile '%.60s': a numbered file name holds one %%d "
                                           "(or %%0Nd, %%Nd, %%-Nd), nothing else with %%" FIX, path, value), 0;
    int64_t first = 1, last = (int64_t)s->files, step = 1;
    if (nwords == 3 || nwords > 4)
        return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage ElementDataFile '%.60s': NAME MIN MAX, which MetaIO divides "
                                           "by the axis size, is not read; give NAME, NAME MIN, or NAME MIN MAX STEP",
                            path, value), 0;
    if (nwords >= 2 && (!tk_image_parse_i64(words[1], &first) || first < -1000000000 || first > 1000000000))
        return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage ElementDataFile '%.60s': '%.20s' is not a file number" FIX,
                            path, value, words[1]),
               0;
    if (nwords == 2) last = first + (int64_t)s->files - 1;
    if (nwords == 4 &&
        (!tk_image_parse_i64(words[2], &last) || !tk_image_parse_i64(words[3], &step) || step < 1 || last < first ||
         last > 2000000000 || (last - first) % step || (uint64_t)((last - first) / step) + 1 != s->files))
        return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage ElementDataFile '%.60s': MIN MAX STEP must number exactly "
                                           "the %llu slices of the last axis" FIX, path, value,
                            (unsigned long long)s->files), 0;
    const int prefix = (int)(pc - name);
    const char *suffix = name + i + 1;
    for (uint64_t k = 0; k < s->files; ++k) {
        char number[32], file[600];
        const long long v = (long long)(first + (int64_t)k * step);
        if (left) snprintf(number, sizeof number, "%-*lld", width, v);
        else if (zero) snprintf(number, sizeof number, "%0*lld", width, v);
        else snprintf(number, sizeof number, "%*lld", width, v);
        snprintf(file, sizeof file, "%.*s%s%s", prefix, name, number, suffix);
        if (!slice(s, k, file, info)) return 0;
    }
    return 1;
}

static int check(const char *path, tk_image_info *info, char *text, unsigned char *out, uint64_t out_bytes)
{
    const size_t n = tk_image_read_prefix(path, text, HEADER_CAP);
    text[n] = 0;
    static const char *const per_axis[] = {"DimSize", "ElementSpacing", "ElementSize", "Offset", "Position", "Origin",
                                           "CenterOfRotation", "TransformMatrix", "Rotation", "Orientation", NULL};
    char keys[64][64];
    int nkeys = 0, ndims = 0, line_no = 0, compressed = 0, have_type = 0, have_file = 0, msb = -1;
    uint64_t sizes[TK_IMAGE_MAX_AXES] = {0}, channels = 1, compressed_size = 0;
    int64_t header_size = 0;
    unsigned bytes_per = 0;
    char data_file[VALUE_MAX + 1] = "";
    size_t pos = 0;
    while (!have_file) {
        if (pos >= n)
            return tk_set_error(TK_ERR_FORMAT,
                                "%s: MetaImage header without ElementDataFile (its last record)%s" DAMAGED_OR_FIX, path,
                                n == HEADER_CAP ? " in its first 64 KiB" : ""),
                   0;
        const char *nl = memchr(text + pos, '\n', n - pos);
        const size_t len = nl ? (size_t)(nl - (text + pos)) : n - pos;
        char line[VALUE_MAX + 128];
        ++line_no;
        if (len >= sizeof line)
            return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage header line %d is longer than %zu bytes" FIX, path,
                                line_no, sizeof line - 1),
                   0;
        memcpy(line, text + pos, len);
        line[len] = 0;
        pos += len + 1;
        size_t end = len;
        while (end && (line[end - 1] == '\r' || line[end - 1] == ' ' || line[end - 1] == '\t')) line[--end] = 0;
        if (memchr(line, 0, len) && strlen(line) != end)
            return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage header line %d holds a NUL byte" FIX, path, line_no), 0;
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
                                                   "'Key = Value'" FIX, path, line_no, line + key_at), 0;
            return tk_set_error(TK_ERR_FORMAT,
                                "%s: MetaImage header line %d is not a 'Key = Value' record: '%.60s'" FIX, path,
                                line_no, line + key_at),
                   0;
        }
        if (key_end - key_at >= 64)
            return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage header line %d: a key of %zu characters" FIX, path,
                                line_no, key_end - key_at),
                   0;
        char key[64];
        memcpy(key, line + key_at, key_end - key_at);
        key[key_end - key_at] = 0;
        const char *value = line + k + 1;
        while (*value == ' ' || *value == '\t') ++value;
        if (strlen(value) > VALUE_MAX)
            return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage %s: a value longer than %d bytes" FIX, path, key,
                                VALUE_MAX),
                   0;
        for (int j = 0; j < nkeys; ++j)
            if (!strcmp(keys[j], key))
                return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage header line %d: %s given twice" FIX, path, line_no,
                                    key),
                       0;
        if (nkeys == 64)
            return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage header of more than 64 records" FIX, path), 0;
        snprintf(keys[nkeys++], 64, "%s", key);
        for (int j = 0; per_axis[j]; ++j)
            if (!strcmp(key, per_axis[j]) && !ndims)
                return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage %s comes before NDims" FIX, path, key), 0;
        char copy[VALUE_MAX + 1], *tok[TK_IMAGE_MAX_AXES + 1];
        snprintf(copy, sizeof copy, "%s", value);
        if (!strcmp(key, "ObjectType")) {
            if (strcmp(value, "Image"))
                return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage ObjectType '%.40s' is not Image" FIX, path, value), 0;
        } else if (!strcmp(key, "NDims")) {
            uint64_t d;
            if (!tk_image_parse_u64(value, &d) || d < 1 || d > TK_IMAGE_MAX_AXES)
                return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage NDims '%.40s' is not from 1 to %d" FIX, path, value,
                                    TK_IMAGE_MAX_AXES), 0;
            ndims = (int)d;
        } else if (!strcmp(key, "DimSize")) {
            const int got = tk_image_split(copy, " \t", tok, TK_IMAGE_MAX_AXES);
            if (got != ndims)
                return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage DimSize holds %d values for NDims %d" FIX, path,
                                    got > TK_IMAGE_MAX_AXES ? TK_IMAGE_MAX_AXES + 1 : got, ndims), 0;
            for (int j = 0; j < got; ++j)
                if (!tk_image_parse_u64(tok[j], &sizes[j]) || sizes[j] < 1)
                    return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage DimSize: '%.40s' is not an axis size of 1 or "
                                                       "more" FIX, path, tok[j]), 0;
        } else if (!strcmp(key, "ElementSpacing") || !strcmp(key, "ElementSize")) {
            if (!numbers(path, key, value, ndims, 1)) return 0;
        } else if (!strcmp(key, "Offset") || !strcmp(key, "Position") || !strcmp(key, "Origin") ||
                   !strcmp(key, "CenterOfRotation")) {
            if (!numbers(path, key, value, ndims, 0)) return 0;
        } else if (!strcmp(key, "TransformMatrix") || !strcmp(key, "Rotation") || !strcmp(key, "Orientation")) {
            if (!numbers(path, key, value, ndims * ndims, 0)) return 0;
        } else if (!strcmp(key, "ElementType")) {
            if (!(bytes_per = type_bytes(value)))
                return tk_set_error(TK_ERR_FORMAT,
                                    "%s: MetaImage ElementType '%.40s' is not one the tools read "
                                    "(MET_CHAR to MET_ULONG_LONG, MET_FLOAT, MET_DOUBLE)"
                                    "; convert it (e.g. to MET_FLOAT, with ITK or 3D Slicer)",
                                    path, value),
                       0;
            have_type = 1;
        } else if (!strcmp(key, "ElementNumberOfChannels")) {
            if (!tk_image_parse_u64(value, &channels) || channels < 1 || channels > 65536)
                return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage ElementNumberOfChannels '%.40s' is not from 1 to "
                                                   "65536" FIX, path, value), 0;
        } else if (!strcmp(key, "BinaryData")) {
            if (!is_bool(value) || !is_true(value))
                return tk_set_error(TK_ERR_FORMAT,
                                    "%s: MetaImage BinaryData '%.40s': the tools read binary data only"
                                    "; re-save the image with binary data (e.g. with ITK or 3D Slicer)",
                                    path, value),
                       0;
        } else if (!strcmp(key, "BinaryDataByteOrderMSB") || !strcmp(key, "ElementByteOrderMSB")) {
            if (!is_bool(value))
                return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage %s '%.40s' is not True or False" FIX, path, key,
                                    value),
                       0;
        } else if (!strcmp(key, "CompressedData")) {
            if (!is_bool(value))
                return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage CompressedData '%.40s' is not True or False" FIX,
                                    path, value),
                       0;
            compressed = is_true(value);
        } else if (!strcmp(key, "CompressedDataSize")) {
            if (!tk_image_parse_u64(value, &compressed_size) || compressed_size < 1)
                return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage CompressedDataSize '%.40s' is not a byte count" FIX,
                                    path, value),
                       0;
        } else if (!strcmp(key, "HeaderSize")) {
            if (!tk_image_parse_i64(value, &header_size) || header_size < -1)
                return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage HeaderSize '%.40s' is not -1 or a byte count" FIX,
                                    path, value),
                       0;
        } else if (!strcmp(key, "ElementDataFile")) {
            if (!*value)
                return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage ElementDataFile is empty" FIX, path), 0;
            snprintf(data_file, sizeof data_file, "%s", value);
            have_file = 1;
        } else if (!strcmp(key, "BinaryDataByteOrderMSB") || !strcmp(key, "ElementByteOrderMSB")) {
            /* (checked above; both keys set one order in MetaIO) */
        }
        if (!strcmp(key, "BinaryDataByteOrderMSB") || !strcmp(key, "ElementByteOrderMSB")) {
            if (msb >= 0 && msb != is_true(value))
                return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage BinaryDataByteOrderMSB and ElementByteOrderMSB "
                                                   "disagree" FIX, path), 0;
            msb = is_true(value);
        }
    }
    if (!ndims) return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage header without NDims" FIX, path), 0;
    if (!sizes[0]) return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage header without DimSize" FIX, path), 0;
    if (!have_type) return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage header without ElementType" FIX, path), 0;
    uint64_t bytes = tk_image_mul(bytes_per, channels);
    for (int k = 0; k < ndims && bytes; ++k) bytes = tk_image_mul(bytes, sizes[k]);
    if (!bytes)
        return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage DimSize: the data's size overflows 64 bits" FIX, path), 0;
    info->format = TK_IMAGE_METAIMAGE;
    info->compressed = compressed;
    info->axes = ndims;
    memcpy(info->size, sizes, sizeof sizes);
    info->components = channels;
    info->bytes = bytes;
    info->value_bytes = (int)bytes_per;
    info->range_axis = -1;
    info->files = 1;
    if (out && out_bytes != bytes)
        return tk_set_error(TK_ERR_IO,
                            "%s: the file changed while it was read (%llu bytes of data, %llu when it was "
                            "checked); read it again once nothing writes it",
                            path, (unsigned long long)bytes, (unsigned long long)out_bytes),
               0;
    const data_rules rules = {path, header_size, compressed, compressed_size};

    if (!strcmp(data_file, "LOCAL") || !strcmp(data_file, "Local") || !strcmp(data_file, "local")) {
        if (header_size != 0)
            return tk_set_error(TK_ERR_FORMAT,
                                "%s: MetaImage HeaderSize with LOCAL data (the data follow the header)" FIX, path),
                   0;
        snprintf(info->data_file, sizeof info->data_file, "%s", path);
        return file_data(&rules, path, pos > n ? n : pos, bytes, NULL, NULL);  /* just after ElementDataFile's line */
    }
    char *words[6];
    char copy[VALUE_MAX + 1];
    snprintf(copy, sizeof copy, "%s", data_file);
    const int nwords = tk_image_split(copy, " \t", words, 5);
    const int list = !strcmp(words[0], "LIST"), pattern = strchr(words[0], '%') != NULL;
    if (!pattern && strchr(data_file, '%'))  /* MetaIO joins the words before MIN MAX STEP into one name */
        return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage ElementDataFile '%.60s': a numbered file name with spaces, "
                                           "which MetaIO splits; rename the slice files without spaces", path,
                            data_file), 0;
    if (!list && !strncmp(words[0], "LIST", 4))  /* MetaIO takes any name starting so for LIST */
        return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage ElementDataFile '%.60s': MetaIO reads a name starting with "
                                           "LIST as a LIST" "; rename the data file", path, data_file), 0;
    if (!list && !pattern) {
        if (nwords != 1)
            return tk_set_error(TK_ERR_FORMAT,
                                "%s: MetaImage ElementDataFile '%.60s': a file name with spaces, which "
                                "MetaIO splits"
                                "; rename the data file without spaces",
                                path, data_file),
                   0;
        tk_image_sibling(path, data_file, info->data_file, sizeof info->data_file);
        if (tk_image_file_size(path, info->data_file) < 0) return 0;
        return file_data(&rules, info->data_file, header_size > 0 ? (uint64_t)header_size : 0, bytes, NULL, NULL);
    }
    /* data split over files: LIST [k[D]] (names follow, each file a k-D block), or a
     * numbered pattern NAME%d [MIN [MAX STEP]] (each file one slice of the last axis) */
    if (compressed_size)
        return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage CompressedDataSize with data in several files (MetaIO would "
                                           "apply it to each)" "; remove that record", path), 0;
    if (compressed && header_size != 0)
        return tk_set_error(TK_ERR_FORMAT,
                            "%s: MetaImage HeaderSize with compressed slice files (MetaIO ignores it "
                            "there)"
                            "; remove that record, and the bytes it skips from each file",
                            path),
               0;
    int slice_dims = ndims - 1;
    if (list) {
        if (nwords > 2)
            return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage ElementDataFile '%.60s' is not LIST or LIST k (k-D slice "
                                               "files)" FIX, path, data_file), 0;
        if (nwords == 2) {
            char *d = words[1];
            size_t len = strlen(d);
            if (len > 1 && d[len - 1] == 'D') d[--len] = 0;
            uint64_t k;
            if (!tk_image_parse_u64(d, &k) || k < 1 || k > (uint64_t)ndims)
                return tk_set_error(TK_ERR_FORMAT, "%s: MetaImage ElementDataFile '%.60s': the slice files' dimension "
                                                   "is not from 1 to NDims %d" FIX, path, data_file, ndims), 0;
            slice_dims = (int)k;
        }
    }
    uint64_t files = 1, slice_bytes = tk_image_mul(bytes_per, channels);
    for (int k = 0; k < ndims; ++k)
        if (k < slice_dims) slice_bytes *= sizes[k];
        else files *= sizes[k];
    info->files = files;
    info->own_read = 1;
    const slice_set set = {&rules, slice_bytes, files, out};
    const int ok = list ? list_files(&set, text, n, pos, info) : numbered_files(&set, data_file, words, nwords, info);
    if (ok && out) tk_image_to_native(out, bytes / bytes_per, (int)bytes_per, msb < 0 ? host_msb() : msb);
    return ok;
}

static int meta(const char *path, tk_image_info *info, unsigned char *out, uint64_t out_bytes)
{
    char *text = malloc(HEADER_CAP + 1);  /* (on the heap: see image_nrrd.c) */
    if (!text) return tk_set_error(TK_ERR_MEMORY, "%s: out of memory for the MetaImage header" MEMORY, path), 0;
    const int ok = check(path, info, text, out, out_bytes);
    free(text);
    return ok;
}

int tk_image_meta_data(const char *path, tk_image_info *info, unsigned char *out, uint64_t out_bytes)
{
    return meta(path, info, out, out_bytes);
}

int tk_image_check_meta(const char *path, tk_image_info *info) { return meta(path, info, NULL, 0); }
