// The fixels core against a brute-force FMLS written from MRtrix3's fmls.cpp as it stands
// (a vector of lobes with erasures, the adjacency from angles, the peaks from the fiber
// core's list of all maxima), and on synthetic FODs of known lobes.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "tk_bench_hooks.h"
#include "tk_fibers.h"
#include "tk_fixels.h"

namespace {

const double kPi = 3.14159265358979323846;
const int N = TK_FIXELS_DIRECTIONS;

struct Fixel {
    double afd, peak, mean[3], pdir[3];
};

// A direction set for the oracle: its directions, weights and neighbours by angle.  The
// 1281 tessellation's edges are 3.96 to 4.69 degrees long, the next nearest directions 6.9
// degrees and more away, so 5.5 degrees tells them apart; the 5121's are half as long (2.9).
struct Sphere {
    int n;
    const double *dirs, *wt;
    std::vector<std::vector<int>> adj;
};

const Sphere &sphere(int n)
{
    static std::map<int, Sphere> made;
    Sphere &s = made[n];
    if (s.adj.empty()) {
        s.n = n;
        EXPECT_EQ(tk_fixels_direction_set(n, &s.dirs, &s.wt), TK_OK);
        const double *d = s.dirs, c = std::cos((n == TK_FIXELS_DIRECTIONS ? 5.5 : 2.9) * kPi / 180);
        s.adj.resize(n);
        for (int i = 0; i < n; ++i)
            for (int j = 0; j < n; ++j)
                if (i != j && std::fabs(d[3 * i] * d[3 * j] + d[3 * i + 1] * d[3 * j + 1] + d[3 * i + 2] * d[3 * j + 2]) > c)
                    s.adj[i].push_back(j);
    }
    return s;
}

double dot(const double *a, const double *b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }

struct Lobe {
    std::vector<bool> mask;
    double max_peak, integral, mean[3];
    std::vector<std::array<double, 3>> peaks;
    bool neg;
};

// fmls.cpp's Segmenter::operator(), literally; the peak climb is replaced by "the nearest of
// all local maxima" (tk_fibers_all_maxima), a different search for the same point.
std::vector<Fixel> oracle(int lmax, const std::vector<double> &sh, double int_thr, double peak_thr, double merge,
                          int ndirs = TK_FIXELS_DIRECTIONS)
{
    std::vector<Fixel> out;
    if (!(sh[0] > 0)) return out;
    const Sphere &sp = sphere(ndirs);
    const int N = sp.n;
    const double *dirs = sp.dirs, *wt = sp.wt;
    const int k = (int)sh.size();
    std::vector<double> values(N), y(k);
    for (int d = 0; d < N; ++d) {
        tk_sh_eval(TK_SH_TOURNIER, 0, lmax, dirs + 3 * d, y.data());
        double v = 0;
        for (int c = 0; c < k; ++c) v += y[c] * sh[c];
        values[d] = v;
    }
    std::vector<std::pair<double, int>> order;
    for (int d = 0; d < N; ++d) order.push_back({values[d], d});
    std::stable_sort(order.begin(), order.end(),
                     [](const std::pair<double, int> &a, const std::pair<double, int> &b) { return std::fabs(a.first) > std::fabs(b.first); });
    if (order[0].first <= 0) return out;
    std::vector<Lobe> lobes;
    std::vector<std::pair<int, int>> retro;
    auto add = [&](Lobe &l, int d) {
        const double v = values[d];
        l.mask[d] = true;
        const double *u = dirs + 3 * d, m = dot(l.mean, u) > 0 ? 1 : -1;
        for (int i = 0; i < 3; ++i) l.mean[i] += u[i] * m * std::fabs(v) * wt[d];
        l.integral += std::fabs(v * wt[d]);
    };
    for (auto &it : order) {
        const int d = it.second;
        const double v = it.first;
        std::vector<int> adj;
        for (int l = 0; l < (int)lobes.size(); ++l) {
            if ((v <= 0) != lobes[l].neg) continue;
            bool a = false;
            for (int n : sp.adj[d]) a = a || lobes[l].mask[n];
            if (a) adj.push_back(l);
        }
        if (adj.empty()) {
            Lobe l;
            l.mask.assign(N, false);
            l.mask[d] = true;
            l.max_peak = std::fabs(v);
            l.integral = std::fabs(v * wt[d]);
            for (int i = 0; i < 3; ++i) l.mean[i] = dirs[3 * d + i] * std::fabs(v) * wt[d];
            l.peaks.push_back({dirs[3 * d], dirs[3 * d + 1], dirs[3 * d + 2]});
            l.neg = v <= 0;
            lobes.push_back(l);
        } else if (adj.size() == 1) {
            add(lobes[adj[0]], d);
        } else if (std::fabs(v) / lobes[adj.back()].max_peak > merge) {
            for (size_t j = 1; j < adj.size(); ++j) {
                Lobe &a = lobes[adj[0]], &b = lobes[adj[j]];
                for (int i = 0; i < N; ++i) a.mask[i] = a.mask[i] || b.mask[i];
                if (b.max_peak > a.max_peak) {
                    a.max_peak = b.max_peak;
                    a.peaks.insert(a.peaks.begin(), b.peaks.begin(), b.peaks.end());
                } else
                    a.peaks.insert(a.peaks.end(), b.peaks.begin(), b.peaks.end());
                const double m = dot(a.mean, b.mean) > 0 ? 1 : -1;
                for (int i = 0; i < 3; ++i) a.mean[i] += b.mean[i] * b.integral * m;
                a.integral += b.integral;
            }
            add(lobes[adj[0]], d);
            for (auto &r : retro) {
                bool mod = false;
                for (size_t j = 1; j < adj.size(); ++j)
                    if (r.second == adj[j]) r.second = adj[0], mod = true;
                if (!mod) {
                    int idx = r.second;
                    for (size_t j = adj.size() - 1; j; --j)
                        if (adj[j] < idx) --idx;
                    r.second = idx;
                }
            }
            for (size_t j = adj.size() - 1; j; --j) lobes.erase(lobes.begin() + adj[j]);
        } else {
            retro.push_back({d, adj[0]});
        }
    }
    for (auto &r : retro) add(lobes[r.second], r.first);
    std::vector<double> md(3 * 64), ma(64);
    const int nmax = tk_fibers_all_maxima(lmax, TK_SH_TOURNIER, 0, sh.data(), 64, md.data(), ma.data());
    for (auto &l : lobes) {
        if (l.neg || l.integral < int_thr) continue;
        for (size_t p = 0; p < l.peaks.size(); ++p) {
            int best = -1;
            double bd = 0;
            for (int m = 0; m < std::min(nmax, 64); ++m) {
                const double dp = std::fabs(dot(&md[3 * m], l.peaks[p].data()));
                if (dp > bd) bd = dp, best = m;
            }
            if (best < 0) continue;
            const double *x = &md[3 * best];
            size_t nearest = l.peaks.size();
            double mx = 0;
            for (size_t j = 0; j < l.peaks.size(); ++j) {
                const double dp = std::fabs(dot(x, l.peaks[j].data()));
                if (dp > mx) mx = dp, nearest = j;
            }
            if (nearest != p) continue;
            int cd = 0;
            double cb = -1;
            for (int d = 0; d < N; ++d) {
                const double dp = std::fabs(dot(x, dirs + 3 * d));
                if (dp > cb) cb = dp, cd = d;
            }
            if (!l.mask[cd]) continue;
            l.peaks[p] = {x[0], x[1], x[2]};
            if (p == 0) l.max_peak = ma[best];
        }
        if (l.max_peak < peak_thr) continue;
        Fixel f;
        f.afd = l.integral, f.peak = l.max_peak;
        const double n = std::sqrt(dot(l.mean, l.mean));
        for (int i = 0; i < 3; ++i) f.mean[i] = l.mean[i] / n, f.pdir[i] = l.peaks[0][i];
        out.push_back(f);
    }
    return out;
}

// SH coefficients (tournier) of sum_i a_i delta(u_i), band l damped by exp(-s l (l+1)):
// lobes of known axes and widths, with the truncation's negative ripples.
std::vector<double> lobes_sh(int lmax, const std::vector<std::array<double, 3>> &axes, const std::vector<double> &a, double s)
{
    const int k = (int)tk_sh_num_coeffs(lmax);
    std::vector<double> sh(k, 0.0), y(k);
    for (size_t i = 0; i < axes.size(); ++i) {
        tk_sh_eval(TK_SH_TOURNIER, 0, lmax, axes[i].data(), y.data());
        for (int l = 0; l <= lmax; l += 2)
            for (int m = -l; m <= l; ++m) {
                const int j = l * (l + 1) / 2 + m;
                sh[j] += a[i] * y[j] * std::exp(-s * l * (l + 1));
            }
    }
    return sh;
}

std::array<double, 3> random_axis(std::mt19937 &rng)
{
    std::normal_distribution<double> g;
    std::array<double, 3> u{g(rng), g(rng), g(rng)};
    const double n = std::sqrt(dot(u.data(), u.data()));
    for (auto &x : u) x /= n;
    return u;
}

struct FixelRun {
    std::vector<uint8_t> count;
    std::vector<float> afd, amp, mean, pdir;
    std::vector<uint8_t> lut;
    int S;
};

FixelRun run(const tk_fixels_options &o, const std::vector<float> &sh, size_t nv)
{
    tk_fixels_plan *p = nullptr;
    EXPECT_EQ(tk_fixels_plan_create(&o, &p), TK_OK) << tk_last_error();
    FixelRun r;
    r.S = tk_fixels_plan_slots(p);
    r.count.resize(nv), r.afd.resize(nv * r.S), r.amp.resize(nv * r.S), r.mean.resize(nv * r.S * 3),
        r.pdir.resize(nv * r.S * 3), r.lut.resize(nv * (size_t)tk_fixels_plan_directions(p));
    tk_fixels_output out{r.count.data(), r.afd.data(), r.amp.data(), r.mean.data(), r.pdir.data(), r.lut.data(), 0, 0};
    EXPECT_EQ(tk_fixels_plan_execute(p, nv, sh.data(), nullptr, &out, nullptr), TK_OK) << tk_last_error();
    tk_fixels_plan_destroy(p);
    return r;
}

// Random voxels: one to three lobes of random axes, sizes and widths, plus noise; every
// fixel as the oracle's.  merge < 1 exercises the merging of lobes.
void compare_with_oracle(double merge, double peak_thr, unsigned seed, int ndirs = TK_FIXELS_DIRECTIONS)
{
    const int lmax = 8, k = 45, nv = 60;
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> U(0.3, 1.0), W(0.005, 0.03);
    std::normal_distribution<double> g;
    std::vector<float> shf;
    std::vector<std::vector<double>> shd;
    for (int v = 0; v < nv; ++v) {
        const int n = 1 + v % 3;
        std::vector<std::array<double, 3>> ax;
        std::vector<double> a;
        for (int i = 0; i < n; ++i) ax.push_back(random_axis(rng)), a.push_back(U(rng));
        auto sh = lobes_sh(lmax, ax, a, W(rng));
        for (int j = 1; j < k; ++j) sh[j] += 0.01 * g(rng);
        std::vector<double> rounded;
        for (double c : sh) shf.push_back((float)c), rounded.push_back((double)(float)c);
        shd.push_back(rounded);
    }
    tk_fixels_options o;
    tk_fixels_options_init(&o, lmax);
    o.lobe_merge_ratio = merge, o.peak_value_threshold = peak_thr, o.directions = ndirs;
    FixelRun r = run(o, shf, nv);
    int fixels = 0;
    for (int v = 0; v < nv; ++v) {
        auto want = oracle(lmax, shd[v], 0.0, peak_thr, merge, ndirs);
        ASSERT_EQ((int)r.count[v], (int)want.size()) << "voxel " << v;
        for (size_t f = 0; f < want.size(); ++f, ++fixels) {
            const size_t s = (size_t)v * r.S + f;
            EXPECT_NEAR(r.afd[s], want[f].afd, 1e-5 * want[f].afd) << v << " " << f;
            EXPECT_NEAR(r.amp[s], want[f].peak, 1e-5 * want[f].peak) << v << " " << f;
            double dm = 0, dp = 0;
            for (int i = 0; i < 3; ++i) dm += r.mean[s * 3 + i] * want[f].mean[i], dp += r.pdir[s * 3 + i] * want[f].pdir[i];
            EXPECT_GT(std::fabs(dm), 1 - 1e-6) << v << " " << f;
            EXPECT_GT(std::fabs(dp), 1 - 1e-6) << v << " " << f;
        }
    }
    EXPECT_GT(fixels, nv);
}

}  // namespace

