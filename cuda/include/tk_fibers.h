/* TensorKernels: fiber directions from spherical-harmonic (SH) volumes (one public header).
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
 */
#ifndef TK_FIBERS_H
#define TK_FIBERS_H

#include <stddef.h>
#include <stdint.h>

#include "tk_status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TK_SH_MAX_LMAX 16

typedef enum { TK_SH_TOURNIER = 0, TK_SH_DESCOTEAUX = 1 } tk_sh_basis;

/* (lmax+1)(lmax+2)/2 for even lmax >= 0, else 0. */
size_t tk_sh_num_coeffs(int lmax);
/* The even lmax with that many coefficients (6 -> 2, 15 -> 4, 28 -> 6, 45 -> 8, ...), or -1. */
int tk_sh_lmax_for_count(size_t count);

/* The basis functions at unit direction dir: out[tk_sh_num_coeffs(lmax)]. */
tk_status tk_sh_eval(tk_sh_basis basis, int legacy, int lmax, const double dir[3], double *out);

/* The exact linear map from SH coefficients to the packed symmetric tensor of order lmax
 * in 3-D (tk_sshopm.h's storage): tensor = map * sh, map row-major K x K.  The SH function
 * and A x^lmax agree at every unit x. */
tk_status tk_sh_to_tensor_map(tk_sh_basis basis, int legacy, int lmax, double *map);

/* ---- peaks ----------------------------------------------------------------------- */

typedef enum { TK_FIBERS_CPU = 0, TK_FIBERS_OMP = 1, TK_FIBERS_CUDA = 2 } tk_fibers_backend;

typedef struct tk_fibers_options {
    int lmax;                   /* even, 2..TK_SH_MAX_LMAX */
    tk_sh_basis basis;
    int legacy;
    int num_peaks;              /* peaks kept per voxel (sh2peaks -num, default 3) */
    double threshold;           /* absolute: keep amplitudes > threshold (default 0, as sh2peaks) */
    double relative_threshold;  /* keep amplitudes >= this times the voxel's largest (default 0) */
    double min_separation_deg;  /* drop a peak within this angle of a larger one (default 0) */
    tk_fibers_backend backend;
    int num_threads;            /* omp: 0 = OpenMP's default */
    int cuda_device;            /* cuda: the device to run on (default 0) */
} tk_fibers_options;

/* Where the time of one tk_fibers_find_timed call went, in milliseconds, and (cpu/omp) the
 * Newton work it took: every voxel costs one grid pass, and at most 2 x 64 polished
 * candidates of at most 24 Newton iterations each (constant, zero and NaN voxels none). */
typedef struct tk_fibers_timing {
    double total_ms;  /* the whole call, host to host */
    double kernel_ms; /* cuda: the peak-finder kernels alone (CUDA events); cpu/omp: = total_ms */
    unsigned long long polished;          /* cpu/omp: candidates polished by Newton (cuda: 0) */
    unsigned long long newton_iterations; /* cpu/omp: their Newton iterations (cuda: 0) */
    unsigned long long most_iterations;   /* cpu/omp: the most Newton iterations one voxel took */
} tk_fibers_timing;

void tk_fibers_options_init(tk_fibers_options *opts, int lmax);

/* Peaks of num_voxels SH series (voxel-major, tk_sh_num_coeffs(lmax) floats each).
 * mask: NULL or one byte per voxel (0 = skip: all outputs NaN).  directions: num_voxels x
 * num_peaks x 3 unit vectors, amplitudes: num_voxels x num_peaks SH values at the peaks,
 * sorted by amplitude descending, NaN where a voxel has fewer peaks.  A voxel with
 * non-finite coefficients gets NaN outputs and is counted in *bad_voxels (may be NULL).
 * Either output may be NULL. */
tk_status tk_fibers_find(const tk_fibers_options *opts, size_t num_voxels, const float *sh, const uint8_t *mask,
                         float *directions, float *amplitudes, size_t *bad_voxels);

/* tk_fibers_find that also reports its timing (timing may be NULL). */
tk_status tk_fibers_find_timed(const tk_fibers_options *opts, size_t num_voxels, const float *sh, const uint8_t *mask,
                               float *directions, float *amplitudes, size_t *bad_voxels, tk_fibers_timing *timing);

/* 1 if this build has the CUDA peak finder (a device may still be absent at run time). */
int tk_fibers_has_cuda(void);

/* All local maxima of one SH series, without thresholds or a count limit, in double:
 * up to max_peaks, sorted by amplitude descending; returns the number found (it may exceed
 * max_peaks, in which case only the first max_peaks are written), or -1 on error. */
int tk_fibers_all_maxima(int lmax, tk_sh_basis basis, int legacy, const double *sh, int max_peaks,
                         double *directions, double *amplitudes);

#ifdef __cplusplus
}
#endif
#endif
