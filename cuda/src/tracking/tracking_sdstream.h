/* SD_STREAM's method (MRtrix3's algorithms/sd_stream.h): the first direction is the peak
 * nearest the given or one random direction, and each step goes along the peak nearest the
 * current direction, ending where that peak is below the cutoff or turns too far. */
#ifndef TK_TRACKING_SDSTREAM_H
#define TK_TRACKING_SDSTREAM_H

/* Host and device (TK_HD): the CPU tracker and the CUDA tracker compile this one text. */
#include <math.h>

#include "common/tk_hd.h"
#include "tracking_directions.h"
#include "tracking_field.h"
#include "tracking_internal.h"
#include "tracking_peak.h"

/* The peak nearest dir at the interpolated series w->values, dir moved onto it; 0 where its
 * amplitude is not above the cutoff (find_peak(): FOD < threshold, or none, counts as 0). */
TK_HD static inline int tk_tracking_sd_find_peak(const tk_tracking_field *f, tk_tracking_work *w, double *dir)
{
    const double amp = tk_tracking_peak(f->plan, w->values, dir, &w->peak);
    return isfinite(amp) && amp >= f->plan->opts.cutoff && amp != 0.0;
}

TK_HD static inline int tk_tracking_sd_stream_init(const tk_tracking_field *f, tk_tracking_work *w, double *dir, int given, tk_philox *rng)
{
    if (!given) tk_tracking_random_direction(rng, dir); /* one draw: no second try (init()) */
    return tk_tracking_sd_find_peak(f, w, dir);
}

TK_HD static inline int tk_tracking_sd_stream_next(const tk_tracking_field *f, tk_tracking_work *w, double *pos, double *dir)
{
    const tk_tracking_plan *plan = f->plan;
    if (!tk_tracking_interpolate(f, pos, w->values)) return TK_END_EXIT_IMAGE;
    const double prev[3] = {dir[0], dir[1], dir[2]};
    if (!tk_tracking_sd_find_peak(f, w, dir)) return TK_END_MODEL;
    if (prev[0] * dir[0] + prev[1] * dir[1] + prev[2] * dir[2] < plan->cos_max_angle) return TK_END_CURVATURE;
    for (int a = 0; a < 3; ++a) pos[a] += dir[a] * plan->opts.step_mm;
    return -1;
}

#endif
