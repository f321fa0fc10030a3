/* Internal: the host side of a run that the CPU execute (tracking_execute.c) and the CUDA
 * one (tracking_cuda.cu) share, so that both tally and hand out alike: a seed and its outcome
 * counted into the stats, the half ends' counters added to them, and a chunk handed to the
 * sink. */
#ifndef TK_TRACKING_RUN_H
#define TK_TRACKING_RUN_H

#include <stdint.h>

#include "tk_tracking.h"
#include "tracking_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One more seed tracked, with its outcome (TK_TRACK_*). */
static inline void tk_tracking_tally_seed(tk_tracking_stats *s, int outcome)
{
    ++s->seeds;
    switch (outcome) {
    case TK_TRACK_KEPT: ++s->accepted; break;
    case TK_TRACK_BAD_SEED: ++s->rejected_seed; break;
    case TK_TRACK_NO_PROPAGATION: ++s->rejected_no_propagation; break;
    case TK_TRACK_TOO_SHORT: ++s->rejected_too_short; break;
    case TK_TRACK_EXCLUDED: ++s->rejected_exclude; break;
    default: ++s->rejected_missed_include; break;
    }
}

/* Adds the counts of why halves ended (ends[TK_END_COUNT], by TK_END_*) to the stats. */
static inline void tk_tracking_tally_ends(tk_tracking_stats *s, const uint64_t *ends)
{
    s->ended_exit_image += ends[TK_END_EXIT_IMAGE], s->ended_model += ends[TK_END_MODEL];
    s->ended_curvature += ends[TK_END_CURVATURE], s->ended_max_length += ends[TK_END_MAX_LENGTH];
    s->ended_exit_mask += ends[TK_END_EXIT_MASK], s->ended_calibrator += ends[TK_END_CALIBRATOR];
}

/* Hands a chunk to the sink; a sink that fails without saying why gets a message. */
static inline tk_status tk_tracking_hand_to_sink(tk_tracking_sink sink, const tk_tracking_chunk *chunk, void *user)
{
    const tk_status s = sink(chunk, user);
    if (s != TK_OK && tk_last_error()[0] == '\0') tk_set_error(s, "the streamline sink failed");
    return s;
}

#ifdef __cplusplus
}
#endif
#endif
