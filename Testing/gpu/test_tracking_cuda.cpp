// The CUDA tracker against the CPU tracker (label gpu; skips without a GPU or without CUDA).
//
// The GPU runs the CPU's own streamline code (tracking_streamline.h and the headers it
// includes, compiled for the device with no fused multiply-adds), with the same Philox
// streams keyed by (rng_seed, seed index).  Every double operation but the C library's
// transcendental functions therefore rounds as on the CPU.  SD_STREAM uses none of them on
// its path (sqrt, floor and round are exact), nor does iFOD1 at lmax <= 8 and FOD power 1,
// the defaults (its cone's draws take no sine since session 25; above lmax 8 the series'
// value takes atan2, sines and cosines, at another power pow: CUDA rounds them within an ulp
// or two of glibc): both are checked to the bit (the BitForBit tests).  The other
// tests allow what rounding could still do, and bound it:
//   - the same seeds give streamlines on both (the same count and seed indices);
//   - each pair's points, counted outwards from the seed, agree within 1e-3 mm over the
//     points both have;
//   - a pair may differ in length (a stop test, such as the cutoff or the angle, decided the
//     other way by a last-bit difference) for at most 1% of the streamlines.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gpu_skip.h"
#include "tk_cuda_memory.h"
#include "tk_bench_hooks.h"
#include "tk_device.h"
#include "tk_tracking.h"
#include "tracking_test_util.h"

using namespace tk_track_test;

