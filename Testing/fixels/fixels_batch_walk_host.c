/* The warp kernel's batched walk run on the host: the kernel's per-lane steps
 * (fixels_batch_walk.h) called lane by lane, a loop over the 32 lanes where the kernel has a
 * __syncwarp, a shuffle, a ballot or a match; then the rest of the segmentation as the kernel
 * runs it.  Against the host's own segmentation, which takes the samples one at a time. */
#include "fixels_batch_walk_host.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixels/fixels_batch_walk.h"
#include "fixels/fixels_internal.h"

#define LANES TK_FX_BW_LANES

/* The batched walk of sorted[0..npos) as fixels_warp.cuh's fx_warp_walk runs it, lane j of the
 * warp being index j of the arrays; returns the lobes, or -1 past max_lobes. */
static int batched_walk(const tk_fixels_view *p, tk_fixels_work *w, const int *sorted, int npos, int max_lobes,
                        fx_bw_stats *stats)
{
    double stage[TK_FX_STAGE * LANES];
    int d[LANES], lobe[LANES], next[LANES], kind[LANES], next_kind[LANES], bridge[LANES];
    fx_bw_lane L[LANES];
    int nl = 0;
    for (int base = 0; base < npos; base += LANES) {
        const int steps = npos - base < LANES ? npos - base : LANES;
        ++stats->batches;
        for (int j = 0; j < steps; ++j) {
            d[j] = sorted[base + j];
            fx_bw_stage(p, w->values, d[j], stage + TK_FX_STAGE * j);
            w->label[d[j]] = TK_FX_BW_MARK - j;
        }
        /* __syncwarp */
        for (int lo = 0; lo < steps;) {
            ++stats->windows;
            for (int j = 0; j < LANES; ++j) {
                if (j >= lo && j < steps) {
                    int lab[6];
                    for (int e = 0; e < 6; ++e) lab[e] = w->label[p->adj[d[j]][e]];
                    fx_bw_gather(lab, j, &L[j]);
                } else {
                    fx_bw_idle(&L[j]);
                }
                lobe[j] = -1, kind[j] = FX_BW_JOIN;
            }
            /* rounds to the fixpoint: the last round's new lobes by a ballot, each lane's
             * earlier lanes' lobes by shuffles, then an __any_sync of "changed" */
            const fx_bw_window win = {w->lobes, stage, p->lobe_merge_ratio, nl, max_lobes};
            for (int changed = 1; changed;) {
                ++stats->rounds;
                changed = 0;
                unsigned new_lanes = 0;
                for (int j = lo; j < steps; ++j) new_lanes |= (unsigned)(kind[j] == FX_BW_NEW) << j;
                for (int j = 0; j < LANES; ++j) {
                    int pred_lobe[6];
                    for (int e = 0; e < 6; ++e) pred_lobe[e] = lobe[L[j].pred[e] >= 0 ? L[j].pred[e] : j];
                    next[j] = fx_bw_eval(&win, &L[j], j, pred_lobe, new_lanes, stage[TK_FX_STAGE * j + 4],
                                         &next_kind[j], &bridge[j]);
                    changed |= j >= lo && j < steps && (next[j] != lobe[j] || next_kind[j] != kind[j]);
                }
                memcpy(lobe, next, sizeof lobe), memcpy(kind, next_kind, sizeof kind);
            }
            /* the first special lane (a ballot); the lanes before it start and join their lobes,
             * each lobe's lanes (a match) by the first of them (a new lobe's is its first
             * sample); the bridges get their labels */
            int f = steps;
            for (int j = steps - 1; j >= lo; --j)
                if (kind[j] == FX_BW_SPECIAL) f = j;
            /* each growing lane's side where the lobe's mean decides it (its lobe's mean read
             * before any join; the amplitudes summed by a reduction), __syncwarp */
            double moved = 0.0;
            for (int j = lo; j < f; ++j)
                if (kind[j] != FX_BW_BRIDGE) moved += fabs(stage[TK_FX_STAGE * j + 4] * stage[TK_FX_STAGE * j + 3]);
            for (int j = lo; j < f; ++j) {
                double *st = stage + TK_FX_STAGE * j;
                st[5] = kind[j] == FX_BW_JOIN && lobe[j] < nl ? fx_bw_side(w->lobes[lobe[j]].mean, st, moved) : 0.0;
                stats->sure += st[5] != 0.0;
            }
            int longest = 0; /* the window's largest group: the join's steps in lockstep */
            for (int j = lo; j < f; ++j) {
                if (kind[j] == FX_BW_BRIDGE) {
                    w->label[d[j]] = -2 - bridge[j];
                    ++stats->bridges;
                    continue;
                }
                unsigned peers = 0;
                for (int i = lo; i < f; ++i) peers |= (unsigned)(kind[i] != FX_BW_BRIDGE && lobe[i] == lobe[j]) << i;
                if (__builtin_popcount(peers) > longest) longest = __builtin_popcount(peers);
                if (fx_bw_lowest(peers) == j) {
                    if (kind[j] == FX_BW_NEW) fx_bw_start(w, lobe[j], d[j], stage + TK_FX_STAGE * j), peers &= peers - 1;
                    if (peers) fx_bw_join(&w->lobes[lobe[j]], stage, peers);
                }
                w->label[d[j]] = lobe[j];
            }
            stats->join_steps += longest;
            for (int j = lo; j < f; ++j)
                if (kind[j] == FX_BW_NEW) ++nl, ++stats->new_lobes;
            /* __syncwarp; then lane 0 takes the special lane's step, __syncwarp */
            if (f == steps) break;
            const int before = nl;
            int lab[6], adj[6];
            for (int e = 0; e < 6; ++e) lab[e] = w->label[p->adj[d[f]][e]];
            const int na = fx_adjacent_lobes(lab, adj);
            if (fx_bw_special(p, w, d[f], stage + TK_FX_STAGE * f, &nl, max_lobes) < 0) return -1;
            if (nl > before)
                ++stats->new_lobes;
            else if (w->label[d[f]] <= -2)
                ++stats->bridges;
            else if (na > 1)
                ++stats->merges;
            lo = f + 1;
        }
    }
    return nl;
}

