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

#include "fibers_internal.h"
#include "fibers_select.h"
#include "sshopm_internal.h"
#include "tk_sshopm.h"

#include "tk_hd.h"
#define TK_REAL double
#define TK_SFX(name) name##_d
#define TK_FMA(a, b, c) ((a) * (b) + (c))
#include "sshopm_unrolled_gen.h"
#undef TK_REAL
#undef TK_SFX
#undef TK_FMA

#define TK_MAX_CANDIDATES 64

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
    double c[3 * TK_UNROLLED_K1_8_3], c2[6 * TK_UNROLLED_K2_8_3];
    /* The last A x^(m-1): Newton's backtracking test evaluates it at the point the next
     * iteration differentiates at, so one of each iteration's two evaluations is a copy. */
    double last_x[3], last_y[3];
    int has_last;
} voxel_tensor;

static void vt_init(voxel_tensor *t, int m, const double *a)
{
    t->m = m, t->a = a, t->has_last = 0;
    switch (m) {
#define TK_CASE(M)                                                                                                     \
    case M:                                                                                                            \
        tk_unrolled_prescale_##M##_3_d(a, t->c);                                                                       \
        tk_unrolled_prescale2_##M##_3_d(a, t->c2);                                                                     \
        break;
        TK_CASE(2) TK_CASE(4) TK_CASE(6) TK_CASE(8)
#undef TK_CASE
    default: break;
    }
}

TK_CPU_CLONES static void vt_axm1(const voxel_tensor *tc, const double *x, double *y)
{
    voxel_tensor *t = (voxel_tensor *)tc; /* the cache is no part of the tensor's value */
    if (t->has_last && x[0] == t->last_x[0] && x[1] == t->last_x[1] && x[2] == t->last_x[2]) {
        y[0] = t->last_y[0], y[1] = t->last_y[1], y[2] = t->last_y[2];
        return;
    }
    switch (t->m) {
    case 2: tk_unrolled_axm1_2_3_d(t->c, x[0], x[1], x[2], &y[0], &y[1], &y[2]); break;
    case 4: tk_unrolled_axm1_4_3_d(t->c, x[0], x[1], x[2], &y[0], &y[1], &y[2]); break;
    case 6: tk_unrolled_axm1_6_3_d(t->c, x[0], x[1], x[2], &y[0], &y[1], &y[2]); break;
    case 8: tk_unrolled_axm1_8_3_d(t->c, x[0], x[1], x[2], &y[0], &y[1], &y[2]); break;
    default: tk_sym_axm1_d(t->m, 3, t->a, x, y); break;
    }
    for (int i = 0; i < 3; ++i) t->last_x[i] = x[i], t->last_y[i] = y[i];
    t->has_last = 1;
}

TK_CPU_CLONES static void vt_axm2(const voxel_tensor *t, const double *x, double *y)
{
    switch (t->m) {
    case 2: tk_unrolled_axm2_2_3_d(t->c2, x[0], x[1], x[2], y); break;
    case 4: tk_unrolled_axm2_4_3_d(t->c2, x[0], x[1], x[2], y); break;
    case 6: tk_unrolled_axm2_6_3_d(t->c2, x[0], x[1], x[2], y); break;
    case 8: tk_unrolled_axm2_8_3_d(t->c2, x[0], x[1], x[2], y); break;
    default: tk_sym_axm2_d(t->m, 3, t->a, x, y); break;
    }
}

static double vt_axm(const voxel_tensor *t, const double *x)
{
    double y[3];
    vt_axm1(t, x, y);
    return x[0] * y[0] + x[1] * y[1] + x[2] * y[2];
}

void tk_fibers_options_init(tk_fibers_options *o, int lmax)
{
    memset(o, 0, sizeof *o);
    o->lmax = lmax;
    o->basis = TK_SH_TOURNIER;
    o->num_peaks = 3;
    o->threshold = 0.0;
    o->relative_threshold = 0.0;
    o->min_separation_deg = 0.0;
    o->backend = TK_FIBERS_CPU;
}