namespace {

// One run on one backend; the create's and execute's statuses kept for the skip rule.
struct TrackOnce {
    tk_tracking_result result{};
    tk_tracking_stats stats{};
    tk_status status = TK_OK;
    std::string error;
    ~TrackOnce() { tk_tracking_result_free(&result); }
    TrackOnce() = default;
    TrackOnce(const TrackOnce &) = delete;
    TrackOnce &operator=(const TrackOnce &) = delete;
};

void track(TrackOnce &run, const Volume &vol, tk_tracking_options o, tk_backend backend, const tk_tracking_seeds &seeds,
           const tk_tracking_regions *regions = nullptr)
{
    o.backend = backend;
    tk_tracking_plan *plan = nullptr;
    run.status = tk_tracking_plan_create(&o, &vol.grid, &plan);
    if (run.status == TK_OK)
        run.status = tk_tracking_collect(plan, vol.sh.data(), vol.sh.size(), regions, &seeds, &run.result, &run.stats);
    if (run.status != TK_OK) run.error = tk_last_error();
    tk_tracking_plan_destroy(plan);
}

// The index of streamline s's seed among its points: the point equal to the seed as float
// (the seed is stored as given, and both halves grow away from it).
size_t seed_position(const tk_tracking_result &r, size_t s, const double *seed)
{
    const float *p = r.points + 3 * r.offset[s];
    for (size_t i = 0; i < r.num_points[s]; ++i)
        if (p[3 * i] == (float)seed[0] && p[3 * i + 1] == (float)seed[1] && p[3 * i + 2] == (float)seed[2]) return i;
    return r.num_points[s];
}

double distance(const float *a, const float *b)
{
    const double d0 = (double)a[0] - b[0], d1 = (double)a[1] - b[1], d2 = (double)a[2] - b[2];
    return std::sqrt(d0 * d0 + d1 * d1 + d2 * d2);
}

struct Comparison {
    size_t streamlines = 0, length_differs = 0;
    double worst = 0; // mm, over the points compared
};

// CPU and GPU results of one run: the same streamlines in seed order, and the rule above.
// seeds: the world seed of each seed index, to align a pair at its seed; empty for mask
// seeding (the seed drawn within its voxel is not known here), where a pair of one length
// is compared from its first points and a pair of two lengths is only counted.
Comparison compare(const TrackOnce &cpu, const TrackOnce &gpu, const std::vector<double> &seeds)
{
    Comparison c;
    const tk_tracking_result &a = cpu.result, &b = gpu.result;
    EXPECT_EQ(a.num_streamlines, b.num_streamlines) << "the same seeds must give streamlines";
    if (a.num_streamlines != b.num_streamlines) return c;
    c.streamlines = a.num_streamlines;
    for (size_t s = 0; s < a.num_streamlines; ++s) {
        EXPECT_EQ(a.seed_index[s], b.seed_index[s]) << "streamline " << s;
        if (a.seed_index[s] != b.seed_index[s]) return c;
        const size_t na = a.num_points[s], nb = b.num_points[s];
        if (na != nb) ++c.length_differs;
        // align at the seed: points before it are the first half reversed, after it the second
        size_t ka = 0, kb = 0;
        if (!seeds.empty()) {
            const double *seed = &seeds[3 * a.seed_index[s]];
            ka = seed_position(a, s, seed), kb = seed_position(b, s, seed);
            EXPECT_LT(ka, na) << "streamline " << s << ": no point at its seed (CPU)";
            EXPECT_LT(kb, nb) << "streamline " << s << ": no point at its seed (GPU)";
            if (ka >= na || kb >= nb) continue;
        } else if (na != nb) {
            continue; // mask seeding: lengths differ, so no alignment; counted above
        }
        const float *pa = a.points + 3 * a.offset[s], *pb = b.points + 3 * b.offset[s];
        // outwards from the seed, each way, over the points both have
        for (int way = -1; way <= 1; way += 2)
            for (size_t step = way < 0 ? 1 : 0;; ++step) {
                const long ia = (long)ka + way * (long)step, ib = (long)kb + way * (long)step;
                if (ia < 0 || ib < 0 || ia >= (long)na || ib >= (long)nb) break;
                c.worst = std::max(c.worst, distance(pa + 3 * ia, pb + 3 * ib));
            }
    }
    return c;
}

// 1% of n, at least 1 where n > 0 (a last-bit difference is rare, not impossible).
size_t one_percent(size_t n) { return n ? std::max<size_t>(1, n / 100) : 0; }

// A field of curved and crossing fibers with weak and empty voxels: random lobes per voxel
// (a fixed std::mt19937 seed), around an arc so that streamlines run long enough to meet the
// angle, cutoff, edge and length limits.
Volume busy_field()
{
    std::mt19937 gen(2024);
    std::uniform_real_distribution<double> u(-1, 1), amp(0.05, 1.0), chance(0, 1);
    return make_volume(identity_grid(20, 20, 6), [&](size_t i, size_t j, size_t, const double *p, double *c) {
        if (chance(gen) < 0.04) return; // outside the FOD's support
        const double r = std::hypot(p[0], p[1]);
        if (r > 1) {
            const double t[3] = {-p[1] / r, p[0] / r, 0.15 * u(gen)};
            add_lobe(c, t, amp(gen) + 0.3);
        }
        if ((i + j) % 3 == 0) {
            const double d[3] = {u(gen), u(gen), u(gen)};
            add_lobe(c, d, amp(gen));
        }
    });
}

std::vector<double> random_points(const Volume &vol, size_t n, unsigned seed)
{
    std::mt19937 gen(seed);
    std::vector<double> pts(3 * n);
    for (size_t s = 0; s < n; ++s)
        for (int a = 0; a < 3; ++a) {
            std::uniform_real_distribution<double> u(0, (double)vol.grid.dims[a] - 1);
            pts[3 * s + a] = u(gen);
        }
    return pts;
}

void expect_same_stats(const tk_tracking_stats &a, const tk_tracking_stats &b)
{
    EXPECT_EQ(a.seeds, b.seeds);
    EXPECT_EQ(a.accepted, b.accepted);
    EXPECT_EQ(a.rejected_seed, b.rejected_seed);
    EXPECT_EQ(a.rejected_no_propagation, b.rejected_no_propagation);
    EXPECT_EQ(a.rejected_too_short, b.rejected_too_short);
    EXPECT_EQ(a.rejected_exclude, b.rejected_exclude);
    EXPECT_EQ(a.rejected_missed_include, b.rejected_missed_include);
    EXPECT_EQ(a.ended_exit_image + a.ended_model + a.ended_curvature + a.ended_max_length + a.ended_exit_mask +
                  a.ended_calibrator,
              b.ended_exit_image + b.ended_model + b.ended_curvature + b.ended_max_length + b.ended_exit_mask +
                  b.ended_calibrator);
}

// o run on the GPU, then on the CPU (omp): skipped without a GPU, and both must succeed with
// more than at_least streamlines on the CPU.  The caller goes on only where
// ran_both() says so (a skip or a fatal failure here returns from this function alone).
void track_both(const Volume &vol, const tk_tracking_options &o, const tk_tracking_seeds &seeds,
                const tk_tracking_regions *regions, size_t at_least, TrackOnce &gpu, TrackOnce &cpu)
{
    track(gpu, vol, o, TK_BACKEND_CUDA, seeds, regions);
    TK_SKIP_IF_NO_GPU(gpu.status);
    ASSERT_EQ(gpu.status, TK_OK) << gpu.error;
    track(cpu, vol, o, TK_BACKEND_OMP, seeds, regions);
    ASSERT_EQ(cpu.status, TK_OK) << cpu.error;
    ASSERT_GT(cpu.result.num_streamlines, at_least) << "the field must give streamlines to compare";
}

bool ran_both() { return !::testing::Test::IsSkipped() && !::testing::Test::HasFatalFailure(); }

// Runs o on the CPU (omp) and the GPU and compares them by the rule at the top.
void cpu_vs_gpu(const Volume &vol, const tk_tracking_options &o, const std::vector<double> &points,
                const tk_tracking_seeds &seeds, const tk_tracking_regions *regions, bool exact_stats)
{
    TrackOnce gpu, cpu;
    track_both(vol, o, seeds, regions, 10, gpu, cpu);
    if (!ran_both()) return;
    const Comparison c = compare(cpu, gpu, points);
    std::printf("CPU vs GPU: %zu streamlines, %zu differ in length; farthest points %.3g mm\n", c.streamlines,
                c.length_differs, c.worst);
    EXPECT_LE(c.worst, 1e-3) << "points of a pair more than 1e-3 mm apart";
    EXPECT_LE(c.length_differs, one_percent(c.streamlines)) << "pairs of another length (a stop test within rounding)";
    if (exact_stats && c.length_differs == 0) expect_same_stats(cpu.stats, gpu.stats);
}

TEST(TrackingCuda, SdStreamMatchesTheCpuOnABusyFieldFromPointSeeds)
{
    const Volume vol = busy_field();
    const std::vector<double> points = random_points(vol, 3000, 7);
    tk_tracking_options o = default_options();
    o.rng_seed = 11;
    cpu_vs_gpu(vol, o, points, point_seeds(points), nullptr, true);
}

TEST(TrackingCuda, SdStreamMatchesTheCpuWithRegionsAndMaskSeeds)
{
    const Volume vol = busy_field();
    std::vector<uint8_t> seed_mask(vol.voxels(), 0), stop(vol.voxels(), 1), exclude(vol.voxels(), 0),
        include(vol.voxels(), 0);
    for (size_t k = 0; k < 6; ++k)
        for (size_t j = 0; j < 20; ++j)
            for (size_t i = 0; i < 20; ++i) {
                seed_mask[vol.index(i, j, k)] = (i + 2 * j + k) % 5 == 0;
                stop[vol.index(i, j, k)] = !(i == 19 && j < 5);
                exclude[vol.index(i, j, k)] = i < 3 && j > 15;
                include[vol.index(i, j, k)] = i > 8;
            }
    const uint8_t *inc[1] = {include.data()};
    tk_tracking_regions r{};
    r.mask_voxels = vol.voxels(), r.stop_mask = stop.data(), r.exclude = exclude.data();
    r.include = inc, r.num_include = 1;
    tk_tracking_seeds seeds{};
    seeds.mask = seed_mask.data(), seeds.mask_voxels = vol.voxels(), seeds.per_voxel = 4;
    tk_tracking_options o = default_options();
    o.rng_seed = 5, o.chunk_seeds = 300;
    cpu_vs_gpu(vol, o, {}, seeds, &r, true);
}

// SD_STREAM uses no transcendental function on its path, so the GPU's streamlines are the
// CPU's to the bit, whichever lanes a seed the GPU takes (TK_TRACK_SD_LANES: the group kernel
// at 8 and 16, the warp kernel at 32; the CPU sums in the same lanes' order): the same
// streamlines, seed indices, float points and tallies, from point seeds and from mask seeds
// with regions.
// The field, point seeds and mask seeds with stop, exclude and include regions of the
// bit-for-bit tests below.
struct BitForBitSetUp {
    Volume vol = busy_field();
    std::vector<double> points = random_points(vol, 3000, 17);
    std::vector<uint8_t> seed_mask, stop, exclude, include;
    const uint8_t *inc[1] = {nullptr};
    tk_tracking_regions regions{};
    tk_tracking_seeds mask_seeds{};
    BitForBitSetUp()
        : seed_mask(vol.voxels(), 0), stop(vol.voxels(), 1), exclude(vol.voxels(), 0), include(vol.voxels(), 0)
    {
        for (size_t k = 0; k < 6; ++k)
            for (size_t j = 0; j < 20; ++j)
                for (size_t i = 0; i < 20; ++i) {
                    seed_mask[vol.index(i, j, k)] = (i + j + 2 * k) % 4 == 0;
                    stop[vol.index(i, j, k)] = !(j == 19 && i < 6);
                    exclude[vol.index(i, j, k)] = i > 16 && j < 3;
                    include[vol.index(i, j, k)] = j > 6;
                }
        inc[0] = include.data();
        regions.mask_voxels = vol.voxels(), regions.stop_mask = stop.data(), regions.exclude = exclude.data();
        regions.include = inc, regions.num_include = 1;
        mask_seeds.mask = seed_mask.data(), mask_seeds.mask_voxels = vol.voxels(), mask_seeds.per_voxel = 3;
    }
    // o run on the GPU and the CPU (omp), point seeds or (masked) mask seeds with the regions:
    // the same streamlines, seed indices, float points and tallies
    void expect_bit_for_bit(const tk_tracking_options &o, int masked, const std::string &label)
    {
        const tk_tracking_seeds seeds = masked ? mask_seeds : point_seeds(points);
        const tk_tracking_regions *r = masked ? &regions : nullptr;
        TrackOnce gpu, cpu;
        track_both(vol, o, seeds, r, 50, gpu, cpu);
        if (!ran_both()) return;
        const Flat a = flatten(cpu.result), b = flatten(gpu.result);
        EXPECT_EQ(a.counts, b.counts) << label;
        EXPECT_EQ(a.index, b.index) << label;
        size_t differ = 0;
        if (a.points.size() == b.points.size())
            for (size_t i = 0; i < a.points.size(); ++i) differ += a.points[i] != b.points[i];
        EXPECT_TRUE(a.points.size() == b.points.size() && differ == 0)
            << label << ": " << differ << " of " << a.points.size() << " point coordinates differ";
        expect_same_stats(cpu.stats, gpu.stats);
        std::printf("%s: %zu streamlines, %zu points, bit for bit\n", label.c_str(), a.counts.size(), a.points.size() / 3);
    }
};

// SD_STREAM uses no transcendental function on its path, so the GPU's streamlines are the
// CPU's to the bit, whichever lanes a seed the GPU takes (TK_TRACK_SD_LANES: the group kernel
// at 8 and 16, the warp kernel at 32; the CPU sums in the same lanes' order): the same
// streamlines, seed indices, float points and tallies, from point seeds and from mask seeds
// with regions.
TEST(TrackingCuda, SdStreamIsTheCpusBitForBitAtEveryLaneCount)
{
    BitForBitSetUp set_up;
    for (const char *lanes : {"8", "16", "32"})
        for (int masked = 0; masked < 2; ++masked) {
            ScopedEnv env("TK_TRACK_SD_LANES", lanes);
            tk_tracking_options o = default_options();
            o.rng_seed = 31 + masked;
            set_up.expect_bit_for_bit(o, masked, std::string(lanes) + " lanes, " + (masked ? "mask seeds and regions" : "point seeds"));
        }
}

// iFOD1 neither, since its cone's draws lost their sines and cosines (tracking_directions.h):
// each trial's direction, FOD value and acceptance are the same operations on both, so the
// GPU's warp, which tries 32 trials at once and takes the first accepted, gives the CPU's
// streamlines to the bit.
TEST(TrackingCuda, Ifod1IsTheCpusBitForBit)
{
    BitForBitSetUp set_up;
    for (double angle : {15.0, 45.0})
        for (int masked = 0; masked < 2; ++masked) {
            tk_tracking_options o = default_options();
            o.algorithm = TK_TRACK_IFOD1, o.rng_seed = 3 + masked, o.max_trials = 200, o.max_angle_deg = angle;
            set_up.expect_bit_for_bit(o, masked, "iFOD1 at " + std::to_string((int)angle) + " degrees, " + (masked ? "mask seeds and regions" : "point seeds"));
        }
}

// The GPU's streamlines whatever the chunks and launches: algorithm's run on 700 points at
// chunks of 1, 7, 256 and 4096 seeds, a launch a chunk and the default launches, all equal
// to the first to the bit.  SD_STREAM's group kernel at a chunk of 1 or 7 seeds leaves most
// of a launch's groups without a seed from the first turn.
void expect_chunks_do_not_change_the_streamlines(tk_tracking_algorithm algorithm, uint64_t rng_seed)
{
    const Volume vol = busy_field();
    const std::vector<double> points = random_points(vol, 700, 9);
    tk_tracking_options o = default_options();
    o.algorithm = algorithm, o.rng_seed = rng_seed, o.max_trials = 100;
    std::vector<Flat> runs;
    // fill 1: a launch a chunk (the GPU's work cut at every chunk boundary); 0: the default,
    // one launch of every seed here, handed to the sink in chunks
    for (size_t fill : {size_t(1), size_t(0)})
        for (size_t chunk : {size_t(1), size_t(7), size_t(256), size_t(4096)}) {
            o.chunk_seeds = chunk;
            tk_tracking_cuda_set_launch_fill(fill);
            TrackOnce gpu;
            track(gpu, vol, o, TK_BACKEND_CUDA, point_seeds(points));
            tk_tracking_cuda_set_launch_fill(0);
            TK_SKIP_IF_NO_GPU(gpu.status);
            ASSERT_EQ(gpu.status, TK_OK) << gpu.error;
            runs.push_back(flatten(gpu.result));
            EXPECT_GT(runs.back().counts.size(), 10u);
            EXPECT_TRUE(runs.back() == runs.front())
                << "chunks of " << chunk << " seeds (launch fill " << fill << ") changed the streamlines";
        }
}

TEST(TrackingCuda, ChunkSizeDoesNotChangeTheStreamlines)
{
    expect_chunks_do_not_change_the_streamlines(TK_TRACK_IFOD1, 21);
}

TEST(TrackingCuda, ChunkSizeDoesNotChangeSdStreamsStreamlines)
{
    expect_chunks_do_not_change_the_streamlines(TK_TRACK_SD_STREAM, 22);
}

// A plan for the cuda backend on busy_field() and num_points random seed points (drawn with
// key), chunks of chunk_seeds; status is the create's, for the skip rule.  The plan's runs go
// through collect and execute.
struct CudaPlan {
    const Volume vol = busy_field();
    const std::vector<double> points;
    const tk_tracking_seeds seeds;
    tk_tracking_plan *plan = nullptr;
    tk_status status;
    CudaPlan(size_t num_points, unsigned key, size_t chunk_seeds)
        : points(random_points(vol, num_points, key)), seeds(point_seeds(points))
    {
        tk_tracking_options o = default_options();
        o.backend = TK_BACKEND_CUDA, o.chunk_seeds = chunk_seeds;
        status = tk_tracking_plan_create(&o, &vol.grid, &plan);
    }
    ~CudaPlan() { destroy(); }
    CudaPlan(const CudaPlan &) = delete;
    CudaPlan &operator=(const CudaPlan &) = delete;
    void destroy() { tk_tracking_plan_destroy(plan), plan = nullptr; }
    tk_status collect(tk_tracking_result *result, const tk_tracking_regions *regions = nullptr,
                      tk_tracking_stats *stats = nullptr) const
    {
        return tk_tracking_collect(plan, vol.sh.data(), vol.sh.size(), regions, &seeds, result, stats);
    }
    tk_status execute(tk_tracking_sink sink, void *user) const
    {
        return tk_tracking_plan_execute(plan, vol.sh.data(), vol.sh.size(), nullptr, &seeds, sink, user, nullptr, nullptr);
    }
};

// Counts the sink's chunks and checks their order.
struct SinkLog {
    size_t chunks = 0, streamlines = 0;
    uint64_t last_index = 0, seeds_done = 0;
    bool in_order = true;
};

tk_status log_sink(const tk_tracking_chunk *c, void *user)
{
    SinkLog *log = static_cast<SinkLog *>(user);
    ++log->chunks;
    for (size_t s = 0; s < c->num_streamlines; ++s) {
        if (log->streamlines && c->seed_index[s] <= log->last_index) log->in_order = false;
        log->last_index = c->seed_index[s], ++log->streamlines;
    }
    if (c->seeds_done <= log->seeds_done && log->chunks > 1) log->in_order = false;
    log->seeds_done = c->seeds_done;
    return TK_OK;
}

TEST(TrackingCuda, APlanExecutesTwiceAndReleasesItsMemory)
{
    const size_t before = tk_cuda_memory_in_use();
    CudaPlan p(500, 10, 128);
    TK_SKIP_IF_NO_GPU(p.status);
    ASSERT_EQ(p.status, TK_OK) << tk_last_error();
    tk_tracking_result first{}, second{}, third{};
    EXPECT_EQ(p.collect(&first), TK_OK) << tk_last_error();
    EXPECT_GT(tk_cuda_memory_in_use(), before) << "the plan holds its buffers between executes";
    EXPECT_EQ(p.collect(&second), TK_OK) << tk_last_error();
    EXPECT_TRUE(flatten(first) == flatten(second)) << "a second execute of the plan gave other streamlines";
    // a third with regions (the buffers grow for them) and a sink that checks the order
    const Volume &vol = p.vol;
    std::vector<uint8_t> include(vol.voxels(), 0), other(vol.voxels(), 0);
    for (size_t v = 0; v < vol.voxels(); ++v) include[v] = v % 20 > 10, other[v] = v % 20 < 6;
    const uint8_t *inc[2] = {include.data(), other.data()};
    tk_tracking_regions r{};
    r.mask_voxels = vol.voxels(), r.include = inc, r.num_include = 2;
    tk_tracking_stats stats{};
    EXPECT_EQ(p.collect(&third, &r, &stats), TK_OK) << tk_last_error();
    EXPECT_LT(third.num_streamlines, first.num_streamlines);
    EXPECT_GT(stats.rejected_missed_include, 0u);
    SinkLog log;
    EXPECT_EQ(p.execute(log_sink, &log), TK_OK) << tk_last_error();
    EXPECT_TRUE(log.in_order);
    EXPECT_EQ(log.chunks, (p.points.size() / 3 + 127) / 128);
    EXPECT_EQ(log.streamlines, first.num_streamlines);
    tk_tracking_result_free(&first), tk_tracking_result_free(&second), tk_tracking_result_free(&third);
    p.destroy();
    EXPECT_EQ(tk_cuda_memory_in_use(), before) << "GPU memory outlived the plan";
}

TEST(TrackingCuda, ABadDeviceNumberIsAClearError)
{
    const Volume vol = busy_field();
    tk_tracking_options o = default_options();
    o.backend = TK_BACKEND_CUDA;
    tk_tracking_plan *plan = nullptr;
    tk_status s = tk_tracking_plan_create(&o, &vol.grid, &plan);
    TK_SKIP_IF_NO_GPU(s);
    ASSERT_EQ(s, TK_OK) << tk_last_error();
    tk_tracking_plan_destroy(plan);
    o.cuda_device = 999;
    EXPECT_EQ(tk_tracking_plan_create(&o, &vol.grid, &plan), TK_ERR_ARGUMENT);
    EXPECT_EQ(plan, nullptr);
    EXPECT_NE(std::strstr(tk_last_error(), "CUDA device 999 does not exist"), nullptr) << tk_last_error();
    o.cuda_device = -1;
    EXPECT_EQ(tk_tracking_plan_create(&o, &vol.grid, &plan), TK_ERR_ARGUMENT);
    EXPECT_NE(std::strstr(tk_last_error(), "CUDA device"), nullptr) << tk_last_error();
}

// A sink's error stops the GPU run, which returns it, and the plan still works after.
tk_status failing_sink(const tk_tracking_chunk *, void *) { return tk_set_error(TK_ERR_IO, "disk full (test)"); }

TEST(TrackingCuda, ASinkErrorStopsTheRun)
{
    CudaPlan p(300, 12, 64);
    TK_SKIP_IF_NO_GPU(p.status);
    ASSERT_EQ(p.status, TK_OK) << tk_last_error();
    EXPECT_EQ(p.execute(failing_sink, nullptr), TK_ERR_IO);
    EXPECT_NE(std::strstr(tk_last_error(), "disk full"), nullptr) << tk_last_error();
    tk_tracking_result r{};
    EXPECT_EQ(p.collect(&r), TK_OK) << tk_last_error();
    EXPECT_GT(r.num_streamlines, 0u);
    tk_tracking_result_free(&r);
}

// ---- the pipelined launches against the serial path (TK_TRACK_CUDA_SERIAL) ----------------

// Sets TK_TRACK_CUDA_SERIAL for a scope (read at plan create), and the launch fill; both
// restored after.
struct PathAndFill {
    PathAndFill(const char *serial, size_t fill)
    {
        if (serial) setenv("TK_TRACK_CUDA_SERIAL", serial, 1);
        else unsetenv("TK_TRACK_CUDA_SERIAL");
        tk_tracking_cuda_set_launch_fill(fill);
    }
    ~PathAndFill()
    {
        unsetenv("TK_TRACK_CUDA_SERIAL");
        tk_tracking_cuda_set_launch_fill(0);
    }
    PathAndFill(const PathAndFill &) = delete;
    PathAndFill &operator=(const PathAndFill &) = delete;
};

// The pipeline (two sets, launch k + 1 running while launch k is packed and handed out) and
// the serial path give the same streamlines, to the bit, and the same counts, with launches
// of 37 seeds (19 launches of 700 seeds: many rounds, each set reused, the last launch short)
// handed out in chunks of 16 and of 100 seeds (several chunks a launch, a chunk over launches).
void expect_serial_and_pipelined_agree(tk_tracking_algorithm algorithm)
{
    const Volume vol = busy_field();
    const std::vector<double> points = random_points(vol, 700, 31);
    tk_tracking_options o = default_options();
    o.algorithm = algorithm, o.rng_seed = 5, o.max_trials = 100;
    for (size_t chunk : {size_t(16), size_t(100)}) {
        o.chunk_seeds = chunk;
        TrackOnce serial, pipelined;
        {
            PathAndFill path("1", 37);
            track(serial, vol, o, TK_BACKEND_CUDA, point_seeds(points));
        }
        TK_SKIP_IF_NO_GPU(serial.status);
        ASSERT_EQ(serial.status, TK_OK) << serial.error;
        {
            PathAndFill path(nullptr, 37);
            track(pipelined, vol, o, TK_BACKEND_CUDA, point_seeds(points));
        }
        ASSERT_EQ(pipelined.status, TK_OK) << pipelined.error;
        EXPECT_GT(serial.result.num_streamlines, 10u);
        EXPECT_TRUE(flatten(serial.result) == flatten(pipelined.result))
            << "the pipeline changed the streamlines (chunks of " << chunk << " seeds)";
        EXPECT_EQ(std::memcmp(&serial.stats, &pipelined.stats, sizeof serial.stats), 0) << "the counts differ";
    }
}

TEST(TrackingCuda, ThePipelineGivesTheSerialPathsSdStreamStreamlines)
{
    expect_serial_and_pipelined_agree(TK_TRACK_SD_STREAM);
}

TEST(TrackingCuda, ThePipelineGivesTheSerialPathsIfod1Streamlines)
{
    expect_serial_and_pipelined_agree(TK_TRACK_IFOD1);
}

// A sink that fails at its third chunk, counting its calls.
struct FailLater {
    size_t calls = 0;
};

tk_status fail_at_third(const tk_tracking_chunk *, void *user)
{
    FailLater *f = static_cast<FailLater *>(user);
    if (++f->calls == 3) return tk_set_error(TK_ERR_IO, "disk full at chunk 3 (test)");
    return TK_OK;
}

// A sink that fails with launches still in flight (300 seeds in launches of 40: rounds 0 and
// 1 queued at once, round 2 behind round 0's gather when round 1's first chunk fails): the
// run returns the sink's error, the sink is not called again, and the plan's next run is
// whole and equal to a fresh plan's; on both paths.
TEST(TrackingCuda, ASinkErrorMidPipelineStopsTheRunCleanly)
{
    for (const char *serial : {"0", "1"}) {
        PathAndFill path(serial, 40);
        CudaPlan p(300, 14, 20);
        TK_SKIP_IF_NO_GPU(p.status);
        ASSERT_EQ(p.status, TK_OK) << tk_last_error();
        FailLater f;
        EXPECT_EQ(p.execute(fail_at_third, &f), TK_ERR_IO) << "TK_TRACK_CUDA_SERIAL=" << serial;
        EXPECT_NE(std::strstr(tk_last_error(), "disk full at chunk 3"), nullptr) << tk_last_error();
        EXPECT_EQ(f.calls, 3u) << "the sink was called after it failed";
        tk_tracking_result after{}, fresh{};
        EXPECT_EQ(p.collect(&after), TK_OK) << tk_last_error();
        CudaPlan q(300, 14, 20);
        ASSERT_EQ(q.status, TK_OK) << tk_last_error();
        EXPECT_EQ(q.collect(&fresh), TK_OK) << tk_last_error();
        EXPECT_GT(after.num_streamlines, 0u);
        EXPECT_TRUE(flatten(after) == flatten(fresh)) << "the run after the failure differs";
        tk_tracking_result_free(&after), tk_tracking_result_free(&fresh);
    }
}

// The cuda backend checks the SH volume on the GPU, after its upload: the cpu backend's error,
// word for word, naming the first non-finite value wherever it lies (NaN, +inf, -inf; a second
// one after it not named), and the plan tracks on after it.
TEST(TrackingCuda, TheGpuNamesTheFirstNonFiniteCoefficientAsTheCpuDoes)
{
    CudaPlan p(200, 15, 64);
    TK_SKIP_IF_NO_GPU(p.status);
    ASSERT_EQ(p.status, TK_OK) << tk_last_error();
    tk_tracking_options o = default_options();
    o.backend = TK_BACKEND_CPU;
    tk_tracking_plan *cpu = nullptr;
    ASSERT_EQ(tk_tracking_plan_create(&o, &p.vol.grid, &cpu), TK_OK) << tk_last_error();
    const size_t n = p.vol.sh.size();
    const float bad[3] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity()};
    for (size_t at : {size_t(0), size_t(777), n / 2 + 3, n - 1})
        for (float value : bad) {
            std::vector<float> sh = p.vol.sh;
            sh[at] = value;
            if (at + 1000 < n) sh[at + 1000] = bad[0];
            tk_tracking_result r{};
            EXPECT_EQ(tk_tracking_collect(p.plan, sh.data(), n, nullptr, &p.seeds, &r, nullptr), TK_ERR_DATA);
            const std::string gpu_error = tk_last_error();
            tk_tracking_result_free(&r);
            EXPECT_EQ(tk_tracking_collect(cpu, sh.data(), n, nullptr, &p.seeds, &r, nullptr), TK_ERR_DATA);
            tk_tracking_result_free(&r);
            EXPECT_EQ(gpu_error, std::string(tk_last_error())) << "value " << value << " at " << at;
        }
    tk_tracking_plan_destroy(cpu);
    tk_tracking_result r{};
    EXPECT_EQ(p.collect(&r), TK_OK) << tk_last_error();
    EXPECT_GT(r.num_streamlines, 0u);
    tk_tracking_result_free(&r);
}

