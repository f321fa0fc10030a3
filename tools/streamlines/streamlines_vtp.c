/* VTK XML PolyData (.vtp, file version 0.1 as VTK 9's vtkXMLPolyDataWriter writes it): the
 * streamlines as polylines (Lines: connectivity and offsets, offsets being each cell's end),
 * the DEC colours as the point scalars "Colors" (UInt8, 3 components), the frame's tag SPACE
 * in the field data (streamlines_vtk_frame.c), and every array in one appended raw block
 * (little-endian, each array after its UInt64 byte count).
 *
 * The points stream straight into the appended block; the colours and the cell offsets go
 * to scratch files and follow at close, the connectivity (0 .. N-1) is generated then.  The
 * counts and the arrays' offsets in the XML above are fixed-width fields reserved at open and
 * filled at close (VTK's XML parser reads numbers with leading spaces). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "streamlines_internal.h"

const char *sl_vtk_space_name(const tk_streamlines_writer *w);
void sl_vtk_frame(tk_streamlines_writer *w);

#define FIELD 20 /* digits of a reserved number */
enum { M_POINTS, M_LINES, M_COLOURS_AT, M_CONN_AT, M_OFFSETS_AT, M_DATA, M_POINTS_SIZE };

/* Writes text, recording where each "@" (a reserved field, FIELD spaces wide) lands. */
static void put_template(tk_streamlines_writer *w, const char *text, const int *which)
{
    for (const char *p = text; *p; ++p) {
        if (*p == '@') {
            w->mark[*which++] = w->out.size;
            sl_file_put(&w->out, "                    ", FIELD);
        } else {
            sl_file_put(&w->out, p, 1);
        }
    }
}

static tk_status vtp_begin(tk_streamlines_writer *w)
{
    sl_vtk_frame(w);
    const char *space = sl_vtk_space_name(w);
    char text[2048];
    snprintf(text, sizeof text,
             "<?xml version=\"1.0\"?>\n"
             "<VTKFile type=\"PolyData\" version=\"0.1\" byte_order=\"LittleEndian\" header_type=\"UInt64\">\n"
             "  <PolyData>\n"
             "    <FieldData>\n"
             "      <Array type=\"String\" Name=\"SPACE\" NumberOfTuples=\"1\" format=\"ascii\">\n"
             "        %d %d %d 0\n"
             "      </Array>\n"
             "    </FieldData>\n"
             "    <Piece NumberOfPoints=\"@\" NumberOfVerts=\"0\" NumberOfLines=\"@\" NumberOfStrips=\"0\" NumberOfPolys=\"0\">\n"
             "      <PointData Scalars=\"Colors\">\n"
             "        <DataArray type=\"UInt8\" Name=\"Colors\" NumberOfComponents=\"3\" format=\"appended\" offset=\"@\"/>\n"
             "      </PointData>\n"
             "      <Points>\n"
             "        <DataArray type=\"Float32\" Name=\"Points\" NumberOfComponents=\"3\" format=\"appended\" offset=\"0\"/>\n"
             "      </Points>\n"
             "      <Lines>\n"
             "        <DataArray type=\"Int64\" Name=\"connectivity\" format=\"appended\" offset=\"@\"/>\n"
             "        <DataArray type=\"Int64\" Name=\"offsets\" format=\"appended\" offset=\"@\"/>\n"
             "      </Lines>\n"
             "    </Piece>\n"
             "  </PolyData>\n"
             "  <AppendedData encoding=\"raw\">\n"
             "   _",
             space[0], space[1], space[2]);
    static const int order[] = {M_POINTS, M_LINES, M_COLOURS_AT, M_CONN_AT, M_OFFSETS_AT};
    put_template(w, text, order);
    w->mark[M_DATA] = w->out.size; /* the arrays' offsets count from here */
    w->mark[M_POINTS_SIZE] = w->out.size;
    unsigned char zero[8] = {0};
    sl_file_put(&w->out, zero, 8); /* the points' byte count, filled at close */
    return TK_OK;
}

static tk_status vtp_streamline(tk_streamlines_writer *w, const float *xyz, size_t n)
{
    unsigned char *rgb = sl_colour_buffer(w, n);
    if (!rgb) return sl_write_error(w, ENOMEM);
    sl_tangent_colours(xyz, n, rgb);
    sl_file_put(&w->scratch[0], rgb, 3 * n);
    unsigned char b[12];
    for (size_t i = 0; i < n; ++i) {
        double v[3];
        sl_transform(w, xyz + 3 * i, v);
        for (int c = 0; c < 3; ++c) sl_lef32(b + 4 * c, (float)v[c]);
        sl_file_put(&w->out, b, 12);
    }
    sl_le64(b, w->points + n); /* the cell's end in the connectivity */
    sl_file_put(&w->scratch[1], b, 8);
    return TK_OK;
}

static void put_u64(sl_file *f, uint64_t v)
{
    unsigned char b[8];
    sl_le64(b, v);
    sl_file_put(f, b, 8);
}

static int patch_field(tk_streamlines_writer *w, int mark, uint64_t v)
{
    char d[FIELD + 1];
    snprintf(d, sizeof d, "%*llu", FIELD, (unsigned long long)v);
    return sl_file_pwrite(&w->out, w->mark[mark], d, FIELD);
}

static tk_status vtp_finish(tk_streamlines_writer *w)
{
    uint64_t n = w->points, m = w->streamlines, data = w->mark[M_DATA];
    uint64_t colours_at = w->out.size - data;
    put_u64(&w->out, 3 * n);
    sl_file_copy(&w->out, &w->scratch[0], NULL);
    uint64_t conn_at = w->out.size - data;
    put_u64(&w->out, 8 * n);
    for (uint64_t i = 0; i < n; ++i) put_u64(&w->out, i);
    uint64_t offsets_at = w->out.size - data;
    put_u64(&w->out, 8 * m);
    sl_file_copy(&w->out, &w->scratch[1], NULL);
    const char *tail = "\n  </AppendedData>\n</VTKFile>\n";
    sl_file_put(&w->out, tail, strlen(tail));
    unsigned char b[8];
    sl_le64(b, 12 * n);
    if (w->out.err || sl_file_pwrite(&w->out, w->mark[M_POINTS_SIZE], b, 8) || patch_field(w, M_POINTS, n) ||
        patch_field(w, M_LINES, m) || patch_field(w, M_COLOURS_AT, colours_at) || patch_field(w, M_CONN_AT, conn_at) ||
        patch_field(w, M_OFFSETS_AT, offsets_at))
        return sl_write_error(w, w->out.err);
    return TK_OK;
}

const sl_format sl_format_vtp = {"vtp", TK_STREAMLINES_VTP, 2, vtp_begin, vtp_streamline, vtp_finish};
