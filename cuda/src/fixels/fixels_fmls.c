/* The segmentation on the host (fixels_segment.h's text) and the direction sets' tables. */
#include <stdlib.h>

#include "fixels_segment.h"
#include "tk_bench_hooks.h"
#include "fixels_sphere_1281.h"
#include "fixels_sphere_5121.h"

int tk_fixels_segment(const tk_fixels_view *view, const double *sh, tk_fixels_work *w, float *afd, float *peak_amp,
                      float *mean_dir, float *peak_dir, uint8_t *lobe_of_dir, int have_values)
{
    return tk_fixels_segment_view(view, sh, w, afd, peak_amp, mean_dir, peak_dir, lobe_of_dir, have_values);
}

void tk_fixels_sample_values4(const tk_fixels_view *view, const double *const *sh, double *const *values)
{
    fx_host_sample_values4(view->basis, view->n, view->k, sh, values);
}

int tk_fixels_walk_order(const double *values, int n, int *order, int vector)
{
    double most;
    if (n < 1 || n > 65536) return -2;
    if (fx_host_no_lobes(values, n, &most)) return -1;
    uint32_t *keys = malloc(2 * sizeof(uint32_t) * (size_t)n);
    if (!keys) return -2;
    const int npos = fx_host_sorted_positive(values, n, most, keys, keys + n, order, vector);
    free(keys);
    return npos;
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
