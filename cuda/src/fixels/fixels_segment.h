/* Internal: one voxel's FMLS segmentation, as MRtrix3 3.0.3's fod2fixel defines it
 * (src/dwi/fmls.cpp, Segmenter::operator()), followed step for step so that the same series
 * gives the same lobes; each step's comment names what it mirrors.  Then each kept lobe's peaks
 * go up the fiber core's Newton climb (fibers_newton.h through the tracker's evaluator,
 * tracking/tracking_peak.h), where fod2fixel runs Math::SH::get_peak.  One text for the host
 * (fixels_fmls.c) and the device (fixels_cuda.cu): TK_HD, the tables through a view. */
#ifndef TK_FIXELS_SEGMENT_H
#define TK_FIXELS_SEGMENT_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "common/tk_hd.h"
#include "fixels_internal.h"
#include "tracking/tracking_peak.h"

#ifndef __CUDACC__
/* The hot loop also built for AVX2 + FMA (x86-64-v3), picked at load time (as fibers_peaks.c). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__SANITIZE_ADDRESS__)
#define TK_FIXELS_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define TK_FIXELS_CLONES
#endif

/* values[d] = the series at direction d: the basis is coefficient-major, and a block of 16
 * directions is summed in four 4-wide registers over the coefficients (each direction's sum in
 * coefficient order), so every basis value is loaded once, no partial sum goes to memory and
 * four multiply-add chains run side by side. */
typedef double tk_fixels_v4 __attribute__((vector_size(32)));
TK_FIXELS_CLONES static void fx_host_sample_values(const double *basis_t, int n, int k, const double *sh,
                                                   double *values)
{
    int d = 0;
    for (; d + 16 <= n; d += 16) {
        tk_fixels_v4 a0 = {0, 0, 0, 0}, a1 = a0, a2 = a0, a3 = a0;
        for (int c = 0; c < k; ++c) {
            const double *row = basis_t + (size_t)c * n + d;
            const tk_fixels_v4 s4 = {sh[c], sh[c], sh[c], sh[c]};
            tk_fixels_v4 r0, r1, r2, r3;
            memcpy(&r0, row, 32), memcpy(&r1, row + 4, 32), memcpy(&r2, row + 8, 32), memcpy(&r3, row + 12, 32);
            a0 += r0 * s4, a1 += r1 * s4, a2 += r2 * s4, a3 += r3 * s4;
        }
        memcpy(values + d, &a0, 32), memcpy(values + d + 4, &a1, 32);
        memcpy(values + d + 8, &a2, 32), memcpy(values + d + 12, &a3, 32);
    }
    for (; d < n; ++d) {
        double v = 0.0;
        for (int c = 0; c < k; ++c) v += basis_t[(size_t)c * n + d] * sh[c];
        values[d] = v;
    }
}


/* fx_host_sample_values for four series at once (values[i] for sh[i]): each basis value loaded
 * once for the four, so the basis (k x 1281 doubles, 461 KB at lmax 8, past L1) streams from
 * memory a quarter as often; each sum still in coefficient order, so the values are the same. */
TK_FIXELS_CLONES static void fx_host_sample_values4(const double *basis_t, int n, int k, const double *const *sh,
                                                    double *const *values)
{
    int d = 0;
    for (; d + 8 <= n; d += 8) {
        tk_fixels_v4 acc[4][2];
        for (int i = 0; i < 4; ++i) acc[i][0] = acc[i][1] = (tk_fixels_v4){0, 0, 0, 0};
        for (int c = 0; c < k; ++c) {
            const double *row = basis_t + (size_t)c * n + d;
            tk_fixels_v4 r0, r1;
            memcpy(&r0, row, 32), memcpy(&r1, row + 4, 32);
            for (int i = 0; i < 4; ++i) {
                const tk_fixels_v4 s4 = {sh[i][c], sh[i][c], sh[i][c], sh[i][c]};
                acc[i][0] += r0 * s4, acc[i][1] += r1 * s4;
            }
        }
        for (int i = 0; i < 4; ++i) memcpy(values[i] + d, &acc[i][0], 32), memcpy(values[i] + d + 4, &acc[i][1], 32);
    }
    for (; d < n; ++d)
        for (int i = 0; i < 4; ++i) {
            double v = 0.0;
            for (int c = 0; c < k; ++c) v += basis_t[(size_t)c * n + d] * sh[i][c];
            values[i][d] = v;
        }
}
#endif

