/* Fiber directions on the CPU: every local maximum of an SH series on the sphere.
 *
 * Method: evaluate the series on a hemisphere grid (one matrix-vector product), take every
 * grid direction that is not below any neighbour (antipodes folded in), and polish each
 * by Newton's method on the sphere applied to the equivalent symmetric tensor A x^lmax
 * (its gradient A x^(lmax-1) and Hessian A x^(lmax-2)).  Polished maxima that coincide
 * are merged. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include "fibers_internal.h"
#include "fibers_plan.h"
#include "fibers_select.h"
#include "sshopm/sshopm_internal.h"
#include "tk_sshopm.h"

#include "common/tk_hd.h"
#include "common/precision_double.h"
#include "sshopm/sshopm_unrolled_gen.h"
#include "common/precision_end.h"

#define TK_MAX_CANDIDATES TK_FIBERS_MAX_CANDIDATES

/* The hot loops and the polynomial kernels also built for AVX2 + FMA (x86-64-v3), picked at
 * load time. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__SANITIZE_ADDRESS__)
#define TK_CPU_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define TK_CPU_CLONES
#endif

/* One voxel's tensor with the prescaled tables of the straight-line kernels for
 * lmax 2..8 (generated), or the reference index walk above that. */
typedef struct {
    int m;
    const double *a;
    /* orders 2-8: A x^(m-2)'s coefficients by monomial of degree m - 2 (in the generated
     * kernels' order: x0's power descending, then x1's), each row the six distinct entries
     * (00, 01, 02, 11, 12, 22; multinomial weights folded in) and two zeros, so that one
     * monomial feeds all six through two 4-wide multiply-adds */
    double rows[TK_UNROLLED_K2_8_3][8];
    /* The last derivatives: Newton's backtracking test evaluates the value at the point the
     * next iteration differentiates at, so each iteration takes one evaluation. */
    double last_x[3], last_y[3], last_h[9];
    int has_last;
} voxel_tensor;

static void vt_init(voxel_tensor *t, int m, const double *a)
{
    t->m = m, t->a = a, t->has_last = 0;
    double c2[6 * TK_UNROLLED_K2_8_3];
    switch (m) {
#define TK_CASE(M)                                                                                                     \
    case M: tk_unrolled_prescale2_##M##_3_d(a, c2); break;
        TK_CASE(2) TK_CASE(4) TK_CASE(6) TK_CASE(8)
#undef TK_CASE
    default: return;
    }
    const int k2 = m * (m - 1) / 2; /* monomials of degree m - 2 in three variables */
    for (int k = 0; k < k2; ++k) {
        for (int e = 0; e < 6; ++e) t->rows[k][e] = c2[e * k2 + k];
        t->rows[k][6] = t->rows[k][7] = 0;
    }
}

/* h = A x^(m-2) for m = 2..8 from the rows of vt_init: the monomials x0^a x1^b x2^c of
 * degree d = m - 2 from tables of powers, each times its row, summed 4 + 4 wide (the
 * generated kernel's 6 x 28 scalar multiply-adds and chained monomials took about three
 * times the instructions at lmax 8). */
typedef double tk_double4 __attribute__((vector_size(32)));
static inline __attribute__((always_inline)) void vt_hessian_rows(const voxel_tensor *t, int d, const double *x,
                                                                  double *h)
{
    double p0[7], p1[7], p2[7];
    p0[0] = p1[0] = p2[0] = 1;
#pragma GCC unroll 8
    for (int e = 1; e <= d; ++e) p0[e] = p0[e - 1] * x[0], p1[e] = p1[e - 1] * x[1], p2[e] = p2[e - 1] * x[2];
    tk_double4 lo = {0, 0, 0, 0}, hi = {0, 0, 0, 0};
    int k = 0;
#pragma GCC unroll 8
    for (int a = d; a >= 0; --a)
#pragma GCC unroll 8
        for (int b = d - a; b >= 0; --b, ++k) {
            const double mono = p0[a] * p1[b] * p2[d - a - b];
            const tk_double4 mv = {mono, mono, mono, mono};
            tk_double4 r0, r1;
            memcpy(&r0, t->rows[k], sizeof r0), memcpy(&r1, t->rows[k] + 4, sizeof r1);
            lo += r0 * mv, hi += r1 * mv;
        }
    h[0] = lo[0], h[1] = h[3] = lo[1], h[2] = h[6] = lo[2];
    h[4] = lo[3], h[5] = h[7] = hi[0], h[8] = hi[1];
}

/* y = A x^(m-1) and h = A x^(m-2) (3 x 3) at x, kept for a further call at the same x.  Both
 * always, even where only the value is asked (the backtracking test): the step is nearly
 * always taken and the next iteration wants both there.  y is h x (contracting one more index
 * of the symmetric A with x): nine multiply-adds where a kernel of its own would rebuild the
 * monomials of degree m - 1 and their 3 x 36 products at lmax 8. */
