/* The few zip records a TRX file needs (PKWARE's APPNOTE.TXT): stored entries (method 0),
 * Zip64 where a size or an offset passes 4 GiB.  Written by hand, so that the core needs no
 * zip library. */
#ifndef TK_STREAMLINES_ZIP_H
#define TK_STREAMLINES_ZIP_H

#include <stdint.h>

#include "streamlines_internal.h"

typedef struct sl_zip_entry {
    const char *name;
    uint64_t header_at; /* the local header's offset */
    uint64_t size;
    uint32_t crc;
} sl_zip_entry;

/* A local header whose sizes and CRC are not known yet: it carries a Zip64 extra field
 * (sizes 0xFFFFFFFF in the fixed part), filled by sl_zip_patch_local once the data is
 * written, so that the data can stream right after it. */
void sl_zip_local_open(sl_file *f, sl_zip_entry *e);
int sl_zip_patch_local(sl_file *f, const sl_zip_entry *e);
/* A local header with known size and CRC (no extra field when it fits 32 bits). */
void sl_zip_local_known(sl_file *f, sl_zip_entry *e);
/* The central directory of the n entries and the end records. */
void sl_zip_central(sl_file *f, const sl_zip_entry *e, int n);

#endif