TEST(Fixels, MatchesBruteForceFmls) { compare_with_oracle(1.0, 0.1, 1); }
TEST(Fixels, MatchesBruteForceFmlsWithMerges) { compare_with_oracle(0.2, 0.1, 2); }
TEST(Fixels, MatchesBruteForceFmlsNoThresholds) { compare_with_oracle(1.0, 0.0, 3); }
// the 5121 set: its adjacency and weights as the oracle finds them from the directions alone
TEST(Fixels, MatchesBruteForceFmlsDense) { compare_with_oracle(1.0, 0.1, 4, TK_FIXELS_DIRECTIONS_DENSE); }
TEST(Fixels, MatchesBruteForceFmlsDenseWithMerges) { compare_with_oracle(0.2, 0.1, 5, TK_FIXELS_DIRECTIONS_DENSE); }

// Two narrow lobes at 70 degrees: two fixels whose peaks are the axes, whose AFDs add up to
// the integral of the function over the sphere less the (small) negative ripples, and whose
// lobe masks hold each axis' nearest direction.
TEST(Fixels, TwoKnownLobes)
{
    const int lmax = 8;
    const double t = 70 * kPi / 180;
    std::vector<std::array<double, 3>> ax{{{0, 0, 1}}, {{std::sin(t), 0, std::cos(t)}}};
    auto sh = lobes_sh(lmax, ax, {1.0, 0.6}, 0.03);
    std::vector<float> shf(sh.begin(), sh.end());
    tk_fixels_options o;
    tk_fixels_options_init(&o, lmax);
    FixelRun r = run(o, shf, 1);
    ASSERT_EQ(r.count[0], 2);
    double d0 = 0, d1 = 0;
    for (int i = 0; i < 3; ++i) d0 += r.pdir[i] * ax[0][i], d1 += r.pdir[3 + i] * ax[1][i];
    EXPECT_GT(std::fabs(d0), std::cos(0.5 * kPi / 180));
    EXPECT_GT(std::fabs(d1), std::cos(0.5 * kPi / 180));
    EXPECT_GT(r.afd[0], r.afd[1]);
    // the whole integral is 4 pi c00 Y00 = sqrt(4 pi) c00; both lobes hold nearly all of it
    const double total = std::sqrt(4 * kPi) * sh[0];
    EXPECT_NEAR(r.afd[0] + r.afd[1], total, 0.05 * total);
    EXPECT_NEAR(r.afd[0] / r.afd[1], 1.0 / 0.6, 0.1);
    // disp as fod2fixel writes it is afd / peak; the masks: each axis' direction in its lobe
    const double *dirs = tk_fixels_directions();
    for (int f = 0; f < 2; ++f) {
        int best = 0;
        double bd = -1;
        for (int d = 0; d < N; ++d) {
            const double dp = std::fabs(dot(dirs + 3 * d, ax[f].data()));
            if (dp > bd) bd = dp, best = d;
        }
        EXPECT_EQ(r.lut[best], f);
    }
}

