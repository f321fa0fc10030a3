// The fiber finder's climb an iteration at a time (fibers_newton.h: nt_climb_begin, _step, _end),
// as the CUDA climbing kernels drive it: 32 lanes take climbs from a work list in turn, each lane
// running its climb one step at a time and taking the next climb as soon as its own ends (a
// model start that proves wrong begins again from the grid direction).  Every climb must end
// where the one-piece nt_polish ends, to the bit (answer, point, amplitude, iterations), and the
// strict maxima it reports must be maxima by finite differences of the polynomial itself (the
// independent oracle).  The polynomials are FOD-like: sums of weighted 8th powers of linear
// forms (one lobe each) plus a small random part, evaluated monomial by monomial.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

extern "C" {
#include "fibers/fibers_internal.h"
}

namespace {

// A homogeneous polynomial of degree m in x, y, z: coef[i] of monomial x^a[i] y^b[i] z^c[i].
struct TestPoly {
    int m;
    std::vector<int> a, b, c;
    std::vector<double> coef;
};

double power(double v, int e) { return e == 0 ? 1.0 : v * power(v, e - 1); }

// f, its gradient and its Hessian at x, monomial by monomial (derivatives by the power rule).
void poly_all(const TestPoly *t, const double *x, double *f, double *g, double *hess)
{
    *f = 0;
    for (int i = 0; i < 3; ++i) g[i] = 0;
    for (int i = 0; i < 9; ++i) hess[i] = 0;
    for (size_t n = 0; n < t->coef.size(); ++n) {
        const int e[3] = {t->a[n], t->b[n], t->c[n]};
        double p[3], d1[3], d2[3];
        for (int i = 0; i < 3; ++i) {
            p[i] = power(x[i], e[i]);
            d1[i] = e[i] >= 1 ? e[i] * power(x[i], e[i] - 1) : 0.0;
            d2[i] = e[i] >= 2 ? e[i] * (e[i] - 1) * power(x[i], e[i] - 2) : 0.0;
        }
        const double k = t->coef[n];
        *f += k * p[0] * p[1] * p[2];
        g[0] += k * d1[0] * p[1] * p[2], g[1] += k * p[0] * d1[1] * p[2], g[2] += k * p[0] * p[1] * d1[2];
        hess[0] += k * d2[0] * p[1] * p[2], hess[4] += k * p[0] * d2[1] * p[2], hess[8] += k * p[0] * p[1] * d2[2];
        hess[1] += k * d1[0] * d1[1] * p[2], hess[2] += k * d1[0] * p[1] * d1[2], hess[5] += k * p[0] * d1[1] * d1[2];
    }
    hess[3] = hess[1], hess[6] = hess[2], hess[7] = hess[5];
}

// fibers_newton.h's evaluator: y = A x^(m-1) = grad f / m, h = A x^(m-2) = Hessian f / (m (m-1)).
void poly_derivs(const TestPoly *t, const double *x, double *y, double *h)
{
    double f, g[3], hess[9];
    poly_all(t, x, &f, g, hess);
    for (int i = 0; i < 3; ++i) y[i] = g[i] / t->m;
    for (int i = 0; i < 9; ++i) h[i] = hess[i] / (t->m * (t->m - 1));
}

double poly_value(const TestPoly *t, const double *x)
{
    double f, g[3], hess[9];
    poly_all(t, x, &f, g, hess);
    return f;
}

} // namespace

#define TK_NEWTON_FN static inline
#define TK_NEWTON_UTIL static inline
#define TK_NEWTON_CTX TestPoly
#define TK_NEWTON_SFX(name) name##_test
#define TK_NEWTON_ORDER(t) ((t)->m)
#define TK_NEWTON_DERIVS(t, x, y, h) poly_derivs(t, x, y, h)
#define TK_NEWTON_VALUE(t, x) poly_value(t, x)
extern "C++" {
#include "fibers/fibers_newton.h"
}

