/** TensorKernels: fiber directions from spherical-harmonic (SH) volumes (one public header).
 *
 * An even-degree SH series of order lmax is, on the unit sphere, a homogeneous polynomial
 * of degree m = lmax, i.e. an order-m symmetric tensor in 3-D with as many unique entries
 * as the series has coefficients.  Fiber directions are the local maxima of that function
 * on the sphere: Z-eigenpairs of the tensor that are local maxima.
 *
 * SH conventions (coefficient j = l(l+1)/2 + m for even l, m = -l..l, as MRtrix3 and DIPY
 * store them; theta the polar angle from +z, phi the azimuth from +x towards +y):
 *   TK_SH_TOURNIER     MRtrix3's tournier07: m > 0: sqrt2 Re Y_l^m, m < 0: sqrt2 Im Y_l^|m|;
 *                      legacy (MRtrix 0.2) drops the sqrt2.
 *   TK_SH_DESCOTEAUX   DIPY's descoteaux07: m > 0: sqrt2 Im Y_l^m, m < 0: sqrt2 Re Y_l^m;
 *                      legacy (DIPY's default up to 1.x) uses Re Y_l^|m| for m < 0.
 * Y_l^m are the orthonormal complex harmonics with the Condon-Shortley phase (scipy's).
 * \file
 * \ingroup tk_group_fibers */
#ifndef TK_FIBERS_H
#define TK_FIBERS_H

#include "tk_export.h"

#include <stddef.h>
#include <stdint.h>

#include "tk_status.h"
#include "tk_types.h"

TK_API_BEGIN

#define TK_SH_MAX_LMAX 16

typedef enum { TK_SH_TOURNIER = 0, TK_SH_DESCOTEAUX = 1 } tk_sh_basis;

/** (lmax+1)(lmax+2)/2 for even lmax >= 0, else 0. */
size_t tk_sh_num_coeffs(int lmax);
/** The even lmax with that many coefficients (6 -> 2, 15 -> 4, 28 -> 6, 45 -> 8, ...), or -1. */
int tk_sh_lmax_for_count(size_t count);

/** The basis functions at unit direction dir: out[tk_sh_num_coeffs(lmax)]. */
tk_status tk_sh_eval(tk_sh_basis basis, int legacy, int lmax, const double dir[3], double *out);

/** The exact linear map from SH coefficients to the packed symmetric tensor of order lmax
 * in 3-D (tk_sshopm.h's storage): tensor = map * sh, map row-major K x K.  The SH function
 * and A x^lmax agree at every unit x.  The entries that are zero in exact arithmetic (a
 * basis function and a monomial of other parities in x, y, z; 79% of the map at lmax 8) are
 * exactly 0.0. */
tk_status tk_sh_to_tensor_map(tk_sh_basis basis, int legacy, int lmax, double *map);

/* ---- which basis a volume is in ---------------------------------------------------- */

/** A volume read in another basis than it was written in gives wrong peaks silently (DIPY's
 * default, descoteaux legacy, read as MRtrix3's: off by a median 73 degrees).  Read in its own
 * basis a fiber ODF is mostly positive with roughly axially symmetric lobes; read in another
 * its coefficients are scrambled.  score[] rates each reading over a sample of voxels on a
 * dense sphere: negative mass / absolute mass plus the energy (l >= 2) outside the best
 * axially symmetric fit about the largest value / energy; lower is likelier.  Tournier's
 * legacy scale cannot be told from the data (reading true data with the other scale keeps
 * them as positive and symmetric), so tournier and tournier legacy are one class. */
typedef struct tk_sh_basis_guess {
    tk_sh_basis basis;     /**< the likeliest */
    int legacy;            /**< its variant; 0 for tournier, where legacy_known is 0 */
    int legacy_known;      /**< 1 for descoteaux (its variants differ in the data), 0 for tournier */
    double confidence;     /**< the next likeliest class's score / the likeliest's (>= 1; 1: no evidence) */
    double score[4];       /**< tournier, tournier legacy, descoteaux, descoteaux legacy */
    size_t usable_voxels;  /**< voxels with finite coefficients, not all zero, positive mean */
    size_t sampled_voxels; /**< of those, evenly spread, the ones scored */
} tk_sh_basis_guess;

