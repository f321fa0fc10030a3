/* The per-matrix eigensolver, one text for the CPU (C11) and the GPU (CUDA).
 *
 * Included once per precision with:
 *   EIG_REAL, EIG_NAME(x)      the real type and the name suffixer
 *   EIG_EPS, EIG_SAFMIN        unit roundoff (LAPACK's ulp) and the smallest normal
 *   EIG_SQRT, EIG_FABS, EIG_LDEXP, EIG_FREXP, EIG_HYPOT, EIG_NAN
 *   EIG_LANE(c), EIG_STRIDE(c) this thread's place among the threads sharing a matrix
 *   EIG_SYNC(c)                a barrier among them (nothing on the CPU)
 *   EIG_ES(c)                  element stride of the scratch arrays (interleaved
 *                              thread-per-matrix layout on the GPU, 1 elsewhere)
 *
 * Cooperation.  Every thread of a group runs the same control flow: scalars (norms,
 * shifts, deflation tests) are computed redundantly from shared data, so all
 * threads take the same branches; loops over rows or columns are split across the
 * threads, and every split write phase is fenced by EIG_SYNC on both sides.  With
 * one thread (CPU, GPU thread-per-matrix) the barriers vanish.
 */

#define EIG_H(i, j) c->h[((i) * c->ld + (j)) * EIG_ES(c)]
#define EIG_Z(i, j) c->z[((i) * c->ld + (j)) * EIG_ES(c)]
#define EIG_A(p, i) (p)[(i) * EIG_ES(c)]
#define EIG_FOR(v, lo, hi) for (int v = (lo) + EIG_LANE(c); v <= (hi); v += EIG_STRIDE(c))
#define EIG_MAX(a, b) ((a) > (b) ? (a) : (b))
#define EIG_MIN(a, b) ((a) < (b) ? (a) : (b))
#define EIG_SIGN(a, b) ((b) >= 0 ? EIG_FABS(a) : -EIG_FABS(a))

typedef struct EIG_NAME(eig_ctx) {
    EIG_REAL *h;     /* n x n working matrix, becomes H, then T */
    EIG_REAL *z;     /* n x n orthogonal factor; NULL: values only */
    EIG_REAL *scale; /* n: balancing scale factors and permutation records */
    EIG_REAL *wr, *wi, *pos; /* n: eigenvalues and their position on T's diagonal */
    EIG_REAL *tmp;   /* 2n: Householder vectors, one eigenvector */
    int n, ld;
#ifdef __CUDACC__
    int lane, stride, es;
    unsigned mask; /* the lanes of a group within a warp */
#endif
} EIG_NAME(eig_ctx);

/* ---- balancing (LAPACK's dgebal 'B' and dgebak) --------------------------------- */

TK_HD static inline void EIG_NAME(eig_swap)(EIG_NAME(eig_ctx) * c, int j, int m, int ilo, int ihi)
{
    /* columns j and m over rows 0..ihi, then rows j and m over columns ilo..n-1 */
    EIG_SYNC(c);
    EIG_FOR(r, 0, ihi)
    {
        EIG_REAL t = EIG_H(r, j);
        EIG_H(r, j) = EIG_H(r, m);
        EIG_H(r, m) = t;
    }
    EIG_SYNC(c);
    EIG_FOR(q, ilo, c->n - 1)
    {
        EIG_REAL t = EIG_H(j, q);
        EIG_H(j, q) = EIG_H(m, q);
        EIG_H(m, q) = t;
    }
    EIG_SYNC(c);
}

