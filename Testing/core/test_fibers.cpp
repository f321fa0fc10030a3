// SH bases against DIPY's values, the SH-to-tensor map, and the peak finder against a dense search.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "tk_bench_hooks.h"
#include "tk_fibers.h"
#include "tk_npy.h"
#include "tk_sshopm.h"
#include "tk_sh_test_util.h"
#include "tk_test_util.h"

using namespace tk_test;

namespace {

const double kPi = 3.14159265358979323846;

std::vector<double> fib_dirs(int n, bool hemisphere)
{
    std::vector<double> d;
    int total = hemisphere ? 2 * n : n;
    for (int i = 0; i < n; ++i) {
        double z = 1.0 - (2.0 * i + 1.0) / total, rho = std::sqrt(1 - z * z), a = i * kPi * (3 - std::sqrt(5.0));
        d.insert(d.end(), {rho * std::cos(a), rho * std::sin(a), z});
    }
    return d;
}

double sh_value(int lmax, tk_sh_basis b, int legacy, const std::vector<double> &c, const double *dir)
{
    std::vector<double> y(c.size());
    EXPECT_EQ(tk_sh_eval(b, legacy, lmax, dir, y.data()), TK_OK);
    double s = 0;
    for (size_t j = 0; j < c.size(); ++j) s += c[j] * y[j];
    return s;
}

double angle_deg(const double *a, const double *b)
{
    double d = std::fabs(a[0] * b[0] + a[1] * b[1] + a[2] * b[2]);
    return std::acos(std::min(1.0, d)) * 180 / kPi;
}

// Independent refinement for the dense oracle: gradient ascent on the SH series itself,
// finite-difference derivatives in the tangent plane, Armijo backtracking.  Returns 1 and
// the converged direction if it reaches a point with zero gradient and a negative
// definite finite-difference Hessian (a strict local maximum).
int refine_by_ascent(int lmax, const std::vector<double> &c, double *x, double *value)
{
    auto f = [&](const double *p) { return sh_value(lmax, TK_SH_TOURNIER, 0, c, p); };
    auto along = [&](const double *p, const double *u, const double *w, double a, double b, double *out) {
        for (int i = 0; i < 3; ++i) out[i] = p[i] + a * u[i] + b * w[i];
        double n = std::sqrt(out[0] * out[0] + out[1] * out[1] + out[2] * out[2]);
        for (int i = 0; i < 3; ++i) out[i] /= n;
    };
    const double h = 1e-5;
    double step = 0.05, fx = f(x);
    for (int it = 0; it < 20000; ++it) {
        double u[3], w[3], a[3] = {1, 0, 0};
        if (std::fabs(x[0]) > 0.6) a[0] = 0, a[1] = 1;
        double d = a[0] * x[0] + a[1] * x[1] + a[2] * x[2];
        for (int i = 0; i < 3; ++i) u[i] = a[i] - d * x[i];
        double nu = std::sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);
        for (double &e : u) e /= nu;
        w[0] = x[1] * u[2] - x[2] * u[1], w[1] = x[2] * u[0] - x[0] * u[2], w[2] = x[0] * u[1] - x[1] * u[0];
        double p1[3], p2[3];
        along(x, u, w, h, 0, p1), along(x, u, w, -h, 0, p2);
        double gu = (f(p1) - f(p2)) / (2 * h);
        along(x, u, w, 0, h, p1), along(x, u, w, 0, -h, p2);
        double gw = (f(p1) - f(p2)) / (2 * h), gn = std::sqrt(gu * gu + gw * gw);
        if (gn < 1e-8) {
            double huu, hww, huw, q[4][3];
            along(x, u, w, 1e-3, 0, p1), along(x, u, w, -1e-3, 0, p2);
            huu = (f(p1) - 2 * fx + f(p2)) / 1e-6;
            along(x, u, w, 0, 1e-3, p1), along(x, u, w, 0, -1e-3, p2);
            hww = (f(p1) - 2 * fx + f(p2)) / 1e-6;
            along(x, u, w, 1e-3, 1e-3, q[0]), along(x, u, w, 1e-3, -1e-3, q[1]);
            along(x, u, w, -1e-3, 1e-3, q[2]), along(x, u, w, -1e-3, -1e-3, q[3]);
            huw = (f(q[0]) - f(q[1]) - f(q[2]) + f(q[3])) / 4e-6;
            *value = fx;
            return huu < 0 && huu * hww - huw * huw > 0;
        }
        for (;;) {  // Armijo backtracking along the gradient
            double y[3];
            along(x, u, w, step * gu / gn, step * gw / gn, y);
            double fy = f(y);
            if (fy >= fx + 1e-4 * step * gn) {
                x[0] = y[0], x[1] = y[1], x[2] = y[2], fx = fy;
                step = std::min(0.05, step * 2);
                break;
            }
            step *= 0.5;
            if (step < 1e-14) {
                *value = fx;
                return 0;
            }
        }
    }
    *value = fx;
    return 0;
}

// Dense oracle: 20,000 hemisphere directions (1 degree spacing), discrete maxima over
// neighbours within 1.5 spacings (antipodes folded in), each refined by refine_by_ascent:
// the strict maxima of a series that such a search reaches.
struct DenseOracle {
    struct Maximum {
        double x[3], value;
    };
    static constexpr int n = 20000;
    std::vector<double> dirs = fib_dirs(n, true);
    std::vector<std::vector<int>> neighbours = std::vector<std::vector<int>>(n);

    DenseOracle()
    {
        const double cos_r = std::cos(1.5 * std::sqrt(2 * kPi / n));
        for (int i = 0; i < n; ++i)
            for (int j = i + 1; j < n; ++j)
                if (std::fabs(dirs[i * 3] * dirs[j * 3] + dirs[i * 3 + 1] * dirs[j * 3 + 1] +
                              dirs[i * 3 + 2] * dirs[j * 3 + 2]) >= cos_r)
                    neighbours[i].push_back(j), neighbours[j].push_back(i);
    }

    std::vector<Maximum> maxima(int lmax, const std::vector<double> &c) const
    {
        std::vector<double> f(n);
        for (int i = 0; i < n; ++i) f[i] = sh_value(lmax, TK_SH_TOURNIER, 0, c, &dirs[i * 3]);
        std::vector<Maximum> found;
        for (int i = 0; i < n; ++i) {
            bool is_max = true;
            for (int j : neighbours[i]) is_max = is_max && f[j] <= f[i];
            Maximum m = {{dirs[i * 3], dirs[i * 3 + 1], dirs[i * 3 + 2]}, 0};
            // a grid artefact on a ridge, not a maximum, where the ascent finds none
            if (is_max && refine_by_ascent(lmax, c, m.x, &m.value)) found.push_back(m);
        }
        return found;
    }
};

}  // namespace

