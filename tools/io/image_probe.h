/* Which image format a file is, by its bytes, and whether it is whole, before any image
 * library (ITK, the NIfTI library, MetaIO, teem) sees it.
 *
 * The tools accept NIfTI-1 and NIfTI-2 (one file, or a .hdr/.img pair; gzip or not),
 * NRRD (data attached or in a detached file; raw, gzip, ascii, hex or bzip2), MetaImage (.mha, or .mhd with
 * its data file; raw or compressed) and MRtrix3 .mif (mif_io.h).  tk_image_probe
 * recognises the format from the file's first bytes (never from its name: a NIfTI named
 * .NII, or a MetaImage named .nrrd, is what its bytes say), then validates every header
 * field the readers would act on before they allocate or call anything:
 *   - axis counts and sizes (1 or more voxels per axis, at most TK_IMAGE_MAX_AXES axes,
 *     no product overflowing 64 bits), voxel types, byte orders, encodings;
 *   - the geometry's numbers (finite, below 1e6 mm where the readers build matrices);
 *   - that the data exist: a raw file's data bytes are exactly those the header claims
 *     (no fewer: missing data would be read as zeros; no more: an unaccounted tail means a
 *     wrong header), and a compressed stream inflates completely (tk_inflate_check: gzip
 *     stream end, CRC and length) to exactly that many bytes, a claim beyond deflate's
 *     1032:1 refused up front.
 * The checks of each format are in image_nifti.c, image_nrrd.c, image_meta.c and (MRtrix3)
 * mif_io.c. */
#ifndef TK_IMAGE_PROBE_H
#define TK_IMAGE_PROBE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The tools read up to 4-D images and 3-D vector volumes (a NRRD or MetaImage vector
 * axis is one more); ITK 5.2's NRRD reader overruns its stack at 10 axes. */
#define TK_IMAGE_MAX_AXES 5

typedef enum {
    TK_IMAGE_UNKNOWN = 0,
    TK_IMAGE_NIFTI,     /* NIfTI-1 or NIfTI-2, one file or a pair */
    TK_IMAGE_NRRD,
    TK_IMAGE_METAIMAGE,
    TK_IMAGE_MIF        /* MRtrix3 .mif, .mif.gz, .mih: header and data rules of mif_io.c */
} tk_image_format;

/* How the data are stored, where the format offers more than one way. */
typedef enum {
    TK_IMAGE_ENCODING_RAW = 0,    /* the values' bytes as they are (NIfTI, MRtrix3, NRRD raw, MetaImage) */
    TK_IMAGE_ENCODING_GZIP,       /* one or more gzip members / a zlib stream */
    TK_IMAGE_ENCODING_ASCII,      /* NRRD ascii (text, txt): decimal numbers between white space (commas beside them) */
    TK_IMAGE_ENCODING_HEX,        /* NRRD hex: two hex digits a byte, white space anywhere between them */
    TK_IMAGE_ENCODING_BZIP2       /* NRRD bzip2: one or more bzip2 streams */
} tk_image_encoding;

typedef struct tk_image_info {
    tk_image_format format;
    int compressed;               /* the file is gzip (.nii.gz, .mif.gz) or its data are compressed */
    tk_image_encoding encoding;
    /* 1: the tools read the data with tk_image_read_data, not with the format's ITK reader:
     * NRRD ascii, hex and bzip2 (ITK 5.2's NrrdIO has no bzip2, and reads ascii values
     * through scanf, which takes "1.5" as 1 for an integer type, wraps 300 into a uchar and
     * overruns its stack on a token of over 1024 characters), and MetaImage data split over
     * files (LIST or numbered slice files, which MetaIO reads as zeros where a file is
     * missing or short). */
    int own_read;
    int value_bytes;              /* bytes of one value (NRRD, MetaImage) */
    int range_axis;               /* NRRD: the axis of a non-domain kind (ITK's components), -1 none */
    uint64_t files;               /* data files: 1, or MetaImage's slice files */
    int axes;                     /* axes of the data, a vector axis (NRRD, MetaImage) included */
    uint64_t size[TK_IMAGE_MAX_AXES];
    uint64_t components;          /* MetaImage's ElementNumberOfChannels (else 1) */
    uint64_t bytes;               /* the data's bytes as the header claims them */
    int nifti_version;            /* 1 or 2 for NIfTI, else 0 */
    char data_file[4096];         /* the file holding the data (a pair's .img, a detached header's) */
} tk_image_info;

