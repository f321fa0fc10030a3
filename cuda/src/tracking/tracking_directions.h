/* Internal: random directions and the rotation that carries a direction drawn about +z to
 * one about a reference, as MRtrix3's MethodBase defines them (tracking/method.cpp:
 * random_direction(), rotate_direction()), and a
 * uniform direction on a cone drawn without sines (tk_tracking_random_cone). */
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

/* One try of tk_tracking_random_cone's point on its disc, from two uniforms in [0, 1): the
 * point of the square of half side cone_radius, and its squared radius (kept where at most
 * cone_radius2).  One text for every copy of the draw (the host's four lanes retry with it),
 * so that their operations, and bits, stay the same. */
TK_HD static inline double tk_tracking_disc_try(double u0, double u1, double cone_radius, double *a, double *b)
{
    *a = cone_radius * (2.0 * u0 - 1.0);
    *b = cone_radius * (2.0 * u1 - 1.0);
    return *a * *a + *b * *b;
}

/* The disc's point (a, b), r2 = a^2 + b^2, taken to the cap: the inverse of Lambert's
 * azimuthal equal-area projection. */
TK_HD static inline void tk_tracking_disc_to_cap(double a, double b, double r2, double *d)
{
    const double s = sqrt(1.0 - 0.25 * r2);
    d[0] = a * s, d[1] = b * s, d[2] = 1.0 - 0.5 * r2;
}

/* Uniform on the cap of half angle max_angle about +z, with no trigonometric function: a point
 * (a, b) uniform on the disc of radius cone_radius = 2 sin(max_angle / 2) (by rejection from its
 * square: the two coordinates drawn in turn, 32 bits each, and the point kept where
 * a^2 + b^2 <= cone_radius2, the radius squared as the plan holds it) taken to the sphere by
 * the inverse of Lambert's azimuthal equal-area projection, which keeps areas, so that the
 * direction is uniform on the cap: r^2 = a^2 + b^2 goes to (a s, b s, 1 - r^2 / 2),
 * s = sqrt(1 - r^2 / 4), a unit vector at polar angle 2 asin(r / 2).  Why not MRtrix3's azimuth
 * and polar angle by rejection (method.cpp random_direction (max_angle, sin_max_angle)): its
 * sines and cosines were a third of iFOD1's time on the CPU, and libm's and CUDA's differ in
 * their last bits, where additions, products and square roots are correctly rounded on both,
 * so the CPU and the GPU draw the same directions to the bit.  The same distribution; other
 * draws. */
TK_HD static inline void tk_tracking_random_cone(tk_philox *rng, double cone_radius, double cone_radius2, double *d)
{
    double a, b, r2;
    do {
        const double u0 = tk_philox_uniform32(rng), u1 = tk_philox_uniform32(rng); /* in this order */
        r2 = tk_tracking_disc_try(u0, u1, cone_radius, &a, &b);
    } while (r2 > cone_radius2);
    tk_tracking_disc_to_cap(a, b, r2, d);
}

/* The rotation in the plane of +z and unit ref that takes +z to ref: with m the unit
 * projection of ref on the xy plane, d = a z + b m + c (z x m) goes to a ref + b m' + c (z x m),
 * m' = (ref_z m_x, ref_z m_y, -|ref_xy|) the image of m.  Where ref is +-z: d, or -d.  Made
 * once for a step's reference (its square root and divisions), applied to each of the step's
 * calibration directions and trials: the same operations on the same values as making it
 * for each, so the same bits. */
typedef struct tk_tracking_rotation {
    double ref[3], m[3], mp[3];
    double flip; /* 0: the general case; +-1: ref is +-z */
} tk_tracking_rotation;

TK_HD static inline void tk_tracking_rotation_to(const double *ref, tk_tracking_rotation *r)
{
    const double n = sqrt(ref[0] * ref[0] + ref[1] * ref[1]);
    for (int a = 0; a < 3; ++a) r->ref[a] = ref[a], r->m[a] = 0.0, r->mp[a] = 0.0; /* the flip uses neither */
    if (n == 0.0) {
        r->flip = ref[2] < 0 ? -1.0 : 1.0;
        return;
    }
    r->flip = 0.0;
    r->m[0] = ref[0] / n, r->m[1] = ref[1] / n, r->m[2] = 0.0;
    r->mp[0] = ref[2] * r->m[0], r->mp[1] = ref[2] * r->m[1], r->mp[2] = -n;
}

TK_HD static inline void tk_tracking_rotate(const tk_tracking_rotation *r, const double *d, double *out)
{
    if (r->flip != 0.0) {
        for (int a = 0; a < 3; ++a) out[a] = r->flip * d[a];
        return;
    }
    const double alpha = d[2], beta = d[0] * r->m[0] + d[1] * r->m[1];
    /* d less its z and m parts, plus their images */
    for (int a = 0; a < 3; ++a) out[a] = d[a] - alpha * (a == 2) - beta * r->m[a] + alpha * r->ref[a] + beta * r->mp[a];
}

/* The rotation made and applied at once (the GPU's warp: a rotation kept across a step's
 * trials would hold ten more doubles a lane in registers). */
TK_HD static inline void tk_tracking_rotate_from_z(const double *ref, const double *d, double *out)
{
    tk_tracking_rotation r;
    tk_tracking_rotation_to(ref, &r);
    tk_tracking_rotate(&r, d, out);
}

#endif
