/* The GPU's eigenvalues-only double-shift QR: the iteration of eig_body.h's
 * eig_hqr with wantt off (same shifts, deflation tests and exceptional shifts),
 * reorganised for the lanes of a warp that share one matrix in shared memory:
 *
 * - the bulge always starts at the top of the active window.  LAPACK first looks
 *   for two consecutive small subdiagonals to start lower; on the seed's random
 *   matrices that search ran through nearly the whole window every iteration (891
 *   search steps against 948 chase steps per 30 x 30 matrix, divisions in each)
 *   and almost never found a lower start.  Starting at the top is always valid.
 * - the deflation scan tests G subdiagonals at once, one per lane, and a ballot
 *   picks the lowest negligible one (the serial scan is what every lane redid);
 * - the reflector comes from rsqrt(v0^2 + |v'|^2) and one division where the
 *   squares cannot over- or underflow (the matrix is prescaled to max |a| in
 *   [0.5, 1)), from hypot otherwise;
 * - two barriers per bulge position instead of three: the bulge column's new
 *   entries are written in the column phase, which no other lane reads.
 * The values differ from eig_hqr's by rounding only (the tests hold both to
 * LAPACK's dgeev). */
#ifndef TK_EIG_CUDA_HQR_CUH
#define TK_EIG_CUDA_HQR_CUH

template <typename R> struct EigLimits;
template <> struct EigLimits<double> {
    static __device__ __forceinline__ double eps() { return 0x1p-52; }
    static __device__ __forceinline__ double safmin() { return 0x1p-1022; }
    /* v0^2 + |v'|^2 stays normal and finite between these */
    static __device__ __forceinline__ double sq_lo() { return 0x1p-900; }
    static __device__ __forceinline__ double sq_hi() { return 0x1p+900; }
};
template <> struct EigLimits<float> {
    static __device__ __forceinline__ float eps() { return 0x1p-23f; }
    static __device__ __forceinline__ float safmin() { return 0x1p-126f; }
    static __device__ __forceinline__ float sq_lo() { return 0x1p-100f; }
    static __device__ __forceinline__ float sq_hi() { return 0x1p+100f; }
};

/* Does eigenvalue q (qr + i qi) come before eigenvalue s (sr + i si) in the output:
 * by real part, then imaginary part, then position (eig_sort's stable order)?  The
 * GPU kernels rank each eigenvalue by counting those before it. */
template <typename R> __device__ __forceinline__ bool eig_sorts_before(R qr, R qi, int q, R sr, R si, int s)
{
    return qr < sr || (qr == sr && (qi < si || (qi == si && q < s)));
}

/* One group of `stride` <= 32 lanes of a warp; shared-memory offsets fit an int. */
template <typename R, typename Ctx> struct EigGroup {
    Ctx *c;
    R *h;
    int ld, es, lane, g;
    unsigned mask, shift, bits;
    __device__ R &at(int i, int j) const { return h[(i * ld + j) * es]; }
    __device__ void sync() const
    {
        if (g > 1) __syncwarp(mask);
    }
    /* The group's lanes whose flag is set, as bits 0..g-1 (lane order). */
    __device__ unsigned vote(int flag) const
    {
        if (g == 1) return (unsigned)(flag != 0);
        return (__ballot_sync(mask, flag) >> shift) & bits;
    }
};

/* Is H(k, k-1) negligible (LAPACK's test with Ahues and Tisseur's refinement)? */
template <typename R, typename G>
__device__ __forceinline__ int eig_gpu_negligible(const G &g, int k, int ilo, int ihi, R smlnum)
{
    const R ulp = EigLimits<R>::eps();
    const R sub = fabs(g.at(k, k - 1));
    if (sub <= smlnum) return 1;
    const R hkk = g.at(k, k), hk1 = g.at(k - 1, k - 1);
    R tst = fabs(hk1) + fabs(hkk);
    if (tst == 0) {
        if (k - 2 >= ilo) tst += fabs(g.at(k - 1, k - 2));
        if (k + 1 <= ihi) tst += fabs(g.at(k + 1, k));
    }
    if (sub > ulp * tst) return 0;
    const R up = fabs(g.at(k - 1, k));
    const R ab = fmax(sub, up), ba = fmin(sub, up);
    const R dk = fabs(hkk), dd = fabs(hk1 - hkk);
    const R aa = fmax(dk, dd), bb = fmin(dk, dd), s = aa + ab;
    return ba * (ab / s) <= fmax(smlnum, ulp * (bb * (aa / s)));
}