/* The accepted formats, for messages. */
const char *tk_image_formats(void);

/* The format path's bytes say (TK_IMAGE_UNKNOWN, message set, when none); reads only
 * the first bytes (through gzip where they are gzip). */
tk_image_format tk_image_sniff(const char *path);

/* Recognises and validates path as above: 1 with *info filled, else 0 with tk_last_error()
 * naming path (or its data file) and saying what is wrong.  Every format goes through here,
 * MRtrix3's included (its header by mif_io.c's parser, its data by tk_mif_check_data), so a
 * file is judged by its bytes alike whatever its name. */
int tk_image_probe(const char *path, tk_image_info *info);

/* The data of a file tk_image_probe accepted with info->own_read set, read by the same code
 * that validated them (the file is validated again as it is read): info->bytes bytes in out
 * (out_bytes must be that), the values in the file's order and type, in this machine's byte
 * order.  1, or 0 with the message set (the file changed since it was probed, or a read
 * failed). */
int tk_image_read_data(const char *path, const tk_image_info *info, void *out, uint64_t out_bytes);

/* For the format checkers: the folder part of path joined with name (a detached header's
 * data file is named relative to the header). */
void tk_image_sibling(const char *path, const char *name, char *out, unsigned long out_size);

/* The checkers: 1 or 0 with the message set (path the file, head its first n bytes). */
int tk_image_check_nifti(const char *path, const unsigned char *head, unsigned long n, int gzip, tk_image_info *info);
int tk_image_check_nrrd(const char *path, tk_image_info *info);
int tk_image_check_meta(const char *path, tk_image_info *info);
/* The same checks keeping the data (own_read formats: see tk_image_read_data); out NULL:
 * check only. */
int tk_image_nrrd_data(const char *path, tk_image_info *info, unsigned char *out, uint64_t out_bytes);
int tk_image_meta_data(const char *path, tk_image_info *info, unsigned char *out, uint64_t out_bytes);

/* Data in a file of the byte order big_endian (1) or little (0) into this machine's: n values
 * of value_bytes each, swapped in place where the orders differ. */
void tk_image_to_native(unsigned char *data, uint64_t n, int value_bytes, int big_endian);

/* What a message about file names first: path (the file the user gave) when file is path,
 * else "PATH: its data file FILE" (in buf). */
const char *tk_image_subject(const char *path, const char *file, char *buf, size_t n);

/* The size of file, the image path or its data file (-1 with the message, naming path and
 * then file, set when it cannot be read). */
int64_t tk_image_file_size(const char *path, const char *file);

/* Strict numbers for the text headers: the whole string, ASCII (no "0x", no spaces; u64: no
 * sign; double: no "inf" or "nan", and finite); 1 when parsed. */
int tk_image_parse_u64(const char *s, uint64_t *v);
int tk_image_parse_i64(const char *s, int64_t *v);
int tk_image_parse_double(const char *s, double *v);
/* s split in place at any of separators into at most max tokens; returns how many
 * (max + 1 when there were more). */
int tk_image_split(char *s, const char *separators, char **tokens, int max);
/* Up to cap bytes of path's start (0 when unreadable). */
size_t tk_image_read_prefix(const char *path, char *buf, size_t cap);

/* a * b, or 0 when it overflows 64 bits (callers refuse 0 sizes). */
uint64_t tk_image_mul(uint64_t a, uint64_t b);

#ifdef __cplusplus
}
#endif
#endif
