/* One streamline, as MRtrix3's Exec grows it whatever the algorithm: the seed's checks
 * (tracking/method.cpp check_seed()), the method's first direction and steps (SD_STREAM:
 * tracking_sdstream.h; iFOD1: tracking_ifod1.h), the regions after each step
 * (tracking/exec.h iterate()), both halves through the seed and the tests that drop a
 * streamline (exec.h gen_track(), gen_track_unidir(), track_rejected()). */
#ifndef TK_TRACKING_STREAMLINE_H
#define TK_TRACKING_STREAMLINE_H

/* Host and device (TK_HD): the CPU tracker and the CUDA tracker (one thread a seed) compile
 * this one text; only where the points go differs (push_point). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/tk_hd.h"
#include "tracking_field.h"
#include "tracking_ifod1.h"
#include "tracking_internal.h"
#include "tracking_sdstream.h"

/* Appends p; 0 where there is no room.  The CPU's scratch grows; a GPU thread's is its
 * slice of the chunk's point buffer, max_points + 1 points (the most a streamline reaches:
 * the first half stops at max_points, the second adds one point before its own test). */
TK_HD static inline int tk_tracking_push_point(tk_tracking_work *w, size_t *n, const double *p)
{
    if (*n == w->cap) {
#ifdef __CUDA_ARCH__
        return 0;
#else
        double *grown = (double *)realloc(w->pts, 2 * w->cap * 3 * sizeof *grown);
        if (!grown) return 0;
        w->pts = grown, w->cap *= 2;
#endif
    }
    memcpy(w->pts + 3 * *n, p, 3 * sizeof *p);
    ++*n;
    return 1;
}

TK_HD static inline void tk_tracking_visit_includes(const tk_tracking_field *f, tk_tracking_work *w, const double *p)
{
    const tk_tracking_regions *r = f->regions;
    for (size_t i = 0; i < r->num_include; ++i)
        if (!w->visited[i] && tk_tracking_mask_contains(f->plan, r->include[i], p)) w->visited[i] = 1;
}

/* A step of one half (-1: it goes on; else why it ended). */
TK_HD static inline int tk_tracking_iterate(const tk_tracking_field *f, tk_tracking_work *w, double *pos, double *dir, tk_philox *rng)
{
    const tk_tracking_plan *plan = f->plan;
    const int end = plan->opts.algorithm == TK_TRACK_IFOD1 ? tk_tracking_ifod1_next(f, w, pos, dir, rng)
                                                           : tk_tracking_sd_stream_next(f, w, pos, dir);
    if (end != -1) return end;
    const tk_tracking_regions *r = f->regions;
    if (r->stop_mask && !tk_tracking_mask_contains(plan, r->stop_mask, pos)) return TK_END_EXIT_MASK;
    if (r->exclude && tk_tracking_mask_contains(plan, r->exclude, pos)) return TK_END_EXCLUDE;
    tk_tracking_visit_includes(f, w, pos);
    return -1;
}

/* One half from pos along dir, appending to w->pts; how it ended, or -2 out of memory.
 * The point where a half ends joins it only where MRtrix3's term_add_to_tck says so: after
 * entering an exclusion region (the streamline is dropped anyway) and at the length limit;
 * a step that leaves the image, the mask or the model is not taken. */
TK_HD static inline int tk_tracking_grow_half(const tk_tracking_field *f, tk_tracking_work *w, double *pos, double *dir,
                                            tk_philox *rng, size_t *n)
{
    for (;;) {
        const int end = tk_tracking_iterate(f, w, pos, dir, rng);
        if (end == -1 || end == TK_END_EXCLUDE)
            if (!tk_tracking_push_point(w, n, pos)) return -2;
        if (end != -1) return end;
        if (*n >= f->plan->max_points) return TK_END_MAX_LENGTH;
    }
}

TK_HD static inline void tk_tracking_reverse_points(double *p, size_t n)
{
    for (size_t i = 0, j = n - 1; i < j; ++i, --j)
        for (int a = 0; a < 3; ++a) {
            const double t = p[3 * i + a];
            p[3 * i + a] = p[3 * j + a], p[3 * j + a] = t;
        }
}

/* Grows the streamline of one seed at world `seed` with random stream rng into w->pts
 * (*num_points points); returns TK_TRACK_KEPT or why it was dropped, or -1 out of room. */
TK_HD static inline int tk_tracking_streamline(const tk_tracking_field *f, const double *seed, tk_philox *rng,
                                              tk_tracking_work *w, size_t *num_points)
{
    const tk_tracking_plan *plan = f->plan;
    const tk_tracking_options *o = &plan->opts;
    const tk_tracking_regions *r = f->regions;
    *num_points = 0;
    w->step = 0;
    /* check_seed(): inside the stopping mask, outside the exclusion regions */
    if (r->stop_mask && !tk_tracking_mask_contains(plan, r->stop_mask, seed)) return TK_TRACK_BAD_SEED;
    if (r->exclude && tk_tracking_mask_contains(plan, r->exclude, seed)) return TK_TRACK_BAD_SEED;
    /* the method's init(): the data there and a first direction */
    if (!tk_tracking_interpolate(f, seed, w->values)) return TK_TRACK_BAD_SEED;
    double dir[3];
    const int given = o->seed_direction[0] != 0 || o->seed_direction[1] != 0 || o->seed_direction[2] != 0;
    if (given) {
        const double *s = o->seed_direction, n = sqrt(s[0] * s[0] + s[1] * s[1] + s[2] * s[2]);
        for (int a = 0; a < 3; ++a) dir[a] = s[a] / n;
    }
    const int ok = o->algorithm == TK_TRACK_IFOD1 ? tk_tracking_ifod1_init(f, w, dir, given, rng)
                                                  : tk_tracking_sd_stream_init(f, w, dir, given, rng);
    if (!ok) return TK_TRACK_BAD_SEED;
    /* gen_track(): the seed, the half along the peak, then the half along its opposite */
    memset(w->visited, 0, r->num_include ? r->num_include : 1);
    tk_tracking_visit_includes(f, w, seed);
    size_t n = 0;
    tk_tracking_push_point(w, &n, seed); /* the scratch holds at least one point */
    const double seed_dir[3] = {dir[0], dir[1], dir[2]};
    double pos[3] = {seed[0], seed[1], seed[2]};
    int end = tk_tracking_grow_half(f, w, pos, dir, rng, &n);
    if (end == -2) return -1;
    ++w->ends[end];
    int excluded = end == TK_END_EXCLUDE;
    if (!excluded && !o->unidirectional) {
        tk_tracking_reverse_points(w->pts, n);
        memcpy(pos, seed, sizeof pos);
        for (int a = 0; a < 3; ++a) dir[a] = -seed_dir[a];
        end = tk_tracking_grow_half(f, w, pos, dir, rng, &n);
        if (end == -2) return -1;
        ++w->ends[end];
        excluded = end == TK_END_EXCLUDE;
    }
    *num_points = n;
    /* track_rejected() */
    if (excluded) return TK_TRACK_EXCLUDED;
    if (n == 1 && plan->min_points > 1) return TK_TRACK_NO_PROPAGATION;
    if (n < plan->min_points) return TK_TRACK_TOO_SHORT;
    for (size_t i = 0; i < r->num_include; ++i)
        if (!w->visited[i]) return TK_TRACK_MISSED_INCLUDE;
    return TK_TRACK_KEPT;
}

#endif
