/* NIfTI-1/2 header geometry and the NIfTI-1 files the tools write: see nifti_header.h.
 * Field offsets and the quaternion conversions follow nifti1.h / nifti2.h and nifti_clib's
 * nifti_quatern_to_mat44 / nifti_mat44_to_quatern. */
#include "nifti_header.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tk_status.h"

#ifdef TK_HAVE_ZLIB
#include <zlib.h>
#endif

typedef struct reader {
    const unsigned char *b;
    int swap;
} reader;

static void fetch(const reader *r, size_t at, unsigned n, void *out)
{
    unsigned char t[8];
    for (unsigned k = 0; k < n; ++k) t[k] = r->b[at + (r->swap ? n - 1 - k : k)];
    memcpy(out, t, n);
}
static double f32(const reader *r, size_t at) { float v; fetch(r, at, 4, &v); return v; }
static double f64(const reader *r, size_t at) { double v; fetch(r, at, 8, &v); return v; }
static int i16(const reader *r, size_t at) { int16_t v; fetch(r, at, 2, &v); return v; }
static int i32(const reader *r, size_t at) { int32_t v; fetch(r, at, 4, &v); return v; }
static int64_t i64(const reader *r, size_t at) { int64_t v; fetch(r, at, 8, &v); return v; }

/* pixdim[1..dims] and the transforms the codes select: finite and below 1e6 (nothing in
 * millimetres comes near; ITK 5.2 aborted the process on NaN or overflowing matrices). */
static int check_geometry(const tk_nifti_header *h, const char *what)
{
    const int dims = h->ndim < 1 ? 1 : h->ndim > 7 ? 7 : h->ndim;
    const char *name = NULL;
    double bad = 0;
    for (int k = 1; k <= dims && !name; ++k)
        if (!isfinite(h->pixdim[k]) || fabs(h->pixdim[k]) > 1e6) name = "pixdim", bad = h->pixdim[k];
    if (!name && h->qform_code > 0) {
        const double q[6] = {h->quatern[0], h->quatern[1], h->quatern[2], h->qoffset[0], h->qoffset[1], h->qoffset[2]};
        for (int k = 0; k < 6 && !name; ++k)
            if (!isfinite(q[k]) || fabs(q[k]) > 1e6) name = "the qform", bad = q[k];
    }
    if (!name && h->sform_code > 0)
        for (int k = 0; k < 12 && !name; ++k)
            if (!isfinite(h->srow[k / 4][k % 4]) || fabs(h->srow[k / 4][k % 4]) > 1e6)
                name = "the sform", bad = h->srow[k / 4][k % 4];
    if (name) {
        tk_set_error(TK_ERR_FORMAT,
                     "%s: NIfTI header: %s holds %f, no orientation can be built from it; fix the transform "
                     "or set its code to 0 (e.g. with nibabel), or re-save it from the tool that made it",
                     what, name, bad);
        return -1;
    }
    return 1;
}

/* Where a NIfTI version keeps the fields the tools use: byte offsets, and widths in bytes
 * (nifti1.h, nifti2.h).  Arrays hold their elements one after the other (srow: row by row);
 * NIfTI-1's one-byte xyzt_units is unsigned. */
typedef struct field {
    size_t at;
    unsigned bytes;
} field;
typedef struct nifti_layout {
    field dim, pixdim, intent_code, datatype, bitpix, vox_offset, scl_slope, scl_inter, xyzt_units, qform_code,
        sform_code, quatern, qoffset, srow;
    int integer_vox_offset; /* NIfTI-2's is an int64, NIfTI-1's a float */
} nifti_layout;

static const nifti_layout kNifti1 = {
    .dim = {40, 2}, .pixdim = {76, 4}, .intent_code = {68, 2}, .datatype = {70, 2}, .bitpix = {72, 2},
    .vox_offset = {108, 4}, .scl_slope = {112, 4}, .scl_inter = {116, 4}, .xyzt_units = {123, 1},
    .qform_code = {252, 2}, .sform_code = {254, 2}, .quatern = {256, 4}, .qoffset = {268, 4}, .srow = {280, 4}};