TK_HD static inline void EIG_NAME(eig_balance)(EIG_NAME(eig_ctx) * c, int permute, int scale, int *ilo_out, int *ihi_out)
{
    const int n = c->n;
    int ilo = 0, ihi = n - 1;
    if (EIG_LANE(c) == 0)
        for (int i = 0; i < n; ++i) EIG_A(c->scale, i) = 1;
    if (permute) {
        /* Rows with no off-diagonal entry in the active block isolate an eigenvalue:
         * push them to the bottom. */
        int found = 1;
        while (found && ihi > 0) {
            found = 0;
            for (int j = ihi; j >= 0; --j) {
                int zero = 1;
                for (int i = 0; i <= ihi && zero; ++i)
                    if (i != j && EIG_H(j, i) != 0) zero = 0;
                if (zero) {
                    EIG_SYNC(c);
                    if (EIG_LANE(c) == 0) EIG_A(c->scale, ihi) = (EIG_REAL)j;
                    if (j != ihi) EIG_NAME(eig_swap)(c, j, ihi, ilo, ihi);
                    --ihi;
                    found = 1;
                    break;
                }
            }
        }
        /* Columns likewise, to the top. */
        found = 1;
        while (found && ilo < ihi) {
            found = 0;
            for (int j = ilo; j <= ihi; ++j) {
                int zero = 1;
                for (int i = ilo; i <= ihi && zero; ++i)
                    if (i != j && EIG_H(i, j) != 0) zero = 0;
                if (zero) {
                    EIG_SYNC(c);
                    if (EIG_LANE(c) == 0) EIG_A(c->scale, ilo) = (EIG_REAL)j;
                    if (j != ilo) EIG_NAME(eig_swap)(c, j, ilo, ilo, ihi);
                    ++ilo;
                    found = 1;
                    break;
                }
            }
        }
    }
    EIG_SYNC(c);
    if (scale && ilo < ihi) {
        /* Scale row i by 1/f and column i by f (f a power of 2: exact) until the row
         * and column norms of the active block balance within 5%. */
        const EIG_REAL sfmin1 = EIG_SAFMIN / EIG_EPS, sfmax1 = 1 / sfmin1;
        const EIG_REAL sfmin2 = sfmin1 * 2, sfmax2 = 1 / sfmin2;
        int noconv = 1, sweeps = 0;
        while (noconv && sweeps++ < 100) {
            noconv = 0;
            for (int i = ilo; i <= ihi; ++i) {
                EIG_REAL cn = 0, rn = 0, ca = 0, ra = 0;
                for (int k = ilo; k <= ihi; ++k) {
                    cn += EIG_H(k, i) * EIG_H(k, i);
                    rn += EIG_H(i, k) * EIG_H(i, k);
                }
                for (int k = 0; k <= ihi; ++k) ca = EIG_MAX(ca, EIG_FABS(EIG_H(k, i)));
                for (int k = ilo; k < n; ++k) ra = EIG_MAX(ra, EIG_FABS(EIG_H(i, k)));
                cn = EIG_SQRT(cn);
                rn = EIG_SQRT(rn);
                if (cn == 0 || rn == 0) continue;
                EIG_REAL g = rn / 2, f = 1, s = cn + rn;
                while (cn < g && EIG_MAX(f, EIG_MAX(cn, ca)) < sfmax2 && EIG_MIN(rn, EIG_MIN(g, ra)) > sfmin2) {
                    f *= 2, cn *= 2, ca *= 2, rn /= 2, g /= 2, ra /= 2;
                }
                g = cn / 2;
                while (g >= rn && EIG_MAX(rn, ra) < sfmax2 && EIG_MIN(EIG_MIN(f, cn), EIG_MIN(g, ca)) > sfmin2) {
                    f /= 2, cn /= 2, g /= 2, ca /= 2, rn *= 2, ra *= 2;
                }
                if (cn + rn >= (EIG_REAL)0.95 * s) continue;
                EIG_REAL si = EIG_A(c->scale, i);
                if (f < 1 && si < 1 && f * si <= sfmin1) continue;
                if (f > 1 && si > 1 && si >= sfmax1 / f) continue;
                EIG_SYNC(c);
                if (EIG_LANE(c) == 0) EIG_A(c->scale, i) = si * f;
                const EIG_REAL gi = 1 / f;
                EIG_FOR(k, ilo, n - 1)
                if (k != i) EIG_H(i, k) *= gi;
                EIG_FOR(k, 0, ihi)
                if (k != i) EIG_H(k, i) *= f;
                EIG_SYNC(c);
                noconv = 1;
            }
        }
    }
    EIG_SYNC(c);
    *ilo_out = ilo;
    *ihi_out = ihi;
}

/* ---- Householder reduction to Hessenberg form ------------------------------------ */

TK_HD static inline void EIG_NAME(eig_hessenberg)(EIG_NAME(eig_ctx) * c, int ilo, int ihi)
{
    const int n = c->n, want = c->z != 0;
    const int jmax = want ? n - 1 : ihi, rmin = want ? 0 : ilo;
    for (int k = ilo; k < ihi - 1; ++k) {
        const int m = ihi - k; /* reflector length: rows k+1..ihi */
        EIG_REAL alpha = EIG_H(k + 1, k), xnorm2 = 0;
        for (int i = k + 2; i <= ihi; ++i) xnorm2 += EIG_H(i, k) * EIG_H(i, k);
        if (xnorm2 == 0) continue; /* the column is already reduced */
        const EIG_REAL beta = -EIG_SIGN(EIG_HYPOT(alpha, EIG_SQRT(xnorm2)), alpha);
        const EIG_REAL tau = (beta - alpha) / beta, sc = 1 / (alpha - beta);
        EIG_FOR(i, 1, m - 1) EIG_A(c->tmp, i) = EIG_H(k + 1 + i, k) * sc;
        if (EIG_LANE(c) == 0) EIG_A(c->tmp, 0) = 1;
        EIG_SYNC(c);
        if (EIG_LANE(c) == 0) EIG_H(k + 1, k) = beta;
        EIG_FOR(i, k + 2, ihi) EIG_H(i, k) = 0;
        /* H <- (I - tau v v^T) H on columns k+1.. */
        EIG_FOR(j, k + 1, jmax)
        {
            EIG_REAL s = 0;
            for (int i = 0; i < m; ++i) s += EIG_A(c->tmp, i) * EIG_H(k + 1 + i, j);
            s *= tau;
            for (int i = 0; i < m; ++i) EIG_H(k + 1 + i, j) -= s * EIG_A(c->tmp, i);
        }
        EIG_SYNC(c);
        /* H <- H (I - tau v v^T), and Z <- Z (I - tau v v^T) */
        EIG_FOR(r, rmin, ihi)
        {
            EIG_REAL s = 0;
            for (int i = 0; i < m; ++i) s += EIG_H(r, k + 1 + i) * EIG_A(c->tmp, i);
            s *= tau;
            for (int i = 0; i < m; ++i) EIG_H(r, k + 1 + i) -= s * EIG_A(c->tmp, i);
        }
        if (want) {
            EIG_FOR(r, ilo, ihi)
            {
                EIG_REAL s = 0;
                for (int i = 0; i < m; ++i) s += EIG_Z(r, k + 1 + i) * EIG_A(c->tmp, i);
                s *= tau;
                for (int i = 0; i < m; ++i) EIG_Z(r, k + 1 + i) -= s * EIG_A(c->tmp, i);
            }
        }
        EIG_SYNC(c);
    }
}

/* ---- LAPACK dlahqr's double shift --------------------------------------------------
 * One text for every QR iteration of the library: eig_hqr below, the CPU's SIMD lanes
 * (eig_lanes_body.h) and the GPU's three (eig_cuda_hqr.cuh, eig_cuda_lockstep.cuh,
 * eig_cuda_small.cuh, through Eig<R>). */

