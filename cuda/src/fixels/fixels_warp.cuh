/* The fixels' fast CUDA kernel: a warp a voxel, the voxel's working set in shared memory.
 *
 * The same segmentation as fixels_segment.h (and so as the host's), step for step, spread
 * over the warp where the steps allow it:
 *  - the samples: the block's threads take a direction each and sum its series for every voxel
 *    of the block (each basis value read once for them all), one FMA a coefficient in
 *    coefficient order, so the values are the doubles the host and the one-thread kernel get;
 *  - the largest |sample| by a warp reduction (the first of equals, as the host's scan);
 *  - the descending order of the positive samples: the host's sort (sort_descending) in warp
 *    form, a stable LSD radix sort on the same float keys (lanes' ranks by __match_any_sync),
 *    passes where all keys share the byte skipped, then runs of equal floats put in double
 *    order by one lane exactly as the host does; the order is a total order (amplitude
 *    descending, ties by index ascending), so it is the host's order;
 *  - the region growing: 32 samples of the order a step (fixels_batch_walk.h): the lanes' lobes
 *    as the fixpoint of their neighbours' and earlier lanes' lobes, the samples that join a
 *    lobe or bridge lobes at once (each lobe's sums in the host's order), the rare samples that
 *    start a lobe or merge lobes one at a time by the host's step; a bridge sample's lobe is
 *    kept in its own label as -2 - lobe (read as "no lobe yet" by the walk, as the host's
 *    separate list is), and the bridges join their lobes after the walk in the walk's order;
 *  - the voxel's climb tensor by the lanes (each entry's sum in the host's column order);
 *  - the lobes' peak revision (revise_peaks, the climbs) one lobe a lane: a lobe's revision
 *    writes only its own peaks and maximum, and reads labels and parents that no lane writes;
 *  - the kept lobes' output slots by a ballot prefix count (the host's running count).
 * A voxel with more than TK_FX_WARP_LOBES lobes does not fit its shared lobe table: it is put
 * on a list that the one-thread kernel (fixels_cuda.cu, global scratch) runs after this one. */
#ifndef TK_FIXELS_WARP_CUH
#define TK_FIXELS_WARP_CUH

#include <cuda_pipeline.h>
#include <cuda_runtime.h>

#include "fixels_batch_walk.h"
#include "fixels_samples.cuh"
#include "fixels_warp_sort.cuh"
#include "fixels_segment.h"

/* TK_FX_WARP_LOBES (fixels_batch_walk.h, for the host test): at most a warp's lanes, as the peak
 * revision takes a lobe a lane. */
static_assert(TK_FX_WARP_LOBES <= TK_FX_BW_LANES, "the peak revision takes lobe l in lane l");
/* The most voxels (warps) a block takes: they share the block's pass over the basis. */
#define TK_FX_WARP_VOXELS_MAX 8
/* Registers a thread.  An SM's registers go to its four partitions, a warp to one: 200 a thread
 * gave two warps a partition, eight voxels an SM (Nsight Compute on the H100: 12.5% theoretical
 * occupancy, latency-bound); 168 gives three, twelve voxels an SM (the shared memory of twelve
 * 1281-direction voxels fits), at the cost of more spills in the climbs: 5.4-6.0M voxels/s
 * against 5.1-5.3M at 200 on the H100 (600k voxels, alternating runs).  The build may set it
 * (TK_FIXELS_WARP_REGISTERS in CMake) for A/B runs. */
#ifndef TK_FX_WARP_REGISTERS
#define TK_FX_WARP_REGISTERS 168
#endif

/* Basis values the sampling pass loads at once (a thread's registers for them). */
#define TK_FX_BASIS_BATCH 16

/* One voxel's bytes of shared memory, in pieces each 16-byte aligned, some of them holding
 * different things in turn (19,248 bytes on the 1281 directions at lmax 8):
 *  values  n doubles: the samples; after the walk the climb's aniso, tensor and rows, and the
 *          coefficients again (coefs: the tail)
 *  lobes   TK_FX_WARP_LOBES tk_fixels_lobe; during the sort the radix histogram (256 ints)
 *  peaks   as many tk_fixels_peak
 *  stage   the walk's 32 samples (TK_FX_STAGE doubles each), then the bridges'; after them
 *          the lobes' output slots (kept, TK_FX_WARP_LOBES ints)
 *  label   n int16 (the walk's labels); before the sort the coefficients (k doubles), during it
 *          the second order buffer (n ushorts)
 *  order   n ushorts: the positive samples' directions, sorted */
typedef struct {
    unsigned values, sh, lobes, peaks, kept, stage, label, hist, order, bytes;
    /* fx_warp_sort16's scratch (its keys, middle buffer and histogram) where sort16 is set; the
     * climb's tables (aniso, tensor, rows) from climb, the coefficients again at coefs */
    unsigned keys, mid, shist, sort16, climb, coefs;
} fx_warp_layout;

static_assert(sizeof(tk_fixels_lobe) * TK_FX_WARP_LOBES >= 4 * 256, "the radix histogram fits the lobe table");
static_assert(8 * TK_FX_STAGE * 32 >= 4 * TK_FX_WARP_LOBES, "the output slots fit the stage");
static_assert(8 * TK_FX_STAGE % 16 == 0, "a stage slot is 16-byte aligned (fx_bw_load)");

__host__ __device__ static inline unsigned fx_round16(unsigned b)
{
    return (b + 15u) / 16u * 16u;
}

