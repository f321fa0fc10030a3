// The tracker's run as a whole: random seeding reproducible for any thread count and chunk
// size, chunks in seed order through the sink, the random generator's known answers, and
// clear errors for bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "tracking_test_util.h"

using namespace tk_track_test;

namespace {

const double kX[3] = {1, 0, 0}, kY[3] = {0, 1, 0}, kZ[3] = {0, 0, 1};

// A crossing of x and y lobes over the whole grid, with a weaker z lobe in half of it, so
// that random first directions pick different peaks.
Volume crossing()
{
    return make_volume(identity_grid(12, 10, 6), [](size_t i, size_t, size_t k, const double *, double *c) {
        add_lobe(c, kX, 1.0);
        add_lobe(c, kY, 0.8);
        if (k >= 3 && i < 8) add_lobe(c, kZ, 0.6);
    });
}

// per_voxel mask seeds in voxel v of a field of x lobes on grid, tracked one way along x with
// no minimum length, so that each streamline's first point is its seed.
void track_seeds_of_one_voxel(TrackRun &run, const tk_tracking_grid &grid, const size_t *v, size_t per_voxel,
                              double max_length_mm = 0)
{
    const Volume vol = lobe_field(grid, kX);
    std::vector<uint8_t> mask(vol.voxels(), 0);
    mask[vol.index(v[0], v[1], v[2])] = 1;
    tk_tracking_seeds seeds{};
    seeds.mask = mask.data(), seeds.mask_voxels = mask.size(), seeds.per_voxel = per_voxel;
    tk_tracking_options o = one_way_along_x();
    o.min_length_mm = -1, o.max_length_mm = max_length_mm;
    run_tracking(run, vol, o, seeds);
}

// vol as a C-order caller (the Python package) hands it: the grid (z, y, x), i.e. the same
// voxels with the axes reversed and the affine's first three columns to match.
Volume reversed(const Volume &vol)
{
    Volume r;
    const size_t *d = vol.grid.dims;
    r.grid = vol.grid;
    r.grid.dims[0] = d[2], r.grid.dims[2] = d[0];
    for (int row = 0; row < 4; ++row) std::swap(r.grid.vox2world[row * 4], r.grid.vox2world[row * 4 + 2]);
    r.sh.resize(vol.sh.size());
    for (size_t k = 0; k < d[2]; ++k)
        for (size_t j = 0; j < d[1]; ++j)
            for (size_t i = 0; i < d[0]; ++i)
                for (int q = 0; q < kCoeffs; ++q)
                    r.sh[r.index(k, j, i) * kCoeffs + q] = vol.sh[vol.index(i, j, k) * kCoeffs + q];
    return r;
}

TEST(TrackingRun, ReversedAxesSeedAMaskAsTheVolumeInItsOwnOrder)
{
    Volume vol = crossing();
    Volume rev = reversed(vol);
    std::vector<uint8_t> mask(vol.voxels(), 0), mask_rev(vol.voxels(), 0);
    for (size_t k = 0; k < vol.grid.dims[2]; ++k)
        for (size_t j = 0; j < vol.grid.dims[1]; ++j)
            for (size_t i = 0; i < vol.grid.dims[0]; ++i)
                if ((i * 7 + j * 3 + k * 5) % 11 == 0) mask[vol.index(i, j, k)] = mask_rev[rev.index(k, j, i)] = 1;
    tk_tracking_seeds seeds{}, seeds_rev{};
    seeds.mask = mask.data(), seeds.mask_voxels = mask.size(), seeds.per_voxel = 3;
    seeds_rev = seeds, seeds_rev.mask = mask_rev.data();
    tk_tracking_options o = default_options();
    o.min_length_mm = 1.0, o.rng_seed = 0xabc;
    TrackRun want, got, unreversed;
    run_tracking(want, vol, o, seeds);
    ASSERT_EQ(want.status, TK_OK) << tk_last_error();
    ASSERT_GT(want.count(), 30u);
    tk_tracking_options r = o;
    r.reversed_axes = 1;
    run_tracking(got, rev, r, seeds_rev);
    ASSERT_EQ(got.status, TK_OK) << tk_last_error();
    // the same seeds (numbered x fastest, drawn x first) give the same streamlines, in the
    // same world points up to rounding (the voxel sums run in another order)
    ASSERT_EQ(got.count(), want.count());
    const Flat a = flatten(want.result), b = flatten(got.result);
    EXPECT_EQ(a.index, b.index);
    ASSERT_EQ(a.counts, b.counts);
    double worst = 0;
    for (size_t p = 0; p < a.points.size(); ++p) worst = std::max(worst, (double)std::fabs(a.points[p] - b.points[p]));
    EXPECT_LT(worst, 1e-4);
    // without the option, the reversed grid numbers and draws its seeds its own way: others
    run_tracking(unreversed, rev, o, seeds_rev);
    ASSERT_EQ(unreversed.status, TK_OK) << tk_last_error();
    EXPECT_FALSE(flatten(unreversed.result) == a);
}

TEST(TrackingRun, RandomSeedingIsTheSameForEveryThreadCountAndChunkSize)
{
    Volume vol = crossing();
    std::vector<uint8_t> mask(vol.voxels(), 0);
    for (size_t i = 0; i < mask.size(); i += 7) mask[i] = 1;
    tk_tracking_seeds seeds{};
    seeds.mask = mask.data(), seeds.mask_voxels = mask.size(), seeds.per_voxel = 2;
    tk_tracking_options o = default_options();
    o.min_length_mm = 1.0;
    o.rng_seed = 0x5eed;
    TrackRun reference;
    run_tracking(reference, vol, o, seeds);
    ASSERT_EQ(reference.status, TK_OK) << tk_last_error();
    ASSERT_GT(reference.count(), 30u);
    // the seeds' random first directions reach every peak: some streamlines run along each axis
    int along[3] = {0, 0, 0};
    for (size_t s = 0; s < reference.count(); ++s) {
        const float *a = reference.point(s, 0), *b = reference.point(s, 1);
        for (int ax = 0; ax < 3; ++ax) along[ax] += std::fabs(b[ax] - a[ax]) > 0.09f;
    }
    EXPECT_GT(along[0], 0);
    EXPECT_GT(along[1], 0);
    EXPECT_GT(along[2], 0);
    expect_keyed_reproducibly(reference, vol, o, seeds, 0x5eee);  // another key draws other seeds
}

TEST(TrackingRun, MaskSeedsLieInTheirVoxels)
{
    // tracking along x from seeds in one voxel, unidirectional: each streamline's first
    // point is its seed, which lies within the voxel's cube
    const size_t voxel[3] = {5, 2, 3};
    TrackRun run;
    track_seeds_of_one_voxel(run, identity_grid(12, 6, 6), voxel, 50);
    ASSERT_EQ(run.count(), 50u);
    double mean[3] = {0, 0, 0};
    for (size_t s = 0; s < run.count(); ++s) {
        EXPECT_EQ(run.result.seed_index[s], s);
        const float *p = run.point(s, 0);
        EXPECT_LT(std::fabs(p[0] - 5.0), 0.5f);
        EXPECT_LT(std::fabs(p[1] - 2.0), 0.5f);
        EXPECT_LT(std::fabs(p[2] - 3.0), 0.5f);
        for (int a = 0; a < 3; ++a) mean[a] += p[a] / 50.0;
    }
    EXPECT_NEAR(mean[1], 2.0, 0.15);
    EXPECT_NEAR(mean[2], 3.0, 0.15);
}

struct ChunkLog {
    std::vector<size_t> sizes;
    std::vector<uint64_t> index, done;
    int fail_at = -1;
};

tk_status log_sink(const tk_tracking_chunk *c, void *user)
{
    ChunkLog *log = static_cast<ChunkLog *>(user);
    if ((int)log->sizes.size() == log->fail_at) return tk_set_error(TK_ERR_IO, "disk full (test)");
    log->sizes.push_back(c->num_streamlines);
    log->index.insert(log->index.end(), c->seed_index, c->seed_index + c->num_streamlines);
    log->done.push_back(c->seeds_done);
    size_t total = 0;
    for (size_t i = 0; i < c->num_streamlines; ++i) total += c->num_points[i];
    EXPECT_EQ(total, c->total_points);
    return TK_OK;
}

TEST(TrackingRun, ChunksReachTheSinkInSeedOrderAndItsErrorStopsTheRun)
{
    Volume vol = crossing();
    std::vector<double> points;
    for (int s = 0; s < 23; ++s) points.insert(points.end(), {2.0 + 0.3 * s, 4.0, 1.0});
    const tk_tracking_seeds seeds = point_seeds(points);
    tk_tracking_options o = default_options();
    o.chunk_seeds = 5, o.backend = TK_BACKEND_OMP, o.num_threads = 3;
    tk_tracking_plan *plan = nullptr;
    ASSERT_EQ(tk_tracking_plan_create(&o, &vol.grid, &plan), TK_OK);
    ChunkLog log;
    tk_tracking_stats stats;
    ASSERT_EQ(tk_tracking_plan_execute(plan, vol.sh.data(), vol.sh.size(), nullptr, &seeds, log_sink, &log, &stats, nullptr),
              TK_OK)
        << tk_last_error();
    ASSERT_EQ(log.done, (std::vector<uint64_t>{5, 10, 15, 20, 23}));
    for (size_t s : log.sizes) EXPECT_LE(s, 5u);
    for (size_t i = 1; i < log.index.size(); ++i) EXPECT_LT(log.index[i - 1], log.index[i]);
    EXPECT_EQ(stats.seeds, 23u);
    EXPECT_EQ(stats.accepted, log.index.size());
    ChunkLog failing;
    failing.fail_at = 2;
    EXPECT_EQ(tk_tracking_plan_execute(plan, vol.sh.data(), vol.sh.size(), nullptr, &seeds, log_sink, &failing, nullptr,
                                       nullptr),
              TK_ERR_IO);
    EXPECT_NE(std::string(tk_last_error()).find("disk full"), std::string::npos);
    EXPECT_EQ(failing.sizes.size(), 2u);
    tk_tracking_plan_destroy(plan);
}

TEST(TrackingRun, MaskSeedsAreUniformWithinTheirVoxel)
{
    // 4000 seeds of one voxel (each its own Philox stream): their offsets within the voxel
    // pass a chi-square test of uniformity on each axis
    const size_t voxel[3] = {1, 1, 1};
    TrackRun run;
    track_seeds_of_one_voxel(run, identity_grid(4, 4, 4), voxel, 4000, 0.05);
    ASSERT_EQ(run.count(), 4000u);
    // the seeds' y and z within the voxel: uniform on (-0.5, 0.5), 10 bins each
    for (int axis = 1; axis < 3; ++axis) {
        int bins[10] = {0};
        for (size_t s = 0; s < run.count(); ++s) {
            const int b = (int)std::floor((run.point(s, 0)[axis] - 0.5) * 10);
            ASSERT_GE(b, 0);
            ASSERT_LT(b, 10);
            ++bins[b];
        }
        double chi2 = 0;
        for (int b : bins) chi2 += (b - 400.0) * (b - 400.0) / 400.0;
        EXPECT_LT(chi2, 27.9) << "axis " << axis;  // chi-square, 9 degrees of freedom, p = 0.001
    }
}

// Two ways the CPU runs read the volume faster must leave the streamlines the same bytes: a
// copy of it on huge pages (tracking_volume.c; TK_TRACK_VOLUME_COPY=1 forces it at any size, 0
// turns it off) and each chunk's seeds tracked in the spatial order of their voxels
// (tk_tracking_seed_order; TK_TRACK_SEED_ORDER=0 keeps seed order).  Against a run with both
// off: each on its own and both, for both methods and backends, on a grid whose sides are no
// multiple of anything (13 x 7 x 5), with a field that differs in every voxel (a voxel read
// from the wrong place would bend a streamline), seeds in every voxel (the edges' and corners'
// too, whose interpolation clamps) and at points (some outside the grid), chunks of 37 seeds
// (the order within each), and streamlines that leave the grid or end at a corner without
// support.
TEST(TrackingRun, TheVolumesCopyAndTheSeedOrderGiveTheSameStreamlinesToTheByte)
{
    const Volume vol = make_volume(identity_grid(13, 7, 5), [](size_t i, size_t j, size_t k, const double *, double *c) {
        if (i >= 10 && j >= 5) return; /* no support: streamlines end there */
        const double d[3] = {1.0, 0.3 * std::sin(0.7 * (double)(i + 2 * j)), 0.2 * std::cos(0.9 * (double)(j + k))};
        add_lobe(c, d, 1.0 + 0.05 * (double)((i * 7 + j * 3 + k) % 11));
        add_lobe(c, kY, 0.3 + 0.04 * (double)k);
    });
    std::vector<uint8_t> mask(vol.voxels(), 1);
    tk_tracking_seeds by_mask{};
    by_mask.mask = mask.data(), by_mask.mask_voxels = mask.size(), by_mask.per_voxel = 1;
    std::vector<double> points;
    for (int s = 0; s < 300; ++s) /* a scatter over the grid and half a voxel beyond it */
        for (int a = 0; a < 3; ++a) points.push_back(-0.6 + (double)vol.grid.dims[a] * 1.1 * std::fmod(0.618034 * (s * 3 + a + 1), 1.0));
    const tk_tracking_seeds by_points = point_seeds(points);
    const char *variants[][2] = {{"1", "0"}, {"0", "1"}, {"1", "1"}}; /* copy, order */
    for (const tk_tracking_seeds *seeds : {static_cast<const tk_tracking_seeds *>(&by_mask), &by_points})
        for (tk_tracking_algorithm algorithm : {TK_TRACK_SD_STREAM, TK_TRACK_IFOD1})
            for (int threads : {0, 2}) {
                tk_tracking_options o = default_options();
                o.algorithm = algorithm, o.rng_seed = 11, o.min_length_mm = -1, o.max_angle_deg = 60;
                o.chunk_seeds = 37, o.max_length_mm = 30;
                if (threads) o.backend = TK_BACKEND_OMP, o.num_threads = threads;
                const std::string what = std::string(seeds == &by_mask ? "mask" : "points") + " seeds, algorithm " +
                                         std::to_string((int)algorithm) + ", threads " + std::to_string(threads);
                TrackRun plain;
                {
                    const ScopedEnv copy("TK_TRACK_VOLUME_COPY", "0"), order("TK_TRACK_SEED_ORDER", "0");
                    run_tracking(plain, vol, o, *seeds);
                }
                ASSERT_EQ(plain.status, TK_OK) << tk_last_error();
                ASSERT_GT(plain.count(), 100u) << what;
                EXPECT_GT(plain.stats.ended_exit_image, 0u) << what;
                const Flat want = flatten(plain.result);
                for (const auto &v : variants) {
                    TrackRun run;
                    {
                        const ScopedEnv copy("TK_TRACK_VOLUME_COPY", v[0]), order("TK_TRACK_SEED_ORDER", v[1]);
                        run_tracking(run, vol, o, *seeds);
                    }
                    ASSERT_EQ(run.status, TK_OK) << tk_last_error();
                    const std::string which = what + ", copy " + v[0] + ", order " + v[1];
                    const Flat got = flatten(run.result);
                    EXPECT_EQ(got.counts, want.counts) << which;
                    EXPECT_EQ(got.index, want.index) << which;
                    ASSERT_EQ(got.points.size(), want.points.size()) << which;
                    EXPECT_EQ(std::memcmp(got.points.data(), want.points.data(), want.points.size() * sizeof(float)), 0)
                        << which;
                    EXPECT_EQ(std::memcmp(&run.stats, &plain.stats, sizeof plain.stats), 0) << which;
                }
            }
}

TEST(TrackingErrors, NonFiniteCoefficientsAreRefusedUnlessAllowed)
{
    Volume vol = lobe_field(identity_grid(20, 5, 5), kX);
    for (size_t j = 0; j < 5; ++j)
        for (size_t k = 0; k < 5; ++k) vol.sh[vol.index(15, j, k) * kCoeffs + 3] = std::numeric_limits<float>::quiet_NaN();
    std::vector<double> seed = {5.0, 2.0, 2.0};
    tk_tracking_options o = default_options();
    o.seed_direction[0] = 1;
    tk_tracking_plan *plan = nullptr;
    ASSERT_EQ(tk_tracking_plan_create(&o, &vol.grid, &plan), TK_OK);
    tk_tracking_result result{};
    const tk_tracking_seeds seeds = point_seeds(seed);
    EXPECT_EQ(tk_tracking_collect(plan, vol.sh.data(), vol.sh.size(), nullptr, &seeds, &result, nullptr), TK_ERR_DATA);
    EXPECT_NE(std::string(tk_last_error()).find("non-finite"), std::string::npos) << tk_last_error();
    EXPECT_NE(std::string(tk_last_error()).find("(15, 0, 0)"), std::string::npos) << tk_last_error();
    tk_tracking_result_free(&result);
    tk_tracking_plan_destroy(plan);
    // allowed: the NaN voxels end the streamline before them (the peak there is NaN); also
    // from the volume's copy, which is then made without the check (tracking_volume.c)
    o.allow_nonfinite = 1;
    o.unidirectional = 1;
    for (const char *copy : {"0", "1"}) {
        const ScopedEnv env("TK_TRACK_VOLUME_COPY", copy);
        TrackRun run;
        ASSERT_TRUE(tracks_one(run, vol, o, seed)) << "copy " << copy;
        EXPECT_GT(run.last(0)[0], 13.9f) << "copy " << copy;
        EXPECT_LT(run.last(0)[0], 15.0f) << "copy " << copy;
    }
}

// The volume's check names the first non-finite value, wherever it lies: at the start, on
// either side of a boundary of the check's 2048-value blocks, at the end; NaN, +inf and -inf;
// with a second one after it that must not be the one named.
TEST(TrackingErrors, TheFirstNonFiniteCoefficientIsNamed)
{
    const Volume clean = lobe_field(identity_grid(20, 5, 5), kX);
    const size_t n = clean.sh.size();
    const std::vector<double> seed = {5.0, 2.0, 2.0};
    const tk_tracking_seeds seeds = point_seeds(seed);
    tk_tracking_options o = default_options();
    tk_tracking_plan *plan = nullptr;
    ASSERT_EQ(tk_tracking_plan_create(&o, &clean.grid, &plan), TK_OK);
    const float bad[3] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity()};
    for (size_t at : {size_t(0), size_t(2047), size_t(2048), size_t(4095), size_t(2 * 2048 + 17), n - 1})
        for (float value : bad)
            for (const char *copy : {"0", "1"}) { /* the check alone, and as it copies (tracking_volume.c) */
                const ScopedEnv env("TK_TRACK_VOLUME_COPY", copy);
                Volume vol = clean;
                vol.sh[at] = value;
                if (at + 3000 < n) vol.sh[at + 3000] = bad[0];
                tk_tracking_result result{};
                EXPECT_EQ(tk_tracking_collect(plan, vol.sh.data(), n, nullptr, &seeds, &result, nullptr), TK_ERR_DATA);
                tk_tracking_result_free(&result);
                const size_t v = at / kCoeffs;
                const std::string want = "at voxel (" + std::to_string(v % 20) + ", " + std::to_string((v / 20) % 5) +
                                         ", " + std::to_string(v / 100) + "), coefficient " + std::to_string(at % kCoeffs);
                EXPECT_NE(std::string(tk_last_error()).find(want), std::string::npos)
                    << "value " << value << " at " << at << ", copy " << copy << ": " << tk_last_error();
            }
    tk_tracking_plan_destroy(plan);
}

