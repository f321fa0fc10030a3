// SD_STREAM on synthetic FOD fields of known geometry: straight lines, a circular arc, a
// crossing, the stopping rules (cutoff, support, curvature, lengths, masks, regions), frames,
// and the peak each step takes against a dense search of the interpolated series.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "tracking_test_util.h"

using namespace tk_track_test;

namespace {

const double kX[3] = {1, 0, 0}, kY[3] = {0, 1, 0};

// Lobes along x in every voxel of an nx x 5 x 5 grid.
Volume straight_x(size_t nx = 20) { return lobe_field(identity_grid(nx, 5, 5), kX); }

tk_tracking_options along_x()
{
    tk_tracking_options o = default_options();
    o.seed_direction[0] = 1;
    return o;
}

// Lobes tangent to circles about the z axis through (0, 0) on a 24 x 24 x 3 grid, none within
// 1 mm of the axis; more(c), where given, adds to each of those voxels' series after the lobe.
Volume arc_field(const std::function<void(double *)> &more = nullptr)
{
    return make_volume(identity_grid(24, 24, 3), [&](size_t, size_t, size_t, const double *p, double *c) {
        const double r = std::hypot(p[0], p[1]);
        if (r < 1) return;
        const double t[3] = {-p[1] / r, p[0] / r, 0};
        add_lobe(c, t, 1.0);
        if (more) more(c);
    });
}

// On the arc field: the seed at 45 degrees on the circle of radius kArcRadius (z = 1), and
// options that set out from it along the circle.
constexpr double kArcRadius = 12.0, kArcAngle = kPi / 4;
const std::vector<double> kArcSeed = {kArcRadius * std::cos(kArcAngle), kArcRadius * std::sin(kArcAngle), 1.0};

tk_tracking_options along_arc()
{
    tk_tracking_options o = default_options();
    o.seed_direction[0] = -std::sin(kArcAngle), o.seed_direction[1] = std::cos(kArcAngle);
    return o;
}

TEST(TrackingPlan, ResolvesMRtrix3DefaultsFromTheVoxelSize)
{
    tk_tracking_grid g = identity_grid(4, 4, 4);
    g.vox2world[0] = 2.0, g.vox2world[5] = 2.0, g.vox2world[10] = 0.5;  // vox = cbrt(2 * 2 * 0.5) = 1.2599
    tk_tracking_options o = default_options(), r;
    tk_tracking_plan *plan = nullptr;
    ASSERT_EQ(tk_tracking_plan_create(&o, &g, &plan), TK_OK) << tk_last_error();
    tk_tracking_plan_options(plan, &r);
    const double vox = std::cbrt(2.0);
    EXPECT_NEAR(r.step_mm, 0.1 * vox, 1e-12);
    EXPECT_EQ(r.max_angle_deg, 60.0);
    EXPECT_EQ(r.cutoff, 0.1);
    EXPECT_NEAR(r.min_length_mm, 5 * vox, 1e-12);
    EXPECT_NEAR(r.max_length_mm, 100 * vox, 1e-12);
    size_t lo = 0, hi = 0;
    tk_tracking_plan_point_limits(plan, &lo, &hi);
    EXPECT_EQ(lo, 51u);    // 1 + ceil(5 vox / 0.1 vox)
    EXPECT_EQ(hi, 1003u);  // 3 + ceil(100 vox / 0.1 vox)
    tk_tracking_plan_destroy(plan);
}

TEST(Tracking, StraightFieldGivesAStraightLineWithPointsAStepApart)
{
    Volume vol = straight_x();
    TrackRun run;
    ASSERT_TRUE(tracks_one(run, vol, along_x(), {10.0, 2.0, 2.0}));
    EXPECT_EQ(run.result.seed_index[0], 0u);
    const size_t n = run.points(0);
    // from the +x end (x = 19.5, where the next step's position leaves the field of view) to the -x end
    EXPECT_NEAR(run.point(0, 0)[0], 19.5, 0.1 + 1e-5);
    EXPECT_NEAR(run.last(0)[0], -0.5, 0.1 + 1e-5);
    size_t seed_at = n, above = 0, below = 0;
    for (size_t i = 0; i < n; ++i) {
        const float *p = run.point(0, i);
        EXPECT_NEAR(p[1], 2.0, 1e-6);
        EXPECT_NEAR(p[2], 2.0, 1e-6);
        if (std::fabs(p[0] - 10.0) < 1e-6) seed_at = i;
        above += p[0] > 10.0 + 1e-6, below += p[0] < 10.0 - 1e-6;
        if (i) {
            EXPECT_NEAR(dist(run.point(0, i - 1), p), 0.1, 1e-5) << "point " << i;
            EXPECT_LT(p[0], run.point(0, i - 1)[0]);
        }
    }
    // the seed joins the two halves: about 95 steps on the +x side, 105 on the other (one
    // more where the sum of the steps ends a rounding short of the edge)
    ASSERT_LT(seed_at, n);
    EXPECT_EQ(seed_at, above);
    EXPECT_EQ(n - 1 - seed_at, below);
    EXPECT_GE(above, 95u);
    EXPECT_LE(above, 96u);
    EXPECT_GE(below, 105u);
    EXPECT_LE(below, 106u);
    EXPECT_EQ(run.stats.ended_exit_image, 2u);
    EXPECT_EQ(run.stats.accepted, 1u);
}

TEST(Tracking, UnidirectionalTracksAlongTheFirstPeakOnly)
{
    TrackRun run;
    ASSERT_TRUE(tracks_one(run, straight_x(), one_way_along_x(), {10.0, 2.0, 2.0}));
    EXPECT_NEAR(run.point(0, 0)[0], 10.0, 1e-6);
    EXPECT_NEAR(run.last(0)[0], 19.5, 0.1 + 1e-5);
    EXPECT_GE(run.points(0), 96u);
    EXPECT_LE(run.points(0), 97u);
}

// Lobes tangent to circles about the z axis through (0, 0): the streamline from (r, 0) at
// 45 degrees must stay on the circle of radius r.
TEST(Tracking, ArcFieldIsFollowedAlongTheCircle)
{
    TrackRun run;
    ASSERT_TRUE(tracks_one(run, arc_field(), along_arc(), kArcSeed));
    const size_t n = run.points(0);
    // a quarter circle of radius 12 clipped by the grid's edges at x, y = -0.5: about 18 mm
    EXPECT_GT(n, 170u);
    double worst = 0;
    for (size_t i = 0; i < n; ++i) {
        const float *p = run.point(0, i);
        worst = std::max(worst, std::fabs(std::hypot((double)p[0], (double)p[1]) - kArcRadius));
        EXPECT_NEAR(p[2], 1.0, 1e-5);
    }
    // Euler steps of h drift outward by h/2 per radian (0.08 mm over the quarter); the
    // interpolated lobes' directions err by less than 0.1 mm more
    EXPECT_LT(worst, 0.2) << "largest distance from the circle";
}

// Lobes along x everywhere and along y as well in the middle: nearest peak goes straight on.
TEST(Tracking, CrossingIsTraversedStraight)
{
    Volume vol = make_volume(identity_grid(20, 20, 3), [](size_t i, size_t j, size_t, const double *, double *c) {
        add_lobe(c, kX, 1.0);
        if (i >= 7 && i <= 12) add_lobe(c, kY, 1.0);
        (void)j;
    });
    TrackRun run;
    ASSERT_TRUE(tracks_one(run, vol, along_x(), {3.0, 10.0, 1.0}));
    const size_t n = run.points(0);
    EXPECT_NEAR(run.point(0, 0)[0], 19.5, 0.1 + 1e-5);
    for (size_t i = 0; i < n; ++i) {
        EXPECT_NEAR(run.point(0, i)[1], 10.0, 1e-5);
        EXPECT_NEAR(run.point(0, i)[2], 1.0, 1e-5);
    }
    // seeded along y in the crossing, it follows y
    tk_tracking_options o = default_options();
    o.seed_direction[1] = 1;
    TrackRun ry;
    ASSERT_TRUE(tracks_one(ry, vol, o, {10.0, 10.0, 1.0}));
    for (size_t i = 0; i < ry.points(0); ++i) EXPECT_NEAR(ry.point(0, i)[0], 10.0, 1e-5);
}

TEST(Tracking, CutoffStopsWhereTheAmplitudeFallsBelowIt)
{
    // amplitude 1 up to voxel 10, 0.05 beyond: the interpolated peak, 1 - 0.95 f, falls
    // below 0.1 at f = 0.947
    Volume vol = make_volume(identity_grid(20, 5, 5), [](size_t i, size_t, size_t, const double *, double *c) {
        add_lobe(c, kX, i <= 10 ? 1.0 : 0.05);
    });
    const std::vector<double> seed = {5.0, 2.0, 2.0};
    tk_tracking_options o = one_way_along_x();
    TrackRun run;
    ASSERT_TRUE(tracks_one(run, vol, o, seed));
    EXPECT_GT(run.last(0)[0], 10.947 - 1e-3);
    EXPECT_LT(run.last(0)[0], 10.947 + 0.1 + 1e-3);
    EXPECT_EQ(run.stats.ended_model, 1u);
    // a lower cutoff goes on to the grid's edge
    o.cutoff = 0.01;
    TrackRun low;
    ASSERT_TRUE(tracks_one(low, vol, o, seed));
    EXPECT_NEAR(low.last(0)[0], 19.5, 0.1 + 1e-5);
}

TEST(Tracking, ZeroBackgroundEndsTheStreamlineAtTheSupport)
{
    // voxels past 10 all zero: MRtrix3's masked interpolator takes a point whose nearest
    // voxel is empty as outside the image
    Volume vol = make_volume(identity_grid(20, 5, 5), [](size_t i, size_t, size_t, const double *, double *c) {
        if (i <= 10) add_lobe(c, kX, 1.0);
    });
    TrackRun run;
    ASSERT_TRUE(tracks_one(run, vol, one_way_along_x(), {5.0, 2.0, 2.0}));
    EXPECT_GE(run.last(0)[0], 10.5 - 1e-5);
    EXPECT_LT(run.last(0)[0], 10.6 + 1e-5);
    EXPECT_EQ(run.stats.ended_exit_image, 1u);
    EXPECT_EQ(run.stats.ended_model, 0u);
}

TEST(Tracking, MaxAngleStopsAtASharpTurn)
{
    // x up to voxel 9, 35 degrees off x from voxel 10: halfway between them the interpolated
    // x peak merges into the other, and the nearest peak jumps by about 30 degrees in one step.
    // (Much wider turns end by the cutoff instead: the old peak fades below it first, or the
    // climb from it lands on the new lobe's ringing, no strict maximum, as MRtrix3's would.)
    const double d35[3] = {std::cos(35 * kPi / 180), std::sin(35 * kPi / 180), 0};
    Volume vol = make_volume(identity_grid(20, 20, 3), [&](size_t i, size_t, size_t, const double *, double *c) {
        add_lobe(c, i < 10 ? kX : d35, 1.0);
    });
    const std::vector<double> seed = {4.0, 10.0, 1.0};
    tk_tracking_options o = one_way_along_x();
    o.max_angle_deg = 15;
    TrackRun run;
    ASSERT_TRUE(tracks_one(run, vol, o, seed));
    EXPECT_EQ(run.stats.ended_curvature, 1u);
    for (size_t i = 0; i < run.points(0); ++i) {
        EXPECT_LT(run.point(0, i)[0], 9.7);
        EXPECT_NEAR(run.point(0, i)[1], 10.0, 0.02);
    }
    // allowed MRtrix3's default 60 degrees a step, it takes the turn and runs on to the edge
    o.max_angle_deg = 0;
    TrackRun turns;
    ASSERT_TRUE(tracks_one(turns, vol, o, seed));
    EXPECT_EQ(turns.stats.ended_curvature, 0u);
    EXPECT_EQ(turns.stats.ended_exit_image, 1u);
    EXPECT_GT(turns.last(0)[1], 16.0f);
}

// On the circle of radius 12 each 0.1 mm step turns by 0.1 / 12 rad = 0.48 degrees: a
// maximum angle below that ends the streamline at once, one above lets it follow the arc.
TEST(Tracking, MaxAngleIsTheTurnPerStep)
{
    const Volume vol = arc_field();
    tk_tracking_options o = along_arc();
    o.min_length_mm = -1;
    o.max_angle_deg = 0.35;
    TrackRun tight;
    ASSERT_TRUE(tracks_one(tight, vol, o, kArcSeed));
    EXPECT_EQ(tight.stats.ended_curvature, 2u);
    EXPECT_LE(tight.points(0), 5u);
    o.max_angle_deg = 0.7;
    TrackRun loose;
    ASSERT_TRUE(tracks_one(loose, vol, o, kArcSeed));
    EXPECT_EQ(loose.stats.ended_curvature, 0u);
    EXPECT_GT(loose.points(0), 170u);
}

TEST(Tracking, MaxLengthLimitsThePointsAsMRtrix3Does)
{
    Volume vol = straight_x(60);
    const std::vector<double> seed = {30.0, 2.0, 2.0};
    tk_tracking_options o = along_x();
    o.max_length_mm = 5.0;
    o.min_length_mm = -1;
    // both halves share MRtrix3's max_num_points = 3 + ceil(5 / 0.1) = 53: the first takes
    // them all, the second one step more
    TrackRun run;
    ASSERT_TRUE(tracks_one(run, vol, o, seed));
    EXPECT_EQ(run.points(0), 54u);
    EXPECT_EQ(run.stats.ended_max_length, 2u);
    o.unidirectional = 1;
    TrackRun uni;
    ASSERT_TRUE(tracks_one(uni, vol, o, seed));
    EXPECT_EQ(uni.points(0), 53u);
}

TEST(Tracking, MinLengthDropsShortStreamlines)
{
    // support from voxel 8 to 11: the streamline runs from x = 7.5 to 11.5, 4 mm
    Volume vol = make_volume(identity_grid(20, 5, 5), [](size_t i, size_t, size_t, const double *, double *c) {
        if (i >= 8 && i <= 11) add_lobe(c, kX, 1.0);
    });
    std::vector<double> seed = {9.55, 2.0, 2.0};
    tk_tracking_options o = along_x();
    o.min_length_mm = 5.0;
    TrackRun shortrun;
    run_tracking(shortrun, vol, o, point_seeds(seed));
    EXPECT_EQ(shortrun.count(), 0u);
    EXPECT_EQ(shortrun.stats.rejected_too_short, 1u);
    o.min_length_mm = 3.0;
    TrackRun kept;
    ASSERT_TRUE(tracks_one(kept, vol, o, seed));
    EXPECT_NEAR(dist(kept.point(0, 0), kept.last(0)), 4.0, 0.2);
}

TEST(Tracking, StoppingMaskEndsStreamlinesAndRejectsSeedsOutside)
{
    Volume vol = straight_x();
    std::vector<uint8_t> mask(vol.voxels(), 0);
    for (size_t k = 0; k < 5; ++k)
        for (size_t j = 0; j < 5; ++j)
            for (size_t i = 5; i <= 14; ++i) mask[vol.index(i, j, k)] = 1;
    tk_tracking_regions regions{};
    regions.stop_mask = mask.data();
    regions.mask_voxels = mask.size();
    TrackRun run;
    ASSERT_TRUE(tracks_one(run, vol, along_x(), {10.0, 2.0, 2.0, 2.0, 2.0, 2.0}, &regions));  // the second outside
    EXPECT_EQ(run.result.seed_index[0], 0u);
    EXPECT_EQ(run.stats.rejected_seed, 1u);
    EXPECT_EQ(run.stats.ended_exit_mask, 2u);
    const size_t n = run.points(0);
    // every point's nearest voxel is in the mask: x in [4.5, 14.5)
    for (size_t i = 0; i < n; ++i) {
        EXPECT_GE(run.point(0, i)[0], 4.5 - 1e-5);
        EXPECT_LE(run.point(0, i)[0], 14.5 + 1e-5);  // 14.5 less a rounding rounds to 14
    }
    EXPECT_GT(run.point(0, 0)[0], 14.3);
    EXPECT_LT(run.point(0, n - 1)[0], 4.7);
}

TEST(Tracking, IncludeAndExcludeRegionsSelectStreamlines)
{
    Volume vol = straight_x();
    auto slab = [&](size_t i0, size_t j0) {
        std::vector<uint8_t> m(vol.voxels(), 0);
        for (size_t k = 0; k < 5; ++k) m[vol.index(i0, j0, k)] = 1;
        return m;
    };
    std::vector<uint8_t> on_line = slab(15, 2), off_line = slab(15, 4), near_seed = slab(6, 2);
    const uint8_t *both[2] = {on_line.data(), near_seed.data()}, *missed[2] = {on_line.data(), off_line.data()};
    tk_tracking_regions visits{}, misses{}, excluded{}, passes{};
    for (tk_tracking_regions *r : {&visits, &misses, &excluded, &passes}) r->mask_voxels = vol.voxels();
    visits.include = both, visits.num_include = 2;
    misses.include = missed, misses.num_include = 2;
    excluded.exclude = on_line.data();
    passes.exclude = off_line.data();
    const std::vector<double> seed = {10.0, 2.0, 2.0}, in_ex = {15.0, 4.0, 2.0};
    const struct {
        const char *what;
        const tk_tracking_regions *regions;
        const std::vector<double> *seed;
        size_t kept;
        uint64_t tk_tracking_stats::*rejected;  // the tally that counts the one rejection (nullptr: none)
    } cases[] = {
        {"visits both includes", &visits, &seed, 1, nullptr},
        {"misses an include", &misses, &seed, 0, &tk_tracking_stats::rejected_missed_include},
        {"enters the exclude", &excluded, &seed, 0, &tk_tracking_stats::rejected_exclude},
        {"passes beside the exclude", &passes, &seed, 1, nullptr},
        {"a seed inside an exclusion region is no seed", &passes, &in_ex, 0, &tk_tracking_stats::rejected_seed},
    };
    for (const auto &c : cases) {
        TrackRun run;
        run_tracking(run, vol, along_x(), point_seeds(*c.seed), c.regions);
        EXPECT_EQ(run.count(), c.kept) << c.what;
        if (c.rejected) {
            EXPECT_EQ(run.stats.*c.rejected, 1u) << c.what;
        }
    }
}

// The arc field on an identity grid, and the same world field sampled on an oblique, flipped
// grid of 1.5 mm voxels (voxel i there lies where A i + t puts it, A = 1.5 R F): with the
// step scaled too, the streamline in world mm is A times the identity one plus t.
TEST(Tracking, ObliqueFlippedAffineGivesTheTransformedStreamline)
{
    const double c = std::cos(0.5), s = std::sin(0.5), sc = 1.5;
    // R: 0.5 rad about z then 0.3 about x; F: flip i
    const double cx = std::cos(0.3), sx = std::sin(0.3);
    const double Rz[9] = {c, -s, 0, s, c, 0, 0, 0, 1}, Rx[9] = {1, 0, 0, 0, cx, -sx, 0, sx, cx};
    double A[9];
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
            double v = 0;
            for (int k = 0; k < 3; ++k) v += Rx[i * 3 + k] * Rz[k * 3 + j];
            A[i * 3 + j] = sc * v * (j == 0 ? -1.0 : 1.0);
        }
    const double t[3] = {4.0, -7.0, 2.5};
    auto tangent = [](const double *v, double *d) {
        const double r = std::hypot(v[0], v[1]);
        d[0] = -v[1] / r, d[1] = v[0] / r, d[2] = 0;
        return r >= 1;
    };
    Volume id = make_volume(identity_grid(24, 24, 3), [&](size_t i, size_t j, size_t k, const double *, double *cf) {
        const double v[3] = {(double)i, (double)j, (double)k};
        double d[3];
        if (tangent(v, d)) add_lobe(cf, d, 1.0);
    });
    tk_tracking_grid og = identity_grid(24, 24, 3);
    for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 3; ++j) og.vox2world[i * 4 + j] = A[i * 3 + j];
        og.vox2world[i * 4 + 3] = t[i];
    }
    Volume ob = make_volume(og, [&](size_t i, size_t j, size_t k, const double *, double *cf) {
        const double v[3] = {(double)i, (double)j, (double)k};
        double d[3], w[3];
        if (!tangent(v, d)) return;
        for (int r = 0; r < 3; ++r) w[r] = A[r * 3] * d[0] + A[r * 3 + 1] * d[1] + A[r * 3 + 2] * d[2];
        add_lobe(cf, w, 1.0);  // the world direction of the voxel-frame tangent
    });
    const double *v0 = kArcSeed.data(), d0[3] = {-std::sin(kArcAngle), std::cos(kArcAngle), 0};
    std::vector<double> seed_id(v0, v0 + 3), seed_ob(3);
    tk_tracking_options oi = default_options(), oo = default_options();
    for (int r = 0; r < 3; ++r) {
        seed_ob[r] = t[r] + A[r * 3] * v0[0] + A[r * 3 + 1] * v0[1] + A[r * 3 + 2] * v0[2];
        oi.seed_direction[r] = d0[r];
        oo.seed_direction[r] = A[r * 3] * d0[0] + A[r * 3 + 1] * d0[1] + A[r * 3 + 2] * d0[2];
    }
    TrackRun ri, ro;
    ASSERT_TRUE(tracks_one(ri, id, oi, seed_id));
    ASSERT_TRUE(tracks_one(ro, ob, oo, seed_ob));
    ASSERT_EQ(ri.points(0), ro.points(0));
    for (size_t i = 0; i < ri.points(0); ++i) {
        const float *p = ri.point(0, i);
        float q[3];
        for (int r = 0; r < 3; ++r) q[r] = (float)(t[r] + A[r * 3] * p[0] + A[r * 3 + 1] * p[1] + A[r * 3 + 2] * p[2]);
        ASSERT_LT(dist(q, ro.point(0, i)), 1e-4) << "point " << i;
    }
}

