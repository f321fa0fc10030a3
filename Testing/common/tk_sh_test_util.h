// Test helper: the SH coefficients of a function on the sphere, by least squares on a
// Fibonacci lattice (exact for functions inside the span, such as sums of w (v.x)^lmax).
#pragma once

#include <cmath>
#include <functional>
#include <vector>

#include "tk_fibers.h"

namespace tk_test {

inline std::vector<double> fit_sh(int lmax, tk_sh_basis basis, int legacy,
                                  const std::function<double(const double *)> &f)
{
    const int k = (int)tk_sh_num_coeffs(lmax), rows = 8 * k + 40;
    std::vector<double> ata((size_t)k * k, 0), atb(k, 0), y(k);
    for (int r = 0; r < rows; ++r) {
        double z = 1 - (2.0 * r + 1) / rows, rho = std::sqrt(1 - z * z), a = r * 2.399963229728653;
        double g[3] = {rho * std::cos(a), rho * std::sin(a), z};
        tk_sh_eval(basis, legacy, lmax, g, y.data());
        double v = f(g);
        for (int i = 0; i < k; ++i) {
            atb[i] += y[i] * v;
            for (int j = 0; j < k; ++j) ata[(size_t)i * k + j] += y[i] * y[j];
        }
    }
    // normal equations by Gaussian elimination with partial pivoting
    for (int c = 0; c < k; ++c) {
        int piv = c;
        for (int r = c + 1; r < k; ++r)
            if (std::fabs(ata[(size_t)r * k + c]) > std::fabs(ata[(size_t)piv * k + c])) piv = r;
        for (int j = 0; j < k; ++j) std::swap(ata[(size_t)c * k + j], ata[(size_t)piv * k + j]);
        std::swap(atb[c], atb[piv]);
        for (int r = c + 1; r < k; ++r) {
            double m = ata[(size_t)r * k + c] / ata[(size_t)c * k + c];
            for (int j = c; j < k; ++j) ata[(size_t)r * k + j] -= m * ata[(size_t)c * k + j];
            atb[r] -= m * atb[c];
        }
    }
    std::vector<double> x(k);
    for (int r = k - 1; r >= 0; --r) {
        double s = atb[r];
        for (int j = r + 1; j < k; ++j) s -= ata[(size_t)r * k + j] * x[j];
        x[r] = s / ata[(size_t)r * k + r];
    }
    return x;
}

// Sum of fibers: f(x) = sum_q w_q (v_q . x)^lmax, v_q unit vectors.
inline std::vector<double> sh_of_fibers(int lmax, tk_sh_basis basis, int legacy,
                                        const std::vector<std::vector<double>> &v, const std::vector<double> &w)
{
    return fit_sh(lmax, basis, legacy, [&](const double *g) {
        double s = 0;
        for (size_t q = 0; q < v.size(); ++q) s += w[q] * std::pow(v[q][0] * g[0] + v[q][1] * g[1] + v[q][2] * g[2], lmax);
        return s;
    });
}

}  // namespace tk_test
