/* Real spherical-harmonic bases of MRtrix3 and DIPY, and their exact map to symmetric tensors. */
#include "tk_fibers.h"

#define TK_PI 3.14159265358979323846

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sh_eval.h"
#include "tk_sshopm.h"

size_t tk_sh_num_coeffs(int lmax)
{
    if (lmax < 0 || lmax % 2) return 0;
    return (size_t)(lmax + 1) * (size_t)(lmax + 2) / 2;
}

int tk_sh_lmax_for_count(size_t count)
{
    for (int l = 0; l <= 64; l += 2)
        if (tk_sh_num_coeffs(l) == count) return l;
    return -1;
}

tk_status tk_sh_eval(tk_sh_basis basis, int legacy, int lmax, const double dir[3], double *out)
{
    if (lmax < 0 || lmax % 2 || lmax > TK_SH_MAX_LMAX)
        return tk_set_error(TK_ERR_ARGUMENT, "lmax must be even and from 0 to %d, got %d", TK_SH_MAX_LMAX, lmax);
    if (basis != TK_SH_TOURNIER && basis != TK_SH_DESCOTEAUX)
        return tk_set_error(TK_ERR_ARGUMENT, "unknown SH basis %d", (int)basis);
    double r = sqrt(dir[0] * dir[0] + dir[1] * dir[1] + dir[2] * dir[2]);
    if (!(r > 0) || !isfinite(r)) return tk_set_error(TK_ERR_ARGUMENT, "direction is zero or not finite");
    tk_sh_eval_unchecked(basis, legacy, lmax, dir, out);
    return TK_OK;
}

/* Least squares X = argmin |P X - S| by Householder QR of P (rows x cols, rows >= cols);
 * P and S (rows x nrhs) are overwritten; X is cols x nrhs.  0 if P is rank deficient. */
static int least_squares(int rows, int cols, int nrhs, double *P, double *S, double *X)
{
    for (int k = 0; k < cols; ++k) {
        double norm = 0;
        for (int i = k; i < rows; ++i) norm += P[(size_t)i * cols + k] * P[(size_t)i * cols + k];
        norm = sqrt(norm);
        if (norm == 0) return 0;
        double alpha = P[(size_t)k * cols + k] > 0 ? -norm : norm;
        /* v = x - alpha e1, stored in column k from row k */
        P[(size_t)k * cols + k] -= alpha;
        double vv = 0;
        for (int i = k; i < rows; ++i) vv += P[(size_t)i * cols + k] * P[(size_t)i * cols + k];
        for (int j = k + 1; j < cols; ++j) {
            double d = 0;
            for (int i = k; i < rows; ++i) d += P[(size_t)i * cols + k] * P[(size_t)i * cols + j];
            d *= 2 / vv;
            for (int i = k; i < rows; ++i) P[(size_t)i * cols + j] -= d * P[(size_t)i * cols + k];
        }
        for (int j = 0; j < nrhs; ++j) {
            double d = 0;
            for (int i = k; i < rows; ++i) d += P[(size_t)i * cols + k] * S[(size_t)i * nrhs + j];
            d *= 2 / vv;
            for (int i = k; i < rows; ++i) S[(size_t)i * nrhs + j] -= d * P[(size_t)i * cols + k];
        }
        P[(size_t)k * cols + k] = alpha; /* R's diagonal */
    }
    for (int j = 0; j < nrhs; ++j)
        for (int k = cols - 1; k >= 0; --k) {
            double s = S[(size_t)k * nrhs + j];
            for (int c = k + 1; c < cols; ++c) s -= P[(size_t)k * cols + c] * X[(size_t)c * nrhs + j];
            X[(size_t)k * nrhs + j] = s / P[(size_t)k * cols + k];
        }
    return 1;
}

tk_status tk_sh_to_tensor_map(tk_sh_basis basis, int legacy, int lmax, double *map)
{
    if (lmax < 2 || lmax % 2 || lmax > TK_SH_MAX_LMAX)
        return tk_set_error(TK_ERR_ARGUMENT, "lmax must be even and from 2 to %d, got %d", TK_SH_MAX_LMAX, lmax);
    const int k = (int)tk_sh_num_coeffs(lmax), rows = 4 * k + 20;
    double *P = malloc(sizeof(double) * (size_t)rows * k), *S = malloc(sizeof(double) * (size_t)rows * k);
    int *index = malloc(sizeof(int) * (size_t)lmax);
    tk_status status = TK_OK;
    if (!P || !S || !index) {
        status = tk_set_error(TK_ERR_MEMORY, "out of memory building the SH map");
        goto done;
    }
    /* Both sides at well-spread directions (a Fibonacci lattice): the monomials of degree
     * lmax weighted by their multiplicities, and the SH functions. */
    for (int i = 0; i < rows; ++i) {
        double z = 1.0 - (2.0 * i + 1.0) / rows, rho = sqrt(1.0 - z * z), ang = i * TK_PI * (3.0 - sqrt(5.0));
        double g[3] = {rho * cos(ang), rho * sin(ang), z};
        if ((status = tk_sh_eval(basis, legacy, lmax, g, S + (size_t)i * k)) != TK_OK) goto done;
        tk_sym_index_first(lmax, index);
        int u = 0;
        do {
            double v = tk_sym_multiplicity(lmax, index);
            for (int q = 0; q < lmax; ++q) v *= g[index[q]];
            P[(size_t)i * k + u++] = v;
        } while (tk_sym_index_next(lmax, 3, index));
    }
    if (!least_squares(rows, k, k, P, S, map)) {
        status = tk_set_error(TK_ERR_DATA, "the SH-to-tensor system is singular (lmax %d)", lmax);
        goto done;
    }
    {
        /* The entries that are zero in exact arithmetic, made exactly zero: most of the map (79%
         * at lmax 8), because a basis function and a monomial x^a y^b z^c meet only where their
         * parities in x, y and z agree.  The fit leaves them at rounding's size (at most 9e-15
         * of the largest entry at lmax <= 16) where the smallest true entry is 5.6e-6 of it:
         * a cut at 1e-10 has four orders of magnitude on either side.  Exact zeros let a
         * product skip them and still give the dense product's sums to the bit (the tracker's
         * SH-to-tensor product, tracking_tensor.h). */
        const size_t n = (size_t)k * k;
        double big = 0;
        for (size_t i = 0; i < n; ++i) big = fabs(map[i]) > big ? fabs(map[i]) : big;
        for (size_t i = 0; i < n; ++i)
            if (fabs(map[i]) <= 1e-10 * big) map[i] = 0.0;
    }
done:
    free(P);
    free(S);
    free(index);
    return status;
}