// An orthonormal basis u, w of the plane perpendicular to unit s, for the oracles' polar grids
// about s.
void perpendicular_basis(const double *s, double *u, double *w)
{
    u[0] = u[1] = u[2] = 0;
    u[std::fabs(s[0]) < 0.6 ? 0 : 1] = 1;
    const double d = u[0] * s[0] + u[1] * s[1] + u[2] * s[2];
    for (int r = 0; r < 3; ++r) u[r] -= d * s[r];
    const double un = std::sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);
    for (int r = 0; r < 3; ++r) u[r] /= un;
    w[0] = s[1] * u[2] - s[2] * u[1], w[1] = s[2] * u[0] - s[0] * u[2], w[2] = s[0] * u[1] - s[1] * u[0];
}

// Every step's direction against the maximum of the interpolated series (the tests' own
// interpolation) found by a dense search of a cone about it: a field with a weaker second
// lobe of random direction per voxel, so the interpolated series are neither symmetric nor
// peaked where any voxel's lobe is.
TEST(Tracking, EachStepTakesThePeakADenseSearchFinds)
{
    std::mt19937_64 rng(7);
    std::normal_distribution<double> g(0, 1);
    const Volume vol = arc_field([&](double *c) {
        const double o[3] = {g(rng), g(rng), g(rng)};
        add_lobe(c, o, 0.4);
    });
    tk_tracking_options o = along_arc();
    o.unidirectional = 1;
    TrackRun run;
    ASSERT_TRUE(tracks_one(run, vol, o, kArcSeed));
    const size_t n = run.points(0);
    ASSERT_GT(n, 40u);
    int checked = 0;
    for (size_t i = 1; i + 1 < n; i += (n - 2) / 25 + 1) {
        const float *p = run.point(0, i), *q = run.point(0, i + 1);
        double s[3] = {q[0] - p[0], q[1] - p[1], q[2] - p[2]};
        const double len = std::sqrt(s[0] * s[0] + s[1] * s[1] + s[2] * s[2]);
        for (double &x : s) x /= len;
        const double v[3] = {p[0], p[1], p[2]};
        if (!(v[0] >= 0 && v[0] < 23 && v[1] >= 0 && v[1] < 23)) continue;  // the oracle does not clamp at the edges
        double c[kCoeffs];
        interpolate(vol, v, c);
        // a polar grid of the cone of 4 degrees about s, 0.05 degree rings, 2 degrees around
        double u[3], w[3];
        perpendicular_basis(s, u, w);
        double best = -1e300, best_angle = 0, rim = -1e300;
        for (int ring = 0; ring <= 80; ++ring) {
            const double th = ring * 0.05 * kPi / 180;
            for (int az = 0; az < (ring ? 180 : 1); ++az) {
                const double ph = az * 2 * kPi / 180, x[3] = {std::cos(th) * s[0] + std::sin(th) * (std::cos(ph) * u[0] + std::sin(ph) * w[0]),
                                                          std::cos(th) * s[1] + std::sin(th) * (std::cos(ph) * u[1] + std::sin(ph) * w[1]),
                                                          std::cos(th) * s[2] + std::sin(th) * (std::cos(ph) * u[2] + std::sin(ph) * w[2])};
                const double f = sh_value(c, x);
                if (f > best) best = f, best_angle = th;
                if (ring == 80) rim = std::max(rim, f);
            }
        }
        EXPECT_LT(rim, best) << "the cone's maximum lies on its rim at point " << i;
        // the dense maximum is the step's direction itself (the float points' rounding moves it by
        // about 1e-5 rad, well within the first ring)
        EXPECT_LT(best_angle * 180 / kPi, 0.06) << "point " << i;
        EXPECT_GE(sh_value(c, s), best - 1e-6) << "point " << i;
        ++checked;
    }
    EXPECT_GE(checked, 15);
}

