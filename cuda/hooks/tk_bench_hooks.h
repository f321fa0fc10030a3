/* Hooks for tk-bench and the tests only: measurements a user of the library does not need,
 * kept out of the installed headers (cuda/include) and out of the API reference.  Exported
 * from the library like the public API, so that a shared build links them too. */
#ifndef TK_BENCH_HOOKS_H
#define TK_BENCH_HOOKS_H

#include "tk_export.h"

#include "tk_eig.h"
#include "tk_fibers.h"
#include "tk_fixels.h"
#include "tk_tucker.h"

TK_API_BEGIN

/* ---- fiber directions ----------------------------------------------------------- */

/* The Newton work of one tk_fibers_find call (cpu/omp; cuda leaves it 0): every voxel costs
 * one grid pass, and at most 2 x 64 polished candidates of at most 24 Newton iterations
 * each (constant, zero and NaN voxels none). */
typedef struct tk_fibers_work {
    unsigned long long polished;          /* candidates polished by Newton */
    unsigned long long newton_iterations; /* their Newton iterations */
    unsigned long long most_iterations;   /* the most Newton iterations one voxel took */
} tk_fibers_work;

/* tk_fibers_find_timed that also counts the Newton work (work may be NULL). */
tk_status tk_fibers_find_counted(const tk_fibers_options *opts, size_t num_voxels, const float *sh,
                                 const uint8_t *mask, float *directions, float *amplitudes, size_t *bad_voxels,
                                 tk_timing *timing, tk_fibers_work *work);
/* tk_fibers_plan_execute that also counts the Newton work (work may be NULL). */
tk_status tk_fibers_plan_execute_counted(tk_fibers_plan *plan, size_t num_voxels, const float *sh,
                                         const uint8_t *mask, float *directions, float *amplitudes,
                                         size_t *bad_voxels, tk_timing *timing, tk_fibers_work *work);

/* ---- fixels (CUDA) --------------------------------------------------------------- */

/* A cuda plan's kernels: on (1), every voxel by the one-thread kernel (the host's segmentation
 * text on global scratch, the reference the tests hold the warp kernel to); off (0, the
 * plan's default), the warp-a-voxel kernel, which passes the voxels whose lobes outgrow its
 * shared table to the one-thread kernel.  TK_ERR_ARGUMENT for a plan not on cuda. */
tk_status tk_fixels_plan_set_one_thread(tk_fixels_plan *plan, int on);
/* A cuda plan's warp kernel: on (1), the fused kernel (a block's voxels sampled together, the
 * block held until its slowest voxel is done; the A/B reference, also TK_FIXELS_CUDA_FUSED=1 in
 * the environment at the plan's creation); off (0, the default), the samples as a matrix product
 * and the pull kernel (warps taking voxels from a counter).  TK_ERR_ARGUMENT for a plan not on
 * cuda. */
tk_status tk_fixels_plan_set_fused(tk_fixels_plan *plan, int on);
/* A cuda plan's segmentation after the samples kernel (where not fused): on (1, the default), the
 * slim kernel (the samples read from global memory, a third of the shared memory a voxel); off
 * (0), the pull kernel (the samples copied into shared memory; the A/B reference, also
 * TK_FIXELS_CUDA_SLIM=0 in the environment at the plan's creation).  TK_ERR_ARGUMENT for a plan
 * not on cuda. */
tk_status tk_fixels_plan_set_slim(tk_fixels_plan *plan, int on);
/* The slim kernel's split form (where the slim kernel runs): on (1), the lobes' climbs handed off
 * to a kernel of their own, a thread a lobe, and the voxels' outputs to a third, a warp a voxel
 * (the default; TK_FIXELS_CUDA_SPLIT=0 in the environment at the plan's creation turns it off);
 * off (0), the slim kernel alone.  The same fixels bit for bit.  TK_ERR_ARGUMENT for a plan not on cuda. */
tk_status tk_fixels_plan_set_split(tk_fixels_plan *plan, int on);
/* The voxels of the plan's last execute that the warp kernel passed on (0 on cpu/omp). */
size_t tk_fixels_plan_redone(const tk_fixels_plan *plan);

/* ---- fixels (host) --------------------------------------------------------------- */

/* The host segmentation's walk order of one voxel's n samples (fixels_host_order.h): where
 * fmls.cpp grows no lobe (no positive sample, or the first sample of the largest magnitude
 * negative) -1, else the positive samples' directions by descending value, ties by ascending
 * index, into order (n ints), and their count.  -2 where n is not 1..65536 or out of memory.
 * vector 0: the maxima and the keys by the scalar loops even where the CPU has AVX and AVX2 (1:
 * as the segmentation). */
