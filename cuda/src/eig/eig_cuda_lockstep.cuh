/* Eigenvalues only on the GPU: G lanes per matrix (2, 4, 8, 16 or 32), every group
 * of a warp in lockstep, each lane holding at most E rows or columns of a phase.
 *
 * Why this shape.  Nsight Compute on the earlier kernels (eig_cuda_hqr.cuh, one
 * group per matrix following its own path) found them latency bound, not short of
 * arithmetic: each bulge step was a chain of about 180 dependent instructions --
 * inner loops of one or two trips with their branches, reloads the compiler could
 * not prove safe, a warp-sync of a run-time lane mask that costs a convergence
 * check -- and half the stalls were fixed-latency waits on that chain.  Here a
 * step is straight-line code: the reflector from one rsqrt and a Newton
 * reciprocal, then at most E predicated triples per lane for the rows and E for
 * the columns, the operands loaded before anything is stored, and two full-warp
 * syncs.  The groups of a warp run the same sweeps in lockstep (a group whose own
 * window does not cover a bulge position sits that step out), so every loop and
 * every collective is warp-uniform: no divergence, no masks.
 *
 * The other phases are parallel over the lanes too: the finiteness check and the
 * prescaling, LAPACK's balancing (permutation search one row or column per lane,
 * norms by shuffle reductions), the Householder reduction, the deflation scan
 * (one subdiagonal per lane, a ballot) and the final sort (each lane ranks its
 * eigenvalues).  The arithmetic is eig_body.h's (same shifts, deflation tests,
 * exceptional shifts, balancing decisions); the results differ from the CPU's by
 * rounding only.  Differences from eig_hqr: the bulge always starts at the top of
 * the active window (see eig_cuda_hqr.cuh), and the bulge's rows outside a
 * lane's window are never touched (values only). */
#ifndef TK_EIG_CUDA_LOCKSTEP_CUH
#define TK_EIG_CUDA_LOCKSTEP_CUH

#include "common/warp_reduce.cuh"

/* 1/x for x in [1, 2]: the hardware's approximation and two Newton steps (its
 * error squared twice), no special cases since x is far from zero and infinity. */
__device__ __forceinline__ double eig_rcp_1to2(double x)
{
    double r;
    asm("rcp.approx.ftz.f64 %0, %1;" : "=d"(r) : "d"(x));
    double e = fma(-x, r, 1.0);
    r = fma(r, e, r);
    e = fma(-x, r, 1.0);
    return fma(r, e, r);
}
__device__ __forceinline__ float eig_rcp_1to2(float x) { return __frcp_rn(x); }

/* 1/sqrt(x) for x well inside the normal range (the caller checks), without the
 * library's branch for the other cases: the hardware's approximation and one
 * third-order correction. */
__device__ __forceinline__ double eig_rsqrt_normal(double x)
{
    double y;
    asm("rsqrt.approx.ftz.f64 %0, %1;" : "=d"(y) : "d"(x));
    const double e = fma(-x, y * y, 1.0);
    return fma(y * e, fma(0.375, e, 0.5), y);
}
__device__ __forceinline__ float eig_rsqrt_normal(float x) { return rsqrtf(x); }

/* Reductions over a group of G lanes (XOR butterflies: every lane gets the result) and
 * over the whole warp (ints). */
template <int G, typename T> __device__ __forceinline__ T eig_group_sum(T v) { return tk_warp_allreduce<G>(v, tk_op_sum()); }
template <int G, typename T> __device__ __forceinline__ T eig_group_max(T v) { return tk_warp_allreduce<G>(v, tk_op_max()); }
__device__ __forceinline__ int eig_warp_min(int v) { return tk_warp_allreduce_int(v, tk_op_min()); }
__device__ __forceinline__ int eig_warp_max(int v) { return tk_warp_allreduce_int(v, tk_op_max()); }

/* The group's lanes whose flag is set, as bits 0..G-1. */
template <int G> __device__ __forceinline__ unsigned eig_group_ballot(bool flag, int sub)
{
    const unsigned all = __ballot_sync(TK_WARP_ALL_LANES, flag);
    return G == 32 ? all : (all >> (sub * G)) & ((1u << (G & 31)) - 1u);
}

/* The QR phase's upper Hessenberg matrix and its bulge in shared memory, row r holding
 * columns r-3..n-1 (rows 0..2 padded on the left): n(n+7)/2 reals instead of the n(n+1)
 * of the full matrix that balancing and the Householder reduction need (row-major,
 * leading dimension ld).  More matrices fit an SM, and the QR phase is bound by how
 * many do. */
