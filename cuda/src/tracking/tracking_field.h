/* Internal: the field a streamline reads: world <-> voxel coordinates, the SH series
 * interpolated at a point, and the region masks.  Interpolation follows MRtrix3's
 * Interp::Masked<Interp::Linear> (core/interp/masked.h, linear.h, base.h), the interpolator of
 * every tckgen algorithm (tracking/types.h), so that a streamline ends where MRtrix3's would.
 *
 * Host and device (TK_HD): the CPU tracker and the CUDA tracker (tracking_cuda.cu) compile
 * this one text, the plan and the volumes being the host's or their device copies. */
#ifndef TK_TRACKING_FIELD_H
#define TK_TRACKING_FIELD_H

#include <math.h>
#include <string.h>

#include "common/tk_hd.h"
#include "fibers/sh_eval.h"
#include "tracking_internal.h"

/* Voxel coordinates of world point p. */
TK_HD static inline void tk_tracking_to_voxel(const tk_tracking_plan *plan, const double *p, double *v)
{
    const double *m = plan->world2vox;
    for (int r = 0; r < 3; ++r) v[r] = m[r * 4] * p[0] + m[r * 4 + 1] * p[1] + m[r * 4 + 2] * p[2] + m[r * 4 + 3];
}

/* World point of voxel coordinates v. */
TK_HD static inline void tk_tracking_to_world(const tk_tracking_plan *plan, const double *v, double *p)
{
    const double *m = plan->grid.vox2world;
    for (int r = 0; r < 3; ++r) p[r] = m[r * 4] * v[0] + m[r * 4 + 1] * v[1] + m[r * 4 + 2] * v[2] + m[r * 4 + 3];
}

/* The series sh (the plan's lmax and basis) at unit direction dir. */
TK_HD static inline double tk_tracking_sh_value(const tk_tracking_plan *plan, const double *sh, const double *dir)
{
    double y[(TK_SH_MAX_LMAX + 1) * (TK_SH_MAX_LMAX + 2) / 2];
    tk_sh_eval_unchecked(plan->opts.basis, plan->opts.legacy, plan->opts.lmax, dir, y);
    double s = 0;
    for (int j = 0; j < plan->k; ++j) s += sh[j] * y[j];
    return s;
}

TK_HD static inline size_t tk_tracking_clamp_index(double i, size_t dim)
{
    if (i < 0) return 0;
    if (i >= (double)dim) return dim - 1;
    return (size_t)i;
}

/* The voxel nearest voxel coordinates v (std::round's halves away from zero, as MRtrix3's
 * masks round); 0 where it is outside the grid. */
TK_HD static inline int tk_tracking_nearest_voxel(const tk_tracking_plan *plan, const double *v, size_t *index)
{
    const size_t *d = plan->grid.dims;
    double r[3];
    for (int a = 0; a < 3; ++a) {
        r[a] = round(v[a]);
        if (!(r[a] >= 0 && r[a] < (double)d[a])) return 0; /* NaN too */
    }
    *index = (size_t)r[0] + d[0] * ((size_t)r[1] + d[1] * (size_t)r[2]);
    return 1;
}

/* 1 where the mask's voxel nearest world p is nonzero (0 outside the grid). */
TK_HD static inline int tk_tracking_mask_contains(const tk_tracking_plan *plan, const uint8_t *mask, const double *p)
{
    double v[3];
    size_t index;
    tk_tracking_to_voxel(plan, p, v);
    return tk_tracking_nearest_voxel(plan, v, &index) && mask[index] != 0;
}

/* The geometry of the trilinear interpolation at world p, as MRtrix3's masked linear
 * interpolator has it: 0 where p is outside the field of view (voxel centres +- half a voxel,
 * open at both ends: base.h) or its nearest voxel outside the grid; else that voxel (*nearest:
 * the support test's) and the 8 corners' first coefficients in the SH volume with their
 * weights, in the order every interpolation sums them (z, then y, then x).  Within half a
 * voxel of an edge the edge voxel's value holds (linear.h zeroes the fraction there and
 * clamps the indices).  The CPU's series and the CUDA warp's lanes both interpolate on it. */
TK_HD static inline int tk_tracking_corners(const tk_tracking_plan *plan, const double *p, size_t *nearest,
                                           size_t *offset, double *weight)
{
    const size_t *d = plan->grid.dims;
    double v[3];
    tk_tracking_to_voxel(plan, p, v);
    for (int a = 0; a < 3; ++a)
        if (!(v[a] > -0.5 && v[a] < (double)d[a] - 0.5)) return 0;
    if (!tk_tracking_nearest_voxel(plan, v, nearest)) return 0;
    double frac[3], base[3];
    for (int a = 0; a < 3; ++a) {
        base[a] = floor(v[a]);
        frac[a] = v[a] - base[a];
        if (v[a] < 0.0 || v[a] > (double)d[a] - 1.0) frac[a] = 0.0;
    }
    int corner = 0;
    for (int z = 0; z < 2; ++z) {
        const size_t iz = tk_tracking_clamp_index(base[2] + z, d[2]);
        const double wz = z ? frac[2] : 1.0 - frac[2];
        for (int y = 0; y < 2; ++y) {
            const size_t iy = tk_tracking_clamp_index(base[1] + y, d[1]);
            const double wy = (y ? frac[1] : 1.0 - frac[1]) * wz;
            for (int x = 0; x < 2; ++x, ++corner) {
                const size_t ix = tk_tracking_clamp_index(base[0] + x, d[0]);
                weight[corner] = (x ? frac[0] : 1.0 - frac[0]) * wy;
                offset[corner] = (ix + d[0] * (iy + d[1] * iz)) * (size_t)plan->k;
            }
        }
    }
    return 1;
}