TK_CPU_CLONES static void vt_derivs(const voxel_tensor *tc, const double *x, double *y, double *h)
{
    voxel_tensor *t = (voxel_tensor *)tc; /* the cache is no part of the tensor's value */
    if (!(t->has_last && x[0] == t->last_x[0] && x[1] == t->last_x[1] && x[2] == t->last_x[2])) {
        double *ly = t->last_y, *lh = t->last_h;
        switch (t->m) {
        case 2: vt_hessian_rows(t, 0, x, lh); break;
        case 4: vt_hessian_rows(t, 2, x, lh); break;
        case 6: vt_hessian_rows(t, 4, x, lh); break;
        case 8: vt_hessian_rows(t, 6, x, lh); break;
        default: tk_sym_axm2_d(t->m, 3, t->a, x, lh); break;
        }
        for (int i = 0; i < 3; ++i) ly[i] = lh[i * 3] * x[0] + lh[i * 3 + 1] * x[1] + lh[i * 3 + 2] * x[2];
        for (int i = 0; i < 3; ++i) t->last_x[i] = x[i];
        t->has_last = 1;
    }
    memcpy(y, t->last_y, sizeof t->last_y);
    memcpy(h, t->last_h, sizeof t->last_h);
}

static double vt_axm(const voxel_tensor *t, const double *x)
{
    double y[3], h[9];
    vt_derivs(t, x, y, h);
    return x[0] * y[0] + x[1] * y[1] + x[2] * y[2];
}

#define TK_NEWTON_FN static
#define TK_NEWTON_UTIL static
#define TK_NEWTON_CTX voxel_tensor
#define TK_NEWTON_SFX(name) name##_cpu
#define TK_NEWTON_ORDER(t) ((t)->m)
#define TK_NEWTON_DERIVS(t, x, y, h) vt_derivs(t, x, y, h)
#define TK_NEWTON_VALUE(t, x) vt_axm(t, x)
#include "fibers_newton.h"

/* A voxel's grid values live interleaved with those of its batch (grid_values_batch):
 * values points at its lane, and direction i's value is TK_GRID_VALUE(values, i). */
#define TK_GRID_BATCH 4
#define TK_GRID_VALUE(values, i) ((values)[(size_t)(i) * TK_GRID_BATCH])

/* Grid direction i's quadratic model from its fit stencil (fibers_fit.c): th = tangent
 * gradient (2) and Hessian (3) in the tangent basis nt_tangent_basis gives at i. */
static void grid_fit_model(const tk_fibers_tables *p, const float *values, int i, float *th)
{
    const int *nbr = p->fit_nbr + (size_t)i * TK_FIBERS_FIT_WIDTH;
    const float *w = p->fit_w + (size_t)i * 5 * TK_FIBERS_FIT_WIDTH, v0 = TK_GRID_VALUE(values, i);
    float step[TK_FIBERS_FIT_WIDTH];
    for (int j = 0; j < TK_FIBERS_FIT_WIDTH; ++j) step[j] = TK_GRID_VALUE(values, nbr[j]) - v0;
    for (int r = 0; r < 5; ++r) {
        float s = 0.f;
        for (int j = 0; j < TK_FIBERS_FIT_WIDTH; ++j) s += w[r * TK_FIBERS_FIT_WIDTH + j] * step[j];
        th[r] = s;
    }
}

/* The series of up to TK_GRID_BATCH voxels on the grid, in float (it only ranks directions),
 * interleaved: vals4[TK_GRID_BATCH i + v] is voxel v's value at direction i (lanes past nv
 * hold zeros), so that the neighbour test (grid_marks) reads a neighbour's values for the
 * whole batch in one load.  Blocks of 16 directions accumulate in registers over the
 * coefficients for every voxel of the batch at once, so that the basis table (k x grid
 * floats, 270 KB at lmax 8) streams through the cache once a batch rather than once a voxel,
 * and are transposed into the interleaved order by shuffles; cloned for AVX2 + FMA. */
typedef float tk_float8 __attribute__((vector_size(32)));

/* One step of the 4 x 8 transpose: runs of `run` floats (1, 2 or 4) taken in turn from a and
 * b within each half (run 4: across them), the first of each pair of runs into lo, the second
 * into hi.  Permutations only: the values are untouched. */