TEST(TrackingCuda, ABadSerialSettingIsAClearError)
{
    const Volume vol = busy_field();
    tk_tracking_options o = default_options();
    o.backend = TK_BACKEND_CUDA;
    tk_tracking_plan *plan = nullptr;
    tk_status s;
    {
        PathAndFill path("yes", 0);
        s = tk_tracking_plan_create(&o, &vol.grid, &plan);
    }
    tk_tracking_plan_destroy(plan);
    TK_SKIP_IF_NO_GPU(s);
    EXPECT_EQ(s, TK_ERR_ARGUMENT);
    EXPECT_NE(std::strstr(tk_last_error(), "TK_TRACK_CUDA_SERIAL"), nullptr) << tk_last_error();
}

}  // namespace

// ---- several GPUs (cuda_device_count) -----------------------------------------------------

namespace {

// The run on one GPU and on every visible one (on a one-GPU machine the same GPU twice):
// the same streamlines, seed indices and order, bit for bit, and the same counts.
void one_vs_every_gpu(const Volume &vol, tk_tracking_options o, const tk_tracking_seeds &seeds,
                      const tk_tracking_regions *regions)
{
    TrackOnce one, every;
    o.cuda_device_count = 1;
    track(one, vol, o, TK_BACKEND_CUDA, seeds, regions);
    TK_SKIP_IF_NO_GPU(one.status);
    ASSERT_EQ(one.status, TK_OK) << one.error;
    o.cuda_device_count = std::max(1, tk_cuda_device_count());
    track(every, vol, o, TK_BACKEND_CUDA, seeds, regions);
    ASSERT_EQ(every.status, TK_OK) << every.error;
    EXPECT_GT(one.result.num_streamlines, 10u);
    EXPECT_TRUE(flatten(one.result) == flatten(every.result)) << o.cuda_device_count << " GPUs changed the streamlines";
    EXPECT_EQ(std::memcmp(&one.stats, &every.stats, sizeof one.stats), 0) << "the counts differ";
}

}  // namespace