/* The eigenvalues rt = (s1 re, s1 im, s2 re, s2 im) of the 2 x 2 block (h11 h12; h21
 * h22): the window's trailing block, or the exceptional shift the caller put there.
 * A real pair becomes the one closer to h22, twice. */
TK_HD TK_ALWAYS_INLINE static inline void EIG_NAME(eig_double_shift)(EIG_REAL h11, EIG_REAL h12, EIG_REAL h21,
                                                                     EIG_REAL h22, EIG_REAL rt[4])
{
    EIG_REAL rt1r = 0, rt1i = 0, rt2r = 0, rt2i = 0;
    const EIG_REAL s = EIG_FABS(h11) + EIG_FABS(h12) + EIG_FABS(h21) + EIG_FABS(h22);
    if (s != 0) {
        h11 /= s, h21 /= s, h12 /= s, h22 /= s;
        const EIG_REAL tr = (h11 + h22) / 2;
        const EIG_REAL det = (h11 - tr) * (h22 - tr) - h12 * h21;
        const EIG_REAL rtdisc = EIG_SQRT(EIG_FABS(det));
        if (det >= 0) {
            rt1r = tr * s, rt2r = rt1r, rt1i = rtdisc * s, rt2i = -rt1i;
        } else {
            rt1r = tr + rtdisc, rt2r = tr - rtdisc;
            if (EIG_FABS(rt1r - h22) <= EIG_FABS(rt2r - h22)) rt1r *= s, rt2r = rt1r;
            else rt2r *= s, rt1r = rt2r;
        }
    }
    rt[0] = rt1r, rt[1] = rt1i, rt[2] = rt2r, rt[3] = rt2i;
}

/* The first column (v[0], v[1], v[2]) of (H - s1)(H - s2) at row m, scaled to unit
 * 1-norm, from the shifts rt and hmm = H(m, m), hm1m = H(m+1, m), hmm1 = H(m, m+1),
 * hm1m1 = H(m+1, m+1), hm2m1 = H(m+2, m+1). */
TK_HD TK_ALWAYS_INLINE static inline void EIG_NAME(eig_shift_column)(const EIG_REAL rt[4], EIG_REAL hmm, EIG_REAL hm1m,
                                                                     EIG_REAL hmm1, EIG_REAL hm1m1, EIG_REAL hm2m1,
                                                                     EIG_REAL v[3])
{
    const EIG_REAL rt1r = rt[0], rt1i = rt[1], rt2r = rt[2], rt2i = rt[3];
    EIG_REAL h21s = hm1m;
    EIG_REAL ss = EIG_FABS(hmm - rt2r) + EIG_FABS(rt2i) + EIG_FABS(h21s);
    h21s /= ss;
    v[0] = h21s * hmm1 + (hmm - rt1r) * ((hmm - rt2r) / ss) - rt1i * (rt2i / ss);
    v[1] = h21s * (hmm + hm1m1 - rt1r - rt2r);
    v[2] = h21s * hm2m1;
    ss = EIG_FABS(v[0]) + EIG_FABS(v[1]) + EIG_FABS(v[2]);
    v[0] /= ss, v[1] /= ss, v[2] /= ss;
}

/* ---- the standardized Schur form of a 2 x 2 block (as LAPACK's dlanv2) ------------- */

TK_HD static inline void EIG_NAME(eig_lanv2)(EIG_REAL *a, EIG_REAL *b, EIG_REAL *cc, EIG_REAL *d, EIG_REAL *rt1r,
                                      EIG_REAL *rt1i, EIG_REAL *rt2r, EIG_REAL *rt2i, EIG_REAL *cs, EIG_REAL *sn)
{
    const EIG_REAL eps = EIG_EPS;
    EIG_REAL A = *a, B = *b, C = *cc, D = *d, CS = 1, SN = 0;
    if (C == 0) {
    } else if (B == 0) {
        CS = 0, SN = 1;
        EIG_REAL t = D;
        D = A, A = t, B = -C, C = 0;
    } else if (A - D == 0 && (B > 0) != (C > 0)) {
    } else {
        EIG_REAL temp = A - D, p = temp / 2;
        EIG_REAL bcmax = EIG_MAX(EIG_FABS(B), EIG_FABS(C));
        EIG_REAL bcmis = EIG_MIN(EIG_FABS(B), EIG_FABS(C)) * EIG_SIGN((EIG_REAL)1, B) * EIG_SIGN((EIG_REAL)1, C);
        EIG_REAL scale = EIG_MAX(EIG_FABS(p), bcmax);
        EIG_REAL z = p / scale * p + bcmax / scale * bcmis;
        if (z >= 4 * eps) {
            /* real eigenvalues */
            z = p + EIG_SIGN(EIG_SQRT(scale) * EIG_SQRT(z), p);
            A = D + z;
            D = D - bcmax / z * bcmis;
            EIG_REAL tau = EIG_HYPOT(C, z);
            CS = z / tau, SN = C / tau;
            B = B - C, C = 0;
        } else {
            /* complex or nearly equal real eigenvalues: make the diagonal equal */
            EIG_REAL sigma = B + C, tau = EIG_HYPOT(sigma, temp);
            CS = EIG_SQRT((1 + EIG_FABS(sigma) / tau) / 2);
            SN = -(p / (tau * CS)) * EIG_SIGN((EIG_REAL)1, sigma);
            EIG_REAL aa = A * CS + B * SN, bb = -A * SN + B * CS, c2 = C * CS + D * SN, dd = -C * SN + D * CS;
            A = aa * CS + c2 * SN, B = bb * CS + dd * SN, C = -aa * SN + c2 * CS, D = -bb * SN + dd * CS;
            temp = (A + D) / 2;
            A = temp, D = temp;
            if (C != 0) {
                if (B != 0) {
                    if ((B > 0) == (C > 0)) {
                        /* real eigenvalues after all */
                        EIG_REAL sab = EIG_SQRT(EIG_FABS(B)), sac = EIG_SQRT(EIG_FABS(C));
                        p = EIG_SIGN(sab * sac, C);
                        tau = 1 / EIG_SQRT(EIG_FABS(B + C));
                        A = temp + p, D = temp - p;
                        B = B - C, C = 0;
                        EIG_REAL cs1 = sab * tau, sn1 = sac * tau;
                        temp = CS * cs1 - SN * sn1;
                        SN = CS * sn1 + SN * cs1;
                        CS = temp;
                    }
                } else {
                    B = -C, C = 0;
                    temp = CS, CS = -SN, SN = temp;
                }
            }
        }
    }
    *a = A, *b = B, *cc = C, *d = D, *cs = CS, *sn = SN;
    *rt1r = A, *rt2r = D;
    if (C == 0) {
        *rt1i = 0, *rt2i = 0;
    } else {
        *rt1i = EIG_SQRT(EIG_FABS(B)) * EIG_SQRT(EIG_FABS(C));
        *rt2i = -*rt1i;
    }
}