TEST(Fixels, WeightsIntegrateTheSphere)
{
    const double *w = tk_fixels_weights();
    double s = 0;
    for (int d = 0; d < N; ++d) s += w[d];
    // a least-squares fit over 1326 functions with 1281 weights: exact to ~1e-9, not to rounding
    EXPECT_NEAR(s, 4 * kPi, 1e-6);
    // and any lmax-8 series integrates to sqrt(4 pi) c00 (its other bands integrate to 0)
    std::mt19937 rng(7);
    std::normal_distribution<double> g;
    std::vector<double> c(45), y(45);
    for (double &x : c) x = g(rng);
    const double *dirs = tk_fixels_directions();
    double integral = 0;
    for (int d = 0; d < N; ++d) {
        tk_sh_eval(TK_SH_TOURNIER, 0, 8, dirs + 3 * d, y.data());
        double v = 0;
        for (int j = 0; j < 45; ++j) v += c[j] * y[j];
        integral += w[d] * v;
    }
    EXPECT_NEAR(integral, std::sqrt(4 * kPi) * c[0], 1e-5);  // coefficients of size ~1: 1e-6 relative
}

// The denser set (--directions 5121), made as the 1281 is (gen_sphere.py 5): its weights
// integrate the sphere; on a phantom of one to three lobes at least 50 degrees apart it finds
// the same fixels as the 1281 set, and every voxel's AFD sum (no thresholds: every positive
// lobe kept) is nearer the exact integral of the FOD's positive part, computed here by a fine
// product quadrature (Gauss-Legendre in cos(theta) x uniform in phi: 200 x 400 points; the
// sets' error is in where they cut the lobes' edges, ~4.4 and ~2.2 degrees apart).
TEST(Fixels, DenseDirectionSet)
{
    const double *dirs = nullptr, *w = nullptr;
    ASSERT_EQ(tk_fixels_direction_set(TK_FIXELS_DIRECTIONS_DENSE, &dirs, &w), TK_OK);
    EXPECT_EQ(tk_fixels_direction_set(2000, &dirs, &w), TK_ERR_ARGUMENT);
    const int n5 = TK_FIXELS_DIRECTIONS_DENSE, lmax = 8, k = 45;
    double s = 0;
    for (int d = 0; d < n5; ++d) s += w[d];
    EXPECT_NEAR(s, 4 * kPi, 1e-6);
    for (int d = 0; d < n5; ++d) EXPECT_NEAR(dot(dirs + 3 * d, dirs + 3 * d), 1.0, 1e-12);
    // the phantom
    std::mt19937 rng(11);
    std::uniform_real_distribution<double> U(0.4, 1.0), W(0.03, 0.05);
    const int nv = 40;
    std::vector<float> shf;
    std::vector<std::vector<double>> shd;
    for (int v = 0; v < nv; ++v) {
        std::vector<std::array<double, 3>> ax;
        std::vector<double> a;
        while ((int)ax.size() < 1 + v % 3) {
            auto u = random_axis(rng);
            bool apart = true;
            for (auto &b : ax) apart = apart && std::fabs(dot(u.data(), b.data())) < std::cos(50 * kPi / 180);
            if (apart) ax.push_back(u), a.push_back(U(rng));
        }
        auto sh = lobes_sh(lmax, ax, a, W(rng));
        for (double c : sh) shf.push_back((float)c);
        shd.push_back(std::vector<double>(shf.end() - k, shf.end()));
    }
    tk_fixels_options o;
    tk_fixels_options_init(&o, lmax);
    FixelRun coarse = run(o, shf, nv);
    o.directions = TK_FIXELS_DIRECTIONS_DENSE;
    FixelRun dense = run(o, shf, nv);
    EXPECT_EQ(dense.count, coarse.count);
    tk_fixels_plan *p = nullptr;
    ASSERT_EQ(tk_fixels_plan_create(&o, &p), TK_OK);
    EXPECT_EQ(tk_fixels_plan_directions(p), n5);
    tk_fixels_plan_destroy(p);
    o.peak_value_threshold = 0;
    FixelRun dense0 = run(o, shf, nv);
    o.directions = 0;
    FixelRun coarse0 = run(o, shf, nv);
    // the reference quadrature's nodes and weights, and the basis there
    const int nt = 200, np = 400;
    std::vector<double> xs(nt), wx(nt);
    for (int i = 0; i < nt; ++i) {  // Gauss-Legendre by Newton on P_nt
        double x = std::cos(kPi * (i + 0.75) / (nt + 0.5)), dp = 0;
        for (int it = 0; it < 100; ++it) {
            double p0 = 1, p1 = x;
            for (int l = 2; l <= nt; ++l) {
                const double p2 = ((2 * l - 1) * x * p1 - (l - 1) * p0) / l;
                p0 = p1, p1 = p2;
            }
            dp = nt * (x * p1 - p0) / (x * x - 1);
            const double dx = p1 / dp;
            x -= dx;
            if (std::fabs(dx) < 1e-15) break;
        }
        xs[i] = x, wx[i] = 2 / ((1 - x * x) * dp * dp);
    }
    std::vector<double> basis((size_t)nt * np * k), qw((size_t)nt * np);
    for (int i = 0; i < nt; ++i)
        for (int j = 0; j < np; ++j) {
            const double ph = 2 * kPi * j / np, st = std::sqrt(1 - xs[i] * xs[i]);
            const double u[3] = {st * std::cos(ph), st * std::sin(ph), xs[i]};
            tk_sh_eval(TK_SH_TOURNIER, 0, lmax, u, &basis[((size_t)i * np + j) * k]);
            qw[(size_t)i * np + j] = wx[i] * 2 * kPi / np;
        }
    double err_coarse = 0, err_dense = 0;
    int closer = 0, compared = 0;
    for (int v = 0; v < nv; ++v) {
        // without thresholds the ripples are lobes too: a voxel whose slots are full (64 of
        // them on the dense set) has lobes left out of its sum
        if (coarse0.count[v] == coarse0.S || dense0.count[v] == dense0.S) continue;
        ++compared;
        double exact = 0, sc = 0, sd = 0;
        for (size_t q = 0; q < qw.size(); ++q) {
            double f = 0;
            for (int c = 0; c < k; ++c) f += basis[q * k + c] * shd[v][c];
            exact += qw[q] * std::max(f, 0.0);
        }
        for (int f = 0; f < coarse0.count[v]; ++f) sc += coarse0.afd[(size_t)v * coarse0.S + f];
        for (int f = 0; f < dense0.count[v]; ++f) sd += dense0.afd[(size_t)v * dense0.S + f];
        err_coarse += std::fabs(sc - exact) / exact, err_dense += std::fabs(sd - exact) / exact;
        closer += std::fabs(sd - exact) < std::fabs(sc - exact);
    }
    err_coarse /= compared, err_dense /= compared;
    std::printf("AFD sum vs the exact positive integral: 1281 directions %.3g, 5121 %.3g (mean relative); "
                "5121 nearer in %d of %d voxels\n", err_coarse, err_dense, closer, compared);
    EXPECT_GE(compared, nv - 2);
    EXPECT_LT(err_dense, 0.5 * err_coarse);
    EXPECT_GE(closer, compared * 3 / 4);
}