#define TK_NEWTON_FN static
#define TK_NEWTON_UTIL static
#define TK_NEWTON_CTX voxel_tensor
#define TK_NEWTON_SFX(name) name##_cpu
#define TK_NEWTON_ORDER(t) ((t)->m)
#define TK_NEWTON_DERIVS(t, x, y, h) (vt_axm1(t, x, y), vt_axm2(t, x, h))
#define TK_NEWTON_VALUE(t, x) vt_axm(t, x)
#include "fibers_newton.h"

/* is_max[i] = 1 where grid direction i is not below any neighbour (a candidate), 2 where it
 * is a shoulder candidate (see tk_fibers_voxel_maxima): not below its nearest neighbours
 * (within 1.05 spacings), or below one neighbour only and by less than TK_RIDGE_RISE of its
 * steepest fall to another (the top of a bump on a ridge that climbs on gently to a larger
 * lobe; on an even slope the one rise matches the fall opposite it), else 0.
 * Neighbour-major over blocks of 32 directions, so each step is a gather and a compare
 * across a vector. */
TK_CPU_CLONES
static void grid_local_maxima(const tk_fibers_plan *p, const float *values, unsigned char *is_max)
{
    const int stride = p->grid_padded;
    for (int i0 = 0; i0 < stride; i0 += 32) {
        int ok_near[32], higher[32];
        float rise[32], fall[32];
        const int *near = p->nbr_near + i0;
        for (int j = 0; j < 32; ++j) ok_near[j] = 1, higher[j] = 0, rise[j] = fall[j] = 0.f;
        for (int n = 0; n < p->nbr_width; ++n) {
            const int *nb = p->nbr_fixed + (size_t)n * stride + i0;
            for (int j = 0; j < 32; ++j) {
                const float step = values[nb[j]] - values[i0 + j];
                const int not_below = step <= 0.f;
                higher[j] += !not_below;
                ok_near[j] &= not_below | (n >= near[j]);
                rise[j] = step > rise[j] ? step : rise[j];
                fall[j] = -step > fall[j] ? -step : fall[j];
            }
        }
        for (int j = 0; j < 32; ++j)
            is_max[i0 + j] = (unsigned char)(higher[j] == 0                                                  ? 1
                                             : ok_near[j] || (higher[j] == 1 && rise[j] < TK_RIDGE_RISE * fall[j]) ? 2
                                                                                                                 : 0);
    }
}

/* Grid direction i's quadratic model from its fit stencil (fibers_fit.c): th = tangent
 * gradient (2) and Hessian (3) in the tangent basis nt_tangent_basis gives at i. */
static void grid_fit_model(const tk_fibers_plan *p, const float *values, int i, float *th)
{
    const int *nbr = p->fit_nbr + (size_t)i * TK_FIBERS_FIT_WIDTH;
    const float *w = p->fit_w + (size_t)i * 5 * TK_FIBERS_FIT_WIDTH, v0 = values[i];
    float step[TK_FIBERS_FIT_WIDTH];
    for (int j = 0; j < TK_FIBERS_FIT_WIDTH; ++j) step[j] = values[nbr[j]] - v0;
    for (int r = 0; r < 5; ++r) {
        float s = 0.f;
        for (int j = 0; j < TK_FIBERS_FIT_WIDTH; ++j) s += w[r * TK_FIBERS_FIT_WIDTH + j] * step[j];
        th[r] = s;
    }
}

/* The series of up to TK_GRID_BATCH voxels on the grid, in float (it only ranks directions):
 * blocks of 16 directions accumulate in registers over the coefficients for every voxel
 * of the batch at once, so that the basis table (k x grid floats, 270 KB at lmax 8) streams
 * through the cache once a batch rather than once a voxel; cloned for AVX2 + FMA. */