/* ---- implicit double-shift QR (the structure of LAPACK's dlahqr) ------------------- */

/* Ahues and Tisseur's refined deflation test (LAPACK's dlahqr): is the subdiagonal
 * entry |h(k, k-1)| = sub, already at most ulp times its neighbourhood, negligible beside
 * the 2x2 block with hpp = h(k-1, k-1), up = h(k-1, k) and hkk = h(k, k)?  Shared by the
 * one-matrix QR below and the CPU's lockstep QR (eig_lanes_body.h). */
TK_HD static inline int EIG_NAME(eig_negligible)(EIG_REAL sub, EIG_REAL up, EIG_REAL hpp, EIG_REAL hkk, EIG_REAL ulp,
                                                 EIG_REAL smlnum)
{
    up = EIG_FABS(up);
    const EIG_REAL ab = EIG_MAX(sub, up), ba = EIG_MIN(sub, up);
    const EIG_REAL dk = EIG_FABS(hkk), dd = EIG_FABS(hpp - hkk);
    const EIG_REAL aa = EIG_MAX(dk, dd), bb = EIG_MIN(dk, dd), s = aa + ab;
    return ba * (ab / s) <= EIG_MAX(smlnum, ulp * (bb * (aa / s)));
}

/* Returns 0 on success, 1 when an eigenvalue did not converge within max_iter. */
TK_HD static inline int EIG_NAME(eig_hqr)(EIG_NAME(eig_ctx) * c, int ilo, int ihi, int max_iter)
{
    const int n = c->n, wantt = c->z != 0;
    const EIG_REAL ulp = EIG_EPS;
    const EIG_REAL smlnum = EIG_SAFMIN * ((EIG_REAL)(ihi - ilo + 1) / ulp);
    if (EIG_LANE(c) == 0) {
        /* eigenvalues isolated by balancing */
        for (int i = 0; i < ilo; ++i) EIG_A(c->wr, i) = EIG_H(i, i), EIG_A(c->wi, i) = 0;
        for (int i = ihi + 1; i < n; ++i) EIG_A(c->wr, i) = EIG_H(i, i), EIG_A(c->wi, i) = 0;
    }
    if (ilo == ihi) {
        if (EIG_LANE(c) == 0) EIG_A(c->wr, ilo) = EIG_H(ilo, ilo), EIG_A(c->wi, ilo) = 0;
        EIG_SYNC(c);
        return 0;
    }
    int i1 = 0, i2 = n - 1, kdefl = 0;
    int i = ihi;
    while (i >= ilo) {
        int l = ilo, done = 0;
        for (int its = 0; its <= max_iter; ++its) {
            int k;
            for (k = i; k > l; --k) {
                EIG_REAL sub = EIG_FABS(EIG_H(k, k - 1));
                if (sub <= smlnum) break;
                EIG_REAL tst = EIG_FABS(EIG_H(k - 1, k - 1)) + EIG_FABS(EIG_H(k, k));
                if (tst == 0) {
                    if (k - 2 >= ilo) tst += EIG_FABS(EIG_H(k - 1, k - 2));
                    if (k + 1 <= ihi) tst += EIG_FABS(EIG_H(k + 1, k));
                }
                if (sub <= ulp * tst &&
                    EIG_NAME(eig_negligible)(sub, EIG_H(k - 1, k), EIG_H(k - 1, k - 1), EIG_H(k, k), ulp, smlnum))
                    break;
            }
            l = k;
            if (l > ilo) {
                EIG_SYNC(c);
                if (EIG_LANE(c) == 0) EIG_H(l, l - 1) = 0;
                EIG_SYNC(c);
            }
            if (l >= i - 1) {
                done = 1;
                break;
            }
            ++kdefl;
            if (!wantt) i1 = l, i2 = i;

            /* shifts: the trailing 2x2's eigenvalues, or an exceptional pair every 10 */
            EIG_REAL h11, h12, h21, h22;
            if (kdefl % 20 == 0) {
                EIG_REAL s = EIG_FABS(EIG_H(i, i - 1)) + EIG_FABS(EIG_H(i - 1, i - 2));
                h11 = (EIG_REAL)0.75 * s + EIG_H(i, i), h12 = (EIG_REAL)-0.4375 * s, h21 = s, h22 = h11;
            } else if (kdefl % 10 == 0) {
                EIG_REAL s = EIG_FABS(EIG_H(l + 1, l)) + EIG_FABS(EIG_H(l + 2, l + 1));
                h11 = (EIG_REAL)0.75 * s + EIG_H(l, l), h12 = (EIG_REAL)-0.4375 * s, h21 = s, h22 = h11;
            } else {
                h11 = EIG_H(i - 1, i - 1), h21 = EIG_H(i, i - 1), h12 = EIG_H(i - 1, i), h22 = EIG_H(i, i);
            }
            EIG_REAL rt[4];
            EIG_NAME(eig_double_shift)(h11, h12, h21, h22, rt);

            /* look for two consecutive small subdiagonals */
            int m;
            EIG_REAL v0 = 0, v1 = 0, v2 = 0;
            for (m = i - 2; m >= l; --m) {
                EIG_REAL v[3];
                EIG_NAME(eig_shift_column)(rt, EIG_H(m, m), EIG_H(m + 1, m), EIG_H(m, m + 1), EIG_H(m + 1, m + 1),
                                           EIG_H(m + 2, m + 1), v);
                v0 = v[0], v1 = v[1], v2 = v[2];
                if (m == l) break;
                EIG_REAL h00 = EIG_FABS(EIG_H(m, m - 1)) * (EIG_FABS(v1) + EIG_FABS(v2));
                EIG_REAL h01 = EIG_FABS(v0) * (EIG_FABS(EIG_H(m - 1, m - 1)) + EIG_FABS(EIG_H(m, m)) +
                                               EIG_FABS(EIG_H(m + 1, m + 1)));
                if (h00 <= ulp * h01) break;
            }

            /* the double-shift sweep: create the bulge at m, chase it down to i */
            for (int k2 = m; k2 <= i - 1; ++k2) {
                const int nr = EIG_MIN(3, i - k2 + 1);
                if (k2 > m) {
                    v0 = EIG_H(k2, k2 - 1);
                    v1 = EIG_H(k2 + 1, k2 - 1);
                    v2 = nr == 3 ? EIG_H(k2 + 2, k2 - 1) : 0;
                }
                EIG_REAL xn2 = v1 * v1 + (nr == 3 ? v2 * v2 : 0), t1 = 0, beta = v0;
                if (xn2 != 0) {
                    beta = -EIG_SIGN(EIG_HYPOT(v0, EIG_SQRT(xn2)), v0);
                    t1 = (beta - v0) / beta;
                    EIG_REAL sc = 1 / (v0 - beta);
                    v1 *= sc, v2 *= sc;
                }
                EIG_SYNC(c);
                if (EIG_LANE(c) == 0) {
                    if (k2 > m) {
                        EIG_H(k2, k2 - 1) = beta;
                        EIG_H(k2 + 1, k2 - 1) = 0;
                        if (k2 < i - 1) EIG_H(k2 + 2, k2 - 1) = 0;
                    } else if (m > l) {
                        /* the sign flip, written so that it survives v1, v2 underflowing */
                        EIG_H(k2, k2 - 1) *= 1 - t1;
                    }
                }
                if (t1 == 0) {
                    EIG_SYNC(c);
                    continue;
                }
                const EIG_REAL t2 = t1 * v1;
                if (nr == 3) {
                    const EIG_REAL t3 = t1 * v2;
                    EIG_FOR(j, k2, i2)
                    {
                        EIG_REAL sum = EIG_H(k2, j) + v1 * EIG_H(k2 + 1, j) + v2 * EIG_H(k2 + 2, j);
                        EIG_H(k2, j) -= sum * t1;
                        EIG_H(k2 + 1, j) -= sum * t2;
                        EIG_H(k2 + 2, j) -= sum * t3;
                    }
                    EIG_SYNC(c);
                    const int rmax = EIG_MIN(k2 + 3, i);
                    EIG_FOR(j, i1, rmax)
                    {
                        EIG_REAL sum = EIG_H(j, k2) + v1 * EIG_H(j, k2 + 1) + v2 * EIG_H(j, k2 + 2);
                        EIG_H(j, k2) -= sum * t1;
                        EIG_H(j, k2 + 1) -= sum * t2;
                        EIG_H(j, k2 + 2) -= sum * t3;
                    }
                    if (wantt) {
                        EIG_FOR(j, ilo, ihi)
                        {
                            EIG_REAL sum = EIG_Z(j, k2) + v1 * EIG_Z(j, k2 + 1) + v2 * EIG_Z(j, k2 + 2);
                            EIG_Z(j, k2) -= sum * t1;
                            EIG_Z(j, k2 + 1) -= sum * t2;
                            EIG_Z(j, k2 + 2) -= sum * t3;
                        }
                    }
                } else {
                    EIG_FOR(j, k2, i2)
                    {
                        EIG_REAL sum = EIG_H(k2, j) + v1 * EIG_H(k2 + 1, j);
                        EIG_H(k2, j) -= sum * t1;
                        EIG_H(k2 + 1, j) -= sum * t2;
                    }
                    EIG_SYNC(c);
                    EIG_FOR(j, i1, i)
                    {
                        EIG_REAL sum = EIG_H(j, k2) + v1 * EIG_H(j, k2 + 1);
                        EIG_H(j, k2) -= sum * t1;
                        EIG_H(j, k2 + 1) -= sum * t2;
                    }
                    if (wantt) {
                        EIG_FOR(j, ilo, ihi)
                        {
                            EIG_REAL sum = EIG_Z(j, k2) + v1 * EIG_Z(j, k2 + 1);
                            EIG_Z(j, k2) -= sum * t1;
                            EIG_Z(j, k2 + 1) -= sum * t2;
                        }
                    }
                }
                EIG_SYNC(c);
            }
        }
        if (!done) return 1;

        if (l == i) {
            if (EIG_LANE(c) == 0) EIG_A(c->wr, i) = EIG_H(i, i), EIG_A(c->wi, i) = 0;
        } else {
            /* a 2x2 block: standardize it (and rotate the rest of T and Z to match) */
            EIG_REAL a = EIG_H(i - 1, i - 1), b = EIG_H(i - 1, i), cc = EIG_H(i, i - 1), d = EIG_H(i, i);
            EIG_REAL r1r, r1i, r2r, r2i, cs, sn;
            EIG_NAME(eig_lanv2)(&a, &b, &cc, &d, &r1r, &r1i, &r2r, &r2i, &cs, &sn);
            EIG_SYNC(c);
            if (EIG_LANE(c) == 0) {
                EIG_A(c->wr, i - 1) = r1r, EIG_A(c->wi, i - 1) = r1i;
                EIG_A(c->wr, i) = r2r, EIG_A(c->wi, i) = r2i;
                EIG_H(i - 1, i - 1) = a, EIG_H(i - 1, i) = b, EIG_H(i, i - 1) = cc, EIG_H(i, i) = d;
            }
            if (wantt) {
                EIG_FOR(j, i + 1, i2)
                {
                    EIG_REAL x = EIG_H(i - 1, j), y = EIG_H(i, j);
                    EIG_H(i - 1, j) = cs * x + sn * y;
                    EIG_H(i, j) = cs * y - sn * x;
                }
                EIG_FOR(j, i1, i - 2)
                {
                    EIG_REAL x = EIG_H(j, i - 1), y = EIG_H(j, i);
                    EIG_H(j, i - 1) = cs * x + sn * y;
                    EIG_H(j, i) = cs * y - sn * x;
                }
                EIG_FOR(j, ilo, ihi)
                {
                    EIG_REAL x = EIG_Z(j, i - 1), y = EIG_Z(j, i);
                    EIG_Z(j, i - 1) = cs * x + sn * y;
                    EIG_Z(j, i) = cs * y - sn * x;
                }
            }
        }
        EIG_SYNC(c);
        kdefl = 0;
        i = l - 1;
    }
    return 0;
}