TEST(ShBasis, CountsAndLmax)
{
    EXPECT_EQ(tk_sh_num_coeffs(8), 45u);
    EXPECT_EQ(tk_sh_num_coeffs(12), 91u);
    EXPECT_EQ(tk_sh_num_coeffs(3), 0u);
    EXPECT_EQ(tk_sh_lmax_for_count(28), 6);
    EXPECT_EQ(tk_sh_lmax_for_count(29), -1);
}

TEST(ShBasis, MatchesDipyForEveryConvention)
{
    tk_npy_array dirs, values;
    ASSERT_EQ(tk_npy_read(TK_TEST_DATA "/sh_reference_dirs.npy", &dirs), TK_OK) << tk_last_error();
    ASSERT_EQ(tk_npy_read(TK_TEST_DATA "/sh_reference_values.npy", &values), TK_OK) << tk_last_error();
    ASSERT_EQ(values.shape[2], 45u);
    const struct {
        tk_sh_basis basis;
        int legacy;
    } conventions[4] = {{TK_SH_TOURNIER, 0}, {TK_SH_TOURNIER, 1}, {TK_SH_DESCOTEAUX, 0}, {TK_SH_DESCOTEAUX, 1}};
    for (int c = 0; c < 4; ++c)
        for (size_t d = 0; d < dirs.shape[0]; ++d) {
            double y[45];
            ASSERT_EQ(tk_sh_eval(conventions[c].basis, conventions[c].legacy, 8, (double *)dirs.data + d * 3, y), TK_OK);
            for (int j = 0; j < 45; ++j)
                EXPECT_NEAR(y[j], ((double *)values.data)[(c * dirs.shape[0] + d) * 45 + j], 1e-12)
                    << "convention " << c << " direction " << d << " coefficient " << j;
        }
    tk_npy_free(&dirs);
    tk_npy_free(&values);
}

TEST(ShBasis, TensorMapReproducesTheSeriesEverywhere)
{
    std::mt19937_64 rng(3);
    std::normal_distribution<double> gauss;
    for (int lmax = 2; lmax <= 12; lmax += 2)
        for (auto b : {TK_SH_TOURNIER, TK_SH_DESCOTEAUX})
            for (int legacy : {0, 1}) {
                int k = (int)tk_sh_num_coeffs(lmax);
                std::vector<double> map((size_t)k * k), c(k), tensor(k);
                ASSERT_EQ(tk_sh_to_tensor_map(b, legacy, lmax, map.data()), TK_OK);
                for (auto &v : c) v = gauss(rng);
                for (int r = 0; r < k; ++r) {
                    tensor[r] = 0;
                    for (int j = 0; j < k; ++j) tensor[r] += map[(size_t)r * k + j] * c[j];
                }
                for (int t = 0; t < 50; ++t) {
                    auto x = random_unit(3, rng);
                    double sh = sh_value(lmax, b, legacy, c, x.data());
                    EXPECT_NEAR(tk_sym_axm_d(lmax, 3, tensor.data(), x.data()), sh, 1e-10 * (1 + std::fabs(sh)))
                        << "lmax " << lmax << " basis " << b << " legacy " << legacy;
                }
            }
}

// The map's zeros are exact, and they are the parity rule's: entry (monomial x^a y^b z^c, basis
// function j) is zero exactly where the function is not a combination of monomials with a's,
// b's and c's parities (read from the function's values at x mirrored: f(-x, y, z) = +-f).
TEST(ShBasis, TensorMapZerosAreExactAndThoseOfTheParities)
{
    for (int lmax = 2; lmax <= 16; lmax += 2)
        for (auto b : {TK_SH_TOURNIER, TK_SH_DESCOTEAUX})
            for (int legacy : {0, 1}) {
                const int k = (int)tk_sh_num_coeffs(lmax);
                std::vector<double> map((size_t)k * k), at(k), mirrored(k);
                ASSERT_EQ(tk_sh_to_tensor_map(b, legacy, lmax, map.data()), TK_OK);
                // each function's parity in x and in y from its values at a generic direction
                const double d[3] = {0.48, 0.36, 0.8};
                std::vector<int> odd_x(k), odd_y(k);
                ASSERT_EQ(tk_sh_eval(b, legacy, lmax, d, at.data()), TK_OK);
                for (int axis = 0; axis < 2; ++axis) {
                    double m[3] = {d[0], d[1], d[2]};
                    m[axis] = -m[axis];
                    ASSERT_EQ(tk_sh_eval(b, legacy, lmax, m, mirrored.data()), TK_OK);
                    for (int j = 0; j < k; ++j)
                        (axis ? odd_y : odd_x)[j] = std::fabs(mirrored[j] + at[j]) < std::fabs(mirrored[j] - at[j]);
                }
                // the packed entries' exponents, in tk_sym_index order
                std::vector<int> index(lmax);
                tk_sym_index_first(lmax, index.data());
                int r = 0, wrong = 0, zeros = 0;
                do {
                    int e[3] = {0, 0, 0};
                    for (int q = 0; q < lmax; ++q) ++e[index[q]];
                    for (int j = 0; j < k; ++j) {
                        const double v = map[(size_t)r * k + j];
                        const bool allowed = (e[0] % 2 == odd_x[j]) && (e[1] % 2 == odd_y[j]);
                        zeros += v == 0.0;
                        if (!allowed && v != 0.0) ++wrong;
                    }
                    ++r;
                } while (tk_sym_index_next(lmax, 3, index.data()));
                EXPECT_EQ(r, k);
                EXPECT_EQ(wrong, 0) << "lmax " << lmax << ": entries the parities forbid are not exactly zero";
                EXPECT_GT(zeros, k * k / 2) << "lmax " << lmax;
            }
}

TEST(Fibers, SingleFiberPeakIsExact)
{
    std::mt19937_64 rng(5);
    for (int lmax : {4, 6, 8})
        for (auto b : {TK_SH_TOURNIER, TK_SH_DESCOTEAUX}) {
            auto v = random_unit(3, rng);
            auto c = sh_of_fibers(lmax, b, 0, {v}, {1.0});
            double dirs[3 * 8], amps[8];
            int n = tk_fibers_all_maxima(lmax, b, 0, c.data(), 8, dirs, amps);
            ASSERT_GE(n, 1);
            EXPECT_LT(angle_deg(dirs, v.data()), 1e-6) << "lmax " << lmax;
            EXPECT_NEAR(amps[0], 1.0, 1e-9);
        }
}

