/* Internal: the per-(lmax, basis) tables of the peak finder, shared by its backends (a plan
 * owns one set: fibers_plan.h). */
#ifndef TK_FIBERS_INTERNAL_H
#define TK_FIBERS_INTERNAL_H

#include <math.h>

#include "sh_eval.h"
#include "tk_fibers.h"
#include "common/tk_hd.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Maxima a voxel keeps (the largest by grid value), per kind of candidate on the GPU; also
 * the most peaks an output may ask for. */
#define TK_FIBERS_MAX_CANDIDATES 64

/* A shoulder candidate within this many grid spacings of a grid maximum is taken to lie on
 * that maximum's hill and is not polished (both backends). */
#ifndef TK_SHOULDER_GAP
#define TK_SHOULDER_GAP 1.5
#endif

/* A candidate's climb gives up beyond this many grid spacings from its start (both
 * backends): a maximum farther off is another hill's, with a candidate of its own. */
#ifndef TK_CLIMB_LEASH
#define TK_CLIMB_LEASH 2.0
#endif

/* A grid direction below one neighbour only, by less than this share of its steepest fall to
 * another, is a shoulder candidate too (both backends). */
#ifndef TK_RIDGE_RISE
#define TK_RIDGE_RISE 0.25f
#endif

/* Directions on the hemisphere grid: its density grows with lmax like the number of lobes the
 * function can hold, about 1,500 (3.7 degree spacing) at lmax 8. */
#define TK_FIBERS_GRID_SIZE(lmax) (24 * (lmax) * (lmax) > 200 ? 24 * (lmax) * (lmax) : 200)

/* A shoulder candidate goes on to the exact (double, Newton-step) test only where the
 * quadratic model that its TK_FIBERS_FIT_WIDTH nearest grid values fit has a maximum within
 * reach (tk_fibers_fit_reaches): that model's gradient and Hessian are within a few per cent
 * of the exact ones on real FODs, so the test is taken with slack: a curvature up to
 * TK_FIT_SLACK of the other's size on the wrong side, a step up to TK_FIT_REACH spacings
 * (the exact test allows one).  On dwi2fod's and DIPY's FODs of small_64D and small_101D it
 * drops 60-75% of the shoulder candidates and changes no voxel's maxima. */
#define TK_FIBERS_FIT_WIDTH 8
#define TK_FIT_SLACK 0.3f
#define TK_FIT_REACH 1.5f

/* The grid's covering radius (the farthest any direction lies from its nearest grid
 * direction or antipode) is at most this many grid spacings: 0.800-0.872 for every lmax's
 * lattice, from the circumcircles of its Delaunay triangles (the test FibersPlan.
 * CoveringRadiusIsWithinItsBound samples it). */
#define TK_FIBERS_COVER 0.9

typedef struct tk_fibers_tables {
    int lmax, k;          /* k SH coefficients = k unique tensor entries */
    tk_sh_basis basis;
    int legacy;
    double *map;          /* k x k: tensor = map * sh */
    double *map_t;        /* the same, column-major */
    int grid;             /* directions on the upper hemisphere; their antipodes complete the sphere */
    double *dirs;         /* grid x 3 */
    float *basis_t;       /* k x grid_padded: SH functions at the grid, coefficient-major */
    int grid_padded;      /* grid rounded up to the evaluation block */
    int *nbr_start, *nbr; /* CSR neighbour lists over the hemisphere indices (antipodes folded in) */
    int *nbr_near;        /* per direction (grid_padded): how many of its neighbours, which come
                           * nearest first, lie within 1.05 grid spacings */
    int *fit_nbr;         /* grid_padded x TK_FIBERS_FIT_WIDTH: each direction's nearest ones */
    double axial_q[5][9]; /* the quadratic forms x' Q x of the five l = 2 basis functions
                           * (row-major 3 x 3): the l = 2 band's axis (tk_fibers_axial_axis) */
    float *fit_w;         /* grid_padded x 5 x TK_FIBERS_FIT_WIDTH: least-squares weights from
                           * their values less its own to the model's gradient (2) and Hessian
                           * (3: ss, st, tt) in geodesic normal coordinates; direction-major, as
                           * only the few directions on ridges and the candidates read them */
} tk_fibers_tables;

