/* Internal: A x^(m-2) of a packed symmetric tensor in dimension 3, host and device, for the
 * trackers' peak search (one text: the CPU and the CUDA tracker compile the same arithmetic).
 *
 * Up to order TK_TRACK_ROWS_MAX_ORDER the climb uses the monomial form: once per step the
 * packed tensor is turned into rows, one per monomial x0^a x1^b x2^c of degree m - 2, each
 * holding that monomial's coefficient in the six distinct entries of A x^(m-2); every Newton
 * iteration then costs the monomials and 6 multiply-adds each (28 monomials at lmax 8), where
 * the index walk of common/sym_tensor_hd.h recomputes each class's multiplicity and its x
 * product per entry per iteration (the fiber core's vt_hessian_rows, fibers_peaks.c, is the
 * same idea on the host with its generated tables; those are host-only).  The sums run in
 * another order than the walk's, so results differ from tk_sym_axm2_d's by rounding.  Above
 * that order (lmax 10 to 16, rare for tracking) the walk itself runs, bit for bit
 * tk_sym_axm2_d's: its table would grow to 120 rows on the device's per-thread stack. */
#ifndef TK_TRACKING_TENSOR_H
#define TK_TRACKING_TENSOR_H

#include "common/sym_tensor_hd.h"
#include "tk_fibers.h"
#include "tracking_internal.h" /* TK_TRACK_ROWS_MAX_ORDER */

/* y (3 x 3, row-major) = A x^(order-2), A packed (tk_sym_num_unique(order, 3) entries);
 * order from 2 to TK_SH_MAX_LMAX: the reference walk. */
TK_HD static inline void tk_tracking_axm2_3(int order, const double *packed, const double *x, double *y)
{
    int index[TK_SH_MAX_LMAX], count[3];
    for (int e = 0; e < 9; ++e) y[e] = 0.0;
    if (order < 2 || order > TK_SH_MAX_LMAX) return;
    tk_sym_hd_axm2(order, 3, packed, x, y, index, count);
}

/* Row of monomial x0^a x1^b x2^(d-a-b) of degree d: a descending, then b descending. */
TK_HD static inline int tk_tracking_monomial_row(int d, int a, int b)
{
    return (d - a) * (d - a + 1) / 2 + (d - a - b);
}

/* The monomial form's recipe for order 2..TK_TRACK_ROWS_MAX_ORDER, once per plan: rows[r][e]
 * (e over 00, 01, 02, 11, 12, 22) = A[src[r][e]] * weight[r][e], or 0 where src is -1.  Each
 * unique entry of index class (k0, k1, k2) gives to entry (i, j) of A x^(m-2), through the
 * monomial of class - {i, j}, A_class times the weight the walk of common/sym_tensor_hd.h
 * gives it, mult k_i (k_j - [i == j]) / (m (m - 1)); a (monomial, entry) pair comes from
 * exactly one class (monomial + i + j), so a row entry is one product, no sum. */
TK_HD static inline void tk_tracking_rows_recipe(int order, int (*src)[6], double (*weight)[6])
{
    const int d = order - 2, nrows = (d + 1) * (d + 2) / 2;
    for (int r = 0; r < nrows; ++r)
        for (int e = 0; e < 6; ++e) src[r][e] = -1, weight[r][e] = 0.0;
    const double denom = (double)order * (order - 1);
    unsigned char count[(TK_TRACK_ROWS_MAX_ORDER + 1) * (TK_TRACK_ROWS_MAX_ORDER + 2) / 2][3];
    double mult[(TK_TRACK_ROWS_MAX_ORDER + 1) * (TK_TRACK_ROWS_MAX_ORDER + 2) / 2];
    const int classes = tk_sym_hd_classes3(order, count, mult);
    for (int k = 0; k < classes; ++k) {
        int e = 0;
        for (int i = 0; i < 3; ++i)
            for (int j = i; j < 3; ++j, ++e) {
                if (!count[k][i] || !count[k][j] || (i == j && count[k][i] < 2)) continue;
                int rest[3] = {count[k][0], count[k][1], count[k][2]};
                --rest[i], --rest[j];
                const int r = tk_tracking_monomial_row(d, rest[0], rest[1]);
                src[r][e] = k;
                weight[r][e] = mult[k] * count[k][i] * (count[k][j] - (i == j)) / denom;
            }
    }
}