template <typename R> struct EigBand {
    R *h;
    int n2; /* n + 2 */
    __device__ static int base(int r, int n2) { return r * n2 - ((r * (r - 1)) >> 1) + 3; }
    __device__ R *row(int r) const { return h + base(r, n2); }
    __device__ R &operator()(int r, int c) const { return h[base(r, n2) + c]; }
    /* An eigenvalue split off at row k is kept in that row's slots for columns k-3 and
     * k-2: once row k has split off (or lies outside ilo..ihi) no bulge step stores
     * there and no later window reads it, so the QR needs no shared memory of its own
     * for the eigenvalues, and more matrices fit an SM. */
    __device__ R &wr(int k) const { return h[base(k, n2) + k - 3]; }
    __device__ R &wi(int k) const { return h[base(k, n2) + k - 2]; }
};
__host__ __device__ inline int eig_band_reals(int n) { return n * (n + 7) / 2; }
/* Reals after a band in the QR kernel's shared memory: the bulge steps load row K + 2
 * unconditionally, and at K = n - 2 that is the row past the last, up to column n - 1. */
#define EIG_BAND_PAD 3

/* Is H(k, k-1) negligible (LAPACK's test with Ahues and Tisseur's refinement)? */
template <typename R, typename L>
__device__ __forceinline__ bool eig_ls_negligible(const L &H, int k, int ilo, int ihi, R smlnum)
{
    const R ulp = EigLimits<R>::eps();
    const R sub = fabs(H(k, k - 1));
    if (sub <= smlnum) return true;
    const R hkk = H(k, k), hk1 = H(k - 1, k - 1);
    R tst = fabs(hk1) + fabs(hkk);
    if (tst == 0) {
        if (k - 2 >= ilo) tst += fabs(H(k - 1, k - 2));
        if (k + 1 <= ihi) tst += fabs(H(k + 1, k));
    }
    if (sub > ulp * tst) return false;
    const R up = fabs(H(k - 1, k));
    const R ab = fmax(sub, up), ba = fmin(sub, up);
    const R dk = fabs(hkk), dd = fabs(hk1 - hkk);
    const R aa = fmax(dk, dd), bb = fmin(dk, dd), s = aa + ab;
    return ba * (ab / s) <= fmax(smlnum, ulp * (bb * (aa / s)));
}

/* Swap columns j and m over rows 0..ihi, then rows j and m over columns ilo..n-1
 * (the permutation step of balancing), for the groups with `act` set. */
template <typename R, int G, int E>
__device__ __forceinline__ void eig_ls_swap(R *h, int ld, int n, int t, bool act, int j, int m, int ilo, int ihi)
{
    __syncwarp(); /* the search's reads before the writes */
#pragma unroll
    for (int e = 0; e < E; ++e) {
        const int r = t + G * e;
        if (act && r <= ihi) {
            const R x = h[r * ld + j];
            h[r * ld + j] = h[r * ld + m];
            h[r * ld + m] = x;
        }
    }
    __syncwarp();
#pragma unroll
    for (int e = 0; e < E; ++e) {
        const int q = ilo + t + G * e;
        if (act && q < n) {
            const R x = h[j * ld + q];
            h[j * ld + q] = h[m * ld + q];
            h[m * ld + q] = x;
        }
    }
    __syncwarp();
}

/* LAPACK's dgebal scaling decision for row and column i, given their 2-norms (cn,
 * rn) and largest entries (ca, ra) and the scale si already applied to them: the power
 * of two f that brings them within `within` (LAPACK: 0.95) of balance, or 1 where no
 * scaling is due. */
template <typename R> __device__ __forceinline__ R eig_balance_factor(R cn, R rn, R ca, R ra, R si, R within)
{
    const R sfmin1 = EigLimits<R>::safmin() / EigLimits<R>::eps(), sfmax1 = 1 / sfmin1;
    const R sfmin2 = sfmin1 * 2, sfmax2 = 1 / sfmin2;
    if (cn == 0 || rn == 0) return 1;
    R f = 1, g = rn / 2;
    const R s = cn + rn;
    while (cn < g && fmax(f, fmax(cn, ca)) < sfmax2 && fmin(rn, fmin(g, ra)) > sfmin2)
        f *= 2, cn *= 2, ca *= 2, rn /= 2, g /= 2, ra /= 2;
    g = cn / 2;
    while (g >= rn && fmax(rn, ra) < sfmax2 && fmin(fmin(f, cn), fmin(g, ca)) > sfmin2)
        f /= 2, cn /= 2, g /= 2, ca /= 2, rn *= 2, ra *= 2;
    if (cn + rn >= within * s) return 1;
    if (f < 1 && si < 1 && f * si <= sfmin1) return 1;
    if (f > 1 && si > 1 && si >= sfmax1 / f) return 1;
    return f;
}

/* LAPACK's dgebal 'B' for the values: permutations isolating eigenvalues, then
 * power-of-two scaling until the row and column norms balance within 5%.  The
 * scale factors go to `scale` (needed only for their bounds: values need no back
 * transformation). */