namespace {

// sum_k w_k (u_k . x)^8 + noise: lobes along the u_k, as a fiber voxel's series has them.
TestPoly lobes(std::mt19937_64 &rng, int lobes_count, double noise)
{
    const int m = 8;
    TestPoly t;
    t.m = m;
    std::normal_distribution<double> gauss(0, 1);
    std::vector<double> u(3 * lobes_count), w(lobes_count);
    for (int k = 0; k < lobes_count; ++k) {
        double n = 0;
        for (int i = 0; i < 3; ++i) u[3 * k + i] = gauss(rng), n += u[3 * k + i] * u[3 * k + i];
        for (int i = 0; i < 3; ++i) u[3 * k + i] /= std::sqrt(n);
        w[k] = 0.5 + std::fabs(gauss(rng));
    }
    for (int c = 0; c <= m; ++c)
        for (int b = 0; b <= m - c; ++b) {
            const int a = m - c - b;
            // multinomial m! / (a! b! c!)
            double multi = 1;
            for (int i = 1; i <= m; ++i) multi *= i;
            for (int i = 1; i <= a; ++i) multi /= i;
            for (int i = 1; i <= b; ++i) multi /= i;
            for (int i = 1; i <= c; ++i) multi /= i;
            double k = noise * gauss(rng);
            for (int l = 0; l < lobes_count; ++l)
                k += w[l] * multi * power(u[3 * l], a) * power(u[3 * l + 1], b) * power(u[3 * l + 2], c);
            t.a.push_back(a), t.b.push_back(b), t.c.push_back(c), t.coef.push_back(k);
        }
    return t;
}

// One climb of the work list: the polynomial, a start and nt_polish's options; model: the start is
// a predicted one (first_reach > 0) with grid as the start to fall back to, as for a grid maximum.
struct Climb {
    const TestPoly *poly;
    double start[3], grid[3];
    double first_reach, leash, max_step;
    const double *cutoff;
};

struct Answer {
    int good, iterations;
    double x[3], amplitude;
};

// The finder's CPU order: nt_polish from the start, and from the grid direction where it says -1.
Answer one_piece(const Climb &c)
{
    Answer r{};
    double x[3] = {c.start[0], c.start[1], c.start[2]};
    r.good = nt_polish_test(c.poly, x, &r.amplitude, &r.iterations, c.first_reach, c.leash, c.max_step, c.cutoff);
    if (r.good == -1 && c.first_reach > 0) {
        std::memcpy(x, c.grid, sizeof x);
        r.good = nt_polish_test(c.poly, x, &r.amplitude, &r.iterations, 0, c.leash, c.max_step, c.cutoff);
    }
    std::memcpy(r.x, x, sizeof x);
    return r;
}

// The CUDA kernels' order: 32 lanes, a step each a round, a lane taking the next climb when its
// own ends.
std::vector<Answer> lanes(const std::vector<Climb> &work)
{
    std::vector<Answer> out(work.size());
    struct Lane {
        long i = -1;
        bool from_grid = false;
        tk_newton_climb climb;
        Answer r;
    } lane[32];
    size_t next = 0;
    for (;;) {
        bool busy = false;
        for (Lane &l : lane) {
            if (l.i < 0 && next < work.size()) {
                const Climb &c = work[next];
                l.i = (long)next++, l.from_grid = !(c.first_reach > 0), l.r = Answer{};
                nt_climb_begin_test(&l.climb, c.start, c.first_reach, c.leash, c.max_step);
            }
            if (l.i < 0) continue;
            busy = true;
            const Climb &c = work[(size_t)l.i];
            int good = nt_climb_step_test(c.poly, &l.climb, &l.r.amplitude, &l.r.iterations, c.cutoff);
            if (good == TK_NEWTON_CLIMBING) continue;
            if (good == TK_NEWTON_ENDED) good = nt_climb_end_test(c.poly, &l.climb, &l.r.amplitude, &l.r.iterations);
            if (good == -1 && !l.from_grid) {
                nt_climb_begin_test(&l.climb, c.grid, 0, c.leash, c.max_step);
                l.from_grid = true;
                continue;
            }
            l.r.good = good;
            std::memcpy(l.r.x, l.climb.x, sizeof l.r.x);
            out[(size_t)l.i] = l.r;
            l.i = -1;
        }
        if (!busy) return out;
    }
}

void random_unit(std::mt19937_64 &rng, double *x)
{
    std::normal_distribution<double> gauss(0, 1);
    double n = 0;
    for (int i = 0; i < 3; ++i) x[i] = gauss(rng), n += x[i] * x[i];
    for (int i = 0; i < 3; ++i) x[i] /= std::sqrt(n);
}

} // namespace

