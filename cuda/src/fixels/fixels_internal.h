/* Internal: what a fixels plan holds, and the one-voxel FMLS segmentation its backends run. */
#ifndef TK_FIXELS_INTERNAL_H
#define TK_FIXELS_INTERNAL_H

#include <stdint.h>

#include "tk_fixels.h"
#include "tracking/tracking_internal.h" /* TK_TRACK_ROWS_MAX: the climb's monomial form */

#ifdef __cplusplus
extern "C" {
#endif

#define TK_FIXELS_N TK_FIXELS_DIRECTIONS

struct tk_fixels_plan {
    tk_fixels_options opts; /* checked */
    int k, slots;
    double *basis;          /* k x TK_FIXELS_N: the SH functions at the directions, coefficient-major */
    double *map;            /* k x k, column-major: tensor = map * sh (the climb's tensor) */
    int rows_src[TK_TRACK_ROWS_MAX][6];
    double rows_weight[TK_TRACK_ROWS_MAX][6];
};

/* One positive lobe while the segmentation grows it (MRtrix3's FOD_lobe): its peaks are a list
 * through tk_fixels_peak.next, as a merge joins two lists. */
typedef struct {
    int alive, parent;  /* parent: the lobe it was merged into (itself while alive) */
    double max_peak, integral, mean[3];
    int peak_head, peak_tail, num_peaks;
} tk_fixels_lobe;

typedef struct {
    double dir[3];
    int next, seed; /* seed: the direction index the peak started from */
} tk_fixels_peak;

/* One thread's scratch for a voxel (about 100 KB). */
typedef struct {
    double values[TK_FIXELS_N];
    uint64_t key[2][TK_FIXELS_N]; /* the positive samples' sort (fixels_fmls.c) */
    int order[2][TK_FIXELS_N];
    int label[TK_FIXELS_N];  /* the lobe a direction was added to, -1 before */
    tk_fixels_lobe lobes[TK_FIXELS_N];
    tk_fixels_peak peaks[TK_FIXELS_N];
    int retro[TK_FIXELS_N][2]; /* (direction, lobe) joined after the sweep */
    double tensor[(TK_SH_MAX_LMAX + 1) * (TK_SH_MAX_LMAX + 2) / 2], aniso[(TK_SH_MAX_LMAX + 1) * (TK_SH_MAX_LMAX + 2) / 2];
    double rows[TK_TRACK_ROWS_MAX][6];
    int kept[TK_FIXELS_N];   /* per lobe id: its output index, or -1 */
} tk_fixels_work;

/* The fixels of one series sh (double, k coefficients, finite): up to slots of them written
 * to the arrays (each may be NULL; offsets already at this voxel); returns how many lobes
 * survived (may exceed slots). */
int tk_fixels_segment(const tk_fixels_plan *plan, const double *sh, tk_fixels_work *w, float *afd, float *peak_amp,
                      float *mean_dir, float *peak_dir, uint8_t *lobe_of_dir);

/* The cpu/omp backend (fixels_cpu.c). */
tk_status tk_fixels_cpu_execute(const tk_fixels_plan *plan, size_t num_voxels, const float *sh, const uint8_t *mask,
                                tk_fixels_output *out);

#ifdef __cplusplus
}
#endif
#endif