TEST(Fibers, FindsEveryMaximumADenseSearchFinds)
{
    // Every strict maximum of the dense oracle, whatever its size or sign, must be among ours
    // (within 0.01 degrees), and each of ours must be a true maximum: an independent ascent
    // from it stays there.
    const int lmax = 8;
    const DenseOracle oracle;
    std::mt19937_64 rng(11);
    std::uniform_real_distribution<double> uni(0, 1);
    int checked = 0, total_dense = 0, total_small = 0;
    for (int voxel = 0; voxel < 40; ++voxel) {
        int fibers = 1 + voxel % 3;
        std::vector<std::vector<double>> v;
        std::vector<double> w;
        for (int f = 0; f < fibers; ++f) v.push_back(random_unit(3, rng)), w.push_back(0.3 + uni(rng));
        auto c = sh_of_fibers(lmax, TK_SH_TOURNIER, 0, v, w);
        for (auto &x : c) x += 0.02 * (uni(rng) - 0.5);  // noise: extra small lobes
        double dirs[3 * 64], amps[64];
        int n = all_maxima(lmax, TK_SH_TOURNIER, 0, c.data(), 64, dirs, amps);
        ASSERT_GE(n, 1);
        for (const auto &m : oracle.maxima(lmax, c)) {
            double best = 180;
            for (int p = 0; p < n; ++p) best = std::min(best, angle_deg(&dirs[p * 3], m.x));
            ++total_dense, total_small += m.value < 0.05 * amps[0];
            EXPECT_LT(best, 0.01) << "voxel " << voxel << ": maximum (amplitude " << m.value << ") at " << m.x[0] << ","
                                  << m.x[1] << "," << m.x[2] << " missed";
        }
        for (int p = 0; p < n; ++p) {
            EXPECT_NEAR(amps[p], sh_value(lmax, TK_SH_TOURNIER, 0, c, &dirs[p * 3]), 1e-9);
            // the independent ascent, started at our peak, must stay there and confirm a maximum
            double x[3] = {dirs[p * 3], dirs[p * 3 + 1], dirs[p * 3 + 2]}, value = 0;
            EXPECT_TRUE(refine_by_ascent(lmax, c, x, &value)) << "voxel " << voxel << " peak " << p;
            EXPECT_LT(angle_deg(x, &dirs[p * 3]), 1e-3) << "voxel " << voxel << " peak " << p;
            ++checked;
        }
    }
    EXPECT_GT(total_dense, 40);
    EXPECT_GE(checked, total_dense);
    printf("dense search: %d maxima, %d of them below 5%% of their voxel's largest, all found\n", total_dense,
           total_small);
}

TEST(Fibers, OptionsSelectSortAndFillWithNan)
{
    // fibers of weights 1, 0.6, 0.3: along z, 60 degrees from z in the xz-plane, and along y
    const int lmax = 8;
    std::vector<std::vector<double>> v = {{0, 0, 1}, {std::sin(kPi / 3), 0, std::cos(kPi / 3)}, {0, 1, 0}};
    auto c = sh_of_fibers(lmax, TK_SH_TOURNIER, 0, v, {1.0, 0.6, 0.3});
    std::vector<float> cf(c.begin(), c.end()), dirs(3 * 4), amps(4);
    double all_dirs[3 * 8], all_amps[8];
    int n = tk_fibers_all_maxima(lmax, TK_SH_TOURNIER, 0, c.data(), 8, all_dirs, all_amps);
    ASSERT_EQ(n, 3);
    tk_fibers_options o;
    tk_fibers_options_init(&o, lmax);
    o.num_peaks = 4;
    ASSERT_EQ(tk_fibers_find(&o, 1, cf.data(), nullptr, dirs.data(), amps.data(), nullptr), TK_OK);
    for (int p = 0; p < 3; ++p) EXPECT_NEAR(amps[p], all_amps[p], 1e-5);
    EXPECT_TRUE(std::isnan(amps[3]) && std::isnan(dirs[9]));
    o.relative_threshold = 0.5;  // drops the 0.3 fiber's peak (relative to the largest)
    ASSERT_EQ(tk_fibers_find(&o, 1, cf.data(), nullptr, dirs.data(), amps.data(), nullptr), TK_OK);
    EXPECT_FALSE(std::isnan(amps[1]));
    EXPECT_TRUE(std::isnan(amps[2]));
    o.relative_threshold = 0;
    o.min_separation_deg = 70;  // the 60-degree fiber's peak goes, the orthogonal one stays
    ASSERT_EQ(tk_fibers_find(&o, 1, cf.data(), nullptr, dirs.data(), amps.data(), nullptr), TK_OK);
    EXPECT_NEAR(amps[1], all_amps[2], 1e-5);
    EXPECT_TRUE(std::isnan(amps[2]));
    o.min_separation_deg = 0;
    o.threshold = all_amps[1] + 1e-3;  // absolute
    ASSERT_EQ(tk_fibers_find(&o, 1, cf.data(), nullptr, dirs.data(), amps.data(), nullptr), TK_OK);
    EXPECT_TRUE(std::isnan(amps[1]));
    // mask and non-finite voxels
    std::vector<float> two(cf);
    two.insert(two.end(), cf.begin(), cf.end());
    two[45 + 3] = NAN;
    std::vector<float> d2(2 * 12), a2(2 * 4);
    uint8_t mask[2] = {0, 1};
    size_t bad = 0;
    o.threshold = 0;
    ASSERT_EQ(tk_fibers_find(&o, 2, two.data(), mask, d2.data(), a2.data(), &bad), TK_OK);
    EXPECT_TRUE(std::isnan(a2[0]));
    EXPECT_TRUE(std::isnan(a2[4]));
    EXPECT_EQ(bad, 1u);
    // backends agree
    o.backend = TK_BACKEND_OMP;
    o.num_threads = 2;
    std::vector<float> d3(12), a3(4);
    ASSERT_EQ(tk_fibers_find(&o, 1, cf.data(), nullptr, d3.data(), a3.data(), nullptr), TK_OK);
    o.backend = TK_BACKEND_CPU;
    ASSERT_EQ(tk_fibers_find(&o, 1, cf.data(), nullptr, dirs.data(), amps.data(), nullptr), TK_OK);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(a3[i], amps[i]);
}