// The omp backend scans a volume of 2^20 values or more on its threads, a contiguous share
// each: the value named is still the first, whether it lies in the first share or a later one,
// on either side of a share's boundary, or with another in an earlier share after it.
TEST(TrackingErrors, TheThreadsScanNamesTheFirstNonFiniteCoefficient)
{
    const size_t nx = 32, ny = 32;
    const Volume clean = lobe_field(identity_grid(nx, ny, 24), kX);
    const size_t n = clean.sh.size();
    ASSERT_GE(n, size_t(1) << 20);
    const std::vector<double> seed = {5.0, 2.0, 2.0};
    const tk_tracking_seeds seeds = point_seeds(seed);
    for (int threads : {2, 3}) {
        tk_tracking_options o = default_options();
        o.backend = TK_BACKEND_OMP, o.num_threads = threads;
        tk_tracking_plan *plan = nullptr;
        ASSERT_EQ(tk_tracking_plan_create(&o, &clean.grid, &plan), TK_OK);
        const size_t share = n / (size_t)threads;
        // (first, another after it or none)
        const std::pair<size_t, size_t> cases[] = {{0, n - 1},       {share - 1, share}, {share, n - 1},
                                                   {share + 17, 0},  {100, share + 5},   {n - 1, 0}};
        for (const auto &c : cases)
            for (const char *copy : {"0", "1"}) { /* the check alone, and as it copies (tracking_volume.c) */
                const ScopedEnv env("TK_TRACK_VOLUME_COPY", copy);
                Volume vol = clean;
                vol.sh[c.first] = std::numeric_limits<float>::infinity();
                if (c.second > c.first) vol.sh[c.second] = std::numeric_limits<float>::quiet_NaN();
                tk_tracking_result result{};
                EXPECT_EQ(tk_tracking_collect(plan, vol.sh.data(), n, nullptr, &seeds, &result, nullptr), TK_ERR_DATA);
                tk_tracking_result_free(&result);
                const size_t v = c.first / kCoeffs;
                const std::string want = "at voxel (" + std::to_string(v % nx) + ", " + std::to_string((v / nx) % ny) +
                                         ", " + std::to_string(v / (nx * ny)) + "), coefficient " +
                                         std::to_string(c.first % kCoeffs);
                EXPECT_NE(std::string(tk_last_error()).find(want), std::string::npos)
                    << threads << " threads, first at " << c.first << ", copy " << copy << ": " << tk_last_error();
            }
        tk_tracking_plan_destroy(plan);
    }
}