/* ---- eigenvectors of the quasi-triangular T, in complex arithmetic -------------------- */

/* (ar + i ai) / (br + i bi) without forming |b|^2 (Smith), which under- or overflows. */
TK_HD static inline void EIG_NAME(eig_cdiv)(EIG_REAL ar, EIG_REAL ai, EIG_REAL br, EIG_REAL bi, EIG_REAL *qr,
                                            EIG_REAL *qi)
{
    if (EIG_FABS(br) >= EIG_FABS(bi)) {
        EIG_REAL r = bi / br, d = br + bi * r;
        *qr = (ar + ai * r) / d, *qi = (ai - ar * r) / d;
    } else {
        EIG_REAL r = br / bi, d = bi + br * r;
        *qr = (ar * r + ai) / d, *qi = (ai * r - ar) / d;
    }
}

/* Eigenvector of T for the eigenvalue (lr, li) at diagonal position p, into
 * out[2*(i*ostride)] (re, im) for i = 0..n-1. */
TK_HD static inline void EIG_NAME(eig_schur_vector)(const EIG_NAME(eig_ctx) * c, int p, EIG_REAL lr, EIG_REAL li,
                                             EIG_REAL *out, int ostride)
{
    const int n = c->n;
    const EIG_REAL smin = EIG_MAX(EIG_EPS * (EIG_FABS(lr) + EIG_FABS(li)), EIG_SAFMIN / EIG_EPS);
    const EIG_REAL big = 1 / (EIG_SQRT(EIG_SAFMIN) * 16);
#define EIG_XR(i) out[2 * (i) * ostride]
#define EIG_XI(i) out[2 * (i) * ostride + 1]
    int top, k0;
    if (p > 0 && EIG_H(p, p - 1) != 0) top = p, k0 = p - 1;
    else if (p < n - 1 && EIG_H(p + 1, p) != 0) top = p + 1, k0 = p;
    else top = p, k0 = p;
    for (int j = top + 1; j < n; ++j) EIG_XR(j) = 0, EIG_XI(j) = 0;
    if (top == k0) {
        EIG_XR(p) = 1, EIG_XI(p) = 0;
    } else {
        /* (a - lambda) x0 + b x1 = 0 */
        EIG_XR(k0) = EIG_H(k0, k0 + 1), EIG_XI(k0) = 0;
        EIG_XR(k0 + 1) = lr - EIG_H(k0, k0), EIG_XI(k0 + 1) = li;
    }
    for (int i = k0 - 1; i >= 0; --i) {
        const int pair = i > 0 && EIG_H(i, i - 1) != 0;
        const int lo = pair ? i - 1 : i;
        EIG_REAL rr[2] = {0, 0}, ri[2] = {0, 0};
        for (int q = lo; q <= i; ++q)
            for (int j = i + 1; j <= top; ++j) {
                rr[q - lo] -= EIG_H(q, j) * EIG_XR(j);
                ri[q - lo] -= EIG_H(q, j) * EIG_XI(j);
            }
        if (!pair) {
            EIG_REAL dr = EIG_H(i, i) - lr, di = -li;
            if (EIG_FABS(dr) + EIG_FABS(di) < smin) dr = smin, di = 0;
            EIG_NAME(eig_cdiv)(rr[0], ri[0], dr, di, &EIG_XR(i), &EIG_XI(i));
        } else {
            /* [a-l b; c d-l] [x0; x1] = r, by Cramer's rule in complex arithmetic */
            EIG_REAL ar = EIG_H(i - 1, i - 1) - lr, ai = -li, b = EIG_H(i - 1, i), cq = EIG_H(i, i - 1);
            EIG_REAL dr = EIG_H(i, i) - lr, di = -li;
            EIG_REAL detr = ar * dr - ai * di - b * cq, deti = ar * di + ai * dr;
            const EIG_REAL tiny = EIG_MAX(smin * smin, EIG_SAFMIN);
            if (EIG_FABS(detr) + EIG_FABS(deti) < tiny) detr = tiny, deti = 0;
            EIG_REAL n0r = rr[0] * dr - ri[0] * di - b * rr[1], n0i = rr[0] * di + ri[0] * dr - b * ri[1];
            EIG_REAL n1r = ar * rr[1] - ai * ri[1] - cq * rr[0], n1i = ar * ri[1] + ai * rr[1] - cq * ri[0];
            EIG_NAME(eig_cdiv)(n0r, n0i, detr, deti, &EIG_XR(i - 1), &EIG_XI(i - 1));
            EIG_NAME(eig_cdiv)(n1r, n1i, detr, deti, &EIG_XR(i), &EIG_XI(i));
        }
        /* keep the partial vector far from overflow */
        EIG_REAL mag = EIG_MAX(EIG_FABS(EIG_XR(i)) + EIG_FABS(EIG_XI(i)), EIG_FABS(EIG_XR(lo)) + EIG_FABS(EIG_XI(lo)));
        if (mag > big) {
            EIG_REAL f = 1 / mag;
            for (int j = lo; j <= top; ++j) EIG_XR(j) *= f, EIG_XI(j) *= f;
        }
        i = lo;
    }
#undef EIG_XR
#undef EIG_XI
}

