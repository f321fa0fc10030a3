// Two calls of one core on two threads of one process (as two ITK pipelines make them)
// give, bit for bit, what they give one after the other: every CPU backend of every core,
// on different inputs and on two copies of one input; a cpu eigenvalue plan shared by
// several threads gives each what it gives alone.  And each thread keeps its own error message.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "concurrency_test_util.h"

using namespace tk_test;

TEST(Concurrency, EachThreadKeepsItsOwnErrorMessage)
{
    // Two threads fail over and over with different messages, each until both have failed
    // many times (so their failures interleave); neither ever reads the other's message.
    std::atomic<int> wrong{0}, done[2] = {{0}, {0}};
    auto fail_with = [&](int self, int n) {
        return [&, self, n] {
            const std::string mine = "order " + std::to_string(n) + " ";
            for (int i = 0; i < 20000 || done[1 - self].load() < 20000; ++i) {
                tk_eig_options o;
                tk_eig_options_init(&o, n);
                double a = 0, v[2];
                tk_eig_result out = {v, nullptr, nullptr};
                if (tk_eig_solve(&o, 1, &a, &out, nullptr, nullptr) != TK_ERR_UNSUPPORTED ||
                    std::string(tk_last_error()).find(mine) == std::string::npos)
                    ++wrong;
                done[self].store(i + 1);
            }
        };
    };
    run_concurrently(fail_with(0, 0), fail_with(1, TK_EIG_MAX_N + 7));
    EXPECT_EQ(wrong.load(), 0);
    // One thread's message survives the other thread clearing its own, many times over.
    std::atomic<int> clears{0};
    std::atomic<bool> read{false};
    std::string seen;
    run_concurrently(
        [&] {
            tk_set_error(TK_ERR_DATA, "this thread's own failure");
            while (clears.load() < 10000) std::this_thread::yield();
            seen = tk_last_error();
            read = true;
        },
        [&] {
            while (!read.load()) tk_clear_error(), ++clears;
        });
    EXPECT_EQ(seen, "this thread's own failure");
}

TEST(Concurrency, SshopmCpuAndOmp)
{
    for (tk_backend b : {TK_BACKEND_CPU, TK_BACKEND_OMP})
        for (tk_impl impl : {TK_IMPL_GENERAL, TK_IMPL_UNROLLED}) {
            const bool dbl = impl == TK_IMPL_GENERAL;
            auto a = sshopm_input(b, impl, dbl, 250, 1), c = sshopm_input(b, impl, dbl, 400, 2);
            expect_concurrent_equals_sequential<SshopmInput>(a, c, sshopm_run);
            expect_concurrent_equals_sequential<SshopmInput>(a, a, sshopm_run, 0, 1); // two copies of one input
            if (HasFatalFailure()) return;
        }
}

TEST(Concurrency, FibersCpuAndOmp)
{
    for (tk_backend b : {TK_BACKEND_CPU, TK_BACKEND_OMP}) {
        // different orders too: each one-shot call builds its own plan
        auto a = fibers_input(b, 8, 160, 1, true), c = fibers_input(b, 6, 240, 2, false);
        expect_concurrent_equals_sequential<FibersInput>(a, c, fibers_run);
        expect_concurrent_equals_sequential<FibersInput>(a, a, fibers_run, 0, 1);
        if (HasFatalFailure()) return;
    }
}

TEST(Concurrency, FibersOnePlanPerThread)
{
    // Plans are not shared between threads; one each, executed again and again at the same
    // time, gives the one-shot results.
    auto a = fibers_input(TK_BACKEND_OMP, 8, 160, 3, true), c = fibers_input(TK_BACKEND_CPU, 8, 240, 4, false);
    const Result a0 = fibers_run(a), c0 = fibers_run(c);
    auto repeat_on_a_plan = [](const FibersInput &in, Result &out) {
        tk_fibers_plan *plan = nullptr;
        if (tk_fibers_plan_create(&in.opts, 64, &plan) != TK_OK) return;
        const size_t voxels = in.sh.size() / tk_sh_num_coeffs(in.opts.lmax), np = (size_t)in.opts.num_peaks;
        for (int round = 0; round < 3; ++round) {
            std::vector<float> dirs(voxels * np * 3), amps(voxels * np);
            size_t bad = 0;
            if (tk_fibers_plan_execute(plan, voxels, in.sh.data(), in.mask.empty() ? nullptr : in.mask.data(),
                                       dirs.data(), amps.data(), &bad, nullptr) != TK_OK)
                break;
            out = Result();
            append(out, dirs.data(), dirs.size());
            append(out, amps.data(), amps.size());
            out.values.push_back((double)bad);
        }
        tk_fibers_plan_destroy(plan);
    };
    Result a1, c1;
    run_concurrently([&] { repeat_on_a_plan(a, a1); }, [&] { repeat_on_a_plan(c, c1); });
    EXPECT_TRUE(same_result(a1, a0));
    EXPECT_TRUE(same_result(c1, c0));
}