static const nifti_layout kNifti2 = {
    .dim = {16, 8}, .pixdim = {104, 8}, .intent_code = {504, 4}, .datatype = {12, 2}, .bitpix = {14, 2},
    .vox_offset = {168, 8}, .scl_slope = {176, 8}, .scl_inter = {184, 8}, .xyzt_units = {500, 4},
    .qform_code = {344, 4}, .sform_code = {348, 4}, .quatern = {352, 8}, .qoffset = {376, 8}, .srow = {400, 8},
    .integer_vox_offset = 1};

/* Element k of an integer field: signed, but for one byte */
static int64_t integer(const reader *r, field f, size_t k)
{
    const size_t at = f.at + f.bytes * k;
    switch (f.bytes) {
    case 1: return r->b[at];
    case 2: return i16(r, at);
    case 4: return i32(r, at);
    default: return i64(r, at);
    }
}
/* Element k of a floating-point field */
static double real(const reader *r, field f, size_t k)
{
    const size_t at = f.at + f.bytes * k;
    return f.bytes == 4 ? f32(r, at) : f64(r, at);
}

/* Every field but version and ndim, from the header at r laid out as layout */
static void read_fields(const reader *r, const nifti_layout *layout, tk_nifti_header *h)
{
    for (size_t k = 0; k < 8; ++k) {
        h->dim[k] = integer(r, layout->dim, k);
        h->pixdim[k] = real(r, layout->pixdim, k);
    }
    h->intent_code = (int)integer(r, layout->intent_code, 0);
    h->datatype = (int)integer(r, layout->datatype, 0);
    h->bitpix = (int)integer(r, layout->bitpix, 0);
    h->vox_offset =
        layout->integer_vox_offset ? (double)integer(r, layout->vox_offset, 0) : real(r, layout->vox_offset, 0);
    h->scl_slope = real(r, layout->scl_slope, 0);
    h->scl_inter = real(r, layout->scl_inter, 0);
    h->xyzt_units = (int)integer(r, layout->xyzt_units, 0);
    h->qform_code = (int)integer(r, layout->qform_code, 0);
    h->sform_code = (int)integer(r, layout->sform_code, 0);
    for (size_t k = 0; k < 3; ++k) {
        h->quatern[k] = real(r, layout->quatern, k);
        h->qoffset[k] = real(r, layout->qoffset, k);
        for (size_t c = 0; c < 4; ++c) h->srow[k][c] = real(r, layout->srow, 4 * k + c);
    }
}

static int parse1(const unsigned char *b, tk_nifti_header *h, const char *what)
{
    const int big348 = b[0] == 0 && b[1] == 0 && b[2] == 1 && b[3] == 0x5c;
    /* byte order as the NIfTI library reads it: dim[0] (1..7) decides where it is set */
    const int dim0_little = b[40] | b[41] << 8, dim0_big = b[41] | b[40] << 8;
    reader r = {b, (dim0_little >= 1 && dim0_little <= 7) ? 0 : (dim0_big >= 1 && dim0_big <= 7) ? 1 : big348};
    h->version = 1;
    h->ndim = i16(&r, 40);
    read_fields(&r, &kNifti1, h);
    return check_geometry(h, what);
}

static int parse2(const unsigned char *b, tk_nifti_header *h, const char *what)
{
    reader r = {b, 0};
    const int64_t little = i64(&r, 16);
    r.swap = 1;
    const int64_t big = i64(&r, 16);
    r.swap = (little >= 1 && little <= 7) ? 0 : (big >= 1 && big <= 7) ? 1 : (b[0] == 0 && b[1] == 0);
    h->version = 2;
    const int64_t n = i64(&r, 16);
    h->ndim = n < -1000 ? -1000 : n > 1000 ? 1000 : (int)n;
    read_fields(&r, &kNifti2, h);
    return check_geometry(h, what);
}

