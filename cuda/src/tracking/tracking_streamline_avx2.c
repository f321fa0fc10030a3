/* tk_tracking_streamline (tracking_streamline.h) compiled a second time for AVX2, which
 * tracking_execute.c calls where the CPU has it (TK_TRACK_NO_AVX2=1 keeps the baseline build
 * for A/B runs).  Why a translation unit and not target_clones: the step's hot functions
 * (the interpolation, the SH-to-tensor product, the climb's rows, iFOD1's four-lane
 * polynomial) are static inline headers that GCC inlines or not as it likes; compiled here
 * with -mavx2 every one of them is AVX2 code, where a clone would take AVX2 only into what
 * is inlined into it.
 *
 * The same streamlines to the bit: this file is built with -mavx2 -mno-fma (CMakeLists.txt),
 * so no a * b + c is contracted into a fused multiply-add (the project builds with
 * -ffp-contract=fast, harmless only where the target has no FMA), and without -ffast-math no
 * sum is reassociated: the wider vectors only run the same IEEE operations on more
 * independent values at once.  sin, cos, sqrt and division round as the baseline build's
 * (the C library's functions; sqrt and division are correctly rounded in every ISA). */
#include "tracking_internal.h"
#include "tracking_streamline.h"

#if !defined(__AVX2__) || defined(__FMA__)
#error "tracking_streamline_avx2.c must be compiled with -mavx2 -mno-fma"
#endif

int tk_tracking_streamline_avx2(const tk_tracking_field *f, const double *seed, tk_philox *rng, tk_tracking_work *w,
                                size_t *n)
{
    return tk_tracking_streamline(f, seed, rng, w, n);
}

/* ---- SD_STREAM, several streamlines a thread (session 22) ------------------------------
 *
 * A step's climb (fibers_newton.h's nt_polish, tracking_peak.h's three climbs) is one chain of
 * dependent divisions, square roots and tests: one streamline's climb keeps the core waiting
 * on latencies.  Here a thread grows TK_TRACK_HOST_LANES streamlines at once, a step each in
 * turn, and their climbs advance in turn one evaluation of the series' derivatives at a time,
 * so that the core has independent work from another streamline while one waits.  Each
 * streamline's operations are those of tk_tracking_streamline, in its order, on its own
 * scratch: the same doubles (the climb below is nt_polish transcribed as a resumable loop). */

/* nt_polish_track(t, x, &value, &iterations, 0.0, 0.0, TK_TRACK_PEAK_MAX_STEP, NULL) climbed up
 * to TK_TRACK_PEAK_CLIMBS times as tk_tracking_peak does, as a machine that stops after each
 * evaluation at a new point.  first_reach 0, no cutoff and leash 0 (cos_leash -2: its test never
 * holds) drop those branches. */
typedef struct {
    track_tensor t;
    double x[3], u[3], w[3], g[2], h[3], xn[3];
    double lambda, scale, s0, s1, len, value;
    int it, halvings, flat, fresh, half, pure, climb, strict;
    int resume; /* 0: a climb begins; 1: the trial at xn has its value */
} lane_climb;

/* Advances c to its next evaluation at a new point; 1 where the climbs are over (c->strict,
 * c->value and c->x as tk_tracking_peak's strict, value and x), else 0. */
