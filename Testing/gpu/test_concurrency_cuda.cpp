// Two host threads calling one CUDA core at once give what they give one after the other
// (label gpu; skips without a GPU or a CUDA build): bit for bit where the backend is
// deterministic (SS-HOPM, fibers, eigenvalues), within float rounding where its atomic sums
// make every run differ a little (FastTucker, PLTF).
#include <gtest/gtest.h>

#include <cstring>

#include "concurrency_test_util.h"
#include "tk_cuda_memory.h"

using namespace tk_test;

#define TK_REQUIRE_GPU()                                                                                      \
    do {                                                                                                      \
        size_t free_, total_;                                                                                 \
        const tk_status s_ = tk_cuda_memory_info(0, &free_, &total_);                                         \
        if (s_ == TK_ERR_UNSUPPORTED) GTEST_SKIP() << "SKIPPED: built without CUDA: " << tk_last_error();      \
        if (s_ == TK_ERR_CUDA) GTEST_SKIP() << "SKIPPED: no GPU here: " << tk_last_error();                   \
        ASSERT_EQ(s_, TK_OK) << tk_last_error();                                                              \
    } while (0)

TEST(ConcurrencyCuda, SshopmTwoHostThreads)
{
    TK_REQUIRE_GPU();
    // general (constant memory, which the backend guards) and unrolled kernels
    for (tk_impl impl : {TK_IMPL_GENERAL, TK_IMPL_UNROLLED}) {
        auto a = sshopm_input(TK_BACKEND_CUDA, impl, true, 20000, 1), b = sshopm_input(TK_BACKEND_CUDA, impl, false, 30000, 2);
        expect_concurrent_equals_sequential<SshopmInput>(a, b, sshopm_run);
        expect_concurrent_equals_sequential<SshopmInput>(a, a, sshopm_run, 0, 1);
        if (HasFatalFailure()) return;
    }
    EXPECT_EQ(tk_cuda_memory_in_use(), 0u);
}

TEST(ConcurrencyCuda, FibersTwoHostThreads)
{
    TK_REQUIRE_GPU();
    auto a = fibers_input(TK_BACKEND_CUDA, 8, 20000, 1, true), b = fibers_input(TK_BACKEND_CUDA, 6, 30000, 2, false);
    expect_concurrent_equals_sequential<FibersInput>(a, b, fibers_run);
    expect_concurrent_equals_sequential<FibersInput>(a, a, fibers_run, 0, 1);
    EXPECT_EQ(tk_cuda_memory_in_use(), 0u);
}

TEST(ConcurrencyCuda, EigTwoHostThreads)
{
    TK_REQUIRE_GPU();
    auto a = eig_input(TK_BACKEND_CUDA, 12, true, true, 40000, 1), b = eig_input(TK_BACKEND_CUDA, 5, false, false, 200000, 2);
    expect_concurrent_equals_sequential<EigInput>(a, b, eig_run);
    expect_concurrent_equals_sequential<EigInput>(a, a, eig_run, 0, 1);
    EXPECT_EQ(tk_cuda_memory_in_use(), 0u);
}

TEST(ConcurrencyCuda, TuckerTwoHostThreads)
{
    TK_REQUIRE_GPU();
    auto a = tucker_input(TK_BACKEND_CUDA, 1), b = tucker_input(TK_BACKEND_CUDA, 2);
    a.iterations = b.iterations = 5;
    expect_concurrent_equals_sequential<TuckerInput>(a, b, tucker_run, 2e-3);
    expect_concurrent_equals_sequential<TuckerInput>(a, a, tucker_run, 2e-3, 1);
    EXPECT_EQ(tk_cuda_memory_in_use(), 0u);
}

TEST(ConcurrencyCuda, PltfTwoHostThreads)
{
    TK_REQUIRE_GPU();
    // the fused KL kernel beside the cuBLAS path, each thread with its own engine and handle
    auto a = pltf_input(TK_BACKEND_CUDA, "ijk=ia,ja,ka", "i=60,j=50,k=40,a=8", TK_PLTF_KL, 1, false);
    auto b = pltf_input(TK_BACKEND_CUDA, "ijk=ip,jq,kr,pqr", "i=50,j=40,k=30,p=4,q=3,r=5", TK_PLTF_EUCLIDEAN, 2, true);
    expect_concurrent_equals_sequential<PltfInput>(a, b, pltf_run, 1e-4);
    expect_concurrent_equals_sequential<PltfInput>(b, b, pltf_run, 1e-4, 1);
    EXPECT_EQ(tk_cuda_memory_in_use(), 0u);
}

TEST(ConcurrencyCuda, CudaBesideOmpOfTheSameCore)
{
    TK_REQUIRE_GPU();
    // One thread on the GPU, the other on the CPU backend of the same core.
    auto g = eig_input(TK_BACKEND_CUDA, 9, true, true, 20000, 4), c = eig_input(TK_BACKEND_OMP, 9, true, true, 3000, 5);
    const Result g0 = eig_run(g), c0 = eig_run(c);
    Result g1, c1;
    run_concurrently([&] { g1 = eig_run(g); }, [&] { c1 = eig_run(c); });
    EXPECT_TRUE(same_result(g1, g0));
    EXPECT_TRUE(same_result(c1, c0));
    auto fg = fibers_input(TK_BACKEND_CUDA, 8, 10000, 4, false), fc = fibers_input(TK_BACKEND_OMP, 8, 1000, 5, false);
    const Result fg0 = fibers_run(fg), fc0 = fibers_run(fc);
    Result fg1, fc1;
    run_concurrently([&] { fg1 = fibers_run(fg); }, [&] { fc1 = fibers_run(fc); });
    EXPECT_TRUE(same_result(fg1, fg0));
    EXPECT_TRUE(same_result(fc1, fc0));
}