int tk_nifti_parse(const unsigned char *b, size_t n, tk_nifti_header *h, const char *what)
{
    memset(h, 0, sizeof *h);
    if (n >= 540) {
        const int size540 = (b[0] == 0x1c && b[1] == 2 && b[2] == 0 && b[3] == 0) ||
                            (b[0] == 0 && b[1] == 0 && b[2] == 2 && b[3] == 0x1c);
        const int magic2 = b[4] == 'n' && (b[5] == '+' || b[5] == 'i') && b[6] == '2' && b[7] == 0;
        if (size540 || magic2) return parse2(b, h, what);
    }
    if (n < 348) return 0;
    const int big348 = b[0] == 0 && b[1] == 0 && b[2] == 1 && b[3] == 0x5c;
    const int little348 = b[0] == 0x5c && b[1] == 1 && b[2] == 0 && b[3] == 0;
    const int magic1 = b[344] == 'n' && (b[345] == '+' || b[345] == 'i') && b[346] == '1' && b[347] == 0;
    if (!big348 && !little348 && !magic1) return 0;
    return parse1(b, h, what);
}

int tk_nifti_read_header(const char *path, tk_nifti_header *h)
{
    unsigned char b[540];
    int got;
#ifdef TK_HAVE_ZLIB
    gzFile g = gzopen(path, "rb");
    if (!g)
        return tk_set_error(TK_ERR_IO, "%s: cannot open: %s; check the name and that it is readable", path,
                            strerror(errno)), 0;
    got = gzread(g, b, sizeof b);
    gzclose(g);
#else
    FILE *f = fopen(path, "rb");
    if (!f)
        return tk_set_error(TK_ERR_IO, "%s: cannot open: %s; check the name and that it is readable", path,
                            strerror(errno)), 0;
    got = (int)fread(b, 1, sizeof b, f);
    fclose(f);
#endif
    const int r = got > 0 ? tk_nifti_parse(b, (size_t)got, h, path) : 0;
    if (r == 0) tk_set_error(TK_ERR_FORMAT, "%s: not a NIfTI-1 or NIfTI-2 header; give a NIfTI file", path);
    return r > 0;
}

void tk_nifti_qform_matrix(const tk_nifti_header *h, double m[3][4])
{
    double b = h->quatern[0], c = h->quatern[1], d = h->quatern[2], a = 1.0 - (b * b + c * c + d * d);
    if (a < 1e-7) {  /* nifti_clib: a special case of a 180-degree rotation, normalised */
        a = 1.0 / sqrt(b * b + c * c + d * d);
        b *= a, c *= a, d *= a;
        a = 0;
    } else {
        a = sqrt(a);
    }
    const double xd = h->pixdim[1] > 0 ? h->pixdim[1] : 1, yd = h->pixdim[2] > 0 ? h->pixdim[2] : 1;
    double zd = h->pixdim[3] > 0 ? h->pixdim[3] : 1;
    if (h->pixdim[0] < 0) zd = -zd;
    const double R[3][3] = {{a * a + b * b - c * c - d * d, 2 * (b * c - a * d), 2 * (b * d + a * c)},
                            {2 * (b * c + a * d), a * a + c * c - b * b - d * d, 2 * (c * d - a * b)},
                            {2 * (b * d - a * c), 2 * (c * d + a * b), a * a + d * d - c * c - b * b}};
    for (int i = 0; i < 3; ++i) {
        m[i][0] = R[i][0] * xd, m[i][1] = R[i][1] * yd, m[i][2] = R[i][2] * zd;
        m[i][3] = h->qoffset[i];
    }
}