static inline __attribute__((always_inline)) void interleave_pairs_by(int run, const tk_float8 *pa, const tk_float8 *pb,
                                                                      tk_float8 *lo, tk_float8 *hi)
{
    /* by pointer: a vector passed by value changes the ABI where AVX is off (the fuzz build) */
    const tk_float8 a = *pa, b = *pb;
    if (run == 1) {
        *lo = __builtin_shufflevector(a, b, 0, 8, 1, 9, 4, 12, 5, 13);
        *hi = __builtin_shufflevector(a, b, 2, 10, 3, 11, 6, 14, 7, 15);
    } else if (run == 2) {
        *lo = __builtin_shufflevector(a, b, 0, 1, 8, 9, 4, 5, 12, 13);
        *hi = __builtin_shufflevector(a, b, 2, 3, 10, 11, 6, 7, 14, 15);
    } else {
        *lo = __builtin_shufflevector(a, b, 0, 1, 2, 3, 8, 9, 10, 11);
        *hi = __builtin_shufflevector(a, b, 4, 5, 6, 7, 12, 13, 14, 15);
    }
}
TK_CPU_CLONES
static void grid_values_batch(const tk_fibers_tables *p, int nv, const double *const *sh, float *vals4)
{
    const int k = p->k, stride = p->grid_padded;
    /* each coefficient of each voxel in all eight lanes: the multiply-adds read it from memory */
    tk_float8 coeff[TK_SH_MAX_LMAX * TK_SH_MAX_LMAX][TK_GRID_BATCH];
    for (int c = 0; c < k; ++c)
        for (int v = 0; v < TK_GRID_BATCH; ++v) {
            const float f = v < nv ? (float)sh[v][c] : 0.f;
            coeff[c][v] = (tk_float8){f, f, f, f, f, f, f, f};
        }
    for (int i0 = 0; i0 < stride; i0 += 16) {
        tk_float8 acc[TK_GRID_BATCH][2];
        memset(acc, 0, sizeof acc);
        for (int c = 0; c < k; ++c) {
            tk_float8 lo, hi;
            memcpy(&lo, p->basis_t + (size_t)c * stride + i0, sizeof lo);
            memcpy(&hi, p->basis_t + (size_t)c * stride + i0 + 8, sizeof hi);
            for (int v = 0; v < TK_GRID_BATCH; ++v) acc[v][0] += coeff[c][v] * lo, acc[v][1] += coeff[c][v] * hi;
        }
        /* 4 voxels x 8 directions to 8 directions x 4 voxels, per half */
        for (int h = 0; h < 2; ++h) {
            tk_float8 ab_lo, ab_hi, cd_lo, cd_hi, d04, d15, d26, d37, d01, d23, d45, d67;
            interleave_pairs_by(1, &acc[0][h], &acc[1][h], &ab_lo, &ab_hi);
            interleave_pairs_by(1, &acc[2][h], &acc[3][h], &cd_lo, &cd_hi);
            /* directions (0, 4), (1, 5), (2, 6), (3, 7) of the half, each voxels 0-3 */
            interleave_pairs_by(2, &ab_lo, &cd_lo, &d04, &d15);
            interleave_pairs_by(2, &ab_hi, &cd_hi, &d26, &d37);
            interleave_pairs_by(4, &d04, &d15, &d01, &d45);
            interleave_pairs_by(4, &d26, &d37, &d23, &d67);
            float *out = vals4 + (size_t)(i0 + 8 * h) * TK_GRID_BATCH;
            memcpy(out, &d01, sizeof d01), memcpy(out + 8, &d23, sizeof d23);
            memcpy(out + 16, &d45, sizeof d45), memcpy(out + 24, &d67, sizeof d67);
        }
    }
}

/* A grid direction worth a closer look, and the highest grid value on or around it. */
typedef struct {
    int dir;
    int kind;   /* 1: not below any neighbour; 2: a shoulder candidate (grid_marks) */
    float high; /* its value (kind 1) or its higher neighbour's (kind 2) */
} grid_mark;

/* The marked grid directions of the voxels of a batch, in index order: kind 1 where a
 * direction is not below any neighbour (antipodes folded in), kind 2 where it is a shoulder
 * candidate (see maxima_from_grid): not below its nearest neighbours (within 1.05 spacings),
 * or below one neighbour only and by less than TK_RIDGE_RISE of its steepest fall to another
 * (the top of a bump on a ridge that climbs on gently to a larger lobe; on an even slope the
 * one rise matches the fall opposite it).  The voxels' values are interleaved (vals4[4 i + v])
 * so that each neighbour's values for all four are one 16-byte load rather than four
 * gathers; the same tests, in the same float arithmetic, voxel by voxel. */
#if defined(__SSE2__)
/* One step of the neighbour test for four voxels: the steps to a neighbour's values, counted
 * where up (above), and the largest rise and fall so far. */
#define TK_MARK_STEP(vn)                                                                                               \
    const __m128 step = _mm_sub_ps(vn, v0), above = _mm_cmpgt_ps(step, zero);                                          \
    higher = _mm_sub_epi32(higher, _mm_castps_si128(above));                                                           \
    rise = _mm_max_ps(rise, step), low = _mm_min_ps(low, step)
