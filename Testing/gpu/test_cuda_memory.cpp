// Out of GPU memory on every CUDA core (label gpu; skips without a GPU or a CUDA build).
//
// TK_CUDA_MEMORY_LIMIT_MB stands in for a full GPU: under a small limit the batched cores
// (SS-HOPM, fibers, eigenvalues, PLTF's naive GTM) run in more chunks and give the
// unlimited result bit for bit, the resident-model cores (FastTucker, PLTF) either give
// the unlimited result or fail with TK_ERR_MEMORY and a message naming the memory; and no
// device buffer is left behind either way (tk_cuda_memory_in_use, which counts every
// buffer the cores allocate).  One test makes a real request larger than the device.
#include <gtest/gtest.h>

#include <sys/mman.h>

#include <cstdlib>
#include <initializer_list>
#include <string>
#include <vector>

#include "concurrency_test_util.h"
#include "eig_test_util.h"
#include "memory_limit.h"
#include "tk_cuda_memory.h"
#include "tk_pltf.h"

using namespace tk_test;

namespace {

// A result without a limit (whatever the environment of the test run says).
template <typename Input> Result unlimited(const Input &in, Result (*run)(const Input &))
{
    MemoryLimit none("");
    return run(in);
}

// TK_ERR_MEMORY with a message that says how much GPU memory was wanted and how much is free.
::testing::AssertionResult memory_error(const Result &r, const char *also = nullptr)
{
    if (r.status != TK_ERR_MEMORY)
        return ::testing::AssertionFailure() << "status " << r.status << " (" << r.error << "), not TK_ERR_MEMORY";
    for (const char *word : {"of GPU memory", " free of ", TK_CUDA_MEMORY_LIMIT_ENV, also})
        if (word && r.error.find(word) == std::string::npos)
            return ::testing::AssertionFailure() << "the message lacks \"" << word << "\": " << r.error;
    return ::testing::AssertionSuccess();
}

// In the helpers below, "where" starts a failure's message: the input tried, then the limit.

// Under each limit (MiB), run(in) gives full (the unlimited result) bit for bit and leaves no
// device buffer behind.
template <typename Input>
void expect_chunked_equals_unlimited(const Input &in, Result (*run)(const Input &), const Result &full,
                                     std::initializer_list<const char *> limits, const std::string &where)
{
    for (const char *mib : limits) {
        MemoryLimit limit(mib);
        EXPECT_TRUE(same_result(run(in), full)) << where << "limit " << mib << " MiB";
        EXPECT_EQ(tk_cuda_memory_in_use(), 0u);
    }
}

// Under each limit (MiB), run(in) either gives full within tol or is a memory error (its
// message naming `also` too, unless that is nullptr); no device buffer is left either way.
// *ran and *refused count the two outcomes.
template <typename Input>
void expect_unlimited_result_or_memory_error(const Input &in, Result (*run)(const Input &), const Result &full, double tol,
                                             std::initializer_list<const char *> limits, const char *also,
                                             const std::string &where, int *ran, int *refused)
{
    for (const char *mib : limits) {
        MemoryLimit limit(mib);
        const Result r = run(in);
        if (r.status == TK_OK) {
            ++*ran;
            EXPECT_TRUE(same_result(r, full, tol)) << where << "limit " << mib << " MiB";
        } else {
            ++*refused;
            EXPECT_TRUE(memory_error(r, also)) << where << "limit " << mib << " MiB";
        }
        EXPECT_EQ(tk_cuda_memory_in_use(), 0u) << where << "limit " << mib << " MiB";
    }
}

// With no GPU memory at all, run(in) is a memory error (its message naming `also` too,
// unless that is nullptr) and leaves no device buffer behind.
template <typename Input>
void expect_no_room_is_a_memory_error(const Input &in, Result (*run)(const Input &), const char *also = nullptr)
{
    MemoryLimit limit("0");
    EXPECT_TRUE(memory_error(run(in), also));
    EXPECT_EQ(tk_cuda_memory_in_use(), 0u);
}

} // namespace

// Skips, saying why, without a CUDA build or a GPU.
#define TK_REQUIRE_GPU()                                                                                      \
    do {                                                                                                      \
        size_t free_, total_;                                                                                 \
        MemoryLimit none_("");                                                                                \
        const tk_status s_ = tk_cuda_memory_info(0, &free_, &total_);                                         \
        if (s_ == TK_ERR_UNSUPPORTED) GTEST_SKIP() << "SKIPPED: built without CUDA: " << tk_last_error();      \
        if (s_ == TK_ERR_CUDA) GTEST_SKIP() << "SKIPPED: no GPU here: " << tk_last_error();                   \
        ASSERT_EQ(s_, TK_OK) << tk_last_error();                                                              \
        ASSERT_EQ(tk_cuda_memory_in_use(), 0u) << "device buffers left by an earlier test";                   \
    } while (0)