/* The fused and pull kernels' layout. */
__host__ __device__ static inline fx_warp_layout fx_warp_layout_for(int n, int k)
{
    fx_warp_layout l;
    const unsigned N = (unsigned)n, K = (unsigned)k, L = TK_FX_WARP_LOBES;
    l.values = 0;
    l.lobes = l.values + fx_round16(8u * N);
    l.hist = l.lobes;
    l.peaks = l.lobes + fx_round16((unsigned)sizeof(tk_fixels_lobe) * L);
    l.stage = l.peaks + fx_round16((unsigned)sizeof(tk_fixels_peak) * L);
    l.kept = l.stage;
    l.label = l.stage + 8u * TK_FX_STAGE * 32u;
    l.sh = l.label;
    l.order = l.label + fx_round16(2u * N > 8u * K ? 2u * N : 8u * K);
    l.bytes = fx_round16(l.order + 2u * N);
    /* the sort16's keys in the label and order pieces, its middle buffer and histogram in the
     * lobes, peaks and stage pieces (free until the walk): the 1281 directions fit, the 5121
     * take fx_warp_sort */
    l.keys = l.label, l.mid = l.lobes, l.shist = l.lobes + fx_round16(2u * N);
    l.sort16 = l.bytes - l.label >= 4u * N && l.label - l.lobes >= fx_round16(2u * N) + 4u * 256u;
    /* the climb's tables over the samples, no longer read then; the coefficients at their tail */
    l.climb = l.values, l.coefs = l.values + 8u * (N - K);
    return l;
}

/* The slim kernel's layout (fixels_warp_slim_kernel: the samples stay in global memory, read
 * there; 9,088 bytes a voxel on the 1281 directions at lmax 8, against 19,248):
 *  order   n ushorts (or the climb's tables and coefficients, if larger): the walk's order; after
 *          the bridges the climb's aniso, tensor, rows and the coefficients again
 *  label   n int16
 *  stage   the walk's 32 samples, then the bridges'; after them the output slots (kept)
 *  lobes, peaks  TK_FX_WARP_LOBES each
 * The sort16's keys (4n bytes) span order and label (order written only once the keys are
 * read), its middle buffer (2n) and histogram (256 words) from stage on (the layout grown past
 * peaks where they need it: the 5121 directions); the float sort's second buffer in label, its
 * histogram in lobes. */
__host__ __device__ static inline fx_warp_layout fx_warp_slim_layout_for(int n, int k)
{
    fx_warp_layout l;
    const unsigned N = (unsigned)n, K = (unsigned)k, L = TK_FX_WARP_LOBES;
    const unsigned climb = 8u * (3u * K + 6u * TK_TRACK_ROWS_MAX);
    l.values = l.sh = 0; /* none: the samples are global, the coefficients read from the input */
    l.order = 0;
    l.climb = l.order, l.coefs = l.climb + 8u * (2u * K + 6u * TK_TRACK_ROWS_MAX);
    l.label = l.order + fx_round16(2u * N > climb ? 2u * N : climb);
    l.stage = l.label + fx_round16(2u * N);
    l.kept = l.stage;
    l.lobes = l.stage + 8u * TK_FX_STAGE * 32u;
    l.hist = l.lobes;
    l.peaks = l.lobes + fx_round16((unsigned)sizeof(tk_fixels_lobe) * L);
    const unsigned end = l.peaks + fx_round16((unsigned)sizeof(tk_fixels_peak) * L);
    l.keys = l.order, l.mid = l.stage, l.shist = l.mid + fx_round16(2u * N);
    const unsigned sort_end = l.shist + 4u * 256u;
    l.bytes = fx_round16(end > sort_end ? end : sort_end);
    l.sort16 = 1;
    return l;
}

/* The old layout's coefficients (doubles, as the input's floats) at the samples' tail, past the
 * climb's aniso, tensor and rows. */
static_assert(TK_FIXELS_DIRECTIONS - TK_FIXELS_K_MAX >= 2 * TK_FIXELS_K_MAX + 6 * TK_TRACK_ROWS_MAX,
              "the coefficients clear the climb's tables");

/* The walk of the sorted positive samples (the host's sweep in tk_fixels_segment_view) by the
 * whole warp, 32 samples of the order a batch, lane j taking sample base + j: the batched walk of
 * fixels_batch_walk.h, its per-lane steps with the warp's shuffles, ballots and matches between
 * them (the host test runs the same steps lane by lane).  A batch's window: each lane marks its
 * sample's label, reads its six neighbours' labels, then rounds of fx_bw_eval, each lane's
 * earlier lanes' lobes by shuffles and the new lobes by a ballot, until no lane changes (the
 * fixpoint: the sequential walk's steps up to the first lane that merges lobes or starts one
 * past the table); the lanes before that one start and join their lobes (each lobe's samples by
 * the first of its lanes, in lane order: lobe_add's sums in the host's order) and the bridges
 * get their labels; lane 0 takes the special lane's step (fx_bw_special, the host's), and the
 * window starts again after it.  The lobes' sums live in the shared table.  Returns the lobes
 * grown, or -1 where they outgrow the table. */