const char *tk_nifti_world_matrix(const tk_nifti_header *h, double m[3][4])
{
    if (h->sform_code > 0) {
        memcpy(m, h->srow, sizeof h->srow);
        return "sform";
    }
    if (h->qform_code > 0) {
        tk_nifti_qform_matrix(h, m);
        return "qform";
    }
    memset(m, 0, 12 * sizeof(double));
    for (int i = 0; i < 3; ++i) m[i][i] = h->pixdim[i + 1];
    return "pixdim";
}

void tk_nifti_set_qform(tk_nifti_header *h, const double m[3][4], int code)
{
    double R[3][3], len[3];
    for (int c = 0; c < 3; ++c) {
        len[c] = sqrt(m[0][c] * m[0][c] + m[1][c] * m[1][c] + m[2][c] * m[2][c]);
        for (int r = 0; r < 3; ++r) R[r][c] = len[c] > 0 ? m[r][c] / len[c] : 0;
        h->pixdim[c + 1] = len[c] > 0 ? len[c] : 1;
    }
    for (int r = 0; r < 3; ++r) h->qoffset[r] = m[r][3];
    const double det = R[0][0] * (R[1][1] * R[2][2] - R[1][2] * R[2][1]) -
                       R[0][1] * (R[1][0] * R[2][2] - R[1][2] * R[2][0]) +
                       R[0][2] * (R[1][0] * R[2][1] - R[1][1] * R[2][0]);
    const double qfac = det < 0 ? -1 : 1;
    for (int r = 0; r < 3; ++r) R[r][2] *= qfac;
    h->pixdim[0] = qfac;
    double worst = 0;  /* R^T R against the identity */
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
            const double dot = R[0][i] * R[0][j] + R[1][i] * R[1][j] + R[2][i] * R[2][j];
            worst = fmax(worst, fabs(dot - (i == j)));
        }
    if (!(worst < 1e-6)) {
        h->qform_code = 0;
        h->quatern[0] = h->quatern[1] = h->quatern[2] = 0;
        return;
    }
    double a = R[0][0] + R[1][1] + R[2][2] + 1, b, c, d;
    if (a > 0.5) {
        a = 0.5 * sqrt(a);
        b = 0.25 * (R[2][1] - R[1][2]) / a;
        c = 0.25 * (R[0][2] - R[2][0]) / a;
        d = 0.25 * (R[1][0] - R[0][1]) / a;
    } else {
        const double xd = 1 + R[0][0] - (R[1][1] + R[2][2]), yd = 1 + R[1][1] - (R[0][0] + R[2][2]),
                     zd = 1 + R[2][2] - (R[0][0] + R[1][1]);
        if (xd > 1) {
            b = 0.5 * sqrt(xd);
            c = 0.25 * (R[0][1] + R[1][0]) / b;
            d = 0.25 * (R[0][2] + R[2][0]) / b;
            a = 0.25 * (R[2][1] - R[1][2]) / b;
        } else if (yd > 1) {
            c = 0.5 * sqrt(yd);
            b = 0.25 * (R[0][1] + R[1][0]) / c;
            d = 0.25 * (R[1][2] + R[2][1]) / c;
            a = 0.25 * (R[0][2] - R[2][0]) / c;
        } else {
            d = 0.5 * sqrt(zd);
            b = 0.25 * (R[0][2] + R[2][0]) / d;
            c = 0.25 * (R[1][2] + R[2][1]) / d;
            a = 0.25 * (R[1][0] - R[0][1]) / d;
        }
        if (a < 0) b = -b, c = -c, d = -d;
    }
    h->quatern[0] = b, h->quatern[1] = c, h->quatern[2] = d;
    h->qform_code = code;
}

static void put16(unsigned char *o, size_t at, int v)
{
    const int16_t x = (int16_t)v;
    memcpy(o + at, &x, 2);
}
static void putf(unsigned char *o, size_t at, double v)
{
    const float x = (float)v;
    memcpy(o + at, &x, 4);
}

