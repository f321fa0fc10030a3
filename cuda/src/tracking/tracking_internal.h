/* Internal: what a tracking plan holds and the pieces of one streamline's growth, shared by
 * the files of the tracking core (one job each: the field, the peak, the seeds, the tracker,
 * the plan and its chunked execute). */
#ifndef TK_TRACKING_INTERNAL_H
#define TK_TRACKING_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "tk_tracking.h"
#include "tracking_rng.h"

#ifdef __cplusplus
extern "C" {
#endif

struct tk_tracking_plan {
    tk_tracking_options opts; /* checked, defaults resolved */
    tk_tracking_grid grid;
    double world2vox[12];     /* the inverse affine's top three rows */
    int k;                    /* SH coefficients per voxel */
    double *map;              /* k x k row-major: packed tensor of order lmax = map * sh */
    double cos_max_angle;
    size_t min_points, max_points; /* MRtrix3's min_num_points_preds and max_num_points_preds */
    /* iFOD1's rejection sampling (tracking_calibrate.c): directions about +z whose largest FOD
     * value, rotated to the current direction and times calib_ratio, bounds the FOD over the
     * cone; the cone's half angle and its sine */
    double *calib_dirs;
    size_t num_calib;
    double calib_ratio, max_angle_rad, sin_max_angle;
};

/* iFOD1's calibration for the plan's lmax, angle and power (MRtrix3's calibrate()). */
tk_status tk_tracking_calibrate(tk_tracking_plan *plan);

/* ---- the field (tracking_field.c) ---------------------------------------------------- */

/* What a streamline reads: the SH volume and the regions, with the plan's geometry. */
typedef struct tk_tracking_field {
    const tk_tracking_plan *plan;
    const float *sh;
    const tk_tracking_regions *regions; /* never NULL (an empty one stands in) */
} tk_tracking_field;

/* Voxel coordinates of world point p. */
void tk_tracking_to_voxel(const tk_tracking_plan *plan, const double *p, double *v);
/* World point of voxel coordinates v. */
void tk_tracking_to_world(const tk_tracking_plan *plan, const double *v, double *p);
/* The SH series at world p, interpolated trilinearly as MRtrix3's masked linear interpolator
 * does; 0 where p is outside the grid, the nearest voxel's coefficients are all zero, or the
 * result's first coefficient is NaN (MRtrix3's get_data), else 1. */
int tk_tracking_interpolate(const tk_tracking_field *f, const double *p, double *out);
/* The series sh (the plan's lmax and basis) at unit direction dir. */
double tk_tracking_sh_value(const tk_tracking_plan *plan, const double *sh, const double *dir);
/* 1 where the mask's voxel nearest world p is nonzero (0 outside the grid). */
int tk_tracking_mask_contains(const tk_tracking_plan *plan, const uint8_t *mask, const double *p);

/* ---- the peak (tracking_peak.c) ------------------------------------------------------ */

/* Scratch of one peak search. */
typedef struct tk_tracking_peak_work {
    double aniso[(TK_SH_MAX_LMAX + 1) * (TK_SH_MAX_LMAX + 2) / 2];
    double tensor[(TK_SH_MAX_LMAX + 1) * (TK_SH_MAX_LMAX + 2) / 2];
} tk_tracking_peak_work;

/* tk_tracking_plan_peak with caller scratch. */
double tk_tracking_peak(const tk_tracking_plan *plan, const double *sh, double *dir, tk_tracking_peak_work *work);

/* ---- one streamline (tracking_sdstream.c) -------------------------------------------- */

/* Why a seed gave no streamline (0: it gave one). */
enum {
    TK_TRACK_KEPT = 0,
    TK_TRACK_BAD_SEED,
    TK_TRACK_NO_PROPAGATION,
    TK_TRACK_TOO_SHORT,
    TK_TRACK_EXCLUDED,
    TK_TRACK_MISSED_INCLUDE
};

/* Why one half ended (MRtrix3's term_t, the ones without ACT). */
enum {
    TK_END_EXIT_IMAGE = 0,
    TK_END_MODEL,
    TK_END_CURVATURE,
    TK_END_MAX_LENGTH,
    TK_END_EXIT_MASK,
    TK_END_EXCLUDE,
    TK_END_CALIBRATOR,
    TK_END_COUNT
};

/* A thread's scratch for its streamlines: the points (xyz doubles, grown as needed), the
 * include regions visited, the peak search's buffers. */
typedef struct tk_tracking_work {
    double *pts;
    size_t cap; /* points pts holds */
    uint8_t *visited; /* num_include */
    double *values;   /* k */
    tk_tracking_peak_work peak;
    uint64_t ends[TK_END_COUNT];
} tk_tracking_work;

tk_status tk_tracking_work_init(tk_tracking_work *w, const tk_tracking_plan *plan, size_t num_include);
void tk_tracking_work_free(tk_tracking_work *w);

/* Grows the streamline of one seed at world `seed` with random stream rng into w->pts
 * (*num_points points); returns TK_TRACK_KEPT or why it was dropped, or -1 out of memory
 * (tracking_streamline.c). */
int tk_tracking_streamline(const tk_tracking_field *f, const double *seed, tk_philox *rng, tk_tracking_work *w,
                           size_t *num_points);

/* The methods (MRtrix3's MethodBase): init() with the series at the seed in w->values and
 * dir the given first direction where `given`, else to be chosen (1: the seed is good, dir
 * its first direction); next() one step from pos along dir (-1: it goes on, pos and dir
 * moved; else why it ended). */
int tk_tracking_sd_stream_init(const tk_tracking_field *f, tk_tracking_work *w, double *dir, int given, tk_philox *rng);
int tk_tracking_sd_stream_next(const tk_tracking_field *f, tk_tracking_work *w, double *pos, double *dir);
int tk_tracking_ifod1_init(const tk_tracking_field *f, tk_tracking_work *w, double *dir, int given, tk_philox *rng);
int tk_tracking_ifod1_next(const tk_tracking_field *f, tk_tracking_work *w, double *pos, double *dir, tk_philox *rng);

/* ---- seeds (tracking_seeds.c) -------------------------------------------------------- */

/* The seeds of a run: a point list, or a mask's voxels listed once (i fastest). */
typedef struct tk_tracking_seed_set {
    const tk_tracking_seeds *seeds;
    size_t *voxels;  /* mask seeding: the linear index of each mask voxel */
    size_t num_voxels;
    uint64_t total;
} tk_tracking_seed_set;

tk_status tk_tracking_seed_set_init(tk_tracking_seed_set *set, const tk_tracking_plan *plan,
                                    const tk_tracking_seeds *seeds);
void tk_tracking_seed_set_free(tk_tracking_seed_set *set);
/* Seed `index`'s world position, drawing its position within the voxel from rng (mask
 * seeding: MRtrix3's Random_per_voxel, uniform over the voxel's cube in voxel coordinates). */
void tk_tracking_seed_position(const tk_tracking_seed_set *set, const tk_tracking_plan *plan, uint64_t index,
                               tk_philox *rng, double *p);

#ifdef __cplusplus
}
#endif
#endif
