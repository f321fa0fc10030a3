// One batch over every visible GPU against the same batch on one GPU, for each per-voxel
// core (label gpu).  Voxels, tensors and matrices are independent and each device runs the
// one-device code on its contiguous share, so the results must agree bit for bit (memcmp,
// NaN patterns included).  With one visible GPU the comparisons skip, saying so; the
// refusal of more devices than exist runs on any GPU machine.  Without a GPU: skipped.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "eig_test_util.h"
#include "gpu_skip.h"
#include "tk_cuda_memory.h"
#include "tk_device.h"
#include "tk_eig.h"
#include "tk_fibers.h"
#include "tk_fixels.h"
#include "tk_sshopm.h"

namespace {

// A comparison of every visible GPU with one needs two: skip, saying so, with fewer.
#define TK_REQUIRE_TWO_GPUS()                                                                                   \
    do {                                                                                                        \
        if (tk_cuda_device_count() < 2)                                                                         \
            GTEST_SKIP() << "SKIPPED: " << tk_cuda_device_count() << " CUDA device(s) visible; a split needs 2"; \
    } while (0)

template <typename T> bool same_bits(const std::vector<T> &a, const std::vector<T> &b)
{
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

// ---- fibers ----------------------------------------------------------------------------

// Random SH volumes: a positive mean, anisotropic terms of either sign, some NaN voxels
// (counted as bad) and a mask that leaves some out.
struct ShVolume {
    std::vector<float> sh;
    std::vector<uint8_t> mask;
};

ShVolume random_sh(int lmax, size_t voxels, unsigned seed)
{
    const size_t k = tk_sh_num_coeffs(lmax);
    std::mt19937 rng(seed);
    std::normal_distribution<float> g(0.f, 0.25f);
    ShVolume v;
    v.sh.resize(voxels * k);
    v.mask.resize(voxels);
    for (size_t i = 0; i < voxels; ++i) {
        v.sh[i * k] = 1.f + std::fabs(g(rng));
        for (size_t j = 1; j < k; ++j) v.sh[i * k + j] = g(rng);
        if (i % 997 == 13) v.sh[i * k + 3] = NAN;
        v.mask[i] = i % 11 != 5;
    }
    return v;
}

struct Peaks {
    std::vector<float> dirs, amps;
    size_t bad = 0;
};

// Two executes on one plan (the second on other voxels), as a filter reuses its plan.
tk_status fibers_run(tk_fibers_options o, int devices, size_t max_voxels, const ShVolume &a, const ShVolume &b,
                     Peaks out[2])
{
    o.backend = TK_BACKEND_CUDA, o.cuda_device_count = devices;
    tk_fibers_plan *plan = nullptr;
    tk_status s = tk_fibers_plan_create(&o, max_voxels, &plan);
    const size_t k = tk_sh_num_coeffs(o.lmax);
    for (int r = 0; r < 2 && s == TK_OK; ++r) {
        const ShVolume &v = r ? b : a;
        const size_t voxels = v.sh.size() / k;
        out[r].dirs.assign(voxels * o.num_peaks * 3, -7.f);
        out[r].amps.assign(voxels * o.num_peaks, -7.f);
        s = tk_fibers_plan_execute(plan, voxels, v.sh.data(), r ? v.mask.data() : nullptr, out[r].dirs.data(),
                                   out[r].amps.data(), &out[r].bad, nullptr);
    }
    tk_fibers_plan_destroy(plan);
    return s;
}

// A plan over one device more than exist: TK_ERR_ARGUMENT naming how many were asked for and
// found, no plan, no GPU memory held (the check every core's create makes first).
void expect_too_many_devices_refused(tk_status s, const void *plan, int asked)
{
    EXPECT_EQ(s, TK_ERR_ARGUMENT);
    EXPECT_EQ(plan, nullptr);
    const std::string want = std::to_string(asked) + " CUDA devices from device 0 asked for, but " +
                             std::to_string(tk_cuda_device_count()) + " found";
    EXPECT_NE(std::string(tk_last_error()).find(want), std::string::npos) << tk_last_error();
    EXPECT_EQ(tk_cuda_memory_in_use(), 0u);
}

}  // namespace

TEST(MultiGpuFibers, EveryVisibleGpuGivesOneGpusPeaksBitForBit)
{
    TK_REQUIRE_TWO_GPUS();
    const int devices = tk_cuda_device_count();
    for (int lmax : {4, 8}) {
        tk_fibers_options o;
        tk_fibers_options_init(&o, lmax);
        o.num_peaks = 4, o.relative_threshold = 0.1;
        // an odd count, uneven shares; a plan of 3000 voxels: several chunks a device
        const ShVolume a = random_sh(lmax, 20011, 1 + lmax), b = random_sh(lmax, 7777, 100 + lmax);
        Peaks one[2], all[2];
        for (size_t max_voxels : {(size_t)3000, (size_t)0}) {
            ASSERT_EQ(fibers_run(o, 1, max_voxels, a, b, one), TK_OK) << tk_last_error();
            ASSERT_EQ(fibers_run(o, devices, max_voxels, a, b, all), TK_OK) << tk_last_error();
            for (int r = 0; r < 2; ++r) {
                EXPECT_TRUE(same_bits(one[r].dirs, all[r].dirs)) << "lmax " << lmax << " execute " << r;
                EXPECT_TRUE(same_bits(one[r].amps, all[r].amps)) << "lmax " << lmax << " execute " << r;
                EXPECT_EQ(one[r].bad, all[r].bad);
                EXPECT_GT(one[r].bad, 0u);  // the NaN voxels were seen, and summed over the devices
            }
        }
    }
    EXPECT_EQ(tk_cuda_memory_in_use(), 0u) << "a plan over several devices frees every device's buffers";
}

TEST(MultiGpuFibers, MoreDevicesThanExistIsAClearError)
{
    tk_fibers_options o;
    tk_fibers_options_init(&o, 4);
    o.backend = TK_BACKEND_CUDA, o.cuda_device_count = tk_cuda_device_count() + 1;
    tk_fibers_plan *plan = nullptr;
    const tk_status s = tk_fibers_plan_create(&o, 0, &plan);
    TK_SKIP_IF_NO_GPU(s);
    expect_too_many_devices_refused(s, plan, o.cuda_device_count);
}

// ---- SS-HOPM ---------------------------------------------------------------------------

namespace {

template <typename R> struct Starts {
    std::vector<R> lambda, x;
    std::vector<int32_t> iterations;
    std::vector<uint8_t> converged;
};

template <typename R>
tk_status sshopm_run(tk_sshopm_options o, int devices, size_t max_batch, const std::vector<R> &packed, Starts<R> &out)
{
    o.backend = TK_BACKEND_CUDA, o.cuda_device_count = devices;
    const size_t k = tk_sym_num_unique(o.order, o.dim), T = packed.size() / k, S = (size_t)o.num_starts;
    out.lambda.assign(T * S, R(-7));
    out.x.assign(T * S * o.dim, R(-7));
    out.iterations.assign(T * S, -7);
    out.converged.assign(T * S, 7);
    tk_sshopm_starts_result r = {out.lambda.data(), out.x.data(), out.iterations.data(), out.converged.data()};
    tk_sshopm_plan *plan = nullptr;
    tk_status s = tk_sshopm_plan_create(&o, max_batch, &plan);
    if (s == TK_OK) s = tk_sshopm_plan_execute(plan, T, packed.data(), &r, nullptr);
    tk_sshopm_plan_destroy(plan);
    return s;
}

template <typename R> std::vector<R> random_tensors(int order, int dim, size_t count, unsigned seed)
{
    std::mt19937 rng(seed);
    std::normal_distribution<double> g(0, 1);
    std::vector<R> t(count * tk_sym_num_unique(order, dim));
    for (auto &v : t) v = (R)g(rng);
    return t;
}

template <typename R> void expect_sshopm_split_exact(tk_sshopm_options o, size_t count, size_t max_batch)
{
    const int devices = tk_cuda_device_count();
    const auto packed = random_tensors<R>(o.order, o.dim, count, 7 + (unsigned)o.order);
    Starts<R> one, all;
    ASSERT_EQ(sshopm_run<R>(o, 1, max_batch, packed, one), TK_OK) << tk_last_error();
    ASSERT_EQ(sshopm_run<R>(o, devices, max_batch, packed, all), TK_OK) << tk_last_error();
    const std::string what = "order " + std::to_string(o.order) + " impl " + std::to_string(o.impl) + " max_batch " +
                             std::to_string(max_batch);
    EXPECT_TRUE(same_bits(one.lambda, all.lambda)) << what;
    EXPECT_TRUE(same_bits(one.x, all.x)) << what;
    EXPECT_TRUE(same_bits(one.iterations, all.iterations)) << what;
    EXPECT_TRUE(same_bits(one.converged, all.converged)) << what;
}

}  // namespace

TEST(MultiGpuSshopm, EveryVisibleGpuGivesOneGpusStartsBitForBit)
{
    TK_REQUIRE_TWO_GPUS();
    // general (its tables in each device's constant memory, uploaded by the devices' threads
    // at once) and unrolled; fixed and adaptive shifts; single and double
    tk_sshopm_options o;
    tk_sshopm_options_init(&o, 4, 3);
    o.num_starts = 16, o.shift_mode = TK_SHIFT_ADAPTIVE;
    o.impl = TK_IMPL_GENERAL;
    expect_sshopm_split_exact<float>(o, 20001, 0);
    expect_sshopm_split_exact<float>(o, 20001, 4096);
    o.impl = TK_IMPL_UNROLLED;
    expect_sshopm_split_exact<float>(o, 20001, 0);
    tk_sshopm_options d;
    tk_sshopm_options_init(&d, 3, 5);
    d.precision = TK_PRECISION_DOUBLE, d.tol = 1e-12, d.num_starts = 8, d.shift = 1.0;
    expect_sshopm_split_exact<double>(d, 5003, 1000);
    EXPECT_EQ(tk_cuda_memory_in_use(), 0u);
}

TEST(MultiGpuSshopm, MoreDevicesThanExistIsAClearError)
{
    tk_sshopm_options o;
    tk_sshopm_options_init(&o, 4, 3);
    o.backend = TK_BACKEND_CUDA, o.cuda_device_count = tk_cuda_device_count() + 1;
    tk_sshopm_plan *plan = nullptr;
    const tk_status s = tk_sshopm_plan_create(&o, 100, &plan);
    TK_SKIP_IF_NO_GPU(s);
    expect_too_many_devices_refused(s, plan, o.cuda_device_count);
}

// ---- eigenvalues ------------------------------------------------------------------------

namespace {

template <typename R> struct Eig {
    std::vector<R> values, vectors;
    std::vector<int8_t> status;
};

template <typename R>
tk_status eig_run(int n, int devices, size_t max_batch, const std::vector<R> &a, bool vectors, Eig<R> &out,
                  size_t *device_bytes = nullptr)
{
    tk_eig_options o;
    tk_eig_options_init(&o, n);
    o.precision = sizeof(R) == sizeof(double) ? TK_PRECISION_DOUBLE : TK_PRECISION_SINGLE;
    o.backend = TK_BACKEND_CUDA, o.cuda_device_count = devices;
    const size_t count = a.size() / ((size_t)n * n);
    out.values.assign(count * 2 * n, R(-7));
    out.vectors.assign(vectors ? count * 2 * n * n : 0, R(-7));
    out.status.assign(count, 7);
    tk_eig_result r = {out.values.data(), vectors ? out.vectors.data() : nullptr, out.status.data()};
    tk_eig_plan *plan = nullptr;
    tk_status s = tk_eig_plan_create(&o, max_batch, &plan);
    if (s == TK_OK) s = tk_eig_plan_execute(plan, count, a.data(), &r, nullptr, nullptr);
    if (device_bytes) *device_bytes = tk_eig_plan_device_bytes(plan);
    tk_eig_plan_destroy(plan);
    return s;
}

template <typename R> void expect_eig_split_exact(int n, int count, bool vectors, size_t max_batch)
{
    const int devices = tk_cuda_device_count();
    const std::vector<double> d = tk_eig_test::random_batch(n, count, 900 + (uint64_t)n);
    std::vector<R> a(d.begin(), d.end());
    a[(size_t)n * n * 17] = (R)NAN;  // one non-finite matrix: status 2, NaN values
    Eig<R> one, all;
    size_t one_bytes = 0, all_bytes = 0;
    ASSERT_EQ(eig_run<R>(n, 1, max_batch, a, vectors, one, &one_bytes), TK_OK) << tk_last_error();
    ASSERT_EQ(eig_run<R>(n, devices, max_batch, a, vectors, all, &all_bytes), TK_OK) << tk_last_error();
    const std::string what = "n " + std::to_string(n) + (vectors ? " with vectors" : " values") + " max_batch " +
                             std::to_string(max_batch);
    EXPECT_TRUE(same_bits(one.values, all.values)) << what;
    EXPECT_TRUE(same_bits(one.vectors, all.vectors)) << what;
    EXPECT_TRUE(same_bits(one.status, all.status)) << what;
    EXPECT_EQ(all.status[17], TK_EIG_NONFINITE);
    EXPECT_GT(all_bytes, 0u) << "the device bytes are the sum over the plan's devices";
}

}  // namespace

TEST(MultiGpuEig, EveryVisibleGpuGivesOneGpusEigenpairsBitForBit)
{
    TK_REQUIRE_TWO_GPUS();
    expect_eig_split_exact<double>(6, 50001, true, 0);
    expect_eig_split_exact<double>(6, 50001, true, 8192);
    expect_eig_split_exact<float>(4, 120001, false, 0);
    expect_eig_split_exact<double>(24, 3001, false, 0);
    EXPECT_EQ(tk_cuda_memory_in_use(), 0u);
}

TEST(MultiGpuEig, MoreDevicesThanExistIsAClearError)
{
    tk_eig_options o;
    tk_eig_options_init(&o, 5);
    o.backend = TK_BACKEND_CUDA, o.cuda_device_count = tk_cuda_device_count() + 1;
    tk_eig_plan *plan = nullptr;
    const tk_status s = tk_eig_plan_create(&o, 1000, &plan);
    TK_SKIP_IF_NO_GPU(s);
    expect_too_many_devices_refused(s, plan, o.cuda_device_count);
}

// One visible GPU or more: a count of 1 and of 0 both mean one device, the default's results.
TEST(MultiGpuEig, CountsZeroAndOneAreOneDevice)
{
    const std::vector<double> a = tk_eig_test::random_batch(5, 3000, 77);
    Eig<double> zero, one;
    const tk_status s = eig_run<double>(5, 0, 0, a, false, zero);
    TK_SKIP_IF_NO_GPU(s);
    ASSERT_EQ(s, TK_OK) << tk_last_error();
    ASSERT_EQ(eig_run<double>(5, 1, 0, a, false, one), TK_OK) << tk_last_error();
    EXPECT_TRUE(same_bits(zero.values, one.values));
}

// ---- fixels ----------------------------------------------------------------------------

namespace {

struct Fixels {
    std::vector<uint8_t> count, lobe_of_dir;
    std::vector<float> afd, peak_amp, mean_dir, peak_dir;
    size_t bad = 0, truncated = 0;
};

tk_status fixels_run(int devices, const ShVolume &v, int lmax, Fixels &f, int directions = 0)
{
    tk_fixels_options o;
    tk_fixels_options_init(&o, lmax);
    o.backend = TK_BACKEND_CUDA, o.cuda_device_count = devices, o.directions = directions;
    tk_fixels_plan *plan = nullptr;
    tk_status s = tk_fixels_plan_create(&o, &plan);
    if (s != TK_OK) return s;
    const size_t voxels = v.mask.size(), S = (size_t)tk_fixels_plan_slots(plan);
    f.count.assign(voxels, 7), f.lobe_of_dir.assign(voxels * (size_t)tk_fixels_plan_directions(plan), 7);
    f.afd.assign(voxels * S, -7.f), f.peak_amp.assign(voxels * S, -7.f);
    f.mean_dir.assign(voxels * S * 3, -7.f), f.peak_dir.assign(voxels * S * 3, -7.f);
    tk_fixels_output out{f.count.data(), f.afd.data(), f.peak_amp.data(), f.mean_dir.data(), f.peak_dir.data(),
                         f.lobe_of_dir.data(), 0, 0};
    s = tk_fixels_plan_execute(plan, voxels, v.sh.data(), v.mask.data(), &out, nullptr);
    f.bad = out.bad_voxels, f.truncated = out.truncated;
    tk_fixels_plan_destroy(plan);
    return s;
}

}  // namespace

// Both direction sets: each device's share of the lobe masks starts at its first voxel's row
// of the plan's directions (5121 a voxel on the dense set).  40001 voxels: on two GPUs still
// more than one chunk each, so both streams of each device run.
TEST(MultiGpuFixels, EveryVisibleGpuGivesOneGpusFixelsBitForBit)
{
    TK_REQUIRE_TWO_GPUS();
    const ShVolume v = random_sh(8, 40001, 55);
    for (int directions : {TK_FIXELS_DIRECTIONS, TK_FIXELS_DIRECTIONS_DENSE}) {
        Fixels one, all;
        ASSERT_EQ(fixels_run(1, v, 8, one, directions), TK_OK) << tk_last_error();
        ASSERT_EQ(fixels_run(tk_cuda_device_count(), v, 8, all, directions), TK_OK) << tk_last_error();
        EXPECT_TRUE(same_bits(one.count, all.count)) << directions;
        EXPECT_TRUE(same_bits(one.lobe_of_dir, all.lobe_of_dir)) << directions;
        EXPECT_TRUE(same_bits(one.afd, all.afd)) << directions;
        EXPECT_TRUE(same_bits(one.peak_amp, all.peak_amp)) << directions;
        EXPECT_TRUE(same_bits(one.mean_dir, all.mean_dir)) << directions;
        EXPECT_TRUE(same_bits(one.peak_dir, all.peak_dir)) << directions;
        EXPECT_EQ(one.bad, all.bad) << directions;
        EXPECT_GT(all.bad, 0u) << directions;  // the NaN voxels, summed over the devices
        EXPECT_EQ(one.truncated, all.truncated) << directions;
        EXPECT_EQ(tk_cuda_memory_in_use(), 0u) << directions;
    }
}

TEST(MultiGpuFixels, MoreDevicesThanExistIsAClearError)
{
    tk_fixels_options o;
    tk_fixels_options_init(&o, 8);
    o.backend = TK_BACKEND_CUDA, o.cuda_device_count = tk_cuda_device_count() + 1;
    tk_fixels_plan *plan = nullptr;
    const tk_status s = tk_fixels_plan_create(&o, &plan);
    TK_SKIP_IF_NO_GPU(s);
    expect_too_many_devices_refused(s, plan, o.cuda_device_count);
}