#define TK_GRID_BATCH 4
/* eight floats, one AVX register (two SSE ones in the default clone) */
typedef float tk_float8 __attribute__((vector_size(32)));
TK_CPU_CLONES
static void grid_values_batch(const tk_fibers_plan *p, int nv, const double *const *sh, float *const *values,
                              float *vals4)
{
    const int k = p->k, stride = p->grid_padded;
    float coeff[TK_SH_MAX_LMAX * TK_SH_MAX_LMAX][TK_GRID_BATCH];
    for (int c = 0; c < k; ++c)
        for (int v = 0; v < TK_GRID_BATCH; ++v) coeff[c][v] = v < nv ? (float)sh[v][c] : 0.f;
    for (int i0 = 0; i0 < stride; i0 += 16) {
        tk_float8 acc[TK_GRID_BATCH][2];
        memset(acc, 0, sizeof acc);
        for (int c = 0; c < k; ++c) {
            tk_float8 lo, hi;
            memcpy(&lo, p->basis_t + (size_t)c * stride + i0, sizeof lo);
            memcpy(&hi, p->basis_t + (size_t)c * stride + i0 + 8, sizeof hi);
            for (int v = 0; v < TK_GRID_BATCH; ++v) acc[v][0] += coeff[c][v] * lo, acc[v][1] += coeff[c][v] * hi;
        }
        for (int v = 0; v < nv; ++v) {
            memcpy(values[v] + i0, &acc[v][0], sizeof acc[v][0]);
            memcpy(values[v] + i0 + 8, &acc[v][1], sizeof acc[v][1]);
        }
        if (vals4) /* interleaved, for grid_local_maxima_batch */
            for (int j = 0; j < 16; ++j)
                for (int v = 0; v < TK_GRID_BATCH; ++v) vals4[(size_t)(i0 + j) * 4 + v] = acc[v][j >> 3][j & 7];
    }
}

/* grid_local_maxima for the voxels of a batch at once: their values interleaved (vals4[4 i +
 * v]), so that each neighbour's values for all four voxels are one 16-byte load rather than
 * four gathers; the same tests, in the same float arithmetic, voxel by voxel. */
typedef float tk_float4 __attribute__((vector_size(16)));
typedef int tk_int4 __attribute__((vector_size(16)));
TK_CPU_CLONES
static void grid_local_maxima_batch(const tk_fibers_plan *p, int nv, const float *vals4, unsigned char *const *kinds)
{
    const tk_float4 zero = {0.f, 0.f, 0.f, 0.f}, ridge = {TK_RIDGE_RISE, TK_RIDGE_RISE, TK_RIDGE_RISE, TK_RIDGE_RISE};
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
        for (int v = 0; v < nv; ++v) kinds[v][i] = (unsigned char)(higher[v] == 0 ? 1 : shoulder[v] ? 2 : 0);
    }
}

/* The maxima of one voxel's anisotropic part (tk_fibers_anisotropic_part: aniso, scale > 0,
 * iso) whose grid values are in work's first grid_padded floats; as tk_fibers_voxel_maxima. */