tk_status tk_fibers_tables_create(int lmax, tk_sh_basis basis, int legacy, tk_fibers_tables *plan);
void tk_fibers_tables_free(tk_fibers_tables *plan);
/* The grid directions j whose direction or antipode may lie within `radius` (rad) of grid
 * direction i, as one or two index ranges [ranges[2r], ranges[2r + 1]); returns how many.
 * The lattice's z falls with its index (z_j = 1 - (2j + 1) / 2g) and differs between two
 * unit vectors by at most their angle, so a band of z holds every neighbour: the plan's
 * neighbour searches cost O(g) a direction, not O(g^2) (a process's start-up). */
int tk_fibers_grid_window(int g, const double *dirs, int i, double radius, int *ranges);
/* The fit stencils of a plan whose grid is set (fibers_fit.c). */
tk_status tk_fibers_fit_create(tk_fibers_tables *plan);

/* Whether the quadratic model g.s + s'Hs/2 (th: g_s, g_t, H_ss, H_st, H_tt) has, with the
 * slack above, a maximum within TK_FIT_REACH grid spacings: H's more negative curvature
 * below zero, the other at most TK_FIT_SLACK of its size above, and the Newton step with
 * that other curvature held at least that far below zero short enough. */
TK_HD static inline int tk_fibers_fit_reaches(const float *th, float spacing)
{
    const float a = th[2], b = th[3], c = th[4];
    const float mean = 0.5f * (a + c), rad = sqrtf(0.25f * (a - c) * (a - c) + b * b);
    const float l1 = mean - rad, l2 = mean + rad;
    if (!(l1 < 0.f) || l2 > -TK_FIT_SLACK * l1) return 0;
    const float l2m = l2 < TK_FIT_SLACK * l1 ? l2 : TK_FIT_SLACK * l1;
    /* l1's eigenvector: the longer of the two forms (either vanishes on its own axis) */
    float ex = b, ey = l1 - a;
    const float fx = l1 - c, fy = b;
    if (fx * fx + fy * fy > ex * ex + ey * ey) ex = fx, ey = fy;
    const float en = sqrtf(ex * ex + ey * ey);
    if (!(en > 0.f)) ex = 1.f, ey = 0.f;
    else ex /= en, ey /= en;
    const float s1 = (th[0] * ex + th[1] * ey) / l1, s2 = (th[1] * ex - th[0] * ey) / l2m;
    const float reach = TK_FIT_REACH * spacing;
    return s1 * s1 + s2 * s2 <= reach * reach;
}

/* The axis of a 3-vector's largest-magnitude entry, the first of equals: the entry a fiber's
 * sign makes positive (fiber_sign), the pivot the CUDA grid pass divides by (grid_eval_order). */
TK_HD static inline int tk_fibers_largest_axis(const double *x)
{
    int big = fabs(x[1]) > fabs(x[0]) ? 1 : 0;
    if (fabs(x[2]) > fabs(x[big])) big = 2;
    return big;
}

/* u, w: an orthonormal basis of the plane orthogonal to unit x, from the coordinate axis x
 * leans on least; the Newton climb, the fit stencils and the fitted starts share it, so that
 * a model's coordinates mean the same in each. */
TK_HD static inline void tk_fibers_tangent_basis(const double *x, double *u, double *w)
{
    const int small = fabs(x[0]) <= fabs(x[1]) ? (fabs(x[0]) <= fabs(x[2]) ? 0 : 2) : (fabs(x[1]) <= fabs(x[2]) ? 1 : 2);
    const double d = x[small];
    for (int i = 0; i < 3; ++i) u[i] = (i == small) - d * x[i];
    const double n = sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);
    for (int i = 0; i < 3; ++i) u[i] /= n;
    w[0] = x[1] * u[2] - x[2] * u[1], w[1] = x[2] * u[0] - x[0] * u[2], w[2] = x[0] * u[1] - x[1] * u[0];
}

/* Moves unit x (a grid direction whose quadratic model is th, in nt_tangent_basis's basis
 * at x) to the model's maximum, where the model's Hessian is negative definite and that
 * maximum lies within one grid spacing; else leaves x. */
