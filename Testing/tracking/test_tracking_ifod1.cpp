// iFOD1: reproducible from its seed for any thread count and chunk size, every step within
// the angle cone, its first step's directions distributed as the FOD over the cone (against
// a quadrature of the tests' own SH evaluation), and a single lobe's mean direction.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "tracking_test_util.h"

using namespace tk_track_test;

namespace {

const double kX[3] = {1, 0, 0}, kY[3] = {0, 1, 0};

tk_tracking_options ifod1()
{
    tk_tracking_options o = default_options();
    o.algorithm = TK_TRACK_IFOD1;
    return o;
}

double angle_deg(const double *a, const double *b)
{
    const double c = (a[0] * b[0] + a[1] * b[1] + a[2] * b[2]) /
                     std::sqrt((a[0] * a[0] + a[1] * a[1] + a[2] * a[2]) * (b[0] * b[0] + b[1] * b[1] + b[2] * b[2]));
    return std::acos(std::max(-1.0, std::min(1.0, c))) * 180 / kPi;
}

void step(const TrackRun &run, size_t s, size_t i, double *d)
{
    const float *p = run.point(s, i), *q = run.point(s, i + 1);
    for (int a = 0; a < 3; ++a) d[a] = (double)q[a] - p[a];
}

TEST(TrackingIFOD1, ResolvesItsDefaults)
{
    tk_tracking_grid g = identity_grid(4, 4, 4);
    tk_tracking_options o = ifod1(), r;
    tk_tracking_plan *plan = nullptr;
    ASSERT_EQ(tk_tracking_plan_create(&o, &g, &plan), TK_OK) << tk_last_error();
    tk_tracking_plan_options(plan, &r);
    EXPECT_EQ(r.max_angle_deg, 15.0);
    EXPECT_EQ(r.max_trials, 1000);
    EXPECT_EQ(r.fod_power, 1.0);
    EXPECT_NEAR(r.step_mm, 0.1, 1e-12);
    EXPECT_EQ(r.cutoff, 0.1);
    tk_tracking_plan_destroy(plan);
}

TEST(TrackingIFOD1, SameOutputForEveryThreadCountAndChunkSize)
{
    Volume vol = make_volume(identity_grid(10, 10, 4), [](size_t, size_t, size_t, const double *, double *c) {
        add_lobe(c, kX, 1.0);
        add_lobe(c, kY, 0.7);
    });
    std::vector<uint8_t> mask(vol.voxels(), 0);
    for (size_t i = 0; i < mask.size(); i += 9) mask[i] = 1;
    tk_tracking_seeds seeds{};
    seeds.mask = mask.data(), seeds.mask_voxels = mask.size(), seeds.per_voxel = 2;
    tk_tracking_options o = ifod1();
    o.rng_seed = 99, o.min_length_mm = 1.0;
    TrackRun ref;
    run_tracking(ref, vol, o, seeds);
    ASSERT_EQ(ref.status, TK_OK) << tk_last_error();
    ASSERT_GT(ref.count(), 10u);
    expect_keyed_reproducibly(ref, vol, o, seeds, 100);
}

TEST(TrackingIFOD1, EveryStepStaysWithinTheAngleCone)
{
    // a crossing pulls the samples both ways; unidirectional, so that every pair of steps
    // is consecutive in the walk
    Volume vol = make_volume(identity_grid(12, 12, 4), [](size_t, size_t, size_t, const double *, double *c) {
        add_lobe(c, kX, 1.0);
        add_lobe(c, kY, 1.0);
    });
    std::vector<double> points;
    for (int s = 0; s < 40; ++s) points.insert(points.end(), {5.0 + 0.05 * s, 6.0, 1.5});
    for (double angle : {15.0, 5.0}) {
        tk_tracking_options o = ifod1();
        o.unidirectional = 1, o.max_angle_deg = angle, o.min_length_mm = -1;
        TrackRun run;
        run_tracking(run, vol, o, point_seeds(points));
        ASSERT_GT(run.count(), 30u);
        double worst = 0;
        size_t steps = 0;
        for (size_t s = 0; s < run.count(); ++s)
            for (size_t i = 0; i + 2 < run.points(s); ++i) {
                double a[3], b[3];
                step(run, s, i, a);
                step(run, s, i + 1, b);
                worst = std::max(worst, angle_deg(a, b));
                ++steps;
            }
        EXPECT_GT(steps, 1000u);
        EXPECT_LE(worst, angle + 0.01) << "cone of " << angle << " degrees";  // float points: ~1e-3 degrees
        EXPECT_GT(worst, 0.5 * angle);                                         // and the cone is used
    }
}

TEST(TrackingIFOD1, FirstStepsAreDistributedAsTheFODOverTheCone)
{
    // every seed at one point with the given first direction u, 15 degrees off the lobe: the
    // first step's direction is a draw from the FOD over the 15-degree cone about u.  Its mean
    // cosine to u and to the lobe must match a quadrature of the FOD over the cone.
    const double lobe[3] = {1, 0, 0}, t = 15 * kPi / 180, u[3] = {std::cos(t), std::sin(t), 0};
    Volume vol = lobe_field(identity_grid(8, 8, 8), lobe);
    std::vector<double> points;
    const int n = 4000;
    for (int s = 0; s < n; ++s) points.insert(points.end(), {3.5, 3.5, 3.5});
    tk_tracking_options o = ifod1();
    o.unidirectional = 1, o.min_length_mm = -1, o.max_length_mm = 0.1;
    for (int a = 0; a < 3; ++a) o.seed_direction[a] = u[a];
    TrackRun run;
    run_tracking(run, vol, o, point_seeds(points));
    ASSERT_EQ(run.count(), (size_t)n);
    double mean_u = 0, mean_lobe = 0;
    for (size_t s = 0; s < run.count(); ++s) {
        double d[3];
        step(run, s, 0, d);
        EXPECT_LE(angle_deg(d, u), 15.01);
        mean_u += std::cos(angle_deg(d, u) * kPi / 180) / n;
        mean_lobe += std::cos(angle_deg(d, lobe) * kPi / 180) / n;
    }
    // the oracle: the FOD (above the cutoff) integrated over the cap in polar coordinates
    // about u, theta to 15 degrees, by the midpoint rule
    double c[kCoeffs] = {0};
    add_lobe(c, lobe, 1.0);
    double v[3] = {0, 0, 1}, w[3];
    w[0] = u[1] * v[2] - u[2] * v[1], w[1] = u[2] * v[0] - u[0] * v[2], w[2] = u[0] * v[1] - u[1] * v[0];
    double mass = 0, mu = 0, ml = 0, m2u = 0;
    const int nt = 150, np = 180;
    for (int i = 0; i < nt; ++i) {
        const double th = (i + 0.5) * t / nt;
        for (int j = 0; j < np; ++j) {
            const double ph = (j + 0.5) * 2 * kPi / np;
            double x[3];
            for (int a = 0; a < 3; ++a) x[a] = std::cos(th) * u[a] + std::sin(th) * (std::cos(ph) * v[a] + std::sin(ph) * w[a]);
            double f = sh_value(c, x);
            if (!(f > 0.1)) continue;
            f *= std::sin(th);
            mass += f, mu += f * std::cos(th), ml += f * (x[0] * lobe[0] + x[1] * lobe[1] + x[2] * lobe[2]);
            m2u += f * std::cos(th) * std::cos(th);
        }
    }
    mu /= mass, ml /= mass, m2u /= mass;
    const double se = std::sqrt(std::max(m2u - mu * mu, 0.0) / n);  // the sample mean's standard error
    EXPECT_NEAR(mean_u, mu, 4 * se + 1e-6) << "standard error " << se;
    EXPECT_NEAR(mean_lobe, ml, 4 * se + 1e-4);
    // the draws lean towards the lobe: closer to it on average than uniform draws over the
    // cap would be (mean cosine cos t (1 + cos 15) / 2 to the lobe)
    EXPECT_GT(mean_lobe, std::cos(t) * (1 + std::cos(t)) / 2 + 0.01);
}

// The cone's sampler alone: where the FOD is the same in every direction each trial is taken
// with the same probability, so the first steps are the sampler's draws, uniform on the cap
// of half angle A about the given direction u.  The oracle is that distribution's own law: the
// cosine to u uniform on [cos A, 1] (Archimedes: a cap's area grows linearly with its height)
// and the azimuth about u uniform, each checked over 10 bins by a chi-square test.
TEST(TrackingIFOD1, OnAnIsotropicFodTheStepsAreUniformOnTheCone)
{
    Volume vol = make_volume(identity_grid(8, 8, 8), [](size_t, size_t, size_t, const double *, double *c) { c[0] = 1.0; });
    const double u[3] = {0.6, 0.0, 0.8}, v[3] = {0.8, 0.0, -0.6}, w[3] = {0.0, 1.0, 0.0}; // u, and two axes across it
    const int n = 20000, bins = 10;
    std::vector<double> points;
    for (int s = 0; s < n; ++s) points.insert(points.end(), {3.5, 3.5, 3.5});
    for (double angle : {15.0, 45.0, 90.0}) {
        tk_tracking_options o = ifod1();
        o.unidirectional = 1, o.min_length_mm = -1, o.max_length_mm = 0.1, o.max_angle_deg = angle, o.rng_seed = 7;
        for (int a = 0; a < 3; ++a) o.seed_direction[a] = u[a];
        TrackRun run;
        run_tracking(run, vol, o, point_seeds(points));
        ASSERT_EQ(run.count(), (size_t)n) << angle << " degrees";
        const double cos_a = std::cos(angle * kPi / 180);
        std::vector<double> by_height(bins, 0), by_azimuth(bins, 0);
        for (size_t s = 0; s < run.count(); ++s) {
            double d[3];
            step(run, s, 0, d);
            const double len = std::sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
            const double cu = (d[0] * u[0] + d[1] * u[1] + d[2] * u[2]) / len;
            const double cv = d[0] * v[0] + d[1] * v[1] + d[2] * v[2], cw = d[0] * w[0] + d[1] * w[1] + d[2] * w[2];
            // float points: the cosine known to about 1e-5, so clamp into the cap's range
            const double h = std::min(std::max((cu - cos_a) / (1 - cos_a), 0.0), 1 - 1e-12);
            ASSERT_GT(cu, cos_a - 1e-4) << "a step outside the " << angle << "-degree cone";
            by_height[(size_t)(h * bins)] += 1;
            by_azimuth[std::min((size_t)((std::atan2(cw, cv) + kPi) / (2 * kPi) * bins), (size_t)bins - 1)] += 1;
        }
        // chi-square with 9 degrees of freedom: 33.7 is its 0.9999 quantile (a fixed seed, so
        // this either passes every time or never)
        double chi_h = 0, chi_a = 0;
        const double e = (double)n / bins;
        for (int b = 0; b < bins; ++b) chi_h += (by_height[b] - e) * (by_height[b] - e) / e, chi_a += (by_azimuth[b] - e) * (by_azimuth[b] - e) / e;
        EXPECT_LT(chi_h, 33.7) << angle << " degrees: the cosines to u are not uniform on [cos A, 1]";
        EXPECT_LT(chi_a, 33.7) << angle << " degrees: the azimuths about u are not uniform";
    }
}

TEST(TrackingIFOD1, MeanDirectionOnASingleLobeFieldIsTheLobe)
{
    const double lobe[3] = {2 / 3.0, 2 / 3.0, 1 / 3.0};
    Volume vol = lobe_field(identity_grid(20, 20, 20), lobe);
    std::vector<double> points;
    for (int s = 0; s < 300; ++s) points.insert(points.end(), {9.5, 9.5, 9.5});
    tk_tracking_options o = ifod1();
    o.min_length_mm = -1, o.max_length_mm = 3.0, o.rng_seed = 5;
    TrackRun run;
    run_tracking(run, vol, o, point_seeds(points));
    ASSERT_EQ(run.count(), 300u);
    double mean[3] = {0, 0, 0};
    size_t steps = 0;
    for (size_t s = 0; s < run.count(); ++s)
        for (size_t i = 0; i + 1 < run.points(s); ++i) {
            double d[3];
            step(run, s, i, d);
            const double sign = d[0] * lobe[0] + d[1] * lobe[1] + d[2] * lobe[2] < 0 ? -1.0 : 1.0;
            for (int a = 0; a < 3; ++a) mean[a] += sign * d[a];
            ++steps;
        }
    EXPECT_EQ(steps, 300u * 33u);  // 34 points each: MRtrix3's limit 3 + 30, one more for the second half
    EXPECT_LT(angle_deg(mean, lobe), 1.0);
}

TEST(TrackingIFOD1, CutoffAndSupportEndStreamlines)
{
    // amplitude 1 up to voxel 10, 0.05 beyond: no draw is above the cutoff there
    Volume vol = make_volume(identity_grid(20, 5, 5), [](size_t i, size_t, size_t, const double *, double *c) {
        add_lobe(c, kX, i <= 10 ? 1.0 : 0.05);
    });
    std::vector<double> points;
    for (int s = 0; s < 20; ++s) points.insert(points.end(), {5.0, 2.0, 2.0});
    tk_tracking_options o = ifod1();
    o.unidirectional = 1, o.min_length_mm = -1;
    o.seed_direction[0] = 1;
    TrackRun run;
    run_tracking(run, vol, o, point_seeds(points));
    ASSERT_EQ(run.count(), 20u);
    EXPECT_EQ(run.stats.ended_model, 20u);
    for (size_t s = 0; s < run.count(); ++s) EXPECT_LT(run.last(s)[0], 11.1f);
}

// The CPU grows streamlines with a second build of the growth for AVX2 where the CPU has it
// (tracking_streamline_avx2.c: four-lane vector code, iFOD1's trials four at a time;
// TK_TRACK_NO_AVX2=1 selects the baseline build, the scalar code, one trial at a time): both
// must give the same points to the bit (no fused multiply-add, no reassociation, the lanes
// each the scalar operations in order), for both methods, and for iFOD1 also where max_trials
// (15) is not a multiple of the four trials the AVX2 build draws at once.  (On a CPU without
// AVX2 both runs take the baseline build.)  (The builds' .tck against the code before the four-lane step:
// Documentation/benchmarks.md, "CPU, session 18".)
TEST(TrackingIFOD1, TheAvx2BuildGivesTheBaselineBuildsPoints)
{
    Volume vol = make_volume(identity_grid(10, 10, 4), [](size_t i, size_t, size_t, const double *, double *c) {
        add_lobe(c, kX, 1.0);
        add_lobe(c, kY, 0.4 + 0.05 * (double)i);
    });
    std::vector<uint8_t> mask(vol.voxels(), 0);
    for (size_t i = 0; i < mask.size(); i += 5) mask[i] = 1;
    tk_tracking_seeds seeds{};
    seeds.mask = mask.data(), seeds.mask_voxels = mask.size(), seeds.per_voxel = 2;
    for (int variant = 0; variant < 3; ++variant) {
        tk_tracking_options o = variant == 0 ? default_options() : ifod1();
        o.rng_seed = 7, o.min_length_mm = 1.0, o.max_angle_deg = 45.0;
        if (variant == 2) o.max_trials = 15, o.min_length_mm = -1;
        TrackRun base, avx2;
        {
            const ScopedEnv off("TK_TRACK_NO_AVX2", "1");
            run_tracking(base, vol, o, seeds);
        }
        {
            const ScopedEnv on("TK_TRACK_NO_AVX2", "0");
            run_tracking(avx2, vol, o, seeds);
        }
        ASSERT_EQ(base.status, TK_OK) << tk_last_error();
        ASSERT_EQ(avx2.status, TK_OK) << tk_last_error();
        ASSERT_GT(base.count(), 20u) << "variant " << variant;
        EXPECT_TRUE(flatten(base.result) == flatten(avx2.result)) << "variant " << variant;
        if (variant == 2) {
            EXPECT_GT(base.stats.ended_model, 0u); // the short trials' tail was reached
        }
    }
}

}  // namespace
