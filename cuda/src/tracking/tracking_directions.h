/* Internal: random directions and the rotation that carries a direction drawn about +z to
 * one about a reference, as MRtrix3's MethodBase defines them (tracking/method.cpp:
 * random_direction(), random_direction(max_angle, sin_max_angle), rotate_direction()). */
#ifndef TK_TRACKING_DIRECTIONS_H
#define TK_TRACKING_DIRECTIONS_H

#include <math.h>

#include "common/tk_hd.h"
#include "tracking_rng.h"

/* Uniform on the sphere: uniform in the unit ball by rejection from the cube, normalised. */
TK_HD static inline void tk_tracking_random_direction(tk_philox *rng, double *d)
{
    double n2;
    do {
        for (int a = 0; a < 3; ++a) d[a] = 2.0 * tk_philox_uniform(rng) - 1.0;
        n2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
    } while (n2 > 1.0 || n2 == 0.0);
    const double n = sqrt(n2);
    for (int a = 0; a < 3; ++a) d[a] /= n;
}

/* Uniform on the cap of half angle max_angle about +z: the azimuth uniform, the polar angle
 * by rejection with density proportional to its sine. */
TK_HD static inline void tk_tracking_random_cone(tk_philox *rng, double max_angle, double sin_max_angle, double *d)
{
    const double phi = 2.0 * 3.14159265358979323846 * tk_philox_uniform(rng);
    double theta;
    do {
        theta = max_angle * tk_philox_uniform(rng);
    } while (sin_max_angle * tk_philox_uniform(rng) > sin(theta));
    d[0] = sin(theta) * cos(phi), d[1] = sin(theta) * sin(phi), d[2] = cos(theta);
}

/* The rotation in the plane of +z and unit ref that takes +z to ref, applied to d: with m
 * the unit projection of ref on the xy plane, d = a z + b m + c (z x m) goes to
 * a ref + b m' + c (z x m), m' = (ref_z m_x, ref_z m_y, -|ref_xy|) the image of m.  Where ref
 * is +-z: d, or -d. */
TK_HD static inline void tk_tracking_rotate_from_z(const double *ref, const double *d, double *out)
{
    const double n = sqrt(ref[0] * ref[0] + ref[1] * ref[1]);
    if (n == 0.0) {
        const double s = ref[2] < 0 ? -1.0 : 1.0;
        for (int a = 0; a < 3; ++a) out[a] = s * d[a];
        return;
    }
    const double m[3] = {ref[0] / n, ref[1] / n, 0.0}, mp[3] = {ref[2] * m[0], ref[2] * m[1], -n};
    const double alpha = d[2], beta = d[0] * m[0] + d[1] * m[1];
    /* d less its z and m parts, plus their images */
    for (int a = 0; a < 3; ++a) out[a] = d[a] - alpha * (a == 2) - beta * m[a] + alpha * ref[a] + beta * mp[a];
}

#endif
