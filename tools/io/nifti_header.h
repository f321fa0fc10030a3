/* NIfTI-1 and NIfTI-2 headers: which voxel-to-world transform a file means, and the header
 * of the files the tools write.  Voxel data stay with the image library (ITK); this file
 * decides the geometry, so that every tool reads a NIfTI the way nibabel and MRtrix3 do:
 *
 *   sform_code > 0:  the sform (srow_x, srow_y, srow_z), as it is
 *   else qform_code > 0:  the qform (quaternion, qoffset, pixdim, qfac = pixdim[0] sign)
 *   else:  diag(pixdim[1..3]), origin 0 (the NIfTI standard's "method 1")
 *
 * in scanner RAS millimetres: world = M[:, 0:3] * (i, j, k) + M[:, 3].  (ITK 5.2's reader
 * prefers the qform where both codes are set; the tools no longer ask it.)  Outputs keep
 * both transforms and both codes of their input's header (tk_nifti_header as read), so
 * a header with sform code 2 or 4 stays so. */
#ifndef TK_NIFTI_HEADER_H
#define TK_NIFTI_HEADER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tk_nifti_header {
    int version;               /* 1 or 2 */
    int ndim;                  /* dim[0] */
    int64_t dim[8];
    double pixdim[8];          /* pixdim[0]: qfac (its sign) */
    int datatype, bitpix;
    double vox_offset, scl_slope, scl_inter;
    int xyzt_units, intent_code;
    int qform_code, sform_code;
    double quatern[3];         /* b, c, d */
    double qoffset[3];
    double srow[3][4];
} tk_nifti_header;

/* Parses a header from its first bytes (348 for NIfTI-1, 540 for NIfTI-2; n is what is
 * there).  NIfTI-1 by its size field in either byte order or by its magic ("n+1", "ni1"),
 * the byte order from dim[0] as the NIfTI library reads it; NIfTI-2 likewise.  Returns 1,
 * 0 when the bytes are no NIfTI header (nothing set), or -1 for a NIfTI header whose
 * geometry cannot be used (dim[0] outside 1..7; pixdim, or the qform or sform its code
 * selects, not finite or beyond 1e6 mm): tk_last_error() says which, starting with what. */
int tk_nifti_parse(const unsigned char *bytes, size_t n, tk_nifti_header *h, const char *what);

/* The same from a file (.nii, or .nii.gz through zlib). */
int tk_nifti_read_header(const char *path, tk_nifti_header *h);

/* The qform as a matrix (method 2: rotation from the quaternion, columns scaled by
 * pixdim[1], pixdim[2] and qfac * pixdim[3], offset qoffset). */
void tk_nifti_qform_matrix(const tk_nifti_header *h, double m[3][4]);

/* The world transform by the rule above; returns "sform", "qform" or "pixdim". */
const char *tk_nifti_world_matrix(const tk_nifti_header *h, double m[3][4]);

/* Sets h's qform from a voxel-to-world matrix: pixdim[1..3] = column lengths, qfac = the
 * sign of the determinant, the quaternion of the rotation, qoffset = m[:, 3], with code;
 * when the columns are not orthogonal (within 1e-6) no qform can hold m: qform_code 0 (as
 * MRtrix3 writes such images).  The sform is left alone. */
void tk_nifti_set_qform(tk_nifti_header *h, const double m[3][4], int code);

/* The 348 bytes of a little-endian single-file NIfTI-1 header for float32 data ("n+1",
 * vox_offset 352, no scaling), from h's dim, pixdim, xyzt_units, qform and sform (datatype,
 * bitpix, vox_offset and scaling of h are not used).  0 (message set) when a size does not
 * fit NIfTI-1's 16 bits. */
int tk_nifti1_encode_f32(const tk_nifti_header *h, unsigned char out[348]);

/* Writes path as a NIfTI-1 file: that header, 4 zero extension bytes, then the float32
 * values (x fastest, as dim gives them), gzip-compressed when gzip (.nii.gz).  Writes path
 * directly: atomic replacement is the caller's. */
int tk_nifti1_write_f32(const char *path, const tk_nifti_header *h, const float *data, int gzip);

#ifdef __cplusplus
}
#endif
#endif
