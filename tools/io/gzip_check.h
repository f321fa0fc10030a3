/* Proving a compressed stream whole before any image library reads it.
 *
 * zlib's inflate checks a gzip member's CRC-32 and length (and a zlib stream's Adler-32)
 * only when it is driven to Z_STREAM_END; readers that stop once they have the bytes they
 * want (gzread, MetaIO, ITK's NIfTI library) take a stream cut short, or followed by
 * junk, as good and fill the rest with zeros.  tk_inflate_check reads a file from an
 * offset to its end, inflates every byte (into a small scratch buffer: nothing the size of
 * the image is allocated), and accepts it only when
 *   - every stream ends (Z_STREAM_END: checksums and lengths verified by zlib),
 *   - the bytes after the last gzip member are nothing (or only further gzip members,
 *     which gzip itself concatenates), and
 *   - the output is exactly `expected` bytes (never more: inflating stops one byte past).
 * Before inflating it refuses a claim that deflate cannot reach from the stream's size
 * (deflate's best ratio is about 1032:1), so a 69-byte file claiming gigabytes is
 * refused at once. */
#ifndef TK_GZIP_CHECK_H
#define TK_GZIP_CHECK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    TK_INFLATE_GZIP = 1, /* gzip members (.gz files, NRRD's "encoding: gzip") */
    TK_INFLATE_ZLIB = 2, /* one zlib stream (MetaImage's CompressedData) */
    TK_INFLATE_AUTO = 3  /* either, by its first bytes (zlib's windowBits 15 + 32) */
} tk_inflate_kind;

/* The most a deflate stream of n bytes can inflate to (the format's 258 bytes per
 * two-bit code, plus slack for the headers): a bound for refusing claims up front. */
uint64_t tk_inflate_bound(uint64_t compressed);

/* 1 when path's bytes from offset to the end are whole streams of kind inflating to
 * exactly `expected` bytes; else 0 with tk_last_error() as "WHAT: ..." saying what is
 * wrong (truncated, corrupt, trailing data, more or fewer bytes than claimed).  When head
 * is not NULL, the first head_size inflated bytes are copied there (fewer when the stream
 * is shorter; *head_got says how many).  *consumed, when not NULL, receives the number of
 * compressed bytes the streams took (for MetaImage's CompressedDataSize).  A build without
 * zlib refuses every compressed stream. */
int tk_inflate_check(const char *path, uint64_t offset, tk_inflate_kind kind, uint64_t expected, const char *what,
                     unsigned char *head, uint64_t head_size, uint64_t *head_got, uint64_t *consumed);

/* The same check, each piece of the inflated output handed to sink(ctx, bytes, n, at) as it
 * comes (at: its position in the output; never past `expected`), so that a reader can keep
 * the data while the stream is proven whole: the data are good only when this returns 1.
 * A sink returning 0 stops the check (0 returned; the sink sets the message). */
typedef int (*tk_inflate_sink)(void *ctx, const unsigned char *bytes, uint64_t n, uint64_t at);
int tk_inflate_check_into(const char *path, uint64_t offset, tk_inflate_kind kind, uint64_t expected, const char *what,
                          tk_inflate_sink sink, void *ctx, uint64_t *consumed);

/* ---- the decoding loop zlib's check above and NRRD's bzip2 check share ----------------
 * A decoder of one compressed format, stepped by tk_decode_file over a file's bytes. */
typedef enum { TK_DECODE_MORE, TK_DECODE_END, TK_DECODE_FAILED } tk_decode_status;
typedef struct tk_stream_decoder {
    /* Decodes from in (avail bytes) into out (cap bytes); *used and *made: the bytes taken
     * and given.  TK_DECODE_END where a stream ended, TK_DECODE_FAILED with *why (the
     * decoder's words: corrupt data, out of memory) where it cannot go on. */
    tk_decode_status (*step)(void *state, unsigned char *in, size_t avail, size_t *used, unsigned char *out,
                             size_t cap, size_t *made, const char **why);
    /* After a stream's end, with next (avail >= 1 bytes) left: 1 where they start another
     * stream (the decoder is ready for it), 0 where they are something else, -1 with *why
     * where the decoder cannot start again. */
    int (*next_stream)(void *state, const unsigned char *next, size_t avail, const char **why);
    void *state;
} tk_stream_decoder;

/* What tk_decode_file found: the bytes made (total) and read (used), whether the last
 * stream ended, and why it stopped early: NULL, "a read error", "trailing" (something
 * else after a stream's end), "longer" (more than expected), "sink" (the sink refused:
 * its message) or the decoder's why. */
typedef struct tk_decoded {
    uint64_t total, used;
    int ended;
    const char *why;
} tk_decoded;

/* Decodes f from where it stands to its end through decoder, reading into in and decoding
 * into out (chunk bytes each), every piece handed to sink (when not NULL) as it comes;
 * stops at the first problem, or one piece past expected bytes.  Its caller judges the
 * result: every stream ended, nothing after them, exactly expected bytes. */
void tk_decode_file(FILE *f, const tk_stream_decoder *decoder, unsigned char *in, unsigned char *out, size_t chunk,
                    uint64_t expected, tk_inflate_sink sink, void *ctx, tk_decoded *result);

/* The first up to n inflated bytes of a gzip file (for recognising a .nii.gz by its
 * header); returns how many (0 on any error, message set), without checking the rest. */
uint64_t tk_gzip_head(const char *path, unsigned char *out, uint64_t n);

#ifdef __cplusplus
}
#endif
#endif