// maxnum keeps the first lobes; a non-positive mean, NaN and the mask give none; omp = cpu.
TEST(Fixels, MaxnumMaskBadAndOmp)
{
    const int lmax = 8, k = 45;
    std::vector<std::array<double, 3>> ax{{{0, 0, 1}}, {{1, 0, 0}}, {{0, 1, 0}}};
    auto sh = lobes_sh(lmax, ax, {1.0, 0.8, 0.6}, 0.03);
    std::vector<float> shf;
    for (int v = 0; v < 4; ++v)
        for (double c : sh) shf.push_back((float)c);
    shf[1 * k] = -1.0f;        // negative mean
    shf[2 * k + 5] = NAN;      // bad
    tk_fixels_options o;
    tk_fixels_options_init(&o, lmax);
    FixelRun all = run(o, shf, 4);
    EXPECT_EQ(all.count[0], 3);
    EXPECT_EQ(all.count[1], 0);
    EXPECT_EQ(all.count[2], 0);
    EXPECT_EQ(all.count[3], 3);
    o.max_fixels = 2;
    FixelRun two = run(o, shf, 4);
    EXPECT_EQ(two.S, 2);
    EXPECT_EQ(two.count[0], 2);
    EXPECT_EQ(two.afd[0], all.afd[0]);
    EXPECT_EQ(two.afd[1], all.afd[1]);
    o.max_fixels = 0, o.backend = TK_BACKEND_OMP, o.num_threads = 2;
    FixelRun omp = run(o, shf, 4);
    EXPECT_EQ(omp.count, all.count);
    for (size_t i = 0; i < all.afd.size(); ++i)
        if (!std::isnan(all.afd[i])) {
            EXPECT_EQ(omp.afd[i], all.afd[i]);
        }
    // bad options
    tk_fixels_plan *p = nullptr;
    o.lobe_merge_ratio = 2;
    EXPECT_EQ(tk_fixels_plan_create(&o, &p), TK_ERR_ARGUMENT);
    EXPECT_EQ(p, nullptr);
    tk_fixels_options_init(&o, 7);
    EXPECT_EQ(tk_fixels_plan_create(&o, &p), TK_ERR_ARGUMENT);
}