#if !defined(__CUDA_ARCH__) && defined(__GNUC__)
/* The CPU: asks for the cache lines of a corner's k floats.  The corners are the step's cache
 * misses (the y and z neighbours far apart in the volume); the sum below takes them corner by
 * corner, and its loads, behind the nearest voxel's support test, reached the memory a few at
 * a time (perf: half the interpolation's samples on a corner's first load); asked for all at
 * once, the 8 corners' misses overlap.  Only a hint: the values read are the same. */
static inline void tk_tracking_prefetch_series(const float *s, int k)
{
    const char *b = (const char *)s;
    const size_t bytes = (size_t)k * sizeof *s;
    for (size_t at = 0; at < bytes; at += 64) __builtin_prefetch(b + at);
    __builtin_prefetch(b + bytes - 1); /* the last line, where the series does not start on one */
}
#endif

#ifdef TK_TRACK_HOST_V4
typedef double tk_field_v4d __attribute__((vector_size(32), aligned(8)));
typedef float tk_field_v4f __attribute__((vector_size(16), aligned(4)));
typedef int tk_field_v4i __attribute__((vector_size(16), aligned(4)));

/* tk_tracking_interpolate's support test and sum at lmax 8 (k = 45), host AVX2 build only:
 * the nearest voxel's coefficients tested four at a time (any nonzero, NaN included, as the
 * scalar loop's c[j] != 0), and the 45 sums held in eleven four-lane vectors and a scalar
 * across the 8 corners, where the generic loop loaded and stored them at every corner.  Each
 * coefficient's sum is the scalar loop's: 0.0, then corner by corner weight * (double)value,
 * so the series is the same to the bit. */
static inline int tk_tracking_interpolate_45(const float *sh, size_t nearest, const size_t *offset,
                                             const double *weight, double *out)
{
    enum { K = 45, NV = 11 };
    const float *c = sh + nearest * (size_t)K;
    tk_field_v4i nz = {0, 0, 0, 0};
    for (int i = 0; i < NV; ++i) nz |= *(const tk_field_v4f *)(c + 4 * i) != (tk_field_v4f){0.f, 0.f, 0.f, 0.f};
    if (!(nz[0] | nz[1] | nz[2] | nz[3]) && !(c[K - 1] != 0.f)) return 0;
    tk_field_v4d acc[NV];
    for (int i = 0; i < NV; ++i) acc[i] = (tk_field_v4d){0.0, 0.0, 0.0, 0.0};
    double last = 0.0;
    for (int corner = 0; corner < 8; ++corner) {
        const float *s = sh + offset[corner];
        const double w = weight[corner];
        for (int i = 0; i < NV; ++i)
            acc[i] += w * __builtin_convertvector(*(const tk_field_v4f *)(s + 4 * i), tk_field_v4d);
        last += w * (double)s[K - 1];
    }
    for (int i = 0; i < NV; ++i)
        for (int j = 0; j < 4; ++j) out[4 * i + j] = acc[i][j];
    out[K - 1] = last;
    return !isnan(out[0]);
}
#endif

/* The SH series at world p, interpolated trilinearly (tk_tracking_corners); 0 where p is
 * outside, the nearest voxel's coefficients are all zero (Masked: the FOD's support being
 * where dwi2fod wrote something), or the result's first coefficient is NaN (MRtrix3's
 * get_data), else 1. */
TK_HD static inline int tk_tracking_interpolate(const tk_tracking_field *f, const double *p, double *out)
{
    const int k = f->plan->k;
    size_t nearest, offset[8];
    double weight[8];
    if (!tk_tracking_corners(f->plan, p, &nearest, offset, weight)) return 0;
#if !defined(__CUDA_ARCH__) && defined(__GNUC__)
    for (int corner = 0; corner < 8; ++corner) tk_tracking_prefetch_series(f->sh + offset[corner], k);
#endif
#ifdef TK_TRACK_HOST_V4
    if (k == 45) return tk_tracking_interpolate_45(f->sh, nearest, offset, weight, out);
#endif
    const float *c = f->sh + nearest * (size_t)k;
    int any = 0;
    for (int j = 0; j < k && !any; ++j) any = c[j] != 0.f;
    if (!any) return 0;
    for (int j = 0; j < k; ++j) out[j] = 0.0;
    for (int corner = 0; corner < 8; ++corner) {
        const float *s = f->sh + offset[corner];
        for (int j = 0; j < k; ++j) out[j] += weight[corner] * (double)s[j];
    }
    return !isnan(out[0]);
}

/* Mask seeding's point in voxel ijk (MRtrix3's Random_per_voxel): uniform over the voxel's
 * cube in voxel coordinates, one draw per axis from rng, taken to world mm. */
TK_HD static inline void tk_tracking_voxel_seed(const tk_tracking_plan *plan, const size_t *ijk, tk_philox *rng,
                                               double *p)
{
    /* the draws go to the caller's axes in order: x first (reversed_axes: the grid's k is x) */
    const int rev = plan->opts.reversed_axes != 0;
    double v[3];
    for (int a = 0; a < 3; ++a) {
        const int axis = rev ? 2 - a : a;
        v[axis] = (double)ijk[axis] + tk_philox_uniform(rng) - 0.5;
    }
    tk_tracking_to_world(plan, v, p);
}

#endif