TEST(TrackingPeak, MatchesTheNearestMaximumOfADenseAscent)
{
    // series of two or three random lobes; from random starts the plan's peak must be a
    // maximum no dense neighbour beats, reached by climbing from the start
    tk_tracking_grid g = identity_grid(2, 2, 2);
    tk_tracking_options o = default_options();
    tk_tracking_plan *plan = nullptr;
    ASSERT_EQ(tk_tracking_plan_create(&o, &g, &plan), TK_OK);
    std::mt19937_64 rng(11);
    std::normal_distribution<double> gauss(0, 1);
    for (int trial = 0; trial < 40; ++trial) {
        double c[kCoeffs] = {0};
        for (int l = 0; l < 2 + trial % 2; ++l) {
            const double u[3] = {gauss(rng), gauss(rng), gauss(rng)};
            add_lobe(c, u, 0.5 + 0.5 * std::fabs(gauss(rng)));
        }
        double start[3] = {gauss(rng), gauss(rng), gauss(rng)}, dir[3];
        const double sn = std::sqrt(start[0] * start[0] + start[1] * start[1] + start[2] * start[2]);
        for (int r = 0; r < 3; ++r) dir[r] = start[r] /= sn;
        const double amp = tk_tracking_plan_peak(plan, c, dir);
        ASSERT_GT(amp, 0) << "trial " << trial;
        EXPECT_NEAR(amp, sh_value(c, dir), 1e-9);
        // the oracle: steepest ascent on a dense sphere from the start, one 0.2-degree move at
        // a time towards the best of 64 neighbours, then compare
        double x[3] = {start[0], start[1], start[2]};
        for (int it = 0; it < 20000; ++it) {
            double u[3], w[3];
            perpendicular_basis(x, u, w);
            const double h = 0.2 * kPi / 180;
            double best = sh_value(c, x), nx[3] = {x[0], x[1], x[2]};
            for (int az = 0; az < 64; ++az) {
                const double ph = az * 2 * kPi / 64;
                double y[3];
                for (int r = 0; r < 3; ++r) y[r] = std::cos(h) * x[r] + std::sin(h) * (std::cos(ph) * u[r] + std::sin(ph) * w[r]);
                const double f = sh_value(c, y);
                if (f > best) best = f, std::copy(y, y + 3, nx);
            }
            if (nx[0] == x[0] && nx[1] == x[1] && nx[2] == x[2]) break;
            std::copy(nx, nx + 3, x);
        }
        const double cosang = std::min(1.0, std::fabs(x[0] * dir[0] + x[1] * dir[1] + x[2] * dir[2]));
        EXPECT_LT(std::acos(cosang) * 180 / kPi, 0.5) << "trial " << trial;
        EXPECT_GE(amp, sh_value(c, x) - 1e-9) << "trial " << trial;
    }
    tk_tracking_plan_destroy(plan);
}

}  // namespace