/* The rows of the packed A (order 2..TK_TRACK_ROWS_MAX_ORDER) by the recipe, once per step. */
TK_HD static inline void tk_tracking_rows_build(int order, const int (*src)[6], const double (*weight)[6],
                                                const double *packed, double (*rows)[6])
{
    const int d = order - 2, nrows = (d + 1) * (d + 2) / 2;
    for (int r = 0; r < nrows; ++r)
        for (int e = 0; e < 6; ++e) rows[r][e] = src[r][e] < 0 ? 0.0 : packed[src[r][e]] * weight[r][e];
}

/* The lanes of a CUDA warp. */
#define TK_TRACK_LANES 32

/* out (k) = map (k x k, column-major) times v over the columns from `first`: each entry summed
 * column by column from 0.0, the order of the column-by-column loop it replaces on the host
 * (tracking_peak.h's tensor), so the values are the same to the bit.  Rows in blocks of eight
 * held in registers across all the columns, where the plain loop loaded and stored the k
 * partial sums at every column (the CPU step's largest single cost in perf; SD_STREAM 5-8%
 * faster).  Host only: the device keeps its loop. */
#ifndef __CUDA_ARCH__
/* Four doubles of GCC's vector extension, loadable from any double's address. */
typedef double tk_tracking_v4u __attribute__((vector_size(32), aligned(8)));

#ifdef TK_TRACK_HOST_V4
/* lmax 8 (k = 45): all 45 sums in one pass over the columns, rows 0-43 as eleven four-lane
 * vectors and row 44 as a scalar, each row's products and additions those of the scalar loop in
 * its order (0.0, then column `first` to 44), so the values are the same to the bit.  The
 * blocks of eight below had two chains of dependent additions a column (three cycles each on
 * the EPYC: the product's time was their latency, 15% of SD_STREAM's run in perf); twelve
 * independent chains keep the vector adders busy instead, and the map is read once a step. */
static inline void tk_tracking_map_times_45(const double *map, int first, const double *v, double *out)
{
    enum { K = 45, NV = 11 };
    tk_tracking_v4u acc[NV];
    for (int i = 0; i < NV; ++i) acc[i] = (tk_tracking_v4u){0.0, 0.0, 0.0, 0.0};
    double last = 0.0;
    for (int c = first; c < K; ++c) {
        const double a = v[c], *col = map + (size_t)c * K;
        for (int i = 0; i < NV; ++i) acc[i] += *(const tk_tracking_v4u *)(col + 4 * i) * a;
        last += col[K - 1] * a;
    }
    for (int i = 0; i < NV; ++i)
        for (int j = 0; j < 4; ++j) out[4 * i + j] = acc[i][j];
    out[K - 1] = last;
}
/* One class of tk_tracking_map_classes: its NV vectors of sums over its columns from `first`,
 * then each slot's sum into its row of out. */
static inline __attribute__((always_inline)) void tk_tracking_map_class_sum(const tk_tracking_map_classes *m, int g,
                                                                           int NV, int first, const double *v,
                                                                           double *out)
{
    tk_tracking_v4u acc[TK_TRACK_MAP_CLASS_VECTORS];
    for (int i = 0; i < NV; ++i) acc[i] = (tk_tracking_v4u){0.0, 0.0, 0.0, 0.0};
    for (int j = 0; j < m->ncols[g]; ++j) {
        const int c = m->cols[g][j];
        if (c < first) continue;
        const double a = v[c], *col = m->col[c];
        for (int i = 0; i < NV; ++i) acc[i] += *(const tk_tracking_v4u *)(col + 4 * i) * a;
    }
    for (int i = 0; i < NV; ++i)
        for (int l = 0; l < 4; ++l) {
            const int r = m->slot_row[g][4 * i + l];
            if (r >= 0) out[r] = acc[i][l];
        }
}

