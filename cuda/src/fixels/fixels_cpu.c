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
    const int k = plan->k, S = plan->slots;
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
        void *block = malloc(tk_fixels_work_bytes(TK_FIXELS_N));
        if (block)
            tk_fixels_work_bind(w, &plan->view, block, TK_FIXELS_N);
        else
            w = NULL;
        if (!w) {
#ifdef _OPENMP
#pragma omp atomic write
#endif
            failed = 1;
        }
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 64)
#endif
        for (long long v = 0; v < count; ++v) {
            const size_t o1 = (size_t)v * S, o3 = o1 * 3;
            float *afd = out->afd ? out->afd + o1 : NULL, *amp = out->peak_amp ? out->peak_amp + o1 : NULL;
            float *mdir = out->mean_dir ? out->mean_dir + o3 : NULL, *pdir = out->peak_dir ? out->peak_dir + o3 : NULL;
            uint8_t *lut = out->lobe_of_dir ? out->lobe_of_dir + (size_t)v * TK_FIXELS_N : NULL;
            fill_nan(afd, S), fill_nan(amp, S), fill_nan(mdir, 3 * (size_t)S), fill_nan(pdir, 3 * (size_t)S);
            if (lut) memset(lut, TK_FIXELS_NO_LOBE, TK_FIXELS_N);
            out->count[v] = 0;
            if (!w || (mask && !mask[v])) continue;
            double c[(TK_SH_MAX_LMAX + 1) * (TK_SH_MAX_LMAX + 2) / 2];
            int ok = 1;
            for (int j = 0; j < k; ++j) {
                c[j] = sh[(size_t)v * k + j];
                ok &= isfinite(c[j]) != 0;
            }
            if (!ok) {
                ++bad;
                continue;
            }
            const int n = tk_fixels_segment(&plan->view, c, w, afd, amp, mdir, pdir, lut);
            if (n > S && plan->opts.max_fixels == 0) ++truncated;
            out->count[v] = (uint8_t)(n < S ? n : S);
        }
        free(block);
    }
    out->bad_voxels = bad, out->truncated = truncated;
    if (failed) return tk_set_error(TK_ERR_MEMORY, "out of memory for fixels work buffers");
    return TK_OK;
}