TK_CPU_CLONES
static void grid_marks(const tk_fibers_tables *p, int nv, const float *vals4, grid_mark *const *marks, int *nmarks)
{
    const __m128 zero = _mm_setzero_ps(), ridge = _mm_set1_ps(TK_RIDGE_RISE);
    const __m128i one = _mm_set1_epi32(1);
    for (int v = 0; v < nv; ++v) nmarks[v] = 0;
    const int lanes = (1 << nv) - 1; /* the batch's voxels among the four lanes */
    for (int i = 0; i < p->grid; ++i) {
        const __m128 v0 = _mm_loadu_ps(vals4 + (size_t)i * 4);
        __m128 rise = zero, low = zero;
        __m128i higher = _mm_setzero_si128();
        const int *nbr = p->nbr + p->nbr_start[i], count = p->nbr_start[i + 1] - p->nbr_start[i], near = p->nbr_near[i];
        int n = 0;
        for (; n < near; ++n) {
            TK_MARK_STEP(_mm_loadu_ps(vals4 + (size_t)nbr[n] * 4));
        }
        /* no higher ground among the nearest neighbours (within 1.05 spacings) */
        const __m128i ok_near = _mm_cmpeq_epi32(higher, _mm_setzero_si128());
        /* two or more of them higher: no candidate of either kind, whatever the rest say (the
         * common case on a slope; decided for the whole batch at once) */
        if (_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpgt_epi32(higher, one))) == 0xf) continue;
        for (; n < count; ++n) {
            TK_MARK_STEP(_mm_loadu_ps(vals4 + (size_t)nbr[n] * 4));
        }
        /* fall = -low: a shoulder rises to one neighbour by less than TK_RIDGE_RISE of its fall */
        const __m128 ridge_ok = _mm_cmplt_ps(rise, _mm_mul_ps(ridge, _mm_sub_ps(zero, low)));
        const __m128i top = _mm_cmpeq_epi32(higher, _mm_setzero_si128());
        const __m128i shoulder =
            _mm_or_si128(ok_near, _mm_and_si128(_mm_cmpeq_epi32(higher, one), _mm_castps_si128(ridge_ok)));
        int hit = _mm_movemask_ps(_mm_castsi128_ps(_mm_or_si128(top, shoulder))) & lanes;
        if (!hit) continue;
        const int tops = _mm_movemask_ps(_mm_castsi128_ps(top));
        float v0s[4], rises[4];
        _mm_storeu_ps(v0s, v0), _mm_storeu_ps(rises, rise);
        for (; hit; hit &= hit - 1) {
            const int v = __builtin_ctz(hit);
            grid_mark *m = marks[v] + nmarks[v]++;
            m->dir = i, m->kind = (tops >> v) & 1 ? 1 : 2, m->high = v0s[v] + rises[v];
        }
    }
}
#undef TK_MARK_STEP
#else
typedef float tk_float4 __attribute__((vector_size(16)));
typedef int tk_int4 __attribute__((vector_size(16)));
static void grid_marks(const tk_fibers_tables *p, int nv, const float *vals4, grid_mark *const *marks, int *nmarks)
{
    const tk_float4 zero = {0.f, 0.f, 0.f, 0.f}, ridge = {TK_RIDGE_RISE, TK_RIDGE_RISE, TK_RIDGE_RISE, TK_RIDGE_RISE};
    for (int v = 0; v < nv; ++v) nmarks[v] = 0;
    for (int i = 0; i < p->grid; ++i) {
        tk_float4 v0, rise = zero, fall = zero;
        tk_int4 higher = {0, 0, 0, 0}, ok_near = {-1, -1, -1, -1};
        memcpy(&v0, vals4 + (size_t)i * 4, sizeof v0);
        const int first = p->nbr_start[i], count = p->nbr_start[i + 1] - first, near = p->nbr_near[i];
        for (int n = 0; n < count; ++n) {
            tk_float4 vn;
            memcpy(&vn, vals4 + (size_t)p->nbr[first + n] * 4, sizeof vn);
            const tk_float4 step = vn - v0;
            const tk_int4 not_below = step <= zero; /* -1 where true */
            higher -= ~not_below;                   /* +1 where above */
            if (n < near) ok_near &= not_below;
            const tk_int4 up = step > rise, down = -step > fall; /* C has no vector ?: */
            rise = (tk_float4)((up & (tk_int4)step) | (~up & (tk_int4)rise));
            fall = (tk_float4)((down & (tk_int4)-step) | (~down & (tk_int4)fall));
        }
        const tk_int4 shoulder = ok_near | ((higher == 1) & (rise < ridge * fall));
        for (int v = 0; v < nv; ++v)
            if (higher[v] == 0 || shoulder[v]) {
                grid_mark *m = marks[v] + nmarks[v]++;
                m->dir = i, m->kind = higher[v] == 0 ? 1 : 2, m->high = v0[v] + rise[v];
            }
    }
}
#endif

/* The voxel's tensor A (A x^m is the unit-scaled series aniso on the sphere) into tensor[k],
 * and its evaluator. */
TK_CPU_CLONES
static void voxel_tensor_init(const tk_fibers_tables *p, const double *aniso, double *tensor, voxel_tensor *vt)
{
    const int k = p->k;
    /* column by column, so that the inner loop vectorizes without reassociation */
    for (int r = 0; r < k; ++r) tensor[r] = 0;
    for (int c = 1; c < k; ++c)
        for (int r = 0; r < k; ++r) tensor[r] += p->map_t[(size_t)c * k + r] * aniso[c];
    vt_init(vt, p->lmax, tensor);
}

/* The maxima of a voxel whose unit-scaled series aniso is axially symmetric (fibers_internal.h):
 * 0 or 1, its pole (dir, amp unit-scaled) where that is a strict maximum; -1 where the series
 * is no symmetric one.  tensor: k doubles of scratch (the voxel's tensor on return where the
 * l = 2 band passed its test, and *built set). */
static int axial_maxima(const tk_fibers_tables *p, const double *aniso, double *tensor, voxel_tensor *vt, int *built,
                        double *dir, double *amp)
{
    double x[3];
    *built = 0;
    if (!tk_fibers_axial_axis(p->axial_q, p->k, aniso, x)) return -1;
    voxel_tensor_init(p, aniso, tensor, vt);
    *built = 1;
    const int strict = nt_axis_point_cpu(vt, x, amp);
    if (strict < 0 || !tk_fibers_axial_residual_ok(p->basis, p->legacy, p->lmax, aniso, x)) return -1;
    if (!strict) return 0;
    tk_canonical_sign(3, x);
    memcpy(dir, x, sizeof x);
    return 1;
}

/* What the output of tk_fibers_find asks of one voxel: its options, cos of their separation,
 * and the voxel's scale and constant term (tk_fibers_anisotropic_part), so that a maximum's
 * output amplitude is its unit-scaled one times scale plus iso. */
typedef struct {
    const tk_fibers_options *o;
    double cos_sep, scale, iso;
} output_rule;

