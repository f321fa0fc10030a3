/* NIfTI-1 and NIfTI-2 checks before the NIfTI library reads the file (image_probe.h).
 * The library behind ITK 5.2 takes a header's word: dim[k] = 0 or -3 silently becomes 1,
 * a vox_offset past the end or a short .img reads as zeros, a gzip stream cut short reads
 * as zeros, and a NaN in the transform its code selects aborts the process in vnl_svd.
 * Everything it would act on is checked here first; the geometry's numbers by
 * tk_nifti_parse (nifti_header.c). */
#define _FILE_OFFSET_BITS 64
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "gzip_check.h"
#include "image_probe.h"
#include "nifti_header.h"
#include "tk_status.h"

/* What the user can do, the end of every refusal (the tools' messages: the file, what is
 * wrong, what to do). */
#define RESAVE "; re-save it as NIfTI-1 (e.g. mrconvert IN OUT.nii, or nibabel)"
#define DAMAGED "; copy or export the file again: it is damaged or incomplete"

/* Bytes per value of NIfTI's real scalar types (0: not accepted: complex, RGB, float128,
 * unknown codes; the tools hold real values). */
static unsigned type_bytes(int datatype)
{
    switch (datatype) {
    case 2: case 256: return 1;     /* uint8, int8 */
    case 4: case 512: return 2;     /* int16, uint16 */
    case 8: case 768: case 16: return 4;  /* int32, uint32, float32 */
    case 64: case 1024: case 1280: return 8;  /* float64, int64, uint64 */
    default: return 0;
    }
}

static int ends_with_nocase(const char *s, const char *suffix)
{
    const size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !strcasecmp(s + n - k, suffix);
}

/* The .img of a .hdr (.hdr.gz: .img.gz), in the header name's case. */
static int pair_data_file(const char *path, char *out, size_t out_size)
{
    const size_t n = strlen(path);
    size_t at;
    if (ends_with_nocase(path, ".hdr")) at = n - 4;
    else if (ends_with_nocase(path, ".hdr.gz")) at = n - 7;
    else return 0;
    if (n + 1 > out_size) return 0;
    memcpy(out, path, n + 1);
    const int upper = path[at + 1] == 'H';
    memcpy(out + at + 1, upper ? "IMG" : "img", 3);
    return 1;
}

/* The data (bytes from offset) of file, raw or gzip by its first bytes: exactly bytes. */
static int check_data(const char *file, uint64_t offset, uint64_t bytes, const char *header_path)
{
    char subject_buf[8400];
    const char *subject = tk_image_subject(header_path, file, subject_buf, sizeof subject_buf);
    unsigned char magic[2] = {0, 0};
    FILE *f = fopen(file, "rb");
    if (!f) return tk_set_error(TK_ERR_IO, "%s: cannot open the data file %s; put it beside the header under "
                                          "that name, readable", header_path, file), 0;
    const size_t got = fread(magic, 1, 2, f);
    fclose(f);
    if (got == 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
        uint64_t expected;
        if (__builtin_add_overflow(offset, bytes, &expected))
            return tk_set_error(TK_ERR_FORMAT, "%s: vox_offset plus the data's size overflows" RESAVE, header_path), 0;
        return tk_inflate_check(file, 0, TK_INFLATE_GZIP, expected, subject, NULL, 0, NULL, NULL);
    }
    const int64_t size = tk_image_file_size(header_path, file);
    if (size < 0) return 0;
    if ((uint64_t)size < offset)
        return tk_set_error(TK_ERR_FORMAT, "%s: truncated: vox_offset %llu is past the end of %s (%lld bytes)" DAMAGED,
                            header_path, (unsigned long long)offset, file, (long long)size), 0;
    const uint64_t held = (uint64_t)size - offset;
    if (held < bytes)
        return tk_set_error(TK_ERR_FORMAT, "%s: truncated: the header claims %llu bytes of voxel data from byte %llu, "
                                           "%s holds %llu" DAMAGED, header_path, (unsigned long long)bytes,
                            (unsigned long long)offset, file, (unsigned long long)held), 0;
    if (held > bytes)
        return tk_set_error(TK_ERR_FORMAT,
                            "%s: %llu bytes after the voxel data that the header does not account for "
                            "(a wrong dim or datatype?)" RESAVE,
                            subject, (unsigned long long)(held - bytes)),
               0;
    return 1;
}

