/* The cpu and omp backends: voxels split over threads, one scratch per thread, each voxel
 * segmented on its own (fixels_fmls.c); every output slot past a voxel's count is NaN. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "fixels_internal.h"

static void fill_nan(float *p, size_t n)
{
    if (p)
        for (size_t i = 0; i < n; ++i) p[i] = NAN;
}

tk_status tk_fixels_cpu_execute(const tk_fixels_plan *plan, size_t num_voxels, const float *sh, const uint8_t *mask,
                                tk_fixels_output *out)
{
    const int k = plan->k, S = plan->slots, N = plan->view.n;
    const long long count = (long long)num_voxels;
    size_t bad = 0, truncated = 0;
    int failed = 0;
#ifdef _OPENMP
    const tk_fixels_options *o = &plan->opts;
    int threads = o->backend == TK_BACKEND_OMP ? (o->num_threads > 0 ? o->num_threads : omp_get_max_threads()) : 1;
#pragma omp parallel num_threads(threads) reduction(+ : bad, truncated)
#endif
    {
        tk_fixels_work work, *w = &work;
        /* the four voxels' samples after the work arrays, on a double's boundary (the work
         * arrays end in int arrays of an odd count) */
        const size_t head = (tk_fixels_work_bytes(N, N) + 63) / 64 * 64;
        void *block = malloc(head + 4 * sizeof(double) * N);
        double *vals[4];
        if (block) {
            tk_fixels_work_bind(w, &plan->view, block, N);
            for (int i = 0; i < 4; ++i) vals[i] = (double *)((char *)block + head) + (size_t)i * N;
        } else {
            w = NULL;
        }
        if (!w) {
#ifdef _OPENMP
#pragma omp atomic write
#endif
            failed = 1;
        }
        double *own_values = w ? w->values : NULL;
        /* voxels in groups of four that share one pass over the basis (tk_fixels_sample_values4),
         * two groups a grab (~0.1 ms of work): the threads end a call within that of each other */
        const long long groups = (count + 3) / 4;
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 2)
#endif
        for (long long g = 0; g < groups; ++g) {
            double c[4][TK_FIXELS_K_MAX];
            const double *live[4];
            long long live_v[4];
            int nlive = 0;
            for (long long v = 4 * g; v < 4 * g + 4 && v < count; ++v) {
                const size_t o1 = (size_t)v * S, o3 = o1 * 3;
                fill_nan(out->afd ? out->afd + o1 : NULL, S), fill_nan(out->peak_amp ? out->peak_amp + o1 : NULL, S);
                fill_nan(out->mean_dir ? out->mean_dir + o3 : NULL, 3 * (size_t)S);
                fill_nan(out->peak_dir ? out->peak_dir + o3 : NULL, 3 * (size_t)S);
                if (out->lobe_of_dir) memset(out->lobe_of_dir + (size_t)v * N, TK_FIXELS_NO_LOBE, (size_t)N);
                out->count[v] = 0;
                if (!w || (mask && !mask[v])) continue;
                int ok = 1;
                for (int j = 0; j < k; ++j) {
                    c[nlive][j] = sh[(size_t)v * k + j];
                    ok &= isfinite(c[nlive][j]) != 0;
                }
                if (!ok) {
                    ++bad;
                    continue;
                }
                live[nlive] = c[nlive], live_v[nlive++] = v;
            }
            if (!nlive) continue;
            for (int i = nlive; i < 4; ++i) live[i] = live[0]; /* a full group: repeats are harmless */
            tk_fixels_sample_values4(&plan->view, live, vals);
            for (int i = 0; i < nlive; ++i) {
                const long long v = live_v[i];
                const size_t o1 = (size_t)v * S, o3 = o1 * 3;
                w->values = vals[i];
                const int n = tk_fixels_segment(&plan->view, live[i], w, out->afd ? out->afd + o1 : NULL,
                                                out->peak_amp ? out->peak_amp + o1 : NULL,
                                                out->mean_dir ? out->mean_dir + o3 : NULL,
                                                out->peak_dir ? out->peak_dir + o3 : NULL,
                                                out->lobe_of_dir ? out->lobe_of_dir + (size_t)v * N : NULL, 1);
                if (n > S && plan->opts.max_fixels == 0) ++truncated;
                out->count[v] = (uint8_t)(n < S ? n : S);
            }
        }
        if (w) w->values = own_values;
        free(block);
    }
    out->bad_voxels = bad, out->truncated = truncated;
    if (failed) return tk_set_error(TK_ERR_MEMORY, "out of memory for fixels work buffers");
    return TK_OK;
}