__device__ static inline int fx_warp_walk(const tk_fixels_view *p, tk_fixels_work *w, const unsigned short *sorted,
                                          int npos, double *stage, int lane)
{
    const unsigned full = 0xffffffffu;
    const double ratio = p->lobe_merge_ratio;
    /* a direction's six neighbours (shorts) as three 32-bit words */
    const unsigned *adj32 = (const unsigned *)p->adj;
    const double *dirs = &p->dirs[0][0], *weights = p->weights;
    /* the tables' pointers once, in registers */
    int16_t *const label = w->label;
    tk_fixels_lobe *const lobes = w->lobes;
    int nl = 0;
    /* a batch's tables (neighbours, direction, weight) and samples are fetched during the batch
     * before it (the slim kernel's samples are in global memory) */
    int next_d = 0;
    unsigned next_a[3] = {0, 0, 0};
    double next_dir[3] = {0, 0, 0}, next_wt = 0.0, next_v = 0.0;
    for (int base = 0; base < npos; base += 32) {
        const int steps = npos - base < 32 ? npos - base : 32;
        const bool live = lane < steps;
        if (base == 0 && live) {
            next_d = sorted[lane];
            for (int e = 0; e < 3; ++e) next_a[e] = __ldg(&adj32[3 * next_d + e]);
            for (int e = 0; e < 3; ++e) next_dir[e] = __ldg(&dirs[3 * next_d + e]);
            next_wt = __ldg(&weights[next_d]);
            next_v = w->values[next_d];
        }
        const int d = next_d;
        const unsigned a[3] = {next_a[0], next_a[1], next_a[2]};
        double v = 0.0;
        if (live) {
            double *st = stage + TK_FX_STAGE * lane;
            for (int e = 0; e < 3; ++e) st[e] = next_dir[e];
            st[3] = next_wt;
            st[4] = v = next_v;
            label[d] = TK_FX_BW_MARK - lane;
        }
        if (base + 32 + lane < npos) {
            next_d = sorted[base + 32 + lane];
            for (int e = 0; e < 3; ++e) next_a[e] = __ldg(&adj32[3 * next_d + e]);
            for (int e = 0; e < 3; ++e) next_dir[e] = __ldg(&dirs[3 * next_d + e]);
            next_wt = __ldg(&weights[next_d]);
            next_v = w->values[next_d];
        }
        __syncwarp();
        for (int lo = 0; lo < steps;) {
            const bool active = live && lane >= lo;
            fx_bw_lane L;
            if (active) {
                int lab[6];
                for (int e = 0; e < 3; ++e) lab[2 * e] = label[a[e] & 0xffffu], lab[2 * e + 1] = label[a[e] >> 16];
                fx_bw_gather(lab, lane, &L);
            } else {
                fx_bw_idle(&L);
            }
            int lobe = -1, kind = FX_BW_JOIN, bridge = -1;
            const fx_bw_window win = {lobes, stage, ratio, nl, TK_FX_WARP_LOBES};
            for (;;) {
                const unsigned new_lanes = __ballot_sync(full, active && kind == FX_BW_NEW);
                int pred_lobe[6];
                for (int e = 0; e < 6; ++e) pred_lobe[e] = __shfl_sync(full, lobe, L.pred[e] >= 0 ? L.pred[e] : lane);
                int next_kind;
                const int next = fx_bw_eval(&win, &L, lane, pred_lobe, new_lanes, v, &next_kind, &bridge);
                const bool changed = __any_sync(full, active && (next != lobe || next_kind != kind));
                lobe = next, kind = next_kind;
                if (!changed) break;
            }
            const unsigned specials = __ballot_sync(full, active && kind == FX_BW_SPECIAL);
            const int f = specials ? __ffs((int)specials) - 1 : steps;
            const bool grows = active && lane < f && (kind == FX_BW_JOIN || kind == FX_BW_NEW);
            /* each joining lane's side where its lobe's mean decides it (read before any join of
             * the window), the growing lanes' amplitudes summed by a reduction */
            double *st = stage + TK_FX_STAGE * lane;
            double moved = grows ? fabs(v * st[3]) : 0.0;
            for (int off = 16; off; off >>= 1) moved += __shfl_xor_sync(full, moved, off);
            if (grows) st[5] = kind == FX_BW_JOIN && lobe < win.nl ? fx_bw_side(lobes[lobe].mean, st, moved) : 0.0;
            __syncwarp();
            /* each lobe's lanes (a key no other lane has where a lane grows none) by the first of
             * them: a new lobe's is the lane that starts it */
            const unsigned peers = __match_any_sync(full, grows ? lobe : 64 + lane);
            if (grows && !(peers & fx_lanes_below(lane))) {
                unsigned rest = peers;
                if (kind == FX_BW_NEW) fx_bw_start(w, lobe, d, stage + TK_FX_STAGE * lane), rest &= rest - 1;
                if (rest) fx_bw_join(&lobes[lobe], stage, rest);
            }
            if (active && lane < f) label[d] = kind == FX_BW_BRIDGE ? -2 - bridge : lobe;
            nl += __popc(__ballot_sync(full, active && lane < f && kind == FX_BW_NEW));
            __syncwarp();
            if (f == steps) break;
            /* the special lane's step by lane 0 (its relabelling of a merge rewrites labels the
             * next window reads: the lanes wait for it) */
            const int df = __shfl_sync(full, d, f);
            int fail = 0;
            if (lane == 0) fail = fx_bw_special(p, w, df, stage + TK_FX_STAGE * f, &nl, TK_FX_WARP_LOBES);
            nl = __shfl_sync(full, nl, 0);
            if (__shfl_sync(full, fail, 0)) return -1;
            __syncwarp();
            lo = f + 1;
        }
    }
    __syncwarp();
    return nl;
}

/* One lobe's peak revision (revise_peaks, its climbs) by one thread, on the voxel's tensor (in
 * shared memory, or the split form's record in global memory): the text of fx_revise_lobe below,
 * inlined into the split form's climb kernel (fixels_split.cuh), whose body is the climbs alone. */
static __device__ __forceinline__ void fx_revise_lobe_inline(const tk_fixels_view *p, const double *sh,
                                                             const tk_fixels_work *w, int l, double *aniso,
                                                             double *tensor, double (*rows)[6], double scale,
                                                             double iso)
{
    int list[TK_FX_WARP_LOBES];
    tk_fixels_work mine = *w;
    mine.list = list, mine.aniso = aniso, mine.tensor = tensor, mine.rows = rows;
    mine.tensor_ready = 1, mine.scale = scale, mine.iso = iso;
    revise_peaks(p, sh, &mine, l);
}

