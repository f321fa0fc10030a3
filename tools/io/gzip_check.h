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

#include <stdint.h>

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

/* The first up to n inflated bytes of a gzip file (for recognising a .nii.gz by its
 * header); returns how many (0 on any error, message set), without checking the rest. */
uint64_t tk_gzip_head(const char *path, unsigned char *out, uint64_t n);

#ifdef __cplusplus
}
#endif
#endif
