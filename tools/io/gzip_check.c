/* Whole-stream checks of compressed image data: see gzip_check.h. */
#define _FILE_OFFSET_BITS 64
#define _POSIX_C_SOURCE 200809L
#include "gzip_check.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tk_status.h"

#ifdef TK_HAVE_ZLIB
#include <zlib.h>
#endif

/* What the user can do, the end of every refusal (the tools' messages: the file, what is
 * wrong, what to do). */
#define DAMAGED "; copy or export the file again: it is damaged or incomplete"
#define NO_ZLIB "; install zlib (Debian: zlib1g-dev) and rebuild the tools, or decompress the file"

uint64_t tk_inflate_bound(uint64_t compressed)
{
    /* deflate's densest code: a 258-byte match in 1 bit each of a length and a distance
     * code (2 bits per 258 bytes, 1032:1), plus a little for block headers */
    return compressed > UINT64_MAX / 1032 ? UINT64_MAX : compressed * 1032 + 4096;
}

void tk_decode_file(FILE *f, const tk_stream_decoder *decoder, unsigned char *in, unsigned char *out, size_t chunk,
                    uint64_t expected, tk_inflate_sink sink, void *ctx, tk_decoded *result)
{
    memset(result, 0, sizeof *result);
    unsigned char *next = in;
    size_t avail = 0;
    for (;;) {
        if (avail == 0) {
            avail = fread(in, 1, chunk, f);
            next = in;
            if (avail == 0) {
                if (ferror(f)) result->why = "a read error";
                break;
            }
        }
        if (result->ended) {
            /* after a complete stream: another stream, or the end, nothing else */
            const int another = decoder->next_stream(decoder->state, next, avail, &result->why);
            if (another <= 0) {
                if (another == 0) result->why = "trailing";
                break;
            }
            result->ended = 0;
        }
        size_t used = 0, made = 0;
        const char *why = NULL;
        const tk_decode_status status = decoder->step(decoder->state, next, avail, &used, out, chunk, &made, &why);
        next += used, avail -= used;
        result->used += used;
        if (made > expected - result->total) {
            result->why = "longer";
            break;
        }
        if (sink && made && !sink(ctx, out, made, result->total)) {
            result->why = "sink";
            break;
        }
        result->total += made;
        if (status == TK_DECODE_END) {
            result->ended = 1;
            continue;
        }
        if (status == TK_DECODE_FAILED) {
            result->why = why;
            break;
        }
    }
}

#ifdef TK_HAVE_ZLIB

enum { CHUNK = 1 << 16 };

typedef struct zlib_state {
    z_stream z;
    tk_inflate_kind kind;
} zlib_state;

static tk_decode_status zlib_step(void *state, unsigned char *in, size_t avail, size_t *used, unsigned char *out,
                                  size_t cap, size_t *made, const char **why)
{
    z_stream *z = &((zlib_state *)state)->z;
    z->next_in = in;
    z->avail_in = (uInt)avail;
    z->next_out = out;
    z->avail_out = (uInt)cap;
    const int ret = inflate(z, Z_NO_FLUSH);
    *used = avail - z->avail_in;
    *made = cap - z->avail_out;
    if (ret == Z_STREAM_END) return TK_DECODE_END;
    if (ret == Z_NEED_DICT || ret == Z_DATA_ERROR || ret == Z_MEM_ERROR || ret == Z_STREAM_ERROR) {
        *why = z->msg ? z->msg : "corrupt data";
        return TK_DECODE_FAILED;
    }
    /* Z_BUF_ERROR with input left cannot happen (output space was given); with no input
     * left the loop reads more */
    return TK_DECODE_MORE;
}

/* gzip itself concatenates members: another member may follow one (never a zlib stream) */
static int zlib_next_stream(void *state, const unsigned char *next, size_t avail, const char **why)
{
    zlib_state *s = state;
    (void)why;
    if (s->kind != TK_INFLATE_GZIP || avail < 1 || next[0] != 0x1f) return 0;
    inflateReset(&s->z);
    return 1;
}