namespace {

// The Newton work of one call (tk_bench_hooks.h).
tk_fibers_work find_timed(tk_fibers_options o, const std::vector<float> &sh, std::vector<float> &dirs,
                          std::vector<float> &amps)
{
    const size_t voxels = sh.size() / tk_sh_num_coeffs(o.lmax);
    dirs.assign(voxels * o.num_peaks * 3, 0.f);
    amps.assign(voxels * o.num_peaks, 0.f);
    tk_timing t;
    tk_fibers_work work;
    EXPECT_EQ(tk_fibers_find_counted(&o, voxels, sh.data(), nullptr, dirs.data(), amps.data(), nullptr, &t, &work),
              TK_OK)
        << tk_last_error();
    return work;
}

}  // namespace

TEST(Fibers, ConstantZeroNanAndDenormalVoxelsCostNoNewton)
{
    // A whole-brain FOD is exactly zero outside the mask; isotropic compartments are constant
    // on the sphere; resampling leaves denormal residue.  None has a maximum, and each costs
    // at most its grid pass: no candidate is polished (this once cost ~140 ms per zero voxel).
    const int lmax = 8, k = 45;
    std::vector<float> sh(5 * k, 0.f);
    sh[1 * k] = 3.f;                                             // constant (l = 0 only)
    sh[2 * k] = -2.f;                                            // constant, negative
    for (int j = 1; j < k; ++j) sh[3 * k + j] = (j % 2 ? 1 : -1) * 1e-40f;  // denormal residue
    sh[4 * k + 7] = NAN;
    tk_fibers_options o;
    tk_fibers_options_init(&o, lmax);
    o.threshold = -INFINITY;  // not even a negative peak
    for (auto backend : {TK_BACKEND_CPU, TK_BACKEND_OMP}) {
        o.backend = backend;
        std::vector<float> dirs, amps;
        tk_fibers_work t = find_timed(o, sh, dirs, amps);
        EXPECT_EQ(t.polished, 0u);
        EXPECT_EQ(t.newton_iterations, 0u);
        for (float a : amps) EXPECT_TRUE(std::isnan(a));
        for (float d : dirs) EXPECT_TRUE(std::isnan(d));
    }
}

TEST(Fibers, NewtonWorkIsBoundedOnNoiseFreeLobes)
{
    // One noise-free fiber is axially symmetric: its lmax-truncated side lobes are rings of
    // equal maxima, dozens of grid candidates each, none a strict maximum.  The axial test
    // answers such a voxel with its axis and no climb at all.  Perturbed just past that
    // test's tolerance the rings are nearly flat and the general search climbs them: each
    // climb must end within a few iterations (it once crawled on for its whole budget: ~1,200
    // Newton iterations a voxel, 24 a candidate), and the fiber itself must be exact.  Three
    // peaks are asked for, so that the rings' candidates are not cut off by the count.
    const int lmax = 8;
    for (double noise : {0.0, 1e-6}) {
        std::mt19937_64 rng(17);
        std::normal_distribution<double> gauss(0, 1);
        std::vector<float> sh;
        std::vector<std::vector<double>> truth;
        for (int v = 0; v < 50; ++v) {
            truth.push_back(random_unit(3, rng));
            auto c = sh_of_fibers(lmax, TK_SH_TOURNIER, 0, {truth.back()}, {1.0});
            double big = 0;
            for (double x : c) big = std::max(big, std::fabs(x));
            for (double &x : c) x += noise * big * gauss(rng);
            sh.insert(sh.end(), c.begin(), c.end());
        }
        tk_fibers_options o;
        tk_fibers_options_init(&o, lmax);
        o.num_peaks = 3;
        std::vector<float> dirs, amps;
        tk_fibers_work t = find_timed(o, sh, dirs, amps);
        if (noise == 0) {
            EXPECT_EQ(t.polished, 0u) << "the axial test answers every symmetric voxel";
        } else {
            // nearly flat rings: climbs end within half their budget of 24 on average (12 here,
            // as before the axial test)
            ASSERT_GT(t.polished, 0u);
            EXPECT_LE((double)t.newton_iterations / (double)t.polished, 16.0);
            EXPECT_LE(t.most_iterations, 1200u);
        }
        for (int v = 0; v < 50; ++v) {
            double d[3] = {dirs[v * 9], dirs[v * 9 + 1], dirs[v * 9 + 2]};
            const double norm = std::sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]); // float's unit length is 1 +- 1e-7
            for (double &e : d) e /= norm;
            EXPECT_LT(angle_deg(d, truth[v].data()), noise == 0 ? 1e-4 : 1e-2) << "voxel " << v << ", noise " << noise;
        }
    }
}

namespace {

// Legendre polynomial P_l(t) by its recurrence.
double legendre(int l, double t)
{
    double p0 = 1, p1 = t;
    if (l == 0) return 1;
    for (int n = 2; n <= l; ++n) {
        const double p2 = ((2 * n - 1) * t * p1 - (n - 1) * p0) / n;
        p0 = p1, p1 = p2;
    }
    return p1;
}

}  // namespace

TEST(Fibers, AxiallySymmetricSeriesAreAnsweredByTheirAxis)
{
    // f(x) = sum_l b_l P_l(u . x), random profiles b and axes u, in every basis and variant:
    // its only isolated maximum is u (with -u, the same fiber), and only where the profile
    // curves down there (f''(0) = -sum_l b_l l (l + 1) / 2 < 0); every other critical point
    // lies on a ring of equal values.  The finder answers with u alone, at f(u), or with
    // nothing, and climbs nowhere (the general search missed some of these poles where the
    // profile dips around them before it rises: a crater with a peak in its middle).
    std::mt19937_64 rng(41);
    std::uniform_real_distribution<double> uni(-1, 1);
    int with_max = 0, without = 0;
    for (int lmax : {2, 4, 8, 12, 16})
        for (auto b : {TK_SH_TOURNIER, TK_SH_DESCOTEAUX})
            for (int legacy : {0, 1})
                for (int trial = 0; trial < 6; ++trial) {
                    const auto u = random_unit(3, rng);
                    std::vector<double> prof(lmax / 2 + 1);
                    for (double &x : prof) x = uni(rng);
                    double curvature = 0, at_pole = 0;
                    for (int l = 0; l <= lmax; l += 2) curvature += prof[l / 2] * l * (l + 1) / 2.0, at_pole += prof[l / 2];
                    if (std::fabs(curvature) < 0.05) continue; // too flat a pole to call
                    const auto c = fit_sh(lmax, b, legacy, [&](const double *g) {
                        double s = 0;
                        for (int l = 0; l <= lmax; l += 2) s += prof[l / 2] * legendre(l, u[0] * g[0] + u[1] * g[1] + u[2] * g[2]);
                        return s;
                    });
                    double dirs[3 * 8], amps[8];
                    const int n = all_maxima(lmax, b, legacy, c.data(), 8, dirs, amps);
                    const std::string where = "lmax " + std::to_string(lmax) + ", basis " + std::to_string(b) + ", legacy " +
                                              std::to_string(legacy) + ", trial " + std::to_string(trial);
                    if (curvature > 0) {
                        ASSERT_EQ(n, 1) << where;
                        EXPECT_LT(angle_deg(dirs, u.data()), 1e-5) << where;
                        EXPECT_NEAR(amps[0], at_pole, 1e-9 * (1 + std::fabs(at_pole))) << where;
                        ++with_max;
                    } else {
                        EXPECT_EQ(n, 0) << where;
                        ++without;
                    }
                    // and through tk_fibers_find: no candidate polished
                    std::vector<float> sh(c.begin(), c.end()), d, a;
                    tk_fibers_options o;
                    tk_fibers_options_init(&o, lmax);
                    o.basis = b, o.legacy = legacy, o.threshold = -INFINITY;
                    const tk_fibers_work t = find_timed(o, sh, d, a);
                    EXPECT_EQ(t.polished, 0u) << where;
                    EXPECT_EQ(std::isfinite(a[0]), curvature > 0) << where;
                }
    EXPECT_GT(with_max, 20);
    EXPECT_GT(without, 20);
}