/* What a further maximum must exceed to change the voxel's output (tk_fibers_output_bar). */
static double output_bar(const output_rule *r, int found, const double (*dir)[3], const double *amp)
{
    const tk_fibers_options *o = r->o;
    double out[TK_MAX_CANDIDATES];
    int kept[TK_MAX_CANDIDATES];
    return tk_fibers_output_bar(o->num_peaks, o->threshold, o->relative_threshold, o->min_separation_deg, r->scale, r->iso,
                                found, dir[0], amp, out, kept);
}

/* One voxel's search in progress: its grid values and evaluator, the maxima found so far
 * (sorted by amplitude descending), and what a further one must exceed (output_bar). */
typedef struct {
    const tk_fibers_tables *p;
    const float *values; /* the voxel's lane of its batch's grid values (TK_GRID_VALUE) */
    voxel_tensor *vt;
    const output_rule *rule; /* NULL: every maximum */
    double spacing, cos_near, margin, bar;
    double m2, m3; /* bounds on the series' 2nd and 3rd derivatives (tk_fibers_derivative_bounds) */
    double dir[TK_MAX_CANDIDATES][3], amp[TK_MAX_CANDIDATES];
    int found;
    /* maxima whose climbs stopped below the bar (nt_polish's -2), near where they are: a
     * later candidate next to one climbs the same hill, as one next to a found maximum */
    double low_dir[TK_MAX_CANDIDATES][3];
    int low;
    unsigned long long *polished, *iterations;
} voxel_search;

/* Adds the strict maximum x (amplitude amp) to the voxel's found maxima unless it has it
 * already (within about 1e-5 rad), keeping them sorted and the bar up to date. */
static void add_maximum(voxel_search *s, double *x, double amp)
{
    tk_canonical_sign(3, x);
    for (int f = 0; f < s->found; ++f)
        if (fabs(nt_dot3_cpu(s->dir[f], x)) > 1.0 - 1e-10) return;
    if (s->found == TK_MAX_CANDIDATES) return;
    int pos = s->found++;
    while (pos > 0 && s->amp[pos - 1] < amp) {
        memcpy(s->dir[pos], s->dir[pos - 1], sizeof s->dir[0]);
        s->amp[pos] = s->amp[pos - 1];
        --pos;
    }
    memcpy(s->dir[pos], x, 3 * sizeof *x);
    s->amp[pos] = amp;
    if (s->rule) s->bar = output_bar(s->rule, s->found, (const double(*)[3])s->dir, s->amp);
}

/* Notes where a climb stopped below the bar (see low_dir). */
static void add_low(voxel_search *s, const double *x)
{
    if (s->low < TK_MAX_CANDIDATES) memcpy(s->low_dir[s->low++], x, sizeof s->low_dir[0]);
}

/* Polishes grid direction i (a candidate of the kind given, whose hill rises no higher than
 * high plus the margin) and adds the strict maximum it reaches, if new.  Returns 0 where the
 * climb of a grid maximum ended on no maximum or beyond the leash (it stepped off its own
 * hill, if it has one), else 1. */
static int try_candidate(voxel_search *s, int i, int kind, float high)
{
    const tk_fibers_tables *p = s->p;
    if (s->found == TK_MAX_CANDIDATES) return 1;
    /* a hill that cannot rise above what a further maximum must exceed changes nothing */
    if (s->rule && (double)high + s->margin < s->bar) return 1;
    double x[3], amp;
    memcpy(x, p->dirs + (size_t)i * 3, sizeof x);
    /* A candidate next to a maximum already polished (within 1.5 grid steps) climbs the same
     * hill: two strict maxima of a band-limited function that close would need a saddle
     * between them inside one grid cell, which the candidate test could not see anyway. */
    for (int f = 0; f < s->found; ++f)
        if (fabs(nt_dot3_cpu(s->dir[f], x)) > s->cos_near) return 1;
    for (int f = 0; f < s->low; ++f)
        if (fabs(nt_dot3_cpu(s->low_dir[f], x)) > s->cos_near) return 1;
    /* nt_polish stops a climb whose maximum provably stays below the bar */
    const double bounds[3] = {s->bar, s->m2, s->m3}, *cutoff = s->rule ? bounds : NULL;
    int strict = -1, climbed = 0;
    const double leash = TK_CLIMB_LEASH * s->spacing;
    if (s->polished) ++*s->polished;
    if (kind == 2) {
        /* A shoulder candidate (higher ground only beyond its nearest neighbours, or at one
         * neighbour only: a bump on a ridge that climbs on to a larger lobe, or a flat bump on
         * a slope) climbs on a leash (nt_shoulder_reaches): a maximum within TK_CLIMB_LEASH spacings is
         * its own (a flat bump's Hessian may be indefinite at the grid direction, so no
         * one-step test decides), one beyond is a larger lobe's, whose candidate climbs to it. */
        if (!nt_shoulder_reaches_cpu(s->vt, x, leash)) return 1;
        strict = nt_polish_cpu(s->vt, x, &amp, &climbed, 0, leash, 0, cutoff);
        if (s->iterations) *s->iterations += (unsigned long long)climbed;
        if (strict > 0) add_maximum(s, x, amp);
        if (strict == -2) add_low(s, x);
        return 1;
    }
    /* A grid maximum starts Newton at its model's maximum where that has one within a grid
     * spacing and lies above the grid direction: a start a few per cent of a spacing off the
     * maximum converges in two iterations, a grid direction in three or four.  The model spans
     * two spacings, wider than the narrowest bumps: one it misjudges can put the start where
     * the Hessian is indefinite, on the slope of a larger neighbour that the climb would then
     * reach instead; there (or where the first step is not short) the climb starts again from
     * the grid direction.  (The uphill test reads the value the first iteration needs anyway.) */
    const double grid_dir[3] = {x[0], x[1], x[2]};
    float th[5];
    double start[3] = {x[0], x[1], x[2]};
    grid_fit_model(p, s->values, i, th);
    tk_fibers_fit_start(th, s->spacing, start);
    if (vt_axm(s->vt, start) >= (double)TK_GRID_VALUE(s->values, i)) {
        strict = nt_polish_cpu(s->vt, start, &amp, &climbed, 0.25 * s->spacing, 0, 0, cutoff);
        if (s->iterations) *s->iterations += (unsigned long long)climbed;
        if (strict >= 0 || strict == -2) memcpy(x, start, sizeof x);
    }
    if (strict == -1) {
        strict = nt_polish_cpu(s->vt, x, &amp, &climbed, 0, 0, 0, cutoff);
        if (s->iterations) *s->iterations += (unsigned long long)climbed;
    }
    const int local = nt_dot3_cpu(x, grid_dir) >= cos(leash);
    if (strict == -2) {
        /* its maximum, within 2 Newton steps of x, stays below the bar: as good as found */
        add_low(s, x);
        return local;
    }
    if (strict <= 0) return 0;
    add_maximum(s, x, amp);
    return local;
}