/* The same by one lane of a warp kernel.  Not inlined: the climbs want more registers than the
 * kernel's budget, and their spills stay in here instead of reaching the walk's loop. */
static __device__ __noinline__ void fx_revise_lobe(const tk_fixels_view *p, const double *sh, const tk_fixels_work *w, int l,
                                            double *aniso, double *tensor, double (*rows)[6], double scale, double iso)
{
    fx_revise_lobe_inline(p, sh, w, l, aniso, tensor, rows, scale, iso);
}

/* Directions a thread of the sampling pass takes at once, and coefficients whose basis values it
 * loads at once for them (registers: TK_FX_SAMPLE_DIRS x TK_FX_SAMPLE_BATCH basis values and
 * TK_FX_SAMPLE_DIRS x V sums). */
#define TK_FX_SAMPLE_DIRS 3
#define TK_FX_SAMPLE_BATCH 8

/* The block's pass over the basis for its V voxels (lives: the ones to sample, a bit each): a
 * thread takes TK_FX_SAMPLE_DIRS directions at once, so that each coefficient read from shared
 * memory serves as many multiply-adds, and loads TK_FX_SAMPLE_BATCH coefficients' basis values for
 * them before their multiply-adds (one memory latency for the batch); each sample's sum in
 * coefficient order (the host's doubles).  V a template parameter: the loops over the voxels
 * unrolled to the block's count. */
template <int V>
__device__ static inline void fx_sample_pass(const tk_fixels_view &view, const fx_warp_layout &lay, unsigned lives)
{
    extern __shared__ __align__(16) unsigned char fx_smem[];
    const int n = view.n, k = view.k, T = (int)blockDim.x;
    const size_t stride = lay.bytes;
    for (int d0 = (int)threadIdx.x; d0 < n; d0 += TK_FX_SAMPLE_DIRS * T) {
        double acc[TK_FX_SAMPLE_DIRS][V];
#pragma unroll
        for (int t = 0; t < TK_FX_SAMPLE_DIRS; ++t)
#pragma unroll
            for (int j = 0; j < V; ++j) acc[t][j] = 0.0;
        for (int c0 = 0; c0 < k; c0 += TK_FX_SAMPLE_BATCH) {
            double b[TK_FX_SAMPLE_DIRS][TK_FX_SAMPLE_BATCH];
#pragma unroll
            for (int t = 0; t < TK_FX_SAMPLE_DIRS; ++t) {
                const int d = d0 + t * T;
#pragma unroll
                for (int u = 0; u < TK_FX_SAMPLE_BATCH; ++u)
                    b[t][u] = d < n && c0 + u < k ? __ldg(&view.basis[(size_t)(c0 + u) * n + d]) : 0.0;
            }
#pragma unroll
            for (int u = 0; u < TK_FX_SAMPLE_BATCH; ++u) {
                if (c0 + u >= k) break;
#pragma unroll
                for (int j = 0; j < V; ++j) {
                    if (!(lives >> j & 1u)) continue;
                    const double c = ((const double *)(fx_smem + j * stride + lay.sh))[c0 + u];
#pragma unroll
                    for (int t = 0; t < TK_FX_SAMPLE_DIRS; ++t) acc[t][j] = fma(b[t][u], c, acc[t][j]);
                }
            }
        }
#pragma unroll
        for (int t = 0; t < TK_FX_SAMPLE_DIRS; ++t) {
            const int d = d0 + t * T;
            if (d >= n) continue;
#pragma unroll
            for (int j = 0; j < V; ++j)
                if (lives >> j & 1u) ((double *)(fx_smem + j * stride + lay.values))[d] = acc[t][j];
        }
    }
}

/* A developer's measurement (TK_FIXELS_WARP_PHASES in CMake defines TK_FX_PHASE_TIMING): each
 * warp's lane 0 adds the clock cycles of the kernel's phases to fx_phase_cycles (the sampling
 * pass with its waits at the block's barriers, the sort with the samples' scan, the walk, the
 * bridges, the climb's tensor, the climbs and outputs, the lobe masks), and execute prints their
 * sums (fixels_cuda.cu): where a voxel's time goes, without a profiler. */
#define TK_FX_PHASES 7
#ifdef TK_FX_PHASE_TIMING
static __device__ unsigned long long fx_phase_cycles[TK_FX_PHASES]; /* a unit's own */
#define FX_PHASE(i)                                                                                                    \
    do {                                                                                                               \
        if (lane == 0) {                                                                                               \
            const long long fx_now = clock64();                                                                        \
            atomicAdd(&fx_phase_cycles[i], (unsigned long long)(fx_now - fx_then));                                    \
            fx_then = fx_now;                                                                                          \
        }                                                                                                              \
    } while (0)
#define FX_PHASE_START long long fx_then = clock64()
#else
#define FX_PHASE(i) ((void)0)
#define FX_PHASE_START ((void)0)
#endif

/* A chunk's arrays (fixels_kernel's): the input, the outputs, the counters (the bad voxels, the
 * truncated), and the list of the voxels passed on to the one-thread kernel (redo_count entries). */
typedef struct {
    const float *sh;
    const uint8_t *mask;
    uint8_t *count;
    float *afd, *amp, *mean, *peak;
    uint8_t *lut;
    unsigned long long *counters;
    unsigned *redo, *redo_count;
} fx_warp_io;

/* The split slim kernel's hand-off (fixels_split.cuh): what the climbs of a voxel's lobes need,
 * written by the segmentation kernel to global scratch (one record and one row of labels a voxel
 * of the chunk), so that the climb kernel takes them a thread a lobe and the finish kernel the
 * voxels' outputs a warp a voxel.  Each record's tables are the shared ones' copies: the climbs
 * read the same doubles, so their results are the one-lane climbs' bit for bit. */