/* ---- the whole solve of one matrix ---------------------------------------------------- */

/* Load a into c->h, check it is finite, prescale by a power of two (*expo) so that
 * max|a| lies in [0.5, 1) -- nothing below then over- or underflows needlessly
 * (1e-150, 1e+150) -- and balance.  Returns 0, or 2 (TK_EIG_NONFINITE). */
TK_HD static inline int EIG_NAME(eig_prepare)(EIG_NAME(eig_ctx) * c, const EIG_REAL *a, int balance, int *expo,
                                             int *ilo, int *ihi)
{
    const int n = c->n;
    EIG_FOR(e, 0, n * n - 1) EIG_H(e / n, e % n) = a[e];
    EIG_SYNC(c);
    EIG_REAL amax = 0;
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) {
            EIG_REAL v = EIG_FABS(EIG_H(i, j));
            if (!isfinite(v)) return 2;
            amax = EIG_MAX(amax, v);
        }
    *expo = 0;
    if (amax > 0) {
        EIG_FREXP(amax, expo);
        const int e2 = *expo;
        EIG_SYNC(c); /* every thread has finished reading the unscaled matrix */
        /* one exact power-of-two factor where it is representable, ldexp otherwise */
        if (e2 > -100 && e2 < 100) {
            const EIG_REAL f = EIG_LDEXP((EIG_REAL)1, -e2);
            EIG_FOR(e, 0, n * n - 1) EIG_H(e / n, e % n) *= f;
        } else {
            EIG_FOR(e, 0, n * n - 1) EIG_H(e / n, e % n) = EIG_LDEXP(EIG_H(e / n, e % n), -e2);
        }
        EIG_SYNC(c);
    }
    EIG_NAME(eig_balance)(c, balance, balance, ilo, ihi);
    return 0;
}

