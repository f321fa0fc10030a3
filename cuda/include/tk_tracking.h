/** TensorKernels: streamline tractography on fiber ODFs given as spherical-harmonic (SH)
 * volumes (one public header).
 *
 * The algorithms are MRtrix3's SD_STREAM and iFOD1 (tckgen -algorithm), defined as MRtrix3
 * defines them (Documentation/tracking.md names the MRtrix3 file of each rule).  SD_STREAM: from a seed,
 * the FOD's SH coefficients are interpolated trilinearly at the current position, the peak
 * nearest the current direction is found by Newton's method on the sphere started from that
 * direction (the fiber core's climb, tk_fibers.h), and the streamline steps step_mm along it;
 * it stops where the peak's amplitude is below the cutoff, where the peak turns more than
 * max_angle_deg from the last direction, where it leaves the volume, the stopping mask or
 * the FOD's support, or where it is as long as max_length_mm allows.  iFOD1 draws each
 * step's direction from the interpolated FOD within the cone of max_angle_deg about the last
 * one (rejection sampling), and stops where no draw above the cutoff is accepted.  Each
 * seed is tracked in both directions and the two halves joined through the seed.
 *
 * Frames: voxel (i, j, k) of a volume lies at world = vox2world (i, j, k, 1)', world being
 * scanner RAS millimetres, the frame in which MRtrix3's SH coefficients are defined (as
 * tk-fibers reads them).  Volumes are stored with i fastest, then j, then k; an SH volume
 * holds each voxel's tk_sh_num_coeffs(lmax) floats together (voxel-major, as tk_fibers_find
 * takes them); masks hold one byte per voxel on the same grid (nonzero: inside).  Positions
 * are stepped in world mm and taken to voxel coordinates by the inverse affine; streamline
 * points come back in world mm.
 *
 * Random numbers (the seeds' positions within their voxels, the first direction where none
 * is given, iFOD1's samples): Philox4x32-10 (Salmon et al., SC'11), a counter-based generator whose key is
 * the caller's rng_seed and whose counter starts at (seed index, 0).  Each seed's stream is a
 * pure function of (rng_seed, seed index), so the output is the same whatever the backend,
 * the thread count and the chunk size; Philox is also what cuRAND offers on the GPU, so a
 * CUDA tracker can draw the same numbers.
 *
 * Output streams through a caller's sink in chunks (seed order, whatever the thread
 * count), so a run of millions of streamlines never holds more than one chunk in memory.
 * \file
 * \ingroup tk_group_tracking */
#ifndef TK_TRACKING_H
#define TK_TRACKING_H

#include "tk_export.h"

#include <stddef.h>
#include <stdint.h>

#include "tk_fibers.h"
#include "tk_status.h"
#include "tk_types.h"

TK_API_BEGIN

/** The tracking algorithms. */
typedef enum {
    TK_TRACK_SD_STREAM = 0, /**< deterministic: MRtrix3's SD_STREAM (nearest FOD peak, first order) */
    TK_TRACK_IFOD1 = 1      /**< probabilistic: MRtrix3's iFOD1 (direction drawn from the FOD within the
                             *   angle cone by rejection sampling, first order) */
} tk_tracking_algorithm;

/** The grid all volumes of one run share. */
typedef struct tk_tracking_grid {
    size_t dims[3];        /**< voxels along i, j, k */
    double vox2world[16];  /**< row-major 4 x 4: world (RAS mm) = vox2world (i, j, k, 1)'; last row 0 0 0 1 */
} tk_tracking_grid;

/** Options.  A length or angle of 0 (tk_tracking_options_init's) means MRtrix3's default for
 * the algorithm and the grid's voxel size vox (the geometric mean of the three voxel sizes,
 * MRtrix3's SharedBase::vox); tk_tracking_plan_options reports the values a plan resolved. */