template <typename R, int G, int E>
__device__ void eig_ls_balance(R *h, R *scale, int ld, int n, int t, int sub, bool act, int *ilo_out, int *ihi_out)
{
    int ilo = 0, ihi = n - 1;
    /* rows with no off-diagonal entry in columns 0..ihi go to the bottom */
    bool go = act;
    while (__any_sync(TK_WARP_ALL_LANES, go && ihi > 0)) {
        go = go && ihi > 0;
        int jz = -1;
#pragma unroll
        for (int e = E - 1; e >= 0; --e) {
            const int j = t + G * e;
            bool zero = go && j <= ihi;
            for (int c = 0; zero && c <= ihi; ++c)
                if (c != j && h[j * ld + c] != 0) zero = false;
            const unsigned bits = eig_group_ballot<G>(zero, sub);
            if (jz < 0 && bits) jz = G * e + 31 - __clz((int)bits);
        }
        go = go && jz >= 0;
        eig_ls_swap<R, G, E>(h, ld, n, t, go && jz != ihi, jz, ihi, ilo, ihi);
        if (go) --ihi;
    }
    /* columns with no off-diagonal entry in rows ilo..ihi go to the top */
    go = act;
    while (__any_sync(TK_WARP_ALL_LANES, go && ilo < ihi)) {
        go = go && ilo < ihi;
        int jz = n;
#pragma unroll
        for (int e = 0; e < E; ++e) {
            const int j = ilo + t + G * e;
            bool zero = go && j <= ihi;
            for (int r = ilo; zero && r <= ihi; ++r)
                if (r != j && h[r * ld + j] != 0) zero = false;
            const unsigned bits = eig_group_ballot<G>(zero, sub);
            if (jz == n && bits) jz = ilo + G * e + __ffs((int)bits) - 1;
        }
        go = go && jz < n;
        eig_ls_swap<R, G, E>(h, ld, n, t, go && jz != ilo, jz, ilo, ilo, ihi);
        if (go) ++ilo;
    }
    /* scaling */
#pragma unroll
    for (int e = 0; e < E; ++e)
        if (t + G * e < n) scale[t + G * e] = 1;
    __syncwarp();
    /* A first sweep that scales nothing leaves the matrix as it is and ends the
     * scaling, so when no row and column is out of balance on the matrix as it stands
     * the sweeps can be skipped: each lane checks its own i at once (no reductions
     * over the group; random dense matrices need no scaling, and the sweeps' 4n group
     * reductions were a sixth of the reduction kernel at n = 30).  The check sums in
     * another order than the sweep, so it calls a pair out of balance already at 0.96
     * (the sweep: 0.95): rounding can only send it to the exact sweeps. */
    bool due = false;
#pragma unroll
    for (int e = 0; e < E; ++e) {
        const int i = t + G * e;
        if (act && i >= ilo && i <= ihi) {
            R cn = 0, rn = 0, ca = 0, ra = 0;
            for (int k = 0; k < n; ++k) {
                const R col = h[k * ld + i], row = h[i * ld + k];
                if (k >= ilo && k <= ihi) cn = fma(col, col, cn), rn = fma(row, row, rn);
                if (k <= ihi) ca = fmax(ca, fabs(col));
                if (k >= ilo) ra = fmax(ra, fabs(row));
            }
            due = due || eig_balance_factor(sqrt(cn), sqrt(rn), ca, ra, (R)1, (R)0.96) != 1;
        }
    }
    const bool any_due = eig_group_ballot<G>(due, sub) != 0; /* every lane of the warp votes */
    bool noconv = act && ilo < ihi && any_due;
    int sweeps = 0;
    while (__any_sync(TK_WARP_ALL_LANES, noconv)) {
        const bool sweep = noconv && sweeps++ < 100;
        noconv = false;
        const int ifirst = eig_warp_min(sweep ? ilo : n);
        const int ilast = eig_warp_max(sweep ? ihi : -1);
        for (int i = ifirst; i <= ilast; ++i) {
            const bool mine = sweep && i >= ilo && i <= ihi;
            R cn = 0, rn = 0, ca = 0, ra = 0;
#pragma unroll
            for (int e = 0; e < E; ++e) {
                const int k = t + G * e;
                if (mine && k < n) {
                    const R col = h[k * ld + i], row = h[i * ld + k];
                    if (k >= ilo && k <= ihi) cn += col * col, rn += row * row;
                    if (k <= ihi) ca = fmax(ca, fabs(col));
                    if (k >= ilo) ra = fmax(ra, fabs(row));
                }
            }
            cn = sqrt(eig_group_sum<G>(cn));
            rn = sqrt(eig_group_sum<G>(rn));
            ca = eig_group_max<G>(ca);
            ra = eig_group_max<G>(ra);
            const R si = mine ? scale[i] : 1;
            const R f = mine ? eig_balance_factor(cn, rn, ca, ra, si, (R)0.95) : (R)1;
            const bool apply = f != 1;
            __syncwarp(); /* every lane has read scale[i] */
            if (apply) {
                if (t == 0) scale[i] = si * f;
                const R gi = 1 / f;
#pragma unroll
                for (int e = 0; e < E; ++e) {
                    const int k = t + G * e;
                    if (k >= ilo && k < n && k != i) h[i * ld + k] *= gi;
                    if (k <= ihi && k != i) h[k * ld + i] *= f;
                }
                noconv = true;
            }
            __syncwarp();
        }
        noconv = noconv && sweeps < 100;
    }
    *ilo_out = ilo;
    *ihi_out = ihi;
}

