/* The segmentation on the host (fixels_segment.h's text) and the direction set's tables. */
#include "fixels_segment.h"
#include "fixels_sphere_1281.h"

int tk_fixels_segment(const tk_fixels_view *view, const double *sh, tk_fixels_work *w, float *afd, float *peak_amp,
                      float *mean_dir, float *peak_dir, uint8_t *lobe_of_dir, int have_values)
{
    return tk_fixels_segment_view(view, sh, w, afd, peak_amp, mean_dir, peak_dir, lobe_of_dir, have_values);
}

void tk_fixels_sample_values4(const tk_fixels_view *view, const double *const *sh, double *const *values)
{
    fx_host_sample_values4(view->basis, view->k, sh, values);
}

const double *tk_fixels_directions(void)
{
    return &tk_fixels_sphere_1281_dirs[0][0];
}

const double *tk_fixels_weights(void)
{
    return tk_fixels_sphere_1281_weights;
}

const short (*tk_fixels_adjacency(void))[6]
{
    return tk_fixels_sphere_1281_adj;
}