static int lane_climb_advance(lane_climb *c)
{
    const double max_step = TK_TRACK_PEAK_MAX_STEP;
    int iterations;
    if (c->resume == 1) goto trial_done;
climb_begins:
    c->halvings = 0, c->it = 0, c->flat = 0, c->fresh = 0;
iteration:
    if (!(c->it < TK_NEWTON_MAX_ITERATIONS)) goto loop_end;
    {
        nt_tangent_basis_track(c->x, c->u, c->w);
        c->lambda = nt_sphere_derivatives_track(&c->t, c->x, c->u, c->w, c->g, c->h);
        c->fresh = 1;
        const double *h = c->h, *g = c->g;
        double scale = fabs(c->lambda) + fabs(h[0]) + fabs(h[2]) + 1e-300;
        double mean = 0.5 * (h[0] + h[2]), rad = sqrt(0.25 * (h[0] - h[2]) * (h[0] - h[2]) + h[1] * h[1]);
        double top = mean + rad, shift = top > -1e-6 * scale ? top + 0.1 * scale : 0.0;
        c->flat = fabs(top) < 1e-6 * scale ? c->flat + 1 : 0;
        if (c->flat == 2) goto loop_end;
        double h0 = h[0] - shift, h2 = h[2] - shift, det = h0 * h2 - h[1] * h[1];
        double s0 = -(h2 * g[0] - h[1] * g[1]) / det, s1 = -(h0 * g[1] - h[1] * g[0]) / det;
        double len = sqrt(s0 * s0 + s1 * s1);
        c->pure = shift == 0.0 && len <= max_step;
        if (!(len > 1e-13)) goto loop_end;
        if (len > max_step) s0 *= max_step / len, s1 *= max_step / len, len = max_step;
        c->scale = scale, c->s0 = s0, c->s1 = s1, c->len = len, c->half = 0;
    }
trial:
    for (int i = 0; i < 3; ++i) c->xn[i] = c->x[i] + c->s0 * c->u[i] + c->s1 * c->w[i];
    nt_normalize3_track(c->xn);
    c->value = nt_value_from_derivs_track(&c->t, c->xn);
    c->resume = 1;
    return 0;
trial_done:
    c->resume = 0;
    if (c->value >= c->lambda - 1e-15 * c->scale) {
        c->x[0] = c->xn[0], c->x[1] = c->xn[1], c->x[2] = c->xn[2];
        c->fresh = 0;
        if (c->pure && c->half == 0 && c->len < TK_NEWTON_CONVERGED) {
            c->strict = 1; /* c->value: the amplitude */
            return 1;
        }
        if (c->len < 1e-13) {
            ++c->it;
            goto loop_end;
        }
        ++c->it;
        goto iteration;
    }
    if (c->len < 1e-13 || c->halvings >= TK_NEWTON_MAX_HALVINGS) goto loop_end;
    c->s0 *= 0.5, c->s1 *= 0.5, c->len *= 0.5, ++c->half, ++c->halvings;
    goto trial;
loop_end:
    iterations = c->it;
    if (!c->fresh) {
        nt_tangent_basis_track(c->x, c->u, c->w);
        c->lambda = nt_sphere_derivatives_track(&c->t, c->x, c->u, c->w, c->g, c->h);
    }
    {
        const double *h = c->h, *g = c->g;
        double scale = fabs(c->lambda) + fabs(h[0]) + fabs(h[2]) + 1e-300;
        double mean = 0.5 * (h[0] + h[2]), rad = sqrt(0.25 * (h[0] - h[2]) * (h[0] - h[2]) + h[1] * h[1]);
        c->value = c->lambda;
        c->strict = sqrt(g[0] * g[0] + g[1] * g[1]) < 1e-8 * scale && mean + rad < -1e-6 * scale;
    }
    if (c->strict == 1 || iterations < TK_NEWTON_MAX_ITERATIONS) return 1;
    if (++c->climb < TK_TRACK_PEAK_CLIMBS) goto climb_begins;
    return 1;
}

/* One streamline in flight on a lane. */
typedef struct {
    int active, half, excluded;
    uint64_t id;
    tk_philox rng;
    double seed[3], seed_dir[3], pos[3], dir[3];
    size_t n;
    tk_tracking_work *w;
    int interpolated, climbing, has_peak; /* this step's: the series found, the climb running, a peak to find */
    double iso, scale;
    lane_climb c;
} lane_state;

/* SD_STREAM's next() once the lane's climb is done (tk_tracking_sd_stream_next's rest). */
static inline int lane_next(const tk_tracking_field *f, double *pos, double *dir, lane_state *lane)
{
    if (!lane->interpolated) return TK_END_EXIT_IMAGE;
    const double prev[3] = {dir[0], dir[1], dir[2]};
    const double amp = lane->has_peak ? tk_tracking_peak_found(lane->c.strict, lane->iso, lane->scale, lane->c.value,
                                                               lane->c.x, dir)
                                      : 0;
    if (!tk_tracking_sd_peak_holds(f->plan, amp)) return TK_END_MODEL;
    return tk_tracking_sd_stream_move(f->plan, prev, pos, dir);
}

/* tracking_streamline_body.h's pieces with that next(): begin() (the seed's checks and its
 * first direction, the scalar climb) and iterate() as tk_tracking_streamline runs them. */
