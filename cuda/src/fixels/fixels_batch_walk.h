/* Internal: the region-growing walk (tk_fixels_segment_view's sweep) taken 32 samples of the
 * order at a time, one a lane, for the CUDA warp kernel (fixels_warp.cuh), with the same labels
 * and lobes, sum for sum, as the sweep taken one sample at a time.
 *
 * Why it works: a sample that joins the one lobe its labelled neighbours hold changes no other
 * sample's neighbourhood but by its own label, and adds to that lobe's sums only.  So in a
 * window of the batch (lanes lo..steps-1, the samples before it labelled):
 *  - each lane's sample is written into the label table as TK_FX_BW_MARK - lane, so a lane
 *    reading its six neighbours' labels (fx_bw_gather) tells lobes (>= 0), directions with no
 *    lobe yet (-1, the bridges' -2 - lobe: negative) and earlier lanes of the window apart;
 *  - the lanes' lobes are the fixpoint of "my lobe from my neighbours' labels and my earlier
 *    lanes' lobes" (fx_bw_eval, rounds of it until no lane changes): the earlier-lane relation
 *    has no cycle, so the fixpoint is unique and is the sequential walk's, up to the first lane
 *    that starts a lobe or merges lobes ("special"); a bridge that does not merge changes
 *    nothing but its own label, which reads as no lobe, as the fixpoint reads it;
 *  - the lanes before it join their lobes, each lobe's samples added in the order's order
 *    (fx_bw_join, lobe_add's arithmetic): the sums are the sequential walk's, bit for bit; the
 *    bridges among them get their labels;
 *  - the special lane's step is the sequential walk's (fx_bw_special), on the tables, and the
 *    window starts again after it.
 * A bridge's lobe is kept in its own label as -2 - lobe (a direction with no lobe to the walk
 * and to lobe_merge's relabelling, as the host's separate list is); the bridges join their
 * lobes after the walk, in the walk's order.
 * The per-lane steps are TK_HD functions: the warp kernel runs them a lane each with the warp's
 * shuffles and ballots between them, the host test (Testing/fixels/fixels_batch_walk_host.c)
 * runs them lane by lane with loops in their place. */
#ifndef TK_FIXELS_BATCH_WALK_H
#define TK_FIXELS_BATCH_WALK_H

#include "fixels_segment.h"

/* The label of lane j's sample while its window runs, TK_FX_BW_MARK - j: below every label the
 * walk writes (lobes >= 0, -1, bridges -2 - lobe >= -1 - TK_FIXELS_N_MAX, whatever the table's
 * size: the host test runs tables as large as the host's). */
#define TK_FX_BW_MARK (-8192)
/* Lanes of a batch (a warp). */
#define TK_FX_BW_LANES 32
/* Lobes the warp kernel's shared table holds (the 1000 real voxels of the tests have at most
 * 24; a voxel with more goes to the one-thread kernel): 24, not 32, so that a voxel's shared
 * memory on the 1281 directions fits twelve voxels an SM (fixels_warp.cuh). */
#define TK_FX_WARP_LOBES 24
/* Doubles a staged sample takes: direction (3), weight, amplitude, side (fx_bw_side); 48 bytes,
 * so that a slot of a 16-byte aligned stage is too (fx_bw_load). */
#define TK_FX_STAGE 6

/* A lane's neighbours at its window's start: prior[e] the label of neighbour e where it is no
 * earlier lane of the window (negative: no lobe), pred[e] the earlier lane where it is one
 * (else -1). */
typedef struct {
    int prior[6], pred[6];
} fx_bw_lane;

/* The sample's direction, weight and amplitude into its stage slot. */
TK_HD static inline void fx_bw_stage(const tk_fixels_view *p, const double *values, int d, double *st)
{
    for (int i = 0; i < 3; ++i) st[i] = p->dirs[d][i];
    st[3] = p->weights[d], st[4] = values[d], st[5] = 0.0;
}

/* Lane `lane`'s neighbours (their labels label[nb[e]], read after the window's marks). */
TK_HD static inline void fx_bw_gather(const int *lab, int lane, fx_bw_lane *L)
{
    for (int e = 0; e < 6; ++e) {
        const int l = lab[e];
        const int j = TK_FX_BW_MARK - l; /* the lane that marked it, where l is a mark */
        const int mark = l <= TK_FX_BW_MARK;
        L->pred[e] = mark && j < lane ? j : -1;
        L->prior[e] = mark ? -1 : l;
    }
}

/* A lane outside the window: nothing to read, its lobe -1 throughout. */
TK_HD static inline void fx_bw_idle(fx_bw_lane *L)
{
    for (int e = 0; e < 6; ++e) L->prior[e] = L->pred[e] = -1;
}

/* What a lane's sample does in the sequential walk: joins one lobe; starts one (its id the next
 * after the lobes before the window and the window's earlier new ones; the later lanes read it
 * as that lobe); bridges lobes (it joins the first of them after the walk and changes nothing
 * else: no lobe to the later samples, as a sample with no label); or else (a merge, a new lobe
 * past the table) is special: the window ends there. */