TK_HD static inline void tk_fibers_fit_start(const float *th, double spacing, double *x)
{
    const double a = th[2], b = th[3], c = th[4], det = a * c - b * b;
    if (!(a < 0 && det > 0)) return;
    const double s0 = -(c * th[0] - b * th[1]) / det, s1 = -(a * th[1] - b * th[0]) / det;
    if (!(s0 * s0 + s1 * s1 <= spacing * spacing)) return;
    double u[3], w[3];
    tk_fibers_tangent_basis(x, u, w);
    double y[3];
    for (int i = 0; i < 3; ++i) y[i] = x[i] + s0 * u[i] + s1 * w[i];
    const double n = sqrt(y[0] * y[0] + y[1] * y[1] + y[2] * y[2]);
    for (int i = 0; i < 3; ++i) x[i] = y[i] / n;
}

/* ---- axially symmetric series ------------------------------------------------------
 * A series that is one lobe's, symmetric about an axis u (one fiber of a noise-free
 * phantom or simulation, a response function), has its only isolated maximum at u (and -u,
 * the same fiber): every other critical point lies on a ring about the axis, a circle of
 * equal values that is no strict maximum.  The general search sees such a ring as dozens of
 * grid maxima, each climbed to its flat stop; the axial test instead proves the symmetry
 * and answers with the pole alone.  Symmetry to within TK_FIBERS_AXIAL_TOL of the series'
 * norm counts (float32 coefficients of a symmetric lobe are symmetric to ~4e-8; real FODs
 * are asymmetric by 1e-2 and more): ring "bumps" below that are rounding, not fibers. */
#define TK_FIBERS_AXIAL_TOL 1e-6

/* tk_fibers_axial_axis (below) given the squared norm of aniso[1 ..] (norm2): it reads
 * aniso[1 .. 5] only (the CUDA finder's first look at every voxel keeps no more). */
TK_HD static inline int tk_fibers_axial_band_axis(const double (*q)[9], double norm2, const double *aniso, double *u)
{
    double Q[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0}, band2 = 0;
    for (int m = 0; m < 5; ++m) {
        band2 += aniso[1 + m] * aniso[1 + m];
        for (int e = 0; e < 9; ++e) Q[e] += aniso[1 + m] * q[m][e];
    }
    if (!(band2 > 1e-12 * norm2)) return 0;
    /* eigenvalues (a, -a/2, -a/2): det Q = a^3 / 4, and Q + (a/2) I = (3a/2) u u' */
    const double det = Q[0] * (Q[4] * Q[8] - Q[5] * Q[7]) - Q[1] * (Q[3] * Q[8] - Q[5] * Q[6]) +
                       Q[2] * (Q[3] * Q[7] - Q[4] * Q[6]);
    const double a = cbrt(4.0 * det);
    double R[9];
    for (int e = 0; e < 9; ++e) R[e] = Q[e] + (e % 4 == 0 ? 0.5 * a : 0.0);
    int col = 0;
    for (int c = 1; c < 3; ++c)
        if (fabs(R[c * 4]) > fabs(R[col * 4])) col = c;
    const double n = sqrt(R[col] * R[col] + R[3 + col] * R[3 + col] + R[6 + col] * R[6 + col]);
    if (!(n > 0)) return 0;
    for (int i = 0; i < 3; ++i) u[i] = R[i * 3 + col] / n;
    double off = 0, qq = 0; /* |Q + (a/2) I - (3a/2) u u'|, |Q| */
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
            const double d = R[i * 3 + j] - 1.5 * a * u[i] * u[j];
            off += d * d, qq += Q[i * 3 + j] * Q[i * 3 + j];
        }
    return off <= 1e-8 * qq;
}

/* u: the axis of the l = 2 band of the unit-scaled series aniso, where that band is the
 * quadratic form of an axially symmetric function (eigenvalues a, -a/2, -a/2) within a loose
 * 1e-4; 0 where it is not (nearly every voxel of a real FOD: one comparison of eigenvalues),
 * or where the band is (nearly) zero. */
TK_HD static inline int tk_fibers_axial_axis(const double (*q)[9], int k, const double *aniso, double *u)
{
    double norm2 = 0;
    for (int j = 1; j < k; ++j) norm2 += aniso[j] * aniso[j];
    return tk_fibers_axial_band_axis(q, norm2, aniso, u);
}

/* 1 where the unit-scaled series aniso (lmax, basis, legacy) is axially symmetric about
 * the unit vector u to within TK_FIBERS_AXIAL_TOL: in an orthonormal basis each band of a
 * series symmetric about u is a multiple of the band's basis functions at u (the addition
 * theorem), so the part of each band orthogonal to them is the asymmetry. */