int tk_fixels_walk_order(const double *values, int n, int *order, int vector);
/* The host's samples of four series sh[i] (the plan's k coefficients, double) at the plan's
 * directions into values[i] (tk_fixels_plan_directions doubles each): path 0 by the AVX2 clone
 * (or the default build where the CPU lacks AVX2), path 1 by AVX-512; returns 0, -1 where path
 * 1 is asked and the CPU has no AVX-512 (values then by path 0), -2 for a bad argument. */
int tk_fixels_plan_sample4(const tk_fixels_plan *plan, const double *const *sh, double *const *values, int path);
/* The climb's tensor of the plan (its k x k map times aniso[1..k-1], fixels_segment.h) into
 * tensor (k doubles): path 0 by the plain loop, 1 by AVX where the CPU has it; 0, or -2 for a
 * bad argument. */
int tk_fixels_plan_tensor(const tk_fixels_plan *plan, const double *aniso, double *tensor, int path);

/* ---- batched eigenvalues (CUDA) -------------------------------------------------- */

/* Times of one batch on the GPU (milliseconds), all from pinned host memory:
 * kernel_ms with the matrices already in device memory (CUDA events, values only),
 * copy_ms for the host-to-device copy of the matrices plus the device-to-host copy
 * of the values alone (each the median of three runs).  The batch must fit in device
 * memory. */
typedef struct tk_eig_cuda_profile {
    double kernel_ms, copy_ms;
    const char *scheme; /* "thread registers", "thread", "N lanes [lockstep]", "warp [lockstep]" or "block" */
} tk_eig_cuda_profile;
tk_status tk_eig_cuda_measure(const tk_eig_options *opts, size_t count, const void *matrices,
                              tk_eig_cuda_profile *profile);

/* ---- FastTucker's spectral start (tucker_spectral.c) ------------------------------------ */

/* The spectral vectors of one mode as tk_tucker_spectral_start computes them: V (dims[mode] x
 * J, row-major) gets orthonormal columns, the Ritz vectors of X(mode) X(mode)^T less its
 * diagonal for its J eigenvalues of largest magnitude (subspace iteration's), by descending
 * eigenvalue; eigenvalues (may be NULL) those J values.  J <= dims[mode]. */
tk_status tk_tucker_spectral_vectors(const tk_tucker_coo *t, const uint32_t *dims, int mode, int J,
                                     const tk_tucker_spectral_options *o, double *V, double *eigenvalues);
/* The start's core fit with the factors given: A[n] (dims[n] x J) fixed, B[n] (J x R, written)
 * by o->core_sweeps sweeps of alternating least squares with the ridge ridge_fraction x the
 * normal equations' mean diagonal (the start uses TK_TUCKER_SPECTRAL_RIDGE, 1e-6), from a
 * random start scaled to the data's RMS, or (start_given) from the B[n] passed in. */
tk_status tk_tucker_spectral_fit_cores(const tk_tucker_coo *t, int order, const uint32_t *dims, int J, int R,
                                       const double *const *A, const tk_tucker_spectral_options *o,
                                       double ridge_fraction, int start_given, double *const *B);
#define TK_TUCKER_SPECTRAL_RIDGE 1e-6

/* ---- FastTucker on several GPUs ------------------------------------------------------ */

/* The copy of the model that GPU `index` of the solver (0 .. cuda_device_count - 1) holds;
 * every GPU holds the same bits (the tests check it).  cpu/omp: index 0 only. */
tk_status tk_tucker_solver_device_model(const tk_tucker_solver *s, int index, tk_tucker_model *out);

/* ---- FastTucker's set-up --------------------------------------------------------------- */

/* Where a solver's set-up (tk_tucker_solver_create) spent its time and device memory. */
typedef struct tk_tucker_setup_info {
    int gpu_built;            /* cuda: 1 where the B-CSF was built on the GPU, 0 on the host */
    double build_ms;          /* building every mode's B-CSF (GPU: upload_ms + sort_ms + layout_ms and
                                 the shares of several GPUs; host: tk_tucker_bcsf_build of every mode) */
    double upload_ms;         /* GPU build: the COO's copy to the device */
    double sort_ms;           /* GPU build: the index check, the lexicographic sort and every mode's sort */
    double layout_ms;         /* GPU build: slices, sub-slices, the entries' gathers */
    double device_ms;         /* cuda: the rest: the devices' checks, the model, a host-built B-CSF's
                                 upload, C(n) */
    size_t peak_device_bytes; /* cuda: the most device memory the set-up held at once (all its GPUs) */
    char note[400];           /* cuda: why the host built the B-CSF ("" where the GPU did) */
} tk_tucker_setup_info;
tk_status tk_tucker_solver_setup_info(const tk_tucker_solver *s, tk_tucker_setup_info *out);