TEST(TrackingCuda, EveryVisibleGpuGivesOneGpusStreamlines)
{
    const Volume vol = busy_field();
    const std::vector<double> points = random_points(vol, 2000, 12);
    tk_tracking_options o = default_options();
    o.rng_seed = 4;
    for (size_t chunk : {size_t(7), size_t(4096)}) {  // shares of a few seeds, and one share a GPU
        o.chunk_seeds = chunk;
        o.algorithm = TK_TRACK_SD_STREAM;
        one_vs_every_gpu(vol, o, point_seeds(points), nullptr);
        if (IsSkipped() || HasFailure()) return;
        o.algorithm = TK_TRACK_IFOD1, o.max_trials = 100;
        one_vs_every_gpu(vol, o, point_seeds(points), nullptr);
        if (IsSkipped() || HasFailure()) return;
    }
    // mask seeds (drawn within their voxels from the seed index) and regions
    std::vector<uint8_t> seed_mask(vol.voxels(), 0), include(vol.voxels(), 0);
    for (size_t v = 0; v < vol.voxels(); ++v) seed_mask[v] = v % 3 == 0, include[v] = v % 7 < 4;
    const uint8_t *inc[1] = {include.data()};
    tk_tracking_regions r{};
    r.mask_voxels = vol.voxels(), r.include = inc, r.num_include = 1;
    tk_tracking_seeds seeds{};
    seeds.mask = seed_mask.data(), seeds.mask_voxels = vol.voxels(), seeds.per_voxel = 3;
    o.algorithm = TK_TRACK_SD_STREAM, o.chunk_seeds = 500;
    one_vs_every_gpu(vol, o, seeds, &r);
}

TEST(TrackingCuda, MoreGpusThanExistIsAClearError)
{
    const Volume vol = busy_field();
    tk_tracking_options o = default_options();
    o.backend = TK_BACKEND_CUDA;
    o.cuda_device_count = tk_cuda_device_count() + 1;
    tk_tracking_plan *plan = nullptr;
    const tk_status s = tk_tracking_plan_create(&o, &vol.grid, &plan);
    tk_tracking_plan_destroy(plan);
    TK_SKIP_IF_NO_GPU(s);
    EXPECT_EQ(s, TK_ERR_ARGUMENT) << tk_last_error();
    EXPECT_NE(std::string(tk_last_error()).find("found"), std::string::npos) << tk_last_error();
}