/* The kernel's steps after the walk (fixels_warp_kernel): the bridges join their lobes in the
 * walk's order (each lobe's in order, the lobes' side by side), then each lobe's peak revision and output slot as tk_fixels_segment_view. */
static int after_walk(const tk_fixels_view *p, const double *sh, tk_fixels_work *w, const int *sorted, int npos,
                      int nl, float *afd, float *amp, float *mean, float *peak, uint8_t *lut)
{
    /* 32 of the order at a time: each lobe's bridges (a match) by the first of them, in lane
     * order, from the stage */
    for (int base = 0; base < npos; base += LANES) {
        double stage[TK_FX_STAGE * LANES];
        int root[LANES];
        for (int j = 0; j < LANES; ++j) {
            const int i = base + j;
            root[j] = i < npos && w->label[sorted[i]] <= -2 ? fx_find(w, -2 - w->label[sorted[i]]) : -1;
            if (root[j] >= 0) fx_bw_stage(p, w->values, sorted[i], stage + TK_FX_STAGE * j);
        }
        /* (no sides taken ahead: st[5] 0 from fx_bw_stage) __syncwarp */
        for (int j = 0; j < LANES; ++j) {
            if (root[j] < 0) continue;
            unsigned peers = 0;
            for (int i = 0; i < LANES; ++i) peers |= (unsigned)(root[i] == root[j]) << i;
            if (fx_bw_lowest(peers) == j) fx_bw_join(&w->lobes[root[j]], stage, peers);
            w->label[sorted[base + j]] = root[j];
        }
    }
    int kept = 0;
    for (int l = 0; l < nl; ++l) {
        tk_fixels_lobe *lobe = &w->lobes[l];
        w->kept[l] = -1;
        if (!lobe->alive || lobe->integral < p->integral_threshold) continue;
        revise_peaks(p, sh, w, l);
        if (lobe->max_peak < p->peak_value_threshold) continue;
        if (p->max_fixels > 0 && kept >= p->max_fixels) continue;
        if (kept < p->slots) {
            const double n = sqrt(fx_dot3(lobe->mean, lobe->mean));
            const double *pd = w->peaks[lobe->peak_head].dir;
            afd[kept] = (float)lobe->integral, amp[kept] = (float)lobe->max_peak;
            for (int i = 0; i < 3; ++i) mean[kept * 3 + i] = (float)(lobe->mean[i] / n), peak[kept * 3 + i] = (float)pd[i];
            w->kept[l] = kept;
        }
        ++kept;
    }
    for (int d = 0; d < p->n; ++d) {
        const int out = w->label[d] < 0 ? -1 : w->kept[fx_find(w, w->label[d])];
        lut[d] = out < 0 ? TK_FIXELS_NO_LOBE : (uint8_t)out;
    }
    return kept;
}

/* The batched segmentation of one voxel (sh[0] > 0 checked by the caller) with a table of
 * max_lobes lobes; returns the kept lobes and *lobes the lobes grown, or -1 where they outgrow
 * the table. */
static int batched_segment(const tk_fixels_view *p, const double *sh, tk_fixels_work *w, int max_lobes, float *afd,
                           float *amp, float *mean, float *peak, uint8_t *lut, int *lobes, fx_bw_stats *stats)
{
    const int N = p->n;
    fx_sample_values(p->basis, N, p->k, sh, w->values);
    w->tensor_ready = 0;
    memset(lut, TK_FIXELS_NO_LOBE, (size_t)N);
    int npos = 0, largest = 0;
    double most = -1.0;
    for (int d = 0; d < N; ++d) {
        const double a = fabs(w->values[d]);
        if (a > most) most = a, largest = d;
        w->label[d] = -1;
    }
    *lobes = 0;
    if (w->values[largest] <= 0.0) return 0;
    for (int d = 0; d < N; ++d)
        if (w->values[d] > 0.0) {
            const float f = (float)w->values[d];
            uint32_t bits;
            memcpy(&bits, &f, sizeof bits);
            w->key[0][npos] = (uint32_t)~bits, w->order[0][npos++] = d;
        }
    const int *sorted = w->order[sort_descending(w, npos)];
    stats->samples += npos;
    const int nl = batched_walk(p, w, sorted, npos, max_lobes, stats);
    *lobes = nl;
    if (nl < 0) return -1;
    stats->over_24 += nl > 24, stats->over_32 += nl > LANES;
    return after_walk(p, sh, w, sorted, npos, nl, afd, amp, mean, peak, lut);
}

