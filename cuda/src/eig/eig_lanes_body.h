/* Eigenvalues of EIG_W matrices at once on the CPU, one matrix per SIMD lane.
 *
 * Included by eig_cpu.c after eig_body.h, once per precision (EIG_REAL, EIG_NAME,
 * EIG_W and the math macros of eig_body.h).  The matrices are interleaved element
 * by element (the layout of the GPU's thread-per-matrix scheme), so every row and
 * column update of the Hessenberg reduction and of the QR sweeps is a loop over
 * the lanes that the compiler vectorizes.
 *
 * Lanes run in lockstep through the same double-shift sweeps, each with its own
 * active window, shifts and deflations.  A lane with nothing to do at a bulge
 * position applies the identity reflector (tau = 0), which leaves its finite data
 * exactly unchanged; rows and columns outside a lane's window that the union of
 * the windows touches are never read again by that lane (values only), and one
 * zero padding row and column absorb the bulge's last third row.
 *
 * Only matrices whose balancing isolated no eigenvalue (ilo = 0, ihi = n-1) come
 * here; eig_cpu.c sends the others through the one-matrix path.
 */

#define EIG_MAX(a, b) ((a) > (b) ? (a) : (b))
#define EIG_MIN(a, b) ((a) < (b) ? (a) : (b))
#define EIG_SIGN(a, b) ((b) >= 0 ? EIG_FABS(a) : -EIG_FABS(a))
#define LH(i, j) h[((i) * ld + (j)) * EIG_W + lane]
#define LV(i, j) h[((i) * ld + (j)) * EIG_W]

/* The lockstep Hessenberg reduction and QR of one group.  h: (n+1) x (n+1) lanes,
 * padding zero; wr, wi: n x EIG_W; status per lane (0 or 1). */