/* Mode `mode`'s B-CSF of t built on CUDA device `device` as the cuda solver builds it, cut
 * as tk_tucker_bcsf_row_split gives GPU `piece` of `pieces` its share (pieces 1: the whole;
 * part_ptr from the share's first entry), then copied back into out (tk_tucker_bcsf_free).
 * The tests compare it with tk_tucker_bcsf_build.  TK_ERR_UNSUPPORTED without CUDA. */
tk_status tk_tucker_bcsf_build_cuda(const tk_tucker_coo *t, int mode, size_t fiber_threshold, int pieces, int piece,
                                    int device, tk_tucker_bcsf *out);
/* The share of mode `mode` that GPU `index` of a cuda solver holds, copied back (part_ptr
 * from its first entry). */
tk_status tk_tucker_solver_device_bcsf(const tk_tucker_solver *s, int index, int mode, tk_tucker_bcsf *out);

/* All-reduce bandwidth of devices 0 .. count - 1 through NCCL (one thread, in place, float
 * sums of `bytes`): the median time of `repeat` runs after one warm-up, and NCCL's "bus
 * bandwidth" 2 (count - 1) / count x bytes / time (GB/s), what nccl-tests print. */
tk_status tk_nccl_allreduce_measure(int count, size_t bytes, int repeat, double *ms, double *bus_gbps);

/* ---- host copies (cuda/src/common/host_copy.c) ------------------------------------- */

/* memcpy(dst, src, bytes) split over up to 4 OpenMP threads from 1 MiB on: the CUDA cores'
 * staging of pageable caller arrays into pinned buffers (common/host_copy.h says why).  The
 * arrays must not overlap. */
void tk_host_copy(void *dst, const void *src, size_t bytes);

/* ---- one batch over several GPUs (cuda/src/common/multi_device.c) ----------------- */

/* Range `index` of `count` items cut into `parts` contiguous ranges in order, equal shares
 * (the first count % parts ranges one item more): its first item and its length (0 where
 * count < parts leaves it none).  parts >= 1. */
size_t tk_device_range(size_t count, int parts, int index, size_t *first);

/* The work of one device on its range: TK_OK or a status with tk_last_error() set (in the
 * thread that ran it). */
typedef tk_status (*tk_device_work_fn)(void *ctx, int index, size_t first, size_t count);

/* Runs work(ctx, i, first_i, count_i) for every device i = 0 .. devices-1 with a non-empty
 * range of `count` items (tk_device_range), each in a host thread of its own (one device:
 * in the caller's thread, no thread made), and joins them all.  Returns TK_OK, or the failure
 * of the lowest failing index, its message carried into the caller's thread (tk_last_error
 * is thread-local) and, over several devices, prefixed "CUDA device D: " with
 * D = first_device + index.  A thread that cannot be started runs its range in the caller's
 * thread instead. */
tk_status tk_run_on_devices(int first_device, int devices, size_t count, tk_device_work_fn work, void *ctx);

/* ---- tractography (CUDA) ---------------------------------------------------------- */

/* The seeds a GPU tracks in one launch beyond chunk_seeds (tracking_cuda.cu's launch_seeds):
 * 0 restores the default (up to 65,536); 1 makes every launch one chunk of chunk_seeds, which
 * the tests use to cut the GPU's work at chunk boundaries.  Process-wide; not thread-safe. */
void tk_tracking_cuda_set_launch_fill(size_t seeds);

/* ---- device arrays (cuda/src/common/device_arrays.h) ------------------------------ */

/* Bytes of callers' arrays (inputs and results) that the per-voxel cores (fibers, SS-HOPM,
 * eig) copied between host and device memory since the process started: a host execute on
 * the cuda backend adds its arrays' sizes, a device-array execute (tk_*_plan_execute_device)
 * adds nothing.  The tables a plan uploads and scalar counters are not callers' arrays. */
unsigned long long tk_test_array_transfer_bytes(void);

TK_API_END
#endif
