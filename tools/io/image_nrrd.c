/* NRRD checks before teem (inside ITK) reads the file, and the reading of the encodings the
 * tools decode themselves (image_probe.h).  Accepted: one data file (attached, or "data
 * file: NAME" beside the header), encodings raw, gzip (gz), ascii (text, txt), hex and bzip2
 * (bz2), 1 to TK_IMAGE_MAX_AXES axes (ITK 5.2 overran its stack at "dimension: 10").
 * Refused: fields teem does not know, duplicate fields, multi-file data ("LIST",
 * patterns), and data that are not exactly what the header claims:
 *   raw    exactly the claimed bytes after the skips (or the file's last bytes, byte skip -1);
 *   gzip   gzip members inflating to exactly byte skip + data bytes, nothing after them;
 *   bzip2  the same with bzip2 streams (libbz2; each block's and each stream's CRC checked);
 *   ascii  exactly one value per sample, separated by white space (commas allowed next to
 *          a value, as teem allows them), each a whole decimal number of the type: integers in its range
 *          (no "1.5" for an int, no 300 for a uchar), floats finite (no nan, no inf, none
 *          beyond the type's range); then nothing but separators;
 *   hex    exactly two hex digits a byte, white space anywhere between them; then nothing
 *          but white space.
 * Raw and gzip data are read by ITK's NrrdIO once proven whole; ascii, hex and bzip2 data
 * are read by this file's decoders (tk_image_read_data): the code that validates them is
 * the code that reads them. */
#define _FILE_OFFSET_BITS 64
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#ifdef TK_HAVE_BZIP2
#include <bzlib.h>
#endif

#include "gzip_check.h"
#include "image_probe.h"
#include "tk_status.h"

/* What the user can do, the end of every refusal (the tools' messages: the file, what is
 * wrong, what to do). */
#define FIX "; fix the header, or re-save the image (e.g. with unu save or 3D Slicer)"
#define DAMAGED "; copy or export the file again: it is damaged or incomplete"
#define VALUES "; correct that value, or re-save the image (e.g. unu save -e raw)"
#define DATAFILE "; put it beside the header under that name, readable, or fix the header's data file"
#define MEMORY "; free memory, or read a smaller image"

enum { HEADER_CAP = 1 << 20, VALUE_CAP = 4096, TOKEN_MAX = 128, CHUNK = 1 << 16 };

/* teem's fields (NRRD0005), with their older spellings; the per-axis and space fields are
 * checked for numbers where the readers build matrices from them. */
static const char *const kFields[] = {
    "dimension", "type", "sizes", "encoding", "endian", "data file", "datafile", "byte skip", "byteskip",
    "line skip", "lineskip", "space", "space dimension", "space directions", "space origin", "space units",
    "spacings", "thicknesses", "axis mins", "axismins", "axis maxs", "axismaxs", "centers", "centerings", "labels",
    "units", "kinds", "content", "min", "max", "old min", "oldmin", "old max", "oldmax", "number", "block size",
    "blocksize", "sample units", "sampleunits", "measurement frame", NULL};

/* teem's type names: bytes and class ('i' signed, 'u' unsigned integer, 'f' floating) */
static unsigned type_bytes(const char *t, char *cls)
{
    static const struct { const char *name; unsigned bytes; char cls; } types[] = {
        {"signed char", 1, 'i'}, {"int8", 1, 'i'}, {"int8_t", 1, 'i'}, {"uchar", 1, 'u'}, {"unsigned char", 1, 'u'},
        {"uint8", 1, 'u'}, {"uint8_t", 1, 'u'}, {"short", 2, 'i'}, {"short int", 2, 'i'}, {"signed short", 2, 'i'},
        {"signed short int", 2, 'i'}, {"int16", 2, 'i'}, {"int16_t", 2, 'i'}, {"ushort", 2, 'u'},
        {"unsigned short", 2, 'u'}, {"unsigned short int", 2, 'u'}, {"uint16", 2, 'u'}, {"uint16_t", 2, 'u'},
        {"int", 4, 'i'}, {"signed int", 4, 'i'}, {"int32", 4, 'i'}, {"int32_t", 4, 'i'}, {"uint", 4, 'u'},
        {"unsigned int", 4, 'u'}, {"uint32", 4, 'u'}, {"uint32_t", 4, 'u'}, {"longlong", 8, 'i'},
        {"long long", 8, 'i'}, {"long long int", 8, 'i'}, {"signed long long", 8, 'i'},
        {"signed long long int", 8, 'i'}, {"int64", 8, 'i'}, {"int64_t", 8, 'i'}, {"ulonglong", 8, 'u'},
        {"unsigned long long", 8, 'u'}, {"unsigned long long int", 8, 'u'}, {"uint64", 8, 'u'},
        {"uint64_t", 8, 'u'}, {"float", 4, 'f'}, {"double", 8, 'f'}, {NULL, 0, 0}};
    for (int k = 0; types[k].name; ++k)
        if (!strcmp(t, types[k].name)) return *cls = types[k].cls, types[k].bytes;
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
    if (n > 256) return tk_set_error(TK_ERR_FORMAT, "%s: NRRD field \"%s\": too many values" FIX, path, field), 0;
    for (int k = 0; k < n; ++k) {
        double v;
        if (!strcmp(tokens[k], "none") || (allow_nan && !strcmp(tokens[k], "nan")) ||
            (allow_nan && !strcmp(tokens[k], "NaN")))
            continue;
        if (!tk_image_parse_double(tokens[k], &v) || !(fabs(v) < 1e6))
            return tk_set_error(TK_ERR_FORMAT, "%s: NRRD field \"%s\": '%.40s' is not a finite number below 1e6" FIX,
                                path, field, tokens[k]),
                   0;
    }
    return 1;
}