/* x * 2^e: one multiply where 2^e is representable, ldexp otherwise. */
TK_HD static inline EIG_REAL EIG_NAME(eig_scale2)(EIG_REAL x, int e)
{
    return (e > -100 && e < 100) ? x * EIG_LDEXP((EIG_REAL)1, e) : EIG_LDEXP(x, e);
}

/* Sort (wr, wi) by real part, then imaginary part, ascending, carrying pos along. */
TK_HD static inline void EIG_NAME(eig_sort)(EIG_NAME(eig_ctx) * c)
{
    const int n = c->n;
    for (int i = 0; i < n; ++i) EIG_A(c->pos, i) = (EIG_REAL)i;
    for (int i = 1; i < n; ++i) {
        EIG_REAL r = EIG_A(c->wr, i), im = EIG_A(c->wi, i), ps = EIG_A(c->pos, i);
        int j = i - 1;
        while (j >= 0 && (EIG_A(c->wr, j) > r || (EIG_A(c->wr, j) == r && EIG_A(c->wi, j) > im))) {
            EIG_A(c->wr, j + 1) = EIG_A(c->wr, j), EIG_A(c->wi, j + 1) = EIG_A(c->wi, j);
            EIG_A(c->pos, j + 1) = EIG_A(c->pos, j);
            --j;
        }
        EIG_A(c->wr, j + 1) = r, EIG_A(c->wi, j + 1) = im, EIG_A(c->pos, j + 1) = ps;
    }
}

/* a: the input matrix (row-major, n*n); values: 2n reals; vectors: 2n*n reals or
 * NULL (then c->z must be NULL).  Returns a tk_eig_matrix_status. */