// SD_STREAM's sums run in the order of the GPU's lanes a seed (TK_TRACK_SD_LANES: 8, 16 or 32,
// read at plan create); every order gives the peak the SH series itself has (the tests' own
// evaluation), and the orders differ from each other by rounding only.
TEST(TrackingPeak, EveryLaneOrderFindsTheSamePeak)
{
    tk_tracking_grid g = identity_grid(2, 2, 2);
    std::mt19937_64 rng(23);
    std::normal_distribution<double> gauss(0, 1);
    for (int trial = 0; trial < 30; ++trial) {
        double c[kCoeffs] = {0};
        for (int l = 0; l < 2 + trial % 2; ++l) {
            const double u[3] = {gauss(rng), gauss(rng), gauss(rng)};
            add_lobe(c, u, 0.5 + 0.5 * std::fabs(gauss(rng)));
        }
        const double start[3] = {gauss(rng), gauss(rng), gauss(rng)};
        double first[3] = {0, 0, 0}, first_amp = 0;
        for (const char *lanes : {"8", "16", "32"}) {
            ScopedEnv env("TK_TRACK_SD_LANES", lanes);
            tk_tracking_options o = default_options();
            tk_tracking_plan *plan = nullptr;
            ASSERT_EQ(tk_tracking_plan_create(&o, &g, &plan), TK_OK) << tk_last_error();
            double dir[3] = {start[0], start[1], start[2]};
            const double amp = tk_tracking_plan_peak(plan, c, dir);
            tk_tracking_plan_destroy(plan);
            ASSERT_GT(amp, 0) << "trial " << trial << ", " << lanes << " lanes";
            EXPECT_NEAR(amp, sh_value(c, dir), 1e-9) << "trial " << trial << ", " << lanes << " lanes";
            if (first_amp == 0) {
                std::copy(dir, dir + 3, first), first_amp = amp;
                continue;
            }
            const double cosang = std::min(1.0, first[0] * dir[0] + first[1] * dir[1] + first[2] * dir[2]);
            EXPECT_LT(std::acos(cosang), 1e-7) << "trial " << trial << ", " << lanes << " lanes";
            EXPECT_NEAR(amp, first_amp, 1e-12 * std::fabs(first_amp)) << "trial " << trial << ", " << lanes << " lanes";
        }
    }
}

TEST(TrackingPlan, ABadLaneCountIsAClearError)
{
    tk_tracking_grid g = identity_grid(2, 2, 2);
    for (const char *bad : {"7", "0", "64", "8x", "-8"}) {
        ScopedEnv env("TK_TRACK_SD_LANES", bad);
        tk_tracking_options o = default_options();
        tk_tracking_plan *plan = nullptr;
        EXPECT_EQ(tk_tracking_plan_create(&o, &g, &plan), TK_ERR_ARGUMENT) << bad;
        EXPECT_EQ(plan, nullptr);
        EXPECT_NE(std::string(tk_last_error()).find("TK_TRACK_SD_LANES must be 8, 16 or 32"), std::string::npos)
            << tk_last_error();
    }
}
