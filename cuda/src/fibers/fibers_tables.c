/* The peak finder's tables: the SH-to-tensor map, a hemisphere grid and its neighbours.  A
 * plan (fibers_plan.c) builds them once and owns them. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fibers_internal.h"
#include "tk_sshopm.h"

#define TK_PI 3.14159265358979323846


void tk_fibers_tables_free(tk_fibers_tables *p)
{
    /* every table the struct owns, freed alike */
    void *owned[] = {p->map, p->map_t, p->dirs, p->basis_t, p->nbr_start, p->nbr, p->nbr_near, p->fit_nbr, p->fit_w};
    for (size_t i = 0; i < sizeof owned / sizeof owned[0]; ++i) free(owned[i]);
    memset(p, 0, sizeof *p);
}

/* The lattice index of height z (fractional), from z_j = 1 - (2j + 1) / 2g. */
static double lattice_index(int g, double z) { return ((1.0 - z) * 2.0 * g - 1.0) / 2.0; }

static int clamp_index(double j, int g) { return j < 0 ? 0 : j > g ? g : (int)j; }

int tk_fibers_grid_window(int g, const double *dirs, int i, double radius, int *ranges)
{
    const double z = dirs[(size_t)i * 3 + 2];
    /* two indices of slack on each side for rounding */
    int lo = clamp_index(floor(lattice_index(g, z + radius)) - 2, g);
    int hi = clamp_index(ceil(lattice_index(g, z - radius)) + 3, g);
    ranges[0] = lo, ranges[1] = hi;
    /* antipodes -d_j, z_j >= 0: within reach only where z_j <= radius - z */
    if (radius - z < 0) return 1;
    const int lo2 = clamp_index(floor(lattice_index(g, radius - z)) - 2, g);
    if (lo2 <= hi) {
        ranges[1] = g;
        return 1;
    }
    ranges[2] = lo2, ranges[3] = g;
    return 2;
}