typedef struct tk_tracking_options {
    tk_tracking_algorithm algorithm;
    int lmax;                  /**< even, 2..TK_SH_MAX_LMAX */
    tk_sh_basis basis;         /**< the SH volume's basis (MRtrix3's: TK_SH_TOURNIER) */
    int legacy;
    double step_mm;            /**< step length (0: 0.1 vox, SD_STREAM's and iFOD1's) */
    double max_angle_deg;      /**< largest turn per step, in (0, 90] (0: 60 for SD_STREAM, 15 for iFOD1) */
    double cutoff;             /**< FOD amplitude below which tracking stops (default 0.1, tckgen -cutoff);
                                *   also the seed's threshold (MRtrix3's init_threshold = cutoff) */
    double min_length_mm;      /**< shorter streamlines are dropped (0: 5 vox; negative: none) */
    double max_length_mm;      /**< longer ones are cut (0: 100 vox) */
    int unidirectional;        /**< 1: track from the seed along its first direction only (tckgen -seed_unidirectional) */
    double seed_direction[3];  /**< the first direction at every seed (tckgen -seed_direction); all 0: random */
    uint64_t rng_seed;         /**< the random streams' key (default 0) */
    int max_trials;            /**< iFOD1: directions drawn per step before the streamline ends (0: 1000,
                                *   tckgen -trials; at most 1,048,576) */
    double fod_power;          /**< iFOD1: the FOD is sampled raised to this power (0: 1, tckgen -power) */
    int allow_nonfinite;       /**< 0 (default): an SH volume with a NaN or infinite coefficient is refused
                                *   (TK_ERR_DATA); 1: as MRtrix3, a NaN there ends a streamline as the
                                *   volume's edge would */
    size_t chunk_seeds;        /**< seeds tracked per chunk handed to the sink (default 4096).  cuda: a GPU
                                *   tracks at least this many seeds a launch, more (up to 65,536 and 1.5 GiB
                                *   of buffers) to keep it busy, fewer where its memory cannot hold their
                                *   point buffers; the sink still gets chunks of chunk_seeds seeds */
    tk_backend backend;        /**< cpu, omp or cuda (the same streamlines: Documentation/tracking.md, "The CUDA
                                *   tracker"; cuda in a build without CUDA: TK_ERR_UNSUPPORTED) */
    int num_threads;           /**< omp: 0 = OpenMP's default */
    int cuda_device;           /**< cuda: the device number (default 0) */
    int cuda_device_count;     /**< cuda: track on devices cuda_device .. cuda_device + count - 1, each GPU
                                *   taking a launch's seeds of every count x launch seeds (a contiguous share;
                                *   0 or 1: one GPU, the default); the sink sees one GPU's streamlines in one
                                *   GPU's order, in chunks of at most chunk_seeds.  cpu/omp ignore it */
    int reversed_axes;         /**< 1: the grid is a C-order (x, y, z) array seen as (z, y, x), as the Python
                                *   package hands it: mask seeds are numbered x fastest and their points drawn
                                *   x first along the caller's axes, as tk-track's for a volume stored x
                                *   fastest, so one mask and rng_seed seed the same points in both (default
                                *   0: the grid's own axes, i fastest) */
} tk_tracking_options;

/** SD_STREAM's defaults for lmax: tournier basis, every length and the angle from the grid
 * (0), cutoff 0.1, both directions, random first directions, rng_seed 0, the cpu backend.
 * Set algorithm to TK_TRACK_IFOD1 for iFOD1: the zeros then resolve to its defaults. */
void tk_tracking_options_init(tk_tracking_options *opts, int lmax);

/** Where tracking may go and which streamlines are kept; every pointer may be NULL (none).
 * Regions are masks on the grid, looked up at the voxel nearest a point (MRtrix3's ROI
 * masks); a point outside the grid is outside every region. */
typedef struct tk_tracking_regions {
    const uint8_t *stop_mask;        /**< tckgen -mask: a streamline ends where it leaves it, a seed outside is rejected */
    const uint8_t *exclude;          /**< tckgen -exclude: a streamline that enters it is dropped (a seed there too) */
    const uint8_t *const *include;   /**< tckgen -include: a streamline is kept only if it visits every one */
    size_t num_include;
    size_t mask_voxels;              /**< the voxels each mask above holds: the grid's (checked; any value
                                      *   where there is no mask) */
} tk_tracking_regions;

/** The seeds: either per_voxel random points in each voxel of mask (tckgen
 * -seed_random_per_voxel; seed index = the voxel's rank among the mask's voxels, i fastest
 * (k fastest with the options' reversed_axes), times per_voxel, plus the point's number), or num_points points in world mm (xyz each;
 * seed index = the point's number). */
typedef struct tk_tracking_seeds {
    const uint8_t *mask;   /**< NULL for a point list */
    size_t mask_voxels;    /**< the voxels mask holds: the grid's (checked) */
    size_t per_voxel;
    const double *points;  /**< NULL for a mask */
    size_t num_points;
} tk_tracking_seeds;

/** One chunk of accepted streamlines, in seed order; the arrays live until the sink returns. */
typedef struct tk_tracking_chunk {
    size_t num_streamlines;
    const size_t *num_points;    /**< per streamline */
    const uint64_t *seed_index;  /**< per streamline: the seed it grew from */
    const float *points;         /**< the streamlines' points one after another, xyz world mm each
                                  *   (NULL where the chunk kept none) */
    size_t total_points;         /**< the sum of num_points */
    uint64_t seeds_done;         /**< seeds tracked so far, this chunk's included */
    uint64_t seeds_total;        /**< seeds of the run */
} tk_tracking_chunk;

/** Receives each chunk; a status other than TK_OK stops the run, which returns it (set
 * tk_set_error's message before returning it). */
typedef tk_status (*tk_tracking_sink)(const tk_tracking_chunk *chunk, void *user);

/** Why seeds gave no streamline and why streamlines ended (MRtrix3's rejection and
 * termination counts; each half of a bidirectional streamline ends once). */
