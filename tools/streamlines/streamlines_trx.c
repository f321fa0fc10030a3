/* TRX (tee-ar-ex/trx-spec; read by trx-python's trx_file_memmap.load): a zip, stored, of
 *   positions.3.float32  every point, xyz world RAS mm (the spec's frame),
 *   offsets.uint64       each streamline's first point, then the number of points
 *                        (NB_STREAMLINES + 1 values: what trx-python 0.6 reads and writes),
 *   header.json          DIMENSIONS, VOXEL_TO_RASMM (4 x 4, row-major), NB_STREAMLINES, NB_VERTICES.
 * The positions stream into the zip behind a local header whose CRC and sizes are filled at
 * close (its Zip64 extra field reserves room for 64-bit sizes; trx-python takes the data's
 * offset from the local header itself); the offsets go to a scratch file and are copied in
 * at close; the header and the central directory come last. */
#include <stdio.h>
#include <string.h>

#include "streamlines_zip.h"

enum { E_POSITIONS, E_OFFSETS, E_HEADER };
static const char *const names[] = {"positions.3.float32", "offsets.uint64", "header.json"};

static tk_status trx_begin(tk_streamlines_writer *w)
{
    sl_zip_entry e = {names[E_POSITIONS], 0, 0, 0};
    sl_zip_local_open(&w->out, &e);
    w->mark[E_POSITIONS] = e.header_at; /* the rest of the entry is known at close */
    w->crc = 0;
    return TK_OK;
}

static tk_status trx_streamline(tk_streamlines_writer *w, const float *xyz, size_t n)
{
    unsigned char b[12];
    sl_le64(b, w->points);
    sl_file_put(&w->scratch[0], b, 8);
    for (size_t i = 0; i < n; ++i) {
        for (int c = 0; c < 3; ++c) sl_lef32(b + 4 * c, xyz[3 * i + c]);
        w->crc = sl_crc32(w->crc, b, 12);
        sl_file_put(&w->out, b, 12);
    }
    return TK_OK;
}

static int json_header(const tk_streamlines_writer *w, char *out, size_t size)
{
    const double *a = w->grid.vox2world;
    int len = snprintf(out, size, "{\"DIMENSIONS\": [%zu, %zu, %zu], \"VOXEL_TO_RASMM\": [", w->grid.dims[0],
                       w->grid.dims[1], w->grid.dims[2]);
    for (int r = 0; r < 4 && len > 0 && (size_t)len < size; ++r)
        len += snprintf(out + len, size - (size_t)len, "%s[%.17g, %.17g, %.17g, %.17g]", r ? ", " : "", a[4 * r] + 0.0,
                        a[4 * r + 1] + 0.0, a[4 * r + 2] + 0.0, a[4 * r + 3] + 0.0); /* no "-0" */
    if (len > 0 && (size_t)len < size)
        len += snprintf(out + len, size - (size_t)len, "], \"NB_STREAMLINES\": %llu, \"NB_VERTICES\": %llu}\n",
                        (unsigned long long)w->streamlines, (unsigned long long)w->points);
    return len > 0 && (size_t)len < size ? len : -1;
}

static tk_status trx_finish(tk_streamlines_writer *w)
{
    sl_zip_entry e[3] = {{names[E_POSITIONS], w->mark[E_POSITIONS], 0, w->crc}, {names[E_OFFSETS], 0, 0, 0},
                         {names[E_HEADER], 0, 0, 0}};
    uint64_t pos_data = e[0].header_at + 30 + strlen(names[E_POSITIONS]) + 20;
    e[0].size = w->out.size - pos_data;

    sl_zip_local_open(&w->out, &e[1]);
    uint64_t off_data = w->out.size;
    sl_file_copy(&w->out, &w->scratch[0], &e[1].crc);
    unsigned char b[8];
    sl_le64(b, w->points);
    e[1].crc = sl_crc32(e[1].crc, b, 8);
    sl_file_put(&w->out, b, 8);
    e[1].size = w->out.size - off_data;

    char json[1024];
    int len = json_header(w, json, sizeof json);
    if (len < 0) return tk_set_error(TK_ERR_ARGUMENT, "%s: the TRX header does not fit", w->path);
    e[2].size = (uint64_t)len;
    e[2].crc = sl_crc32(0, (const unsigned char *)json, (size_t)len);
    sl_zip_local_known(&w->out, &e[2]);
    sl_file_put(&w->out, json, (size_t)len);

    sl_zip_central(&w->out, e, 3);
    if (w->out.err || sl_zip_patch_local(&w->out, &e[0]) || sl_zip_patch_local(&w->out, &e[1]))
        return sl_write_error(w, w->out.err);
    return TK_OK;
}

const sl_format sl_format_trx = {"trx", TK_STREAMLINES_TRX, 1, trx_begin, trx_streamline, trx_finish};