enum { FX_BW_JOIN, FX_BW_NEW, FX_BW_BRIDGE, FX_BW_SPECIAL };

TK_HD static inline int fx_bw_lowest(unsigned bits)
{
#ifdef __CUDA_ARCH__
    return __ffs((int)bits) - 1;
#else
    return __builtin_ctz(bits);
#endif
}

TK_HD static inline int fx_bw_count(unsigned bits)
{
#ifdef __CUDA_ARCH__
    return __popc(bits);
#else
    return __builtin_popcount(bits);
#endif
}

/* What a window's rounds read besides the lanes: the lobes before it (nl of them, their peaks
 * unchanged until its first special lane), the stage, the merge ratio, the table's size. */
typedef struct {
    const tk_fixels_lobe *lobes;
    const double *stage;
    double ratio;
    int nl, max_lobes;
} fx_bw_window;

/* A lobe's largest amplitude (max_peak): a new lobe of the window's has its first sample's,
 * the lane new_lanes' (l - nl)-th bit. */
TK_HD static inline double fx_bw_max_peak(const fx_bw_window *win, unsigned new_lanes, int l)
{
    if (l < win->nl) return win->lobes[l].max_peak;
    for (int i = win->nl; i < l && new_lanes; ++i) new_lanes &= new_lanes - 1;
    /* a round before the fixpoint may read a lobe that the last round's new lanes no longer
     * start: any peak will do there (the fixpoint's rounds read only lobes that exist) */
    return new_lanes ? fabs(win->stage[TK_FX_STAGE * fx_bw_lowest(new_lanes) + 4]) : 1.0;
}

/* One round for lane `lane`: its step given its earlier lanes' lobes (pred_lobe[e], lane
 * pred[e]'s lobe in the last round; read only where pred[e] >= 0), the lanes that started a
 * lobe in the last round (new_lanes) and its amplitude v: returns the lobe it joins or starts,
 * or -1 (no lobe to the later lanes); *kind what it does, *bridge the lobe a bridge joins after
 * the walk.  A lane's step reads its earlier lanes' only, so the rounds reach the fixpoint in at
 * most a round a lane. */
TK_HD static inline int fx_bw_eval(const fx_bw_window *win, const fx_bw_lane *L, int lane, const int *pred_lobe,
                                   unsigned new_lanes, double v, int *kind, int *bridge)
{
    int lab[6], top = -1, other = 0;
    for (int e = 0; e < 6; ++e) lab[e] = L->pred[e] >= 0 ? pred_lobe[e] : L->prior[e];
    /* fx_adjacent_lobes' common case first, in registers: no lobe, or one */
    for (int e = 0; e < 6; ++e) top = lab[e] > top ? lab[e] : top;
    for (int e = 0; e < 6; ++e) other |= (lab[e] >= 0) & (lab[e] != top);
    *bridge = top;
    if (!other && top >= 0) {
        *kind = FX_BW_JOIN;
        return top;
    }
    if (!other) {
        const int id = win->nl + fx_bw_count(new_lanes & ((1u << lane) - 1u));
        *kind = id < win->max_lobes ? FX_BW_NEW : FX_BW_SPECIAL;
        return id < win->max_lobes ? id : -1;
    }
    /* two lobes or more: fx_adjacent_lobes' first (the least) and last (top), in registers */
    int least = top;
    for (int e = 0; e < 6; ++e) least = lab[e] >= 0 && lab[e] < least ? lab[e] : least;
    *bridge = least;
    *kind = !(fabs(v) / fx_bw_max_peak(win, new_lanes, top) > win->ratio) ? FX_BW_BRIDGE : FX_BW_SPECIAL;
    return -1;
}

/* Lobe l starts at sample d (staged in st), as the host's sweep starts one. */
TK_HD static inline void fx_bw_start(tk_fixels_work *w, int l, int d, const double *st)
{
    const double v = st[4], wt = st[3];
    tk_fixels_lobe *lobe = &w->lobes[l];
    lobe->alive = 1, lobe->parent = l;
    lobe->max_peak = fabs(v);
    lobe->integral = fabs(v * wt);
    for (int i = 0; i < 3; ++i) lobe->mean[i] = st[i] * fabs(v) * wt, w->peaks[l].dir[i] = st[i];
    w->peaks[l].next = -1, w->peaks[l].seed = d;
    lobe->peak_head = lobe->peak_tail = l, lobe->num_peaks = 1;
}

/* lobe_add's sums with the sample's amplitude, direction and weight from its stage (the same
 * arithmetic, in the same order) on a lobe's mean and integral; the label is the caller's. */
TK_HD static inline void fx_lobe_grow(double *mean, double *integral, double value, const double *dir, double wt)
{
    const double v = fabs(value * wt);
    const double mult = fx_dot3(mean, dir) > 0.0 ? 1.0 : -1.0;
    for (int i = 0; i < 3; ++i) mean[i] += dir[i] * mult * v;
    *integral += v;
}

