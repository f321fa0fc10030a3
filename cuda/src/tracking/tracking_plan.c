/* The tracking plan: options checked and their defaults resolved for the grid (MRtrix3's
 * SharedBase::set_step_and_angle, set_num_points and set_cutoff, tracking/shared.cpp, with
 * SD_STREAM's and iFOD1's defaults from tracking/tractography.h), the inverse affine, the
 * SH-to-tensor map the peak search climbs on and iFOD1's calibration. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/plan_hand_out.h"
#include "common/multi_device.h"
#include "tracking_internal.h"
#include "tracking_poly.h"
#include "tracking_tensor.h"

/* MRtrix3's Defaults (tracking/tractography.h) for SD_STREAM without ACT. */
#define TK_TRACK_DEFAULT_STEP_VOXELS 0.1    /* stepsize_voxels_firstorder */
#define TK_TRACK_DEFAULT_ANGLE_DEG 60.0     /* angle_deterministic */
#define TK_TRACK_DEFAULT_CUTOFF 0.1         /* cutoff_fod */
#define TK_TRACK_DEFAULT_MIN_VOXELS 5.0     /* minlength_voxels_noact */
#define TK_TRACK_DEFAULT_MAX_VOXELS 100.0   /* maxlength_voxels */
#define TK_TRACK_DEFAULT_CHUNK 4096
/* iFOD1's (tractography.h angle_ifod1, max_trials_per_step; iFOD1.h fod_power) */
#define TK_TRACK_IFOD1_ANGLE_DEG 15.0
#define TK_TRACK_IFOD1_MAX_TRIALS 1000
#define TK_TRACK_IFOD1_POWER 1.0

void tk_tracking_options_init(tk_tracking_options *o, int lmax)
{
    *o = (tk_tracking_options){.algorithm = TK_TRACK_SD_STREAM,
                               .lmax = lmax,
                               .basis = TK_SH_TOURNIER,
                               .cutoff = TK_TRACK_DEFAULT_CUTOFF,
                               .chunk_seeds = TK_TRACK_DEFAULT_CHUNK,
                               .backend = TK_BACKEND_CPU};
}

/* 1 + ceil(length / step) style counts, robust to the last bit of the division (5 / 0.1 is
 * 50.000000000000007 in double, which must count as 50). */
static size_t steps_for(double length, double step)
{
    const double r = length / step;
    return (size_t)ceil(r - 1e-9 * (r > 1 ? r : 1));
}

static tk_status check_options(const tk_tracking_options *o)
{
    if (!o) return tk_set_error(TK_ERR_ARGUMENT, "no tracking options given");
    if (o->algorithm != TK_TRACK_SD_STREAM && o->algorithm != TK_TRACK_IFOD1)
        return tk_set_error(TK_ERR_ARGUMENT, "unknown tracking algorithm %d", (int)o->algorithm);
    if (o->lmax < 2 || o->lmax > TK_SH_MAX_LMAX || o->lmax % 2)
        return tk_set_error(TK_ERR_ARGUMENT, "lmax must be even and from 2 to %d, got %d", TK_SH_MAX_LMAX, o->lmax);
    if (o->basis != TK_SH_TOURNIER && o->basis != TK_SH_DESCOTEAUX)
        return tk_set_error(TK_ERR_ARGUMENT, "unknown SH basis %d", (int)o->basis);
    if (!(o->step_mm >= 0) || !isfinite(o->step_mm))
        return tk_set_error(TK_ERR_ARGUMENT, "the step must be positive (or 0 for the default), got %g", o->step_mm);
    if (!(o->max_angle_deg >= 0 && o->max_angle_deg <= 90))
        return tk_set_error(TK_ERR_ARGUMENT, "the maximum angle must be in (0, 90] degrees (or 0 for the default), got %g",
                            o->max_angle_deg);
    if (!isfinite(o->cutoff)) return tk_set_error(TK_ERR_ARGUMENT, "the cutoff must be finite, got %g", o->cutoff);
    if (isnan(o->min_length_mm) || isinf(o->min_length_mm))
        return tk_set_error(TK_ERR_ARGUMENT, "the minimum length must be finite, got %g", o->min_length_mm);
    if (!(o->max_length_mm >= 0) || !isfinite(o->max_length_mm))
        return tk_set_error(TK_ERR_ARGUMENT, "the maximum length must be positive (or 0 for the default), got %g",
                            o->max_length_mm);
    for (int a = 0; a < 3; ++a)
        if (!isfinite(o->seed_direction[a])) return tk_set_error(TK_ERR_ARGUMENT, "the seed direction is not finite");
    if (o->max_trials < 0 || (unsigned)o->max_trials > TK_PHILOX_MAX_TRIALS)
        return tk_set_error(TK_ERR_ARGUMENT, "the trials per step must be from 0 to %u, got %d", TK_PHILOX_MAX_TRIALS,
                            o->max_trials);
    if (!(o->fod_power >= 0) || !isfinite(o->fod_power))
        return tk_set_error(TK_ERR_ARGUMENT, "the FOD power must be positive (or 0 for the default), got %g", o->fod_power);
    if (o->chunk_seeds == 0) return tk_set_error(TK_ERR_ARGUMENT, "the chunk must hold at least one seed");
    if (o->backend == TK_BACKEND_AUTO)
        return tk_set_error(TK_ERR_ARGUMENT, "the tracker takes a resolved backend (cpu, omp or cuda), not auto");
    if (o->backend != TK_BACKEND_CPU && o->backend != TK_BACKEND_OMP && o->backend != TK_BACKEND_CUDA)
        return tk_set_error(TK_ERR_ARGUMENT, "unknown tracking backend %d", (int)o->backend);
    if (o->backend == TK_BACKEND_CUDA && o->cuda_device < 0)
        return tk_set_error(TK_ERR_ARGUMENT, "the CUDA device number must be >= 0, got %d", o->cuda_device);
    if (o->num_threads < 0) return tk_set_error(TK_ERR_ARGUMENT, "the thread count must be >= 0, got %d", o->num_threads);
    if (!tk_device_count_checked(o->cuda_device_count, "cuda_device_count")) return TK_ERR_ARGUMENT;
    return TK_OK;
}