/* Returns 0 on success, 1 when an eigenvalue did not converge within max_iter;
 * the eigenvalues land in c->wr, c->wi (unsorted) as eig_hqr leaves them. */
template <typename R, typename Ctx> __device__ int eig_gpu_hqr_values(Ctx *c, int ilo, int ihi, int max_iter)
{
    EigGroup<R, Ctx> g;
    g.c = c, g.h = c->h, g.ld = c->ld, g.es = c->es, g.lane = c->lane, g.g = c->stride, g.mask = c->mask;
    g.shift = (threadIdx.x & 31u) / (unsigned)g.g * (unsigned)g.g;
    g.bits = g.g >= 32 ? 0xffffffffu : ((1u << g.g) - 1u);
    const int n = c->n, es = c->es;
    R *wr = c->wr, *wi = c->wi;
    const R ulp = EigLimits<R>::eps();
    const R smlnum = EigLimits<R>::safmin() * ((R)(ihi - ilo + 1) / ulp);
    if (g.lane == 0) {
        for (int i = 0; i < ilo; ++i) wr[i * es] = g.at(i, i), wi[i * es] = 0;
        for (int i = ihi + 1; i < n; ++i) wr[i * es] = g.at(i, i), wi[i * es] = 0;
    }
    if (ilo == ihi) {
        if (g.lane == 0) wr[ilo * es] = g.at(ilo, ilo), wi[ilo * es] = 0;
        g.sync();
        return 0;
    }
    int kdefl = 0, i = ihi;
    const int row = g.ld * es;
    while (i >= ilo) {
        int l = ilo, done = 0;
        for (int its = 0; its <= max_iter; ++its) {
            /* the lowest negligible subdiagonal in (l, i], g at a time from the bottom */
            int k = l;
            for (int base = i; base > l; base -= g.g) {
                const int kk = base - g.lane;
                const unsigned hit = g.vote(kk > l && eig_gpu_negligible<R>(g, kk, ilo, ihi, smlnum));
                if (hit) {
                    k = base - (__ffs(hit) - 1);
                    break;
                }
            }
            l = k;
            if (l > ilo) {
                g.sync();
                if (g.lane == 0) g.at(l, l - 1) = 0;
                g.sync();
            }
            if (l >= i - 1) {
                done = 1;
                break;
            }
            ++kdefl;

            R h11, h12, h21, h22;
            if (kdefl % 20 == 0) {
                const R s = fabs(g.at(i, i - 1)) + fabs(g.at(i - 1, i - 2));
                h11 = (R)0.75 * s + g.at(i, i), h12 = (R)-0.4375 * s, h21 = s, h22 = h11;
            } else if (kdefl % 10 == 0) {
                const R s = fabs(g.at(l + 1, l)) + fabs(g.at(l + 2, l + 1));
                h11 = (R)0.75 * s + g.at(l, l), h12 = (R)-0.4375 * s, h21 = s, h22 = h11;
            } else {
                h11 = g.at(i - 1, i - 1), h21 = g.at(i, i - 1), h12 = g.at(i - 1, i), h22 = g.at(i, i);
            }
            /* the first column of (H - s1)(H - s2), at the top of the window */
            R rt[4], v[3];
            Eig<R>::double_shift(h11, h12, h21, h22, rt);
            Eig<R>::shift_column(rt, g.at(l, l), g.at(l + 1, l), g.at(l, l + 1), g.at(l + 1, l + 1), g.at(l + 2, l + 1), v);
            R v0 = v[0], v1 = v[1], v2 = v[2];

            for (int k2 = l; k2 <= i - 1; ++k2) {
                const int three = i - k2 >= 2;
                R *r0 = g.h + k2 * row, *r1 = r0 + row, *r2 = r1 + row;
                if (k2 > l) {
                    v0 = r0[(k2 - 1) * es];
                    v1 = r1[(k2 - 1) * es];
                    v2 = three ? r2[(k2 - 1) * es] : 0;
                }
                const R xn2 = v1 * v1 + v2 * v2;
                R t1 = 0, beta = v0;
                if (xn2 != 0) {
                    /* beta = -sign(v0) |v|, t1 = (beta - v0) / beta = 1 + |v0| / |v|, and the
                     * scale 1 / (v0 - beta) = sign(v0) / (|v0| + |v|): one reciprocal
                     * square root and one division */
                    const R all = v0 * v0 + xn2;
                    R nrm, rnrm;
                    if (all > EigLimits<R>::sq_lo() && all < EigLimits<R>::sq_hi()) {
                        rnrm = rsqrt(all);
                        nrm = all * rnrm;
                    } else {
                        nrm = hypot(v0, sqrt(xn2));
                        rnrm = 1 / nrm;
                    }
                    const R a0 = fabs(v0);
                    beta = v0 >= 0 ? -nrm : nrm;
                    t1 = 1 + a0 * rnrm;
                    const R sc = (v0 >= 0 ? (R)1 : (R)-1) / (a0 + nrm);
                    v1 *= sc, v2 *= sc;
                }
                if (t1 == 0) {
                    /* nothing to annihilate (v1, v2 zero or below squaring range) */
                    g.sync();
                    if (g.lane == 0 && k2 > l) {
                        r1[(k2 - 1) * es] = 0;
                        if (three) r2[(k2 - 1) * es] = 0;
                    }
                    g.sync();
                    continue;
                }
                const R t2 = t1 * v1, t3 = t1 * v2;
                /* rows k2..k2+2 from the left, columns k2..i */
                if (three) {
                    for (int j = k2 + g.lane; j <= i; j += g.g) {
                        const int o = j * es;
                        const R sum = r0[o] + v1 * r1[o] + v2 * r2[o];
                        r0[o] -= sum * t1, r1[o] -= sum * t2, r2[o] -= sum * t3;
                    }
                } else {
                    for (int j = k2 + g.lane; j <= i; j += g.g) {
                        const int o = j * es;
                        const R sum = r0[o] + v1 * r1[o];
                        r0[o] -= sum * t1, r1[o] -= sum * t2;
                    }
                }
                g.sync();
                /* columns k2..k2+2 from the right, rows l..min(k2+3, i); and the
                 * bulge column k2-1, which only lane 0 touches in this phase */
                if (g.lane == 0 && k2 > l) {
                    r0[(k2 - 1) * es] = beta;
                    r1[(k2 - 1) * es] = 0;
                    if (three) r2[(k2 - 1) * es] = 0;
                }
                const int rmax = k2 + 3 < i ? k2 + 3 : i;
                R *col = g.h + k2 * es;
                if (three) {
                    for (int j = l + g.lane; j <= rmax; j += g.g) {
                        R *p = col + j * row;
                        const R sum = p[0] + v1 * p[es] + v2 * p[2 * es];
                        p[0] -= sum * t1, p[es] -= sum * t2, p[2 * es] -= sum * t3;
                    }
                } else {
                    for (int j = l + g.lane; j <= rmax; j += g.g) {
                        R *p = col + j * row;
                        const R sum = p[0] + v1 * p[es];
                        p[0] -= sum * t1, p[es] -= sum * t2;
                    }
                }
                g.sync();
            }
        }
        if (!done) return 1;
        if (l == i) {
            if (g.lane == 0) wr[i * es] = g.at(i, i), wi[i * es] = 0;
        } else {
            R a = g.at(i - 1, i - 1), b = g.at(i - 1, i), cc = g.at(i, i - 1), d = g.at(i, i);
            R r1r, r1i, r2r, r2i, cs, sn;
            Eig<R>::lanv2(&a, &b, &cc, &d, &r1r, &r1i, &r2r, &r2i, &cs, &sn);
            g.sync();
            if (g.lane == 0) {
                wr[(i - 1) * es] = r1r, wi[(i - 1) * es] = r1i;
                wr[i * es] = r2r, wi[i * es] = r2i;
            }
        }
        g.sync();
        kdefl = 0;
        i = l - 1;
    }
    return 0;
}

#endif