// The tests' hooks on the CUDA kernels (tk_bench_hooks.h) refuse a plan that is not on cuda and
// count nothing there.
TEST(Fixels, CudaKernelHooksRefuseACpuPlan)
{
    tk_fixels_options o;
    tk_fixels_options_init(&o, 8);
    tk_fixels_plan *plan = nullptr;
    ASSERT_EQ(tk_fixels_plan_create(&o, &plan), TK_OK) << tk_last_error();
    EXPECT_EQ(tk_fixels_plan_set_one_thread(plan, 1), TK_ERR_ARGUMENT);
    EXPECT_NE(std::string(tk_last_error()).find("not a cuda fixels plan"), std::string::npos) << tk_last_error();
    EXPECT_EQ(tk_fixels_plan_redone(plan), 0u);
    EXPECT_EQ(tk_fixels_plan_set_one_thread(nullptr, 1), TK_ERR_ARGUMENT);
    tk_fixels_plan_destroy(plan);
}

namespace {

// fmls.cpp's order, written from its definition: no lobes where the first sample of the largest
// magnitude is not positive, else the positive samples by descending value, equal values by
// ascending index (a stable sort from index order: the multimap's insertion order).
int oracle_walk_order(const std::vector<double> &v, std::vector<int> &order)
{
    const int n = (int)v.size();
    int largest = 0;
    for (int d = 1; d < n; ++d)
        if (std::fabs(v[d]) > std::fabs(v[largest])) largest = d;
    if (!(v[largest] > 0)) return -1;
    order.clear();
    for (int d = 0; d < n; ++d)
        if (v[d] > 0) order.push_back(d);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return v[a] > v[b]; });
    return (int)order.size();
}