/* Householder reduction of rows and columns ilo..ihi to Hessenberg form (values:
 * nothing outside the block is needed).  v: n scratch reals. */
template <typename R, int G, int E>
__device__ void eig_ls_hessenberg(R *h, R *v, int ld, int t, bool act, int ilo, int ihi)
{
    const int kfirst = eig_warp_min(act ? ilo : 1 << 30);
    const int klast = eig_warp_max(act ? ihi - 2 : -1);
    for (int k = kfirst; k <= klast; ++k) {
        const bool mine = act && k >= ilo && k < ihi - 1;
        const int m = ihi - k; /* reflector length: rows k+1..ihi */
        R x2 = 0;
#pragma unroll
        for (int e = 0; e < E; ++e) {
            const int i = k + 2 + t + G * e;
            if (mine && i <= ihi) x2 += h[i * ld + k] * h[i * ld + k];
        }
        const R alpha = mine ? h[(k + 1) * ld + k] : (R)0;
        x2 = eig_group_sum<G>(x2);
        const bool live = mine && x2 != 0; /* else the column is already reduced */
        __syncwarp(); /* column k read by every lane before it is overwritten */
        R tau = 0;
        if (live) {
            const R beta = -copysign(hypot(alpha, sqrt(x2)), alpha);
            tau = (beta - alpha) / beta;
            const R sc = 1 / (alpha - beta);
#pragma unroll
            for (int e = 0; e < E; ++e) {
                const int i = t + G * e;
                if (i < m) {
                    const int r = k + 1 + i;
                    v[i] = i == 0 ? (R)1 : h[r * ld + k] * sc;
                    h[r * ld + k] = i == 0 ? beta : (R)0;
                }
            }
        }
        __syncwarp();
        /* from the left: columns k+1..ihi, one per lane */
#pragma unroll
        for (int e = 0; e < E; ++e) {
            const int j = k + 1 + t + G * e;
            if (live && j <= ihi) {
                R s = 0;
                for (int i = 0; i < m; ++i) s += v[i] * h[(k + 1 + i) * ld + j];
                s *= tau;
                for (int i = 0; i < m; ++i) h[(k + 1 + i) * ld + j] -= s * v[i];
            }
        }
        __syncwarp();
        /* from the right: rows ilo..ihi, one per lane */
#pragma unroll
        for (int e = 0; e < E; ++e) {
            const int r = ilo + t + G * e;
            if (live && r <= ihi) {
                R *row = h + r * ld + k + 1;
                R s = 0;
                for (int i = 0; i < m; ++i) s += row[i] * v[i];
                s *= tau;
                for (int i = 0; i < m; ++i) row[i] -= s * v[i];
            }
        }
        __syncwarp();
    }
}

/* Where a group's QR iteration stands: the block ilo..ihi balancing left, the active
 * window ql..qi, the iterations spent on it, and whether the cap was reached. */
template <typename R> struct EigLsQr {
    int ilo, ihi, qi, ql, its, kdefl;
    bool fail;
    R smlnum;
    __device__ bool busy() const { return !fail && qi >= ilo; }
};

/* A group's matrix starts its QR iteration (act: the group holds one): the eigenvalues
 * balancing isolated outside ilo..ihi go to H.wr, H.wi, the window is the whole block. */
template <typename R, int G, int E, typename L>
__device__ void eig_ls_qr_start(const L &H, int n, int t, bool act, int ilo, int ihi, EigLsQr<R> &s)
{
#pragma unroll
    for (int e = 0; e < E; ++e) {
        const int k = t + G * e;
        if (act && k < n && (k < ilo || k > ihi)) H.wr(k) = H(k, k), H.wi(k) = 0;
    }
    s.ilo = ilo, s.ihi = ihi, s.qi = act ? ihi : ilo - 1, s.ql = ilo, s.its = 0, s.kdefl = 0, s.fail = false;
    s.smlnum = EigLimits<R>::safmin() * ((R)(ihi - ilo + 1) / EigLimits<R>::eps());
}

/* One round of the QR iteration for every group of the warp (all lanes call it; act:
 * the group's matrix is busy): deflation, then one double-shift sweep for the groups
 * that have one due.  Eigenvalues (unsorted) go to H.wr(k), H.wi(k) as they split off. */
