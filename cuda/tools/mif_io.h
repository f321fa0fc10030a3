/* MRtrix3's .mif image format, as far as tk-bench needs it to hand a volume to MRtrix3's
 * own programs (sh2peaks) and read their answer back: 4-D float32 images only. */
#ifndef TK_MIF_IO_H
#define TK_MIF_IO_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Write data (dim[3] values per voxel, voxel-major, x fastest among voxels) as a 4-D
 * Float32LE .mif with unit voxels and an identity transform.  0 on failure (message in
 * tk_last_error()). */
int tk_mif_write_f32(const char *path, const size_t dim[4], const float *data);

/* Read a 4-D float32 .mif of any layout into voxel-major order (the last axis fastest):
 * *data malloc'ed, dim filled.  0 on failure. */
int tk_mif_read_f32(const char *path, size_t dim[4], float **data);

#ifdef __cplusplus
}
#endif
#endif
