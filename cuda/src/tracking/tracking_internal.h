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

/* The largest order whose tensor the peak search climbs in its monomial form
 * (tracking_tensor.h), and that form's rows: the monomials of degree
 * TK_TRACK_ROWS_MAX_ORDER - 2 in three variables. */
#define TK_TRACK_ROWS_MAX_ORDER 8
#define TK_TRACK_ROWS_MAX ((TK_TRACK_ROWS_MAX_ORDER - 1) * TK_TRACK_ROWS_MAX_ORDER / 2)

/* The largest lmax whose series iFOD1 evaluates as a polynomial (tracking_poly.h), and its
 * coefficients' count: the monomials of degree TK_TRACK_POLY_MAX_ORDER in three variables. */
#define TK_TRACK_POLY_MAX_ORDER 8
#define TK_TRACK_POLY_MAX ((TK_TRACK_POLY_MAX_ORDER + 1) * (TK_TRACK_POLY_MAX_ORDER + 2) / 2)

/* The host's four-lane code (GCC's vector extension: iFOD1's values and trials four at a
 * time, the SH-to-tensor product's and the rows' sums as vectors) is compiled where the
 * target has AVX2, i.e. in tracking_streamline_avx2.c; elsewhere (the baseline build, other
 * CPUs, the CUDA compiler's passes) the scalar code, which those vectors would only slow down
 * (lowered to SSE2 pieces they made the step 2-3x slower than the scalar code). */
#if !defined(__CUDACC__) && defined(__AVX2__)
#define TK_TRACK_HOST_V4 1
#endif

/* The SH-to-tensor product's sparse form at lmax 8, for the host's four-lane code
 * (tracking_tensor.h tk_tracking_map_times_classes).  The map's nonzero entries (exact zeros
 * elsewhere: tk_sh_to_tensor_map) fall in four classes by the parities of the monomials'
 * exponents, each basis function in one: each class's rows get slots of their own, in runs of
 * four (a vector), and each column its class's slots' entries, so a column costs its class's
 * 3-4 vectors where the dense product costs 12. */
#define TK_TRACK_MAP_CLASSES 4
#define TK_TRACK_MAP_CLASS_VECTORS 4 /* the most vectors of a class: 15 rows at lmax 8 */
typedef struct tk_tracking_map_classes {
    int ncols[TK_TRACK_MAP_CLASSES], cols[TK_TRACK_MAP_CLASSES][45]; /* each class's columns, ascending */
    int nvec[TK_TRACK_MAP_CLASSES];                                   /* each class's vectors (3 or 4) */
    int slot_row[TK_TRACK_MAP_CLASSES][4 * TK_TRACK_MAP_CLASS_VECTORS]; /* each slot's row, -1: padding */
    double col[45][4 * TK_TRACK_MAP_CLASS_VECTORS]; /* column c's entries in its class's slots, 0 padded */
} tk_tracking_map_classes;

struct tk_tracking_plan {
    tk_tracking_options opts; /* checked, defaults resolved */
    tk_tracking_grid grid;
    double world2vox[12];     /* the inverse affine's top three rows */
    int k;                    /* SH coefficients per voxel */
    double *map;              /* k x k column-major (map[c * k + r]): packed tensor of order lmax = map * sh */
    double cos_max_angle;
    /* the peak search's monomial form of the map's tensor where lmax <= TK_TRACK_ROWS_MAX_ORDER
     * (tracking_tensor.h): row entry = tensor[rows_src] * rows_weight, rows_src -1 for 0 */
    int rows_src[TK_TRACK_ROWS_MAX][6];
    double rows_weight[TK_TRACK_ROWS_MAX][6];
    /* SD_STREAM's GPU lanes a seed (8, 16 or 32; tracking_tensor.h TK_TRACK_SD_LANES_DEFAULT):
     * the order of the rows' sums on the CPU and the GPU alike, and the GPU's kernel */
    int sd_lanes;
    /* iFOD1's series as a polynomial where lmax <= TK_TRACK_POLY_MAX_ORDER (tracking_poly.h):
     * packed entry k's monomial exponents and multiplicity */
    unsigned char poly_exp[TK_TRACK_POLY_MAX][3];
    double poly_mult[TK_TRACK_POLY_MAX];
    size_t min_points, max_points; /* MRtrix3's min_num_points_preds and max_num_points_preds */
    /* iFOD1's rejection sampling (tracking_calibrate.c): directions about +z whose largest FOD
     * value, rotated to the current direction and times calib_ratio, bounds the FOD over the
     * cone; the cone's half angle, and the radius (2 sin(half angle / 2)) of the disc that
     * tk_tracking_random_cone draws its directions from, and that radius squared */
    double *calib_dirs;
    size_t num_calib;
    double calib_ratio, max_angle_rad, cone_radius, cone_radius2;
    /* the cuda backend's device state (tracking_cuda.cu; NULL on the CPU backends) */
    struct tk_tracking_cuda_state *cuda;
    /* the product's sparse form (lmax 8 where the map has the classes' pattern; else NULL),
     * host memory read by the host's four-lane code only */
    tk_tracking_map_classes *map_classes;
};

/* The map's classes (tracking_plan.c), or NULL where lmax is not 8 or a column's nonzeros
 * span two classes (then the dense product runs); the plan's map column-major and poly_exp
 * set. */
tk_tracking_map_classes *tk_tracking_map_classes_make(const tk_tracking_plan *plan);

/* iFOD1's calibration for the plan's lmax, angle and power (MRtrix3's calibrate()). */
tk_status tk_tracking_calibrate(tk_tracking_plan *plan);