/* values[d] = the series at direction d (basis coefficient-major). */
TK_HD static inline void fx_sample_values(const double *basis_t, int n, int k, const double *sh, double *values)
{
#ifdef __CUDACC__
    for (int d = 0; d < n; ++d) {
        double v = 0.0;
        for (int c = 0; c < k; ++c) v += basis_t[(size_t)c * n + d] * sh[c];
        values[d] = v;
    }
#else
    fx_host_sample_values(basis_t, n, k, sh, values);
#endif
}

/* The positive samples (n of them, order[0]) by descending amplitude, ties by ascending
 * direction index: the order of MRtrix3's std::multimap with Max_abs, which keeps equal keys
 * in insertion (index) order.  A positive float's bits order as the float does, so an LSD radix
 * sort of the inverted bits of each sample rounded to float, stable, orders them (a byte at a
 * time; a byte all keys share is skipped), but for samples that round to the same float: a
 * last pass puts each such run in double order (insertion; the runs are a few long).  Half the
 * passes of a sort on the doubles' own 64 bits.  Returns the buffer holding the result. */
TK_HD static inline int sort_descending(tk_fixels_work *w, int n)
{
    int cur = 0;
    int count[257];
    for (int shift = 0; shift < 32; shift += 8) {
        for (int b = 0; b < 257; ++b) count[b] = 0;
        const uint64_t *key = w->key[cur];
        for (int i = 0; i < n; ++i) ++count[((key[i] >> shift) & 0xff) + 1];
        int same = 0;
        for (int b = 1; b <= 256; ++b) same |= count[b] == n;
        if (same) continue;
        for (int b = 1; b <= 256; ++b) count[b] += count[b - 1];
        const int *ord = w->order[cur];
        uint64_t *nkey = w->key[!cur];
        int *nord = w->order[!cur];
        for (int i = 0; i < n; ++i) {
            const int at = count[(key[i] >> shift) & 0xff]++;
            nkey[at] = key[i], nord[at] = ord[i];
        }
        cur = !cur;
    }
    const uint64_t *key = w->key[cur];
    int *ord = w->order[cur];
    for (int i = 1; i < n; ++i) {
        if (key[i] != key[i - 1]) continue;
        /* a run of equal float keys: insert i by (double descending, index ascending) */
        const int d = ord[i];
        const double v = w->values[d];
        int j = i;
        while (j > 0 && key[j - 1] == key[i] &&
               (w->values[ord[j - 1]] < v || (w->values[ord[j - 1]] == v && ord[j - 1] > d))) {
            ord[j] = ord[j - 1];
            --j;
        }
        ord[j] = d;
    }
    return cur;
}

TK_HD static inline int fx_find(tk_fixels_work *w, int l)
{
    while (w->lobes[l].parent != l) l = w->lobes[l].parent;
    return l;
}

