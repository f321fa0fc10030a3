// The device-array entry points (tk_fibers/sshopm/eig_plan_execute_device; label gpu, skips
// without a GPU) against the host entry points of the same cuda plan: the same bits, while the
// transfer probe (tk_test_array_transfer_bytes) shows that none of the caller's bytes crossed
// between host and device, and that the host execute's did (exactly its arrays' sizes: the
// probe's own check).  Plus the refusals: a host pointer, another device's memory, a cpu plan;
// and the caller's stream: the inputs are written by an asynchronous copy queued on it, which
// the core must wait for.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "eig_test_util.h"
#include "gpu_skip.h"
#include "sshopm_test_util.h"
#include "tk_bench_hooks.h"
#include "tk_eig.h"
#include "tk_fibers.h"
#include "tk_sh_test_util.h"
#include "tk_sshopm.h"

namespace {

// A device buffer of the test's own (its copies are the test's, not the cores': the probe does
// not see them).
struct DeviceBuffer {
    void *ptr = nullptr;
    size_t bytes = 0;
    explicit DeviceBuffer(size_t n) : bytes(n)
    {
        EXPECT_EQ(cudaMalloc(&ptr, n ? n : 1), cudaSuccess);
        EXPECT_EQ(cudaMemset(ptr, 0xff, n ? n : 1), cudaSuccess);  // NaN-ish garbage: results must overwrite it
        // cudaMemset is asynchronous, on the legacy default stream, which non-blocking streams (the
        // test's, the cores') do not wait for: finish the fill before anything else touches the buffer
        // (without this, under compute-sanitizer, the fill landed after the test's copy on its stream)
        EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    }
    ~DeviceBuffer() { cudaFree(ptr); }
    DeviceBuffer(const DeviceBuffer &) = delete;
    DeviceBuffer &operator=(const DeviceBuffer &) = delete;
    template <typename T> T *as() const { return static_cast<T *>(ptr); }
    void upload(const void *src) const { EXPECT_EQ(cudaMemcpy(ptr, src, bytes, cudaMemcpyHostToDevice), cudaSuccess); }
    template <typename T> std::vector<T> download() const
    {
        std::vector<T> out(bytes / sizeof(T));
        EXPECT_EQ(cudaMemcpy(out.data(), ptr, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
        return out;
    }
};

template <typename T> bool same_bits(const std::vector<T> &a, const std::vector<T> &b)
{
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

// ---- fibers ------------------------------------------------------------------------------

struct FibersCase {
    tk_fibers_options o;
    std::vector<float> sh;
    std::vector<uint8_t> mask;
    size_t voxels;
};

FibersCase fibers_case(size_t voxels)
{
    FibersCase c;
    tk_fibers_options_init(&c.o, 8);
    c.o.backend = TK_BACKEND_CUDA;
    c.o.relative_threshold = 0.1;
    c.voxels = voxels;
    c.sh = tk_test::fod_like_volume(8, TK_SH_TOURNIER, 0, (int)voxels, 11);
    c.sh[7 * 45 + 3] = NAN;  // one bad voxel: its count must come back through the device path too
    c.mask.assign(voxels, 1);
    for (size_t v = 0; v < voxels; v += 5) c.mask[v] = 0;
    return c;
}

TEST(DeviceArraysCuda, FibersEqualTheHostExecuteAndNoByteCrosses)
{
    FibersCase c = fibers_case(5000);
    tk_fibers_plan *plan = nullptr;
    tk_status s = tk_fibers_plan_create(&c.o, 2048, &plan);  // smaller than the batch: several chunks
    TK_SKIP_IF_NO_GPU(s);
    ASSERT_EQ(s, TK_OK) << tk_last_error();
    const size_t np = (size_t)c.o.num_peaks, k = 45;
    std::vector<float> dirs(c.voxels * np * 3), amps(c.voxels * np);
    size_t bad_host = 0;
    unsigned long long before = tk_test_array_transfer_bytes();
    ASSERT_EQ(tk_fibers_plan_execute(plan, c.voxels, c.sh.data(), c.mask.data(), dirs.data(), amps.data(), &bad_host,
                                     nullptr),
              TK_OK)
        << tk_last_error();
    // the host execute moved exactly its arrays: SH and mask in, peaks out
    EXPECT_EQ(tk_test_array_transfer_bytes() - before,
              (unsigned long long)(c.voxels * (k * sizeof(float) + 1 + np * 4 * sizeof(float))));

    DeviceBuffer d_sh(c.sh.size() * sizeof(float)), d_mask(c.voxels), d_dirs(dirs.size() * sizeof(float)),
        d_amps(amps.size() * sizeof(float));
    d_sh.upload(c.sh.data());
    d_mask.upload(c.mask.data());
    size_t bad_device = 0;
    before = tk_test_array_transfer_bytes();
    tk_timing t{};
    ASSERT_EQ(tk_fibers_plan_execute_device(plan, c.voxels, d_sh.as<float>(), d_mask.as<uint8_t>(), d_dirs.as<float>(),
                                            d_amps.as<float>(), &bad_device, nullptr, &t),
              TK_OK)
        << tk_last_error();
    EXPECT_EQ(tk_test_array_transfer_bytes(), before) << "a device-array execute copied the caller's bytes";
    EXPECT_TRUE(same_bits(d_dirs.download<float>(), dirs));
    EXPECT_TRUE(same_bits(d_amps.download<float>(), amps));
    EXPECT_EQ(bad_device, bad_host);
    EXPECT_EQ(bad_host, 1u);
    // (no total_ms >= kernel_ms: the two streams' chunks overlap, so their summed kernel time may
    // pass the wall time)
    EXPECT_GT(t.total_ms, 0.0);
    tk_fibers_plan_destroy(plan);
}

TEST(DeviceArraysCuda, FibersWaitForTheCallersStream)
{
    FibersCase c = fibers_case(20000);
    tk_fibers_plan *plan = nullptr;
    tk_status s = tk_fibers_plan_create(&c.o, 0, &plan);
    TK_SKIP_IF_NO_GPU(s);
    ASSERT_EQ(s, TK_OK) << tk_last_error();
    const size_t np = (size_t)c.o.num_peaks;
    std::vector<float> dirs(c.voxels * np * 3), amps(c.voxels * np);
    ASSERT_EQ(tk_fibers_plan_execute(plan, c.voxels, c.sh.data(), nullptr, dirs.data(), amps.data(), nullptr, nullptr),
              TK_OK);
    // pageable source: the copy is queued on the stream, and the core must wait for it
    DeviceBuffer d_sh(c.sh.size() * sizeof(float)), d_dirs(dirs.size() * sizeof(float)),
        d_amps(amps.size() * sizeof(float));
    cudaStream_t stream = nullptr;
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
    float *pinned = nullptr;
    ASSERT_EQ(cudaMallocHost(&pinned, d_sh.bytes), cudaSuccess);
    std::memcpy(pinned, c.sh.data(), d_sh.bytes);
    ASSERT_EQ(cudaMemcpyAsync(d_sh.ptr, pinned, d_sh.bytes, cudaMemcpyHostToDevice, stream), cudaSuccess);
    ASSERT_EQ(tk_fibers_plan_execute_device(plan, c.voxels, d_sh.as<float>(), nullptr, d_dirs.as<float>(),
                                            d_amps.as<float>(), nullptr, stream, nullptr),
              TK_OK)
        << tk_last_error();
    EXPECT_TRUE(same_bits(d_dirs.download<float>(), dirs));
    EXPECT_TRUE(same_bits(d_amps.download<float>(), amps));
    cudaStreamDestroy(stream);
    cudaFreeHost(pinned);
    tk_fibers_plan_destroy(plan);
}

// A page-locked host array of the test's own.
template <typename T> struct PinnedArray {
    T *ptr = nullptr;
    size_t n = 0;
    explicit PinnedArray(const std::vector<T> &from) : n(from.size())
    {
        EXPECT_EQ(cudaMallocHost(&ptr, n * sizeof(T)), cudaSuccess);
        std::memcpy(ptr, from.data(), n * sizeof(T));
    }
    ~PinnedArray() { cudaFreeHost(ptr); }
    PinnedArray(const PinnedArray &) = delete;
    PinnedArray &operator=(const PinnedArray &) = delete;
    std::vector<T> values() const { return std::vector<T>(ptr, ptr + n); }
};

TEST(DeviceArraysCuda, FibersPinnedAndPageableArraysGiveTheSameBits)
{
    // Pageable arrays go through the plan's pinned staging, pinned ones are copied directly, a
    // mix (pinned SH, pageable outputs) is staged: the same peaks to the bit, the same bytes
    // across, over several chunks (the plan's buffers are smaller than the batch).
    FibersCase c = fibers_case(5000);
    tk_fibers_plan *plan = nullptr;
    tk_status s = tk_fibers_plan_create(&c.o, 1500, &plan);
    TK_SKIP_IF_NO_GPU(s);
    ASSERT_EQ(s, TK_OK) << tk_last_error();
    const size_t np = (size_t)c.o.num_peaks;
    std::vector<float> dirs(c.voxels * np * 3, -7.f), amps(c.voxels * np, -7.f);
    size_t bad_pageable = 0, bad_pinned = 0, bad_mixed = 0;
    unsigned long long before = tk_test_array_transfer_bytes();
    ASSERT_EQ(tk_fibers_plan_execute(plan, c.voxels, c.sh.data(), c.mask.data(), dirs.data(), amps.data(),
                                     &bad_pageable, nullptr),
              TK_OK)
        << tk_last_error();
    const unsigned long long pageable_bytes = tk_test_array_transfer_bytes() - before;
    PinnedArray<float> p_sh(c.sh), p_dirs(std::vector<float>(dirs.size(), -7.f)),
        p_amps(std::vector<float>(amps.size(), -7.f));
    PinnedArray<uint8_t> p_mask(c.mask);
    before = tk_test_array_transfer_bytes();
    ASSERT_EQ(tk_fibers_plan_execute(plan, c.voxels, p_sh.ptr, p_mask.ptr, p_dirs.ptr, p_amps.ptr, &bad_pinned,
                                     nullptr),
              TK_OK)
        << tk_last_error();
    EXPECT_EQ(tk_test_array_transfer_bytes() - before, pageable_bytes);
    EXPECT_TRUE(same_bits(p_dirs.values(), dirs));
    EXPECT_TRUE(same_bits(p_amps.values(), amps));
    std::vector<float> mixed_dirs(dirs.size(), -7.f), mixed_amps(amps.size(), -7.f);
    ASSERT_EQ(tk_fibers_plan_execute(plan, c.voxels, p_sh.ptr, c.mask.data(), mixed_dirs.data(), mixed_amps.data(),
                                     &bad_mixed, nullptr),
              TK_OK)
        << tk_last_error();
    EXPECT_TRUE(same_bits(mixed_dirs, dirs));
    EXPECT_TRUE(same_bits(mixed_amps, amps));
    EXPECT_EQ(bad_pinned, bad_pageable);
    EXPECT_EQ(bad_mixed, bad_pageable);
    tk_fibers_plan_destroy(plan);
}

TEST(DeviceArraysCuda, FibersRefuseHostPointersAndCpuPlans)
{
    FibersCase c = fibers_case(16);
    tk_fibers_plan *plan = nullptr;
    tk_status s = tk_fibers_plan_create(&c.o, 0, &plan);
    TK_SKIP_IF_NO_GPU(s);
    ASSERT_EQ(s, TK_OK) << tk_last_error();
    const size_t np = (size_t)c.o.num_peaks;
    DeviceBuffer d_sh(c.sh.size() * sizeof(float)), d_amps(c.voxels * np * sizeof(float));
    std::vector<float> host_dirs(c.voxels * np * 3);
    // a host array where a device one belongs: refused, naming it
    EXPECT_EQ(tk_fibers_plan_execute_device(plan, c.voxels, c.sh.data(), nullptr, nullptr, d_amps.as<float>(), nullptr,
                                            nullptr, nullptr),
              TK_ERR_ARGUMENT);
    EXPECT_NE(std::string(tk_last_error()).find("sh is"), std::string::npos) << tk_last_error();
    EXPECT_EQ(tk_fibers_plan_execute_device(plan, c.voxels, d_sh.as<float>(), nullptr, host_dirs.data(),
                                            d_amps.as<float>(), nullptr, nullptr, nullptr),
              TK_ERR_ARGUMENT);
    EXPECT_NE(std::string(tk_last_error()).find("directions is host memory"), std::string::npos) << tk_last_error();
    tk_fibers_plan_destroy(plan);
    // a cpu plan: device arrays are never copied to the host behind the caller's back
    c.o.backend = TK_BACKEND_CPU;
    ASSERT_EQ(tk_fibers_plan_create(&c.o, 0, &plan), TK_OK);
    EXPECT_EQ(tk_fibers_plan_execute_device(plan, c.voxels, d_sh.as<float>(), nullptr, nullptr, d_amps.as<float>(),
                                            nullptr, nullptr, nullptr),
              TK_ERR_ARGUMENT);
    EXPECT_NE(std::string(tk_last_error()).find("cuda backend"), std::string::npos) << tk_last_error();
    tk_fibers_plan_destroy(plan);
}

// ---- SS-HOPM -----------------------------------------------------------------------------

template <typename R> void expect_sshopm_device_equals_host(bool unrolled)
{
    tk_sshopm_options o = tk_test::options(4, 3, sizeof(R) == sizeof(double), TK_BACKEND_CUDA,
                                           unrolled ? TK_IMPL_UNROLLED : TK_IMPL_GENERAL);
    const size_t K = tk_sym_num_unique(4, 3), T = 3000, S = (size_t)o.num_starts;
    std::vector<R> packed(T * K);
    std::mt19937_64 rng(7);
    std::normal_distribution<double> g(0, 1);
    for (auto &v : packed) v = (R)g(rng);
    tk_sshopm_plan *plan = nullptr;
    tk_status s = tk_sshopm_plan_create(&o, 1000, &plan);
    TK_SKIP_IF_NO_GPU(s);
    ASSERT_EQ(s, TK_OK) << tk_last_error();
    tk_test::StartResults<R> host;
    tk_test::resize(o, T, host);
    auto hv = host.view();
    unsigned long long before = tk_test_array_transfer_bytes();
    ASSERT_EQ(tk_sshopm_plan_execute(plan, T, packed.data(), &hv, nullptr), TK_OK) << tk_last_error();
    EXPECT_EQ(tk_test_array_transfer_bytes() - before,
              (unsigned long long)(T * K * sizeof(R) + T * S * (sizeof(R) * 4 + sizeof(int32_t) + 1)));

    DeviceBuffer d_packed(packed.size() * sizeof(R)), d_lambda(T * S * sizeof(R)), d_x(T * S * 3 * sizeof(R)),
        d_iter(T * S * sizeof(int32_t)), d_conv(T * S);
    d_packed.upload(packed.data());
    tk_sshopm_starts_result dv{d_lambda.ptr, d_x.ptr, d_iter.as<int32_t>(), d_conv.as<uint8_t>()};
    before = tk_test_array_transfer_bytes();
    ASSERT_EQ(tk_sshopm_plan_execute_device(plan, T, d_packed.ptr, &dv, nullptr, nullptr), TK_OK) << tk_last_error();
    EXPECT_EQ(tk_test_array_transfer_bytes(), before) << "a device-array execute copied the caller's bytes";
    EXPECT_TRUE(same_bits(d_lambda.download<R>(), host.lambda));
    EXPECT_TRUE(same_bits(d_x.download<R>(), host.x));
    EXPECT_TRUE(same_bits(d_iter.download<int32_t>(), host.iterations));
    EXPECT_TRUE(same_bits(d_conv.download<uint8_t>(), host.converged));

    // a non-finite entry: the host execute's refusal, in its words, found on the device
    packed[1234 * K + 5] = (R)INFINITY;
    ASSERT_NE(tk_sshopm_plan_execute(plan, T, packed.data(), &hv, nullptr), TK_OK);
    const std::string host_message = tk_last_error();
    d_packed.upload(packed.data());
    EXPECT_EQ(tk_sshopm_plan_execute_device(plan, T, d_packed.ptr, &dv, nullptr, nullptr), TK_ERR_DATA);
    EXPECT_EQ(std::string(tk_last_error()), host_message);
    EXPECT_NE(host_message.find("tensor 1234"), std::string::npos) << host_message;
    // host memory where device memory belongs
    EXPECT_EQ(tk_sshopm_plan_execute_device(plan, T, packed.data(), &dv, nullptr, nullptr), TK_ERR_ARGUMENT);
    EXPECT_NE(std::string(tk_last_error()).find("tensors is host memory"), std::string::npos) << tk_last_error();
    tk_sshopm_plan_destroy(plan);
}

TEST(DeviceArraysCuda, SshopmGeneralFloatEqualsTheHostExecute) { expect_sshopm_device_equals_host<float>(false); }
TEST(DeviceArraysCuda, SshopmGeneralDoubleEqualsTheHostExecute) { expect_sshopm_device_equals_host<double>(false); }
TEST(DeviceArraysCuda, SshopmUnrolledFloatEqualsTheHostExecute) { expect_sshopm_device_equals_host<float>(true); }

// ---- eig ---------------------------------------------------------------------------------

template <typename R> void expect_eig_device_equals_host(int n, bool vectors)
{
    const size_t count = 40000, nn = (size_t)n * n;
    auto d = tk_eig_test::random_batch(n, (int)count, 90 + (uint64_t)n);
    std::vector<R> a(d.begin(), d.end());
    a[17 * nn] = (R)NAN;  // one failing matrix: its status must come back too
    tk_eig_options o = tk_eig_test::eig_options(n, TK_BACKEND_CUDA);
    o.precision = sizeof(R) == sizeof(double) ? TK_PRECISION_DOUBLE : TK_PRECISION_SINGLE;
    tk_eig_plan *plan = nullptr;
    tk_status s = tk_eig_plan_create(&o, 16384, &plan);
    TK_SKIP_IF_NO_GPU(s);
    ASSERT_EQ(s, TK_OK) << tk_last_error();
    std::vector<R> values(count * 2 * n), vecs(vectors ? count * 2 * nn : 0);
    std::vector<int8_t> status(count);
    tk_eig_result hr{values.data(), vectors ? vecs.data() : nullptr, status.data()};
    size_t failed = 0;
    unsigned long long before = tk_test_array_transfer_bytes();
    ASSERT_EQ(tk_eig_plan_execute(plan, count, a.data(), &hr, nullptr, &failed), TK_OK) << tk_last_error();
    EXPECT_EQ(tk_test_array_transfer_bytes() - before,
              (unsigned long long)(count * (nn * sizeof(R) + 2 * n * sizeof(R) + (vectors ? 2 * nn * sizeof(R) : 0) + 1)));
    EXPECT_EQ(failed, 1u);

    DeviceBuffer d_a(a.size() * sizeof(R)), d_values(values.size() * sizeof(R)), d_vecs(vecs.size() * sizeof(R)),
        d_status(count);
    d_a.upload(a.data());
    tk_eig_result dr{d_values.ptr, vectors ? d_vecs.ptr : nullptr, d_status.as<int8_t>()};
    before = tk_test_array_transfer_bytes();
    ASSERT_EQ(tk_eig_plan_execute_device(plan, count, d_a.ptr, &dr, nullptr, nullptr), TK_OK) << tk_last_error();
    EXPECT_EQ(tk_test_array_transfer_bytes(), before) << "a device-array execute copied the caller's bytes";
    EXPECT_TRUE(same_bits(d_values.download<R>(), values));
    if (vectors) {
        EXPECT_TRUE(same_bits(d_vecs.download<R>(), vecs));
    }
    EXPECT_TRUE(same_bits(d_status.download<int8_t>(), status));
    // the status array is required: the failures are counted there
    tk_eig_result no_status{d_values.ptr, nullptr, nullptr};
    EXPECT_EQ(tk_eig_plan_execute_device(plan, count, d_a.ptr, &no_status, nullptr, nullptr), TK_ERR_ARGUMENT);
    EXPECT_EQ(tk_eig_plan_execute_device(plan, count, a.data(), &dr, nullptr, nullptr), TK_ERR_ARGUMENT);
    EXPECT_NE(std::string(tk_last_error()).find("matrices is host memory"), std::string::npos) << tk_last_error();
    tk_eig_plan_destroy(plan);
}

TEST(DeviceArraysCuda, EigValuesDoubleEqualTheHostExecute) { expect_eig_device_equals_host<double>(4, false); }
TEST(DeviceArraysCuda, EigVectorsDoubleEqualTheHostExecute) { expect_eig_device_equals_host<double>(5, true); }
TEST(DeviceArraysCuda, EigValuesFloatEqualTheHostExecute) { expect_eig_device_equals_host<float>(3, false); }

// Memory of another GPU (where there are two): refused, naming the array and both devices.
TEST(DeviceArraysCuda, ArraysOfAnotherGpuAreRefused)
{
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count < 2) GTEST_SKIP() << "SKIPPED: needs 2 GPUs";
    tk_eig_options o = tk_eig_test::eig_options(3, TK_BACKEND_CUDA);
    tk_eig_plan *plan = nullptr;
    ASSERT_EQ(tk_eig_plan_create(&o, 0, &plan), TK_OK) << tk_last_error();
    ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
    DeviceBuffer d_a(9 * sizeof(double)), d_values(6 * sizeof(double)), d_status(1);
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    tk_eig_result dr{d_values.ptr, nullptr, d_status.as<int8_t>()};
    EXPECT_EQ(tk_eig_plan_execute_device(plan, 1, d_a.ptr, &dr, nullptr, nullptr), TK_ERR_ARGUMENT);
    EXPECT_NE(std::string(tk_last_error()).find("matrices is on CUDA device 1"), std::string::npos) << tk_last_error();
    tk_eig_plan_destroy(plan);
}

}  // namespace
