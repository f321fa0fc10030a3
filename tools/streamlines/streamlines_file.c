/* The buffered output file: the formats write small pieces (a point, a count), so they go
 * through a buffer, and every write is checked (tk_write_all) so that a full disk is an error
 * naming the file, not a short file. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "streamlines_internal.h"

#define SL_BUFFER (1u << 20)

int sl_file_init(sl_file *f, int fd)
{
    memset(f, 0, sizeof *f);
    f->fd = fd;
    f->buf = malloc(SL_BUFFER);
    if (!f->buf) f->err = ENOMEM;
    return f->err;
}

int sl_file_flush(sl_file *f)
{
    if (f->err) return f->err;
    if (f->len) {
        int e = tk_write_all(f->fd, f->buf, f->len);
        if (e) return f->err = e;
        f->len = 0;
    }
    return 0;
}

int sl_file_put(sl_file *f, const void *data, size_t bytes)
{
    const unsigned char *p = data;
    while (bytes && !f->err) {
        if (f->len == SL_BUFFER && sl_file_flush(f)) break;
        size_t k = SL_BUFFER - f->len < bytes ? SL_BUFFER - f->len : bytes;
        memcpy(f->buf + f->len, p, k);
        f->len += k;
        f->size += k;
        p += k;
        bytes -= k;
    }
    return f->err;
}

int sl_file_pwrite(sl_file *f, uint64_t offset, const void *data, size_t bytes)
{
    if (sl_file_flush(f)) return f->err;
    const unsigned char *p = data;
    while (bytes) {
        ssize_t k = pwrite(f->fd, p, bytes, (off_t)offset);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return f->err = k < 0 ? errno : EIO;
        p += k;
        offset += (uint64_t)k;
        bytes -= (size_t)k;
    }
    return 0;
}

int sl_file_copy(sl_file *dst, sl_file *src, uint32_t *crc)
{
    if (sl_file_flush(src)) return dst->err = src->err;
    unsigned char block[65536];
    for (uint64_t at = 0; at < src->size && !dst->err;) {
        size_t want = src->size - at < sizeof block ? (size_t)(src->size - at) : sizeof block;
        ssize_t k = pread(src->fd, block, want, (off_t)at);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return dst->err = k < 0 ? errno : EIO;
        if (crc) *crc = sl_crc32(*crc, block, (size_t)k);
        sl_file_put(dst, block, (size_t)k);
        at += (uint64_t)k;
    }
    return dst->err;
}

void sl_file_discard(sl_file *f)
{
    free(f->buf);
    f->buf = NULL;
    if (f->fd >= 0) close(f->fd);
    f->fd = -1;
}
