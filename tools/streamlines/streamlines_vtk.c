/* Legacy VTK PolyData, file version 4.2 (what Slicer writes for compatibility with VTK < 9
 * readers), BINARY (big-endian): POINTS as float, LINES as int32 cells (count, then the
 * point ids), and POINT_DATA with the DEC colours as COLOR_SCALARS "Colors" (unsigned char,
 * 3 components).  The title line carries Slicer's frame tag SPACE=LPS or SPACE=RAS
 * (streamlines_vtk_frame.c).
 *
 * The points stream into the file; the cells and colours go to scratch files and follow at
 * close; the point count after POINTS is a fixed-width field filled at close (the reader
 * parses it with >>, which skips the padding). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "streamlines_internal.h"

const char *sl_vtk_space_name(const tk_streamlines_writer *w);
void sl_vtk_frame(tk_streamlines_writer *w);

#define FIELD 20

static tk_status vtk_begin(tk_streamlines_writer *w)
{
    sl_vtk_frame(w);
    char text[256];
    int len = snprintf(text, sizeof text,
                       "# vtk DataFile Version 4.2\nTensorKernels streamlines. SPACE=%s\nBINARY\nDATASET POLYDATA\nPOINTS ",
                       sl_vtk_space_name(w));
    sl_file_put(&w->out, text, (size_t)len);
    w->mark[0] = w->out.size;
    for (int i = 0; i < FIELD; ++i) sl_file_put(&w->out, " ", 1);
    sl_file_put(&w->out, " float\n", 7);
    return TK_OK;
}

static tk_status vtk_streamline(tk_streamlines_writer *w, const float *xyz, size_t n)
{
    /* ids are int32; LINES' size (cells + ids) too */
    if (w->points + n + w->streamlines + 1 > INT32_MAX)
        return tk_set_error(TK_ERR_UNSUPPORTED, "%s: more points than a legacy .vtk file indexes (int32); write .vtp", w->path);
    unsigned char *rgb = sl_colour_buffer(w, n);
    if (!rgb) return sl_write_error(w, ENOMEM);
    sl_tangent_colours(xyz, n, rgb);
    sl_file_put(&w->scratch[0], rgb, 3 * n);
    unsigned char b[12];
    sl_be32(b, (uint32_t)n);
    sl_file_put(&w->scratch[1], b, 4);
    for (size_t i = 0; i < n; ++i) {
        double v[3];
        sl_transform(w, xyz + 3 * i, v);
        for (int c = 0; c < 3; ++c) sl_bef32(b + 4 * c, (float)v[c]);
        sl_file_put(&w->out, b, 12);
        sl_be32(b, (uint32_t)(w->points + i));
        sl_file_put(&w->scratch[1], b, 4);
    }
    return TK_OK;
}

static tk_status vtk_finish(tk_streamlines_writer *w)
{
    char text[128];
    unsigned long long n = w->points, m = w->streamlines;
    int len = snprintf(text, sizeof text, "\nLINES %llu %llu\n", m, m + n);
    sl_file_put(&w->out, text, (size_t)len);
    sl_file_copy(&w->out, &w->scratch[1], NULL);
    len = snprintf(text, sizeof text, "\nPOINT_DATA %llu\nCOLOR_SCALARS Colors 3\n", n);
    sl_file_put(&w->out, text, (size_t)len);
    sl_file_copy(&w->out, &w->scratch[0], NULL);
    sl_file_put(&w->out, "\n", 1);
    char d[FIELD + 1];
    snprintf(d, sizeof d, "%-*llu", FIELD, n);
    if (w->out.err || sl_file_pwrite(&w->out, w->mark[0], d, FIELD)) return sl_write_error(w, w->out.err);
    return TK_OK;
}

const sl_format sl_format_vtk = {"vtk", TK_STREAMLINES_VTK, 2, vtk_begin, vtk_streamline, vtk_finish};
