/* One streamline, as MRtrix3's Exec grows it whatever the algorithm: the seed's checks
 * (tracking/method.cpp check_seed()), the method's first direction and steps (SD_STREAM:
 * tracking_sdstream.c; iFOD1: tracking_ifod1.c), the regions after each step
 * (tracking/exec.h iterate()), both halves through the seed and the tests that drop a
 * streamline (exec.h gen_track(), gen_track_unidir(), track_rejected()). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tracking_internal.h"

tk_status tk_tracking_work_init(tk_tracking_work *w, const tk_tracking_plan *plan, size_t num_include)
{
    memset(w, 0, sizeof *w);
    w->cap = 1024;
    w->pts = malloc(w->cap * 3 * sizeof *w->pts);
    w->visited = calloc(num_include ? num_include : 1, 1);
    w->values = malloc((size_t)plan->k * sizeof *w->values);
    if (!w->pts || !w->visited || !w->values) {
        tk_tracking_work_free(w);
        return tk_set_error(TK_ERR_MEMORY, "out of memory for a tracking thread's scratch");
    }
    return TK_OK;
}

void tk_tracking_work_free(tk_tracking_work *w)
{
    free(w->pts), free(w->visited), free(w->values);
    w->pts = NULL, w->visited = NULL, w->values = NULL;
}

static int push_point(tk_tracking_work *w, size_t *n, const double *p)
{
    if (*n == w->cap) {
        double *grown = realloc(w->pts, 2 * w->cap * 3 * sizeof *grown);
        if (!grown) return 0;
        w->pts = grown, w->cap *= 2;
    }
    memcpy(w->pts + 3 * *n, p, 3 * sizeof *p);
    ++*n;
    return 1;
}

static void visit_includes(const tk_tracking_field *f, tk_tracking_work *w, const double *p)
{
    const tk_tracking_regions *r = f->regions;
    for (size_t i = 0; i < r->num_include; ++i)
        if (!w->visited[i] && tk_tracking_mask_contains(f->plan, r->include[i], p)) w->visited[i] = 1;
}

/* A step of one half (-1: it goes on; else why it ended). */
static int iterate(const tk_tracking_field *f, tk_tracking_work *w, double *pos, double *dir, tk_philox *rng)
{
    const tk_tracking_plan *plan = f->plan;
    const int end = plan->opts.algorithm == TK_TRACK_IFOD1 ? tk_tracking_ifod1_next(f, w, pos, dir, rng)
                                                           : tk_tracking_sd_stream_next(f, w, pos, dir);
    if (end != -1) return end;
    const tk_tracking_regions *r = f->regions;
    if (r->stop_mask && !tk_tracking_mask_contains(plan, r->stop_mask, pos)) return TK_END_EXIT_MASK;
    if (r->exclude && tk_tracking_mask_contains(plan, r->exclude, pos)) return TK_END_EXCLUDE;
    visit_includes(f, w, pos);
    return -1;
}

/* One half from pos along dir, appending to w->pts; how it ended, or -2 out of memory.
 * The point where a half ends joins it only where MRtrix3's term_add_to_tck says so: after
 * entering an exclusion region (the streamline is dropped anyway) and at the length limit;
 * a step that leaves the image, the mask or the model is not taken. */
static int grow_half(const tk_tracking_field *f, tk_tracking_work *w, double *pos, double *dir, tk_philox *rng,
                     size_t *n)
{
    for (;;) {
        const int end = iterate(f, w, pos, dir, rng);
        if (end == -1 || end == TK_END_EXCLUDE)
            if (!push_point(w, n, pos)) return -2;
        if (end != -1) return end;
        if (*n >= f->plan->max_points) return TK_END_MAX_LENGTH;
    }
}

static void reverse_points(double *p, size_t n)
{
    for (size_t i = 0, j = n - 1; i < j; ++i, --j)
        for (int a = 0; a < 3; ++a) {
            const double t = p[3 * i + a];
            p[3 * i + a] = p[3 * j + a], p[3 * j + a] = t;
        }
}

int tk_tracking_streamline(const tk_tracking_field *f, const double *seed, tk_philox *rng, tk_tracking_work *w,
                          size_t *num_points)
{
    const tk_tracking_plan *plan = f->plan;
    const tk_tracking_options *o = &plan->opts;
    const tk_tracking_regions *r = f->regions;
    *num_points = 0;
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
    visit_includes(f, w, seed);
    size_t n = 0;
    push_point(w, &n, seed); /* the scratch holds at least one point */
    const double seed_dir[3] = {dir[0], dir[1], dir[2]};
    double pos[3] = {seed[0], seed[1], seed[2]};
    int end = grow_half(f, w, pos, dir, rng, &n);
    if (end == -2) return -1;
    ++w->ends[end];
    int excluded = end == TK_END_EXCLUDE;
    if (!excluded && !o->unidirectional) {
        reverse_points(w->pts, n);
        memcpy(pos, seed, sizeof pos);
        for (int a = 0; a < 3; ++a) dir[a] = -seed_dir[a];
        end = grow_half(f, w, pos, dir, rng, &n);
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