TEST(CudaMemory, InfoAppliesTheLimit)
{
    TK_REQUIRE_GPU();
    size_t free0 = 0, total0 = 0, f = 0, t = 0;
    {
        MemoryLimit none("");
        ASSERT_EQ(tk_cuda_memory_info(0, &free0, &total0), TK_OK) << tk_last_error();
    }
    EXPECT_GT(free0, 0u);
    EXPECT_LE(free0, total0);
    {
        MemoryLimit limit("64");
        ASSERT_EQ(tk_cuda_memory_info(0, &f, &t), TK_OK) << tk_last_error();
        EXPECT_LE(f, (size_t)64 << 20);
        EXPECT_EQ(t, total0);
    }
    {
        MemoryLimit limit("0");
        ASSERT_EQ(tk_cuda_memory_info(0, &f, &t), TK_OK) << tk_last_error();
        EXPECT_EQ(f, 0u);
    }
    for (const char *bad : {"12abc", "-5", " 7", "1e3"}) {
        MemoryLimit limit(bad);
        EXPECT_EQ(tk_cuda_memory_info(0, &f, &t), TK_ERR_ARGUMENT) << bad;
        EXPECT_NE(std::string(tk_last_error()).find(TK_CUDA_MEMORY_LIMIT_ENV), std::string::npos) << tk_last_error();
        // a core refuses to plan with it rather than ignoring it
        auto in = eig_input(TK_BACKEND_CUDA, 4, true, false, 10, 1);
        EXPECT_EQ(eig_run(in).status, TK_ERR_ARGUMENT) << bad;
    }
    EXPECT_EQ(tk_cuda_memory_info(-1, &f, &t), TK_ERR_ARGUMENT);
    EXPECT_EQ(tk_cuda_memory_in_use(), 0u);
}

TEST(CudaMemory, SshopmChunksUnderALimitBitForBit)
{
    TK_REQUIRE_GPU();
    // unrolled float: ~560 bytes a tensor, 11 MB in all; general double: ~1 KB a tensor
    for (auto in : {sshopm_input(TK_BACKEND_CUDA, TK_IMPL_UNROLLED, false, 20000, 5),
                    sshopm_input(TK_BACKEND_CUDA, TK_IMPL_GENERAL, true, 6000, 6)}) {
        const Result full = unlimited(in, sshopm_run);
        ASSERT_EQ(full.status, TK_OK) << full.error;
        expect_chunked_equals_unlimited(in, sshopm_run, full, {"1", "3"}, "impl " + std::to_string(in.opts.impl) + ", ");
    }
}

TEST(CudaMemory, SshopmWithNoRoomIsAMemoryError)
{
    TK_REQUIRE_GPU();
    expect_no_room_is_a_memory_error(sshopm_input(TK_BACKEND_CUDA, TK_IMPL_UNROLLED, false, 100, 5), sshopm_run,
                                     "one tensor");
}

TEST(CudaMemory, FibersChunksUnderALimitBitForBit)
{
    TK_REQUIRE_GPU();
    // lmax 8: a plan of ~120 KB, ~11 KB a voxel over both streams: 1 MiB holds ~70 voxels
    for (auto in : {fibers_input(TK_BACKEND_CUDA, 8, 3000, 5, true), fibers_input(TK_BACKEND_CUDA, 4, 5000, 6, false)}) {
        const Result full = unlimited(in, fibers_run);
        ASSERT_EQ(full.status, TK_OK) << full.error;
        expect_chunked_equals_unlimited(in, fibers_run, full, {"1", "2"}, "lmax " + std::to_string(in.opts.lmax) + ", ");
    }
}

TEST(CudaMemory, FibersWithNoRoomIsAMemoryError)
{
    TK_REQUIRE_GPU();
    expect_no_room_is_a_memory_error(fibers_input(TK_BACKEND_CUDA, 8, 50, 5, false), fibers_run, "plan");
}

