/* The peak finder's quadratic-fit stencils: for each grid direction, least-squares weights
 * that turn the grid values of its TK_FIBERS_FIT_WIDTH nearest directions into the tangent
 * gradient and Hessian of a quadratic model around it (tk_fibers_fit_reaches).
 *
 * Why: most shoulder candidates (grid directions on a ridge, 45-60 a voxel of a real FOD)
 * have no maximum within reach, and telling so exactly costs a double-precision derivative
 * of the degree-lmax polynomial each.  The grid values already hold that information to a
 * few per cent; the fit reads it for the price of eight gathers. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fibers_internal.h"
#include "tk_status.h"

/* Solves the 5 x 5 normal equations n * x = rhs in place (Gauss-Jordan with partial
 * pivoting); 0 where a pivot is below tiny (the stencil cannot see a quadratic). */
static int solve5(double n[5][5], double rhs[5][TK_FIBERS_FIT_WIDTH], int width)
{
    for (int c = 0; c < 5; ++c) {
        int piv = c;
        for (int r = c + 1; r < 5; ++r)
            if (fabs(n[r][c]) > fabs(n[piv][c])) piv = r;
        if (!(fabs(n[piv][c]) > 1e-14)) return 0;
        for (int q = 0; q < 5; ++q) {
            double t = n[c][q];
            n[c][q] = n[piv][q], n[piv][q] = t;
        }
        for (int q = 0; q < width; ++q) {
            double t = rhs[c][q];
            rhs[c][q] = rhs[piv][q], rhs[piv][q] = t;
        }
        const double d = n[c][c];
        for (int q = 0; q < 5; ++q) n[c][q] /= d;
        for (int q = 0; q < width; ++q) rhs[c][q] /= d;
        for (int r = 0; r < 5; ++r) {
            if (r == c) continue;
            const double f = n[r][c];
            for (int q = 0; q < 5; ++q) n[r][q] -= f * n[c][q];
            for (int q = 0; q < width; ++q) rhs[r][q] -= f * rhs[c][q];
        }
    }
    return 1;
}

tk_status tk_fibers_fit_create(tk_fibers_tables *p)
{
    const int g = p->grid, stride = p->grid_padded, width = TK_FIBERS_FIT_WIDTH;
    p->fit_nbr = calloc((size_t)width * stride, sizeof(int));
    p->fit_w = calloc((size_t)5 * width * stride, sizeof(float));
    if (!p->fit_nbr || !p->fit_w) return tk_set_error(TK_ERR_MEMORY, "out of memory for the peak finder's fit stencils");
    for (int i = 0; i < g; ++i) {
        /* the nearest directions (antipodes folded in), nearest first */
        const double *x = p->dirs + (size_t)i * 3;
        double best[TK_FIBERS_FIT_WIDTH];
        int pick[TK_FIBERS_FIT_WIDTH], found = 0, ranges[4];
        /* about 20 directions lie within 2.5 spacings: the nearest eight are among them */
        const int nranges = tk_fibers_grid_window(g, p->dirs, i, 2.5 * sqrt(2.0 * 3.14159265358979323846 / g), ranges);
        for (int r = 0; r < nranges; ++r)
        for (int j = ranges[2 * r]; j < ranges[2 * r + 1]; ++j) {
            if (j == i) continue;
            const double *y = p->dirs + (size_t)j * 3, d = fabs(x[0] * y[0] + x[1] * y[1] + x[2] * y[2]);
            if (found == width && d <= best[width - 1]) continue;
            int pos = found < width ? found++ : width - 1;
            while (pos > 0 && best[pos - 1] < d) best[pos] = best[pos - 1], pick[pos] = pick[pos - 1], --pos;
            best[pos] = d, pick[pos] = j;
        }
        /* geodesic normal coordinates of each in a tangent basis (u, w) at x: the fit's
         * derivatives are then the Riemannian gradient and Hessian Newton uses */
        double u[3], w[3];
        tk_fibers_tangent_basis(x, u, w);
        double rows[TK_FIBERS_FIT_WIDTH][5];
        for (int j = 0; j < found; ++j) {
            const double *y = p->dirs + (size_t)pick[j] * 3;
            const double dot = x[0] * y[0] + x[1] * y[1] + x[2] * y[2], sign = dot < 0 ? -1.0 : 1.0;
            const double ps = sign * (u[0] * y[0] + u[1] * y[1] + u[2] * y[2]);
            const double pt = sign * (w[0] * y[0] + w[1] * y[1] + w[2] * y[2]);
            const double angle = acos(fmin(1.0, sign * dot)), r = sqrt(ps * ps + pt * pt);
            const double s = ps / r * angle, t = pt / r * angle;
            rows[j][0] = s, rows[j][1] = t, rows[j][2] = 0.5 * s * s, rows[j][3] = s * t, rows[j][4] = 0.5 * t * t;
        }
        /* weights = (A^T A)^-1 A^T, one row per model term */
        double normal[5][5], rhs[5][TK_FIBERS_FIT_WIDTH];
        for (int r = 0; r < 5; ++r) {
            for (int c = 0; c < 5; ++c) {
                double s = 0;
                for (int j = 0; j < found; ++j) s += rows[j][r] * rows[j][c];
                normal[r][c] = s;
            }
            for (int j = 0; j < width; ++j) rhs[r][j] = j < found ? rows[j][r] : 0;
        }
        /* scaled to a unit grid spacing so that the pivot test is scale-free */
        const double spacing = sqrt(2.0 * 3.14159265358979323846 / g), sc[5] = {spacing, spacing, spacing * spacing,
                                                                               spacing * spacing, spacing * spacing};
        for (int r = 0; r < 5; ++r) {
            for (int c = 0; c < 5; ++c) normal[r][c] /= sc[r] * sc[c];
            for (int j = 0; j < width; ++j) rhs[r][j] /= sc[r];
        }
        if (found < width || !solve5(normal, rhs, width))
            return tk_set_error(TK_ERR_ARGUMENT, "the peak finder's grid of %d directions has a degenerate fit stencil at %d",
                                g, i);
        for (int j = 0; j < width; ++j) {
            p->fit_nbr[(size_t)i * width + j] = pick[j];
            for (int r = 0; r < 5; ++r) p->fit_w[((size_t)i * 5 + r) * width + j] = (float)(rhs[r][j] / sc[r]);
        }
    }
    return TK_OK;
}