void expect_walk_order(const std::vector<double> &v, const char *what)
{
    std::vector<int> want;
    const int nw = oracle_walk_order(v, want);
    for (int vector : {1, 0}) {
        std::vector<int> got(v.size(), -7);
        const int ng = tk_fixels_walk_order(v.data(), (int)v.size(), got.data(), vector);
        ASSERT_EQ(ng, nw) << what << (vector ? " (vector keys)" : " (scalar keys)");
        for (int i = 0; i < nw; ++i)
            ASSERT_EQ(got[i], want[i]) << what << (vector ? " (vector keys)" : " (scalar keys)") << ": place " << i;
    }
}

}  // namespace

// The host's walk order (quantized keys, a radix sort, then runs of equal keys by value) against a
// stable sort of the doubles: random samples, ties, values closer than a key step, a tiny and a
// subnormal maximum, a positive and a negative maximum of one magnitude, both set sizes; the keys
// by AVX2 (where the CPU has it) and by the scalar loop.
TEST(Fixels, HostWalkOrderIsFmlsOrder)
{
    std::mt19937 rng(11);
    std::uniform_real_distribution<double> U(-1.0, 1.0);
    for (int n : {1, 3, 7, TK_FIXELS_DIRECTIONS, TK_FIXELS_DIRECTIONS_DENSE}) {
        std::vector<double> v(n);
        for (auto &x : v) x = U(rng);
        v[0] = 2.0;  // a positive maximum
        expect_walk_order(v, "random");
        for (auto &x : v) x = 0.5;
        expect_walk_order(v, "all equal");
        // every positive sample within a key step (1/65535 of the maximum) of another
        for (int d = 0; d < n; ++d) v[d] = d % 5 == 0 ? -1e-3 : 1.0 - 1e-9 * (double)((d * 7919) % 97);
        expect_walk_order(v, "closer than a key step");
        for (int d = 0; d < n; ++d) v[d] = d % 3 ? 1e-7 * (double)((d * 31) % 17) : 1.0;
        expect_walk_order(v, "many near zero");
        for (auto &x : v) x = 4.9e-324 * (double)(1 + (int)(8 * std::fabs(U(rng))));
        expect_walk_order(v, "subnormal maximum");
        for (auto &x : v) x = 1e-300 * U(rng);
        v[0] = 1e-300;
        expect_walk_order(v, "tiny maximum");
        for (auto &x : v) x = U(rng);
        if (n >= 3) {
            v[1] = -3.0, v[2] = 3.0;
            expect_walk_order(v, "negative maximum first");
            v[1] = 3.0, v[2] = -3.0;
            expect_walk_order(v, "positive maximum first");
        }
        for (auto &x : v) x = -std::fabs(x);
        expect_walk_order(v, "no positive sample");
        for (auto &x : v) x = 0.0;
        expect_walk_order(v, "all zero");
    }
    std::vector<int> out(4);
    const double one = 1.0;
    EXPECT_EQ(tk_fixels_walk_order(&one, 0, out.data(), 1), -2);
}