/* world2vox = the inverse of the affine's top three rows; the grid's voxel size. */
static tk_status invert_grid(const tk_tracking_grid *g, double *inv, double *vox)
{
    for (int a = 0; a < 3; ++a)
        if (g->dims[a] == 0) return tk_set_error(TK_ERR_ARGUMENT, "the grid has a zero dimension");
    if (g->dims[0] > SIZE_MAX / g->dims[1] / g->dims[2]) return tk_set_error(TK_ERR_ARGUMENT, "the grid is too large");
    const double *m = g->vox2world;
    for (int e = 0; e < 16; ++e)
        if (!isfinite(m[e])) return tk_set_error(TK_ERR_ARGUMENT, "the voxel-to-world affine is not finite");
    if (m[12] != 0 || m[13] != 0 || m[14] != 0 || m[15] != 1)
        return tk_set_error(TK_ERR_ARGUMENT, "the voxel-to-world affine's last row must be 0 0 0 1");
    /* the 3 x 3 part's inverse by cofactors */
    const double a = m[0], b = m[1], c = m[2], d = m[4], e = m[5], f = m[6], gg = m[8], h = m[9], i = m[10];
    const double c00 = e * i - f * h, c01 = -(d * i - f * gg), c02 = d * h - e * gg;
    const double det = a * c00 + b * c01 + c * c02;
    double col2 = 1;
    for (int k = 0; k < 3; ++k)
        col2 *= sqrt(m[k] * m[k] + m[4 + k] * m[4 + k] + m[8 + k] * m[8 + k]);
    if (!(fabs(det) > 1e-12 * col2) || !(col2 > 0))
        return tk_set_error(TK_ERR_ARGUMENT, "the voxel-to-world affine is singular");
    const double r[9] = {c00 / det, -(b * i - c * h) / det, (b * f - c * e) / det,
                         c01 / det, (a * i - c * gg) / det, -(a * f - c * d) / det,
                         c02 / det, -(a * h - b * gg) / det, (a * e - b * d) / det};
    for (int row = 0; row < 3; ++row) {
        for (int col = 0; col < 3; ++col) inv[row * 4 + col] = r[row * 3 + col];
        inv[row * 4 + 3] = -(r[row * 3] * m[3] + r[row * 3 + 1] * m[7] + r[row * 3 + 2] * m[11]);
    }
    *vox = cbrt(col2); /* SharedBase::vox(): the geometric mean of the voxel sizes */
    return TK_OK;
}

/* SD_STREAM's GPU lanes a seed (tracking_tensor.h): the default, or TK_TRACK_SD_LANES where
 * set, a tuning knob that lets one build compare the kernels (8 and 16: the group kernel;
 * 32: a warp a seed).  The CPU sums in the same order, so both backends follow it. */