template <typename R, int G, int E, typename L>
__device__ void eig_ls_qr_round(const L &H, int n, int t, int sub, bool act, EigLsQr<R> &s, int max_iter)
{
    const int ilo = s.ilo, ihi = s.ihi;
    const R smlnum = s.smlnum;
    int qi = s.qi, ql = s.ql, its = s.its, kdefl = s.kdefl;
    bool fail = s.fail;
    /* ---- deflation: scan (ql, qi] from the bottom, record what split off, and go on
     * with the next window in this same round until a sweep is due */
    bool need = act && !fail && qi >= ilo, sweep = false;
    while (__any_sync(TK_WARP_ALL_LANES, need)) {
        int k = ql;
#pragma unroll
        for (int p = 0; p < E; ++p) {
            const int kk = qi - t - G * p;
            const unsigned bits =
                eig_group_ballot<G>(need && kk > ql && eig_ls_negligible<R>(H, kk, ilo, ihi, smlnum), sub);
            if (k == ql && bits) k = qi - G * p - (__ffs((int)bits) - 1);
        }
        if (need) ql = k;
        __syncwarp(); /* the scan's reads before lane 0's writes */
        if (need) {
            if (ql >= qi - 1) {
                if (t == 0) {
                    if (ql > ilo) H(ql, ql - 1) = 0;
                    if (ql == qi) {
                        H.wr(qi) = H(qi, qi), H.wi(qi) = 0;
                    } else {
                        R a = H(qi - 1, qi - 1), b = H(qi - 1, qi);
                        R cc = H(qi, qi - 1), d = H(qi, qi);
                        R r1r, r1i, r2r, r2i, cs, sn;
                        Eig<R>::lanv2(&a, &b, &cc, &d, &r1r, &r1i, &r2r, &r2i, &cs, &sn);
                        H.wr(qi - 1) = r1r, H.wi(qi - 1) = r1i;
                        H.wr(qi) = r2r, H.wi(qi) = r2i;
                    }
                }
                qi = ql - 1, ql = ilo, its = 0, kdefl = 0;
                need = qi >= ilo;
            } else if (its > max_iter) {
                fail = true, need = false;
            } else {
                ++its, ++kdefl;
                need = false, sweep = true;
            }
        }
        __syncwarp();
    }
    if (sweep && ql > ilo && t == 0) H(ql, ql - 1) = 0;

    /* ---- the shifts and the first column of (H - s1)(H - s2) at the top */
    R v0 = 0, v1 = 0, v2 = 0;
    if (sweep) {
        R h11, h12, h21, h22;
        if (kdefl % 20 == 0) {
            const R s = fabs(H(qi, qi - 1)) + fabs(H(qi - 1, qi - 2));
            h11 = (R)0.75 * s + H(qi, qi), h12 = (R)-0.4375 * s, h21 = s, h22 = h11;
        } else if (kdefl % 10 == 0) {
            const R s = fabs(H(ql + 1, ql)) + fabs(H(ql + 2, ql + 1));
            h11 = (R)0.75 * s + H(ql, ql), h12 = (R)-0.4375 * s, h21 = s, h22 = h11;
        } else {
            h11 = H(qi - 1, qi - 1), h21 = H(qi, qi - 1);
            h12 = H(qi - 1, qi), h22 = H(qi, qi);
        }
        R rt[4], v[3];
        Eig<R>::double_shift(h11, h12, h21, h22, rt);
        Eig<R>::shift_column(rt, H(ql, ql), H(ql + 1, ql), H(ql, ql + 1), H(ql + 1, ql + 1), H(ql + 2, ql + 1), v);
        v0 = v[0], v1 = v[1], v2 = v[2];
    }
    __syncwarp();

    /* ---- the bulge chase, every group of the warp at the same position K */
    const int kfirst = eig_warp_min(sweep ? ql : 1 << 30);
    const int klast = eig_warp_max(sweep ? qi - 1 : -1);
    /* Row addresses advance by the band's row lengths instead of being recomputed
     * (a multiply-add chain each): rows K..K+2 of the row phase, and this lane's
     * rows of the column phase, which stay the same through a sweep. */
    const int kf = kfirst < n ? kfirst : 0; /* no group sweeps: the loop does not run */
    R *r0 = H.row(kf), *r1 = r0 + H.n2 - kf, *r2 = r1 + H.n2 - (kf + 1);
    R *crow[E];
#pragma unroll
    for (int e = 0; e < E; ++e) crow[e] = H.row(ql + t + G * e < n ? ql + t + G * e : n);
    for (int K = kfirst; K <= klast; ++K, r0 = r1, r1 = r2, r2 += H.n2 - (K + 1)) {
        /* straight-line code: loads from addresses valid for every group (K + 2 <= n,
         * and row n's first n reals end EIG_BAND_PAD reals past the band, inside the
         * group's region), selects instead of branches */
        const bool on = sweep && K >= ql && K < qi, first = K == ql, three = K + 2 <= qi;
        const int kc = K > 0 ? K - 1 : 0;
        R x0 = r0[kc], x1 = r1[kc], x2 = r2[kc];
        if (first) x0 = v0, x1 = v1, x2 = v2;
        if (!three) x2 = 0;
        const R xn2 = x1 * x1 + x2 * x2;
        const bool live = on && xn2 != 0;
        /* beta = -sign(x0) |x|; t1 = (beta - x0) / beta = 1 + |x0| / |x|; the
         * vector's scale 1 / (x0 - beta) = sign(x0) / (|x| t1); t1 u1 = -x1 / beta */
        const R all = fma(x0, x0, xn2);
        R rnrm = eig_rsqrt_normal(all), nrm = all * rnrm;
        if (live && !(all > EigLimits<R>::sq_lo() && all < EigLimits<R>::sq_hi())) {
            nrm = hypot(x0, sqrt(xn2));
            rnrm = 1 / nrm;
        }
        const R sg = x0 >= 0 ? (R)1 : (R)-1, srn = sg * rnrm;
        const R beta = -sg * nrm;
        const R t1 = fma(fabs(x0), rnrm, (R)1);
        const R sc = srn * eig_rcp_1to2(t1);
        const R u1 = x1 * sc, u2 = x2 * sc, t2 = srn * x1, t3 = srn * x2;
        /* a group with nothing to do here (live false) computes along but stores nothing */
        /* rows K..K+2 from the left, columns K..qi.  A lane's e-th slot beyond the
         * first is needed only while some group's columns reach that far (K + G e <= qi
         * for the warp's largest qi, klast + 1); the test is warp-uniform, so the slots
         * no group needs cost a branch instead of their loads and arithmetic. */
#pragma unroll
        for (int e = 0; e < E; ++e) {
            if (e > 0 && K + G * e > klast + 1) break;
            const int j = K + t + G * e;
            const bool mine = live && j <= qi;
            const int jj = mine ? j : K;
            const R a = r0[jj], b = r1[jj], c = three ? r2[jj] : (R)0;
            const R sum = fma(u2, c, fma(u1, b, a));
            if (mine) {
                r0[jj] = fma(-sum, t1, a);
                r1[jj] = fma(-sum, t2, b);
                if (three) r2[jj] = fma(-sum, t3, c);
            }
        }
        __syncwarp();
        /* the bulge column K-1 (no lane reads it in this phase); then columns
         * K..K+2 from the right, rows ql..min(K+3, qi) */
        if (on && !first && t == 0) {
            if (live) r0[K - 1] = beta;
            r1[K - 1] = 0;
            if (three) r2[K - 1] = 0;
        }
        const int rlast = K + 3 < qi ? K + 3 : qi;
#pragma unroll
        for (int e = 0; e < E; ++e) {
            /* rows ql..rlast: the e-th slot only while some group's rows reach past
             * G e (the warp's smallest ql is kfirst), warp-uniform as above */
            if (e > 0 && kfirst + G * e > K + 3) break;
            const int r = ql + t + G * e;
            const bool mine = live && r <= rlast;
            R *p = (mine ? crow[e] : r0) + K;
            const R a = p[0], b = p[1], c = three ? p[2] : (R)0;
            const R sum = fma(u2, c, fma(u1, b, a));
            if (mine) {
                p[0] = fma(-sum, t1, a);
                p[1] = fma(-sum, t2, b);
                if (three) p[2] = fma(-sum, t3, c);
            }
        }
        __syncwarp();
    }
    s.qi = qi, s.ql = ql, s.its = its, s.kdefl = kdefl, s.fail = fail;
}

