/* MRtrix3 tracks (.tck): a text header ("mrtrix tracks", key: value lines, "END") and, from
 * the offset its "file: . OFFSET" line names, float32 triplets in world RAS mm: each
 * streamline's points, a NaN triplet after each, an Inf triplet at the end (MRtrix3's
 * file format documentation; DWI/Tractography/file.h writes the same).  As MRtrix3 does, the
 * count is written as a fixed-width field of zeros when the file is opened and overwritten
 * in place at close. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "streamlines_internal.h"

#define COUNT_DIGITS 10 /* MRtrix3's width: "count: 0000000000" */

static tk_status tck_begin(tk_streamlines_writer *w)
{
    char head[512];
    int fixed = snprintf(head, sizeof head,
                         "mrtrix tracks\ndatatype: Float32LE\ncount: %0*d\n", COUNT_DIGITS, 0);
    /* The data offset is written in the header it follows: find the width that fits, then
     * align the data to 4 bytes (float32). */
    long offset = fixed + 32;
    for (;;) {
        int len = fixed + snprintf(NULL, 0, "file: . %ld\nEND\n", offset);
        long need = (len + 3) / 4 * 4;
        if (need <= offset) break;
        offset = need;
    }
    int len = fixed + snprintf(head + fixed, sizeof head - (size_t)fixed, "file: . %ld\nEND\n", offset);
    memset(head + len, 0, (size_t)(offset - len));
    w->mark[0] = (uint64_t)(strstr(head, "count: ") - head) + 7;
    sl_file_put(&w->out, head, (size_t)offset);
    return TK_OK;
}

static void put_triplet(tk_streamlines_writer *w, float x, float y, float z)
{
    unsigned char b[12];
    sl_lef32(b, x);
    sl_lef32(b + 4, y);
    sl_lef32(b + 8, z);
    sl_file_put(&w->out, b, sizeof b);
}

static tk_status tck_streamline(tk_streamlines_writer *w, const float *xyz, size_t n)
{
    if (w->streamlines >= 9999999999ull)
        return tk_set_error(TK_ERR_UNSUPPORTED, "%s: more streamlines than a .tck count holds", w->path);
    for (size_t i = 0; i < n; ++i) put_triplet(w, xyz[3 * i], xyz[3 * i + 1], xyz[3 * i + 2]);
    put_triplet(w, NAN, NAN, NAN);
    return TK_OK;
}

static tk_status tck_finish(tk_streamlines_writer *w)
{
    put_triplet(w, INFINITY, INFINITY, INFINITY);
    char digits[COUNT_DIGITS + 1];
    snprintf(digits, sizeof digits, "%0*llu", COUNT_DIGITS, (unsigned long long)w->streamlines);
    if (sl_file_pwrite(&w->out, w->mark[0], digits, COUNT_DIGITS))
        return sl_write_error(w, w->out.err);
    return TK_OK;
}

const sl_format sl_format_tck = {"tck", TK_STREAMLINES_TCK, 0, tck_begin, tck_streamline, tck_finish};