static tk_status sd_lanes_from_env(int *lanes)
{
    *lanes = TK_TRACK_SD_LANES_DEFAULT;
    const char *v = getenv("TK_TRACK_SD_LANES");
    if (!v || !*v) return TK_OK;
    if (!strcmp(v, "8")) *lanes = 8;
    else if (!strcmp(v, "16")) *lanes = 16;
    else if (!strcmp(v, "32")) *lanes = 32;
    else return tk_set_error(TK_ERR_ARGUMENT, "TK_TRACK_SD_LANES must be 8, 16 or 32, got '%s'", v);
    return TK_OK;
}

tk_status tk_tracking_plan_create(const tk_tracking_options *opts, const tk_tracking_grid *grid,
                                  tk_tracking_plan **plan)
{
    tk_clear_error();
    if (!plan) return tk_set_error(TK_ERR_ARGUMENT, "no place for the plan given");
    *plan = NULL;
    tk_status s = check_options(opts);
    if (s != TK_OK) return s;
    if (!grid) return tk_set_error(TK_ERR_ARGUMENT, "no grid given");
    int sd_lanes = 0;
    s = sd_lanes_from_env(&sd_lanes);
    if (s != TK_OK) return s;
    tk_tracking_plan *p = calloc(1, sizeof *p);
    if (!p) return tk_set_error(TK_ERR_MEMORY, "out of memory for a tracking plan");
    p->opts = *opts, p->grid = *grid, p->sd_lanes = sd_lanes;
    double vox = 0;
    s = invert_grid(grid, p->world2vox, &vox);
    if (s != TK_OK) {
        free(p);
        return s;
    }
    tk_tracking_options *o = &p->opts;
    if (o->step_mm == 0) o->step_mm = TK_TRACK_DEFAULT_STEP_VOXELS * vox;
    const int ifod1 = o->algorithm == TK_TRACK_IFOD1;
    if (o->max_angle_deg == 0) o->max_angle_deg = ifod1 ? TK_TRACK_IFOD1_ANGLE_DEG : TK_TRACK_DEFAULT_ANGLE_DEG;
    if (o->max_trials == 0) o->max_trials = TK_TRACK_IFOD1_MAX_TRIALS;
    if (o->fod_power == 0) o->fod_power = TK_TRACK_IFOD1_POWER;
    if (o->min_length_mm == 0) o->min_length_mm = TK_TRACK_DEFAULT_MIN_VOXELS * vox;
    if (o->min_length_mm < 0) o->min_length_mm = 0;
    if (o->max_length_mm == 0) o->max_length_mm = TK_TRACK_DEFAULT_MAX_VOXELS * vox;
    if (o->min_length_mm > o->max_length_mm) {
        s = tk_set_error(TK_ERR_ARGUMENT, "the minimum length (%g mm) exceeds the maximum (%g mm)", o->min_length_mm,
                         o->max_length_mm);
        free(p);
        return s;
    }
    p->max_angle_rad = o->max_angle_deg * (3.14159265358979323846 / 180.0);
    p->cos_max_angle = cos(p->max_angle_rad);
    p->cone_radius = 2.0 * sin(0.5 * p->max_angle_rad), p->cone_radius2 = p->cone_radius * p->cone_radius;
    /* set_num_points() without downsampling (SD_STREAM's ratio 1): the minimum radius's
     * chord is the step, so max_num_points_preds = 3 + ceil(max_dist / step) and
     * min_num_points_preds = 1 + ceil(min_dist / step) */
    p->min_points = 1 + steps_for(o->min_length_mm, o->step_mm);
    p->max_points = 3 + steps_for(o->max_length_mm, o->step_mm);
    p->k = (int)tk_sh_num_coeffs(o->lmax);
    p->map = malloc((size_t)p->k * p->k * sizeof *p->map);
    if (!p->map) {
        free(p);
        return tk_set_error(TK_ERR_MEMORY, "out of memory for the SH-to-tensor map");
    }
    s = tk_sh_to_tensor_map(o->basis, o->legacy, o->lmax, p->map);
    /* column-major for the peak search's column-by-column product (tracking_peak.h): each
     * column contiguous, so the host's loop over the tensor's entries vectorises */
    for (int r = 0; r < p->k; ++r)
        for (int c = r + 1; c < p->k; ++c) {
            const double t = p->map[(size_t)r * p->k + c];
            p->map[(size_t)r * p->k + c] = p->map[(size_t)c * p->k + r];
            p->map[(size_t)c * p->k + r] = t;
        }
    if (o->lmax <= TK_TRACK_ROWS_MAX_ORDER) tk_tracking_rows_recipe(o->lmax, p->rows_src, p->rows_weight);
    if (o->lmax <= TK_TRACK_POLY_MAX_ORDER) {
        tk_tracking_poly_recipe(o->lmax, p->poly_exp, p->poly_mult);
        /* the CPU's evaluator walks the monomials in this order without the table */
        if (s == TK_OK && !tk_tracking_poly_order_matches(o->lmax, (const unsigned char(*)[3])p->poly_exp))
            s = tk_set_error(TK_ERR_UNSUPPORTED, "iFOD1's monomial table is not in the evaluator's order (a bug)");
    }
    /* TK_TRACK_DENSE_PRODUCT=1 keeps the dense product (A/B runs: the same points) */
    const char *dense = getenv("TK_TRACK_DENSE_PRODUCT");
    if (s == TK_OK && !(dense && dense[0] == '1')) p->map_classes = tk_tracking_map_classes_make(p);
    if (s == TK_OK && ifod1) s = tk_tracking_calibrate(p);
    /* the GPU's copy of the plan, once its tables are final */
    if (s == TK_OK && o->backend == TK_BACKEND_CUDA) s = tk_tracking_cuda_create(p, &p->cuda);
    return TK_PLAN_HAND_OUT(s, p, tk_tracking_plan_destroy, plan);
}