/* The matrices go through two kernels per batch: eig_ls_reduce_kernel (load,
 * finiteness, prescaling, balancing, Householder reduction on the full matrix) writes
 * each Hessenberg matrix as a band to global scratch, with its ilo, ihi, exponent and
 * status; eig_ls_qr_kernel runs the QR iteration on the band.  The QR phase is most
 * of the work and its residency is bound by shared memory, so giving it the band
 * alone (about 0.6 of the full matrix at n = 30) lets more matrices share an SM.
 *
 * One group of G lanes per matrix, 32 / G groups per warp, per_block groups per
 * block; group_reals shared reals per group (reduce: H with leading dimension ld,
 * then two scratch vectors of n; QR: the band alone). */
struct EigLsMeta {
    int ilo, ihi, expo, status; /* status 0, or 2 (TK_EIG_NONFINITE) */
};

/* Where a thread of a lockstep kernel stands: its lane t in its group of G, its
 * group's place in the warp (sub), the group's first matrix, and the group's
 * group_reals reals of the block's shared memory. */
template <typename R, int G> struct EigLsPlace {
    int lane, t, sub;
    size_t idx;
    R *h;
    bool live; /* idx is a matrix of the batch */
};
template <typename R, int G>
__device__ __forceinline__ EigLsPlace<R, G> eig_ls_place(int per_block, int group_reals, size_t count)
{
    extern __shared__ __align__(16) unsigned char smem_raw[];
    const int lane = threadIdx.x & 31, group = threadIdx.x / G;
    const size_t idx = (size_t)blockIdx.x * (size_t)per_block + (size_t)group;
    return EigLsPlace<R, G>{lane, lane % G, lane / G, idx,
                            reinterpret_cast<R *>(smem_raw) + (size_t)group * (size_t)group_reals, idx < count};
}
/* No group of the warp has a matrix: the whole warp may leave (a warp-uniform exit). */
template <typename R, int G> __device__ __forceinline__ bool eig_ls_warp_idle(const EigLsPlace<R, G> &at)
{
    return !__any_sync(TK_WARP_ALL_LANES, at.live);
}

