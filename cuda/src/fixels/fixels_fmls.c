/* The segmentation on the host (fixels_segment.h's text) and the direction sets' tables. */
#include <stdlib.h>
#include <string.h>

#include "fixels_segment.h"
#include "tk_bench_hooks.h"
#include "fixels_sphere_1281.h"
#include "fixels_sphere_5121.h"

int tk_fixels_segment(const tk_fixels_view *view, const double *sh, tk_fixels_work *w, float *afd, float *peak_amp,
                      float *mean_dir, float *peak_dir, uint8_t *lobe_of_dir, int have_values)
{
    return tk_fixels_segment_view(view, sh, w, afd, peak_amp, mean_dir, peak_dir, lobe_of_dir, have_values);
}

#if defined(__x86_64__) && defined(__GNUC__)
#define TK_FIXELS_SAMPLE_V4 1
typedef double tk_fixels_v8 __attribute__((vector_size(64)));
/* fx_host_sample_values4 with AVX-512 (F and VL, with FMA): blocks of 16 directions in 8-wide registers.
 * Each direction's sum is still the coefficient-ordered chain of fused multiply-adds that the
 * AVX2 clone computes (its scalar tail contracts the same way), so the values are the same bits;
 * the wider registers leave each accumulator's chain twice the time between its updates (the
 * AVX2 loop's eight 4-wide chains only just cover the FMA latency). */
__attribute__((target("avx512f,avx512vl,avx2,fma"))) static void fx_host_sample_values4_v4(const double *basis_t, int n, int k,
                                                                            const double *const *sh,
                                                                            double *const *values)
{
    int d = 0;
    for (; d + 16 <= n; d += 16) {
        const tk_fixels_v8 zero = {0, 0, 0, 0, 0, 0, 0, 0};
        tk_fixels_v8 acc[4][2] = {{zero, zero}, {zero, zero}, {zero, zero}, {zero, zero}};
        for (int c = 0; c < k; ++c) {
            const double *row = basis_t + (size_t)c * n + d;
            tk_fixels_v8 r0, r1;
            memcpy(&r0, row, 64), memcpy(&r1, row + 8, 64);
            for (int i = 0; i < 4; ++i) {
                const double x = sh[i][c];
                const tk_fixels_v8 s8 = {x, x, x, x, x, x, x, x};
                acc[i][0] += r0 * s8, acc[i][1] += r1 * s8;
            }
        }
        for (int i = 0; i < 4; ++i) memcpy(values[i] + d, &acc[i][0], 64), memcpy(values[i] + d + 8, &acc[i][1], 64);
    }
    for (; d < n; ++d)
        for (int i = 0; i < 4; ++i) {
            double v = 0.0;
            for (int c = 0; c < k; ++c) v += basis_t[(size_t)c * n + d] * sh[i][c];
            values[i][d] = v;
        }
}
#endif

/* The samples of four series by the widest path this CPU has (wide 1), or by the AVX2/default
 * clone (wide 0); returns 0, or -1 where wide asks for AVX-512 and the CPU has none. */
static int sample_values4(const tk_fixels_view *view, const double *const *sh, double *const *values, int wide)
{
#ifdef TK_FIXELS_SAMPLE_V4
    /* the features one by one: clang before 16 knows no "x86-64-v4" here (the fuzz build) */
    if (wide && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        fx_host_sample_values4_v4(view->basis, view->n, view->k, sh, values);
        return 0;
    }
#endif
    fx_host_sample_values4(view->basis, view->n, view->k, sh, values);
    return wide == 2 ? -1 : 0;
}

void tk_fixels_sample_values4(const tk_fixels_view *view, const double *const *sh, double *const *values)
{
    sample_values4(view, sh, values, 1);
}

int tk_fixels_plan_sample4(const tk_fixels_plan *plan, const double *const *sh, double *const *values, int path)
{
    if (!plan || path < 0 || path > 1) return -2;
    return sample_values4(&plan->view, sh, values, path ? 2 : 0);
}

int tk_fixels_walk_order(const double *values, int n, int *order, int vector)
{
    double most;
    if (n < 1 || n > 65536) return -2;
    if (fx_host_no_lobes(values, n, &most, vector)) return -1;
    uint32_t *keys = malloc(2 * sizeof(uint32_t) * (size_t)n);
    if (!keys) return -2;
    const int npos = fx_host_sorted_positive(values, n, most, keys, keys + n, order, vector);
    free(keys);
    return npos;
}

int tk_fixels_plan_tensor(const tk_fixels_plan *plan, const double *aniso, double *tensor, int path)
{
    if (!plan || path < 0 || path > 1) return -2;
    fx_host_tensor_path(plan->view.map, aniso, plan->k, tensor, path);
    return 0;
}

const double *tk_fixels_directions(void)
{
    return &tk_fixels_sphere_1281_dirs[0][0];
}

const double *tk_fixels_weights(void)
{
    return tk_fixels_sphere_1281_weights;
}

tk_status tk_fixels_direction_set(int num_directions, const double **directions, const double **weights)
{
    const double *d = NULL, *w = NULL;
    if (num_directions == 0 || num_directions == TK_FIXELS_DIRECTIONS) {
        d = &tk_fixels_sphere_1281_dirs[0][0], w = tk_fixels_sphere_1281_weights;
    } else if (num_directions == TK_FIXELS_DIRECTIONS_DENSE) {
        d = &tk_fixels_sphere_5121_dirs[0][0], w = tk_fixels_sphere_5121_weights;
    } else {
        return tk_set_error(TK_ERR_ARGUMENT, "no direction set of %d directions: give %d (fod2fixel's) or %d",
                            num_directions, TK_FIXELS_DIRECTIONS, TK_FIXELS_DIRECTIONS_DENSE);
    }
    if (directions) *directions = d;
    if (weights) *weights = w;
    return TK_OK;
}

const short (*tk_fixels_adjacency(int num_dirs))[6]
{
    return num_dirs == TK_FIXELS_DIRECTIONS_DENSE ? tk_fixels_sphere_5121_adj
           : num_dirs == TK_FIXELS_DIRECTIONS     ? tk_fixels_sphere_1281_adj
                                                  : NULL;
}