int tk_inflate_check_into(const char *path, uint64_t offset, tk_inflate_kind kind, uint64_t expected, const char *what,
                          tk_inflate_sink sink, void *ctx, uint64_t *consumed)
{
    if (consumed) *consumed = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return tk_set_error(TK_ERR_IO, "%s: cannot open: %s; check the name and that it is readable", what,
                            strerror(errno)), 0;
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || (uint64_t)st.st_size < offset || fseeko(f, (off_t)offset, SEEK_SET) != 0) {
        fclose(f);
        return tk_set_error(TK_ERR_FORMAT,
                            "%s: the compressed data should start at byte %llu, past the file's end" DAMAGED, what,
                            (unsigned long long)offset),
               0;
    }
    const uint64_t stored = (uint64_t)st.st_size - offset;
    if (expected > tk_inflate_bound(stored)) {
        fclose(f);
        return tk_set_error(TK_ERR_FORMAT,
                            "%s: the header claims %llu bytes of data, but %llu compressed bytes cannot inflate to "
                            "more than %llu (deflate's limit is about 1032:1): the file is truncated or the header "
                            "is wrong; copy or export it again",
                            what, (unsigned long long)expected, (unsigned long long)stored,
                            (unsigned long long)tk_inflate_bound(stored)),
               0;
    }
    unsigned char *in = malloc(2 * CHUNK), *out = in + CHUNK;
    if (!in) {
        fclose(f);
        return tk_set_error(TK_ERR_MEMORY, "%s: out of memory; free memory, or read a smaller image", what), 0;
    }
    zlib_state z;
    memset(&z, 0, sizeof z);
    z.kind = kind;
    const int bits = kind == TK_INFLATE_GZIP ? 15 + 16 : kind == TK_INFLATE_ZLIB ? 15 : 15 + 32;
    if (inflateInit2(&z.z, bits) != Z_OK) {
        free(in);
        fclose(f);
        return tk_set_error(TK_ERR_MEMORY,
                            "%s: cannot start zlib (out of memory?); free memory, or read a smaller image", what),
               0;
    }
    const tk_stream_decoder decoder = {zlib_step, zlib_next_stream, &z};
    tk_decoded r;
    tk_decode_file(f, &decoder, in, out, CHUNK, expected, sink, ctx, &r);
    inflateEnd(&z.z);
    free(in);
    fclose(f);
    if (consumed) *consumed = r.used;
    int ok = 0;
    if (r.why && !strcmp(r.why, "sink"))
        ;  /* the sink's message */
    else if (!r.why && !r.ended && r.total == expected)
        tk_set_error(TK_ERR_FORMAT, "%s: truncated: the compressed stream ends without its checksum and length "
                                    "(the data cannot be verified)" DAMAGED, what);
    else if (!r.why && !r.ended)
        tk_set_error(TK_ERR_FORMAT,
                     "%s: the compressed data end before their stream does (truncated after %llu of "
                     "%llu bytes)" DAMAGED,
                     what, (unsigned long long)r.total, (unsigned long long)expected);
    else if (r.why && !strcmp(r.why, "trailing"))
        tk_set_error(TK_ERR_FORMAT,
                     "%s: %llu bytes of something else follow the end of the compressed data "
                     "(a damaged or concatenated file); remove what follows, or copy or export it again",
                     what, (unsigned long long)(stored - r.used));
    else if (r.why && !strcmp(r.why, "longer"))
        tk_set_error(TK_ERR_FORMAT, "%s: the compressed data hold more than the %llu bytes the header claims (a wrong "
                                    "header?); re-save it with the tool that wrote it", what,
                     (unsigned long long)expected);
    else if (r.why)
        tk_set_error(TK_ERR_FORMAT, "%s: corrupt compressed data after %llu bytes: %s (zlib)" DAMAGED, what,
                     (unsigned long long)r.total, r.why);
    else if (r.total != expected)
        tk_set_error(TK_ERR_FORMAT, "%s: the compressed data hold %llu bytes, the header claims %llu (truncated or "
                                    "a wrong header); copy or export it again, or re-save it with the tool that "
                                    "wrote it", what, (unsigned long long)r.total, (unsigned long long)expected);
    else
        ok = 1;
    return ok;
}

typedef struct head_copy {
    unsigned char *head;
    uint64_t size, *got;
} head_copy;

static int copy_head(void *ctx, const unsigned char *bytes, uint64_t n, uint64_t at)
{
    head_copy *h = ctx;
    if (at < h->size) {
        const uint64_t take = h->size - at < n ? h->size - at : n;
        memcpy(h->head + at, bytes, (size_t)take);
        if (h->got) *h->got = at + take;
    }
    return 1;
}

int tk_inflate_check(const char *path, uint64_t offset, tk_inflate_kind kind, uint64_t expected, const char *what,
                     unsigned char *head, uint64_t head_size, uint64_t *head_got, uint64_t *consumed)
{
    if (head_got) *head_got = 0;
    head_copy h = {head, head_size, head_got};
    return tk_inflate_check_into(path, offset, kind, expected, what, head ? copy_head : NULL, &h, consumed);
}

uint64_t tk_gzip_head(const char *path, unsigned char *out, uint64_t n)
{
    gzFile g = gzopen(path, "rb");
    if (!g)
        return tk_set_error(TK_ERR_IO, "%s: cannot open: %s; check the name and that it is readable", path,
                            strerror(errno)), 0;
    const int got = gzread(g, out, (unsigned)(n > (1u << 20) ? (1u << 20) : n));
    gzclose(g);
    if (got <= 0) return tk_set_error(TK_ERR_FORMAT, "%s: not a readable gzip file" DAMAGED, path), 0;
    return (uint64_t)got;
}

#else

int tk_inflate_check_into(const char *path, uint64_t offset, tk_inflate_kind kind, uint64_t expected, const char *what,
                          tk_inflate_sink sink, void *ctx, uint64_t *consumed)
{
    (void)path, (void)offset, (void)kind, (void)expected, (void)sink, (void)ctx, (void)consumed;
    return tk_set_error(TK_ERR_UNSUPPORTED, "%s: compressed data, and this build has no zlib" NO_ZLIB, what), 0;
}

int tk_inflate_check(const char *path, uint64_t offset, tk_inflate_kind kind, uint64_t expected, const char *what,
                     unsigned char *head, uint64_t head_size, uint64_t *head_got, uint64_t *consumed)
{
    (void)path, (void)offset, (void)kind, (void)expected, (void)head, (void)head_size, (void)head_got, (void)consumed;
    return tk_set_error(TK_ERR_UNSUPPORTED, "%s: compressed data, and this build has no zlib" NO_ZLIB, what), 0;
}

uint64_t tk_gzip_head(const char *path, unsigned char *out, uint64_t n)
{
    (void)out, (void)n;
    return tk_set_error(TK_ERR_UNSUPPORTED, "%s: gzip-compressed, and this build has no zlib" NO_ZLIB, path), 0;
}

#endif