TEST(CudaMemory, EigChunksUnderALimitBitForBit)
{
    TK_REQUIRE_GPU();
    // order 8 with vectors: 1665 bytes a matrix, so 1 MiB over three streams is ~180 a chunk
    for (auto in : {eig_input(TK_BACKEND_CUDA, 8, true, true, 6000, 5), eig_input(TK_BACKEND_CUDA, 5, false, false, 20000, 6)}) {
        const Result full = unlimited(in, eig_run);
        ASSERT_EQ(full.status, TK_OK) << full.error;
        expect_chunked_equals_unlimited(in, eig_run, full, {"1", "2"}, "n " + std::to_string(in.opts.n) + ", ");
        // a chunk the caller chose: kept where it fits, refused (not shrunk) where it does not
        MemoryLimit limit("1");
        auto fixed = in;
        fixed.opts.cuda_chunk = 50;
        EXPECT_TRUE(same_result(eig_run(fixed), full)) << "n " << in.opts.n << ", cuda_chunk 50";
        fixed.opts.cuda_chunk = 5000;
        EXPECT_TRUE(memory_error(eig_run(fixed), "cuda_chunk"));
        EXPECT_EQ(tk_cuda_memory_in_use(), 0u);
    }
}

TEST(CudaMemory, EigWithNoRoomIsAMemoryError)
{
    TK_REQUIRE_GPU();
    expect_no_room_is_a_memory_error(eig_input(TK_BACKEND_CUDA, 6, true, false, 100, 5), eig_run);
}

TEST(CudaMemory, EigChunkLargerThanTheDeviceIsAClearError)
{
    // A real request beyond the device (no limit): one chunk of order-64 matrices bigger than
    // its total memory.  The host arrays are reserved, never touched: the call must fail
    // before it reads them.
    TK_REQUIRE_GPU();
    MemoryLimit none("");
    size_t free_b = 0, total = 0;
    ASSERT_EQ(tk_cuda_memory_info(0, &free_b, &total), TK_OK) << tk_last_error();
    const int n = 64;
    const size_t per_matrix = (size_t)n * n * 8 + 2 * (size_t)n * 8 + 1, count = total / per_matrix + 1;
    const size_t in_bytes = count * (size_t)n * n * 8, val_bytes = count * 2 * (size_t)n * 8;
    auto reserve = [](size_t bytes) {
        void *p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        return p == MAP_FAILED ? nullptr : p;
    };
    void *a = reserve(in_bytes), *values = reserve(val_bytes), *status = reserve(count);
    if (!a || !values || !status) {
        if (a) munmap(a, in_bytes);
        if (values) munmap(values, val_bytes);
        if (status) munmap(status, count);
        GTEST_SKIP() << "SKIPPED: the host cannot reserve " << in_bytes << " bytes of address space";
    }
    tk_eig_options o = tk_eig_test::eig_options(n, TK_BACKEND_CUDA);
    o.cuda_chunk = count;
    tk_eig_result out = {values, nullptr, (int8_t *)status};
    const tk_status s = tk_eig_solve(&o, count, a, &out, nullptr, nullptr);
    const std::string message = tk_last_error();
    munmap(a, in_bytes);
    munmap(values, val_bytes);
    munmap(status, count);
    EXPECT_EQ(s, TK_ERR_MEMORY) << message;
    EXPECT_NE(message.find("GiB of GPU memory"), std::string::npos) << message;
    EXPECT_NE(message.find("cuda_chunk"), std::string::npos) << message;
    EXPECT_EQ(tk_cuda_memory_in_use(), 0u);
}

TEST(CudaMemory, TuckerIsRefusedUpFrontOrMatchesTheUnlimitedRun)
{
    TK_REQUIRE_GPU();
    // ~1.3 MB resident (model and three B-CSF copies of 30,000 entries): refused at 0 and
    // 1 MiB, run at 2 and 8.  The GPU's atomic sums round differently from run to run.
    const auto in = tucker_input(TK_BACKEND_CUDA, 5);
    const Result full = unlimited(in, tucker_run);
    ASSERT_EQ(full.status, TK_OK) << full.error;
    int refused = 0, ran = 0;
    expect_unlimited_result_or_memory_error(in, tucker_run, full, 2e-3, {"0", "1", "2", "8"}, "does not chunk", "", &ran,
                                            &refused);
    EXPECT_EQ(refused, 2);
    EXPECT_EQ(ran, 2);
}