typedef struct {
    double tensor[TK_FIXELS_K_MAX];
    double rows[TK_TRACK_ROWS_MAX][6];
    double scale, iso;
    tk_fixels_lobe lobes[TK_FX_WARP_LOBES];
    tk_fixels_peak peaks[TK_FX_WARP_LOBES];
    int kept[TK_FX_WARP_LOBES];
    int nl;
} fx_split_voxel;

/* voxels: a record per voxel of the chunk; label: n int16 a voxel; lobes: the lobes to climb
 * (v * TK_FX_WARP_LOBES + l, counts[0] of them); finish: the voxels handed off (counts[1]); wide:
 * the climb kernel at as many registers as it wants (fixels_split.cuh). */
typedef struct {
    fx_split_voxel *voxels;
    int16_t *label;
    unsigned *lobes, *finish, *counts;
    int wide;
} fx_split_io;

/* A chunk's hand-off bytes a voxel (fixels_cuda.cu's chunk sizing): the record, n labels, its
 * lobes' and its own list entries. */
__host__ __device__ static inline size_t fx_split_bytes(int n)
{
    return sizeof(fx_split_voxel) + 2u * (size_t)n + sizeof(unsigned) * (TK_FX_WARP_LOBES + 1);
}

/* The kept lobes' output slots by a ballot prefix count (the host's running count) for lobes
 * base .. base + 31 (lane l's lobe base + l; pass: it is alive, over the integral threshold and,
 * revised, over the peak threshold): their outputs and w->kept entries written; returns the
 * running count kept after them. */
__device__ static inline int fx_warp_keep(const tk_fixels_view &view, const tk_fixels_work *w, int l, int nl,
                                          bool pass, int kept, size_t v, const fx_warp_io &io, int lane)
{
    const unsigned full = 0xffffffffu;
    const int S = view.slots;
    const unsigned passing = __ballot_sync(full, pass);
    const int at = kept + __popc(passing & fx_lanes_below(lane));
    const bool keep = pass && !(view.max_fixels > 0 && at >= view.max_fixels);
    if (l < nl) w->kept[l] = keep && at < S ? at : -1;
    if (keep && at < S) {
        const tk_fixels_lobe *lobe = &w->lobes[l];
        const double nm = sqrt(fx_dot3(lobe->mean, lobe->mean));
        const double *pd = w->peaks[lobe->peak_head].dir;
        io.afd[v * S + at] = (float)lobe->integral;
        io.amp[v * S + at] = (float)lobe->max_peak;
        for (int i = 0; i < 3; ++i) {
            io.mean[(v * S + at) * 3 + i] = (float)(lobe->mean[i] / nm);
            io.peak[(v * S + at) * 3 + i] = (float)pd[i];
        }
    }
    return kept + __popc(__ballot_sync(full, keep));
}

/* Voxel v's lobe mask (its labels, any_lobe 0: none) and count from the kept lobes (w->kept,
 * kept of them), the truncated counted. */
__device__ static inline void fx_warp_masks(const tk_fixels_view &view, tk_fixels_work *w, const int16_t *label,
                                            bool any_lobe, int kept, size_t v, const fx_warp_io &io, int lane)
{
    const int n = view.n, S = view.slots;
    if (io.lut)
        for (int d = lane; d < n; d += 32) {
            const int lab = any_lobe ? label[d] : -1;
            const int out = lab < 0 ? -1 : w->kept[fx_find(w, lab)];
            io.lut[v * n + d] = out < 0 ? TK_FIXELS_NO_LOBE : (uint8_t)out;
        }
    if (lane == 0) {
        if (kept > S && view.max_fixels == 0) atomicAdd(&io.counters[1], 1ull);
        io.count[v] = (uint8_t)(kept < S ? kept : S);
    }
}

/* The pull kernels' next voxel of the chunk: lane 0 takes it from the counter *next, every lane
 * gets it (at or past the chunk's count: none left). */
__device__ static inline size_t fx_warp_next_voxel(unsigned *next, int lane)
{
    unsigned got = 0;
    if (lane == 0) got = atomicAdd(next, 1u);
    return __shfl_sync(0xffffffffu, got, 0);
}

/* Voxel v's outputs' defaults, then whether it is one to segment (returned 1): in the mask, its
 * coefficients finite (else counted bad) and its mean positive (the host's first test; else no
 * lobes).  A voxel not to segment gets its empty lobe mask here.  shd: where the coefficients go
 * as doubles (the fused kernel's sampling pass), or NULL. */
__device__ static inline int fx_warp_start(const tk_fixels_view view, size_t v, const fx_warp_io io, double *shd,
                                           int lane)
{
    const unsigned full = 0xffffffffu;
    const int n = view.n, k = view.k, S = view.slots;
    float *a = io.afd + v * S, *p = io.amp + v * S, *md = io.mean + v * S * 3, *pd = io.peak + v * S * 3;
    for (int i = lane; i < S; i += 32) a[i] = p[i] = NAN;
    for (int i = lane; i < 3 * S; i += 32) md[i] = pd[i] = NAN;
    if (lane == 0) io.count[v] = 0;
    int state = 0;
    if (!io.mask || io.mask[v]) {
        int finite = 1;
        for (int j = lane; j < k; j += 32) {
            const double c = io.sh[v * k + j];
            finite &= isfinite(c) != 0;
            if (shd) shd[j] = c;
        }
        finite = __all_sync(full, finite);
        if (!finite) {
            if (lane == 0) atomicAdd(&io.counters[0], 1ull);
        } else {
            /* a voxel whose mean is not positive has no lobes (the host's first test) */
            state = (double)io.sh[v * k] > 0.0;
        }
    }
    if (!state && io.lut)
        for (int d = lane; d < n; d += 32) io.lut[v * n + d] = TK_FIXELS_NO_LOBE;
    return state;
}