#define TK_SL_FN static inline
#define TK_SL_SFX(name) tk_lanes_##name
#define TK_SL_WORK tk_tracking_work
#define TK_SL_CTX_PARAMS , lane_state *lane
#define TK_SL_CTX_ARGS , lane
#define TK_SL_SERIES(f, w, p) tk_tracking_interpolate(f, p, (w)->values)
#define TK_SL_INIT(f, w, dir, given, rng) ((void)lane, tk_tracking_sd_stream_init(f, w, dir, given, rng))
#define TK_SL_NEXT(f, w, pos, dir, rng) ((void)(w), (void)(rng), lane_next(f, pos, dir, lane))
#define TK_SL_PUSH(w, n, p) tk_tracking_push_point(w, n, p)
#define TK_SL_REVERSE(w, n) tk_tracking_reverse_points((w)->pts, n)
#include "tracking_streamline_body.h"

/* The series at the lane's position and its climb's start (tk_tracking_sd_stream_next up to the
 * climb). */
static void lane_prepare(const tk_tracking_field *f, lane_state *lane)
{
    tk_tracking_work *w = lane->w;
    lane->climbing = lane->has_peak = 0;
    lane->interpolated = tk_tracking_interpolate(f, lane->pos, w->values);
    if (!lane->interpolated) return;
    lane->c.value = 0;
    if (!tk_tracking_peak_setup(f->plan, w->values, lane->dir, &w->peak, &lane->c.t, lane->c.x, &lane->iso,
                                &lane->scale))
        return;
    lane->c.strict = 0, lane->c.climb = 0, lane->c.resume = 0;
    lane->has_peak = lane->climbing = 1;
}

int tk_tracking_streamlines_lanes_avx2(const tk_tracking_field *f, tk_tracking_work *works, tk_tracking_lane_feed feed,
                                       tk_tracking_lane_done done, void *user)
{
    lane_state lanes[TK_TRACK_HOST_LANES];
    for (int l = 0; l < TK_TRACK_HOST_LANES; ++l) lanes[l].active = 0, lanes[l].w = &works[l];
    int more = 1;
    for (;;) {
        /* idle lanes take the next seeds (a seed that gives no streamline is done at once) */
        for (int l = 0; l < TK_TRACK_HOST_LANES; ++l) {
            lane_state *lane = &lanes[l];
            while (!lane->active && more) {
                if (!feed(user, &lane->id, &lane->rng, lane->seed)) {
                    more = 0;
                    break;
                }
                const int bad = tk_lanes_begin(f, lane->seed, &lane->rng, lane->w, lane, lane->dir, &lane->n);
                if (bad != -1) {
                    if (!done(user, lane->id, bad, lane->w, 0)) return -1;
                    continue;
                }
                for (int a = 0; a < 3; ++a) lane->seed_dir[a] = lane->dir[a], lane->pos[a] = lane->seed[a];
                lane->half = 0, lane->excluded = 0, lane->active = 1;
            }
        }
        int active = 0, climbing = 0;
        for (int l = 0; l < TK_TRACK_HOST_LANES; ++l)
            if (lanes[l].active) {
                ++active;
                lane_prepare(f, &lanes[l]);
                climbing += lanes[l].climbing;
            }
        if (!active) return 0;
        /* the climbs in turn, an evaluation each */
        while (climbing)
            for (int l = 0; l < TK_TRACK_HOST_LANES; ++l)
                if (lanes[l].climbing && lane_climb_advance(&lanes[l].c)) lanes[l].climbing = 0, --climbing;
        /* the rest of each step; a half or a streamline that ends (tk_tracking_streamline) */
        for (int l = 0; l < TK_TRACK_HOST_LANES; ++l) {
            lane_state *lane = &lanes[l];
            if (!lane->active) continue;
            tk_tracking_work *w = lane->w;
            const int end = tk_lanes_after_step(
                f, w, lane->pos, tk_lanes_iterate(f, w, lane->pos, lane->dir, &lane->rng, lane), &lane->n);
            if (end == -1) continue;
            if (end == -2) {
                done(user, lane->id, -1, w, 0);
                return -1;
            }
            ++w->ends[end];
            lane->excluded = end == TK_END_EXCLUDE;
            if (!lane->half && tk_lanes_has_second_half(f, w, end)) {
                tk_tracking_reverse_points(w->pts, lane->n);
                for (int a = 0; a < 3; ++a) lane->pos[a] = lane->seed[a], lane->dir[a] = -lane->seed_dir[a];
                lane->half = 1;
                continue;
            }
            lane->active = 0;
            if (!done(user, lane->id, tk_lanes_finish(f, w, lane->n, lane->excluded), w, lane->n)) return -1;
        }
    }
}
