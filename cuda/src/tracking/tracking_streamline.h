/* One streamline on a CPU thread (or a CUDA thread a seed): tracking_streamline_body.h's
 * growth with the thread's series (w->values), SD_STREAM's (tracking_sdstream.h) and iFOD1's
 * (tracking_ifod1.h) methods, and points in a scratch that grows. */
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

TK_HD static inline void tk_tracking_reverse_points(double *p, size_t n)
{
    for (size_t i = 0, j = n - 1; i < j; ++i, --j)
        for (int a = 0; a < 3; ++a) {
            const double t = p[3 * i + a];
            p[3 * i + a] = p[3 * j + a], p[3 * j + a] = t;
        }
}

/* The series in w->values; the method by the plan's algorithm. */
#define TK_SL_FN TK_HD static inline
#define TK_SL_SFX(name) tk_tracking_##name
#define TK_SL_WORK tk_tracking_work
#define TK_SL_CTX_PARAMS
#define TK_SL_CTX_ARGS
#define TK_SL_SERIES(f, w, p) tk_tracking_interpolate(f, p, (w)->values)
#define TK_SL_INIT(f, w, dir, given, rng)                                                                  \
    ((f)->plan->opts.algorithm == TK_TRACK_IFOD1 ? tk_tracking_ifod1_init(f, w, dir, given, rng)           \
                                                 : tk_tracking_sd_stream_init(f, w, dir, given, rng))
#define TK_SL_NEXT(f, w, pos, dir, rng)                                                                    \
    ((f)->plan->opts.algorithm == TK_TRACK_IFOD1 ? tk_tracking_ifod1_next(f, w, pos, dir, rng)             \
                                                 : tk_tracking_sd_stream_next(f, w, pos, dir))
#define TK_SL_PUSH(w, n, p) tk_tracking_push_point(w, n, p)
#define TK_SL_REVERSE(w, n) tk_tracking_reverse_points((w)->pts, n)
#include "tracking_streamline_body.h"

#endif