/* tk_tracking_map_times at lmax 8 on the map's classes: each row's products are those of the
 * dense product's in its column order less the ones whose map entry is exactly 0.0, and
 * leaving those out changes no sum: from +0.0, adding a product 0 x v (+0 or -0; v finite, the
 * volume checked) leaves a nonzero sum as it is and +0.0 at +0.0, and no sum can reach -0.0
 * (x + (-x) is +0.0 in round-to-nearest).  So the same doubles to the bit as the dense loops
 * (TheAvx2BuildGivesTheBaselineBuildsPoints: the baseline build runs the dense scalar loop),
 * for about a third of their vector operations: the classes' 3-4 vectors a column against 12. */
static inline void tk_tracking_map_times_classes(const tk_tracking_map_classes *m, int first, const double *v,
                                                 double *out)
{
    /* constant vector counts (3 or 4: tk_tracking_map_classes_make), so that the sums stay in
     * registers */
    for (int g = 0; g < TK_TRACK_MAP_CLASSES; ++g) {
        if (m->nvec[g] == 4)
            tk_tracking_map_class_sum(m, g, 4, first, v, out);
        else
            tk_tracking_map_class_sum(m, g, 3, first, v, out);
    }
}
#endif

static inline void tk_tracking_map_times(const double *map, int k, int first, const double *v, double *out)
{
#ifdef TK_TRACK_HOST_V4
    if (k == 45) {
        tk_tracking_map_times_45(map, first, v, out);
        return;
    }
#endif
    int r0 = 0;
    /* the eight sums as two explicit four-lane vectors, each lane's products and additions
     * those of the scalar loop (GCC's own vectorisation of the scalar loop, at a k it does not
     * know, shuffled columns pairwise and was the iFOD1 step's largest block of
     * instructions) */
#ifdef TK_TRACK_HOST_V4
    for (; r0 + 8 <= k; r0 += 8) {
        tk_tracking_v4u acc0 = {0.0, 0.0, 0.0, 0.0}, acc1 = acc0;
        for (int c = first; c < k; ++c) {
            const double a = v[c], *col = map + (size_t)c * k + r0;
            acc0 += *(const tk_tracking_v4u *)col * a;
            acc1 += *(const tk_tracking_v4u *)(col + 4) * a;
        }
        for (int i = 0; i < 4; ++i) out[r0 + i] = acc0[i], out[r0 + 4 + i] = acc1[i];
    }
    for (; r0 + 4 <= k; r0 += 4) {
        tk_tracking_v4u acc = {0.0, 0.0, 0.0, 0.0};
        for (int c = first; c < k; ++c) acc += *(const tk_tracking_v4u *)(map + (size_t)c * k + r0) * v[c];
        for (int i = 0; i < 4; ++i) out[r0 + i] = acc[i];
    }
#else
    /* the scalar loops (session 17's), which GCC vectorises well enough for SSE2 */
    for (; r0 + 8 <= k; r0 += 8) {
        double acc[8] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
        for (int c = first; c < k; ++c) {
            const double a = v[c], *col = map + (size_t)c * k + r0;
            for (int i = 0; i < 8; ++i) acc[i] += col[i] * a;
        }
        for (int i = 0; i < 8; ++i) out[r0 + i] = acc[i];
    }
#endif
    for (; r0 < k; ++r0) {
        double acc = 0.0;
        for (int c = first; c < k; ++c) acc += map[(size_t)c * k + r0] * v[c];
        out[r0] = acc;
    }
}

/* The host's SH-to-tensor product for the plan, columns from `first`: on the map's classes
 * where the plan has them (the AVX2 build), else the dense loops; the same sums either way. */
static inline void tk_tracking_plan_map_times(const tk_tracking_plan *plan, int first, const double *v, double *out)
{
#ifdef TK_TRACK_HOST_V4
    if (plan->map_classes) {
        tk_tracking_map_times_classes(plan->map_classes, first, v, out);
        return;
    }
#endif
    tk_tracking_map_times(plan->map, plan->k, first, v, out);
}
#endif