TK_HD static inline int EIG_NAME(eig_solve_one)(EIG_NAME(eig_ctx) * c, const EIG_REAL *a, EIG_REAL *values, EIG_REAL *vectors,
                                         int balance, int max_iter)
{
    const int n = c->n;
    int expo = 0, ilo = 0, ihi = n - 1;
    int status = EIG_NAME(eig_prepare)(c, a, balance, &expo, &ilo, &ihi);
    if (!status) {
        if (c->z) {
            EIG_FOR(e, 0, n * n - 1) EIG_Z(e / n, e % n) = (e / n == e % n) ? 1 : 0;
            EIG_SYNC(c);
        }
        EIG_NAME(eig_hessenberg)(c, ilo, ihi);
        if (EIG_NAME(eig_hqr)(c, ilo, ihi, max_iter)) status = 1;
    }
    if (status) {
        const EIG_REAL nan = EIG_NAN;
        EIG_FOR(e, 0, 2 * n - 1) values[e] = nan;
        if (vectors) EIG_FOR(e, 0, 2 * n * n - 1) vectors[e] = nan;
        EIG_SYNC(c);
        return status;
    }
    EIG_SYNC(c);
    /* sort by (re, im) ascending, remembering each value's place on T's diagonal */
    if (EIG_LANE(c) == 0) EIG_NAME(eig_sort)(c);
    EIG_SYNC(c);
    EIG_FOR(s, 0, n - 1)
    {
        values[2 * s] = EIG_NAME(eig_scale2)(EIG_A(c->wr, s), expo);
        values[2 * s + 1] = EIG_NAME(eig_scale2)(EIG_A(c->wi, s), expo);
    }
    if (!vectors) {
        EIG_SYNC(c);
        return 0;
    }

    /* eigenvectors of T, one per thread, straight into the output columns */
    EIG_FOR(s, 0, n - 1)
    EIG_NAME(eig_schur_vector)(c, (int)EIG_A(c->pos, s), EIG_A(c->wr, s), EIG_A(c->wi, s), vectors + 2 * s, n);
    EIG_SYNC(c);
    /* back to A's basis: v = D P Z x */
    for (int s = 0; s < n; ++s) {
        EIG_FOR(i, 0, n - 1)
        {
            EIG_A(c->tmp, 2 * i) = vectors[2 * (i * n + s)];
            EIG_A(c->tmp, 2 * i + 1) = vectors[2 * (i * n + s) + 1];
        }
        EIG_SYNC(c);
        EIG_FOR(r, 0, n - 1)
        {
            EIG_REAL sr = 0, si = 0;
            for (int j = 0; j < n; ++j) {
                EIG_REAL zz = EIG_Z(r, j);
                sr += zz * EIG_A(c->tmp, 2 * j);
                si += zz * EIG_A(c->tmp, 2 * j + 1);
            }
            /* outside ilo..ihi the scale array records permutations, not scales */
            const EIG_REAL d = (r >= ilo && r <= ihi) ? EIG_A(c->scale, r) : 1;
            vectors[2 * (r * n + s)] = sr * d;
            vectors[2 * (r * n + s) + 1] = si * d;
        }
        EIG_SYNC(c);
    }
    /* undo the balancing permutations (the order of LAPACK's dgebak) */
    if (EIG_LANE(c) == 0) {
        for (int ii = 0; ii < n; ++ii) {
            int i = ii;
            if (i >= ilo && i <= ihi) continue;
            if (i < ilo) i = ilo - 1 - ii;
            int k = (int)EIG_A(c->scale, i);
            if (k == i) continue;
            for (int q = 0; q < 2 * n; ++q) {
                EIG_REAL t = vectors[2 * i * n + q];
                vectors[2 * i * n + q] = vectors[2 * k * n + q];
                vectors[2 * k * n + q] = t;
            }
        }
    }
    EIG_SYNC(c);
    /* unit 2-norm, largest component real and positive */
    EIG_FOR(s, 0, n - 1)
    {
        EIG_REAL vmax = 0, br = 1, bi = 0, m2max = 0;
        int ib = 0;
        for (int i = 0; i < n; ++i)
            vmax = EIG_MAX(vmax, EIG_MAX(EIG_FABS(vectors[2 * (i * n + s)]), EIG_FABS(vectors[2 * (i * n + s) + 1])));
        if (vmax > 0) {
            /* the largest modulus (the first on ties) becomes real and positive */
            for (int i = 0; i < n; ++i) {
                EIG_REAL xr = vectors[2 * (i * n + s)] / vmax, xi = vectors[2 * (i * n + s) + 1] / vmax;
                if (xr * xr + xi * xi > m2max) m2max = xr * xr + xi * xi, ib = i;
            }
            br = vectors[2 * (ib * n + s)], bi = vectors[2 * (ib * n + s) + 1];
            EIG_REAL sum = 0;
            for (int i = 0; i < n; ++i) {
                EIG_REAL xr = vectors[2 * (i * n + s)] / vmax, xi = vectors[2 * (i * n + s) + 1] / vmax;
                sum += xr * xr + xi * xi;
            }
            /* multiply by conj(b)/|b| / norm */
            br /= vmax, bi /= vmax;
            EIG_REAL bn = EIG_HYPOT(br, bi), nrm = EIG_SQRT(sum) * vmax;
            EIG_REAL fr = br / bn / nrm, fi = -bi / bn / nrm;
            for (int i = 0; i < n; ++i) {
                EIG_REAL xr = vectors[2 * (i * n + s)], xi = vectors[2 * (i * n + s) + 1];
                vectors[2 * (i * n + s)] = xr * fr - xi * fi;
                vectors[2 * (i * n + s) + 1] = xr * fi + xi * fr;
            }
            vectors[2 * (ib * n + s) + 1] = 0; /* exactly, not to rounding */
        }
    }
    EIG_SYNC(c);
    return 0;
}

#undef EIG_H
#undef EIG_Z
#undef EIG_A
#undef EIG_FOR
#undef EIG_MAX
#undef EIG_MIN
#undef EIG_SIGN