typedef struct tk_tracking_stats {
    uint64_t seeds;                 /**< tracked */
    uint64_t accepted;              /**< streamlines handed to the sink */
    uint64_t rejected_seed;         /**< outside the stopping mask or the FOD, in an exclusion region, or no
                                     *   peak above the cutoff there */
    uint64_t rejected_no_propagation; /**< no step from the seed in either direction */
    uint64_t rejected_too_short;
    uint64_t rejected_exclude;      /**< entered an exclusion region */
    uint64_t rejected_missed_include;
    uint64_t ended_exit_image;      /**< left the grid or the FOD's support (an all-zero voxel) */
    uint64_t ended_model;           /**< SD_STREAM: no peak above the cutoff; iFOD1: no draw accepted */
    uint64_t ended_curvature;       /**< the peak turned more than max_angle_deg */
    uint64_t ended_max_length;
    uint64_t ended_exit_mask;       /**< left the stopping mask */
    uint64_t ended_calibrator;      /**< iFOD1: the FOD is nowhere positive in the cone */
} tk_tracking_stats;

/** A caller-owned plan: the checked options with their defaults resolved for the grid, the
 * grid's inverse affine, the SH-to-tensor map of the peak search (and on the cuda backend
 * their device copies and the chunk buffers).  Threads may execute one plan at once (a cuda
 * plan's executes take turns on its one set of device buffers). */
typedef struct tk_tracking_plan tk_tracking_plan;

/** Checks the options against the grid and builds the plan; *plan is NULL on error.  The
 * cuda backend checks its device here (TK_ERR_ARGUMENT for a device number that does not
 * exist, TK_ERR_CUDA "no usable CUDA GPU" without one, TK_ERR_UNSUPPORTED "no CUDA backend" in
 * a build without CUDA) and keeps the plan's tables and chunk buffers on it until destroy;
 * TK_BACKEND_AUTO is refused (TK_ERR_ARGUMENT): resolve it first. */
tk_status tk_tracking_plan_create(const tk_tracking_options *opts, const tk_tracking_grid *grid,
                                  tk_tracking_plan **plan);

/** The plan's options with every default resolved (step, angle, lengths in mm). */
void tk_tracking_plan_options(const tk_tracking_plan *plan, tk_tracking_options *out);

/** The streamline point limit the plan's lengths give (MRtrix3's max_num_points: 3 +
 * ceil(max_length / step) points for both halves together) and the least points a kept
 * streamline has (1 + ceil(min_length / step)). */
void tk_tracking_plan_point_limits(const tk_tracking_plan *plan, size_t *min_points, size_t *max_points);

/** Tracks every seed: sh on the plan's grid (voxel-major, lmax's coefficients per voxel;
 * sh_values floats, checked against the grid and lmax), regions and their masks on the same
 * grid (regions may be NULL), and hands the accepted streamlines to sink chunk by chunk in
 * seed order.  stats (may be NULL) counts what happened; timing (may be NULL): total_ms the
 * call, kernel_ms the tracking.  The cpu and omp backends may read a copy of sh on huge pages
 * for the call's duration, holding as much memory again (Linux; a volume of at least 32 MiB
 * and a seed per 4 KiB of it; TK_TRACK_VOLUME_COPY=0 never, 1 always: Documentation/tracking.md,
 * "Speed on the CPU"); the streamlines are the same either way. */
tk_status tk_tracking_plan_execute(const tk_tracking_plan *plan, const float *sh, size_t sh_values,
                                   const tk_tracking_regions *regions,
                                   const tk_tracking_seeds *seeds, tk_tracking_sink sink, void *user,
                                   tk_tracking_stats *stats, tk_timing *timing);

/** Frees the plan (NULL: nothing). */
void tk_tracking_plan_destroy(tk_tracking_plan *plan);

/** The peak of one SH series (the plan's lmax and basis) nearest unit dir, as each step finds
 * it: dir becomes the peak's direction (on the same side as dir) and the return value is its
 * amplitude, or 0 where the climb ends at no strict maximum (then dir is undefined). */
double tk_tracking_plan_peak(const tk_tracking_plan *plan, const double *sh, double *dir);

/* ---- collecting a whole (small) run ---------------------------------------------- */

/** Every accepted streamline of a run, for small runs and tests. */
typedef struct tk_tracking_result {
    size_t num_streamlines;
    size_t *num_points;    /**< per streamline */
    size_t *offset;        /**< per streamline: its first point's index in points (3 floats a point) */
    uint64_t *seed_index;
    float *points;
    size_t total_points;
} tk_tracking_result;

/** tk_tracking_plan_execute into *result (zeroed first; free it with tk_tracking_result_free
 * whatever the status). */
tk_status tk_tracking_collect(const tk_tracking_plan *plan, const float *sh, size_t sh_values,
                              const tk_tracking_regions *regions,
                              const tk_tracking_seeds *seeds, tk_tracking_result *result, tk_tracking_stats *stats);

/** Frees what tk_tracking_collect allocated and zeroes *result (NULL: nothing). */
void tk_tracking_result_free(tk_tracking_result *result);

TK_API_END
#endif