static int maxima_from_grid(const tk_fibers_plan *p, const double *aniso, double scale, double iso, const float *values,
                            const unsigned char *kinds, double *work, int max_peaks, double *directions,
                            double *amplitudes, unsigned long long *polished, unsigned long long *iterations)
{
    const int g = p->grid, k = p->k, m = p->lmax;
    double *tensor = work + p->grid_padded / 2 + 1;
    /* column by column, so that the inner loop vectorizes without reassociation */
    for (int r = 0; r < k; ++r) tensor[r] = 0;
    for (int c = 1; c < k; ++c)
        for (int r = 0; r < k; ++r) tensor[r] += p->map_t[(size_t)c * k + r] * aniso[c];
    /* candidates, largest first: grid directions not below any neighbour, then the shoulder
     * candidates (each list keeps its TK_MAX_CANDIDATES largest) */
    int cand[2 * TK_MAX_CANDIDATES], ncand = 0;
    /* the grid directions' kinds (grid_local_maxima), unless the batch has them already */
    unsigned char *kind_buf = (unsigned char *)(tensor + k);
    if (!kinds) grid_local_maxima(p, values, kind_buf);
    const unsigned char *is_max = kinds ? kinds : kind_buf;
    const double cos_near = cos(1.5 * sqrt(2.0 * 3.14159265358979323846 / g));
    const double cos_by_max = cos(TK_SHOULDER_GAP * sqrt(2.0 * 3.14159265358979323846 / g));
    const float spacing_f = (float)sqrt(2.0 * 3.14159265358979323846 / g);
    /* the marked directions, a few per cent of the grid, found eight flags at a time */
    int *marked = (int *)(kind_buf + p->grid_padded), nmarked = 0;
    for (int i0 = 0; i0 < g; i0 += 8) {
        uint64_t flags;
        memcpy(&flags, is_max + i0, sizeof flags);
        if (!flags) continue;
        for (int i = i0; i < i0 + 8 && i < g; ++i)
            if (is_max[i]) marked[nmarked++] = i;
    }
    for (int kind = 1; kind <= 2; ++kind) {
        int *list = cand + ncand, n = 0;
        for (int q0 = 0; q0 < nmarked; ++q0) {
            const int i = marked[q0];
            if (is_max[i] != kind) continue;
            /* most shoulder candidates have no maximum within reach: the grid values say so */
            if (kind == 2) {
                float th[5];
                grid_fit_model(p, values, i, th);
                if (!tk_fibers_fit_reaches(th, spacing_f)) continue;
            }
            /* a shoulder candidate next to a grid maximum is on that maximum's hill */
            int by_max = 0;
            for (int q = 0; q < ncand && kind == 2 && !by_max; ++q)
                by_max = fabs(nt_dot3_cpu(p->dirs + (size_t)i * 3, p->dirs + (size_t)cand[q] * 3)) > cos_by_max;
            if (by_max) continue;
            int pos = n < TK_MAX_CANDIDATES ? n++ : TK_MAX_CANDIDATES;
            if (pos == TK_MAX_CANDIDATES) {
                if (values[i] <= values[list[TK_MAX_CANDIDATES - 1]]) continue;
                pos = TK_MAX_CANDIDATES - 1;
            }
            while (pos > 0 && values[list[pos - 1]] < values[i]) list[pos] = list[pos - 1], --pos;
            list[pos] = i;
        }
        ncand += n;
    }
    /* polish, merge, sort */
    voxel_tensor vt;
    vt_init(&vt, m, tensor);
    double found_dir[TK_MAX_CANDIDATES][3], found_amp[TK_MAX_CANDIDATES];
    int found = 0;
    /* A candidate next to a maximum already polished (within 1.5 grid steps) climbs the same
     * hill: two strict maxima of a band-limited function that close would need a saddle
     * between them inside one grid cell, which the candidate test could not see anyway. */
    const double spacing = sqrt(2.0 * 3.14159265358979323846 / g);
    for (int c = 0; c < ncand && found < TK_MAX_CANDIDATES; ++c) {
        double x[3], amp;
        memcpy(x, p->dirs + (size_t)cand[c] * 3, sizeof x);
        int near = 0;
        for (int f = 0; f < found && !near; ++f) near = fabs(nt_dot3_cpu(found_dir[f], x)) > cos_near;
        if (near) continue;
        /* A shoulder candidate (higher ground only beyond its nearest neighbours, or at one
         * neighbour only: a bump on a ridge that climbs on to a larger lobe) starts a polish
         * only where the function curves down around it with a maximum of its local
         * quadratic model within a grid spacing: a small lobe on a large one's flank, whose
         * basin the wider neighbourhood reaches across. */
        if (is_max[cand[c]] == 2) {
            double step = nt_newton_step_cpu(&vt, x);
            if (step < 0 || step > spacing) continue;
        }
        /* A grid maximum starts Newton at its model's maximum where that has one within a
         * grid spacing and lies above the grid direction: a start a few per cent of a
         * spacing off the maximum converges in two iterations, a grid direction in three
         * or four.  The model spans two spacings, wider than the narrowest bumps: one it
         * misjudges can put the start where the Hessian is indefinite, on the slope of a
         * larger neighbour that the climb would then reach instead; there (or where the
         * first step is not short) the climb starts again from the grid direction.  (The
         * uphill test reads the value the first iteration needs anyway.) */
        int strict = -1, climbed = 0;
        if (is_max[cand[c]] == 1) {
            float th[5];
            double start[3] = {x[0], x[1], x[2]};
            grid_fit_model(p, values, cand[c], th);
            tk_fibers_fit_start(th, spacing, start);
            if (vt_axm(&vt, start) >= (double)values[cand[c]]) {
                strict = nt_polish_cpu(&vt, start, &amp, &climbed, 0.25 * spacing);
                if (iterations) *iterations += (unsigned long long)climbed;
                if (strict >= 0) memcpy(x, start, sizeof x);
            }
        }
        if (strict < 0) {
            strict = nt_polish_cpu(&vt, x, &amp, &climbed, 0);
            if (iterations) *iterations += (unsigned long long)climbed;
        }
        if (polished) ++*polished;
        if (!strict) continue;
        tk_canonical_sign(3, x);
        int dup = 0;
        for (int f = 0; f < found && !dup; ++f) {
            double d = fabs(nt_dot3_cpu(found_dir[f], x));
            dup = d > 1.0 - 1e-10; /* within about 1e-5 rad */
        }
        if (dup) continue;
        int pos = found++;
        while (pos > 0 && found_amp[pos - 1] < amp) {
            memcpy(found_dir[pos], found_dir[pos - 1], sizeof found_dir[0]);
            found_amp[pos] = found_amp[pos - 1];
            --pos;
        }
        memcpy(found_dir[pos], x, sizeof x);
        found_amp[pos] = amp;
    }
    for (int f = 0; f < found && f < max_peaks; ++f) {
        if (directions) memcpy(directions + (size_t)f * 3, found_dir[f], sizeof found_dir[0]);
        if (amplitudes) amplitudes[f] = found_amp[f] * scale + iso;
    }
    return found;
}

