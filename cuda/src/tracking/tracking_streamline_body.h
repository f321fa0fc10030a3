/* One streamline, as MRtrix3's Exec grows it whatever the algorithm: the seed's checks
 * (tracking/method.cpp check_seed()), the method's first direction and steps, the regions
 * after each step (tracking/exec.h iterate()), both halves through the seed and the tests
 * that drop a streamline (exec.h gen_track(), gen_track_unidir(), track_rejected()).
 *
 * No include guard: the text of both trackers, included once by each, so that the rules a
 * streamline follows are written once: tracking_streamline.h (a CPU thread, or a CUDA thread,
 * a seed) and tracking_warp.cuh (a CUDA warp a seed).  Define before including:
 *   TK_SL_FN                the functions' specifiers
 *   TK_SL_SFX(name)         their names
 *   TK_SL_WORK              the scratch type: pts, visited, ends[], step
 *   TK_SL_CTX_PARAMS        the tracker's own parameters after the scratch (", type name, ..."
 *                           or nothing); TK_SL_NEXT, TK_SL_INIT, TK_SL_SERIES and
 *                           TK_SL_REVERSE may use them by name
 *   TK_SL_CTX_ARGS          the same names as arguments (", name, ..." or nothing)
 *   TK_SL_SERIES(f, w, p)   the series at world p into the tracker's place for it; 1 inside
 *   TK_SL_INIT(f, w, dir, given, rng)  the method's init() on that series (1: a good seed)
 *   TK_SL_NEXT(f, w, pos, dir, rng)    the method's next() (-1: it goes on)
 *   TK_SL_PUSH(w, n, p)     appends point p (0: no room)
 *   TK_SL_REVERSE(w, n)     reverses the first n points
 * They are undefined at the end. */

TK_SL_FN void TK_SL_SFX(visit_includes)(const tk_tracking_field *f, TK_SL_WORK *w, const double *p)
{
    const tk_tracking_regions *r = f->regions;
    for (size_t i = 0; i < r->num_include; ++i)
        if (!w->visited[i] && tk_tracking_mask_contains(f->plan, r->include[i], p)) w->visited[i] = 1;
}

/* A step of one half (-1: it goes on; else why it ended). */
TK_SL_FN int TK_SL_SFX(iterate)(const tk_tracking_field *f, TK_SL_WORK *w, double *pos, double *dir,
                                tk_philox *rng TK_SL_CTX_PARAMS)
{
    const tk_tracking_plan *plan = f->plan;
    const int end = TK_SL_NEXT(f, w, pos, dir, rng);
    if (end != -1) return end;
    const tk_tracking_regions *r = f->regions;
    if (r->stop_mask && !tk_tracking_mask_contains(plan, r->stop_mask, pos)) return TK_END_EXIT_MASK;
    if (r->exclude && tk_tracking_mask_contains(plan, r->exclude, pos)) return TK_END_EXCLUDE;
    TK_SL_SFX(visit_includes)(f, w, pos);
    return -1;
}

/* After a step of a half (end: iterate's answer, pos where it went): -1 to go on, else how
 * the half ended, or -2 out of room.  The point where a half ends joins it only where
 * MRtrix3's term_add_to_tck says so: after entering an exclusion region (the streamline is
 * dropped anyway) and at the length limit; a step that leaves the image, the mask or the
 * model is not taken. */
TK_SL_FN int TK_SL_SFX(after_step)(const tk_tracking_field *f, TK_SL_WORK *w, const double *pos, int end, size_t *n)
{
    if (end == -1 || end == TK_END_EXCLUDE)
        if (!TK_SL_PUSH(w, n, pos)) return -2;
    if (end != -1) return end;
    if (*n >= f->plan->max_points) return TK_END_MAX_LENGTH;
    return -1;
}

/* One half from pos along dir, appending to w->pts; how it ended, or -2 out of room. */
TK_SL_FN int TK_SL_SFX(grow_half)(const tk_tracking_field *f, TK_SL_WORK *w, double *pos, double *dir,
                                  tk_philox *rng TK_SL_CTX_PARAMS, size_t *n)
{
    for (;;) {
        const int end = TK_SL_SFX(after_step)(f, w, pos, TK_SL_SFX(iterate)(f, w, pos, dir, rng TK_SL_CTX_ARGS), n);
        if (end != -1) return end;
    }
}

/* The seed's checks (check_seed()) and the method's init(): -1 with the streamline begun (the
 * seed its one point, *n = 1, dir its first direction, the include regions at the seed
 * marked), else why the seed gives no streamline. */