TK_HD static inline double fx_dot3(const double *a, const double *b)
{
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

/* FOD_lobe::add: the sample joins the mask, its weighted amplitude the integral, and its
 * direction (flipped to the running mean's side) the mean. */
TK_HD static inline void lobe_add(tk_fixels_work *w, int l, int d)
{
    tk_fixels_lobe *lobe = &w->lobes[l];
    const double *dir = w->t->dirs[d];
    const double v = fabs(w->values[d] * w->t->weights[d]);
    const double mult = fx_dot3(lobe->mean, dir) > 0.0 ? 1.0 : -1.0;
    for (int i = 0; i < 3; ++i) lobe->mean[i] += dir[i] * mult * v;
    lobe->integral += v;
    w->label[d] = l;
}

/* FOD_lobe::merge (that into this): the larger peak's list first, the mean grown by that's
 * (unnormalised) mean times its integral, as fmls.cpp writes it. */
TK_HD static inline void lobe_merge(tk_fixels_work *w, int into, int that)
{
    tk_fixels_lobe *a = &w->lobes[into], *b = &w->lobes[that];
    if (b->max_peak > a->max_peak) {
        a->max_peak = b->max_peak;
        w->peaks[b->peak_tail].next = a->peak_head;
        a->peak_head = b->peak_head;
    } else {
        w->peaks[a->peak_tail].next = b->peak_head;
        a->peak_tail = b->peak_tail;
    }
    a->num_peaks += b->num_peaks;
    const double mult = fx_dot3(a->mean, b->mean) > 0.0 ? 1.0 : -1.0;
    for (int i = 0; i < 3; ++i) a->mean[i] += b->mean[i] * b->integral * mult;
    a->integral += b->integral;
    b->alive = 0, b->parent = into;
    /* the merged lobe's directions are the survivor's now: labels stay resolved, so the sweep
     * reads a neighbour's lobe without a find (merges are rare: only below ratio 1) */
    for (int d = 0; d < w->t->n; ++d)
        if (w->label[d] == that) w->label[d] = into;
}

/* The nearest direction of the set to unit x, antipodes included (select_direction): a greedy
 * walk from direction `from` to the neighbour of largest |x . d| while one beats the current.
 * The adjacency is the convex hull's, i.e. the spherical Delaunay triangulation of the set and
 * its antipodes, on which a greedy walk always ends at the nearest site; the peaks start a few
 * spacings from their lobe's seed, so this takes a few steps where a scan takes 1281 dots. */
TK_HD static inline int nearest_direction(const tk_fixels_view *t, const double *x, int from)
{
    int best = from;
    double best_dp = fabs(fx_dot3(x, t->dirs[from]));
    for (;;) {
        int next = best;
        for (int e = 0; e < 6; ++e) {
            const int n = t->adj[best][e];
            const double dp = fabs(fx_dot3(x, t->dirs[n]));
            if (dp > best_dp || (dp == best_dp && n < next)) best_dp = dp, next = n;
        }
        if (next == best) return best;
        best = next;
    }
}

/* The local maximum whose basin holds unit dir: the tracker's climb of the fiber core's
 * Newton (the same longest step as MRtrix3's get_peak, 0.2 rad); returns its amplitude and
 * moves dir there, or NaN (dir untouched) where no strict maximum is reached (get_peak's
 * NaN). */
TK_HD static inline double climb(const tk_fixels_view *p, const double *sh, tk_fixels_work *w, double *dir)
{
    const int k = p->k;
    /* the voxel's tensor and its monomial form, once for all its lobes' climbs */
    if (!w->tensor_ready) {
        w->scale = tk_fibers_anisotropic_part(k, sh, w->aniso, &w->iso);
        for (int r = 0; r < k; ++r) w->tensor[r] = 0.0;
        for (int c = 1; c < k; ++c) {
            const double a = w->aniso[c], *col = p->map + (size_t)c * k;
            for (int r = 0; r < k; ++r) w->tensor[r] += col[r] * a;
        }
        if (p->lmax <= TK_TRACK_ROWS_MAX_ORDER) tk_tracking_rows_build(p->lmax, p->rows_src, p->rows_weight, w->tensor, w->rows);
        w->tensor_ready = 1;
    }
    const double scale = w->scale, iso = w->iso;
    if (!(scale > 0)) return NAN;
    track_tensor t;
    t.m = p->lmax, t.a = w->tensor, t.has_last = 0, t.rows = NULL;
    if (t.m <= TK_TRACK_ROWS_MAX_ORDER) t.rows = (const double(*)[6])w->rows;
    double x[3] = {dir[0], dir[1], dir[2]}, value = 0;
    int strict = 0;
    for (int c = 0; c < TK_TRACK_PEAK_CLIMBS; ++c) {
        int iterations = 0;
        strict = nt_polish_track(&t, x, &value, &iterations, 0.0, 0.0, TK_TRACK_PEAK_MAX_STEP, NULL);
        if (strict == 1 || iterations < TK_NEWTON_MAX_ITERATIONS) break;
    }
    const double amplitude = iso + scale * value;
    if (strict != 1 || !isfinite(amplitude)) return NAN;
    dir[0] = x[0], dir[1] = x[1], dir[2] = x[2];
    return amplitude;
}

/* The peak revision of Segmenter::operator(): each of the lobe's peaks climbs; the new
 * direction replaces it where it is still nearer that peak than any other of the lobe's
 * (as revised so far) and its nearest set direction is in the lobe; the first peak's value
 * becomes the lobe's maximum. */
TK_HD static inline void revise_peaks(const tk_fixels_view *p, const double *sh, tk_fixels_work *w, int l)
{
    tk_fixels_lobe *lobe = &w->lobes[l];
    int *list = w->list, np = 0;
    for (int q = lobe->peak_head; q >= 0 && np < lobe->num_peaks; q = w->peaks[q].next) list[np++] = q;
    for (int pi = 0; pi < np; ++pi) {
        double x[3];
        memcpy(x, w->peaks[list[pi]].dir, sizeof x);
        const double value = climb(p, sh, w, x);
        if (!isfinite(value)) continue;
        double max_dp = 0.0;
        int nearest = np;
        for (int j = 0; j < np; ++j) {
            const double dp = fabs(fx_dot3(x, w->peaks[list[j]].dir));
            if (dp > max_dp) max_dp = dp, nearest = j;
        }
        if (nearest != pi) continue;
        const int near_label = w->label[nearest_direction(p, x, w->peaks[list[pi]].seed)];
        if (near_label < 0 || fx_find(w, near_label) != l) continue;
        memcpy(w->peaks[list[pi]].dir, x, sizeof x);
        if (pi == 0) lobe->max_peak = value;
    }
}

/* The lobes that hold a sample's neighbours (their labels lab[6]; below 0: no lobe yet), each
 * once, ascending (the order of fmls.cpp's loop over its lobe vector: ids rise with it), into
 * adj; returns how many.  The common case without a branch per neighbour: every labelled
 * neighbour in one lobe (then it is the largest label) or none labelled.  The host's sweep and
 * the CUDA warp kernel's walk (fixels_warp.cuh) both call it. */
TK_HD static inline int fx_adjacent_lobes(const int *lab, int *adj)
{
    int na = 0, top = -1, other = 0;
    for (int e = 0; e < 6; ++e) top = lab[e] > top ? lab[e] : top;
    for (int e = 0; e < 6; ++e) other |= (lab[e] >= 0) & (lab[e] != top);
    if (!other) {
        adj[0] = top, na = top >= 0;
    } else {
        for (int e = 0; e < 6; ++e) {
            const int l = lab[e];
            if (l < 0) continue;
            int seen = 0;
            for (int a = 0; a < na; ++a) seen |= adj[a] == l;
            if (!seen) adj[na++] = l;
        }
    }
    for (int a = 1; a < na; ++a)
        for (int b = a; b > 0 && adj[b - 1] > adj[b]; --b) {
            const int tmp = adj[b];
            adj[b] = adj[b - 1], adj[b - 1] = tmp;
        }
    return na;
}

TK_HD static inline int tk_fixels_segment_view(const tk_fixels_view *p, const double *sh, tk_fixels_work *w, float *afd, float *peak_amp,
                      float *mean_dir, float *peak_dir, uint8_t *lobe_of_dir, int have_values)
{
    const int k = p->k, slots = p->slots, N = p->n;
    int kept = 0;
    if (lobe_of_dir) memset(lobe_of_dir, TK_FIXELS_NO_LOBE, (size_t)N);
    /* a voxel whose mean is not positive has no lobes */
    if (!(sh[0] > 0.0)) return 0;
    int npos = 0, largest = 0;
    if (!have_values) fx_sample_values(p->basis, N, k, sh, w->values);
    w->tensor_ready = 0;
    memset(w->label, 0xff, sizeof(int) * (size_t)N); /* -1: no lobe yet */
    double most = -1.0;
    for (int d = 0; d < N; ++d) {
        const double a = fabs(w->values[d]);
        if (a > most) most = a, largest = d;
    }
    for (int d = 0; d < N; ++d) {
        const double v = w->values[d];
        if (v > 0.0) {
            const float f = (float)v;
            uint32_t bits;
            memcpy(&bits, &f, sizeof bits);
            w->key[0][npos] = (uint32_t)~bits, w->order[0][npos++] = d;
        }
    }
    /* the largest |sample| (the first of equals) negative: no lobes at all (fmls.cpp returns
     * there) */
    if (w->values[largest] <= 0.0) return 0;
    /* Only the positive samples: fmls.cpp grows negative lobes too, but a sample only ever
     * joins lobes of its own sign and negative lobes are dropped at the end, so they change
     * nothing that is kept (their directions are in no fixel's mask). */
    const int *sorted = w->order[sort_descending(w, npos)];
    int nl = 0, nretro = 0;
    for (int s = 0; s < npos; ++s) {
        const int d = sorted[s];
        const double v = w->values[d];
        int adj[6], lab[6];
        for (int e = 0; e < 6; ++e) lab[e] = w->label[p->adj[d][e]];
        const int na = fx_adjacent_lobes(lab, adj);
        if (na == 0) {
            /* a new lobe seeded here (more than the scratch holds: the voxel fails, -1) */
            if (nl == p->max_lobes) return -1;
            tk_fixels_lobe *lobe = &w->lobes[nl];
            const double *dir = p->dirs[d], wt = p->weights[d];
            lobe->alive = 1, lobe->parent = nl;
            lobe->max_peak = fabs(v);
            lobe->integral = fabs(v * wt);
            for (int i = 0; i < 3; ++i) lobe->mean[i] = dir[i] * fabs(v) * wt, w->peaks[nl].dir[i] = dir[i];
            w->peaks[nl].next = -1, w->peaks[nl].seed = d;
            lobe->peak_head = lobe->peak_tail = nl, lobe->num_peaks = 1;
            w->label[d] = nl++;
        } else if (na == 1) {
            lobe_add(w, adj[0], d);
        } else if (fabs(v) / w->lobes[adj[na - 1]].max_peak > p->lobe_merge_ratio) {
            /* a bridge high enough next to the last lobe's peak: the lobes become one */
            for (int a = 1; a < na; ++a) lobe_merge(w, adj[0], adj[a]);
            lobe_add(w, adj[0], d);
        } else {
            /* a bridge between lobes: it joins the first of them after the sweep */
            w->retro[nretro][0] = d, w->retro[nretro][1] = adj[0], ++nretro;
        }
    }
    for (int r = 0; r < nretro; ++r) lobe_add(w, fx_find(w, w->retro[r][1]), w->retro[r][0]);
    for (int l = 0; l < nl; ++l) {
        tk_fixels_lobe *lobe = &w->lobes[l];
        w->kept[l] = -1;
        if (!lobe->alive || lobe->integral < p->integral_threshold) continue;
        revise_peaks(p, sh, w, l);
        if (lobe->max_peak < p->peak_value_threshold) continue;
        if (p->max_fixels > 0 && kept >= p->max_fixels) continue;
        if (kept < slots) {
            const double n = sqrt(fx_dot3(lobe->mean, lobe->mean));
            const double *pd = w->peaks[lobe->peak_head].dir;
            if (afd) afd[kept] = (float)lobe->integral;
            if (peak_amp) peak_amp[kept] = (float)lobe->max_peak;
            for (int i = 0; i < 3; ++i) {
                if (mean_dir) mean_dir[kept * 3 + i] = (float)(lobe->mean[i] / n);
                if (peak_dir) peak_dir[kept * 3 + i] = (float)pd[i];
            }
            w->kept[l] = kept;
        }
        ++kept;
    }
    if (lobe_of_dir)
        for (int d = 0; d < N; ++d) {
            const int out = w->label[d] < 0 ? -1 : w->kept[fx_find(w, w->label[d])];
            lobe_of_dir[d] = out < 0 ? TK_FIXELS_NO_LOBE : (uint8_t)out;
        }
    return kept;
}

#endif
