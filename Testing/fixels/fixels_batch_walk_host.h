/* The CUDA warp kernel's batched walk (cuda/src/fixels/fixels_batch_walk.h) run on the host lane
 * by lane, against the host's segmentation of the same voxel. */
#ifndef TK_FIXELS_BATCH_WALK_HOST_H
#define TK_FIXELS_BATCH_WALK_HOST_H

#include <stddef.h>

#include "tk_fixels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What the batched walks met: voxels segmented, batches of 32 samples, windows (a batch's
 * fixpoint runs: one, plus one after each special lane), fixpoint rounds, the joins' steps in
 * lockstep (each window's largest lobe group), the joining samples whose side the lobe's mean
 * decided (fx_bw_side), special lanes by
 * kind, voxels with more than 24 and more than 32 lobes (the warp kernel's table). */
typedef struct {
    long voxels, samples, batches, windows, rounds, join_steps, sure, new_lobes, merges, bridges, over_24, over_32;
} fx_bw_stats;

/* One voxel's series sh (the plan's k doubles, finite): the host's segmentation
 * (tk_fixels_segment_view) against the batched walk emulated lane by lane followed by the rest
 * of the segmentation as the warp kernel runs it (bridges, peak revision, outputs).  Returns 1
 * where the labels, every lobe's table entry, the peaks and all outputs are the same bits, else
 * 0 with what differs in why. */
int fx_bw_check_voxel(const tk_fixels_plan *plan, const double *sh, fx_bw_stats *stats, char *why, size_t why_size);

#ifdef __cplusplus
}
#endif
#endif
