/** TensorKernels: fixels, the lobes of a fiber ODF (one public header).
 *
 * Each voxel's SH series (tk_fibers.h's conventions) is sampled on a discrete sphere and
 * split into lobes by FMLS, exactly as MRtrix3 3.0.3's fod2fixel defines it (Smith et al.
 * 2013, appendix 2; src/dwi/fmls.cpp): the 1,281 directions of the 4th-order icosahedral
 * tessellation (one of each antipodal pair), adjacent where the convex hull of the set and its
 * antipodes joins them; the samples taken by descending |amplitude|, each starting a lobe, or
 * joining the one adjacent lobe of its sign, or (adjacent to several) merging them where its
 * amplitude over the last of their peaks exceeds lobe_merge_ratio, else joining the first of
 * them once all samples are placed.  A lobe's integral (AFD) is the sum over its samples of
 * amplitude times the set's integration weight; its mean direction the weighted mean of its
 * directions (each flipped to the running mean's side); its peak the Newton climb of the
 * fiber core (fibers_newton.h) from its largest sample, kept where it stays in the lobe.
 * Negative lobes, lobes with integral below integral_threshold and lobes whose peak is below
 * peak_value_threshold are dropped; the rest come in the order of their largest samples.
 * \file
 * \ingroup tk_group_fixels */
#ifndef TK_FIXELS_H
#define TK_FIXELS_H

#include "tk_export.h"

#include <stddef.h>
#include <stdint.h>

#include "tk_fibers.h"
#include "tk_status.h"
#include "tk_types.h"

TK_API_BEGIN

/** The most fixels a voxel's output slots hold (max_fixels 0 means this many). */
#define TK_FIXELS_MAX 64
/** The default direction set's size (fod2fixel's: the 4th-order icosahedral tessellation). */
#define TK_FIXELS_DIRECTIONS 1281
/** The denser set's size (the 5th order: each triangle split once more, ~2 degrees apart). */
#define TK_FIXELS_DIRECTIONS_DENSE 5121
/** tk_fixels_output.lobe_of_dir's value for a direction in no kept fixel. */
#define TK_FIXELS_NO_LOBE 255

typedef struct tk_fixels_options {
    int lmax;                    /**< even, 2..TK_SH_MAX_LMAX */
    tk_sh_basis basis;
    int legacy;
    double integral_threshold;   /**< -fmls_integral (default 0) */
    double peak_value_threshold; /**< -fmls_peak_value (default 0.1); -fmls_no_thresholds: both 0 */
    double lobe_merge_ratio;     /**< -fmls_lobe_merge_ratio, 0..1 (default 1: never merge) */
    int max_fixels;              /**< -maxnum: the first this many lobes (0: up to TK_FIXELS_MAX) */
    int directions;              /**< the direction set: TK_FIXELS_DIRECTIONS (0 means it) or
                                  *   TK_FIXELS_DIRECTIONS_DENSE */
    tk_backend backend;          /**< cpu, omp or cuda */
    int num_threads;             /**< omp: 0 = OpenMP's default */
    int cuda_device;             /**< cuda: the device to run on (default 0) */
    int cuda_device_count;       /**< cuda: spread each execute over devices cuda_device ..
                                  *   cuda_device + count - 1, a contiguous share of the voxels
                                  *   each, results bit for bit those of one device; 0 or 1
                                  *   (default): one device.  More than exist: TK_ERR_ARGUMENT.
                                  *   Ignored on cpu and omp (Documentation/multi_gpu.md) */
} tk_fixels_options;

/** fod2fixel's defaults for lmax: thresholds 0 and 0.1, merge ratio 1, no -maxnum, its 1281
 * directions, cpu, tournier. */
void tk_fixels_options_init(tk_fixels_options *opts, int lmax);

/** Per voxel, S = the plan's slots (tk_fixels_plan_slots) entries each; every pointer but
 * count may be NULL.  Slots past a voxel's count are NaN (lobe_of_dir: TK_FIXELS_NO_LOBE). */
typedef struct tk_fixels_output {
    uint8_t *count;     /**< num_voxels: fixels in the voxel (0 where masked, bad or empty) */
    float *afd;         /**< num_voxels x S: the lobe's integral */
    float *peak_amp;    /**< num_voxels x S: the amplitude at its peak */
    float *mean_dir;    /**< num_voxels x S x 3: the unit weighted mean direction */
    float *peak_dir;    /**< num_voxels x S x 3: the unit peak direction */
    uint8_t *lobe_of_dir; /**< num_voxels x D (the plan's directions, tk_fixels_plan_directions):
                           *   each sphere direction's fixel (0..count-1) or TK_FIXELS_NO_LOBE */
    size_t bad_voxels;  /**< set by execute: voxels with non-finite coefficients (no fixels) */
    size_t truncated;   /**< set by execute: voxels with more lobes than the slots (first S kept) */
} tk_fixels_output;

/** A caller-owned plan: the checked options, the direction set, its adjacency and weights,
 * the SH values at the directions and the SH-to-tensor map; on cuda their device copies, the
 * chunk buffers and each thread's scratch.  A cpu or omp plan's execute only reads it: threads
 * may execute one plan at once; a cuda plan is one thread's at a time.  The cuda backend runs
 * the same segmentation (a warp a voxel, and the host's text one thread a voxel for voxels with
 * more than 24 lobes, holding as many lobes as the host: a constant FOD grows hundreds). */
typedef struct tk_fixels_plan tk_fixels_plan;

tk_status tk_fixels_plan_create(const tk_fixels_options *opts, tk_fixels_plan **plan);
/** Slots per voxel: max_fixels, or TK_FIXELS_MAX where it is 0. */
int tk_fixels_plan_slots(const tk_fixels_plan *plan);
/** The plan's direction set's size (TK_FIXELS_DIRECTIONS or TK_FIXELS_DIRECTIONS_DENSE). */
int tk_fixels_plan_directions(const tk_fixels_plan *plan);
/** Segments num_voxels SH series (voxel-major, tk_sh_num_coeffs(lmax) floats each); mask:
 * NULL or one byte per voxel (0: no fixels).  timing may be NULL. */
tk_status tk_fixels_plan_execute(const tk_fixels_plan *plan, size_t num_voxels, const float *sh, const uint8_t *mask,
                                 tk_fixels_output *out, tk_timing *timing);
void tk_fixels_plan_destroy(tk_fixels_plan *plan);

/** The default direction set (TK_FIXELS_DIRECTIONS x 3 unit vectors) and its integration
 * weights, as the plan uses them: for oracles and for the lobe masks' meaning. */
const double *tk_fixels_directions(void);
const double *tk_fixels_weights(void);
/** The set of num_directions (TK_FIXELS_DIRECTIONS, 0 meaning it, or TK_FIXELS_DIRECTIONS_DENSE):
 * its unit vectors (num_directions x 3) and integration weights (sum 4 pi); either pointer may
 * be NULL.  TK_ERR_ARGUMENT for another count. */
tk_status tk_fixels_direction_set(int num_directions, const double **directions, const double **weights);

TK_API_END
#endif
