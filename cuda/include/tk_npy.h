/** TensorKernels: NumPy .npy files (format versions 1.0, 2.0 and 3.0), read and written
 * by every tool through this one core.  One public header. \file
 * \ingroup tk_group_common */
#ifndef TK_NPY_H
#define TK_NPY_H

#include "tk_export.h"

#include <stddef.h>
#include <stdint.h>

#include "tk_status.h"

TK_API_BEGIN

#define TK_NPY_MAX_DIMS 32

typedef enum {
    TK_NPY_FLOAT32 = 0,
    TK_NPY_FLOAT64,
    TK_NPY_COMPLEX64,
    TK_NPY_COMPLEX128,
    TK_NPY_INT8,
    TK_NPY_UINT8,
    TK_NPY_INT32,
    TK_NPY_INT64
} tk_npy_dtype;

typedef struct tk_npy_array {
    tk_npy_dtype dtype;
    int ndim;
    size_t shape[TK_NPY_MAX_DIMS];
    size_t count;   /**< product of the shape */
    void *data;     /**< count elements, native byte order, C order */
} tk_npy_array;

size_t tk_npy_dtype_size(tk_npy_dtype dtype);
const char *tk_npy_dtype_name(tk_npy_dtype dtype); /**< "float32", ... */

/** Read a whole file.  Rejects Fortran order, object and structured dtypes, a
 * header that claims more data than the file holds, and trailing garbage; big-
 * endian data is swapped to native.  Messages name the file. */
tk_status tk_npy_read(const char *path, tk_npy_array *out);

/** Parse an in-memory file image (the same checks; `name` is used in messages). */
tk_status tk_npy_parse(const void *bytes, size_t size, const char *name, tk_npy_array *out);

/** Write atomically: to a private temporary beside path, every write checked and synced,
 * then renamed, so a failure (a full disk included) never leaves a half-written file
 * and a signal or a killed run leaves no temporary for long (tk_output_set.h).
 * Version 1.0. */
tk_status tk_npy_write(const char *path, tk_npy_dtype dtype, int ndim, const size_t *shape,
                       const void *data);

/** The file's bytes to fd, every write checked (an output of a tk_outset, which syncs and
 * renames it); name is for messages. */
tk_status tk_npy_write_fd(int fd, const char *name, tk_npy_dtype dtype, int ndim, const size_t *shape,
                          const void *data);

void tk_npy_free(tk_npy_array *array);

TK_API_END
#endif