int tk_nifti1_encode_f32(const tk_nifti_header *h, unsigned char o[348])
{
    /* (the tools run on little-endian machines: x86-64, aarch64) */
    memset(o, 0, 348);
    if (h->ndim < 1 || h->ndim > 7) return tk_set_error(TK_ERR_ARGUMENT, "NIfTI: %d dimensions", h->ndim), 0;
    for (int k = 1; k <= h->ndim; ++k)
        if (h->dim[k] < 1 || h->dim[k] > 32767)
            return tk_set_error(TK_ERR_ARGUMENT, "axis %d has %lld voxels, beyond NIfTI-1's 32767", k,
                                (long long)h->dim[k]), 0;
    const int32_t size = 348;
    memcpy(o, &size, 4);
    put16(o, 40, h->ndim);
    for (int k = 1; k < 8; ++k) put16(o, 40 + 2 * (size_t)k, k <= h->ndim ? (int)h->dim[k] : 1);
    put16(o, 70, 16);  /* NIFTI_TYPE_FLOAT32 */
    put16(o, 72, 32);
    for (int k = 0; k < 8; ++k)
        putf(o, 76 + 4 * (size_t)k, k == 0 ? (h->pixdim[0] < 0 ? -1 : 1) : k <= h->ndim ? h->pixdim[k] : 1);
    putf(o, 108, 352);
    putf(o, 112, 1);  /* scl_slope 1, scl_inter 0: the values as they are */
    o[123] = (unsigned char)(h->xyzt_units & 0xff);
    snprintf((char *)o + 148, 80, "TensorKernels");
    put16(o, 252, h->qform_code);
    put16(o, 254, h->sform_code);
    for (int k = 0; k < 3; ++k) {
        putf(o, 256 + 4 * (size_t)k, h->quatern[k]);  /* as given, whatever the code */
        putf(o, 268 + 4 * (size_t)k, h->qoffset[k]);
        for (int c = 0; c < 4; ++c) putf(o, 280 + 16 * (size_t)k + 4 * (size_t)c, h->srow[k][c]);
    }
    memcpy(o + 344, "n+1", 4);
    return 1;
}

int tk_nifti1_write_f32(const char *path, const tk_nifti_header *h, const float *data, int gzip)
{
    unsigned char head[352];
    if (!tk_nifti1_encode_f32(h, head)) {
        char why[256];
        snprintf(why, sizeof why, "%s", tk_last_error());
        return tk_set_error(TK_ERR_ARGUMENT, "%s: cannot write: %s", path, why), 0;
    }
    memset(head + 348, 0, 4);  /* no extensions */
    size_t count = 1;
    for (int k = 1; k <= h->ndim; ++k) count *= (size_t)h->dim[k];
    const size_t bytes = count * sizeof(float);
    int ok;
    if (gzip) {
#ifdef TK_HAVE_ZLIB
        gzFile g = gzopen(path, "wb6");
        if (!g) return tk_set_error(TK_ERR_IO, "%s: cannot create: %s", path, strerror(errno)), 0;
        ok = gzwrite(g, head, sizeof head) == (int)sizeof head;
        for (size_t done = 0; ok && done < bytes;) {
            const size_t chunk = bytes - done > (1u << 30) ? (1u << 30) : bytes - done;
            ok = gzwrite(g, (const char *)data + done, (unsigned)chunk) == (int)chunk;
            done += chunk;
        }
        ok = gzclose(g) == Z_OK && ok;
#else
        return tk_set_error(TK_ERR_UNSUPPORTED, "%s: cannot write .nii.gz: this build has no zlib", path), 0;
#endif
    } else {
        FILE *f = fopen(path, "wb");
        if (!f) return tk_set_error(TK_ERR_IO, "%s: cannot create: %s", path, strerror(errno)), 0;
        ok = fwrite(head, 1, sizeof head, f) == sizeof head && fwrite(data, 1, bytes, f) == bytes;
        ok = fclose(f) == 0 && ok;
    }
    if (!ok) return tk_set_error(TK_ERR_IO, "%s: write failed: %s", path, strerror(errno)), 0;
    return 1;
}