/* SD_STREAM's lanes a seed on the GPU (the plan's sd_lanes, 8, 16 or 32): the monomial form's
 * sums run in the order those lanes add them, on the host too.  The CUDA tracker's group
 * kernel (tracking_group.cuh) gives each seed this many lanes of a warp, lane l holding rows
 * l, l + lanes, l + 2 lanes, ...; 32 is one seed a warp (tracking_warp.cuh, the earlier
 * kernel, a row a lane).  Eight lanes a seed: the butterfly is three levels, not five, and a
 * warp grows four streamlines at once (Documentation/tracking.md, "Several seeds a warp").
 * The environment variable TK_TRACK_SD_LANES picks another at plan create (for A/B runs);
 * CPU and GPU follow the plan's value alike. */
#define TK_TRACK_SD_LANES_DEFAULT 8

/* The monomial of row (a, b) of degree d at x: its powers by repeated products from 1, then
 * x0^a x1^b times x2^(d-a-b), as the GPU's lanes form it. */
TK_HD static inline double tk_tracking_row_monomial(int d, int a, int b, const double *p0, const double *p1,
                                                   const double *p2)
{
    return p0[a] * p1[b] * p2[d - a - b];
}

/* h (3 x 3, row-major) = A x^(d+2) from the rows of tk_tracking_rows_build: the monomials
 * from tables of powers, each times its row, summed in the GPU's order for `lanes` lanes a
 * seed: lane l's rows l, l + lanes, ... one after another from the first (0.0 for a lane
 * with none), then the lanes' xor butterfly (offsets lanes / 2, ..., 2, 1): at each level
 * slot i takes slot i + off, which is what lane i gets from lane i ^ off (addition commutes
 * exactly, so every lane ends with slot 0's value).  Inlined with d and lanes constants (the
 * callers' switch) so that the loops unroll. */
TK_HD static inline TK_ALWAYS_INLINE void tk_tracking_rows_axm2_d(int d, int lanes, const double (*rows)[6], const double *x,
                                                 double *h)
{
    double p0[TK_TRACK_ROWS_MAX_ORDER - 1], p1[TK_TRACK_ROWS_MAX_ORDER - 1], p2[TK_TRACK_ROWS_MAX_ORDER - 1];
    p0[0] = p1[0] = p2[0] = 1.0;
    for (int e = 1; e <= d; ++e) p0[e] = p0[e - 1] * x[0], p1[e] = p1[e - 1] * x[1], p2[e] = p2[e - 1] * x[2];
    double mono[TK_TRACK_ROWS_MAX], acc[TK_TRACK_LANES][6], s[6];
    const int nrows = (d + 1) * (d + 2) / 2;
    int r = 0;
    for (int a = d; a >= 0; --a)
        for (int b = d - a; b >= 0; --b, ++r) mono[r] = tk_tracking_row_monomial(d, a, b, p0, p1, p2);
    /* each lane's sums, the six entries side by side (the host's vector units take them
     * together; each entry's sums in the lane's order);
     * nrows <= TK_TRACK_ROWS_MAX, said again for the compiler's range checks */
    for (int l = 0; l < lanes; ++l) {
        if (l < nrows && l < TK_TRACK_ROWS_MAX)
            for (int e = 0; e < 6; ++e) acc[l][e] = rows[l][e] * mono[l];
        else
            for (int e = 0; e < 6; ++e) acc[l][e] = 0.0;
        for (r = l + lanes; r < nrows && r < TK_TRACK_ROWS_MAX; r += lanes)
            for (int e = 0; e < 6; ++e) acc[l][e] = acc[l][e] + rows[r][e] * mono[r];
    }
    /* the lanes' butterfly, each entry's slots as the lanes add them */
    for (int off = lanes / 2; off >= 1; off /= 2)
        for (int i = 0; i < off; ++i)
            for (int e = 0; e < 6; ++e) acc[i][e] = acc[i][e] + acc[i + off][e];
    for (int e = 0; e < 6; ++e) s[e] = acc[0][e];
    h[0] = s[0], h[1] = h[3] = s[1], h[2] = h[6] = s[2];
    h[4] = s[3], h[5] = h[7] = s[4], h[8] = s[5];
}

