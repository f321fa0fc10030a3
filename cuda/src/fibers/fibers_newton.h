/* Newton's method on the sphere for one local maximum of A x^m, shared by the CPU and the
 * CUDA peak finders so that both polish a candidate the same way.
 *
 * No include guard: included once per evaluator.  Define before including:
 *   TK_NEWTON_FN             specifiers of the functions that take an evaluator (e.g.
 *                            `static`, or `template <int M> static __device__`)
 *   TK_NEWTON_UTIL           specifiers of the plain vector helpers
 *   TK_NEWTON_CTX            the evaluator type
 *   TK_NEWTON_SFX(name)      the functions' name suffix
 *   TK_NEWTON_ORDER(t)       the order m of t
 *   TK_NEWTON_DERIVS(t, x, y, h)  y[3] = A x^(m-1) and h[9] = A x^(m-2)
 *   TK_NEWTON_VALUE(t, x)         A x^m (optional: without it, x . A x^(m-1) from
 *                                 TK_NEWTON_DERIVS, for evaluators that cache their last point)
 * They are undefined at the end, so that a file may instantiate it for several evaluators.
 */

TK_NEWTON_UTIL double TK_NEWTON_SFX(nt_dot3)(const double *a, const double *b)
{
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

TK_NEWTON_UTIL void TK_NEWTON_SFX(nt_normalize3)(double *v)
{
    double n = sqrt(TK_NEWTON_SFX(nt_dot3)(v, v));
    v[0] /= n, v[1] /= n, v[2] /= n;
}

#ifndef TK_NEWTON_VALUE
/* A x^m as x . A x^(m-1): the value at the point whose derivatives the next iteration asks
 * for (the backtracking test's point), so an evaluator that keeps its last point's
 * derivatives computes them once. */
TK_NEWTON_FN double TK_NEWTON_SFX(nt_value_from_derivs)(const TK_NEWTON_CTX *t, const double *x)
{
    double y[3], h[9];
    TK_NEWTON_DERIVS(t, x, y, h);
    return x[0] * y[0] + x[1] * y[1] + x[2] * y[2];
}
#define TK_NEWTON_VALUE(t, x) TK_NEWTON_SFX(nt_value_from_derivs)(t, x)
#endif

/* u, w: an orthonormal basis of the plane orthogonal to unit x (fibers_internal.h's, which
 * the fit stencils use too). */
TK_NEWTON_UTIL void TK_NEWTON_SFX(nt_tangent_basis)(const double *x, double *u, double *w)
{
    tk_fibers_tangent_basis(x, u, w);
}

/* Tangent gradient g and Hessian h (2 x 2, both divided by m) of A x^m on the sphere at x;
 * returns A x^m. */
TK_NEWTON_FN double TK_NEWTON_SFX(nt_sphere_derivatives)(const TK_NEWTON_CTX *t, const double *x, const double *u,
                                                         const double *w, double *g, double *h)
{
    const int m = TK_NEWTON_ORDER(t);
    double y[3], mat[9], mu[3], mw[3];
    TK_NEWTON_DERIVS(t, x, y, mat);
    double lambda = TK_NEWTON_SFX(nt_dot3)(x, y);
    for (int i = 0; i < 3; ++i) {
        mu[i] = mat[i * 3] * u[0] + mat[i * 3 + 1] * u[1] + mat[i * 3 + 2] * u[2];
        mw[i] = mat[i * 3] * w[0] + mat[i * 3 + 1] * w[1] + mat[i * 3 + 2] * w[2];
    }
    g[0] = TK_NEWTON_SFX(nt_dot3)(u, y), g[1] = TK_NEWTON_SFX(nt_dot3)(w, y);
    h[0] = (m - 1) * TK_NEWTON_SFX(nt_dot3)(u, mu) - lambda;
    h[1] = (m - 1) * TK_NEWTON_SFX(nt_dot3)(u, mw);
    h[2] = (m - 1) * TK_NEWTON_SFX(nt_dot3)(w, mw) - lambda;
    return lambda;
}

/* At most this many Newton iterations, and this many step halvings over all of them, per
 * candidate: a start within a grid spacing of a strict maximum converges in 3-6 iterations
 * and rarely halves, so the budget only bounds the candidates that sit on something flatter
 * (a ridge or ring of an axially symmetric lobe, a near-degenerate saddle), whose climb
 * would otherwise crawl on for the full budget of a general-purpose optimizer. */
#ifndef TK_NEWTON_MAX_ITERATIONS
#define TK_NEWTON_MAX_ITERATIONS 24
#define TK_NEWTON_MAX_HALVINGS 48
#define TK_NEWTON_CONVERGED 1e-5
#endif

/* nt_polish's loop, an iteration at a time: a climb's state between iterations, so that a
 * caller can run many climbs side by side and start a new one wherever one ends (the CUDA
 * finder's climbing kernels give a lane whose climb ended the next candidate while the
 * other lanes of its warp climb on: climbs take 1 to 25 iterations, and a warp that climbs
 * 32 at once otherwise waits for its longest).  Each step is the loop body of the one-piece
 * climb, the same arithmetic in the same order, so the answers are the same to the bit. */
#ifndef TK_NEWTON_CLIMB_STATE
#define TK_NEWTON_CLIMB_STATE
typedef struct {
    double x[3], start[3];                    /* where the climb is, and where it began */
    double cos_leash, max_step, first_reach;  /* nt_polish's arguments */
    double lambda, g[2], h[3];                /* A x^m and the tangent derivatives at x, where fresh */
    int halvings, it, flat, fresh;
} tk_newton_climb;
/* nt_climb_step's answers but nt_polish's (1, 0, -1, -2): the climb goes on; its loop ended
 * and nt_climb_end gives its answer (one place for that test, as in the one-piece loop) */
#define TK_NEWTON_CLIMBING 2
#define TK_NEWTON_ENDED 3
#endif

/* A climb from x (nt_polish's arguments) set up for nt_climb_step. */
TK_NEWTON_UTIL void TK_NEWTON_SFX(nt_climb_begin)(tk_newton_climb *c, const double *x, double first_reach,
                                                 double leash, double max_step)
{
    for (int i = 0; i < 3; ++i) c->x[i] = c->start[i] = x[i];
    c->cos_leash = leash > 0 ? cos(leash) : -2.0;
    c->max_step = max_step > 0 ? max_step : 0.1;
    c->first_reach = first_reach;
    c->lambda = 0, c->g[0] = c->g[1] = 0, c->h[0] = c->h[1] = c->h[2] = 0;
    c->halvings = c->it = c->flat = c->fresh = 0;
}

/* The climb's answer where its loop ended (nt_climb_step's TK_NEWTON_ENDED: flat, at the top,
 * no rise, or out of iterations): the strictness test at x. */
TK_NEWTON_FN int TK_NEWTON_SFX(nt_climb_end)(const TK_NEWTON_CTX *t, tk_newton_climb *c, double *amplitude,
                                            int *iterations)
{
    if (iterations) *iterations = c->it;
    /* the derivatives at x, unless the loop's last ones are (a flat or no-rise stop) */
    if (!c->fresh) {
        double u[3], w[3];
        TK_NEWTON_SFX(nt_tangent_basis)(c->x, u, w);
        c->lambda = TK_NEWTON_SFX(nt_sphere_derivatives)(t, c->x, u, w, c->g, c->h);
    }
    const double *g = c->g, *h = c->h;
    double scale = fabs(c->lambda) + fabs(h[0]) + fabs(h[2]) + 1e-300;
    double mean = 0.5 * (h[0] + h[2]), rad = sqrt(0.25 * (h[0] - h[2]) * (h[0] - h[2]) + h[1] * h[1]);
    *amplitude = c->lambda;
    /* a strict maximum: gradient zero and Hessian negative definite (beyond rounding) */
    return sqrt(g[0] * g[0] + g[1] * g[1]) < 1e-8 * scale && mean + rad < -1e-6 * scale;
}

/* One iteration of the climb: TK_NEWTON_CLIMBING while it goes on, TK_NEWTON_ENDED where
 * nt_climb_end answers, else nt_polish's answer (c->x where it ended, *amplitude and
 * *iterations as nt_polish sets them). */
TK_NEWTON_FN int TK_NEWTON_SFX(nt_climb_step)(const TK_NEWTON_CTX *t, tk_newton_climb *c, double *amplitude,
                                             int *iterations, const double *cutoff)
{
    const int m_order = TK_NEWTON_ORDER(t);
    double *x = c->x, *g = c->g, *h = c->h, u[3], w[3];
    TK_NEWTON_SFX(nt_tangent_basis)(x, u, w);
    const double lambda = c->lambda = TK_NEWTON_SFX(nt_sphere_derivatives)(t, x, u, w, g, h);
    c->fresh = 1;
    double scale = fabs(lambda) + fabs(h[0]) + fabs(h[2]) + 1e-300;
    /* largest eigenvalue of the 2 x 2 Hessian; shift it below zero if needed */
    double mean = 0.5 * (h[0] + h[2]), rad = sqrt(0.25 * (h[0] - h[2]) * (h[0] - h[2]) + h[1] * h[1]);
    double top = mean + rad, shift = top > -1e-6 * scale ? top + 0.1 * scale : 0.0;
    /* a curvature of zero to 1e-6 twice running: a ring or ridge of equal maxima (an
     * axially symmetric lobe's), where the shifted steps would crawl along for the whole
     * budget towards a point the strictness test below rejects anyway */
    c->flat = fabs(top) < 1e-6 * scale ? c->flat + 1 : 0;
    if (c->flat == 2) return TK_NEWTON_ENDED;
    double h0 = h[0] - shift, h2 = h[2] - shift, det = h0 * h2 - h[1] * h[1];
    double s0 = -(h2 * g[0] - h[1] * g[1]) / det, s1 = -(h0 * g[1] - h[1] * g[0]) / det;
    double len = sqrt(s0 * s0 + s1 * s1), xn[3];
    const double max_step = c->max_step;
    const int pure_newton = shift == 0.0 && len <= max_step;
    /* a start predicted near a maximum that is no such place: the caller starts again */
    if (c->it == 0 && c->first_reach > 0 && !(shift == 0.0 && len <= c->first_reach)) {
        if (iterations) *iterations = 1;
        return -1;
    }
    if (cutoff && pure_newton && 8.0 * cutoff[2] * len <= -(double)m_order * top &&
        lambda + 2.0 * cutoff[1] * len * len < cutoff[0]) {
        if (iterations) *iterations = c->it + 1;
        *amplitude = lambda;
        return -2;
    }
    if (!(len > 1e-13)) return TK_NEWTON_ENDED; /* at the maximum (or a NaN step: keep x) */
    if (len > max_step) s0 *= max_step / len, s1 *= max_step / len, len = max_step;
    int half = 0, rose = 0;
    double value = lambda;
    for (;;) {
        for (int i = 0; i < 3; ++i) xn[i] = x[i] + s0 * u[i] + s1 * w[i];
        TK_NEWTON_SFX(nt_normalize3)(xn);
        value = TK_NEWTON_VALUE(t, xn);
        if (value >= lambda - 1e-15 * scale) {
            rose = 1;
            break;
        }
        if (len < 1e-13 || c->halvings >= TK_NEWTON_MAX_HALVINGS) break;
        s0 *= 0.5, s1 *= 0.5, len *= 0.5, ++half, ++c->halvings;
    }
    if (!rose) return TK_NEWTON_ENDED;
    x[0] = xn[0], x[1] = xn[1], x[2] = xn[2];
    c->fresh = 0;
    if (TK_NEWTON_SFX(nt_dot3)(x, c->start) < c->cos_leash) {
        if (iterations) *iterations = c->it + 1;
        return -1;
    }
    if (pure_newton && half == 0 && len < TK_NEWTON_CONVERGED) {
        if (iterations) *iterations = c->it + 1;
        *amplitude = value;
        return 1;
    }
    if (len < 1e-13) {
        ++c->it;
        return TK_NEWTON_ENDED;
    }
    return ++c->it < TK_NEWTON_MAX_ITERATIONS ? TK_NEWTON_CLIMBING : TK_NEWTON_ENDED;
}

/* Climb from x to the local maximum; 1 if it ends at a strict local maximum.  Newton on the
 * sphere, with the Hessian shifted to negative definite where it is not (Levenberg-
 * Marquardt), steps of at most max_step (0.1 rad), and backtracking so that A x^m never falls.  The
 * start is a grid direction, within about a grid spacing (0.064 rad at lmax 8) of its
 * maximum: much longer steps could jump a valley to a higher neighbouring hill.
 * Convergence is quadratic near a strict maximum (error after a step about K len^2, K a
 * few units on these unit-scaled series): once a full, unhalved Newton step with no shift is
 * below TK_NEWTON_CONVERGED (1e-5 rad), the point it reaches is within about 1e-9 rad of the
 * maximum, far below what a float direction resolves; stop there with the value the
 * backtracking test computed, and no further round of derivatives: the Hessian that gave
 * that step was negative definite by a margin (no shift needed: its larger eigenvalue below
 * -1e-3 of the scale), which a move of 1e-5 rad cannot undo.  Where no step,
 * however short, raises A x^m above rounding, x is as high as double resolves: stop too.
 * A strict maximum needs the Hessian's larger eigenvalue below -1e-6 of the scale: a
 * ring or ridge (one zero curvature) whose rounding leaves a determinant of 1e-18 is not
 * one.  *iterations (iterations may be NULL): the Newton iterations taken.  first_reach > 0:
 * x is a predicted start (a model's maximum), and where the first iteration there needs a
 * shifted Hessian or a step longer than first_reach, the climb stops at once, x untouched,
 * and returns -1 (the prediction was wrong; the caller climbs from its own start).
 * leash > 0: the climb gives up, returning -1, once it is farther than leash (rad) from its
 * start: a climb that leaves its candidate's neighbourhood goes to a hill with a candidate of
 * its own.  max_step: the longest step (rad; 0.1 where 0).
 * cutoff (NULL: none) = {bar, m2, m3}: m2 and m3 bound the second and third derivatives of
 * A x^m along any great circle (tk_fibers_derivative_bounds).  Where a pure Newton step of
 * length len has m3 len <= |m top| / 8 (top: the tangent Hessian's larger eigenvalue, divided
 * by m as h is), Kantorovich's theorem (with a safety factor of 4 on m3) puts the strict
 * maximum this climb converges to within 2 len of x, so its value is at most A x^m +
 * m2 (2 len)^2 / 2; where that is below bar the climb stops there and returns -2 (*amplitude
 * the value at x): a maximum that cannot reach what the caller needs is not worth the
 * iterations that would place it to 1e-9 rad.
 * The iterations are nt_climb_step's, in turn. */
TK_NEWTON_FN int TK_NEWTON_SFX(nt_polish)(const TK_NEWTON_CTX *t, double *x, double *amplitude, int *iterations,
                                         double first_reach, double leash, double max_step, const double *cutoff)
{
    tk_newton_climb c;
    TK_NEWTON_SFX(nt_climb_begin)(&c, x, first_reach, leash, max_step);
    int answer;
    while ((answer = TK_NEWTON_SFX(nt_climb_step)(t, &c, amplitude, iterations, cutoff)) == TK_NEWTON_CLIMBING) {
    }
    if (answer == TK_NEWTON_ENDED) answer = TK_NEWTON_SFX(nt_climb_end)(t, &c, amplitude, iterations);
    x[0] = c.x[0], x[1] = c.x[1], x[2] = c.x[2];
    return answer;
}

/* Whether a shoulder candidate at x (a grid direction) is worth its climb on a leash: where
 * the Hessian there is negative definite, the Newton step says where the maximum of this hill
 * lies, and beyond the leash it is a larger lobe's, whose own candidate climbs to it (0, at
 * the price of one derivative).  Where the Hessian is indefinite (a flat bump on a slope, or a
 * ridge) no one step can tell (1). */
TK_NEWTON_FN int TK_NEWTON_SFX(nt_shoulder_reaches)(const TK_NEWTON_CTX *t, const double *x, double leash)
{
    double u[3], w[3], g[2], h[3];
    TK_NEWTON_SFX(nt_tangent_basis)(x, u, w);
    TK_NEWTON_SFX(nt_sphere_derivatives)(t, x, u, w, g, h);
    const double det = h[0] * h[2] - h[1] * h[1];
    if (!(h[0] < 0 && det > 0)) return 1;
    const double s0 = -(h[2] * g[0] - h[1] * g[1]) / det, s1 = -(h[0] * g[1] - h[1] * g[0]) / det;
    return s0 * s0 + s1 * s1 <= leash * leash;
}

/* The critical point of A x^m at the axis of an axially symmetric series, by pure Newton
 * steps from x, the axis its l = 2 band gives (tk_fibers_axial_axis, within about 1e-7 rad
 * of it): a symmetric series is stationary at its poles whether they are maxima, minima or
 * neither, so no ascent is wanted, only the point.  Returns 1 where x ends at a strict
 * local maximum (*amplitude its value; the test of nt_polish), 0 at a critical point that is
 * none, -1 where the steps do not settle within 1e-2 rad of the start in a few iterations
 * (then the series is no symmetric one, and the caller takes the general path). */
TK_NEWTON_FN int TK_NEWTON_SFX(nt_axis_point)(const TK_NEWTON_CTX *t, double *x, double *amplitude)
{
    double u[3], w[3], g[2], h[3], moved = 0;
    for (int it = 0; it < 4; ++it) {
        TK_NEWTON_SFX(nt_tangent_basis)(x, u, w);
        const double lambda = TK_NEWTON_SFX(nt_sphere_derivatives)(t, x, u, w, g, h);
        const double scale = fabs(lambda) + fabs(h[0]) + fabs(h[2]) + 1e-300, det = h[0] * h[2] - h[1] * h[1];
        if (!(fabs(det) > 1e-12 * scale * scale)) return -1; /* a flat pole: the general path decides */
        const double s0 = -(h[2] * g[0] - h[1] * g[1]) / det, s1 = -(h[0] * g[1] - h[1] * g[0]) / det;
        const double len = sqrt(s0 * s0 + s1 * s1);
        if (len < 1e-12) {
            const double mean = 0.5 * (h[0] + h[2]), rad = sqrt(0.25 * (h[0] - h[2]) * (h[0] - h[2]) + h[1] * h[1]);
            *amplitude = lambda;
            return sqrt(g[0] * g[0] + g[1] * g[1]) < 1e-8 * scale && mean + rad < -1e-6 * scale;
        }
        moved += len;
        if (!(moved < 1e-2)) return -1;
        for (int i = 0; i < 3; ++i) x[i] += s0 * u[i] + s1 * w[i];
        TK_NEWTON_SFX(nt_normalize3)(x);
    }
    return -1;
}

#undef TK_NEWTON_FN
#undef TK_NEWTON_UTIL
#undef TK_NEWTON_CTX
#undef TK_NEWTON_SFX
#undef TK_NEWTON_ORDER
#undef TK_NEWTON_DERIVS
#undef TK_NEWTON_VALUE