int tk_image_check_nifti(const char *path, const unsigned char *head, unsigned long n, int gzip, tk_image_info *info)
{
    tk_nifti_header h;
    const int parsed = tk_nifti_parse(head, n, &h, path);
    if (parsed < 0) return 0;
    if (parsed == 0) return tk_set_error(TK_ERR_FORMAT, "%s: a damaged NIfTI header (too short)" DAMAGED, path), 0;
    const int header_size = h.version == 1 ? 348 : 540;
    const unsigned char *size_field = head;
    const int little = size_field[0] == (header_size & 0xff) && size_field[1] == (header_size >> 8);
    const int big = size_field[3] == (header_size & 0xff) && size_field[2] == (header_size >> 8);
    if (!little || size_field[2] || size_field[3]) {
        if (!big || size_field[0] || size_field[1])
            return tk_set_error(TK_ERR_FORMAT, "%s: NIfTI-%d header whose sizeof_hdr is not %d" RESAVE, path, h.version,
                                header_size), 0;
    }
    const int pair = h.version == 1 ? head[345] == 'i' : head[5] == 'i';
    if (h.ndim < 1 || h.ndim > 7)
        return tk_set_error(TK_ERR_FORMAT, "%s: NIfTI header: dim[0] is %d, not a number of axes from 1 to 7" RESAVE,
                            path, h.ndim),
               0;
    /* trailing axes of size 1 do not count (a 3-D image stored as 5-D, x y z 1 1) */
    int axes = h.ndim;
    uint64_t count = 1;
    for (int k = 1; k <= h.ndim; ++k) {
        if (h.dim[k] < 1)
            return tk_set_error(TK_ERR_FORMAT,
                                "%s: NIfTI header: dim[%d] is %lld, but every axis of the %d-D image "
                                "needs at least 1 voxel" RESAVE,
                                path, k, (long long)h.dim[k], h.ndim),
                   0;
        if (!(count = tk_image_mul(count, (uint64_t)h.dim[k])))
            return tk_set_error(TK_ERR_FORMAT, "%s: NIfTI header: the voxel count overflows 64 bits" RESAVE, path), 0;
    }
    while (axes > 1 && h.dim[axes] == 1) --axes;
    if (axes > TK_IMAGE_MAX_AXES)
        return tk_set_error(TK_ERR_FORMAT,
                            "%s: NIfTI header: %d axes of more than one voxel, the tools read at most %d; "
                            "extract the volumes needed (e.g. mrconvert IN OUT.nii -coord 4 0)",
                            path, axes, TK_IMAGE_MAX_AXES),
               0;
    const unsigned bytes_per = type_bytes(h.datatype);
    if (!bytes_per)
        return tk_set_error(TK_ERR_FORMAT,
                            "%s: NIfTI datatype %d is not a real scalar type the tools read (8- to "
                            "64-bit integers, float32, float64); convert it (e.g. mrconvert IN OUT.nii -datatype "
                            "float32)",
                            path, h.datatype),
               0;
    if (h.bitpix != (int)(8 * bytes_per))
        return tk_set_error(TK_ERR_FORMAT, "%s: NIfTI header: bitpix %d does not match datatype %d (%u bits)" RESAVE,
                            path, h.bitpix, h.datatype, 8 * bytes_per),
               0;
    if (!isfinite(h.vox_offset) || h.vox_offset < (pair ? 0 : header_size) || h.vox_offset != floor(h.vox_offset) ||
        h.vox_offset > 1e15)
        return tk_set_error(TK_ERR_FORMAT, "%s: NIfTI header: vox_offset %g is not a whole byte offset %s" RESAVE, path,
                            h.vox_offset, pair ? "of 0 or more" : "at or after the header's end"), 0;
    const uint64_t bytes = tk_image_mul(count, bytes_per), offset = (uint64_t)h.vox_offset;
    if (!bytes)
        return tk_set_error(TK_ERR_FORMAT, "%s: NIfTI header: the data's size overflows 64 bits" RESAVE, path), 0;

    info->format = TK_IMAGE_NIFTI;
    info->nifti_version = h.version;
    info->compressed = gzip;
    info->axes = axes;
    for (int k = 0; k < axes; ++k) info->size[k] = (uint64_t)h.dim[k + 1];
    info->components = 1;
    info->bytes = bytes;
    if (pair) {
        if (!pair_data_file(path, info->data_file, sizeof info->data_file))
            return tk_set_error(TK_ERR_FORMAT,
                                "%s: a NIfTI header of a .hdr/.img pair (magic \"ni%d\") must be named "
                                ".hdr, its data .img; rename the pair NAME.hdr and NAME.img",
                                path, h.version),
                   0;
        if (!gzip) {
            const int64_t size = tk_image_file_size(path, path);
            if (size < 0) return 0;
            if (size > header_size + 16 * 4096)
                return tk_set_error(TK_ERR_FORMAT,
                                    "%s: a .hdr of %lld bytes: more than a header and its extensions" RESAVE, path,
                                    (long long)size),
                       0;
        }
        return check_data(info->data_file, offset, bytes, path);
    }
    snprintf(info->data_file, sizeof info->data_file, "%s", path);
    if (gzip) {
        uint64_t expected;
        if (__builtin_add_overflow(offset, bytes, &expected))
            return tk_set_error(TK_ERR_FORMAT, "%s: vox_offset plus the data's size overflows" RESAVE, path), 0;
        return tk_inflate_check(path, 0, TK_INFLATE_GZIP, expected, path, NULL, 0, NULL, NULL);
    }
    return check_data(path, offset, bytes, path);
}