TEST(CudaMemory, PltfIsRefusedOrMatchesTheUnlimitedRun)
{
    TK_REQUIRE_GPU();
    // Masked Euclidean PARAFAC (the cuBLAS path, with unfolded copies of X and the mask)
    // and KL PARAFAC (the fused kernel): ~1.3 MB and ~1 MB resident, plus intermediates.
    // Every limit gives the unlimited result or a clean TK_ERR_MEMORY.
    struct Case {
        PltfInput in;
        double tol;
    };
    for (const Case &c : {Case{pltf_input(TK_BACKEND_CUDA, "ijk=ia,ja,ka", "i=40,j=40,k=40,a=6", TK_PLTF_EUCLIDEAN, 5, true), 1e-5},
                          Case{pltf_input(TK_BACKEND_CUDA, "ijk=ia,ja,ka", "i=40,j=40,k=40,a=6", TK_PLTF_KL, 6, false), 1e-4},
                          Case{pltf_input(TK_BACKEND_CUDA, "ijk=ip,jq,kr,pqr", "i=30,j=30,k=30,p=4,q=3,r=5", TK_PLTF_IS, 7, true),
                               1e-4}}) {
        const Result full = unlimited(c.in, pltf_run);
        ASSERT_EQ(full.status, TK_OK) << full.error;
        int refused = 0, ran = 0;
        expect_unlimited_result_or_memory_error(c.in, pltf_run, full, c.tol, {"0", "1", "2", "3", "4", "6", "8", "32"},
                                                nullptr, std::string(c.in.model.text) + ", ", &ran, &refused);
        EXPECT_GE(refused, 1) << c.in.model.text; // at 0 MiB at least
        EXPECT_GE(ran, 1) << c.in.model.text;
    }
    // Refused before any upload, naming the model: 1.23 MiB of data, mask and factors.
    MemoryLimit limit("1");
    const Result r =
        pltf_run(pltf_input(TK_BACKEND_CUDA, "ijk=ia,ja,ka", "i=40,j=40,k=40,a=6", TK_PLTF_EUCLIDEAN, 5, true));
    EXPECT_TRUE(memory_error(r, "model \"ijk=ia,ja,ka\""));
    EXPECT_EQ(tk_cuda_memory_in_use(), 0u);
}

TEST(CudaMemory, PltfNaiveGtmSlicesUnderALimitBitForBit)
{
    TK_REQUIRE_GPU();
    // The seed's joint tensor here is 64 x 64 x 4096 floats (64 MiB); under 8 MiB it goes
    // in thinner slices, summed in the same order.
    tk_pltf_model m = pltf_model("ij=ia,ja", "i=64,j=64,a=4096");
    auto ops = random_factors(m, 3);
    auto ptrs = pointers(ops);
    std::vector<double> full(tk_pltf_out_count(&m)), limited(full.size()), cpu(full.size());
    {
        MemoryLimit none("");
        ASSERT_EQ(tk_pltf_gtm(&m, TK_BACKEND_CUDA, 1, ptrs.data(), full.data()), TK_OK) << tk_last_error();
    }
    {
        MemoryLimit limit("8");
        ASSERT_EQ(tk_pltf_gtm(&m, TK_BACKEND_CUDA, 1, ptrs.data(), limited.data()), TK_OK) << tk_last_error();
    }
    EXPECT_EQ(std::memcmp(full.data(), limited.data(), sizeof(double) * full.size()), 0);
    ASSERT_EQ(tk_pltf_gtm(&m, TK_BACKEND_CPU, 0, ptrs.data(), cpu.data()), TK_OK) << tk_last_error();
    for (size_t i = 0; i < cpu.size(); ++i) ASSERT_NEAR(limited[i], cpu[i], 5e-4 * cpu[i]) << "entry " << i;
    EXPECT_EQ(tk_cuda_memory_in_use(), 0u);
    {
        MemoryLimit limit("0");
        EXPECT_EQ(tk_pltf_gtm(&m, TK_BACKEND_CUDA, 1, ptrs.data(), limited.data()), TK_ERR_MEMORY);
        EXPECT_NE(std::string(tk_last_error()).find("of GPU memory"), std::string::npos) << tk_last_error();
    }
    EXPECT_EQ(tk_cuda_memory_in_use(), 0u);
}

TEST(CudaMemory, TwoThreadsShareOneLimit)
{
    TK_REQUIRE_GPU();
    // Both plan with the same free memory, one of them finds it taken and halves its chunk.
    // 4 MiB: each plan holds its own tables now (the fibers plan's for lmax 8: 365 KiB), and a
    // plan that comes first keeps 7/8 of what is free; the batches still need chunks in it.
    const auto e = eig_input(TK_BACKEND_CUDA, 8, true, true, 8000, 9);
    const auto f = fibers_input(TK_BACKEND_CUDA, 8, 3000, 9, false);
    const Result e0 = unlimited(e, eig_run), f0 = unlimited(f, fibers_run);
    ASSERT_EQ(e0.status, TK_OK) << e0.error;
    ASSERT_EQ(f0.status, TK_OK) << f0.error;
    MemoryLimit limit("4");
    for (int round = 0; round < 3; ++round) {
        Result e1, f1;
        run_concurrently([&] { e1 = eig_run(e); }, [&] { f1 = fibers_run(f); });
        EXPECT_TRUE(same_result(e1, e0)) << "round " << round;
        EXPECT_TRUE(same_result(f1, f0)) << "round " << round;
    }
    EXPECT_EQ(tk_cuda_memory_in_use(), 0u);
}