/* ---- the data ------------------------------------------------------------------------- */

typedef struct data_desc {
    const char *path;      /* the header, as the user named it */
    const char *file;      /* the data file */
    const char *subject;   /* what messages name first */
    tk_image_encoding encoding;
    uint64_t offset;       /* where the data file's encoded data start (after line skip) */
    int64_t byte_skip;
    uint64_t count, bytes; /* values and their bytes */
    unsigned bytes_per;
    char cls;              /* 'i', 'u', 'f' */
    int big_endian;        /* the byte order of hex and bzip2 data */
    const char *type;
} data_desc;

/* A data file read byte by byte through a 64 KiB buffer; pos: the next byte's offset. */
typedef struct byte_reader {
    FILE *f;
    unsigned char *buf;
    size_t n, i;
    uint64_t pos;
} byte_reader;

static int reader_open(byte_reader *r, const data_desc *d)
{
    memset(r, 0, sizeof *r);
    r->f = fopen(d->file, "rb");
    r->buf = malloc(CHUNK);
    r->pos = d->offset;
    if (!r->f || !r->buf || fseeko(r->f, (off_t)d->offset, SEEK_SET) != 0) {
        if (r->f) fclose(r->f);
        free(r->buf);
        return tk_set_error(TK_ERR_IO,
                            "%s: cannot read the data (out of memory, or the file vanished)"
                            "; free memory, or check that the file is still there",
                            d->subject),
               0;
    }
    return 1;
}

static int reader_get(byte_reader *r)
{
    if (r->i == r->n) {
        r->n = fread(r->buf, 1, CHUNK, r->f);
        r->i = 0;
        if (r->n == 0) return EOF;
    }
    ++r->pos;
    return r->buf[r->i++];
}

static void reader_close(byte_reader *r)
{
    fclose(r->f);
    free(r->buf);
}

/* teem skips byte skip bytes of the data file before ascii and hex data */
static int skip_bytes(byte_reader *r, const data_desc *d)
{
    for (int64_t k = 0; k < d->byte_skip; ++k)
        if (reader_get(r) == EOF)
            return tk_set_error(TK_ERR_FORMAT,
                                "%s: truncated: the file ends within the %lld bytes of \"byte skip\"" DAMAGED,
                                d->subject, (long long)d->byte_skip),
                   0;
    return 1;
}