#define DIFFER(what)                                                                                                   \
    do {                                                                                                               \
        snprintf(why, why_size, "%s", what);                                                                           \
        goto done;                                                                                                     \
    } while (0)

int fx_bw_check_voxel(const tk_fixels_plan *plan, const double *sh, fx_bw_stats *stats, char *why, size_t why_size)
{
    (void)fx_host_sample_values4; /* the header's, for the library's four-voxel loop */
    const tk_fixels_view *p = &plan->view;
    const int N = p->n, S = p->slots;
    const size_t bytes = tk_fixels_work_bytes(N, p->max_lobes);
    void *block[2] = {malloc(bytes), malloc(bytes)};
    float *f[2] = {malloc(sizeof(float) * 8 * (size_t)S), malloc(sizeof(float) * 8 * (size_t)S)};
    uint8_t *lut[2] = {malloc((size_t)N), malloc((size_t)N)};
    int same = 0;
    snprintf(why, why_size, "out of memory");
    if (!block[0] || !block[1] || !f[0] || !f[1] || !lut[0] || !lut[1]) goto done;
    tk_fixels_work w[2];
    for (int i = 0; i < 2; ++i) {
        memset(block[i], 0, bytes);
        for (int j = 0; j < 8 * S; ++j) f[i][j] = -7.f;
        tk_fixels_work_bind(&w[i], p, block[i], p->max_lobes);
    }
    ++stats->voxels;
    const int host = tk_fixels_segment_view(p, sh, &w[0], f[0], f[0] + S, f[0] + 2 * S, f[0] + 5 * S, lut[0], 0);
    if (!(sh[0] > 0.0)) {
        same = 1;
        goto done;
    }
    int nl = 0;
    const int batched = batched_segment(p, sh, &w[1], p->max_lobes, f[1], f[1] + S, f[1] + 2 * S, f[1] + 5 * S, lut[1],
                                        &nl, stats);
    if (host != batched) DIFFER("the count of kept lobes");
    if (memcmp(f[0], f[1], sizeof(float) * 8 * (size_t)S)) DIFFER("the outputs (afd, amplitudes, directions)");
    if (memcmp(lut[0], lut[1], (size_t)N)) DIFFER("the lobe masks");
    if (memcmp(w[0].label, w[1].label, sizeof(*w[0].label) * (size_t)N)) DIFFER("the labels");
    for (int l = 0; l < nl; ++l) {
        const tk_fixels_lobe *a = &w[0].lobes[l], *b = &w[1].lobes[l];
        if (a->alive != b->alive || a->parent != b->parent || memcmp(&a->max_peak, &b->max_peak, 8) ||
            memcmp(&a->integral, &b->integral, 8) || memcmp(a->mean, b->mean, 24) || a->peak_head != b->peak_head ||
            a->peak_tail != b->peak_tail || a->num_peaks != b->num_peaks)
            DIFFER("a lobe's table entry");
        const tk_fixels_peak *pa = &w[0].peaks[l], *pb = &w[1].peaks[l];
        if (memcmp(pa->dir, pb->dir, 24) || pa->next != pb->next || pa->seed != pb->seed) DIFFER("a peak's entry");
    }
    /* again with the warp kernel's table (TK_FX_WARP_LOBES): it fails exactly where more lobes
     * grow (the kernel passes those voxels on), else the same outputs */
    {
        fx_bw_stats ignored;
        memset(&ignored, 0, sizeof ignored);
        memset(block[1], 0, bytes);
        for (int j = 0; j < 8 * S; ++j) f[1][j] = -7.f;
        tk_fixels_work_bind(&w[1], p, block[1], p->max_lobes);
        int nl32 = 0;
        const int small = batched_segment(p, sh, &w[1], TK_FX_WARP_LOBES, f[1], f[1] + S, f[1] + 2 * S, f[1] + 5 * S,
                                          lut[1], &nl32, &ignored);
        if ((small < 0) != (nl > TK_FX_WARP_LOBES)) DIFFER("the warp table's failure");
        if (small >= 0 && (small != host || memcmp(f[0], f[1], sizeof(float) * 8 * (size_t)S) ||
                           memcmp(lut[0], lut[1], (size_t)N)))
            DIFFER("the outputs with the warp table");
    }
    same = 1;
done:
    for (int i = 0; i < 2; ++i) free(block[i]), free(f[i]), free(lut[i]);
    return same;
}