/* Inserts grid direction i (high: its grid_mark's) into list (n entries, sorted by grid value
 * descending), keeping the TK_MAX_CANDIDATES largest. */
static void insert_by_value(const float *values, int *list, float *high, int *n, int i, float h)
{
    int pos = *n < TK_MAX_CANDIDATES ? (*n)++ : TK_MAX_CANDIDATES;
    if (pos == TK_MAX_CANDIDATES) {
        if (TK_GRID_VALUE(values, i) <= TK_GRID_VALUE(values, list[TK_MAX_CANDIDATES - 1])) return;
        pos = TK_MAX_CANDIDATES - 1;
    }
    while (pos > 0 && TK_GRID_VALUE(values, list[pos - 1]) < TK_GRID_VALUE(values, i))
        list[pos] = list[pos - 1], high[pos] = high[pos - 1], --pos;
    list[pos] = i, high[pos] = h;
}

/* The maxima of one voxel's anisotropic part (tk_fibers_anisotropic_part: aniso, scale > 0,
 * iso) from its grid values and marked directions (grid_marks); as tk_fibers_voxel_maxima.
 * The grid maxima are polished first, largest first, then the shoulder candidates.
 * rule NULL: every maximum; else only those that can reach the output rule asks for
 * (tk_fibers_find): a candidate whose hill cannot rise above what a further maximum must
 * exceed (output_bar) is not polished.  Its hill rises at most tk_fibers_value_margin above
 * the highest grid value on or around it: a maximum lies within the covering radius of a
 * grid direction, and one farther off than the candidate's neighbours has a candidate of its
 * own.  A shoulder candidate that cannot matter any more is not even fitted: the bar only
 * rises.  tensor, vt: the voxel's where built (else built here). */
static int maxima_from_grid(const tk_fibers_tables *p, const double *aniso, double scale, double iso, const float *values,
                            const grid_mark *marks, int nmarks, double *tensor, voxel_tensor *vt, int built,
                            const output_rule *rule, int max_peaks, double *directions, double *amplitudes,
                            unsigned long long *polished, unsigned long long *iterations)
{
    if (!built) voxel_tensor_init(p, aniso, tensor, vt);
    voxel_search s;
    s.p = p, s.values = values, s.vt = vt, s.rule = rule, s.found = 0, s.polished = polished, s.iterations = iterations;
    s.spacing = sqrt(2.0 * 3.14159265358979323846 / p->grid);
    s.cos_near = cos(1.5 * s.spacing);
    s.margin = s.m2 = s.m3 = 0, s.low = 0;
    if (rule) {
        double sup;
        tk_fibers_derivative_bounds_d(p->lmax, aniso, 1.0, &sup, &s.m2, &s.m3);
        s.margin = tk_fibers_value_margin(sup, s.m2, TK_FIBERS_COVER * s.spacing);
    }
    s.bar = rule ? output_bar(rule, 0, (const double(*)[3])s.dir, s.amp) : -INFINITY;
    int list1[TK_MAX_CANDIDATES], n1 = 0, list2[TK_MAX_CANDIDATES], n2 = 0;
    float high1[TK_MAX_CANDIDATES], high2[TK_MAX_CANDIDATES];
    for (int q = 0; q < nmarks; ++q)
        if (marks[q].kind == 1) insert_by_value(values, list1, high1, &n1, marks[q].dir, marks[q].high);
    /* which grid maxima's climbs stayed on their own hill: the shoulder candidates around
     * them are on it too */
    unsigned char local1[TK_MAX_CANDIDATES];
    for (int c = 0; c < n1; ++c) local1[c] = (unsigned char)try_candidate(&s, list1[c], 1, high1[c]);
    const double cos_by_max = cos(TK_SHOULDER_GAP * s.spacing);
    for (int q = 0; q < nmarks; ++q) {
        const grid_mark *m = marks + q;
        if (m->kind != 2 || (rule && (double)m->high + s.margin < s.bar)) continue;
        /* most shoulder candidates have no maximum within reach: the grid values say so */
        float th[5];
        grid_fit_model(p, values, m->dir, th);
        if (!tk_fibers_fit_reaches(th, (float)s.spacing)) continue;
        /* a shoulder candidate next to a grid maximum is on that maximum's hill, unless the
         * maximum's climb left it (a small bump beside the grid maximum, across a saddle) */
        int by_max = 0;
        for (int c = 0; c < n1 && !by_max; ++c)
            by_max = local1[c] &&
                     fabs(nt_dot3_cpu(p->dirs + (size_t)m->dir * 3, p->dirs + (size_t)list1[c] * 3)) > cos_by_max;
        if (!by_max) insert_by_value(values, list2, high2, &n2, m->dir, m->high);
    }
    for (int c = 0; c < n2; ++c) try_candidate(&s, list2[c], 2, high2[c]);
    for (int f = 0; f < s.found && f < max_peaks; ++f) {
        if (directions) memcpy(directions + (size_t)f * 3, s.dir[f], sizeof s.dir[0]);
        if (amplitudes) amplitudes[f] = s.amp[f] * scale + iso;
    }
    return s.found;
}

