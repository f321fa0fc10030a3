/* Bounds on a series along any great circle, from its bands' coefficient norms: on one, band
 * l is a trigonometric polynomial of degree l, so Bernstein's inequality bounds its k-th
 * derivative by l^k times its largest value, itself at most sqrt((2l + 1) / 4 pi) times the
 * band's coefficient norm (the addition theorem; legacy scales only shrink it).  sup bounds
 * |series| / divisor, m2 its second derivative, m3 its third.  One text for both backends:
 * the CPU passes its unit-scaled double series and divisor 1 (exact), the CUDA grid kernel
 * its float coefficients and their scale.  No include guard on purpose: included once per
 * precision_*.h (fibers_internal.h), which picks the element type and the suffix. */
TK_HD static inline void TK_SFX(tk_fibers_derivative_bounds)(int lmax, const TK_REAL *c, double divisor, double *sup,
                                                             double *m2, double *m3)
{
    *sup = *m2 = *m3 = 0;
    for (int l = 2; l <= lmax; l += 2) {
        double cc = 0; /* band l: coefficients l(l+1)/2 - l .. l(l+1)/2 + l */
        for (int j = l * (l - 1) / 2; j <= l * (l + 3) / 2; ++j) cc += (double)c[j] * c[j];
        tk_fibers_band_bound_add(l, cc, divisor, sup, m2, m3);
    }
}