TEST(Fibers, NearlySymmetricSeriesTakeTheGeneralSearch)
{
    // Two fibers 10 degrees apart merge into one lobe that is nearly, not exactly, symmetric
    // (its asymmetry is far above the axial test's tolerance): the general search decides.
    // Its answer is the lobe's top: no direction of a dense grid lies higher, and the
    // function falls from it every way (finite differences, independent of our derivatives).
    std::mt19937_64 rng(43);
    const int lmax = 8;
    const std::vector<double> dense = fib_dirs(20000, true);
    for (int trial = 0; trial < 3; ++trial) {
        const auto u = random_unit(3, rng);
        auto w = random_unit(3, rng);
        double d = u[0] * w[0] + u[1] * w[1] + u[2] * w[2];
        for (int i = 0; i < 3; ++i) w[i] -= d * u[i];
        const double n = std::sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2]), a = 10 * kPi / 180;
        std::vector<double> v(3);
        for (int i = 0; i < 3; ++i) v[i] = std::cos(a) * u[i] + std::sin(a) * w[i] / n;
        const auto c = sh_of_fibers(lmax, TK_SH_TOURNIER, 0, {u, v}, {1.0, 0.7});
        std::vector<float> sh(c.begin(), c.end()), dirs, amps;
        tk_fibers_options o;
        tk_fibers_options_init(&o, lmax);
        o.num_peaks = 1;
        const tk_fibers_work t = find_timed(o, sh, dirs, amps);
        EXPECT_GT(t.polished, 0u) << "trial " << trial;
        const double norm = std::sqrt((double)dirs[0] * dirs[0] + (double)dirs[1] * dirs[1] + (double)dirs[2] * dirs[2]);
        const double x[3] = {dirs[0] / norm, dirs[1] / norm, dirs[2] / norm}, top = sh_value(lmax, TK_SH_TOURNIER, 0, c, x);
        double highest = -1e300;
        for (int i = 0; i < 20000; ++i) highest = std::max(highest, sh_value(lmax, TK_SH_TOURNIER, 0, c, &dense[i * 3]));
        EXPECT_GE(top, highest - 1e-9) << "trial " << trial;
        for (int e = 0; e < 8; ++e) { // every way down, 0.05 degrees off
            double y[3], q[3] = {std::cos(e * kPi / 4), std::sin(e * kPi / 4), 0.3};
            for (int i = 0; i < 3; ++i) y[i] = x[i] + 1e-3 * q[i];
            const double r = std::sqrt(y[0] * y[0] + y[1] * y[1] + y[2] * y[2]);
            for (double &z : y) z /= r;
            EXPECT_LT(sh_value(lmax, TK_SH_TOURNIER, 0, c, y), top) << "trial " << trial << ", way " << e;
        }
    }
}

TEST(Fibers, OutputEqualsTheFullSearchsSelection)
{
    // tk_fibers_find polishes only the candidates whose hill can still reach its output (the
    // count, the thresholds); the oracle is the full search (tk_fibers_all_maxima, every
    // maximum) followed by the documented selection, on real FODs and random series.
    tk_npy_array fod;
    ASSERT_EQ(tk_npy_read(TK_DATA_DIR "/fibers/small_101D_fod_sh.npy", &fod), TK_OK) << tk_last_error();
    struct Input {
        int lmax;
        std::vector<float> sh;
    };
    std::vector<Input> inputs(3);
    inputs[0].lmax = 8;
    const float *f = (const float *)fod.data;
    inputs[0].sh.assign(f, f + fod.count);
    tk_npy_free(&fod);
    std::mt19937_64 rng(47);
    std::normal_distribution<double> gauss(0, 1);
    for (int q : {1, 2}) {
        inputs[q].lmax = q == 1 ? 8 : 12;
        const size_t k = tk_sh_num_coeffs(inputs[q].lmax);
        for (size_t i = 0; i < 150 * k; ++i) inputs[q].sh.push_back((float)(gauss(rng) + (i % k == 0 ? 3.0 : 0.0)));
    }
    struct Opt {
        int num;
        double threshold, relative, separation;
    };
    const Opt opts[] = {{3, 0, 0, 0}, {3, -INFINITY, 0, 0}, {5, 0, 0.1, 0}, {2, 0.2, 0, 0}, {4, 0, 0, 25}, {1, 0, 0.5, 0}};
    for (const Input &in : inputs) {
        const int k = (int)tk_sh_num_coeffs(in.lmax);
        const size_t voxels = in.sh.size() / k;
        for (const Opt &op : opts) {
            tk_fibers_options o;
            tk_fibers_options_init(&o, in.lmax);
            o.num_peaks = op.num, o.threshold = op.threshold, o.relative_threshold = op.relative;
            o.min_separation_deg = op.separation;
            std::vector<float> dirs, amps;
            find_timed(o, in.sh, dirs, amps);
            const double cos_sep = std::cos(op.separation * kPi / 180);
            int mismatches = 0;
            for (size_t v = 0; v < voxels; ++v) {
                const std::vector<double> c(in.sh.begin() + v * k, in.sh.begin() + (v + 1) * k);
                double all_d[3 * 64], all_a[64];
                const int n = std::min(64, all_maxima(in.lmax, TK_SH_TOURNIER, 0, c.data(), 64, all_d, all_a));
                // the selection as tk_fibers.h documents it
                std::vector<int> kept;
                for (int m = 0; m < n && (int)kept.size() < op.num; ++m) {
                    if (!(all_a[m] > op.threshold)) continue;
                    if (op.relative > 0 && !(all_a[0] > 0 && all_a[m] >= op.relative * all_a[0])) continue;
                    bool close = false;
                    for (int q : kept)
                        close |= op.separation > 0 && std::fabs(all_d[q * 3] * all_d[m * 3] + all_d[q * 3 + 1] * all_d[m * 3 + 1] +
                                                                all_d[q * 3 + 2] * all_d[m * 3 + 2]) > cos_sep;
                    if (!close) kept.push_back(m);
                }
                for (int p = 0; p < op.num; ++p) {
                    const float *gd = &dirs[(v * op.num + p) * 3];
                    const float ga = amps[v * op.num + p];
                    bool same;
                    if (p < (int)kept.size()) {
                        const double norm = std::sqrt((double)gd[0] * gd[0] + (double)gd[1] * gd[1] + (double)gd[2] * gd[2]);
                        const double g[3] = {gd[0] / norm, gd[1] / norm, gd[2] / norm};
                        same = std::isfinite(ga) && angle_deg(g, &all_d[kept[p] * 3]) < 1e-4 &&
                               std::fabs(ga - all_a[kept[p]]) <= 1e-5 * (1 + std::fabs(all_a[kept[p]]));
                    } else {
                        same = std::isnan(ga) && std::isnan(gd[0]);
                    }
                    mismatches += !same;
                }
            }
            EXPECT_EQ(mismatches, 0) << "lmax " << in.lmax << ", --num " << op.num << ", threshold " << op.threshold
                                     << ", relative " << op.relative << ", separation " << op.separation;
        }
    }
}

