/* Internal: the per-(lmax, basis) plan of the peak finder, shared by its backends. */
#ifndef TK_FIBERS_INTERNAL_H
#define TK_FIBERS_INTERNAL_H

#include <math.h>

#include "tk_fibers.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A shoulder candidate within this many grid spacings of a grid maximum is taken to lie on
 * that maximum's hill and is not polished (both backends). */
#ifndef TK_SHOULDER_GAP
#define TK_SHOULDER_GAP 1.5
#endif

/* A grid direction below one neighbour only, by less than this share of its steepest fall to
 * another, is a shoulder candidate too (both backends). */
#ifndef TK_RIDGE_RISE
#define TK_RIDGE_RISE 0.25f
#endif

/* Directions on the hemisphere grid: its density grows with lmax like the number of lobes the
 * function can hold, about 1,500 (3.7 degree spacing) at lmax 8.  A macro so that the CUDA
 * grid kernel sizes its per-lane kind bits from it at compile time. */
#define TK_FIBERS_GRID_SIZE(lmax) (24 * (lmax) * (lmax) > 200 ? 24 * (lmax) * (lmax) : 200)

typedef struct tk_fibers_plan {
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
    int nbr_width;        /* the most neighbours any direction has */
    int *nbr_fixed;       /* nbr_width x grid_padded, neighbour-major, short lists padded with the
                           * direction itself: the neighbour test then vectorizes (gathers) */
} tk_fibers_plan;

tk_status tk_fibers_plan_create(int lmax, tk_sh_basis basis, int legacy, tk_fibers_plan *plan);
void tk_fibers_plan_free(tk_fibers_plan *plan);

/* A shared, immutable plan per (lmax, basis, legacy), built on first use and kept for the
 * process: filters call the finder once per thread and region, and the grid's neighbour
 * search is the costly part of a plan.  Thread safe. */
tk_status tk_fibers_plan_get(int lmax, tk_sh_basis basis, int legacy, const tk_fibers_plan **plan);

/* Work buffers one voxel needs: tk_fibers_plan_work(plan) doubles. */
size_t tk_fibers_plan_work(const tk_fibers_plan *plan);

/* float's smallest normal number (FLT_MIN, spelled out for nvcc's host and device passes) */
#define TK_FLT_MIN 1.17549435082228750797e-38

/* The value of the l = 0 basis function, 1 / (2 sqrt(pi)), in every basis and variant. */
#define TK_SH_Y00 0.28209479177387814347

/* The series split as sh = iso_term + scale * aniso on the sphere: aniso[0] = 0 and the
 * other coefficients sh[j] / scale, scale the largest |sh[j]| over j >= 1, *iso the constant
 * sh[0] Y00.  Returns scale: 0 where the series is constant on the sphere (no maxima, as
 * sh2peaks takes a voxel whose coefficients past the first are all zero). */
static inline double tk_fibers_anisotropic_part(int k, const double *sh, double *aniso, double *iso)
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

/* All local maxima of one SH series (double), sorted by amplitude descending; returns the
 * count found (possibly above max_peaks; only max_peaks written).  polished, iterations
 * (may be NULL): incremented by the candidates polished and their Newton iterations. */
int tk_fibers_voxel_maxima(const tk_fibers_plan *plan, const double *sh, double *work, int max_peaks,
                           double *directions, double *amplitudes, unsigned long long *polished,
                           unsigned long long *iterations);

/* The CUDA backend of tk_fibers_find_timed (options already checked). */
tk_status tk_fibers_find_cuda(const tk_fibers_options *opts, const tk_fibers_plan *plan, size_t num_voxels,
                              const float *sh, const uint8_t *mask, float *directions, float *amplitudes,
                              size_t *bad_voxels, tk_fibers_timing *timing);

/* Monomial coefficients of the SH series' polynomial: poly = P * sh, P column-major k x k
 * (P[col * k + row]: the CUDA kernel's lanes read consecutive rows of one column), with
 * rows ordered by z power c = 0..lmax, then y power b = 0..lmax-c (x power lmax-c-b), each
 * row holding the multinomial weight, so that f(x) = sum_i poly_i x^a y^b z^c. */
tk_status tk_fibers_monomial_map(const tk_fibers_plan *plan, double *P);

#ifdef __cplusplus
}
#endif
#endif