TEST(Concurrency, EigCpuAndOmp)
{
    for (tk_backend b : {TK_BACKEND_CPU, TK_BACKEND_OMP}) {
        auto a = eig_input(b, 9, true, true, 700, 1), c = eig_input(b, 5, false, false, 1500, 2);
        expect_concurrent_equals_sequential<EigInput>(a, c, eig_run);
        expect_concurrent_equals_sequential<EigInput>(a, a, eig_run, 0, 1);
        if (HasFatalFailure()) return;
    }
}

TEST(Concurrency, OneCpuEigPlanExecutedByFourThreadsAtOnce)
{
    // tk_eig.h: a cpu plan's execute only reads the plan, so threads may share one.  Four
    // threads, each with its own batches (sizes differ; two ask for vectors, two do not: the
    // plan decides nothing of that), execute one plan at the same time, several times each:
    // every result is, bit for bit, its batch's single-threaded run through the same plan.
    const int n = 7, threads = 4, repeats = 5;
    for (bool dbl : {true, false}) {
        std::vector<EigInput> batches;
        for (int t = 0; t < threads; ++t)
            batches.push_back(eig_input(TK_BACKEND_CPU, n, dbl, t % 2 == 0, 200 + 150 * (size_t)t, 40 + (uint64_t)t));
        tk_eig_plan *plan = nullptr;
        ASSERT_EQ(tk_eig_plan_create(&batches[0].opts, 0, &plan), TK_OK) << tk_last_error();
        std::unique_ptr<tk_eig_plan, void (*)(tk_eig_plan *)> owned(plan, tk_eig_plan_destroy);
        std::vector<Result> alone;
        for (const EigInput &b : batches) {
            alone.push_back(eig_plan_run(plan, b));
            ASSERT_EQ(alone.back().status, TK_OK) << alone.back().error;
            EXPECT_TRUE(same_result(alone.back(), eig_run(b))) << "the plan against a one-shot solve";
        }
        std::vector<std::vector<Result>> together(threads, std::vector<Result>(repeats));
        std::vector<std::function<void()>> work;
        for (int t = 0; t < threads; ++t)
            work.push_back([&, t] {
                for (int k = 0; k < repeats; ++k) together[t][k] = eig_plan_run(plan, batches[t]);
            });
        run_all_concurrently(work);
        for (int t = 0; t < threads; ++t)
            for (int k = 0; k < repeats; ++k)
                EXPECT_TRUE(same_result(together[t][k], alone[t]))
                    << (dbl ? "double" : "single") << ", thread " << t << ", run " << k;
    }
}

TEST(Concurrency, TuckerCpuAndOmp)
{
    for (tk_backend b : {TK_BACKEND_CPU, TK_BACKEND_OMP}) {
        auto a = tucker_input(b, 1, 12000), c = tucker_input(b, 2, 12000);
        expect_concurrent_equals_sequential<TuckerInput>(a, c, tucker_run, 0, 2);
        expect_concurrent_equals_sequential<TuckerInput>(a, a, tucker_run, 0, 1);
        if (HasFatalFailure()) return;
    }
}

TEST(Concurrency, PltfCpuAndOmp)
{
    // The generic GEMM path (Euclidean, masked Tucker-3) and KL PARAFAC, on cpu and omp: both
    // create their CPU engine concurrently, and the BLAS thread count is process-wide.
    for (tk_backend b : {TK_BACKEND_CPU, TK_BACKEND_OMP}) {
        auto a = pltf_input(b, "ijk=ia,ja,ka", "i=30,j=24,k=20,a=5", TK_PLTF_KL, 1, false);
        auto c = pltf_input(b, "ijk=ip,jq,kr,pqr", "i=30,j=24,k=20,p=4,q=3,r=3", TK_PLTF_EUCLIDEAN, 2, true);
        expect_concurrent_equals_sequential<PltfInput>(a, c, pltf_run);
        expect_concurrent_equals_sequential<PltfInput>(c, c, pltf_run, 0, 1);
        if (HasFatalFailure()) return;
    }
    // cpu beside omp: each engine sets OpenBLAS's process-wide thread count for itself, so
    // either may run its GEMMs with the other's count; the results must not change.
    auto a = pltf_input(TK_BACKEND_CPU, "ijk=ip,jq,kr,pqr", "i=30,j=24,k=20,p=4,q=3,r=3", TK_PLTF_EUCLIDEAN, 3, true);
    auto c = pltf_input(TK_BACKEND_OMP, "ijk=ip,jq,kr,pqr", "i=30,j=24,k=20,p=4,q=3,r=3", TK_PLTF_EUCLIDEAN, 4, true);
    expect_concurrent_equals_sequential<PltfInput>(a, c, pltf_run);
}

TEST(Concurrency, DifferentCoresAtOnce)
{
    // One thread per core kind at the same time: cpu fibers beside omp eigenvalues.
    auto f = fibers_input(TK_BACKEND_CPU, 8, 200, 3, false);
    auto e = eig_input(TK_BACKEND_OMP, 12, true, true, 500, 3);
    const Result f0 = fibers_run(f), e0 = eig_run(e);
    Result f1, e1;
    run_concurrently([&] { f1 = fibers_run(f); }, [&] { e1 = eig_run(e); });
    EXPECT_TRUE(same_result(f1, f0));
    EXPECT_TRUE(same_result(e1, e0));
}