tk_status tk_fibers_tables_create(int lmax, tk_sh_basis basis, int legacy, tk_fibers_tables *p)
{
    memset(p, 0, sizeof *p);
    if (lmax < 2 || lmax % 2 || lmax > TK_SH_MAX_LMAX)
        return tk_set_error(TK_ERR_ARGUMENT, "lmax must be even and from 2 to %d, got %d", TK_SH_MAX_LMAX, lmax);
    if (basis != TK_SH_TOURNIER && basis != TK_SH_DESCOTEAUX)
        return tk_set_error(TK_ERR_ARGUMENT, "unknown SH basis %d", (int)basis);
    p->lmax = lmax;
    p->k = (int)tk_sh_num_coeffs(lmax);
    p->basis = basis;
    p->legacy = legacy != 0;
    p->grid = TK_FIBERS_GRID_SIZE(lmax);
    p->grid_padded = (p->grid + 31) / 32 * 32;
    const int g = p->grid, k = p->k;
    p->map = malloc(sizeof(double) * (size_t)k * k);
    p->map_t = malloc(sizeof(double) * (size_t)k * k);
    p->dirs = malloc(sizeof(double) * (size_t)g * 3);
    p->basis_t = calloc((size_t)k * p->grid_padded, sizeof(float));
    p->nbr_start = malloc(sizeof(int) * ((size_t)g + 1));
    double *row = malloc(sizeof(double) * (size_t)k);
    if (!p->map || !p->map_t || !p->dirs || !p->basis_t || !p->nbr_start || !row) {
        free(row);
        tk_fibers_tables_free(p);
        return tk_set_error(TK_ERR_MEMORY, "out of memory for the lmax %d peak-finder plan", lmax);
    }
    tk_status s = tk_sh_to_tensor_map(basis, p->legacy, lmax, p->map);
    for (int r = 0; r < k && s == TK_OK; ++r)
        for (int c = 0; c < k; ++c) p->map_t[(size_t)c * k + r] = p->map[(size_t)r * k + c];
    /* upper half of a 2g-point Fibonacci lattice */
    for (int i = 0; i < g && s == TK_OK; ++i) {
        double z = 1.0 - (2.0 * i + 1.0) / (2.0 * g), rho = sqrt(1.0 - z * z), ang = i * TK_PI * (3.0 - sqrt(5.0));
        double *d = p->dirs + (size_t)i * 3;
        d[0] = rho * cos(ang), d[1] = rho * sin(ang), d[2] = z;
        s = tk_sh_eval(basis, p->legacy, lmax, d, row);
        for (int c = 0; c < k; ++c) p->basis_t[(size_t)c * p->grid_padded + i] = (float)row[c];
    }
    free(row);
    /* the l = 2 basis functions' quadratic forms: columns 1..5 of the lmax-2 tensor map */
    double map2[6 * 6];
    if (s == TK_OK) s = tk_sh_to_tensor_map(basis, p->legacy, 2, map2);
    for (int m = 0; m < 5 && s == TK_OK; ++m)
        for (int i = 0; i < 3; ++i)
            for (int j = 0; j < 3; ++j) {
                int index[2] = {i < j ? i : j, i < j ? j : i};
                p->axial_q[m][i * 3 + j] = map2[tk_sym_rank(2, 3, index) * 6 + 1 + m];
            }
    if (s != TK_OK) {
        tk_fibers_tables_free(p);
        return s;
    }
    /* Neighbours: every grid direction (or antipode) within 1.3 grid spacings, nearest
     * first; the first nbr_near[i] of them lie within 1.05 spacings. */
    const double spacing = sqrt(2.0 * TK_PI / g), cos_r = cos(1.3 * spacing), cos_near = cos(1.05 * spacing);
    size_t cap = (size_t)g * 16, used = 0;
    p->nbr = malloc(sizeof(int) * cap);
    p->nbr_near = malloc(sizeof(int) * (size_t)p->grid_padded);
    if (!p->nbr_near) free(p->nbr), p->nbr = NULL;
    for (int i = 0; i < g && p->nbr; ++i) {
        p->nbr_start[i] = (int)used;
        p->nbr_near[i] = 0;
        const double *a = p->dirs + (size_t)i * 3;
        int ranges[4];
        const int nranges = tk_fibers_grid_window(g, p->dirs, i, 1.3 * spacing + 1e-9, ranges);
        for (int r = 0; r < nranges && p->nbr; ++r)
        for (int j = ranges[2 * r]; j < ranges[2 * r + 1]; ++j) {
            if (j == i) continue;
            const double *b = p->dirs + (size_t)j * 3;
            const double d = fabs(a[0] * b[0] + a[1] * b[1] + a[2] * b[2]);
            if (d < cos_r) continue;
            if (used == cap) {
                int *grown = realloc(p->nbr, sizeof(int) * (cap *= 2));
                if (!grown) {
                    free(p->nbr);
                    p->nbr = NULL;
                    break;
                }
                p->nbr = grown;
            }
            /* insertion by closeness within this direction's list */
            size_t pos = used++;
            while (pos > (size_t)p->nbr_start[i]) {
                const double *c = p->dirs + (size_t)p->nbr[pos - 1] * 3;
                if (fabs(a[0] * c[0] + a[1] * c[1] + a[2] * c[2]) >= d) break;
                p->nbr[pos] = p->nbr[pos - 1], --pos;
            }
            p->nbr[pos] = j;
            p->nbr_near[i] += d >= cos_near;
        }
    }
    for (int i = g; i < p->grid_padded && p->nbr_near; ++i) p->nbr_near[i] = 0;
    if (!p->nbr) {
        tk_fibers_tables_free(p);
        return tk_set_error(TK_ERR_MEMORY, "out of memory for the peak-finder grid");
    }
    p->nbr_start[g] = (int)used;
    if ((s = tk_fibers_fit_create(p)) != TK_OK) tk_fibers_tables_free(p);
    return s;
}

tk_status tk_fibers_monomial_map(const tk_fibers_tables *p, double *P)
{
    const int m = p->lmax, k = p->k;
    int index[TK_SH_MAX_LMAX], row = 0;
    for (int c = 0; c <= m; ++c)
        for (int b = 0; b <= m - c; ++b, ++row) {
            /* the sorted index tuple 0^a 1^b 2^c of monomial x^a y^b z^c */
            int a = m - c - b, pos = 0;
            for (int i = 0; i < a; ++i) index[pos++] = 0;
            for (int i = 0; i < b; ++i) index[pos++] = 1;
            for (int i = 0; i < c; ++i) index[pos++] = 2;
            const size_t rank = tk_sym_rank(m, 3, index);
            const double weight = tk_sym_multiplicity(m, index);
            for (int col = 0; col < k; ++col) P[(size_t)col * k + row] = weight * p->map[rank * k + col];
        }
    return row == k ? TK_OK : tk_set_error(TK_ERR_ARGUMENT, "monomial count %d differs from %d coefficients", row, k);
}