TEST(FibersClimb, StepByStepInTurnEqualsTheOnePieceClimbAndEndsAtMaxima)
{
    std::mt19937_64 rng(28);
    std::uniform_real_distribution<double> unif(-1, 1);
    std::vector<TestPoly> polys;
    for (int p = 0; p < 24; ++p) polys.push_back(lobes(rng, 1 + p % 3, p % 4 == 0 ? 0.0 : 0.05));
    // climbs of every kind the finder makes: plain, from a predicted start, on a leash, with a
    // cutoff, with a short step; starts near a lobe or anywhere
    const double cutoff_low[3] = {-1e9, 20.0, 200.0}, cutoff_high[3] = {1e9, 20.0, 200.0};
    std::vector<Climb> work;
    for (int n = 0; n < 600; ++n) {
        Climb c{};
        c.poly = &polys[(size_t)n % polys.size()];
        random_unit(rng, c.grid);
        std::memcpy(c.start, c.grid, sizeof c.start);
        switch (n % 5) {
        case 1: // a predicted start a little off the grid direction
            for (int i = 0; i < 3; ++i) c.start[i] += 0.03 * unif(rng);
            nt_normalize3_test(c.start);
            c.first_reach = 0.016;
            break;
        case 2: c.leash = 0.13; break;
        case 3: c.cutoff = n % 2 ? cutoff_low : cutoff_high; break;
        case 4: c.max_step = 0.02; break;
        default: break;
        }
        work.push_back(c);
    }
    const std::vector<Answer> interleaved = lanes(work);
    int maxima = 0, kinds[5] = {0, 0, 0, 0, 0};
    for (size_t n = 0; n < work.size(); ++n) {
        const Answer want = one_piece(work[n]), got = interleaved[n];
        ASSERT_EQ(got.good, want.good) << n;
        EXPECT_EQ(std::memcmp(got.x, want.x, sizeof got.x), 0) << n;
        EXPECT_EQ(got.iterations, want.iterations) << n;
        if (want.good != -1) {
            EXPECT_EQ(std::memcmp(&got.amplitude, &want.amplitude, sizeof got.amplitude), 0) << n;
        }
        ++kinds[want.good + 2];
        if (want.good != 1) continue;
        // the oracle: a strict maximum of f on the sphere, by finite differences around x
        ++maxima;
        const double *x = want.x, f0 = poly_value(work[n].poly, x);
        EXPECT_NEAR(want.amplitude, f0, 1e-9 * (1 + std::fabs(f0))) << n;
        double u[3], w[3];
        tk_fibers_tangent_basis(x, u, w);
        for (int k = 0; k < 8; ++k) {
            const double ang = k * 3.14159265358979323846 / 4, step = 2e-3;
            double y[3];
            for (int i = 0; i < 3; ++i) y[i] = x[i] + step * (std::cos(ang) * u[i] + std::sin(ang) * w[i]);
            nt_normalize3_test(y);
            EXPECT_LT(poly_value(work[n].poly, y), f0) << n << " direction " << k;
        }
    }
    // every kind of ending took part: maxima, no maximum, off the leash or a wrong prediction,
    // below the cutoff
    EXPECT_GT(maxima, 200);
    EXPECT_GT(kinds[1], 0) << "no climb returned -1";
    EXPECT_GT(kinds[0], 0) << "no climb stopped below the cutoff";
    printf("%zu climbs: %d maxima, %d none, %d -1, %d below the cutoff\n", work.size(), kinds[3], kinds[2], kinds[1],
           kinds[0]);
}
