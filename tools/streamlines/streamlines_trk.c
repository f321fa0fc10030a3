/* TrackVis (.trk, version 2): a 1000-byte little-endian header and, per streamline, its point
 * count (int32) and its points (float32 xyz) in TrackVis "voxmm" space.  The frame is
 * nibabel's (nibabel/streamlines/trk.py, get_affine_trackvis_to_rasmm), the reference reader
 * of the field: voxmm = (voxel + 0.5) * voxel_size, voxel = inverse(vox_to_ras) * world, with
 * the voxel axes of vox_to_ras ordered as voxel_order says.  We write voxel_order as nibabel's
 * aff2axcodes(vox_to_ras) gives it (streamlines_orientation.c), so no axis is flipped, and
 * compute the transform from the float32 values the header holds, so that a reader inverting
 * it gets the world points back to float precision.  n_count is written at close. */
#include <math.h>
#include <string.h>

#include "streamlines_internal.h"

/* nibabel's io_orientation: the RAS axis code of each voxel axis ("LAS", ...). */
void sl_axis_codes(const double *vox2world, char codes[3]);

enum { TRK_DIM = 6, TRK_VOXEL_SIZE = 12, TRK_VOX_TO_RAS = 440, TRK_VOXEL_ORDER = 948, TRK_N_COUNT = 988,
       TRK_VERSION = 992, TRK_HDR_SIZE = 996, TRK_HEADER = 1000 };

static int invert3(const double *m, double *inv)
{
    double det = m[0] * (m[4] * m[8] - m[5] * m[7]) - m[1] * (m[3] * m[8] - m[5] * m[6]) + m[2] * (m[3] * m[7] - m[4] * m[6]);
    if (det == 0) return -1;
    inv[0] = (m[4] * m[8] - m[5] * m[7]) / det;
    inv[1] = (m[2] * m[7] - m[1] * m[8]) / det;
    inv[2] = (m[1] * m[5] - m[2] * m[4]) / det;
    inv[3] = (m[5] * m[6] - m[3] * m[8]) / det;
    inv[4] = (m[0] * m[8] - m[2] * m[6]) / det;
    inv[5] = (m[2] * m[3] - m[0] * m[5]) / det;
    inv[6] = (m[3] * m[7] - m[4] * m[6]) / det;
    inv[7] = (m[1] * m[6] - m[0] * m[7]) / det;
    inv[8] = (m[0] * m[4] - m[1] * m[3]) / det;
    return 0;
}

static tk_status trk_begin(tk_streamlines_writer *w)
{
    const tk_tracking_grid *g = &w->grid;
    unsigned char h[TRK_HEADER];
    memset(h, 0, sizeof h);
    memcpy(h, "TRACK", 6);
    for (int i = 0; i < 3; ++i) {
        if (g->dims[i] == 0 || g->dims[i] > 32767)
            return tk_set_error(TK_ERR_UNSUPPORTED, "%s: a grid of %zu voxels along axis %d does not fit a .trk header (1..32767)",
                                w->path, g->dims[i], i);
        sl_le16(h + TRK_DIM + 2 * i, (uint16_t)g->dims[i]);
    }
    /* The header's float32 values, and the transform from them. */
    float a32[16], vs32[3];
    for (int i = 0; i < 16; ++i) a32[i] = (float)g->vox2world[i];
    for (int c = 0; c < 3; ++c) {
        double s = 0;
        for (int r = 0; r < 3; ++r) s += g->vox2world[4 * r + c] * g->vox2world[4 * r + c];
        vs32[c] = (float)sqrt(s);
        sl_lef32(h + TRK_VOXEL_SIZE + 4 * c, vs32[c]);
    }
    for (int i = 0; i < 16; ++i) sl_lef32(h + TRK_VOX_TO_RAS + 4 * i, a32[i]);
    char codes[3];
    sl_axis_codes(g->vox2world, codes);
    memcpy(h + TRK_VOXEL_ORDER, codes, 3);
    sl_le32(h + TRK_VERSION, 2);
    sl_le32(h + TRK_HDR_SIZE, TRK_HEADER);

    double m[9], inv[9];
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 3; ++c) m[3 * r + c] = a32[4 * r + c];
    if (invert3(m, inv) != 0)
        return tk_set_error(TK_ERR_ARGUMENT, "%s: the grid's affine is singular in float precision", w->path);
    /* voxmm = vs * (inv * (world - t) + 0.5), as rows of a 3 x 4 matrix. */
    for (int r = 0; r < 3; ++r) {
        double off = 0;
        for (int c = 0; c < 3; ++c) {
            w->xform[4 * r + c] = vs32[r] * inv[3 * r + c];
            off -= inv[3 * r + c] * a32[4 * c + 3];
        }
        w->xform[4 * r + 3] = vs32[r] * (off + 0.5);
    }
    sl_file_put(&w->out, h, sizeof h);
    return TK_OK;
}

static tk_status trk_streamline(tk_streamlines_writer *w, const float *xyz, size_t n)
{
    if (n > INT32_MAX || w->streamlines >= INT32_MAX)
        return tk_set_error(TK_ERR_UNSUPPORTED, "%s: more points or streamlines than a .trk file counts (int32)", w->path);
    unsigned char b[12];
    sl_le32(b, (uint32_t)n);
    sl_file_put(&w->out, b, 4);
    for (size_t i = 0; i < n; ++i) {
        double v[3];
        sl_transform(w, xyz + 3 * i, v);
        for (int c = 0; c < 3; ++c) sl_lef32(b + 4 * c, (float)v[c]);
        sl_file_put(&w->out, b, 12);
    }
    return TK_OK;
}

static tk_status trk_finish(tk_streamlines_writer *w)
{
    unsigned char b[4];
    sl_le32(b, (uint32_t)w->streamlines);
    if (sl_file_pwrite(&w->out, TRK_N_COUNT, b, 4)) return sl_write_error(w, w->out.err);
    return TK_OK;
}

const sl_format sl_format_trk = {"trk", TK_STREAMLINES_TRK, 0, trk_begin, trk_streamline, trk_finish};