/* One thread's buffers for a batch of up to TK_GRID_BATCH voxels: their grid values, the
 * same interleaved (grid_marks), their marks, and each voxel's maxima (output amplitudes). */
typedef struct {
    float *vals4;     /* grid_padded x TK_GRID_BATCH, interleaved (grid_values_batch) */
    grid_mark *marks; /* TK_GRID_BATCH x grid */
    double dir[TK_GRID_BATCH][TK_MAX_CANDIDATES][3], amp[TK_GRID_BATCH][TK_MAX_CANDIDATES];
    int found[TK_GRID_BATCH];
    unsigned long long iterations[TK_GRID_BATCH];
} batch_work;

static void batch_work_free(batch_work *w)
{
    if (!w) return;
    free(w->vals4), free(w->marks), free(w);
}

static batch_work *batch_work_new(const tk_fibers_tables *p)
{
    batch_work *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    w->vals4 = malloc(sizeof(float) * TK_GRID_BATCH * (size_t)p->grid_padded);
    w->marks = malloc(sizeof(grid_mark) * TK_GRID_BATCH * (size_t)p->grid);
    if (!w->vals4 || !w->marks) batch_work_free(w), w = NULL;
    return w;
}

/* The maxima of nv <= TK_GRID_BATCH voxels (finite coefficients coeffs[v], k each) into
 * w->found, w->dir and w->amp (output amplitudes, sorted descending) and w->iterations.
 * o NULL: every maximum; else those tk_fibers_find's output can keep (maxima_from_grid).
 * The peaks of a series are those of its anisotropic part scaled to unit size: a constant
 * (zero, isotropic) voxel has none and costs no grid pass, and an isotropic term that dwarfs
 * the rest, or coefficients near float's underflow, no longer drown the ranking and the
 * Newton tests in rounding.  An axially symmetric voxel is answered by its axis alone
 * (axial_maxima); the others share one pass over the grid's basis table. */
static void batch_maxima(const tk_fibers_tables *p, const tk_fibers_options *o, double cos_sep, int nv,
                         const double *const *coeffs, batch_work *w, unsigned long long *polished)
{
    double aniso[TK_GRID_BATCH][TK_SH_MAX_LMAX * TK_SH_MAX_LMAX], scale[TK_GRID_BATCH], iso[TK_GRID_BATCH];
    double tensor[TK_GRID_BATCH][TK_SH_MAX_LMAX * TK_SH_MAX_LMAX];
    voxel_tensor vt[TK_GRID_BATCH];
    int built[TK_GRID_BATCH], live[TK_GRID_BATCH], nlive = 0;
    const double *live_aniso[TK_GRID_BATCH];
    for (int v = 0; v < nv; ++v) {
        w->found[v] = 0, w->iterations[v] = 0, built[v] = 0;
        scale[v] = tk_fibers_anisotropic_part(p->k, coeffs[v], aniso[v], &iso[v]);
        if (!(scale[v] > 0)) continue;
        const int axial = axial_maxima(p, aniso[v], tensor[v], &vt[v], &built[v], w->dir[v][0], w->amp[v]);
        if (axial >= 0) {
            w->found[v] = axial;
            if (axial) w->amp[v][0] = w->amp[v][0] * scale[v] + iso[v];
            continue;
        }
        live_aniso[nlive] = aniso[v], live[nlive++] = v;
    }
    if (!nlive) return;
    grid_mark *marks[TK_GRID_BATCH];
    int nmarks[TK_GRID_BATCH];
    for (int q = 0; q < nlive; ++q) marks[q] = w->marks + (size_t)q * p->grid;
    grid_values_batch(p, nlive, live_aniso, w->vals4);
    grid_marks(p, nlive, w->vals4, marks, nmarks);
    for (int q = 0; q < nlive; ++q) {
        const int v = live[q];
        const output_rule rule = {o, cos_sep, scale[v], iso[v]};
        w->found[v] = maxima_from_grid(p, aniso[v], scale[v], iso[v], w->vals4 + q, marks[q], nmarks[q], tensor[v], &vt[v],
                                       built[v], o ? &rule : NULL, TK_MAX_CANDIDATES, w->dir[v][0], w->amp[v], polished,
                                       &w->iterations[v]);
        if (w->found[v] > TK_MAX_CANDIDATES) w->found[v] = TK_MAX_CANDIDATES;
    }
}