TK_SL_FN int TK_SL_SFX(begin)(const tk_tracking_field *f, const double *seed, tk_philox *rng,
                              TK_SL_WORK *w TK_SL_CTX_PARAMS, double *dir, size_t *n)
{
    const tk_tracking_plan *plan = f->plan;
    const tk_tracking_options *o = &plan->opts;
    const tk_tracking_regions *r = f->regions;
    *n = 0;
    w->step = 0;
    /* check_seed(): inside the stopping mask, outside the exclusion regions */
    if (r->stop_mask && !tk_tracking_mask_contains(plan, r->stop_mask, seed)) return TK_TRACK_BAD_SEED;
    if (r->exclude && tk_tracking_mask_contains(plan, r->exclude, seed)) return TK_TRACK_BAD_SEED;
    /* the method's init(): the data there and a first direction */
    if (!TK_SL_SERIES(f, w, seed)) return TK_TRACK_BAD_SEED;
    const int given = o->seed_direction[0] != 0 || o->seed_direction[1] != 0 || o->seed_direction[2] != 0;
    if (given) {
        const double *s = o->seed_direction, len = sqrt(s[0] * s[0] + s[1] * s[1] + s[2] * s[2]);
        for (int a = 0; a < 3; ++a) dir[a] = s[a] / len;
    }
    if (!TK_SL_INIT(f, w, dir, given, rng)) return TK_TRACK_BAD_SEED;
    /* gen_track(): the seed first */
    memset(w->visited, 0, r->num_include ? r->num_include : 1);
    TK_SL_SFX(visit_includes)(f, w, seed);
    TK_SL_PUSH(w, n, seed); /* the scratch holds at least one point */
    return -1;
}

/* Whether the second half follows a first that ended with `end`: not after an exclusion
 * region (the streamline is dropped), nor for one-way tracking.  (w: the tracker's scratch,
 * unused, which names the tracker for a templated one.) */
TK_SL_FN int TK_SL_SFX(has_second_half)(const tk_tracking_field *f, const TK_SL_WORK *w, int end)
{
    (void)w;
    return end != TK_END_EXCLUDE && !f->plan->opts.unidirectional;
}

/* track_rejected(): the grown streamline's n points kept (TK_TRACK_KEPT) or why not. */
TK_SL_FN int TK_SL_SFX(finish)(const tk_tracking_field *f, const TK_SL_WORK *w, size_t n, int excluded)
{
    const tk_tracking_plan *plan = f->plan;
    const tk_tracking_regions *r = f->regions;
    if (excluded) return TK_TRACK_EXCLUDED;
    if (n == 1 && plan->min_points > 1) return TK_TRACK_NO_PROPAGATION;
    if (n < plan->min_points) return TK_TRACK_TOO_SHORT;
    for (size_t i = 0; i < r->num_include; ++i)
        if (!w->visited[i]) return TK_TRACK_MISSED_INCLUDE;
    return TK_TRACK_KEPT;
}

/* Grows the streamline of one seed at world `seed` with random stream rng into w->pts
 * (*num_points points); returns TK_TRACK_KEPT or why it was dropped, or -1 out of room.
 * gen_track(): the seed, the half along the first direction, then the points reversed and
 * the half along its opposite from the seed.  (tracking_group.cuh runs the same pieces a
 * step at a time.) */
TK_SL_FN int TK_SL_SFX(streamline)(const tk_tracking_field *f, const double *seed, tk_philox *rng,
                                   TK_SL_WORK *w TK_SL_CTX_PARAMS, size_t *num_points)
{
    *num_points = 0;
    double dir[3];
    size_t n = 0;
    const int bad = TK_SL_SFX(begin)(f, seed, rng, w TK_SL_CTX_ARGS, dir, &n);
    if (bad != -1) return bad;
    const double seed_dir[3] = {dir[0], dir[1], dir[2]};
    double pos[3] = {seed[0], seed[1], seed[2]};
    int end = TK_SL_SFX(grow_half)(f, w, pos, dir, rng TK_SL_CTX_ARGS, &n);
    if (end == -2) return -1;
    ++w->ends[end];
    int excluded = end == TK_END_EXCLUDE;
    if (TK_SL_SFX(has_second_half)(f, w, end)) {
        TK_SL_REVERSE(w, n);
        for (int a = 0; a < 3; ++a) pos[a] = seed[a], dir[a] = -seed_dir[a];
        end = TK_SL_SFX(grow_half)(f, w, pos, dir, rng TK_SL_CTX_ARGS, &n);
        if (end == -2) return -1;
        ++w->ends[end];
        excluded = end == TK_END_EXCLUDE;
    }
    *num_points = n;
    return TK_SL_SFX(finish)(f, w, n, excluded);
}

#undef TK_SL_FN
#undef TK_SL_SFX
#undef TK_SL_WORK
#undef TK_SL_CTX_PARAMS
#undef TK_SL_CTX_ARGS
#undef TK_SL_SERIES
#undef TK_SL_INIT
#undef TK_SL_NEXT
#undef TK_SL_PUSH
#undef TK_SL_REVERSE