// The host's samples by AVX-512 (where the CPU has it) are the AVX2 clone's bit for bit (each
// direction's sum the same chain of fused multiply-adds), and both are the series' values at
// the directions (a plain sum of tk_sh_eval's basis, to rounding), both direction sets.
TEST(Fixels, HostSamplesSameOnEveryPath)
{
    const int lmax = 8, k = 45;
    std::mt19937 rng(5);
    std::normal_distribution<double> g;
    for (int ndirs : {TK_FIXELS_DIRECTIONS, TK_FIXELS_DIRECTIONS_DENSE}) {
        tk_fixels_options o;
        tk_fixels_options_init(&o, lmax);
        o.directions = ndirs;
        tk_fixels_plan *plan = nullptr;
        ASSERT_EQ(tk_fixels_plan_create(&o, &plan), TK_OK) << tk_last_error();
        std::vector<std::vector<double>> sh(4, std::vector<double>(k)), v2(4, std::vector<double>(ndirs)),
            v5(4, std::vector<double>(ndirs));
        for (auto &s : sh)
            for (auto &c : s) c = g(rng);
        const double *shp[4] = {sh[0].data(), sh[1].data(), sh[2].data(), sh[3].data()};
        double *p2[4] = {v2[0].data(), v2[1].data(), v2[2].data(), v2[3].data()};
        double *p5[4] = {v5[0].data(), v5[1].data(), v5[2].data(), v5[3].data()};
        EXPECT_EQ(tk_fixels_plan_sample4(plan, shp, p2, 0), 0);
        const int wide = tk_fixels_plan_sample4(plan, shp, p5, 1);
        ASSERT_TRUE(wide == 0 || wide == -1);
        if (wide == -1) std::printf("no AVX-512 on this CPU: the AVX2 path against itself\n");
        for (int i = 0; i < 4; ++i)
            for (int d = 0; d < ndirs; ++d) ASSERT_EQ(v5[i][d], v2[i][d]) << "series " << i << " direction " << d;
        const double *dirs = nullptr;
        ASSERT_EQ(tk_fixels_direction_set(ndirs, &dirs, nullptr), TK_OK);
        std::vector<double> y(k);
        for (int d = 0; d < ndirs; d += 7) {
            tk_sh_eval(TK_SH_TOURNIER, 0, lmax, dirs + 3 * d, y.data());
            for (int i = 0; i < 4; ++i) {
                double want = 0, size = 0;
                for (int c = 0; c < k; ++c) want += y[c] * sh[i][c], size += std::fabs(y[c] * sh[i][c]);
                EXPECT_NEAR(v2[i][d], want, 1e-13 * size) << "series " << i << " direction " << d;
            }
        }
        EXPECT_EQ(tk_fixels_plan_sample4(nullptr, shp, p2, 0), -2);
        tk_fixels_plan_destroy(plan);
    }
}