/* A sample's side in lobe_add (its mult: the sign of the running mean . dir) where the lobe's
 * mean when its join starts (m0) decides it for every running mean the join can reach, else 0.
 * moved: at least the sum of the amplitudes (lobe_add's v) that the join adds before it.  The
 * running mean is m0 plus those samples (unit directions) plus the sums' rounding, so its dot
 * product with dir is m0 . dir within moved (1 + 2 eps) + 65 eps (|m0|_1 + moved), and each dot
 * product rounds by at most 6 eps (|m0|_1 + moved): where |m0 . dir| exceeds 1.75 moved +
 * 1e-12 (|m0|_1 + 2 moved), both have its sign and neither is 0.  The join then takes the sides
 * from here, off its chain of dot products, with the same sums. */
TK_HD static inline double fx_bw_side(const double *m0, const double *dir, double moved)
{
    const double size0 = fabs(m0[0]) + fabs(m0[1]) + fabs(m0[2]);
    const double d0 = fx_dot3(m0, dir);
    if (!(fabs(d0) > 1.75 * moved + 1e-12 * (size0 + 2.0 * moved))) return 0.0;
    return d0 > 0.0 ? 1.0 : -1.0;
}

/* A staged sample's six doubles (on the device three 16-byte loads: a slot is 48 bytes from a
 * 16-byte aligned stage). */
TK_HD static inline void fx_bw_load(const double *st, double *out)
{
#ifdef __CUDA_ARCH__
    const double2 *q = (const double2 *)st;
    const double2 a = q[0], b = q[1], c = q[2];
    out[0] = a.x, out[1] = a.y, out[2] = b.x, out[3] = b.y, out[4] = c.x, out[5] = c.y;
#else
    for (int i = 0; i < TK_FX_STAGE; ++i) out[i] = st[i];
#endif
}

/* The samples of lanes `lanes` (a bit a lane, at least one) join the lobe, in lane order (the
 * walk's order), with lobe_add's sums: while their stages hold their sides (fx_bw_side), the
 * sums alone (a chain of one multiply-add a sample, each sample's stage read before the last
 * one's sums are done); from the first without, each side from the running mean, as lobe_add. */
TK_HD static inline void fx_bw_join(tk_fixels_lobe *lobe, const double *stage, unsigned lanes)
{
    double mean[3] = {lobe->mean[0], lobe->mean[1], lobe->mean[2]}, integral = lobe->integral;
    double cur[TK_FX_STAGE];
    const double *st = stage + TK_FX_STAGE * fx_bw_lowest(lanes);
    fx_bw_load(st, cur);
    while (cur[5] != 0.0) {
        lanes &= lanes - 1;
        double next[TK_FX_STAGE] = {0, 0, 0, 0, 0, 0};
        if (lanes) {
            st = stage + TK_FX_STAGE * fx_bw_lowest(lanes);
            fx_bw_load(st, next);
        }
        const double v = fabs(cur[4] * cur[3]), mult = cur[5];
        for (int i = 0; i < 3; ++i) mean[i] += cur[i] * mult * v;
        integral += v;
        if (!lanes) break;
        for (int i = 0; i < TK_FX_STAGE; ++i) cur[i] = next[i];
    }
    for (; lanes; lanes &= lanes - 1) {
        st = stage + TK_FX_STAGE * fx_bw_lowest(lanes);
        fx_lobe_grow(mean, &integral, st[4], st, st[3]);
    }
    for (int i = 0; i < 3; ++i) lobe->mean[i] = mean[i];
    lobe->integral = integral;
}

/* The sequential walk's step for sample d (staged in st) on the tables: a new lobe, a merge
 * or a bridge (or a join, should it be one).  *nl: the lobes so far; returns 0, or -1 where a
 * new lobe would be lobe max_lobes. */
TK_HD static inline int fx_bw_special(const tk_fixels_view *p, tk_fixels_work *w, int d, const double *st, int *nl,
                                      int max_lobes)
{
    int lab[6], adj[6];
    for (int e = 0; e < 6; ++e) lab[e] = w->label[p->adj[d][e]]; /* later lanes' marks: no lobe */
    const int na = fx_adjacent_lobes(lab, adj);
    const double v = st[4], wt = st[3];
    if (na == 0) {
        if (*nl == max_lobes) return -1;
        fx_bw_start(w, *nl, d, st);
        w->label[d] = (*nl)++;
    } else if (na == 1) {
        fx_lobe_grow(w->lobes[adj[0]].mean, &w->lobes[adj[0]].integral, v, st, wt);
        w->label[d] = adj[0];
    } else if (fabs(v) / w->lobes[adj[na - 1]].max_peak > p->lobe_merge_ratio) {
        /* a bridge high enough next to the last lobe's peak: the lobes become one */
        for (int a = 1; a < na; ++a) lobe_merge(w, adj[0], adj[a]);
        fx_lobe_grow(w->lobes[adj[0]].mean, &w->lobes[adj[0]].integral, v, st, wt);
        w->label[d] = adj[0];
    } else {
        /* a bridge: it joins the first of its lobes after the walk */
        w->label[d] = -2 - adj[0];
    }
    return 0;
}

#endif