/** The evidence a guess needs before it contradicts the given basis: this many voxels
 * scored, the given class's score this many times the likeliest's. */
#define TK_SH_GUESS_MIN_VOXELS 20
#define TK_SH_GUESS_MIN_RATIO 1.25

/** Guesses the basis of num_voxels SH series (voxel-major, tk_sh_num_coeffs(lmax) floats
 * each) from up to max_samples of them (0: tk_sh_guess_default_samples).  Background (all
 * zero), non-finite and negative-mean voxels are skipped; with none left the guess is
 * tournier with confidence 1 and 0 voxels. */
tk_status tk_sh_guess_basis(int lmax, size_t num_voxels, const float *sh, size_t max_samples,
                            tk_sh_basis_guess *guess);
/** The default sample: 1000 voxels up to lmax 12, fewer above (each costs ~(lmax+1)^4). */
size_t tk_sh_guess_default_samples(int lmax);
/** How many times the given basis' class scores worse than the likeliest (1 where they are the
 * same class, or where the guess scored fewer than TK_SH_GUESS_MIN_VOXELS voxels). */
double tk_sh_basis_evidence(const tk_sh_basis_guess *guess, tk_sh_basis basis, int legacy);
/** 1 when the data contradict the given basis: evidence >= TK_SH_GUESS_MIN_RATIO. */
int tk_sh_basis_contradicts(const tk_sh_basis_guess *guess, tk_sh_basis basis, int legacy);

/* ---- peaks ----------------------------------------------------------------------- */


typedef struct tk_fibers_options {
    int lmax;                   /**< even, 2..TK_SH_MAX_LMAX */
    tk_sh_basis basis;
    int legacy;
    int num_peaks;              /**< peaks kept per voxel (sh2peaks -num, default 3) */
    double threshold;           /**< absolute: keep amplitudes > threshold (default 0, as sh2peaks) */
    double relative_threshold;  /**< keep amplitudes >= this times the voxel's largest (default 0) */
    double min_separation_deg;  /**< drop a peak within this angle of a larger one (default 0) */
    tk_backend backend;
    int num_threads;            /**< omp: 0 = OpenMP's default */
    int cuda_device;            /**< cuda: the device to run on (default 0) */
    int cuda_device_count;      /**< cuda: spread each execute over devices cuda_device ..
                                 *   cuda_device + count - 1, a contiguous share of the voxels
                                 *   each, results bit for bit those of one device; 0 or 1
                                 *   (default): one device.  More than exist: TK_ERR_ARGUMENT.
                                 *   Ignored on cpu and omp (Documentation/multi_gpu.md) */
    int cuda_timeline;          /**< cuda: 1 prints each chunk's axial, grid, polish and select kernel
                                 *   times and its candidate and climb counts on stderr (default 0) */
} tk_fibers_options;

/** sh2peaks' defaults for lmax: 3 peaks, no thresholds, the cpu backend, tournier. */
void tk_fibers_options_init(tk_fibers_options *opts, int lmax);

/** A caller-owned plan (as cuFFT's): the checked options, the peak finder's tables for their
 * lmax and basis (a hemisphere grid, its neighbours, the SH-to-tensor map), and on the cuda
 * backend the device copies of those tables, chunk buffers for max_voxels voxels and two
 * streams, all reused by every execute.  No state outlives the plan: destroy frees its device
 * memory too.  A cuda plan is not to be shared between threads at the same time (its buffers
 * are reused): use one per thread.  A cpu or omp plan's execute only reads the plan, so threads
 * may execute one cpu plan at once (the ITK filter's regions do). */
typedef struct tk_fibers_plan tk_fibers_plan;

/** Builds a plan for volumes of about max_voxels voxels (an execute may pass more: the cuda
 * backend then streams them through in chunks of at most that many; 0 sizes the chunks for
 * the device alone).  *plan is NULL on error. */
tk_status tk_fibers_plan_create(const tk_fibers_options *opts, size_t max_voxels, tk_fibers_plan **plan);