TEST(TrackingErrors, EmptySeedsAndWrongSizesAreRefused)
{
    Volume vol = lobe_field(identity_grid(6, 5, 4), kX);
    tk_tracking_options o = default_options();
    tk_tracking_plan *plan = nullptr;
    ASSERT_EQ(tk_tracking_plan_create(&o, &vol.grid, &plan), TK_OK);
    tk_tracking_result r{};
    auto expect = [&](tk_status want, const tk_tracking_seeds *seeds, const tk_tracking_regions *regions, size_t values,
                      const char *words) {
        EXPECT_EQ(tk_tracking_collect(plan, vol.sh.data(), values, regions, seeds, &r, nullptr), want) << words;
        EXPECT_NE(std::string(tk_last_error()).find(words), std::string::npos) << tk_last_error();
        tk_tracking_result_free(&r);
    };
    std::vector<uint8_t> empty(vol.voxels(), 0), full(vol.voxels(), 1), small(vol.voxels() - 1, 1);
    tk_tracking_seeds s{};
    s.mask = empty.data(), s.mask_voxels = empty.size(), s.per_voxel = 1;
    expect(TK_ERR_ARGUMENT, &s, nullptr, vol.sh.size(), "seed mask is empty");
    s.mask = full.data(), s.per_voxel = 0;
    expect(TK_ERR_ARGUMENT, &s, nullptr, vol.sh.size(), "seeds per voxel");
    s.per_voxel = 1, s.mask_voxels = small.size();
    expect(TK_ERR_ARGUMENT, &s, nullptr, vol.sh.size(), "seed mask holds");
    const double unused[3] = {1, 1, 1};
    tk_tracking_seeds list{};
    list.points = unused, list.num_points = 0;
    expect(TK_ERR_ARGUMENT, &list, nullptr, vol.sh.size(), "seed point list is empty");
    expect(TK_ERR_ARGUMENT, nullptr, nullptr, vol.sh.size(), "no seeds");
    s.mask_voxels = full.size();
    tk_tracking_regions reg{};
    reg.stop_mask = small.data(), reg.mask_voxels = small.size();
    expect(TK_ERR_ARGUMENT, &s, &reg, vol.sh.size(), "region masks hold");
    expect(TK_ERR_ARGUMENT, &s, nullptr, vol.sh.size() - kCoeffs, "SH volume holds");
    std::vector<double> nan_point = {1, std::nan(""), 1};
    const tk_tracking_seeds bad_point = point_seeds(nan_point);
    expect(TK_ERR_DATA, &bad_point, nullptr, vol.sh.size(), "not finite");
    tk_tracking_plan_destroy(plan);
}

