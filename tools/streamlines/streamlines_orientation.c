/* The axis codes of a voxel-to-RAS affine exactly as nibabel computes them (aff2axcodes, by
 * orientations.io_orientation), because nibabel flips the voxel axes of a .trk file whose
 * voxel_order differs from them: the columns scaled to unit length, the nearest orthogonal
 * matrix R (the polar factor, here by Newton's iteration R = (R + R^-T) / 2, which converges
 * to the SVD's P Q^T that nibabel uses), and for voxel axes 0, 1, 2 in turn the world axis of
 * the largest |R| entry in its column, that world axis then taken out of the running. */
#include <math.h>
#include <string.h>

void sl_axis_codes(const double *a, char codes[3]);

static int inverse_transpose(const double *m, double *out)
{
    double det = m[0] * (m[4] * m[8] - m[5] * m[7]) - m[1] * (m[3] * m[8] - m[5] * m[6]) + m[2] * (m[3] * m[7] - m[4] * m[6]);
    if (det == 0) return -1;
    /* (m^-1)^T is the cofactor matrix over det */
    out[0] = (m[4] * m[8] - m[5] * m[7]) / det;
    out[1] = (m[5] * m[6] - m[3] * m[8]) / det;
    out[2] = (m[3] * m[7] - m[4] * m[6]) / det;
    out[3] = (m[2] * m[7] - m[1] * m[8]) / det;
    out[4] = (m[0] * m[8] - m[2] * m[6]) / det;
    out[5] = (m[1] * m[6] - m[0] * m[7]) / det;
    out[6] = (m[1] * m[5] - m[2] * m[4]) / det;
    out[7] = (m[2] * m[3] - m[0] * m[5]) / det;
    out[8] = (m[0] * m[4] - m[1] * m[3]) / det;
    return 0;
}

void sl_axis_codes(const double *a, char codes[3])
{
    double r[9];
    for (int c = 0; c < 3; ++c) {
        double n = 0;
        for (int k = 0; k < 3; ++k) n += a[4 * k + c] * a[4 * k + c];
        n = n > 0 ? sqrt(n) : 1;
        for (int k = 0; k < 3; ++k) r[3 * k + c] = a[4 * k + c] / n;
    }
    for (int it = 0; it < 100; ++it) {
        double t[9], d = 0;
        if (inverse_transpose(r, t) != 0) break;
        for (int i = 0; i < 9; ++i) {
            double v = 0.5 * (r[i] + t[i]);
            d = fmax(d, fabs(v - r[i]));
            r[i] = v;
        }
        if (d < 1e-15) break;
    }
    static const char pos[3] = {'R', 'A', 'S'}, neg[3] = {'L', 'P', 'I'};
    for (int c = 0; c < 3; ++c) {
        int best = 0;
        for (int k = 1; k < 3; ++k)
            if (fabs(r[3 * k + c]) > fabs(r[3 * best + c])) best = k;
        codes[c] = r[3 * best + c] >= 0 ? pos[best] : neg[best];
        for (int j = 0; j < 3; ++j) r[3 * best + j] = 0;
    }
}