static int is_space(int c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

/* a token for a message: at most 40 characters, unprintable bytes as '?' */
static const char *shown(const char *t, char *buf, size_t n)
{
    size_t k = 0;
    for (; t[k] && k + 1 < n && k < 40; ++k) buf[k] = t[k] >= 32 && t[k] < 127 ? t[k] : '?';
    buf[k] = 0;
    return buf;
}

/* An integer value of the type (range-checked by the caller) at at, in this machine's byte
 * order: its low bytes_per bytes, which for a signed value are its two's complement. */
static void store_integer(unsigned char *at, uint64_t value, unsigned bytes_per)
{
    const uint8_t u8 = (uint8_t)value;
    const uint16_t u16 = (uint16_t)value;
    const uint32_t u32 = (uint32_t)value;
    memcpy(at, bytes_per == 1   ? (const void *)&u8
               : bytes_per == 2 ? (const void *)&u16
               : bytes_per == 4 ? (const void *)&u32
                                : (const void *)&value,
           bytes_per);
}

/* One ascii value into out[idx] (when out): 1, or 0 when the token is not a whole number of
 * the type (integers: an optional sign, decimal digits, within the type's range; floats: a
 * decimal number whose value in the type is finite). */
static int ascii_value(const char *t, const data_desc *d, unsigned char *out, uint64_t idx)
{
    unsigned char *at = out ? out + idx * d->bytes_per : NULL;
    if (d->cls == 'f') {
        for (const char *c = t; *c; ++c)
            if (!((*c >= '0' && *c <= '9') || *c == '-' || *c == '+' || *c == '.' || *c == 'e' || *c == 'E')) return 0;
        char *end;
        if (d->bytes_per == 4) {
            const float v = strtof(t, &end);
            if (end == t || *end || !isfinite(v)) return 0;
            if (at) memcpy(at, &v, 4);
        } else {
            const double v = strtod(t, &end);
            if (end == t || *end || !isfinite(v)) return 0;
            if (at) memcpy(at, &v, 8);
        }
        return 1;
    }
    const int negative = *t == '-';
    if (negative && d->cls == 'u') return 0;
    uint64_t magnitude;
    if (!tk_image_parse_u64(t + (*t == '-' || *t == '+'), &magnitude)) return 0;
    const unsigned bits = 8 * d->bytes_per;
    if (d->cls == 'u') {
        if (bits < 64 && magnitude >> bits) return 0;
        if (at) store_integer(at, magnitude, d->bytes_per);
        return 1;
    }
    const uint64_t limit = (uint64_t)1 << (bits - 1);  /* |min|; max is limit - 1 */
    if (magnitude > limit || (!negative && magnitude == limit)) return 0;
    /* -magnitude, with -2^63 built without overflowing */
    const int64_t v = !negative            ? (int64_t)magnitude
                      : magnitude == limit ? -(int64_t)(limit - 1) - 1
                                           : -(int64_t)magnitude;
    if (at) store_integer(at, (uint64_t)v, d->bytes_per);
    return 1;
}

/* ascii data: tokens between white space, each a value with commas allowed before and after
 * it (teem reads "1, 2" and "1 ,2" as two values), or commas alone (skipped); a comma
 * inside a token ("1,2", which teem reads as 1 alone) is refused with the token. */
static int data_ascii(const data_desc *d, unsigned char *out)
{
    byte_reader r;
    if (!reader_open(&r, d)) return 0;
    int ok = skip_bytes(&r, d);
    uint64_t idx = 0;
    char token[TOKEN_MAX + 1], buf[48];
    for (int c = 0; ok && c != EOF;) {
        c = reader_get(&r);
        if (c == EOF || is_space(c)) continue;
        const uint64_t at = r.pos - 1;
        size_t len = 0;
        for (; c != EOF && !is_space(c); c = reader_get(&r)) {
            if (len == TOKEN_MAX) {
                token[len] = 0;
                ok = (tk_set_error(TK_ERR_FORMAT,
                                   "%s: NRRD ascii data: a value of more than %d characters at byte %llu "
                                   "('%s...')" VALUES,
                                   d->subject, TOKEN_MAX, (unsigned long long)at, shown(token, buf, sizeof buf)),
                      0);
                break;
            }
            token[len++] = (char)c;
        }
        if (!ok) break;
        token[len] = 0;
        char *value = token + strspn(token, ",");
        size_t end = strlen(value);
        while (end && value[end - 1] == ',') value[--end] = 0;
        if (!*value) continue;  /* commas alone */
        if (idx == d->count)
            ok = (tk_set_error(TK_ERR_FORMAT,
                               "%s: NRRD ascii data: more values than the header's %llu ('%s' at byte "
                               "%llu; a wrong sizes field?)" FIX,
                               d->subject, (unsigned long long)d->count, shown(value, buf, sizeof buf),
                               (unsigned long long)at),
                  0);
        else if (!ascii_value(value, d, out, idx))
            ok = (tk_set_error(TK_ERR_FORMAT,
                               "%s: NRRD ascii data: value %llu of %llu, '%s' at byte %llu, is not %s %s" VALUES,
                               d->subject, (unsigned long long)idx + 1, (unsigned long long)d->count,
                               shown(value, buf, sizeof buf), (unsigned long long)at,
                               d->cls == 'f' ? "a finite" : "a whole number in the range of the type", d->type),
                  0);
        ++idx;
    }
    reader_close(&r);
    if (ok && idx < d->count)
        ok = (tk_set_error(TK_ERR_FORMAT,
                           "%s: truncated: NRRD ascii data of %llu values, the header claims %llu" DAMAGED, d->subject,
                           (unsigned long long)idx, (unsigned long long)d->count),
              0);
    return ok;
}

static int hex_digit(int c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static int data_hex(const data_desc *d, unsigned char *out)
{
    byte_reader r;
    if (!reader_open(&r, d)) return 0;
    int ok = skip_bytes(&r, d), c;
    uint64_t nibbles = 0;
    const uint64_t need = 2 * d->bytes;
    unsigned char byte = 0;
    while (ok && (c = reader_get(&r)) != EOF) {
        const int v = hex_digit(c);
        if (v < 0) {
            if (!is_space(c)) {
                char what[16];
                if (c >= 32 && c < 127) snprintf(what, sizeof what, "'%c' (0x%02x)", c, (unsigned)c);
                else snprintf(what, sizeof what, "0x%02x", (unsigned)c);
                ok = (tk_set_error(TK_ERR_FORMAT,
                                   "%s: NRRD hex data: byte %llu is %s, not a hex digit or white space" VALUES,
                                   d->subject, (unsigned long long)r.pos - 1, what),
                      0);
            }
            continue;
        }
        if (nibbles == need) {
            ok = (tk_set_error(TK_ERR_FORMAT,
                               "%s: NRRD hex data: more than the header's %llu bytes (a hex digit at byte "
                               "%llu; a wrong sizes or type field?)" FIX,
                               d->subject, (unsigned long long)d->bytes, (unsigned long long)r.pos - 1),
                  0);
            break;
        }
        if (nibbles & 1) {
            if (out) out[nibbles / 2] = (unsigned char)(byte | v);
        } else {
            byte = (unsigned char)(v << 4);
        }
        ++nibbles;
    }
    reader_close(&r);
    if (ok && nibbles < need)
        ok = (tk_set_error(TK_ERR_FORMAT,
                           "%s: truncated: NRRD hex data of %llu hex digits, the header's %llu bytes need "
                           "%llu" DAMAGED,
                           d->subject, (unsigned long long)nibbles, (unsigned long long)d->bytes,
                           (unsigned long long)need),
              0);
    if (ok && out) tk_image_to_native(out, d->count, (int)d->bytes_per, d->big_endian);
    return ok;
}

#ifdef TK_HAVE_BZIP2
/* bzip2's densest block: a run of one byte value coded in about 24 bytes expands to
 * 45.9 MB (900 kB of its first run-length stage, 5 bytes for each 255), about 1.9e6:1 */
static uint64_t bzip2_bound(uint64_t stored)
{
    return stored > UINT64_MAX / 2000000 - 1 ? UINT64_MAX : stored * 2000000 + 50000000;
}

static tk_decode_status bzip2_step(void *state, unsigned char *in, size_t avail, size_t *used, unsigned char *out,
                                   size_t cap, size_t *made, const char **why)
{
    bz_stream *z = state;
    z->next_in = (char *)in;
    z->avail_in = (unsigned)avail;
    z->next_out = (char *)out;
    z->avail_out = (unsigned)cap;
    const int ret = BZ2_bzDecompress(z);
    *used = avail - z->avail_in;
    *made = cap - z->avail_out;
    if (ret == BZ_STREAM_END) return TK_DECODE_END;
    if (ret != BZ_OK) {
        *why = ret == BZ_MEM_ERROR ? "out of memory" : "corrupt data (or a CRC that does not match)";
        return TK_DECODE_FAILED;
    }
    if (*made == 0 && *used == 0 && avail) {
        *why = "corrupt data (no progress)";
        return TK_DECODE_FAILED;
    }
    return TK_DECODE_MORE;
}

/* bzip2 concatenates streams: another may follow one ('B' of its "BZh" magic), nothing else */
static int bzip2_next_stream(void *state, const unsigned char *next, size_t avail, const char **why)
{
    bz_stream *z = state;
    (void)avail;
    if (next[0] != 'B') return 0;
    BZ2_bzDecompressEnd(z);
    memset(z, 0, sizeof *z);
    if (BZ2_bzDecompressInit(z, 0, 0) != BZ_OK) return *why = "out of memory", -1;
    return 1;
}

/* The decoded data after the byte skip, into out */
typedef struct skipped_copy {
    unsigned char *out;
    uint64_t skip;
} skipped_copy;

static int copy_after_skip(void *ctx, const unsigned char *bytes, uint64_t n, uint64_t at)
{
    const skipped_copy *c = ctx;
    if (at + n > c->skip) {
        const uint64_t from = at < c->skip ? c->skip - at : 0;
        memcpy(c->out + (at + from - c->skip), bytes + from, (size_t)(n - from));
    }
    return 1;
}
#endif

static int data_bzip2(const data_desc *d, unsigned char *out)
{
#ifndef TK_HAVE_BZIP2
    (void)out;
    return tk_set_error(TK_ERR_UNSUPPORTED, "%s: NRRD encoding bzip2, and this build of the tools has no libbz2; "
                                            "install it (Debian: libbz2-dev) and rebuild the tools, or convert the "
                                            "file (e.g. unu save -e gzip)", d->path), 0;
#else
    uint64_t expected;
    if (__builtin_add_overflow(d->bytes, (uint64_t)d->byte_skip, &expected))
        return tk_set_error(TK_ERR_FORMAT, "%s: NRRD byte skip plus the data's size overflows" FIX, d->path), 0;
    FILE *f = fopen(d->file, "rb");
    if (!f) return tk_set_error(TK_ERR_IO, "%s: cannot open the data file %s" DATAFILE, d->path, d->file), 0;
    const int64_t size = tk_image_file_size(d->path, d->file);
    if (size < 0 || fseeko(f, (off_t)d->offset, SEEK_SET) != 0) {
        fclose(f);
        return size < 0 ? 0
                        : (tk_set_error(TK_ERR_IO,
                                        "%s: cannot read the data"
                                        "; check that the file is still there and readable",
                                        d->subject),
                           0);
    }
    const uint64_t stored = (uint64_t)size - d->offset;
    if (expected > bzip2_bound(stored)) {
        fclose(f);
        return tk_set_error(TK_ERR_FORMAT, "%s: the header claims %llu bytes of data, but %llu bytes of bzip2 cannot "
                                           "hold more than %llu: the file is truncated or the header is wrong" DAMAGED,
                            d->subject, (unsigned long long)expected, (unsigned long long)stored,
                            (unsigned long long)bzip2_bound(stored)), 0;
    }
    unsigned char *in = malloc(2 * CHUNK), *buf = in + CHUNK;
    bz_stream z;
    memset(&z, 0, sizeof z);
    if (!in || BZ2_bzDecompressInit(&z, 0, 0) != BZ_OK) {
        free(in);
        fclose(f);
        return tk_set_error(TK_ERR_MEMORY, "%s: out of memory for bzip2" MEMORY, d->subject), 0;
    }
    const tk_stream_decoder decoder = {bzip2_step, bzip2_next_stream, &z};
    skipped_copy copy = {out, (uint64_t)d->byte_skip};
    tk_decoded r;
    tk_decode_file(f, &decoder, in, buf, CHUNK, expected, out ? copy_after_skip : NULL, &copy, &r);
    BZ2_bzDecompressEnd(&z);
    free(in);
    fclose(f);
    int ok = 0;
    if (!r.why && !r.ended)
        tk_set_error(TK_ERR_FORMAT,
                     "%s: truncated: the bzip2 data end before their stream does (after %llu of %llu "
                     "bytes)" DAMAGED,
                     d->subject, (unsigned long long)r.total, (unsigned long long)expected);
    else if (r.why && !strcmp(r.why, "trailing"))
        tk_set_error(TK_ERR_FORMAT,
                     "%s: %llu bytes of something else follow the end of the bzip2 data (a damaged or "
                     "concatenated file)"
                     "; remove what follows, or copy or export it again",
                     d->subject, (unsigned long long)(stored - r.used));
    else if (r.why && !strcmp(r.why, "longer"))
        tk_set_error(TK_ERR_FORMAT, "%s: the bzip2 data hold more than the %llu bytes the header claims" FIX,
                     d->subject, (unsigned long long)expected);
    else if (r.why)
        tk_set_error(TK_ERR_FORMAT, "%s: bzip2 data after %llu bytes: %s (libbz2)" DAMAGED, d->subject,
                     (unsigned long long)r.total, r.why);
    else if (r.total != expected)
        tk_set_error(TK_ERR_FORMAT,
                     "%s: the bzip2 data hold %llu bytes, the header claims %llu (truncated or a wrong "
                     "header)"
                     "; copy or export it again, or fix the header",
                     d->subject, (unsigned long long)r.total, (unsigned long long)expected);
    else
        ok = 1;
    if (ok && out) tk_image_to_native(out, d->count, (int)d->bytes_per, d->big_endian);
    return ok;
#endif
}

static int data_raw(const data_desc *d)
{
    const int64_t size = tk_image_file_size(d->path, d->file);
    if (size < 0) return 0;
    const uint64_t held = (uint64_t)size >= d->offset ? (uint64_t)size - d->offset : 0, bytes = d->bytes;
    if (d->byte_skip < 0) {  /* the data are the file's last bytes */
        if (held < bytes)
            return tk_set_error(TK_ERR_FORMAT,
                                "%s: truncated: the header claims %llu bytes of data, the file holds %llu" DAMAGED,
                                d->subject, (unsigned long long)bytes, (unsigned long long)held),
                   0;
        return 1;
    }
    if (held < (uint64_t)d->byte_skip || held - (uint64_t)d->byte_skip < bytes)
        return tk_set_error(TK_ERR_FORMAT, "%s: truncated: the header claims %llu bytes of data after %lld skipped, "
                                           "the file holds %llu" DAMAGED, d->subject, (unsigned long long)bytes,
                            (long long)d->byte_skip, (unsigned long long)held), 0;
    if (held - (uint64_t)d->byte_skip > bytes)
        return tk_set_error(TK_ERR_FORMAT, "%s: %llu bytes after the data that the header does not account for (wrong "
                                           "sizes or type?)" FIX, d->subject,
                            (unsigned long long)(held - (uint64_t)d->byte_skip - bytes)), 0;
    return 1;
}

/* ---- the header ----------------------------------------------------------------------- */

/* teem's kinds of an independent (domain) axis; any other kind is ITK's component axis */
static int domain_kind(const char *k)
{
    return !strcasecmp(k, "domain") || !strcasecmp(k, "space") || !strcasecmp(k, "time") || !strcmp(k, "???") ||
           !strcasecmp(k, "none");
}

static int check(const char *path, tk_image_info *info, char *text, unsigned char *out, uint64_t out_bytes)
{
    const size_t n = tk_image_read_prefix(path, text, HEADER_CAP);
    text[n] = 0;
    int dimension = 0, seen[64] = {0}, line_no = 0;
    uint64_t sizes[TK_IMAGE_MAX_AXES] = {0};
    int nsizes = -1, encoding = -1, range_axis = -1;
    unsigned bytes_per = 0;
    char cls = 0;
    int64_t byte_skip = 0, line_skip = 0;
    char endian[16] = "", data_file[VALUE_CAP] = "", type[64] = "", kinds[VALUE_CAP] = "";
    size_t pos = 0, data_start = 0;
    int blank = 0;
    while (pos < n) {
        const char *nl = memchr(text + pos, '\n', n - pos);
        if (!nl) {
            if (n == HEADER_CAP)
                return tk_set_error(TK_ERR_FORMAT, "%s: a NRRD header longer than 1 MiB" FIX, path), 0;
            nl = text + n;  /* a detached header may end without a newline */
        }
        size_t len = (size_t)(nl - (text + pos));
        char line[VALUE_CAP + 64];
        if (len >= sizeof line)
            return tk_set_error(TK_ERR_FORMAT, "%s: NRRD header line %d is longer than %zu bytes" FIX, path,
                                line_no + 1, sizeof line - 1),
                   0;
        memcpy(line, text + pos, len);
        line[len] = 0;
        if (len && line[len - 1] == '\r') line[--len] = 0;
        pos = (size_t)(nl - text) + 1;
        ++line_no;
        if (memchr(line, 0, len))
            return tk_set_error(TK_ERR_FORMAT, "%s: NRRD header line %d holds a NUL byte" FIX, path, line_no), 0;
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
            return tk_set_error(TK_ERR_FORMAT, "%s: NRRD header line %d is not \"field: value\": '%.60s'" FIX, path,
                                line_no, line),
                   0;
        *colon = 0;
        const char *field = line, *value = colon + 2;
        while (*value == ' ') ++value;
        int id = -1;
        for (int k = 0; kFields[k]; ++k)
            if (!strcmp(field, kFields[k])) id = k;
        if (id < 0)
            return tk_set_error(TK_ERR_FORMAT, "%s: NRRD header line %d: unknown field \"%.60s\"" FIX, path, line_no,
                                field),
                   0;
        if (seen[id]++)
            return tk_set_error(TK_ERR_FORMAT, "%s: NRRD header line %d: field \"%s\" given twice" FIX, path, line_no,
                                field),
                   0;
        char copy[VALUE_CAP];
        snprintf(copy, sizeof copy, "%s", value);
        char *tok[TK_IMAGE_MAX_AXES + 2];
        if (!strcmp(field, "dimension")) {
            uint64_t d;
            if (!tk_image_parse_u64(value, &d) || d < 1 || d > TK_IMAGE_MAX_AXES)
                return tk_set_error(TK_ERR_FORMAT,
                                    "%s: NRRD dimension '%.40s' is not from 1 to %d (the tools read up "
                                    "to 4-D images and 3-D vector volumes)"
                                    "; give at most 5 axes (e.g. unu slice or unu axmerge)",
                                    path, value, TK_IMAGE_MAX_AXES),
                       0;
            dimension = (int)d;
        } else if (!strcmp(field, "sizes")) {
            nsizes = tk_image_split(copy, " \t", tok, TK_IMAGE_MAX_AXES);
            for (int k = 0; k < nsizes && k < TK_IMAGE_MAX_AXES; ++k)
                if (!tk_image_parse_u64(tok[k], &sizes[k]) || sizes[k] < 1)
                    return tk_set_error(TK_ERR_FORMAT, "%s: NRRD sizes: '%.40s' is not an axis size of 1 or more" FIX,
                                        path, tok[k]), 0;
        } else if (!strcmp(field, "type")) {
            snprintf(type, sizeof type, "%s", value);
            if (!(bytes_per = type_bytes(value, &cls)))
                return tk_set_error(TK_ERR_FORMAT, "%s: NRRD type '%.40s' is not an integer or float type the tools "
                                                   "read" "; convert it (e.g. unu convert -t float)", path, value), 0;
        } else if (!strcmp(field, "encoding")) {
            if (!strcmp(value, "raw")) encoding = TK_IMAGE_ENCODING_RAW;
            else if (!strcmp(value, "gzip") || !strcmp(value, "gz")) encoding = TK_IMAGE_ENCODING_GZIP;
            else if (!strcmp(value, "ascii") || !strcmp(value, "text") || !strcmp(value, "txt"))
                encoding = TK_IMAGE_ENCODING_ASCII;
            else if (!strcmp(value, "hex")) encoding = TK_IMAGE_ENCODING_HEX;
            else if (!strcmp(value, "bzip2") || !strcmp(value, "bz2")) encoding = TK_IMAGE_ENCODING_BZIP2;
            else
                return tk_set_error(TK_ERR_FORMAT,
                                    "%s: NRRD encoding '%.40s' is none of raw, gzip (gz), ascii (text, "
                                    "txt), hex, bzip2 (bz2)"
                                    "; re-save it in one of them (e.g. unu save -e gzip)",
                                    path, value),
                       0;
        } else if (!strcmp(field, "endian")) {
            if (strcmp(value, "little") && strcmp(value, "big"))
                return tk_set_error(TK_ERR_FORMAT, "%s: NRRD endian '%.40s' is neither little nor big" FIX, path,
                                    value),
                       0;
            snprintf(endian, sizeof endian, "%s", value);
        } else if (!strcmp(field, "data file") || !strcmp(field, "datafile")) {
            if (!strncmp(value, "LIST", 4) || strchr(value, '%') || strpbrk(value, " \t") || !*value)
                return tk_set_error(TK_ERR_FORMAT,
                                    "%s: NRRD data file '%.60s': the tools read one data file (no LIST, "
                                    "no numbered files)"
                                    "; join the data into one file (e.g. unu save)",
                                    path, value),
                       0;
            snprintf(data_file, sizeof data_file, "%s", value);
        } else if (!strcmp(field, "byte skip") || !strcmp(field, "byteskip")) {
            if (!tk_image_parse_i64(value, &byte_skip) || byte_skip < -1)
                return tk_set_error(TK_ERR_FORMAT, "%s: NRRD byte skip '%.40s' is not -1 or a byte count" FIX, path,
                                    value),
                       0;
        } else if (!strcmp(field, "line skip") || !strcmp(field, "lineskip")) {
            if (!tk_image_parse_i64(value, &line_skip) || line_skip < 0 || line_skip > 1000000)
                return tk_set_error(TK_ERR_FORMAT, "%s: NRRD line skip '%.40s' is not a line count" FIX, path, value),
                       0;
        } else if (!strcmp(field, "kinds")) {
            snprintf(kinds, sizeof kinds, "%s", value);
        } else if (!strcmp(field, "space directions") || !strcmp(field, "space origin") ||
                   !strcmp(field, "measurement frame") || !strcmp(field, "thicknesses")) {
            if (!check_numbers(path, field, value, !strcmp(field, "thicknesses"))) return 0;
        } else if (!strcmp(field, "spacings")) {
            if (!check_numbers(path, field, value, 1)) return 0;
        }
    }
    if (!dimension) return tk_set_error(TK_ERR_FORMAT, "%s: NRRD header without \"dimension\"" FIX, path), 0;
    if (nsizes != dimension)
        return tk_set_error(TK_ERR_FORMAT, "%s: NRRD sizes: %s%d values for dimension %d" FIX, path,
                            nsizes < 0 ? "no field, " : "", nsizes < 0 ? 0 : nsizes, dimension), 0;
    if (!bytes_per) return tk_set_error(TK_ERR_FORMAT, "%s: NRRD header without \"type\"" FIX, path), 0;
    if (encoding < 0) return tk_set_error(TK_ERR_FORMAT, "%s: NRRD header without \"encoding\"" FIX, path), 0;
    if (bytes_per > 1 && !endian[0] && encoding != TK_IMAGE_ENCODING_ASCII)
        return tk_set_error(TK_ERR_FORMAT, "%s: NRRD header without \"endian\" for %s data" FIX, path, type), 0;
    if (encoding != TK_IMAGE_ENCODING_RAW && byte_skip < 0)
        return tk_set_error(TK_ERR_FORMAT, "%s: NRRD byte skip -1 is for raw data only" FIX, path), 0;
    if (kinds[0]) {  /* the first axis of a non-domain kind (teem's range axis: ITK's components) */
        char *ktok[TK_IMAGE_MAX_AXES + 1];
        const int nk = tk_image_split(kinds, " \t", ktok, TK_IMAGE_MAX_AXES);
        for (int k = 0; k < nk && k < dimension; ++k)
            if (!domain_kind(ktok[k]) && range_axis < 0) range_axis = k;
    }
    uint64_t bytes = bytes_per, count = 1;
    for (int k = 0; k < dimension; ++k)
        if (!(bytes = tk_image_mul(bytes, sizes[k])) || !(count = tk_image_mul(count, sizes[k])))
            return tk_set_error(TK_ERR_FORMAT, "%s: NRRD sizes: the data's size overflows 64 bits" FIX, path), 0;
    info->format = TK_IMAGE_NRRD;
    info->encoding = (tk_image_encoding)encoding;
    info->compressed = encoding == TK_IMAGE_ENCODING_GZIP || encoding == TK_IMAGE_ENCODING_BZIP2;
    info->own_read = encoding == TK_IMAGE_ENCODING_ASCII || encoding == TK_IMAGE_ENCODING_HEX ||
                     encoding == TK_IMAGE_ENCODING_BZIP2;
    info->value_bytes = (int)bytes_per;
    info->range_axis = range_axis;
    info->files = 1;
    info->axes = dimension;
    memcpy(info->size, sizes, sizeof sizes);
    info->components = 1;
    info->bytes = bytes;
    if (out && out_bytes != bytes)
        return tk_set_error(TK_ERR_IO,
                            "%s: the file changed while it was read (%llu bytes of data, %llu when it was "
                            "checked); read it again once nothing writes it",
                            path, (unsigned long long)bytes, (unsigned long long)out_bytes),
               0;

    const char *file = path;
    uint64_t offset = 0;
    if (data_file[0]) {
        tk_image_sibling(path, data_file, info->data_file, sizeof info->data_file);
        file = info->data_file;
        if (tk_image_file_size(path, file) < 0) return 0;
    } else {
        if (!blank)
            return tk_set_error(TK_ERR_FORMAT, "%s: NRRD header without a blank line before its data (and no \"data "
                                               "file\"): truncated?" DAMAGED, path), 0;
        snprintf(info->data_file, sizeof info->data_file, "%s", path);
        offset = data_start;
    }
    /* line skip: whole lines of the data file before the data (teem skips them unread) */
    if (line_skip > 0) {
        FILE *f = fopen(file, "rb");
        if (!f) return tk_set_error(TK_ERR_IO, "%s: cannot open the data file %s" DATAFILE, path, file), 0;
        int c = 0;
        if (fseeko(f, (off_t)offset, SEEK_SET) != 0) c = EOF;
        for (int64_t k = 0; k < line_skip && c != EOF;)
            if ((c = fgetc(f)) == '\n') ++k, offset = (uint64_t)ftello(f);
        fclose(f);
        if (c == EOF)
            return tk_set_error(TK_ERR_FORMAT, "%s: NRRD line skip %lld: %s ends first" DAMAGED, path,
                                (long long)line_skip, file),
                   0;
    }
    char subject_buf[8400];
    const char *subject = tk_image_subject(path, file, subject_buf, sizeof subject_buf);
    const data_desc d = {path, file, subject, (tk_image_encoding)encoding, offset, byte_skip, count, bytes, bytes_per,
                         cls, !strcmp(endian, "big"), type};
    switch (encoding) {
    case TK_IMAGE_ENCODING_GZIP: {
        uint64_t expected;
        if (__builtin_add_overflow(bytes, (uint64_t)byte_skip, &expected))
            return tk_set_error(TK_ERR_FORMAT, "%s: NRRD byte skip plus the data's size overflows" FIX, path), 0;
        return tk_inflate_check(file, offset, TK_INFLATE_GZIP, expected, subject, NULL, 0, NULL, NULL);
    }
    case TK_IMAGE_ENCODING_ASCII: return data_ascii(&d, out);
    case TK_IMAGE_ENCODING_HEX: return data_hex(&d, out);
    case TK_IMAGE_ENCODING_BZIP2: return data_bzip2(&d, out);
    default: return data_raw(&d);
    }
}

static int nrrd(const char *path, tk_image_info *info, unsigned char *out, uint64_t out_bytes)
{
    /* the header's text on the heap (not in thread-local storage, which every thread of
     * the process, ITK's pool included, would carry) */
    char *text = malloc(HEADER_CAP + 1);
    if (!text) return tk_set_error(TK_ERR_MEMORY, "%s: out of memory for the NRRD header" MEMORY, path), 0;
    const int ok = check(path, info, text, out, out_bytes);
    free(text);
    return ok;
}

int tk_image_check_nrrd(const char *path, tk_image_info *info) { return nrrd(path, info, NULL, 0); }

int tk_image_nrrd_data(const char *path, tk_image_info *info, unsigned char *out, uint64_t out_bytes)
{
    return nrrd(path, info, out, out_bytes);
}
