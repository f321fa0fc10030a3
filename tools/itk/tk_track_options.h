/* tk-track's option table (tk_track_options.c): its parser, --help and the
 * SlicerExecutionModel description (tk-track --xml). */
#ifndef TK_TRACK_OPTIONS_H
#define TK_TRACK_OPTIONS_H
#include <stdint.h>

#include "cli_options.h"
#ifdef __cplusplus
extern "C" {
#endif

/* --include may be given several times (tckgen -include: every region must be visited). */
#define TK_TRACK_MAX_INCLUDE 16
typedef struct tk_track_paths {
    const char *path[TK_TRACK_MAX_INCLUDE];
    int count;
} tk_track_paths;

typedef struct tk_track_values {
    const char *seed_mask, *mask, *exclude, *seeds_file;
    const char *png; /* --png: a picture of the bundle (VTK builds; refused otherwise) */
    tk_track_paths include;
    long seeds;   /* random seeds per voxel of --seed-mask (default 1) */
    long select;  /* 0: every seed once; K: stop once K streamlines are kept */
    int algorithm; /* tk_tracking_algorithm */
    double step, angle, cutoff, min_length, max_length; /* 0: MRtrix3's default (the core's) */
    double power; /* iFOD1: the FOD raised to this power (tckgen -power; 0: 1) */
    int trials;   /* iFOD1: directions drawn per step (tckgen -trials; 0: 1000) */
    double seed_direction[3]; /* all 0: random first directions */
    uint64_t seed;
    int descoteaux, legacy, unidirectional;
    int gpus;     /* --gpus: 0 (every visible GPU) unless given */
    tk_standard_values std;
} tk_track_values;

/* The defaults of every option. */
void tk_track_values_init(tk_track_values *v);
extern const tk_command tk_track_command;
#ifdef __cplusplus
}
#endif
#endif