/* Every maximum of one series on the tables (tk_fibers_all_maxima). */
static int all_maxima(const tk_fibers_tables *tables, const double *sh, int max_peaks, double *directions,
                      double *amplitudes)
{
    batch_work *w = batch_work_new(tables);
    if (!w) return tk_set_error(TK_ERR_MEMORY, "out of memory"), -1;
    batch_maxima(tables, NULL, 1, 1, &sh, w, NULL);
    const int found = w->found[0];
    for (int f = 0; f < found && f < max_peaks; ++f) {
        if (directions) memcpy(directions + (size_t)f * 3, w->dir[0][f], sizeof w->dir[0][f]);
        if (amplitudes) amplitudes[f] = w->amp[0][f];
    }
    batch_work_free(w);
    return found;
}

int tk_fibers_plan_all_maxima(const tk_fibers_plan *plan, const double *sh, int max_peaks, double *directions,
                              double *amplitudes)
{
    if (!plan || !sh) return tk_set_error(TK_ERR_ARGUMENT, plan ? "no SH series given" : "no plan given"), -1;
    return all_maxima(&plan->tables, sh, max_peaks, directions, amplitudes);
}

int tk_fibers_all_maxima(int lmax, tk_sh_basis basis, int legacy, const double *sh, int max_peaks, double *directions,
                         double *amplitudes)
{
    tk_fibers_tables tables;
    if (tk_fibers_tables_create(lmax, basis, legacy, &tables) != TK_OK) return -1;
    const int found = all_maxima(&tables, sh, max_peaks, directions, amplitudes);
    tk_fibers_tables_free(&tables);
    return found;
}

tk_status tk_fibers_cpu_execute(const tk_fibers_tables *plan, const tk_fibers_options *o, size_t num_voxels,
                                const float *sh, const uint8_t *mask, float *directions, float *amplitudes,
                                size_t *bad_voxels, tk_fibers_work *work)
{
    const double cos_sep = cos(o->min_separation_deg * 3.14159265358979323846 / 180.0);
    const int k = plan->k, np = o->num_peaks;
    const long long count = (long long)num_voxels;
    size_t bad = 0;
    unsigned long long polished = 0, iterations = 0, most = 0;
    int failed = 0;
#ifdef _OPENMP
    int threads = o->backend == TK_BACKEND_OMP ? (o->num_threads > 0 ? o->num_threads : omp_get_max_threads()) : 1;
#pragma omp parallel num_threads(threads) reduction(+ : bad, polished, iterations) reduction(max : most)
#endif
    {
        batch_work *w = batch_work_new(plan);
        if (!w) {
#ifdef _OPENMP
#pragma omp atomic write
#endif
            failed = 1;
        }
        /* voxels in batches that share one pass over the grid's basis table */
        const long long batches = (count + TK_GRID_BATCH - 1) / TK_GRID_BATCH;
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 16)
#endif
        for (long long b = 0; b < batches; ++b) {
            if (!w) continue;
            double coeffs[TK_GRID_BATCH][TK_SH_MAX_LMAX * TK_SH_MAX_LMAX];
            const double *live[TK_GRID_BATCH];
            int slot_of[TK_GRID_BATCH], nlive = 0;
            const long long first = b * TK_GRID_BATCH, last = first + TK_GRID_BATCH < count ? first + TK_GRID_BATCH : count;
            for (long long v = first; v < last; ++v) {
                const int slot = (int)(v - first);
                int ok = !mask || mask[v];
                for (int c = 0; c < k && ok; ++c) {
                    coeffs[nlive][c] = sh[(size_t)v * k + c];
                    if (!isfinite(coeffs[nlive][c])) ok = 0, ++bad;
                }
                slot_of[slot] = ok ? nlive : -1;
                if (ok) live[nlive] = coeffs[nlive], ++nlive;
            }
            if (nlive) batch_maxima(plan, o, cos_sep, nlive, live, w, &polished);
            for (long long v = first; v < last; ++v) {
                const int q = slot_of[v - first];
                int kept[TK_MAX_CANDIDATES];
                const int found = q >= 0 ? w->found[q] : 0;
                if (q >= 0) {
                    iterations += w->iterations[q];
                    most = w->iterations[q] > most ? w->iterations[q] : most;
                }
                tk_fibers_select(np, o->threshold, o->relative_threshold, o->min_separation_deg, cos_sep, found,
                                 q >= 0 ? w->dir[q][0] : NULL, q >= 0 ? w->amp[q] : NULL, kept,
                                 directions ? directions + (size_t)v * np * 3 : NULL,
                                 amplitudes ? amplitudes + (size_t)v * np : NULL);
            }
        }
        batch_work_free(w);
    }
    if (bad_voxels) *bad_voxels = bad;
    if (failed) return tk_set_error(TK_ERR_MEMORY, "out of memory for peak-finder work buffers");
    if (work) work->polished = polished, work->newton_iterations = iterations, work->most_iterations = most;
    return TK_OK;
}