template <typename R, int G, int E>
__global__ void eig_ls_reduce_kernel(int n, int ld, int per_block, int group_reals, size_t count,
                                     const R *__restrict__ a, R *__restrict__ band, EigLsMeta *__restrict__ meta,
                                     int balance)
{
    const EigLsPlace<R, G> at = eig_ls_place<R, G>(per_block, group_reals, count);
    const int t = at.t, sub = at.sub;
    const size_t idx = at.idx;
    const bool real = at.live;
    /* warp-uniform exit; a group past the batch's end in a live warp works along
     * on the last matrix and writes nothing */
    if (eig_ls_warp_idle(at)) return;
    R *h = at.h;
    R *w1 = h + n * ld, *w2 = w1 + n;
    const R *src = a + (real ? idx : count - 1) * (size_t)n * (size_t)n;

    /* load, check finiteness, prescale by a power of two to max |a| in [0.5, 1) */
    R amax = 0;
    bool finite = true;
    for (int r = 0; r < n; ++r)
#pragma unroll
        for (int e = 0; e < E; ++e) {
            const int c = t + G * e;
            if (c < n) {
                const R x = src[r * n + c];
                finite = finite && isfinite(x);
                amax = fmax(amax, fabs(x));
                h[r * ld + c] = x;
            }
        }
    const bool ok = eig_group_ballot<G>(!finite, sub) == 0;
    amax = eig_group_max<G>(amax);
    int expo = 0;
    if (ok && amax > 0) {
        frexp(amax, &expo);
        const R f = ldexp((R)1, -expo);
        for (int r = 0; r < n; ++r)
#pragma unroll
            for (int e = 0; e < E; ++e) {
                const int c = t + G * e;
                if (c < n) h[r * ld + c] = (expo > -100 && expo < 100) ? h[r * ld + c] * f : ldexp(h[r * ld + c], -expo);
            }
    }
    __syncwarp();
    int ilo = 0, ihi = n - 1;
    if (balance) eig_ls_balance<R, G, E>(h, w1, ld, n, t, sub, ok, &ilo, &ihi);
    __syncwarp();
    eig_ls_hessenberg<R, G, E>(h, w2, ld, t, ok, ilo, ihi);
    if (!real) return;
    /* the band, the three slots left of rows 0..2 as zeros */
    R *out = band + idx * (size_t)eig_band_reals(n);
    const int n2 = n + 2;
    for (int r = 0; r < n; ++r)
        for (int c = r - 3 + t; c < n; c += G) out[EigBand<R>::base(r, n2) + c] = c < 0 ? (R)0 : h[r * ld + c];
    if (t == 0) meta[idx] = EigLsMeta{ilo, ihi, expo, ok ? 0 : 2};
}

/* A group's next matrix: its band into shared memory, and its EigLsMeta. */
template <typename R, int G>
__device__ __forceinline__ EigLsMeta eig_ls_qr_load(R *h, int nb, int t, const R *__restrict__ band,
                                                    const EigLsMeta *__restrict__ meta, size_t idx)
{
    const R *src = band + idx * (size_t)nb;
    for (int e = t; e < nb; e += G) h[e] = src[e];
    return meta[idx];
}

/* A group's matrix is done: its eigenvalues sorted and scaled back (each lane ranks its
 * own, eig_sorts_before), or NaNs where it failed, and its status. */
template <typename R, int G, int E, typename L>
__device__ void eig_ls_qr_finish(const L &H, int n, int t, const EigLsMeta &m, bool fail, R *__restrict__ values,
                                 int8_t *__restrict__ status, size_t idx)
{
    R *out = values + idx * 2 * (size_t)n;
    const int st = m.status ? m.status : fail ? 1 : 0;
    if (st) {
        for (int e = t; e < 2 * n; e += G) out[e] = (R)NAN;
    } else {
#pragma unroll
        for (int e = 0; e < E; ++e) {
            const int s = t + G * e;
            if (s < n) {
                const R re = H.wr(s), im = H.wi(s);
                int rank = 0;
                for (int q = 0; q < n; ++q) {
                    const R qr = H.wr(q), qi = H.wi(q);
                    rank += eig_sorts_before(qr, qi, q, re, im, s);
                }
                out[2 * rank] = Eig<R>::scale2(re, m.expo);
                out[2 * rank + 1] = Eig<R>::scale2(im, m.expo);
            }
        }
    }
    if (t == 0) status[idx] = (int8_t)st;
}