TEST(Fibers, FindsTheMaximaAnEarlierFinderMissed)
{
    // Voxels whose maxima an earlier finder missed (Testing/data/make_fibers_hard_maxima.py):
    // flat bumps on slopes, where the Hessian at the nearest grid direction is indefinite; a
    // bump across a saddle from a grid maximum whose climb left for a larger lobe; an
    // elongated maximum whose Levenberg-Marquardt climb crawled until its budget ran out;
    // bundled and random voxels where it reported fewer maxima than now.  The oracle: the
    // dense search, and an independent ascent from each direction sh2peaks reports there;
    // every strict maximum either reaches must be ours, whatever its size or sign.
    tk_npy_array sh, starts;
    ASSERT_EQ(tk_npy_read(TK_TEST_DATA "/fibers_hard_maxima_sh.npy", &sh), TK_OK) << tk_last_error();
    ASSERT_EQ(tk_npy_read(TK_TEST_DATA "/fibers_hard_maxima_starts.npy", &starts), TK_OK) << tk_last_error();
    ASSERT_EQ(sh.dtype, TK_NPY_FLOAT64);
    ASSERT_EQ(starts.dtype, TK_NPY_FLOAT64);
    const size_t voxels = sh.shape[0], per = starts.shape[1];
    ASSERT_EQ(starts.shape[0], voxels);
    const int lmax = 8;
    const DenseOracle oracle;
    int total = 0;
    for (size_t v = 0; v < voxels; ++v) {
        const std::vector<double> c((const double *)sh.data + v * 45, (const double *)sh.data + v * 45 + 45);
        double dirs[3 * 64], amps[64];
        const int n = std::min(64, all_maxima(lmax, TK_SH_TOURNIER, 0, c.data(), 64, dirs, amps));
        std::vector<DenseOracle::Maximum> truth = oracle.maxima(lmax, c);
        for (size_t q = 0; q < per; ++q) {
            const double *d = (const double *)starts.data + (v * per + q) * 3;
            DenseOracle::Maximum m = {{d[0], d[1], d[2]}, 0};
            if (std::isfinite(d[0]) && refine_by_ascent(lmax, c, m.x, &m.value)) truth.push_back(m);
        }
        for (const auto &m : truth) {
            double best = 180;
            for (int p = 0; p < n; ++p) best = std::min(best, angle_deg(&dirs[p * 3], m.x));
            EXPECT_LT(best, 0.01) << "voxel " << v << ": maximum (amplitude " << m.value << ") at " << m.x[0] << ", "
                                  << m.x[1] << ", " << m.x[2] << " missed";
            ++total;
        }
    }
    EXPECT_GT(total, 150);
    tk_npy_free(&sh);
    tk_npy_free(&starts);
}

TEST(FibersPlan, CoveringRadiusIsWithinItsBound)
{
    // The finder's value margin (tk_fibers_value_margin) assumes that no direction lies
    // farther than 0.9 grid spacings from the nearest grid direction or its antipode
    // (TK_FIBERS_COVER).  The grid: the upper half of a 2g-point Fibonacci lattice, g =
    // max(24 lmax^2, 200); sampled densely, with each sample's worst neighbourhood refined.
    std::mt19937_64 rng(53);
    std::normal_distribution<double> gauss(0, 1);
    for (int lmax = 2; lmax <= 16; lmax += 2) {
        const int g = std::max(24 * lmax * lmax, 200);
        const std::vector<double> grid = fib_dirs(g, true);
        const double spacing = std::sqrt(2 * kPi / g);
        // the lattice's z falls with its index, z_i = 1 - (2i + 1) / 2g: only a band of it
        // (and of the antipodes) can hold a direction's nearest grid point
        auto nearest = [&](const double *x) {
            double best = 0;
            for (double z : {x[2], -x[2]}) {
                const double lo = (1 - (z + 2 * spacing)) * g - 0.5, hi = (1 - (z - 2 * spacing)) * g - 0.5;
                for (int i = std::max(0, (int)lo - 1); i < std::min(g, (int)hi + 2); ++i)
                    best = std::max(best, std::fabs(x[0] * grid[i * 3] + x[1] * grid[i * 3 + 1] + x[2] * grid[i * 3 + 2]));
            }
            return std::acos(std::min(1.0, best));
        };
        double worst = 0;
        for (int s = 0; s < 1500; ++s) {
            double x[3] = {gauss(rng), gauss(rng), gauss(rng)};
            double r = std::sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2]);
            for (double &e : x) e /= r;
            double d = nearest(x);
            // climb away from the grid: random small moves that increase the distance
            for (double step = 0.3 * spacing; step > 1e-3 * spacing; step *= 0.7)
                for (int t = 0; t < 4; ++t) {
                    double y[3] = {x[0] + step * gauss(rng), x[1] + step * gauss(rng), x[2] + step * gauss(rng)};
                    r = std::sqrt(y[0] * y[0] + y[1] * y[1] + y[2] * y[2]);
                    for (double &e : y) e /= r;
                    const double dy = nearest(y);
                    if (dy > d) d = dy, x[0] = y[0], x[1] = y[1], x[2] = y[2];
                }
            worst = std::max(worst, d);
        }
        EXPECT_LE(worst, 0.9 * spacing) << "lmax " << lmax;
        EXPECT_GT(worst, 0.75 * spacing) << "lmax " << lmax << ": the search should find the holes";
    }
}