/* ---- the field (tracking_field.h) ---------------------------------------------------- */

/* What a streamline reads: the SH volume and the regions, with the plan's geometry. */
typedef struct tk_tracking_field {
    const tk_tracking_plan *plan;
    const float *sh;
    const tk_tracking_regions *regions; /* never NULL (an empty one stands in) */
} tk_tracking_field;

/* The field's functions (coordinates, interpolation, masks) are tracking_field.h's, compiled
 * for the host and the device. */

/* ---- the peak (tracking_peak.h) ------------------------------------------------------- */

/* Scratch of one peak search. */
typedef struct tk_tracking_peak_work {
    double aniso[(TK_SH_MAX_LMAX + 1) * (TK_SH_MAX_LMAX + 2) / 2];
    double tensor[(TK_SH_MAX_LMAX + 1) * (TK_SH_MAX_LMAX + 2) / 2];
    double rows[TK_TRACK_ROWS_MAX][6]; /* the tensor's monomial form (tracking_tensor.h), lmax <= 8 */
} tk_tracking_peak_work;

/* tk_tracking_peak (the search with caller scratch) is tracking_peak.h's. */

/* ---- one streamline (tracking_streamline.h) ---------------------------------------- */

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
    uint32_t step; /* the streamline's iFOD1 steps so far: its trials' streams (tk_philox_trial) */
} tk_tracking_work;

tk_status tk_tracking_work_init(tk_tracking_work *w, const tk_tracking_plan *plan, size_t num_include);
void tk_tracking_work_free(tk_tracking_work *w);

/* One streamline (tk_tracking_streamline, tracking_streamline.h) and its methods, MRtrix3's
 * MethodBase: init() with the series at the seed in w->values and dir the given first
 * direction where `given`, else to be chosen (1: the seed is good, dir its first direction);
 * next() one step from pos along dir (-1: it goes on, pos and dir moved; else why it ended):
 * SD_STREAM's in tracking_sdstream.h, iFOD1's in tracking_ifod1.h.  All compiled for the host
 * and the device. */

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
/* A seed's sort key in tk_tracking_seed_order (the caller's scratch: one a seed of a chunk). */
typedef struct {
    uint64_t key;
    size_t at;
} tk_tracking_seed_key;
/* The seeds first .. first + count - 1 in the order a CPU run tracks them: order[j] = i for
 * seed first + i, by the Morton code of the seed's voxel (ties by i), so that streamlines
 * tracked one after another start near one another and find the volume's corners in the
 * caches; each seed's streamline is a function of its index alone, and the sink still gets
 * them in seed order, so the output is the same.  keys: count entries of scratch, made once
 * a run by the caller. */
void tk_tracking_seed_order(const tk_tracking_seed_set *set, const tk_tracking_plan *plan, uint64_t first, size_t count,
                            tk_tracking_seed_key *keys, size_t *order);
/* Seed `index`'s world position, drawing its position within the voxel from rng (mask
 * seeding: MRtrix3's Random_per_voxel, uniform over the voxel's cube in voxel coordinates). */
void tk_tracking_seed_position(const tk_tracking_seed_set *set, const tk_tracking_plan *plan, uint64_t index,
                               tk_philox *rng, double *p);

/* ---- the SH volume's check and the CPU's copy (tracking_volume.c) ------------------- */

/* TK_ERR_DATA naming sh[i], the volume's first non-finite value: its voxel and coefficient.
 * The cpu and omp backends find i on the host before tracking, the cuda backend on the GPU
 * after the upload. */
tk_status tk_tracking_nonfinite_error(const tk_tracking_plan *plan, const float *sh, size_t i);

/* The volume a CPU run reads: sh, the caller's or a copy of it on huge pages (map). */
typedef struct {
    const float *sh;
    void *map;
    size_t map_bytes;
} tk_tracking_volume;

/* Before a cpu or omp run of `seeds` seeds on `threads` threads: the caller's volume checked
 * for non-finite values (unless the plan allows them: TK_ERR_DATA naming the first) and, where
 * it pays, copied onto huge pages as it is read (TK_TRACK_VOLUME_COPY: 0 never, 1 always;
 * tracking_volume.c says when and why).  vol->sh is what the run reads; release vol after it
 * (on error it is released already). */
tk_status tk_tracking_volume_prepare(const tk_tracking_plan *plan, const float *sh, size_t sh_values, uint64_t seeds,
                                     int threads, tk_tracking_volume *vol);
void tk_tracking_volume_release(tk_tracking_volume *vol);

/* ---- the cuda backend (tracking_cuda.cu; tracking_nocuda.c without a CUDA compiler) -- */

typedef struct tk_tracking_cuda_state tk_tracking_cuda_state;

/* At plan create for the cuda backend: the device check (opts.cuda_device), the plan's
 * tables and a copy of the plan on the device; the chunk buffers come with the first execute. */
tk_status tk_tracking_cuda_create(const tk_tracking_plan *plan, tk_tracking_cuda_state **state);
/* The seeds of `set` on the GPU, chunk by chunk, into sink in seed order; stats as the CPU's
 * (zeroed by the caller); *kernel_ms the tracking kernels' time.  Executes of one plan from
 * several threads take turns (the plan's device buffers are one set). */
tk_status tk_tracking_cuda_execute(const tk_tracking_plan *plan, const tk_tracking_field *field,
                                   const tk_tracking_seed_set *set, tk_tracking_sink sink, void *user,
                                   tk_tracking_stats *stats, double *kernel_ms);
void tk_tracking_cuda_destroy(tk_tracking_cuda_state *state);

#ifdef __cplusplus
}
#endif
#endif