/* The segmentation of voxel v by the warp, its samples in values (the values piece of its shared
 * memory, or the slim kernel's row of the global samples), its shared memory mine laid out by
 * lay, the block's copy of the view in sview: the outputs, or v appended to the redo list where
 * its lobes outgrow the shared table.  PULL (the pull and slim kernels'): the positive samples
 * sorted by fx_warp_sort16 where it fits the layout, the climb's anisotropic part by the lanes;
 * else (the fused kernel's, as it was: the A/B reference) fx_warp_sort and lane 0.  The samples
 * are only read (through a generic pointer: shared or global memory, the same code).  SPLIT (the
 * split slim kernel's, fixels_split.cuh): a voxel with lobes hands them off after its climb tensor
 * (split) instead of climbing them here. */
template <bool PULL, bool SPLIT = false>
__device__ static inline void fx_warp_segment(const tk_fixels_view view, const tk_fixels_view &sview,
                                              const fx_warp_layout lay, unsigned char *mine, const double *values,
                                              size_t v, const fx_warp_io io, int lane,
                                              const fx_split_io split = fx_split_io())
{
    const unsigned full = 0xffffffffu;
    const int n = view.n, k = view.k;
    FX_PHASE_START;
    /* the largest |sample|, the first of equals */
    double most = -1.0;
    int largest = 0;
    /* unrolled: the slim kernel's loads from global memory in flight together */
#pragma unroll 4
    for (int d = lane; d < n; d += 32) {
        const double a = fabs(values[d]);
        if (a > most) most = a, largest = d;
    }
    for (int off = 16; off >= 1; off /= 2) {
        const double om = __shfl_xor_sync(full, most, off);
        const int ol = __shfl_xor_sync(full, largest, off);
        if (om > most || (om == most && ol < largest)) most = om, largest = ol;
    }
    const bool any_lobe = values[largest] > 0.0;
    tk_fixels_work w;
    int16_t *label = (int16_t *)(mine + lay.label);
    unsigned short *order = (unsigned short *)(mine + lay.order);
    int nl = 0;
    if (any_lobe) {
        int npos = 0;
        if (PULL && lay.sort16) {
            /* the keys by sorted position in the label piece: apart from the order, the middle
             * buffer and the histogram in both layouts */
            npos = fx_warp_sort16(values, most, n, (unsigned *)(mine + lay.keys), (unsigned short *)(mine + lay.mid),
                                  (unsigned *)(mine + lay.shist), order, (unsigned short *)label, lane);
        } else {
            /* the positive samples in direction order, then sorted */
            for (int base = 0; base < n; base += 32) {
                const int d = base + lane;
                const bool pos = d < n && values[d] > 0.0;
                const unsigned bits = __ballot_sync(full, pos);
                if (pos) order[npos + __popc(bits & fx_lanes_below(lane))] = (unsigned short)d;
                npos += __popc(bits);
            }
            __syncwarp();
            fx_warp_sort(values, order, (unsigned short *)(mine + lay.label), (int *)(mine + lay.hist), npos, lane);
        }
        for (int d = lane; d < n; d += 32) label[d] = -1;
        __syncwarp();
        FX_PHASE(1);

        /* the walk only reads the samples (the work's pointer is the host text's, not const) */
        w.t = &sview, w.values = const_cast<double *>(values), w.label = label;
        w.lobes = (tk_fixels_lobe *)(mine + lay.lobes), w.peaks = (tk_fixels_peak *)(mine + lay.peaks);
        w.kept = (int *)(mine + lay.kept);
        w.list = NULL, w.retro = NULL, w.key[0] = w.key[1] = NULL, w.order[0] = w.order[1] = NULL;
        nl = fx_warp_walk(&sview, &w, order, npos, (double *)(mine + lay.stage), lane);
        __syncwarp();
        FX_PHASE(2);
        if (nl < 0) {
            if (lane == 0) io.redo[atomicAdd(io.redo_count, 1u)] = (unsigned)v;
            return;
        }
        /* the bridges join their lobes in the walk's order, 32 of the order at a time: each
         * lobe's bridges (a match on the lobe they join, the walk's lobes final now) by the
         * first of them, in lane order, from the stage (lobe_add's sums, as the host's
         * retrospective pass); different lobes' at once */
        double *stage = (double *)(mine + lay.stage);
        for (int base = 0; base < npos; base += 32) {
            const int i = base + lane;
            int d = 0, root = -1;
            if (i < npos) {
                d = order[i];
                if (label[d] <= -2) root = fx_find(&w, -2 - label[d]);
            }
            const bool bridge = root >= 0;
            if (!__any_sync(full, bridge)) continue;
            /* no sides taken ahead here (fx_bw_side): a lobe's bridges in 32 of the order are a
             * few, too few to pay for the reduction */
            if (bridge) {
                double *st = stage + TK_FX_STAGE * lane;
                for (int e = 0; e < 3; ++e) st[e] = __ldg(&sview.dirs[d][e]);
                st[3] = __ldg(&sview.weights[d]);
                st[4] = values[d], st[5] = 0.0;
            }
            __syncwarp();
            const unsigned peers = __match_any_sync(full, bridge ? root : 64 + lane);
            if (bridge && !(peers & fx_lanes_below(lane))) fx_bw_join(&w.lobes[root], stage, peers);
            if (bridge) label[d] = root;
            __syncwarp();
        }
        /* every lane's reads of the order done before the slim layout's climb tables go over it */
        __syncwarp();
        FX_PHASE(3);
    }

    /* the climb's tensor (climb's first call, by the lanes) in the layout's climb piece (over the
     * samples in shared memory, no longer read; the slim layout's over the order, read no more) */
    int kept = 0;
    if (nl > 0) {
        double *aniso = (double *)(mine + lay.climb), *tensor = aniso + k, (*rows)[6] = (double(*)[6])(aniso + 2 * k);
        /* the coefficients as doubles where the climbs read them (the fused kernel's first copy
         * shared the label table's memory) */
        double *const shd = (double *)(mine + lay.coefs);
        double scale = 0, iso = 0;
        if (PULL) {
            /* tk_fibers_anisotropic_part by the lanes: the largest |coefficient| past the first
             * by a reduction (a maximum is exact in any order), the quotients a coefficient a
             * lane; the same doubles as its loop's */
            for (int j = lane; j < k; j += 32) {
                const double c = io.sh[v * k + j];
                shd[j] = c;
                if (j > 0) scale = fabs(c) > scale ? fabs(c) : scale;
            }
            for (int off = 16; off; off >>= 1) {
                const double o = __shfl_xor_sync(full, scale, off);
                scale = o > scale ? o : scale;
            }
            if (scale < TK_FLT_MIN) scale = 0;
            iso = (double)io.sh[v * k] * TK_SH_Y00;
            for (int j = lane; j < k; j += 32) aniso[j] = j == 0 ? 0.0 : scale > 0 ? (double)io.sh[v * k + j] / scale : 0.0;
        } else {
            for (int j = lane; j < k; j += 32) shd[j] = io.sh[v * k + j];
            __syncwarp();
            if (lane == 0) scale = tk_fibers_anisotropic_part(k, shd, aniso, &iso);
            scale = __shfl_sync(full, scale, 0), iso = __shfl_sync(full, iso, 0);
        }
        __syncwarp();
        for (int r = lane; r < k; r += 32) {
            /* the map's column entries loaded a batch at a time ahead of their sums (in column
             * order, as the host's) */
            double t = 0.0;
            for (int c0 = 1; c0 < k; c0 += TK_FX_BASIS_BATCH) {
                double m[TK_FX_BASIS_BATCH];
#pragma unroll
                for (int u = 0; u < TK_FX_BASIS_BATCH; ++u) m[u] = c0 + u < k ? __ldg(&view.map[(size_t)(c0 + u) * k + r]) : 0.0;
#pragma unroll
                for (int u = 0; u < TK_FX_BASIS_BATCH; ++u) {
                    /* the index kept below k: the unrolled loop's loads may be issued ahead of the
                     * break, and aniso[k..] is the tensor the other lanes are writing (racecheck) */
                    const double a = aniso[c0 + u < k ? c0 + u : k - 1];
                    if (c0 + u >= k) break;
                    t += m[u] * a;
                }
            }
            tensor[r] = t;
        }
        __syncwarp();
        if (view.lmax <= TK_TRACK_ROWS_MAX_ORDER) {
            /* a lane's entries' tables all loaded before their products (one memory latency, not
             * one an entry) */
            const int entries = 6 * (view.lmax - 1) * view.lmax / 2;
            constexpr int per_lane = (6 * TK_TRACK_ROWS_MAX + 31) / 32;
            int src[per_lane];
            double weight[per_lane];
#pragma unroll
            for (int q = 0; q < per_lane; ++q) {
                const int i = lane + 32 * q;
                src[q] = i < entries ? __ldg(&view.rows_src[i / 6][i % 6]) : -1;
                weight[q] = i < entries ? __ldg(&view.rows_weight[i / 6][i % 6]) : 0.0;
            }
#pragma unroll
            for (int q = 0; q < per_lane; ++q) {
                const int i = lane + 32 * q;
                if (i < entries) rows[i / 6][i % 6] = src[q] < 0 ? 0.0 : tensor[src[q]] * weight[q];
            }
        }
        __syncwarp();
        FX_PHASE(4);
        if constexpr (SPLIT) {
            /* the hand-off (fx_split_io): the voxel's climb tables, lobes, peaks and labels to its
             * record, the lobes to climb and the voxel onto the lists; the climb and finish
             * kernels do the rest */
            fx_split_voxel *rec = split.voxels + v;
            int16_t *lab = split.label + v * (size_t)n;
            for (int j = lane; j < k; j += 32) rec->tensor[j] = tensor[j];
            if (view.lmax <= TK_TRACK_ROWS_MAX_ORDER)
                for (int i = lane; i < 6 * (view.lmax - 1) * view.lmax / 2; i += 32)
                    rec->rows[i / 6][i % 6] = rows[i / 6][i % 6];
            if (lane < nl) rec->lobes[lane] = w.lobes[lane], rec->peaks[lane] = w.peaks[lane];
            for (int d = lane; d < n; d += 32) lab[d] = label[d];
            const bool climbs = lane < nl && w.lobes[lane].alive && !(w.lobes[lane].integral < view.integral_threshold);
            const unsigned todo = __ballot_sync(full, climbs);
            unsigned at = 0;
            if (lane == 0) {
                rec->nl = nl, rec->scale = scale, rec->iso = iso;
                at = atomicAdd(&split.counts[0], (unsigned)__popc(todo));
                split.finish[atomicAdd(&split.counts[1], 1u)] = (unsigned)v;
            }
            at = __shfl_sync(full, at, 0);
            if (climbs) split.lobes[at + __popc(todo & fx_lanes_below(lane))] = (unsigned)(v * TK_FX_WARP_LOBES + lane);
            FX_PHASE(5);
            return;
        } else {
            /* the lobes' peak revision, one lobe a lane, and their output slots in lobe order */
            for (int base = 0; base < nl; base += 32) {
                const int l = base + lane;
                bool pass = false;
                if (l < nl) {
                    tk_fixels_lobe *lobe = &w.lobes[l];
                    if (lobe->alive && !(lobe->integral < view.integral_threshold)) {
                        fx_revise_lobe(&sview, shd, &w, l, aniso, tensor, rows, scale, iso);
                        pass = !(lobe->max_peak < view.peak_value_threshold);
                    }
                }
                kept = fx_warp_keep(view, &w, l, nl, pass, kept, v, io, lane);
            }
            __syncwarp();
            FX_PHASE(5);
        }
    }
    fx_warp_masks(view, &w, label, any_lobe, kept, v, io, lane);
    FX_PHASE(6);
}