TEST(Fibers, ScaleAndIsotropicPartLeavePeaksAlone)
{
    // The peaks of c and of a c + b Y00 (a > 0) are the same directions, amplitudes a f + b:
    // whether the voxel is tiny, huge or dominated by an isotropic compartment.
    const int lmax = 8;
    std::mt19937_64 rng(23);
    std::uniform_real_distribution<double> uni(0, 1);
    for (int voxel = 0; voxel < 20; ++voxel) {
        std::vector<std::vector<double>> v;
        std::vector<double> w;
        for (int f = 0; f < 1 + voxel % 3; ++f) v.push_back(random_unit(3, rng)), w.push_back(0.3 + uni(rng));
        auto c = sh_of_fibers(lmax, TK_SH_TOURNIER, 0, v, w);
        for (auto &x : c) x += 0.01 * (uni(rng) - 0.5);
        double dirs[3 * 64], amps[64];
        const int n = all_maxima(lmax, TK_SH_TOURNIER, 0, c.data(), 64, dirs, amps);
        ASSERT_GE(n, 1);
        const struct {
            double a, b;
        } variants[] = {{1e-30, 0}, {1e30, 0}, {1e-3, 1e4}, {1, -50}};
        for (const auto &var : variants) {
            std::vector<double> c2(c);
            for (auto &x : c2) x *= var.a;
            c2[0] += var.b / 0.28209479177387814;
            double d2[3 * 64], a2[64];
            const int n2 = all_maxima(lmax, TK_SH_TOURNIER, 0, c2.data(), 64, d2, a2);
            ASSERT_EQ(n2, n) << "voxel " << voxel << " scale " << var.a << " offset " << var.b;
            for (int p = 0; p < n; ++p) {
                EXPECT_LT(angle_deg(&dirs[p * 3], &d2[p * 3]), 1e-5) << "voxel " << voxel << " peak " << p;
                EXPECT_NEAR(a2[p], var.a * amps[p] + var.b, 1e-9 * (std::fabs(var.a * amps[p]) + std::fabs(var.b)));
            }
        }
    }
}

TEST(Fibers, AnyThresholdNegativeIncludedIsHonoured)
{
    // sh2peaks reports negative lobes by default (no threshold); --threshold -inf does too,
    // and a negative threshold keeps exactly the maxima above it.  (Negative peaks were once
    // dropped whatever the threshold.)
    const int lmax = 8;
    std::mt19937_64 rng(29);
    std::uniform_real_distribution<double> uni(0, 1);
    int negative_seen = 0;
    for (int voxel = 0; voxel < 20; ++voxel) {
        auto c = sh_of_fibers(lmax, TK_SH_TOURNIER, 0, {random_unit(3, rng), random_unit(3, rng)}, {1.0, 0.7});
        for (auto &x : c) x += 0.05 * (uni(rng) - 0.5);
        c[0] -= 0.2 / 0.28209479177387814;  // lower the whole function: the small lobes go negative
        double all_d[3 * 64], all_a[64];
        const int n = std::min(64, all_maxima(lmax, TK_SH_TOURNIER, 0, c.data(), 64, all_d, all_a));
        std::vector<float> cf(c.begin(), c.end()), dirs, amps;
        tk_fibers_options o;
        tk_fibers_options_init(&o, lmax);
        o.num_peaks = 64;
        for (double threshold : {-(double)INFINITY, -0.02, 0.0}) {
            o.threshold = threshold;
            find_timed(o, cf, dirs, amps);
            int expect = 0;
            for (int p = 0; p < n; ++p) expect += all_a[p] > threshold;
            int got = 0;
            for (int p = 0; p < 64; ++p) got += !std::isnan(amps[p]);
            EXPECT_EQ(got, expect) << "voxel " << voxel << " threshold " << threshold;
            for (int p = 0; p < got; ++p) EXPECT_NEAR(amps[p], all_a[p], 1e-5);
            if (threshold < 0)
                for (int p = 0; p < got; ++p) negative_seen += amps[p] < 0;
        }
    }
    EXPECT_GT(negative_seen, 10);
}

TEST(Fibers, FindsEveryMaximumOfRealFodsADenseSearchFinds)
{
    // Real FODs: DIPY's small_64D through MRtrix3's dwi2fod and through DIPY's CSD, and DIPY's
    // small_101D (Data/fibers/make_small_64D_fods.py, make_small_101D_fod.py; voxels z-major,
    // x fastest).  Every maximum the dense search finds, whatever its size or sign, must be
    // found.  Voxel (4, 0, 9) of the first holds a strict maximum of amplitude 0.1753 (19% of
    // the voxel's largest) on a ridge that climbs on to a larger lobe: no grid direction near
    // it is above all its neighbours, and the finder once missed it (sh2peaks -threshold 0
    // finds it).  It and every 20th voxel with a function on it are checked.
    const int lmax = 8;
    const DenseOracle oracle;
    int total = 0;
    bool ridge_bump_found = false;
    for (const char *name : {"small_64D_fod_mrtrix_sh.npy", "small_64D_fod_dipy_sh.npy", "small_101D_fod_sh.npy"}) {
        tk_npy_array fod;
        ASSERT_EQ(tk_npy_read((std::string(TK_DATA_DIR "/fibers/") + name).c_str(), &fod), TK_OK) << tk_last_error();
        ASSERT_EQ(fod.shape[fod.ndim - 1], 45u);
        const size_t voxels = fod.count / 45, bump_voxel = std::string(name) == "small_64D_fod_mrtrix_sh.npy" ? 9 * 100 + 4 : voxels;
        // DIPY's own FOD is in its legacy descoteaux basis: the finder reads it so, the oracle in
        // MRtrix3's (the same function: coefficients mapped through the two bases' values)
        const bool dipy = std::string(name) == "small_64D_fod_dipy_sh.npy";
        std::vector<size_t> picked;
        if (bump_voxel < voxels) picked.push_back(bump_voxel);
        for (size_t v = 0; v < voxels; v += 20)
            if (v != bump_voxel && ((const float *)fod.data)[v * 45 + 1] != 0) picked.push_back(v);
        for (size_t v : picked) {
            std::vector<double> c((const float *)fod.data + v * 45, (const float *)fod.data + v * 45 + 45);
            if (dipy) c = fit_sh(lmax, TK_SH_TOURNIER, 0, [&](const double *g) { return sh_value(lmax, TK_SH_DESCOTEAUX, 1, c, g); });
            double dirs[3 * 64], amps[64];
            const int n = std::min(64, all_maxima(lmax, TK_SH_TOURNIER, 0, c.data(), 64, dirs, amps));
            ASSERT_GE(n, 1);
            for (const auto &m : oracle.maxima(lmax, c)) {
                double best = 180;
                for (int p = 0; p < n; ++p) best = std::min(best, angle_deg(&dirs[p * 3], m.x));
                EXPECT_LT(best, 0.01) << name << " voxel " << v << ": maximum (amplitude " << m.value << ") missed";
                ++total;
            }
            if (v == bump_voxel) {
                const double bump[3] = {-0.9528, 0.2373, 0.1894};
                for (int p = 0; p < n; ++p)
                    ridge_bump_found |= angle_deg(&dirs[p * 3], bump) < 0.05 && std::fabs(amps[p] - 0.1753) < 1e-3;
            }
        }
        tk_npy_free(&fod);
    }
    EXPECT_TRUE(ridge_bump_found);
    EXPECT_GT(total, 300);
}