TK_HD static inline int tk_fibers_axial_residual_ok(tk_sh_basis basis, int legacy, int lmax, const double *aniso,
                                                    const double *u)
{
    double y[(TK_SH_MAX_LMAX + 1) * (TK_SH_MAX_LMAX + 2) / 2];
    tk_sh_eval_unchecked(basis, legacy, lmax, u, y);
    double off = 0, all = 0;
    for (int l = 2; l <= lmax; l += 2) {
        const int centre = l * (l + 1) / 2;
        double cc = 0, cy = 0, yy = 0;
        for (int m = -l; m <= l; ++m) {
            const double w = tk_sh_orthonormal_weight(basis, legacy, m);
            const double c = aniso[centre + m] * w, b = y[centre + m] / w;
            cc += c * c, cy += c * b, yy += b * b;
        }
        off += cc - cy * cy / yy, all += cc;
    }
    return off <= TK_FIBERS_AXIAL_TOL * TK_FIBERS_AXIAL_TOL * all;
}

/* Band l's share of the bounds below, given the sum cc of its squared coefficients: its
 * largest value on any great circle (over divisor) into *sup, times l^2 into *m2 and l^3 into
 * *m3.  Apart from the loop over the coefficients so that the CUDA bar kernel can sum them as
 * it reads them (no array of the series in its registers) with the same arithmetic. */
TK_HD static inline void tk_fibers_band_bound_add(int l, double cc, double divisor, double *sup, double *m2, double *m3)
{
    const double band = sqrt((2.0 * l + 1.0) / (4.0 * 3.14159265358979323846) * cc) / divisor;
    *sup += band, *m2 += (double)(l * l) * band, *m3 += (double)(l * l * l) * band;
}

/* tk_fibers_derivative_bounds_d (CPU) and _f (CUDA): fibers_band_bounds.h */
#include "common/precision_double.h"
#include "fibers_band_bounds.h"
#include "common/precision_end.h"
#include "common/precision_float.h"
#include "fibers_band_bounds.h"
#include "common/precision_end.h"

/* How far above the grid value of its nearest grid direction a local maximum of the
 * unit-scaled series can lie: f falls from a maximum by at most m2 d^2 / 2 over a geodesic of
 * length d (f' = 0 there), m2 and sup its bounds from tk_fibers_derivative_bounds_d; d is at
 * most the grid's covering radius cover.  Plus the float grid values' rounding. */
TK_HD static inline double tk_fibers_value_margin(double sup, double m2, double cover)
{
    return 0.5 * m2 * cover * cover + 1e-4 * sup;
}


/* float's smallest normal number (FLT_MIN, spelled out for nvcc's host and device passes) */
#define TK_FLT_MIN 1.17549435082228750797e-38

/* The value of the l = 0 basis function, 1 / (2 sqrt(pi)), in every basis and variant. */
#define TK_SH_Y00 0.28209479177387814347

/* The series split as sh = iso_term + scale * aniso on the sphere: aniso[0] = 0 and the
 * other coefficients sh[j] / scale, scale the largest |sh[j]| over j >= 1, *iso the constant
 * sh[0] Y00.  Returns scale: 0 where the series is constant on the sphere (no maxima, as
 * sh2peaks takes a voxel whose coefficients past the first are all zero). */
TK_HD static inline double tk_fibers_anisotropic_part(int k, const double *sh, double *aniso, double *iso)
{
    double scale = 0;
    for (int j = 1; j < k; ++j) scale = fabs(sh[j]) > scale ? fabs(sh[j]) : scale;
    /* below float's smallest normal number the coefficients are rounding residue (a masked
     * or resampled background), not a function worth a peak */
    if (scale < TK_FLT_MIN) scale = 0;
    *iso = sh[0] * TK_SH_Y00;
    aniso[0] = 0;
    for (int j = 1; j < k; ++j) aniso[j] = scale > 0 ? sh[j] / scale : 0;
    return scale;
}


/* Monomial coefficients of the SH series' polynomial: poly = P * sh, P column-major k x k
 * (P[col * k + row]: the CUDA kernel's lanes read consecutive rows of one column), with
 * rows ordered by z power c = 0..lmax, then y power b = 0..lmax-c (x power lmax-c-b), each
 * row holding the multinomial weight, so that f(x) = sum_i poly_i x^a y^b z^c. */
tk_status tk_fibers_monomial_map(const tk_fibers_tables *plan, double *P);

#ifdef __cplusplus
}
#endif
#endif