#ifndef TK_FX_WARP_DEVICE_ONLY /* the slim kernel's units (fixels_slim.cuh) take the device text only */
/* The fused kernel: one voxel a warp, blockDim.x = 32 vpb, vpb * layout.bytes of dynamic shared
 * memory, the block's voxels sampled together (fx_sample_pass), so that a block's shared memory is
 * held until its slowest voxel is done.  The pull kernel below replaces it by default; it stays
 * for the A/B runs (TK_FIXELS_CUDA_FUSED=1, tk_fixels_plan_set_fused) and is tested bit for bit
 * like it. */
__global__ void __maxnreg__(TK_FX_WARP_REGISTERS)
    fixels_warp_kernel(tk_fixels_view view, int vpb, size_t num_voxels, fx_warp_io io)
{
    extern __shared__ __align__(16) unsigned char fx_smem[];
    __shared__ tk_fixels_view sview;
    __shared__ int live[TK_FX_WARP_VOXELS_MAX];
    const int warp = (int)(threadIdx.x >> 5), lane = (int)(threadIdx.x & 31);
    const fx_warp_layout lay = fx_warp_layout_for(view.n, view.k);
    unsigned char *mine = fx_smem + (size_t)warp * lay.bytes;
    const size_t v = (size_t)blockIdx.x * (size_t)vpb + (size_t)warp;
    FX_PHASE_START;
    if (threadIdx.x == 0) sview = view;
    /* the outputs' defaults, then the coefficients of a voxel to segment */
    const int state = v < num_voxels ? fx_warp_start(view, v, io, (double *)(mine + lay.sh), lane) : 0;
    __syncwarp();
    if (lane == 0) live[warp] = state;
    __syncthreads();

    /* the samples of every live voxel of the block: each basis value read once for them all */
    unsigned lives = 0;
    for (int j = 0; j < vpb; ++j) lives |= (unsigned)(live[j] != 0) << j;
    if (lives) switch (vpb) {
        case 1: fx_sample_pass<1>(view, lay, lives); break;
        case 2: fx_sample_pass<2>(view, lay, lives); break;
        case 3: fx_sample_pass<3>(view, lay, lives); break;
        case 4: fx_sample_pass<4>(view, lay, lives); break;
        case 5: fx_sample_pass<5>(view, lay, lives); break;
        case 6: fx_sample_pass<6>(view, lay, lives); break;
        case 7: fx_sample_pass<7>(view, lay, lives); break;
        default: fx_sample_pass<TK_FX_WARP_VOXELS_MAX>(view, lay, lives); break;
        }
    __syncthreads();
    FX_PHASE(0);
    if (state) fx_warp_segment<false>(view, sview, lay, mine, (const double *)(mine + lay.values), v, io, lane);
}