TEST(FibersPlan, ReuseEqualsOneShotBitForBit)
{
    // A plan's tables and options serve any number of executes, of any size (larger than
    // max_voxels too), exactly as one-shot calls do.
    for (tk_backend b : {TK_BACKEND_CPU, TK_BACKEND_OMP})
        for (int lmax : {4, 8}) {
            tk_fibers_options o;
            tk_fibers_options_init(&o, lmax);
            o.backend = b;
            o.num_peaks = 5;
            o.relative_threshold = 0.1;
            ASSERT_EQ(expect_plan_reuse_equals_one_shot(o, 64), TK_OK) << tk_last_error();
        }
    tk_fibers_options o;
    tk_fibers_options_init(&o, 6);
    o.basis = TK_SH_DESCOTEAUX, o.legacy = 1, o.min_separation_deg = 25;
    ASSERT_EQ(expect_plan_reuse_equals_one_shot(o, 0), TK_OK) << tk_last_error();
    // every maximum through a plan, as through the one-shot call
    const std::vector<float> sh = fod_like_volume(6, o.basis, o.legacy, 20, 3);
    tk_fibers_plan *plan = nullptr;
    ASSERT_EQ(tk_fibers_plan_create(&o, 0, &plan), TK_OK) << tk_last_error();
    for (int v = 0; v < 20; ++v) {
        const std::vector<double> c(sh.begin() + v * 28, sh.begin() + (v + 1) * 28);
        double d1[3 * 16], a1[16], d2[3 * 16], a2[16];
        const int n1 = tk_fibers_plan_all_maxima(plan, c.data(), 16, d1, a1);
        ASSERT_EQ(n1, tk_fibers_all_maxima(6, o.basis, o.legacy, c.data(), 16, d2, a2));
        EXPECT_EQ(std::memcmp(d1, d2, sizeof(double) * 3 * std::min(n1, 16)), 0);
        EXPECT_EQ(std::memcmp(a1, a2, sizeof(double) * std::min(n1, 16)), 0);
    }
    const double zeros[28] = {};
    EXPECT_EQ(tk_fibers_plan_all_maxima(nullptr, zeros, 1, nullptr, nullptr), -1);
    tk_fibers_plan_destroy(plan);
}

TEST(FibersPlan, BadArgumentsGiveClearErrors)
{
    tk_fibers_options o;
    tk_fibers_options_init(&o, 8);
    tk_fibers_plan *plan = reinterpret_cast<tk_fibers_plan *>(&o);  // must come back NULL
    auto refused = [&](const tk_fibers_options *opts, const char *words) {
        plan = reinterpret_cast<tk_fibers_plan *>(&o);
        EXPECT_EQ(tk_fibers_plan_create(opts, 10, &plan), TK_ERR_ARGUMENT) << words;
        EXPECT_EQ(plan, nullptr);
        EXPECT_NE(std::string(tk_last_error()).find(words), std::string::npos) << tk_last_error();
    };
    refused(nullptr, "no options");
    tk_fibers_options bad = o;
    bad.lmax = 7;
    refused(&bad, "lmax must be even");
    bad = o, bad.num_peaks = 0;
    refused(&bad, "number of peaks");
    bad = o, bad.relative_threshold = 2;
    refused(&bad, "relative threshold");
    bad = o, bad.min_separation_deg = 91;
    refused(&bad, "minimum separation");
    bad = o, bad.threshold = NAN;
    refused(&bad, "threshold is NaN");
    bad = o, bad.basis = (tk_sh_basis)5;
    refused(&bad, "unknown SH basis");
    bad = o, bad.backend = TK_BACKEND_AUTO;
    refused(&bad, "unknown fiber backend");
    EXPECT_EQ(tk_fibers_plan_create(&o, 10, nullptr), TK_ERR_ARGUMENT);
    // executes: no plan, no data
    float out[9];
    EXPECT_EQ(tk_fibers_plan_execute(nullptr, 1, out, nullptr, out, nullptr, nullptr, nullptr), TK_ERR_ARGUMENT);
    EXPECT_NE(std::string(tk_last_error()).find("no plan"), std::string::npos);
    ASSERT_EQ(tk_fibers_plan_create(&o, 10, &plan), TK_OK) << tk_last_error();
    size_t bad_voxels = 5;
    EXPECT_EQ(tk_fibers_plan_execute(plan, 1, nullptr, nullptr, out, nullptr, &bad_voxels, nullptr), TK_ERR_ARGUMENT);
    EXPECT_NE(std::string(tk_last_error()).find("no SH data"), std::string::npos);
    // an empty volume is fine, and the plan still works after an error
    tk_timing t;
    EXPECT_EQ(tk_fibers_plan_execute(plan, 0, nullptr, nullptr, nullptr, nullptr, &bad_voxels, &t), TK_OK);
    EXPECT_EQ(bad_voxels, 0u);
    EXPECT_EQ(t.setup_ms, 0.0);
    tk_fibers_plan_destroy(plan);
    tk_fibers_plan_destroy(nullptr);
}