/** tk_fibers_find_timed with the plan's options and tables: the same outputs, bit for bit.
 * timing (may be NULL): total_ms this call, kernel_ms the work (cuda: the kernels), setup_ms 0.
 * cuda: pageable host arrays go through pinned staging buffers the plan makes at its first
 * such execute (two of 229 bytes a voxel of its chunk at lmax 8 and 3 peaks: 57 MiB at the
 * default chunk of 131,072 voxels; kept until destroy), copied in by up to 4 OpenMP threads; pinned arrays (cudaMallocHost's) are copied
 * directly.  Where the host refuses page-locked memory the arrays are copied as they are. */
tk_status tk_fibers_plan_execute(tk_fibers_plan *plan, size_t num_voxels, const float *sh, const uint8_t *mask,
                                 float *directions, float *amplitudes, size_t *bad_voxels, tk_timing *timing);

/** tk_fibers_plan_execute on arrays in the memory of the plan's GPU (cudaMalloc's, CuPy's,
 * PyTorch's), in the same layouts: no byte of them crosses to the host; the outputs are the
 * host execute's, bit for bit.  d_sh, d_mask (may be NULL), d_directions and d_amplitudes (either
 * may be NULL) are device pointers; bad_voxels and timing are host memory (may be NULL).
 * cuda_stream: a cudaStream_t of the caller (NULL: the legacy default stream).  The call waits
 * for the work already queued on it (so what wrote d_sh is done) and is synchronous, as the
 * host execute: on return the outputs are written and nothing of the call is left queued on
 * any stream, so they may be read on any stream.  Errors: TK_ERR_UNSUPPORTED in a build without
 * CUDA and for a plan over several GPUs; TK_ERR_ARGUMENT for a cpu/omp plan (a device array is
 * never copied to the host silently) and for an array that is not device memory of the plan's
 * GPU (the message names it). */
tk_status tk_fibers_plan_execute_device(tk_fibers_plan *plan, size_t num_voxels, const float *d_sh,
                                        const uint8_t *d_mask, float *d_directions, float *d_amplitudes,
                                        size_t *bad_voxels, void *cuda_stream, tk_timing *timing);

/** Frees the plan and everything it holds (NULL: nothing). */
void tk_fibers_plan_destroy(tk_fibers_plan *plan);

/** Peaks of num_voxels SH series (voxel-major, tk_sh_num_coeffs(lmax) floats each).
 * mask: NULL or one byte per voxel (0 = skip: all outputs NaN).  directions: num_voxels x
 * num_peaks x 3 unit vectors, amplitudes: num_voxels x num_peaks SH values at the peaks,
 * sorted by amplitude descending, NaN where a voxel has fewer peaks.  A voxel with
 * non-finite coefficients gets NaN outputs and is counted in *bad_voxels (may be NULL).
 * Either output may be NULL.  One shot: tk_fibers_plan_create, tk_fibers_plan_execute and
 * tk_fibers_plan_destroy; a caller with many volumes (or regions) keeps one plan instead. */
tk_status tk_fibers_find(const tk_fibers_options *opts, size_t num_voxels, const float *sh, const uint8_t *mask,
                         float *directions, float *amplitudes, size_t *bad_voxels);

/** tk_fibers_find that also reports its timing (timing may be NULL): setup_ms the plan's
 * creation, total_ms the whole call, kernel_ms as tk_fibers_plan_execute's. */
tk_status tk_fibers_find_timed(const tk_fibers_options *opts, size_t num_voxels, const float *sh, const uint8_t *mask,
                               float *directions, float *amplitudes, size_t *bad_voxels, tk_timing *timing);


/** All local maxima of one SH series, without thresholds or a count limit, in double:
 * up to max_peaks, sorted by amplitude descending; returns the number found (it may exceed
 * max_peaks, in which case only the first max_peaks are written), or -1 on error. */
int tk_fibers_all_maxima(int lmax, tk_sh_basis basis, int legacy, const double *sh, int max_peaks,
                         double *directions, double *amplitudes);
/** tk_fibers_all_maxima with a plan's lmax, basis and tables (its other options do not apply):
 * for many series, without building the tables each time. */
int tk_fibers_plan_all_maxima(const tk_fibers_plan *plan, const double *sh, int max_peaks, double *directions,
                              double *amplitudes);

TK_API_END
#endif
