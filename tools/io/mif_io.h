/* MRtrix3's image format (.mif, .mif.gz, .mih with its data file): the one reader and
 * writer of the tools (tk-fibers through tools/itk/image/sh_image_io, tk-bench for sh2peaks).
 *
 * A text header ("mrtrix image", then "key: value" lines, then "END"), then raw data:
 *   dim       sizes of the header's axes (1 to TK_MIF_MAX_AXES of them)
 *   vox       voxel sizes along them (mm; the first three must be finite and > 0)
 *   layout    how the data are stored: per axis a sign and a rank, rank 0 the contiguous
 *             axis; a negative sign stores that axis from its last index to its first
 *   datatype  Bit (MSB first), Int8, UInt8, [U]Int16/32/64 and Float32/64, each with LE or
 *             BE (none: this machine's order); complex types are refused
 *   transform three rows of four numbers: voxel (i, j, k) of the header's axes is at
 *             transform[:, 0:3] * (vox[0] i, vox[1] j, vox[2] k) + transform[:, 3] in
 *             scanner RAS millimetres, whatever the layout (MRtrix3 normalises the columns;
 *             without it the image is centred on the origin, axis-aligned)
 *   scaling   "offset,scale": value = offset + scale * stored
 *   file      ". OFFSET" (data in this file at byte OFFSET) or "NAME [OFFSET]" (a .mih's
 *             data file, beside the header)
 * .mif.gz is the whole .mif compressed with gzip (zlib; a build without zlib refuses it).
 * Other keys (dw_scheme, command_history, ...) are skipped.  Anything else malformed (an
 * unknown or duplicate required key, a line without "key:", numbers that do not parse,
 * data shorter than the header claims) is refused with a message naming the file and the
 * problem: no crash, no partial image. */
#ifndef TK_MIF_IO_H
#define TK_MIF_IO_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TK_MIF_MAX_AXES 16

typedef enum {
    TK_MIF_BIT,
    TK_MIF_INT8,
    TK_MIF_UINT8,
    TK_MIF_INT16,
    TK_MIF_UINT16,
    TK_MIF_INT32,
    TK_MIF_UINT32,
    TK_MIF_INT64,
    TK_MIF_UINT64,
    TK_MIF_FLOAT32,
    TK_MIF_FLOAT64
} tk_mif_type;

typedef struct tk_mif_header {
    int ndim;
    size_t dim[TK_MIF_MAX_AXES];
    double vox[TK_MIF_MAX_AXES];    /* NaN where the header gives none */
    int layout[TK_MIF_MAX_AXES];    /* sign * (rank + 1), rank 0 contiguous: "+1,+2,+3,+0" is {2, 3, 4, 1} */
    double transform[3][4];         /* rows; columns 0-2 of unit length */
    tk_mif_type type;
    int big_endian;
    double scale, offset;           /* value = offset + scale * stored */
    /* where the data are (set by tk_mif_read_header; ignored by tk_mif_write) */
    char data_path[4096];
    uint64_t data_offset;
    int gzip;                       /* read: the file is gzip-compressed; write: compress it */
} tk_mif_header;

/* A header for a Float32LE image of ndim axes (2..TK_MIF_MAX_AXES) of sizes dim: unit voxels,
 * an identity transform, axis 0 contiguous ("+0,+1,+2,..."), no scaling. */
void tk_mif_header_init(tk_mif_header *h, int ndim, const size_t *dim);

/* The header of path (.mif, .mif.gz, .mih), checked as described above.  0 on failure
 * (message in tk_last_error(), starting with path). */
int tk_mif_read_header(const char *path, tk_mif_header *h);

/* The number of values (product of dim); 0 where it overflows size_t. */
size_t tk_mif_count(const tk_mif_header *h);

/* The bytes of the data the header describes (Bit: 8 values a byte); 0 where it overflows. */
uint64_t tk_mif_data_bytes(const tk_mif_header *h);

/* The data of a header read by tk_mif_read_header are whole: an uncompressed data file
 * holds exactly tk_mif_data_bytes from data_offset to its end (fewer: truncated; more: a
 * tail the header does not account for); a .mif.gz is one complete gzip stream (further
 * members allowed, nothing else) inflating to exactly the header and the data.  The rule
 * tk_image_probe applies to a .mif and tk_mif_read_data to what it reads.  0 and a
 * message naming path on failure. */
int tk_mif_check_data(const char *path, const tk_mif_header *h);

/* The image's values as float, in the header's axis order with axis 0 fastest (index
 * (i0, i1, ...) at i0 + dim[0] * (i1 + dim[1] * ...)), whatever the layout; scaling
 * applied.  *data is malloc'ed (free it); 0 on failure (data not whole by tk_mif_check_data's
 * rule, checked as they are read; no memory). */
int tk_mif_read_data(const char *path, const tk_mif_header *h, float **data);

/* tk_mif_read_data into out (tk_mif_count(h) floats), in the axis order given: order[0] the
 * fastest axis, then order[1], ... (NULL: 0, 1, ...); e.g. {3, 0, 1, 2} puts a 4-D image's
 * volumes fastest, as an ITK vector image holds its components. */
int tk_mif_read_data_into(const char *path, const tk_mif_header *h, const int *order, float *out);

/* Write data (float32, stored in the order h->layout gives) as path: h's dim, vox, layout
 * and transform, datatype Float32LE (h->type and h->scale/offset are not used), the data
 * in the same file; gzip-compressed when h->gzip (.mif.gz).  The header is checked as a
 * reader would (a bad layout, a non-finite transform, vox of the first three axes not
 * finite and positive: 0 and a message).  Writes path directly: atomic replacement is
 * the caller's. */
int tk_mif_write(const char *path, const tk_mif_header *h, const float *data);

/* tk-bench's sh2peaks exchange: data (dim[3] values per voxel, voxel-major, x fastest among
 * voxels) as a 4-D Float32LE .mif with unit voxels and an identity transform. */
int tk_mif_write_f32(const char *path, const size_t dim[4], const float *data);

/* A 3-D or 4-D .mif (any datatype, layout and compression) into voxel-major order (the
 * 4th axis fastest): *data malloc'ed, dim filled (dim[3] = 1 for a 3-D image). */
int tk_mif_read_f32(const char *path, size_t dim[4], float **data);

#ifdef __cplusplus
}
#endif
#endif
