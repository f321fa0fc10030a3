/* Zip records for TRX: stored entries, Zip64 where needed (see streamlines_zip.h).  Python's
 * zipfile (which trx-python reads with, taking each entry's data offset from its own local
 * header) takes sizes and offsets from the central directory, and from its Zip64 extra field
 * where the 32-bit field is 0xFFFFFFFF. */
#include <string.h>

#include "streamlines_zip.h"

#define LOCAL_SIG 0x04034b50u
#define CENTRAL_SIG 0x02014b50u
#define END_SIG 0x06054b50u
#define END64_SIG 0x06064b50u
#define LOCATOR64_SIG 0x07064b50u
#define MAX32 0xFFFFFFFFu
#define VERSION_ZIP64 45
#define DOS_DATE ((0 << 9) | (1 << 5) | 1) /* 1980-01-01: a fixed date keeps files reproducible */

static void local_header(unsigned char *h, const sl_zip_entry *e, uint32_t crc, uint32_t size32, uint16_t extra)
{
    size_t name = strlen(e->name);
    sl_le32(h, LOCAL_SIG);
    sl_le16(h + 4, extra ? VERSION_ZIP64 : 20);
    sl_le16(h + 6, 0);     /* flags: no data descriptor, names in ASCII */
    sl_le16(h + 8, 0);     /* stored */
    sl_le16(h + 10, 0);    /* time */
    sl_le16(h + 12, DOS_DATE);
    sl_le32(h + 14, crc);
    sl_le32(h + 18, size32); /* compressed */
    sl_le32(h + 22, size32); /* uncompressed */
    sl_le16(h + 26, (uint16_t)name);
    sl_le16(h + 28, extra);
}

void sl_zip_local_open(sl_file *f, sl_zip_entry *e)
{
    unsigned char h[30 + 20];
    e->header_at = f->size;
    local_header(h, e, 0, MAX32, 20);
    sl_file_put(f, h, 30);
    sl_file_put(f, e->name, strlen(e->name));
    unsigned char x[20];
    sl_le16(x, 1); /* Zip64 extended information */
    sl_le16(x + 2, 16);
    sl_le64(x + 4, 0);  /* uncompressed size, patched */
    sl_le64(x + 12, 0); /* compressed size, patched */
    sl_file_put(f, x, 20);
}

int sl_zip_patch_local(sl_file *f, const sl_zip_entry *e)
{
    unsigned char crc[4], sizes[16];
    sl_le32(crc, e->crc);
    sl_le64(sizes, e->size);
    sl_le64(sizes + 8, e->size);
    uint64_t extra_at = e->header_at + 30 + strlen(e->name);
    if (sl_file_pwrite(f, e->header_at + 14, crc, 4) || sl_file_pwrite(f, extra_at + 4, sizes, 16)) return f->err;
    return 0;
}

void sl_zip_local_known(sl_file *f, sl_zip_entry *e)
{
    unsigned char h[30];
    e->header_at = f->size;
    int big = e->size >= MAX32;
    local_header(h, e, e->crc, big ? MAX32 : (uint32_t)e->size, big ? 20 : 0);
    sl_file_put(f, h, 30);
    sl_file_put(f, e->name, strlen(e->name));
    if (big) {
        unsigned char x[20];
        sl_le16(x, 1);
        sl_le16(x + 2, 16);
        sl_le64(x + 4, e->size);
        sl_le64(x + 12, e->size);
        sl_file_put(f, x, 20);
    }
}

void sl_zip_central(sl_file *f, const sl_zip_entry *e, int n)
{
    uint64_t start = f->size;
    for (int i = 0; i < n; ++i) {
        /* Zip64 extra: the fields that do not fit, in the order size, compressed size, offset. */
        unsigned char x[4 + 24], h[46];
        uint16_t xl = 4;
        int big_size = e[i].size >= MAX32, big_at = e[i].header_at >= MAX32;
        if (big_size) {
            sl_le64(x + xl, e[i].size);
            sl_le64(x + xl + 8, e[i].size);
            xl += 16;
        }
        if (big_at) {
            sl_le64(x + xl, e[i].header_at);
            xl += 8;
        }
        sl_le16(x, 1);
        sl_le16(x + 2, (uint16_t)(xl - 4));
        size_t name = strlen(e[i].name);
        sl_le32(h, CENTRAL_SIG);
        sl_le16(h + 4, (3 << 8) | VERSION_ZIP64); /* made by: Unix */
        sl_le16(h + 6, VERSION_ZIP64);
        sl_le16(h + 8, 0);
        sl_le16(h + 10, 0);
        sl_le16(h + 12, 0);
        sl_le16(h + 14, DOS_DATE);
        sl_le32(h + 16, e[i].crc);
        sl_le32(h + 20, big_size ? MAX32 : (uint32_t)e[i].size);
        sl_le32(h + 24, big_size ? MAX32 : (uint32_t)e[i].size);
        sl_le16(h + 28, (uint16_t)name);
        sl_le16(h + 30, xl > 4 ? xl : 0);
        sl_le16(h + 32, 0); /* comment */
        sl_le16(h + 34, 0); /* disk */
        sl_le16(h + 36, 0); /* internal attributes */
        sl_le32(h + 38, 0100644u << 16); /* a regular file, rw-r--r-- */
        sl_le32(h + 42, big_at ? MAX32 : (uint32_t)e[i].header_at);
        sl_file_put(f, h, 46);
        sl_file_put(f, e[i].name, name);
        if (xl > 4) sl_file_put(f, x, xl);
    }
    uint64_t size = f->size - start;
    if (start >= MAX32 || size >= MAX32) {
        unsigned char z[56], l[20];
        uint64_t end64_at = f->size;
        sl_le32(z, END64_SIG);
        sl_le64(z + 4, 44);
        sl_le16(z + 12, (3 << 8) | VERSION_ZIP64);
        sl_le16(z + 14, VERSION_ZIP64);
        sl_le32(z + 16, 0);
        sl_le32(z + 20, 0);
        sl_le64(z + 24, (uint64_t)n);
        sl_le64(z + 32, (uint64_t)n);
        sl_le64(z + 40, size);
        sl_le64(z + 48, start);
        sl_file_put(f, z, 56);
        sl_le32(l, LOCATOR64_SIG);
        sl_le32(l + 4, 0);
        sl_le64(l + 8, end64_at);
        sl_le32(l + 16, 1);
        sl_file_put(f, l, 20);
    }
    unsigned char end[22];
    sl_le32(end, END_SIG);
    sl_le16(end + 4, 0);
    sl_le16(end + 6, 0);
    sl_le16(end + 8, (uint16_t)n);
    sl_le16(end + 10, (uint16_t)n);
    sl_le32(end + 12, size >= MAX32 ? MAX32 : (uint32_t)size);
    sl_le32(end + 16, start >= MAX32 ? MAX32 : (uint32_t)start);
    sl_le16(end + 20, 0);
    sl_file_put(f, end, 22);
}