/* The QR kernel where each matrix's iteration is short (n <= 16): a group per matrix,
 * a block per per_block matrices.  (`taken` is the persistent kernel's; unused here.) */
template <typename R, int G, int E>
__global__ void eig_ls_qr_kernel(int n, int per_block, int group_reals, size_t count, const R *__restrict__ band,
                                 const EigLsMeta *__restrict__ meta, R *__restrict__ values,
                                 int8_t *__restrict__ status, int max_iter, unsigned long long *__restrict__)
{
    const EigLsPlace<R, G> at = eig_ls_place<R, G>(per_block, group_reals, count);
    if (eig_ls_warp_idle(at)) return;
    const int t = at.t, sub = at.sub;
    const size_t idx = at.idx;
    const bool have = at.live;
    R *h = at.h;
    const EigBand<R> H = {h, n + 2};
    const EigLsMeta m = have ? eig_ls_qr_load<R, G>(h, eig_band_reals(n), t, band, meta, idx) : EigLsMeta{0, -1, 0, 0};
    EigLsQr<R> s;
    __syncwarp();
    eig_ls_qr_start<R, G, E>(H, n, t, have && m.status == 0, m.ilo, m.ihi, s);
    __syncwarp();
    while (__any_sync(TK_WARP_ALL_LANES, s.busy())) eig_ls_qr_round<R, G, E>(H, n, t, sub, s.busy(), s, max_iter);
    __syncwarp();
    if (have) eig_ls_qr_finish<R, G, E>(H, n, t, m, s.fail, values, status, idx);
}

/* The QR kernel where iterations are long (n > 16) is persistent: the grid is what the
 * GPU holds at once, and a warp whose matrices are all done takes the next 32 / G from
 * `taken` (zero at launch; matrices gridDim.x * per_block and on are handed out in its
 * order).  QR iterations differ from matrix to matrix (n = 30, random: 986 bulge steps
 * on average, 7% spread); with a matrix per group for the whole kernel a block kept
 * its shared memory until its slowest matrix was done, and each chunk's launch ended
 * in a tail of such blocks.  The warp, not each group, takes new matrices: the groups
 * then start together and their windows shrink alike, while a group refilled alone
 * would chase a new matrix's whole window beside a narrow one, and the warp's steps
 * cover the union of the two (an H200 at n = 30: 87.8 ms against 76.6 without
 * persistence; refilled by warps and in blocks of up to 32 warps, 75.6).  72
 * registers, as many as the kernel took before it was persistent (left alone it takes
 * 86, which would cost warps at n = 30, where shared memory allows 26 a
 * multiprocessor): what then goes to local memory is kept outside the QR's loops. */
template <typename R, int G, int E>
__global__ void __maxnreg__(72)
    eig_ls_qr_persistent_kernel(int n, int per_block, int group_reals, size_t count, const R *__restrict__ band,
                                const EigLsMeta *__restrict__ meta, R *__restrict__ values, int8_t *__restrict__ status,
                                int max_iter, unsigned long long *__restrict__ taken)
{
    const EigLsPlace<R, G> at = eig_ls_place<R, G>(per_block, group_reals, count);
    const int lane = at.lane, t = at.t, sub = at.sub;
    const size_t handed = (size_t)gridDim.x * (size_t)per_block; /* matrices the first round takes */
    size_t idx = at.idx;
    const int nb = eig_band_reals(n);
    R *h = at.h;
    const EigBand<R> H = {h, n + 2};
    EigLsMeta m = {0, -1, 0, 0};
    EigLsQr<R> s;
    bool have = false;
    for (bool first = true;; first = false) {
        const bool busy = have && m.status == 0 && s.busy();
        if (!__any_sync(TK_WARP_ALL_LANES, busy)) {
            /* every group of the warp is done: results out, the next matrices in */
            if (have) eig_ls_qr_finish<R, G, E>(H, n, t, m, s.fail, values, status, idx);
            if (!first) {
                unsigned long long k = lane == 0 ? atomicAdd(taken, (unsigned long long)(32 / G)) : 0ull;
                k = __shfl_sync(TK_WARP_ALL_LANES, k, 0);
                idx = handed + (size_t)k + (size_t)sub;
            }
            have = idx < count;
            if (!__any_sync(TK_WARP_ALL_LANES, have)) return;
            __syncwarp(); /* the finished bands read by every lane before the next overwrite them */
            if (have) m = eig_ls_qr_load<R, G>(h, nb, t, band, meta, idx);
            __syncwarp();
            eig_ls_qr_start<R, G, E>(H, n, t, have && m.status == 0, m.ilo, m.ihi, s);
            __syncwarp();
            continue;
        }
        eig_ls_qr_round<R, G, E>(H, n, t, sub, busy, s, max_iter);
    }
}

#endif
