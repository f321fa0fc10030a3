/* The per-voxel choice of peaks (thresholds, separation, count, NaN fill), shared by the
 * CPU and CUDA peak finders so that both apply the options identically. */
#ifndef TK_FIBERS_SELECT_H
#define TK_FIBERS_SELECT_H

#include <math.h>

#include "common/tk_hd.h"

/* found maxima (dirs found x 3, amps), sorted by amplitude descending, to num_peaks outputs.
 * kept_index: scratch of num_peaks ints (the kept maxima's indices).  cos_sep =
 * cos(min_separation), used when min_separation_deg > 0.  Either output may be NULL.
 * Returns the number kept. */
TK_HD static inline int tk_fibers_select(int num_peaks, double threshold, double relative_threshold,
                                          double min_separation_deg, double cos_sep, int found, const double *dirs,
                                          const double *amps, int *kept_index, float *out_dir, float *out_amp)
{
    int kept = 0;
    for (int f = 0; f < found && kept < num_peaks; ++f) {
        /* Any threshold, negative (or -inf: none, sh2peaks' default) included.  The relative
         * threshold is a fraction of the voxel's largest peak: with none positive, none passes. */
        if (!(amps[f] > threshold)) continue;
        if (relative_threshold > 0 && !(amps[0] > 0 && amps[f] >= relative_threshold * amps[0])) continue;
        int close = 0; /* within the separation of a larger peak already kept */
        for (int q = 0; q < kept && min_separation_deg > 0 && !close; ++q) {
            const double *a = dirs + kept_index[q] * 3, *b = dirs + f * 3;
            close = fabs(a[0] * b[0] + a[1] * b[1] + a[2] * b[2]) > cos_sep;
        }
        if (close) continue;
        if (out_dir)
            for (int i = 0; i < 3; ++i) out_dir[kept * 3 + i] = (float)dirs[f * 3 + i];
        if (out_amp) out_amp[kept] = (float)amps[f];
        kept_index[kept++] = f;
    }
    for (int q = kept; q < num_peaks; ++q) {
        if (out_dir) out_dir[q * 3] = out_dir[q * 3 + 1] = out_dir[q * 3 + 2] = NAN;
        if (out_amp) out_amp[q] = NAN;
    }
    return kept;
}

/* The unit-scaled amplitude a further maximum must exceed to change a voxel's output (its
 * amplitudes are scale * unit-scaled + iso), given the maxima found so far (sorted
 * descending, unit-scaled): the threshold, the relative threshold of the largest so far (the
 * largest can only grow), and, once num_peaks are kept, the smallest kept (as
 * tk_fibers_select keeps them; a smaller maximum found later is not kept, whatever else is
 * found, unless a separation lets a larger later one drop a kept one: then this part is off).
 * out, kept: scratch of found entries.  Both backends prune their climbs with it. */
TK_HD static inline double tk_fibers_output_bar(int num_peaks, double threshold, double relative_threshold,
                                                double min_separation_deg, double scale, double iso, int found,
                                                const double *dirs, const double *amps, double *out, int *kept)
{
    double bar = (threshold - iso) / scale;
    if (found && relative_threshold > 0) {
        const double top = amps[0] * scale + iso;
        const double rel = (relative_threshold * top - iso) / scale;
        if (top > 0 && rel > bar) bar = rel;
    }
    if (found >= num_peaks && min_separation_deg == 0) {
        for (int f = 0; f < found; ++f) out[f] = amps[f] * scale + iso;
        const int n = tk_fibers_select(num_peaks, threshold, relative_threshold, 0, 1, found, dirs, out, kept, NULL, NULL);
        if (n > 0 && n == num_peaks && amps[kept[n - 1]] > bar) bar = amps[kept[n - 1]];
    }
    return bar;
}

#endif