int tk_fibers_voxel_maxima(const tk_fibers_plan *p, const double *sh, double *work, int max_peaks,
                           double *directions, double *amplitudes, unsigned long long *polished,
                           unsigned long long *iterations)
{
    /* The peaks of the series are those of its anisotropic part scaled to unit size: a
     * constant (zero, isotropic) voxel has none and costs no grid pass, and an isotropic
     * term that dwarfs the rest, or coefficients near float's underflow, no longer drown
     * the ranking and the Newton tests in rounding. */
    double aniso[TK_SH_MAX_LMAX * TK_SH_MAX_LMAX], iso;
    const double scale = tk_fibers_anisotropic_part(p->k, sh, aniso, &iso);
    if (!(scale > 0)) return 0;
    const double *one[1] = {aniso};
    float *values[1] = {(float *)work};
    grid_values_batch(p, 1, one, values, NULL);
    return maxima_from_grid(p, aniso, scale, iso, values[0], NULL, work, max_peaks, directions, amplitudes, polished,
                            iterations);
}

int tk_fibers_all_maxima(int lmax, tk_sh_basis basis, int legacy, const double *sh, int max_peaks, double *directions,
                         double *amplitudes)
{
    const tk_fibers_plan *plan = NULL;
    if (tk_fibers_plan_get(lmax, basis, legacy, &plan) != TK_OK) return -1;
    double *work = malloc(sizeof(double) * tk_fibers_plan_work(plan));
    int found = work ? tk_fibers_voxel_maxima(plan, sh, work, max_peaks, directions, amplitudes, NULL, NULL) : -1;
    if (!work) tk_set_error(TK_ERR_MEMORY, "out of memory");
    free(work);
    return found;
}