#ifdef TK_TRACK_HOST_V4
/* Host only: tk_tracking_rows_axm2_d(6, 8, ...) (lmax 8, the default 8 lanes a seed) with each
 * lane's six entries held as a four- and a two-lane vector of GCC's vector extension: every
 * entry's products and additions are the scalar code's, in its order (the entries never mix),
 * so h is the same to the bit.  GCC's code for the generic loops kept the 8 x 6 sums on the
 * stack and was a fifth of SD_STREAM's step in perf. */
typedef double tk_rows_v4 __attribute__((vector_size(32), aligned(8)));
typedef double tk_rows_v2 __attribute__((vector_size(16), aligned(8)));

static inline TK_ALWAYS_INLINE void tk_tracking_rows_axm2_6x8_host(const double (*rows)[6], const double *x, double *h)
{
    enum { D = 6, LANES = 8, NROWS = (D + 1) * (D + 2) / 2 };
    double p0[D + 1], p1[D + 1], p2[D + 1], mono[NROWS];
    p0[0] = p1[0] = p2[0] = 1.0;
    for (int e = 1; e <= D; ++e) p0[e] = p0[e - 1] * x[0], p1[e] = p1[e - 1] * x[1], p2[e] = p2[e - 1] * x[2];
    /* every loop unrolled (session 22): GCC kept the triangular monomial loop and the lanes'
     * loops rolled, with their indices computed at run time and the powers on the stack (the
     * rows' sum was a fifth of SD_STREAM's run in perf); unrolled, every index is a constant
     * and the powers and monomials stay in registers.  The same operations in the same order. */
    int r = 0;
#pragma GCC unroll 8
    for (int a = D; a >= 0; --a)
#pragma GCC unroll 8
        for (int b = D - a; b >= 0; --b, ++r) mono[r] = tk_tracking_row_monomial(D, a, b, p0, p1, p2);
    tk_rows_v4 lo[LANES];
    tk_rows_v2 hi[LANES];
#pragma GCC unroll 8
    for (int l = 0; l < LANES; ++l) {
        lo[l] = *(const tk_rows_v4 *)rows[l] * mono[l];
        hi[l] = *(const tk_rows_v2 *)(rows[l] + 4) * mono[l];
#pragma GCC unroll 4
        for (r = l + LANES; r < NROWS; r += LANES) {
            lo[l] = lo[l] + *(const tk_rows_v4 *)rows[r] * mono[r];
            hi[l] = hi[l] + *(const tk_rows_v2 *)(rows[r] + 4) * mono[r];
        }
    }
#pragma GCC unroll 4
    for (int off = LANES / 2; off >= 1; off /= 2)
#pragma GCC unroll 4
        for (int i = 0; i < off; ++i) lo[i] = lo[i] + lo[i + off], hi[i] = hi[i] + hi[i + off];
    h[0] = lo[0][0], h[1] = h[3] = lo[0][1], h[2] = h[6] = lo[0][2];
    h[4] = lo[0][3], h[5] = h[7] = hi[0][0], h[8] = hi[0][1];
}
#endif

/* h = A x^(order-2) from the rows, order even from 2 to TK_TRACK_ROWS_MAX_ORDER, summed as
 * `lanes` (8, 16 or 32) lanes a seed sum them. */
TK_HD static inline void tk_tracking_rows_axm2(int order, int lanes, const double (*rows)[6], const double *x,
                                               double *h)
{
#ifdef TK_TRACK_HOST_V4
    if (order == 8 && lanes == 8) {
        tk_tracking_rows_axm2_6x8_host(rows, x, h);
        return;
    }
#endif
    if (order == 8) {
        if (lanes == 8) tk_tracking_rows_axm2_d(6, 8, rows, x, h);
        else if (lanes == 16) tk_tracking_rows_axm2_d(6, 16, rows, x, h);
        else tk_tracking_rows_axm2_d(6, 32, rows, x, h);
        return;
    }
    const int d = order - 2;
    if (lanes == 8) tk_tracking_rows_axm2_d(d, 8, rows, x, h);
    else if (lanes == 16) tk_tracking_rows_axm2_d(d, 16, rows, x, h);
    else tk_tracking_rows_axm2_d(d, 32, rows, x, h);
}

#endif
