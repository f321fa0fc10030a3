// Synthetic FOD fields for the tracking tests, and the tests' own (independent) trilinear
// interpolation and SH evaluation.  The fiber core's tk_sh_eval only builds the data: a
// lobe along unit u is the axially symmetric series sum_l w_l (2l+1)/(4 pi) P_l(u.x), whose
// coefficients are w_l Y_lm(u) (the addition theorem in an orthonormal basis).
#ifndef TK_TRACKING_TEST_UTIL_H
#define TK_TRACKING_TEST_UTIL_H

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "tk_fibers.h"
#include "tk_tracking.h"

namespace tk_track_test {

constexpr int kLmax = 8;
constexpr int kCoeffs = 45;
constexpr double kPi = 3.14159265358979323846;

// Band weights of a sharp lobe: a truncated delta smoothed by exp(-l(l+1)/40), scaled so that
// the lobe's amplitude at its axis is 1.
inline std::vector<double> lobe_weights()
{
    std::vector<double> w(kLmax + 1, 0.0);
    double peak = 0;
    for (int l = 0; l <= kLmax; l += 2) {
        w[l] = std::exp(-l * (l + 1) / 40.0);
        peak += w[l] * (2 * l + 1) / (4 * kPi);
    }
    for (double &x : w) x /= peak;
    return w;
}

// Adds amplitude x the lobe along u (any length) to c[kCoeffs].
inline void add_lobe(double *c, const double *u, double amplitude)
{
    static const std::vector<double> w = lobe_weights();
    double y[kCoeffs];
    ASSERT_EQ(tk_sh_eval(TK_SH_TOURNIER, 0, kLmax, u, y), TK_OK);
    for (int l = 0; l <= kLmax; l += 2)
        for (int m = -l; m <= l; ++m) {
            const int j = l * (l + 1) / 2 + m;
            c[j] += amplitude * w[l] * y[j];
        }
}

inline double sh_value(const double *c, const double *dir)
{
    double y[kCoeffs];
    EXPECT_EQ(tk_sh_eval(TK_SH_TOURNIER, 0, kLmax, dir, y), TK_OK);
    double s = 0;
    for (int j = 0; j < kCoeffs; ++j) s += c[j] * y[j];
    return s;
}

// A volume on a grid; fill(voxel i, j, k, world point, coefficients) sets each voxel.
struct Volume {
    tk_tracking_grid grid{};
    std::vector<float> sh;
    size_t voxels() const { return grid.dims[0] * grid.dims[1] * grid.dims[2]; }
    size_t index(size_t i, size_t j, size_t k) const { return i + grid.dims[0] * (j + grid.dims[1] * k); }
    void world(const double *v, double *p) const
    {
        for (int r = 0; r < 3; ++r)
            p[r] = grid.vox2world[r * 4] * v[0] + grid.vox2world[r * 4 + 1] * v[1] + grid.vox2world[r * 4 + 2] * v[2] +
                   grid.vox2world[r * 4 + 3];
    }
};

inline tk_tracking_grid identity_grid(size_t nx, size_t ny, size_t nz)
{
    tk_tracking_grid g{};
    g.dims[0] = nx, g.dims[1] = ny, g.dims[2] = nz;
    for (int r = 0; r < 4; ++r) g.vox2world[r * 5] = 1.0;
    return g;
}

inline Volume make_volume(const tk_tracking_grid &grid,
                          const std::function<void(size_t, size_t, size_t, const double *, double *)> &fill)
{
    Volume v;
    v.grid = grid;
    v.sh.assign(v.voxels() * kCoeffs, 0.f);
    for (size_t k = 0; k < grid.dims[2]; ++k)
        for (size_t j = 0; j < grid.dims[1]; ++j)
            for (size_t i = 0; i < grid.dims[0]; ++i) {
                double c[kCoeffs] = {0}, vox[3] = {(double)i, (double)j, (double)k}, p[3];
                v.world(vox, p);
                fill(i, j, k, p, c);
                for (int q = 0; q < kCoeffs; ++q) v.sh[v.index(i, j, k) * kCoeffs + q] = (float)c[q];
            }
    return v;
}

// The tests' own trilinear interpolation at voxel coordinates v (inside the grid, away from
// its edges), in double.
inline void interpolate(const Volume &vol, const double *v, double *out)
{
    const size_t i0 = (size_t)std::floor(v[0]), j0 = (size_t)std::floor(v[1]), k0 = (size_t)std::floor(v[2]);
    const double fx = v[0] - i0, fy = v[1] - j0, fz = v[2] - k0;
    for (int q = 0; q < kCoeffs; ++q) out[q] = 0;
    for (int c = 0; c < 8; ++c) {
        const size_t i = i0 + (c & 1), j = j0 + ((c >> 1) & 1), k = k0 + ((c >> 2) & 1);
        const double w = ((c & 1) ? fx : 1 - fx) * (((c >> 1) & 1) ? fy : 1 - fy) * (((c >> 2) & 1) ? fz : 1 - fz);
        for (int q = 0; q < kCoeffs; ++q) out[q] += w * vol.sh[vol.index(i, j, k) * kCoeffs + q];
    }
}

// Sets an environment variable for a scope (value nullptr: unset), then restores it: the
// tracker's knobs (TK_TRACK_SD_LANES, read at plan create; TK_TRACK_NO_AVX2 and
// TK_TRACK_VOLUME_COPY, read at each execute).
class ScopedEnv {
public:
    ScopedEnv(const char *name, const char *value) : name_(name)
    {
        const char *old = std::getenv(name);
        had_ = old != nullptr;
        if (had_) old_ = old;
        if (value) setenv(name, value, 1);
        else unsetenv(name);
    }
    ~ScopedEnv()
    {
        if (had_) setenv(name_.c_str(), old_.c_str(), 1);
        else unsetenv(name_.c_str());
    }
    ScopedEnv(const ScopedEnv &) = delete;
    ScopedEnv &operator=(const ScopedEnv &) = delete;

private:
    std::string name_, old_;
    bool had_ = false;
};

inline tk_tracking_options default_options()
{
    tk_tracking_options o;
    tk_tracking_options_init(&o, kLmax);
    return o;
}

// Plan, run and collect; fails the test on an error status.
struct TrackRun {
    tk_tracking_result result{};
    tk_tracking_stats stats{};
    tk_status status = TK_OK;
    ~TrackRun() { tk_tracking_result_free(&result); }
    size_t count() const { return result.num_streamlines; }
    size_t points(size_t s) const { return result.num_points[s]; }
    const float *point(size_t s, size_t i) const { return result.points + 3 * (result.offset[s] + i); }
    const float *last(size_t s) const { return point(s, points(s) - 1); }
};

inline void run_tracking(TrackRun &run, const Volume &vol, const tk_tracking_options &o, const tk_tracking_seeds &seeds,
                         const tk_tracking_regions *regions = nullptr)
{
    tk_tracking_plan *plan = nullptr;
    run.status = tk_tracking_plan_create(&o, &vol.grid, &plan);
    ASSERT_EQ(run.status, TK_OK) << tk_last_error();
    run.status = tk_tracking_collect(plan, vol.sh.data(), vol.sh.size(), regions, &seeds, &run.result, &run.stats);
    tk_tracking_plan_destroy(plan);
}

inline tk_tracking_seeds point_seeds(const std::vector<double> &points)
{
    tk_tracking_seeds s{};
    s.points = points.data();
    s.num_points = points.size() / 3;
    return s;
}

// One lobe of amplitude 1 along u in every voxel of the grid.
inline Volume lobe_field(const tk_tracking_grid &grid, const double *u)
{
    return make_volume(grid, [u](size_t, size_t, size_t, const double *, double *c) { add_lobe(c, u, 1.0); });
}

// Options that track from each seed along +x and that way only, so that the streamline's
// first point is its seed and its last where the field stops it.
inline tk_tracking_options one_way_along_x()
{
    tk_tracking_options o = default_options();
    o.seed_direction[0] = 1, o.unidirectional = 1;
    return o;
}

// Tracks the seed points into run; succeeds if the run succeeded with exactly one streamline
// (ASSERT_TRUE it before reading the streamline's points).
inline ::testing::AssertionResult tracks_one(TrackRun &run, const Volume &vol, const tk_tracking_options &o,
                                             const std::vector<double> &points,
                                             const tk_tracking_regions *regions = nullptr)
{
    run_tracking(run, vol, o, point_seeds(points), regions);
    if (run.status != TK_OK) return ::testing::AssertionFailure() << "status " << run.status << ": " << tk_last_error();
    if (run.count() != 1) return ::testing::AssertionFailure() << run.count() << " streamlines, not one";
    return ::testing::AssertionSuccess();
}

// A run's streamlines as plain vectors, to compare runs whole.
struct Flat {
    std::vector<size_t> counts;
    std::vector<uint64_t> index;
    std::vector<float> points;
    bool operator==(const Flat &o) const { return counts == o.counts && index == o.index && points == o.points; }
};

inline Flat flatten(const tk_tracking_result &r)
{
    Flat f;
    f.counts.assign(r.num_points, r.num_points + r.num_streamlines);
    f.index.assign(r.seed_index, r.seed_index + r.num_streamlines);
    if (r.total_points) f.points.assign(r.points, r.points + 3 * r.total_points);
    return f;
}

// A run is a function of its random key alone: o's run on the omp backend at 1, 2 and 4
// threads and chunks of 1, 7 and 4096 seeds is reference's (o's own) to the bit (streamlines,
// seed indices, points, seed tallies), and another key draws other streamlines.
inline void expect_keyed_reproducibly(const TrackRun &reference, const Volume &vol, const tk_tracking_options &o,
                                      const tk_tracking_seeds &seeds, uint64_t other_key)
{
    const Flat want = flatten(reference.result);
    for (int threads : {1, 2, 4})
        for (size_t chunk : {(size_t)1, (size_t)7, (size_t)4096}) {
            tk_tracking_options p = o;
            p.backend = TK_BACKEND_OMP, p.num_threads = threads, p.chunk_seeds = chunk;
            TrackRun run;
            run_tracking(run, vol, p, seeds);
            ASSERT_EQ(run.status, TK_OK) << tk_last_error();
            const Flat got = flatten(run.result);
            EXPECT_EQ(got.counts, want.counts) << threads << " threads, chunk " << chunk;
            EXPECT_EQ(got.index, want.index) << threads << " threads, chunk " << chunk;
            EXPECT_EQ(got.points, want.points) << threads << " threads, chunk " << chunk;
            EXPECT_EQ(run.stats.seeds, reference.stats.seeds);
            EXPECT_EQ(run.stats.accepted, reference.stats.accepted);
        }
    tk_tracking_options another = o;
    another.rng_seed = other_key;
    TrackRun other;
    run_tracking(other, vol, another, seeds);
    EXPECT_NE(flatten(other.result).points, want.points) << "key " << other_key << " drew the same streamlines";
}

inline double dist(const float *a, const float *b)
{
    const double d0 = a[0] - b[0], d1 = a[1] - b[1], d2 = a[2] - b[2];
    return std::sqrt(d0 * d0 + d1 * d1 + d2 * d2);
}

}  // namespace tk_track_test

#endif