/* The pull kernel (the default): its voxels' samples made before it (fixels_samples.cuh), each
 * warp takes the chunk's next voxel from the counter *next until none is left, copies its samples
 * into its shared memory and segments it; no warp waits for another, so a slow voxel holds only
 * its own warp (the fused kernel's block waits for its slowest).  A grid of as many blocks as fit
 * the GPU at once, blockDim.x = 32 vpb, vpb * layout.bytes of dynamic shared memory. */
__global__ void __maxnreg__(TK_FX_WARP_REGISTERS)
    fixels_warp_pull_kernel(tk_fixels_view view, size_t num_voxels, const double *samples, fx_warp_io io,
                            unsigned *next)
{
    extern __shared__ __align__(16) unsigned char fx_smem[];
    __shared__ tk_fixels_view sview;
    const int warp = (int)(threadIdx.x >> 5), lane = (int)(threadIdx.x & 31);
    const int n = view.n;
    const fx_warp_layout lay = fx_warp_layout_for(n, view.k);
    unsigned char *mine = fx_smem + (size_t)warp * lay.bytes;
    double2 *to = (double2 *)(mine + lay.values);
    const size_t stride = fx_samples_stride(n);
    const int pairs = (int)(stride / 2);
    if (threadIdx.x == 0) sview = view;
    __syncthreads();
    for (;;) {
        const size_t v = fx_warp_next_voxel(next, lane);
        if (v >= num_voxels) break;
        FX_PHASE_START;
        if (fx_warp_start(view, v, io, NULL, lane)) {
            /* the samples, 16 bytes a lane a copy, all the row's copies in flight at once (global to
             * shared without registers; the row's padding double lands in the values' own padding,
             * fx_warp_layout_for) */
            const double2 *from = (const double2 *)(samples + v * stride);
            for (int i = lane; i < pairs; i += 32) __pipeline_memcpy_async(&to[i], &from[i], sizeof(double2));
            __pipeline_commit();
            __pipeline_wait_prior(0);
            __syncwarp();
            FX_PHASE(0);
            fx_warp_segment<true>(view, sview, lay, mine, (const double *)to, v, io, lane);
        }
        __syncwarp();
    }
}

#endif /* TK_FX_WARP_DEVICE_ONLY */

#endif