tk_tracking_map_classes *tk_tracking_map_classes_make(const tk_tracking_plan *plan)
{
    if (plan->k != 45 || plan->opts.lmax != 8) return NULL;
    tk_tracking_map_classes *m = calloc(1, sizeof *m);
    if (!m) return NULL; /* the dense product runs: slower, the same sums */
    /* each row's class from its monomial's parities in x0 and x1 (x2's follows: degree 8) */
    int row_class[45], slot_of[45], used[TK_TRACK_MAP_CLASSES] = {0, 0, 0, 0};
    for (int r = 0; r < 45; ++r) {
        row_class[r] = 2 * (plan->poly_exp[r][0] & 1) + (plan->poly_exp[r][1] & 1);
        slot_of[r] = used[row_class[r]]++;
    }
    for (int g = 0; g < TK_TRACK_MAP_CLASSES; ++g) {
        m->nvec[g] = (used[g] + 3) / 4;
        /* 4, 3, 3, 3 at lmax 8: the product's two cases (tk_tracking_map_times_classes) */
        if (m->nvec[g] < 3 || m->nvec[g] > TK_TRACK_MAP_CLASS_VECTORS) goto dense;
        for (int q = 0; q < 4 * TK_TRACK_MAP_CLASS_VECTORS; ++q) m->slot_row[g][q] = -1;
    }
    for (int r = 0; r < 45; ++r) m->slot_row[row_class[r]][slot_of[r]] = r;
    for (int c = 0; c < 45; ++c) {
        const double *col = plan->map + (size_t)c * 45;
        int g = -1;
        for (int r = 0; r < 45; ++r) {
            if (col[r] == 0.0) continue;
            if (g >= 0 && row_class[r] != g) goto dense; /* two classes: not the pattern */
            g = row_class[r];
        }
        if (g < 0) g = 0; /* an all-zero column: any class (its products add nothing) */
        m->cols[g][m->ncols[g]++] = c;
        for (int r = 0; r < 45; ++r)
            if (row_class[r] == g) m->col[c][slot_of[r]] = col[r];
    }
    return m;
dense:
    free(m);
    return NULL;
}

void tk_tracking_plan_destroy(tk_tracking_plan *plan)
{
    if (!plan) return;
    tk_tracking_cuda_destroy(plan->cuda);
    free(plan->map);
    free(plan->map_classes);
    free(plan->calib_dirs);
    free(plan);
}

void tk_tracking_plan_options(const tk_tracking_plan *plan, tk_tracking_options *out)
{
    if (plan && out) *out = plan->opts;
}

void tk_tracking_plan_point_limits(const tk_tracking_plan *plan, size_t *min_points, size_t *max_points)
{
    if (!plan) return;
    if (min_points) *min_points = plan->min_points;
    if (max_points) *max_points = plan->max_points;
}