TK_CPU_TARGETS static void EIG_NAME(eig_lanes_hqr)(int n, EIG_REAL *TK_RESTRICT h, EIG_REAL *TK_RESTRICT vbuf,
                                                   EIG_REAL *TK_RESTRICT wr, EIG_REAL *TK_RESTRICT wi, int *status,
                                                   int max_iter)
{
    const int ld = n + 1;
    const EIG_REAL ulp = EIG_EPS, smlnum = EIG_SAFMIN * ((EIG_REAL)n / ulp);

    /* ---- Householder reduction to Hessenberg form, all lanes together ---- */
    for (int k = 0; k < n - 2; ++k) {
        const int m = n - 1 - k;
        EIG_REAL tau[EIG_W];
        for (int lane = 0; lane < EIG_W; ++lane) {
            EIG_REAL alpha = LH(k + 1, k), xn2 = 0;
            for (int i = k + 2; i < n; ++i) xn2 += LH(i, k) * LH(i, k);
            vbuf[lane] = 1;
            if (xn2 == 0) {
                tau[lane] = 0;
                for (int i = 1; i < m; ++i) vbuf[i * EIG_W + lane] = 0;
                continue;
            }
            /* prescaled to max|a| < 1 and balanced: the plain sum of squares is safe */
            EIG_REAL beta = -EIG_SIGN(EIG_SQRT(alpha * alpha + xn2), alpha);
            tau[lane] = (beta - alpha) / beta;
            EIG_REAL sc = 1 / (alpha - beta);
            for (int i = 1; i < m; ++i) vbuf[i * EIG_W + lane] = LH(k + 1 + i, k) * sc, LH(k + 1 + i, k) = 0;
            LH(k + 1, k) = beta;
        }
        for (int j = k + 1; j < n; ++j) {
            EIG_REAL s[EIG_W];
            for (int lane = 0; lane < EIG_W; ++lane) s[lane] = LH(k + 1, j);
            for (int i = 1; i < m; ++i)
                for (int lane = 0; lane < EIG_W; ++lane) s[lane] += vbuf[i * EIG_W + lane] * LH(k + 1 + i, j);
            for (int lane = 0; lane < EIG_W; ++lane) s[lane] *= tau[lane];
            for (int i = 0; i < m; ++i)
                for (int lane = 0; lane < EIG_W; ++lane) LH(k + 1 + i, j) -= s[lane] * vbuf[i * EIG_W + lane];
        }
        for (int r = 0; r < n; ++r) {
            EIG_REAL s[EIG_W];
            for (int lane = 0; lane < EIG_W; ++lane) s[lane] = 0;
            for (int i = 0; i < m; ++i)
                for (int lane = 0; lane < EIG_W; ++lane) s[lane] += LH(r, k + 1 + i) * vbuf[i * EIG_W + lane];
            for (int lane = 0; lane < EIG_W; ++lane) s[lane] *= tau[lane];
            for (int i = 0; i < m; ++i)
                for (int lane = 0; lane < EIG_W; ++lane) LH(r, k + 1 + i) -= s[lane] * vbuf[i * EIG_W + lane];
        }
    }

    /* ---- double-shift QR, lanes in lockstep ---- */
    /* lane bit masks: unsigned, since float groups have 32 lanes */
    int li[EIG_W], ll[EIG_W], its[EIG_W], kdefl[EIG_W];
    unsigned active = 0;
    for (int lane = 0; lane < EIG_W; ++lane) {
        li[lane] = n - 1, ll[lane] = 0, its[lane] = 0, kdefl[lane] = 0;
        if (status[lane] == 0) active |= 1u << lane;
    }
    while (active) {
        unsigned sweeping = 0;
        int kmin = n, kmax = -1, rmin = n, cmax = 0;
        int ms[EIG_W];
        EIG_REAL iv0[EIG_W], iv1[EIG_W], iv2[EIG_W];
        for (int lane = 0; lane < EIG_W; ++lane) ms[lane] = n, iv0[lane] = iv1[lane] = iv2[lane] = 0;
        for (int lane = 0; lane < EIG_W; ++lane) {
        next_window:
            if (!(active >> lane & 1)) continue;
            const int i = li[lane];
            int l = ll[lane], k;
            for (k = i; k > l; --k) {
                EIG_REAL sub = EIG_FABS(LH(k, k - 1));
                if (sub <= smlnum) break;
                EIG_REAL tst = EIG_FABS(LH(k - 1, k - 1)) + EIG_FABS(LH(k, k));
                if (tst == 0) {
                    if (k - 2 >= 0) tst += EIG_FABS(LH(k - 1, k - 2));
                    if (k + 1 <= n - 1) tst += EIG_FABS(LH(k + 1, k));
                }
                if (sub <= ulp * tst && EIG_NAME(eig_negligible)(sub, LH(k - 1, k), LH(k - 1, k - 1), LH(k, k), ulp, smlnum))
                    break;
            }
            l = k;
            if (l > 0) LH(l, l - 1) = 0;
            if (l >= i - 1) {
                if (l == i) {
                    wr[i * EIG_W + lane] = LH(i, i), wi[i * EIG_W + lane] = 0;
                } else {
                    EIG_REAL a = LH(i - 1, i - 1), b = LH(i - 1, i), cc = LH(i, i - 1), d = LH(i, i);
                    EIG_REAL r1r, r1i, r2r, r2i, cs, sn;
                    EIG_NAME(eig_lanv2)(&a, &b, &cc, &d, &r1r, &r1i, &r2r, &r2i, &cs, &sn);
                    wr[(i - 1) * EIG_W + lane] = r1r, wi[(i - 1) * EIG_W + lane] = r1i;
                    wr[i * EIG_W + lane] = r2r, wi[i * EIG_W + lane] = r2i;
                }
                li[lane] = l - 1, ll[lane] = 0, its[lane] = 0, kdefl[lane] = 0;
                if (l - 1 < 0) active &= ~(1u << lane);
                goto next_window; /* the next window in this same round: no lane idles a round */
            }
            ll[lane] = l;
            if (its[lane]++ > max_iter) {
                status[lane] = 1;
                active &= ~(1u << lane);
                continue;
            }
            ++kdefl[lane];
            EIG_REAL h11, h12, h21, h22;
            if (kdefl[lane] % 20 == 0) {
                EIG_REAL s = EIG_FABS(LH(i, i - 1)) + EIG_FABS(LH(i - 1, i - 2));
                h11 = (EIG_REAL)0.75 * s + LH(i, i), h12 = (EIG_REAL)-0.4375 * s, h21 = s, h22 = h11;
            } else if (kdefl[lane] % 10 == 0) {
                EIG_REAL s = EIG_FABS(LH(l + 1, l)) + EIG_FABS(LH(l + 2, l + 1));
                h11 = (EIG_REAL)0.75 * s + LH(l, l), h12 = (EIG_REAL)-0.4375 * s, h21 = s, h22 = h11;
            } else {
                h11 = LH(i - 1, i - 1), h21 = LH(i, i - 1), h12 = LH(i - 1, i), h22 = LH(i, i);
            }
            EIG_REAL rt[4], v[3];
            EIG_NAME(eig_double_shift)(h11, h12, h21, h22, rt);
            /* The bulge starts at the top of the window: LAPACK's search for two small
             * consecutive subdiagonals below l rarely pays for its O(n) scalar scan per
             * lane and per sweep at these sizes. */
            const int m = l;
            EIG_NAME(eig_shift_column)(rt, LH(m, m), LH(m + 1, m), LH(m, m + 1), LH(m + 1, m + 1), LH(m + 2, m + 1), v);
            ms[lane] = m, iv0[lane] = v[0], iv1[lane] = v[1], iv2[lane] = v[2];
            sweeping |= 1u << lane;
            kmin = EIG_MIN(kmin, m), kmax = EIG_MAX(kmax, i - 1);
            rmin = EIG_MIN(rmin, l), cmax = EIG_MAX(cmax, i);
        }
        if (!sweeping) continue;

        for (int K = kmin; K <= kmax; ++K) {
            EIG_REAL t1[EIG_W], t2[EIG_W], t3[EIG_W], w1[EIG_W], w2[EIG_W];
            /* every lane's reflector at once, branch-free so that it vectorizes; a lane
             * whose bulge is not at K gets the identity (tau = 0) */
            EIG_REAL *p0 = K > 0 ? &LV(K, K - 1) : NULL, *p1 = K > 0 ? &LV(K + 1, K - 1) : NULL;
            EIG_REAL *p2 = K > 0 ? &LV(K + 2, K - 1) : NULL;
            for (int lane = 0; lane < EIG_W; ++lane) {
                const int i = li[lane], m = ms[lane];
                const int on = (sweeping >> lane & 1) && K >= m && K <= i - 1, first = K == m, three = K + 2 <= i;
                EIG_REAL h0 = K > 0 ? p0[lane] : 0, h1 = K > 0 ? p1[lane] : 0, h2 = K > 0 ? p2[lane] : 0;
                EIG_REAL v0 = first ? iv0[lane] : h0, v1 = first ? iv1[lane] : h1;
                EIG_REAL v2 = three ? (first ? iv2[lane] : h2) : 0;
                EIG_REAL scl = EIG_MAX(EIG_FABS(v0), EIG_MAX(EIG_FABS(v1), EIG_FABS(v2)));
                const int live = on && (v1 != 0 || v2 != 0);
                scl = live ? scl : 1;
                EIG_REAL r = 1 / scl, a0 = v0 * r, a1 = v1 * r, a2 = v2 * r;
                EIG_REAL nrm = scl * EIG_SQRT(a0 * a0 + a1 * a1 + a2 * a2);
                EIG_REAL beta = live ? (v0 >= 0 ? -nrm : nrm) : v0;
                EIG_REAL tt = live ? (beta - v0) / beta : 0;
                EIG_REAL sc = live ? 1 / (v0 - beta) : 0;
                v1 *= sc, v2 *= sc;
                if (K > 0) {
                    /* the bulge's column: beta on top, zeros below (chasing steps); the sign
                     * flip on the first step, written to survive v1, v2 underflowing */
                    const int chase = on && !first, flip = on && first && m > ll[lane];
                    p0[lane] = chase ? beta : flip ? h0 * (1 - tt) : h0;
                    p1[lane] = chase ? 0 : h1;
                    p2[lane] = chase && K < i - 1 ? 0 : h2;
                }
                t1[lane] = tt, t2[lane] = tt * v1, t3[lane] = tt * v2, w1[lane] = v1, w2[lane] = v2;
            }
            /* rows K..K+2 from the left, over the union of the lanes' column ranges */
            for (int j = K; j <= cmax; ++j) {
                EIG_REAL *r0 = &LV(K, j), *r1 = &LV(K + 1, j), *r2 = &LV(K + 2, j);
                for (int lane = 0; lane < EIG_W; ++lane) {
                    EIG_REAL sum = r0[lane] + w1[lane] * r1[lane] + w2[lane] * r2[lane];
                    r0[lane] -= sum * t1[lane];
                    r1[lane] -= sum * t2[lane];
                    r2[lane] -= sum * t3[lane];
                }
            }
            /* columns K..K+2 from the right */
            const int rmax = EIG_MIN(K + 3, cmax);
            for (int j = rmin; j <= rmax; ++j) {
                EIG_REAL *c0 = &LV(j, K), *c1 = &LV(j, K + 1), *c2 = &LV(j, K + 2);
                for (int lane = 0; lane < EIG_W; ++lane) {
                    EIG_REAL sum = c0[lane] + w1[lane] * c1[lane] + w2[lane] * c2[lane];
                    c0[lane] -= sum * t1[lane];
                    c1[lane] -= sum * t2[lane];
                    c2[lane] -= sum * t3[lane];
                }
            }
        }
    }
}

#undef LH
#undef LV
#undef EIG_MAX
#undef EIG_MIN
#undef EIG_SIGN
