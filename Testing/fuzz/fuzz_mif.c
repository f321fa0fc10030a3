/* Fuzz target: MRtrix3 images (tools/io/mif_io.c: tk_mif_read_header, tk_mif_read_data).
 *
 * Input: byte 0 picks the file (mod 3): 0 the rest as input.mif; 1 the rest compressed by
 * the harness as input.mif.gz (so the fuzzer works on the header through gzip); 2 the rest
 * as a header input.mih, "@@FILE@@\n", then its data file data.dat.
 *
 * Asserts, for every input:
 *  - a rejection leaves a message that starts with the file's path and ends with what to do
 *    (tk_message_style.h), and no data;
 *  - an accepted header has 1..16 axes of sizes >= 1 whose product fits, a layout that is a
 *    signed permutation, positive finite voxel sizes on the spatial axes, a finite transform
 *    with unit columns, a data file and a finite scaling;
 *  - image_probe, the tools' one validation of every format, agrees: it accepts what the
 *    reader accepts (unless more than TK_IMAGE_MAX_AXES axes of more than one voxel) and
 *    refuses what the reader refuses, with a message naming the file;
 *  - its data written back (tk_mif_write, Float32LE, same layout, voxel sizes and transform)
 *    read back bit for bit, with the same header. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef TK_HAVE_ZLIB
#include <zlib.h>
#endif

#include "../common/tk_message_style.h"
#include "fuzz_common.h"
#include "image_probe.h"
#include "mif_io.h"
#include "tk_status.h"

static void check_header(const tk_mif_header *h)
{
    TK_FUZZ_CHECK(h->ndim >= 1 && h->ndim <= TK_MIF_MAX_AXES, "%d axes", h->ndim);
    TK_FUZZ_CHECK(tk_mif_count(h) > 0, "the value count overflows or is 0");
    int seen[TK_MIF_MAX_AXES] = {0};
    for (int a = 0; a < h->ndim; ++a) {
        TK_FUZZ_CHECK(h->dim[a] >= 1, "axis %d of size 0", a);
        const int rank = abs(h->layout[a]) - 1;
        TK_FUZZ_CHECK(rank >= 0 && rank < h->ndim && !seen[rank]++, "layout of axis %d: %d", a, h->layout[a]);
        if (a < 3) TK_FUZZ_CHECK(isfinite(h->vox[a]) && h->vox[a] > 0, "vox[%d] = %g", a, h->vox[a]);
    }
    for (int c = 0; c < 3; ++c) {
        double n = 0;
        for (int r = 0; r < 3; ++r) {
            TK_FUZZ_CHECK(isfinite(h->transform[r][c]) && isfinite(h->transform[r][3]), "a non-finite transform");
            n += h->transform[r][c] * h->transform[r][c];
        }
        TK_FUZZ_CHECK(fabs(sqrt(n) - 1) < 1e-6, "transform column %d of length %g", c, sqrt(n));
    }
    TK_FUZZ_CHECK(isfinite(h->scale) && isfinite(h->offset), "a non-finite scaling");
    TK_FUZZ_CHECK(h->data_path[0] != '\0', "no data file");
}

static int same_bits(const float *a, const float *b, size_t n) { return !memcmp(a, b, n * sizeof(float)); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    static const char *const names[] = {"input.mif", "input.mif.gz", "input.mih"};
    const int kind = data[0] % 3;
    char *path = tk_fuzz_scratch_path(names[kind]), *dat = tk_fuzz_scratch_path("data.dat");
    const uint8_t *body = data + 1;
    size_t body_size = size - 1;
    remove(dat);
    if (kind == 2) {
        static const char sep[] = "@@FILE@@\n";
        const size_t n = sizeof sep - 1;
        for (size_t p = 0; p + n <= body_size; ++p)
            if (!memcmp(body + p, sep, n)) {
                tk_fuzz_write_file(dat, body + p + n, body_size - p - n);
                body_size = p;
                break;
            }
    }
    if (kind == 1) {
#ifdef TK_HAVE_ZLIB
        gzFile g = gzopen(path, "wb1");
        TK_FUZZ_CHECK(g != NULL, "cannot write the scratch file");
        if (body_size) gzwrite(g, body, (unsigned)body_size);
        gzclose(g);
#else
        tk_fuzz_write_file(path, body, body_size);
#endif
    } else {
        tk_fuzz_write_file(path, body, body_size);
    }

    tk_image_info info;
    const int probed = tk_image_probe(path, &info);
    if (!probed) {
        TK_FUZZ_CHECK(!strncmp(tk_last_error(), path, strlen(path)), "the probe's message does not name the file: %s",
                      tk_last_error());
        TK_FUZZ_CHECK(tk_message_advises(tk_last_error()), "the probe's message does not end with what to do: %s",
                      tk_last_error());
    }
    tk_mif_header h;
    float *values = NULL;
    if (!tk_mif_read_header(path, &h) || !tk_mif_read_data(path, &h, &values)) {
        TK_FUZZ_CHECK(values == NULL, "rejected, yet data came back");
        TK_FUZZ_CHECK(!strncmp(tk_last_error(), path, strlen(path)), "the message does not name the file: %s",
                      tk_last_error());
        TK_FUZZ_CHECK(tk_message_advises(tk_last_error()), "the message does not end with what to do: %s",
                      tk_last_error());
        TK_FUZZ_CHECK(!probed || info.format != TK_IMAGE_MIF, "the probe accepted what the reader refuses: %s",
                      tk_last_error());
    } else {
        check_header(&h);
        int axes = h.ndim;
        while (axes > 1 && h.dim[axes - 1] == 1) --axes;
        TK_FUZZ_CHECK(probed == (axes <= TK_IMAGE_MAX_AXES), "the probe %s what the reader accepts (%d axes)",
                      probed ? "accepted" : "refused", axes);
        if (probed)
            TK_FUZZ_CHECK(info.format == TK_IMAGE_MIF && info.bytes == tk_mif_data_bytes(&h), "probe disagrees");
        const size_t n = tk_mif_count(&h);
        /* written back in index order (axis 0 fastest), read back as it was */
        tk_mif_header w = h;
        for (int a = 0; a < w.ndim; ++a) w.layout[a] = a + 1;
        w.gzip = 0;
        char *out = tk_fuzz_scratch_path("back.mif");
        TK_FUZZ_CHECK(tk_mif_write(out, &w, values), "an accepted image does not write back: %s", tk_last_error());
        tk_mif_header b;
        float *again = NULL;
        TK_FUZZ_CHECK(tk_mif_read_header(out, &b) && tk_mif_read_data(out, &b, &again), "written back, unreadable: %s",
                      tk_last_error());
        TK_FUZZ_CHECK(b.ndim == h.ndim && !memcmp(b.dim, h.dim, sizeof h.dim), "the sizes changed");
        for (int a = 0; a < h.ndim && a < 3; ++a) TK_FUZZ_CHECK(b.vox[a] == h.vox[a], "vox[%d] changed", a);
        for (int r = 0; r < 3; ++r)
            for (int c = 0; c < 4; ++c)
                TK_FUZZ_CHECK(fabs(b.transform[r][c] - h.transform[r][c]) <= 1e-12 * (1 + fabs(h.transform[r][c])),
                              "transform[%d][%d] changed", r, c);
        TK_FUZZ_CHECK(same_bits(values, again, n), "the values changed");
        free(again);
        free(out);
    }
    free(values);
    free(path);
    free(dat);
    return 0;
}
