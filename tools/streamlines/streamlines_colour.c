/* Directionally encoded colour (DEC) of streamline points, the colouring SlicerDMRI and
 * most viewers give fibre bundles: red, green, blue for the tangent's |x|, |y|, |z|.  The
 * absolute values make it the same in RAS and LPS. */
#include <math.h>

#include "streamlines_internal.h"

void sl_tangent_colours(const float *p, size_t n, unsigned char *rgb)
{
    for (size_t i = 0; i < n; ++i) {
        size_t a = i > 0 ? i - 1 : 0, b = i + 1 < n ? i + 1 : n - 1;
        double t[3], len = 0;
        for (int c = 0; c < 3; ++c) {
            t[c] = (double)p[3 * b + c] - (double)p[3 * a + c];
            len += t[c] * t[c];
        }
        len = sqrt(len);
        for (int c = 0; c < 3; ++c)
            rgb[3 * i + c] = len > 0 ? (unsigned char)lround(255.0 * fabs(t[c]) / len) : 128;
    }
}

void tk_streamlines_tangent_colours(const float *xyz, size_t n, unsigned char *rgb) { sl_tangent_colours(xyz, n, rgb); }
