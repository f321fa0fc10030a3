/* MRtrix3 .mif: a text header ("mrtrix image" ... "END"), then raw data at the offset its
 * "file: . OFFSET" line names; "layout" gives each axis's stride rank (0 fastest) and sign. */
#include "mif_io.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tk_status.h"

int tk_mif_write_f32(const char *path, const size_t dim[4], const float *data)
{
    FILE *f = fopen(path, "wb");
    if (!f) return tk_set_error(TK_ERR_IO, "%s: cannot create", path), 0;
    char header[512];
    /* the data offset must be known before the header is written: pad the header to 512 bytes */
    int n = snprintf(header, sizeof header,
                     "mrtrix image\ndim: %zu,%zu,%zu,%zu\nvox: 1,1,1,1\nlayout: +1,+2,+3,+0\ndatatype: Float32LE\n"
                     "transform: 1,0,0,0\ntransform: 0,1,0,0\ntransform: 0,0,1,0\nfile: . 512\nEND\n",
                     dim[0], dim[1], dim[2], dim[3]);
    memset(header + n, 0, sizeof header - (size_t)n);
    size_t count = dim[0] * dim[1] * dim[2] * dim[3];
    int ok = fwrite(header, 1, sizeof header, f) == sizeof header && fwrite(data, sizeof(float), count, f) == count;
    ok = (fclose(f) == 0) && ok;
    if (!ok) tk_set_error(TK_ERR_IO, "%s: write failed", path);
    return ok;
}

int tk_mif_read_f32(const char *path, size_t dim[4], float **data)
{
    *data = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return tk_set_error(TK_ERR_IO, "%s: cannot open", path), 0;
    char line[1024];
    long offset = -1;
    int layout[4] = {1, 2, 3, 0}, sign[4] = {1, 1, 1, 1}, ndim = 0, dtype_ok = 0;
    if (!fgets(line, sizeof line, f) || strncmp(line, "mrtrix image", 12)) goto bad;
    while (fgets(line, sizeof line, f) && strncmp(line, "END", 3)) {
        if (!strncmp(line, "dim: ", 5)) {
            char *p = line + 5;
            for (ndim = 0; ndim < 4 && *p; ++ndim) {
                dim[ndim] = strtoul(p, &p, 10);
                if (*p == ',') ++p;
            }
        } else if (!strncmp(line, "layout: ", 8)) {
            char *p = line + 8;
            for (int a = 0; a < 4 && *p; ++a) {
                sign[a] = *p == '-' ? -1 : 1;
                if (*p == '-' || *p == '+') ++p;
                layout[a] = (int)strtol(p, &p, 10);
                if (*p == ',') ++p;
            }
        } else if (!strncmp(line, "datatype: ", 10)) {
            dtype_ok = !strncmp(line + 10, "Float32LE", 9) || !strncmp(line + 10, "Float32\n", 8);
        } else if (!strncmp(line, "file: . ", 8)) {
            offset = strtol(line + 8, NULL, 10);
        }
    }
    if (ndim < 3 || offset < 0 || !dtype_ok) goto bad;
    if (ndim == 3) dim[3] = 1;
    {
        size_t count = dim[0] * dim[1] * dim[2] * dim[3], stride[4];
        /* strides from the ranks: the axis of rank 0 is contiguous */
        for (int a = 0; a < 4; ++a) {
            stride[a] = 1;
            for (int b = 0; b < 4; ++b)
                if (layout[b] < layout[a]) stride[a] *= dim[b];
        }
        float *raw = malloc(sizeof(float) * count), *out = malloc(sizeof(float) * count);
        if (!raw || !out || fseek(f, offset, SEEK_SET) || fread(raw, sizeof(float), count, f) != count) {
            free(raw), free(out);
            goto bad;
        }
        for (size_t z = 0; z < dim[2]; ++z)
            for (size_t y = 0; y < dim[1]; ++y)
                for (size_t x = 0; x < dim[0]; ++x)
                    for (size_t c = 0; c < dim[3]; ++c) {
                        size_t idx[4] = {x, y, z, c}, at = 0;
                        for (int a = 0; a < 4; ++a) at += stride[a] * (sign[a] > 0 ? idx[a] : dim[a] - 1 - idx[a]);
                        out[(((z * dim[1] + y) * dim[0] + x) * dim[3]) + c] = raw[at];
                    }
        free(raw);
        *data = out;
    }
    fclose(f);
    return 1;
bad:
    fclose(f);
    return tk_set_error(TK_ERR_FORMAT, "%s: not a 4-D Float32 .mif image this reader understands", path), 0;
}