tk_status tk_fibers_find(const tk_fibers_options *o, size_t num_voxels, const float *sh, const uint8_t *mask,
                         float *directions, float *amplitudes, size_t *bad_voxels)
{
    return tk_fibers_find_timed(o, num_voxels, sh, mask, directions, amplitudes, bad_voxels, NULL);
}

tk_status tk_fibers_find_timed(const tk_fibers_options *o, size_t num_voxels, const float *sh, const uint8_t *mask,
                               float *directions, float *amplitudes, size_t *bad_voxels, tk_fibers_timing *timing)
{
    tk_clear_error();
    const double start_ms = tk_now_ms();
    if (timing) memset(timing, 0, sizeof *timing);
    if (!o) return tk_set_error(TK_ERR_ARGUMENT, "no options given");
    if (o->num_peaks < 1 || o->num_peaks > TK_MAX_CANDIDATES)
        return tk_set_error(TK_ERR_ARGUMENT, "the number of peaks must be from 1 to %d, got %d", TK_MAX_CANDIDATES,
                            o->num_peaks);
    if (!(o->relative_threshold >= 0 && o->relative_threshold <= 1))
        return tk_set_error(TK_ERR_ARGUMENT, "the relative threshold must be from 0 to 1");
    if (!(o->min_separation_deg >= 0 && o->min_separation_deg <= 90))
        return tk_set_error(TK_ERR_ARGUMENT, "the minimum separation must be from 0 to 90 degrees");
    if (isnan(o->threshold)) return tk_set_error(TK_ERR_ARGUMENT, "the threshold is NaN");
    if (num_voxels && !sh) return tk_set_error(TK_ERR_ARGUMENT, "no SH data given");
    if (o->backend != TK_FIBERS_CPU && o->backend != TK_FIBERS_OMP && o->backend != TK_FIBERS_CUDA)
        return tk_set_error(TK_ERR_ARGUMENT, "unknown fiber backend %d", (int)o->backend);
    const tk_fibers_plan *plan = NULL;
    tk_status status = tk_fibers_plan_get(o->lmax, o->basis, o->legacy, &plan);
    if (status != TK_OK) return status;
    if (o->backend == TK_FIBERS_CUDA)
        return tk_fibers_find_cuda(o, plan, num_voxels, sh, mask, directions, amplitudes, bad_voxels, timing);
    const double cos_sep = cos(o->min_separation_deg * 3.14159265358979323846 / 180.0);
    const int k = plan->k, np = o->num_peaks;
    const long long count = (long long)num_voxels;
    size_t bad = 0;
    unsigned long long polished = 0, iterations = 0, most = 0;
    int failed = 0;
#ifdef _OPENMP
    int threads = o->backend == TK_FIBERS_OMP ? (o->num_threads > 0 ? o->num_threads : omp_get_max_threads()) : 1;
#pragma omp parallel num_threads(threads) reduction(+ : bad, polished, iterations) reduction(max : most)
#endif
    {
        /* the plan's work, then the grid values of the batch's other voxels, then peaks */
        const size_t plan_work = tk_fibers_plan_work(plan), values_doubles = (size_t)plan->grid_padded / 2 + 1;
        /* ... and the batch's interleaved values and its kinds */
        const size_t vals4_doubles = (size_t)plan->grid_padded * 2, kinds_doubles = (size_t)plan->grid_padded / 2 + 1;
        double *work = malloc(sizeof(double) * (plan_work + (TK_GRID_BATCH - 1) * values_doubles + TK_MAX_CANDIDATES * 4 +
                                                vals4_doubles + kinds_doubles));
        if (!work) {
#ifdef _OPENMP
#pragma omp atomic write
#endif
            failed = 1;
        }
        double *dirs = work ? work + plan_work + (TK_GRID_BATCH - 1) * values_doubles : NULL;
        double *amps = dirs ? dirs + TK_MAX_CANDIDATES * 3 : NULL;
        float *vals4 = amps ? (float *)(amps + TK_MAX_CANDIDATES) : NULL;
        unsigned char *kinds_all = vals4 ? (unsigned char *)(vals4 + (size_t)plan->grid_padded * 4) : NULL;
        /* voxels in batches that share one pass over the grid's basis table */
        const long long batches = (count + TK_GRID_BATCH - 1) / TK_GRID_BATCH;
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 16)
#endif
        for (long long b = 0; b < batches; ++b) {
            if (!work) continue;
            double aniso[TK_GRID_BATCH][TK_SH_MAX_LMAX * TK_SH_MAX_LMAX], scale[TK_GRID_BATCH], iso[TK_GRID_BATCH];
            const double *live_aniso[TK_GRID_BATCH];
            float *live_values[TK_GRID_BATCH], *values_of[TK_GRID_BATCH];
            int nlive = 0;
            const long long first = b * TK_GRID_BATCH, last = first + TK_GRID_BATCH < count ? first + TK_GRID_BATCH : count;
            for (long long v = first; v < last; ++v) {
                const int slot = (int)(v - first);
                double coeffs[TK_SH_MAX_LMAX * TK_SH_MAX_LMAX];
                int ok = !mask || mask[v];
                for (int c = 0; c < k && ok; ++c) {
                    coeffs[c] = sh[(size_t)v * k + c];
                    if (!isfinite(coeffs[c])) ok = 0, ++bad;
                }
                scale[slot] = ok ? tk_fibers_anisotropic_part(k, coeffs, aniso[slot], &iso[slot]) : 0;
                values_of[slot] = NULL;
                if (!(scale[slot] > 0)) continue;
                values_of[slot] = nlive == 0 ? (float *)work : (float *)(work + plan_work + (nlive - 1) * values_doubles);
                live_aniso[nlive] = aniso[slot], live_values[nlive++] = values_of[slot];
            }
            unsigned char *live_kinds[TK_GRID_BATCH], *kinds_of[TK_GRID_BATCH];
            for (int q = 0; q < TK_GRID_BATCH; ++q) live_kinds[q] = kinds_all + (size_t)q * plan->grid_padded;
            if (nlive) {
                grid_values_batch(plan, nlive, live_aniso, live_values, vals4);
                grid_local_maxima_batch(plan, nlive, vals4, live_kinds);
            }
            for (int slot = 0, q = 0; slot < (int)(last - first); ++slot) kinds_of[slot] = values_of[slot] ? live_kinds[q++] : NULL;
            for (long long v = first; v < last; ++v) {
                const int slot = (int)(v - first);
                float *od = directions ? directions + (size_t)v * np * 3 : NULL;
                float *oa = amplitudes ? amplitudes + (size_t)v * np : NULL;
                int kept[TK_MAX_CANDIDATES];
                unsigned long long voxel_iterations = 0;
                int found = values_of[slot] ? maxima_from_grid(plan, aniso[slot], scale[slot], iso[slot], values_of[slot],
                                                               kinds_of[slot], work, TK_MAX_CANDIDATES, dirs, amps,
                                                               &polished, &voxel_iterations)
                                            : 0;
                iterations += voxel_iterations;
                most = voxel_iterations > most ? voxel_iterations : most;
                if (found > TK_MAX_CANDIDATES) found = TK_MAX_CANDIDATES;
                tk_fibers_select(np, o->threshold, o->relative_threshold, o->min_separation_deg, cos_sep, found, dirs,
                                 amps, kept, od, oa);
            }
        }
        free(work);
    }
    if (bad_voxels) *bad_voxels = bad;
    if (failed) return tk_set_error(TK_ERR_MEMORY, "out of memory for peak-finder work buffers");
    if (timing) {
        timing->total_ms = timing->kernel_ms = tk_now_ms() - start_ms;
        timing->polished = polished, timing->newton_iterations = iterations, timing->most_iterations = most;
    }
    return TK_OK;
}