TEST(TrackingErrors, InvalidOptionsAndBackendsAreRefused)
{
    const tk_tracking_grid g = identity_grid(4, 4, 4);
    auto expect = [&](tk_status want, const tk_tracking_options &o, const char *words, const tk_tracking_grid *grid = nullptr) {
        tk_tracking_plan *plan = reinterpret_cast<tk_tracking_plan *>(1);
        EXPECT_EQ(tk_tracking_plan_create(&o, grid ? grid : &g, &plan), want) << words;
        EXPECT_EQ(plan, nullptr);
        EXPECT_NE(std::string(tk_last_error()).find(words), std::string::npos) << tk_last_error();
    };
    tk_tracking_options o = default_options();
    o.lmax = 3;
    expect(TK_ERR_ARGUMENT, o, "lmax");
    o = default_options(), o.step_mm = -0.1;
    expect(TK_ERR_ARGUMENT, o, "step");
    o = default_options(), o.max_angle_deg = 120;
    expect(TK_ERR_ARGUMENT, o, "maximum angle");
    o = default_options(), o.cutoff = std::nan("");
    expect(TK_ERR_ARGUMENT, o, "cutoff");
    o = default_options(), o.min_length_mm = 20, o.max_length_mm = 10;
    expect(TK_ERR_ARGUMENT, o, "exceeds");
    o = default_options(), o.chunk_seeds = 0;
    expect(TK_ERR_ARGUMENT, o, "chunk");
    o = default_options(), o.algorithm = TK_TRACK_IFOD1, o.max_trials = (1 << 20) + 1; // trial streams: 2^20 a step
    expect(TK_ERR_ARGUMENT, o, "trials per step");
    o = default_options(), o.backend = TK_BACKEND_AUTO;
    expect(TK_ERR_ARGUMENT, o, "auto");
    o = default_options(), o.backend = TK_BACKEND_CUDA, o.cuda_device = -1;
    expect(TK_ERR_ARGUMENT, o, "CUDA device");
    o = default_options();
    tk_tracking_grid singular = g;
    singular.vox2world[10] = 0;
    expect(TK_ERR_ARGUMENT, o, "singular", &singular);
    tk_tracking_grid empty = g;
    empty.dims[1] = 0;
    expect(TK_ERR_ARGUMENT, o, "zero dimension", &empty);
}

}  // namespace