// The climb's tensor by AVX (sums of four rows in registers, nothing fused) is the plain loop's
// bit for bit, for every SH order.
TEST(Fixels, HostTensorSameOnEveryPath)
{
    std::mt19937 rng(9);
    std::normal_distribution<double> g;
    for (int lmax = 2; lmax <= 8; lmax += 2) {
        tk_fixels_options o;
        tk_fixels_options_init(&o, lmax);
        tk_fixels_plan *plan = nullptr;
        ASSERT_EQ(tk_fixels_plan_create(&o, &plan), TK_OK) << tk_last_error();
        const int k = (int)tk_sh_num_coeffs(lmax);
        for (int trial = 0; trial < 20; ++trial) {
            std::vector<double> aniso(k), plain(k, -1), vec(k, -2);
            for (auto &a : aniso) a = g(rng) * std::exp(3 * g(rng));
            ASSERT_EQ(tk_fixels_plan_tensor(plan, aniso.data(), plain.data(), 0), 0);
            ASSERT_EQ(tk_fixels_plan_tensor(plan, aniso.data(), vec.data(), 1), 0);
            for (int r = 0; r < k; ++r) ASSERT_EQ(vec[r], plain[r]) << "lmax " << lmax << " row " << r;
        }
        EXPECT_EQ(tk_fixels_plan_tensor(plan, nullptr, nullptr, 2), -2);
        tk_fixels_plan_destroy(plan);
    }
}
