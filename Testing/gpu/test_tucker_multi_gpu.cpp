// FastTucker on several GPUs of one host (NCCL; label gpu): every GPU holds the same model,
// and the model is one GPU's to float rounding.  Skips without a GPU; the tests that need two
// GPUs skip on a machine with one, saying so.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "tk_bench_hooks.h"
#include "tk_device.h"
#include "tucker_test_util.h"

using namespace tk_test;

namespace {

#define NEED_GPUS(n)                                                                                   \
    do {                                                                                               \
        if (usable_gpus() < (n)) GTEST_SKIP() << "SKIPPED: needs " << (n) << " GPUs, this machine has " \
                                              << usable_gpus();                                       \
    } while (0)

// Train on `devices` GPUs; every GPU's copy of the model must be the same bits.
void train_checked(const tk_tucker_options &o, const tk_tucker_coo &t, const tk_tucker_model &init, int iters,
                   tk_tucker_model *out)
{
    Solver s;
    ASSERT_NO_FATAL_FAILURE(train_in(o, t, init, iters, &s, out));
    for (int p = 1; p < (o.cuda_device_count > 1 ? o.cuda_device_count : 1); ++p) {
        Model other;
        ASSERT_EQ(tk_tucker_model_copy(&other.m, &init), TK_OK);
        ASSERT_EQ(tk_tucker_solver_device_model(s.s, p, &other.m), TK_OK) << tk_last_error();
        EXPECT_TRUE(models_identical(*out, other.m)) << "GPU " << p << "'s model differs from GPU 0's";
    }
}

}  // namespace

TEST(TuckerMultiGpu, EveryKernelShapeMatchesOneGpu)
{
    NEED_GPUS(1);
    const int devices = usable_gpus() >= 2 ? usable_gpus() : 1;
    struct Case {
        int order, j, r;
        size_t threshold;
    };
    // Small thresholds split rows into several sub-slices (the averaged updates); order 10
    // and J or R above 32 take the other kernels.
    for (Case c : {Case{3, 8, 8, 128}, Case{3, 32, 32, 16}, Case{3, 48, 20, 128}, Case{3, 20, 48, 4},
                   Case{5, 16, 16, 8}, Case{10, 4, 4, 128}}) {
        std::vector<uint32_t> dims = {70, 50, 40, 9, 8, 7, 6, 5, 4, 3};
        auto so = synth_options(c.order, dims, 20000, 8, 0.1, (uint64_t)(c.order * 100 + c.j));
        Coo t;
        Model init, one, many;
        ASSERT_NO_FATAL_FAILURE(synth_with_start(so, c.j, c.r, 2, &t, &init));
        const std::string what =
            "order " + std::to_string(c.order) + " J " + std::to_string(c.j) + " R " + std::to_string(c.r);
        ASSERT_NO_FATAL_FAILURE(train_checked(cuda_opts(1, c.threshold), t.t, init.m, 2, &one.m));
        ASSERT_NO_FATAL_FAILURE(train_checked(cuda_opts(devices, c.threshold), t.t, init.m, 2, &many.m));
        // The tolerance of one GPU against omp (test_tucker_cuda.cpp): only the order of
        // float sums differs.
        expect_same_to_rounding(many.m, one.m, t.t, what + " SGD");
        // Exact row solves (opt-in): every GPU solves its own rows (not compared above order 5:
        // tucker_test_util.h).
        if (!solves_compare_to_rounding(c.order)) continue;
        const auto als = TK_TUCKER_FACTOR_ALS;
        Model one_als, many_als;
        ASSERT_NO_FATAL_FAILURE(train_checked(cuda_opts(1, c.threshold, als), t.t, init.m, 2, &one_als.m));
        ASSERT_NO_FATAL_FAILURE(train_checked(cuda_opts(devices, c.threshold, als), t.t, init.m, 2, &many_als.m));
        expect_same_solves_to_rounding(many_als.m, one_als.m, t.t, what + " ALS");
    }
}

TEST(TuckerMultiGpu, ConvergesAsOneGpuDoes)
{
    NEED_GPUS(2);
    auto so = synth_options(3, {3000, 800, 60}, 400000, 8, 0.1, 5);
    so.unique = 1;
    Coo all, tr, te;
    ASSERT_EQ(tk_tucker_synth(&so, &all.t, nullptr), TK_OK);
    ASSERT_EQ(tk_tucker_coo_split(&all.t, 0.05, 3, &tr.t, &te.t), TK_OK);
    Model init, one, many, ref;
    ASSERT_NO_FATAL_FAILURE(start_model(so, 8, 8, 9, &init.m));
    ASSERT_NO_FATAL_FAILURE(train_checked(cuda_opts(1, 128), tr.t, init.m, 15, &one.m));
    ASSERT_NO_FATAL_FAILURE(train_checked(cuda_opts(usable_gpus(), 128), tr.t, init.m, 15, &many.m));
    tk_tucker_options cpu = cuda_opts(1, 128);
    cpu.backend = TK_BACKEND_OMP;
    cpu.precision = TK_PRECISION_DOUBLE;  // the reference path
    ASSERT_NO_FATAL_FAILURE(train(cpu, tr.t, init.m, 15, &ref.m));
    tk_tucker_metrics m1, mn, mr, start;
    ASSERT_EQ(tk_tucker_evaluate(&one.m, &te.t, 0, 0, &m1), TK_OK);
    ASSERT_EQ(tk_tucker_evaluate(&many.m, &te.t, 0, 0, &mn), TK_OK);
    ASSERT_EQ(tk_tucker_evaluate(&ref.m, &te.t, 0, 0, &mr), TK_OK);
    ASSERT_EQ(tk_tucker_evaluate(&init.m, &te.t, 0, 0, &start), TK_OK);
    // 15 iterations compound the rounding differences; the test error stays the double
    // reference's (and one GPU's) to 1%, and training has moved it.
    EXPECT_NEAR(mn.rmse, m1.rmse, 0.01 * m1.rmse);
    EXPECT_NEAR(mn.rmse, mr.rmse, 0.01 * mr.rmse);
    EXPECT_LT(mn.rmse, 0.9 * start.rmse);
}

TEST(TuckerMultiGpu, AGpuWithNoEntriesOfAModeStillTakesPart)
{
    NEED_GPUS(2);
    // Mode 2 has one index: its one row cannot be split, so every GPU but one owns no
    // entries of that mode (nor rows), and still follows the others.
    auto so = synth_options(3, {40, 30, 1}, 3000, 4, 0.1, 17);
    Coo t;
    Model init, one, many;
    ASSERT_NO_FATAL_FAILURE(synth_with_start(so, 4, 4, 3, &t, &init));
    ASSERT_NO_FATAL_FAILURE(train_checked(cuda_opts(1, 4), t.t, init.m, 3, &one.m));
    ASSERT_NO_FATAL_FAILURE(train_checked(cuda_opts(usable_gpus(), 4), t.t, init.m, 3, &many.m));
    EXPECT_LT(max_abs_diff(one.m, many.m), 2e-3);
}

TEST(TuckerMultiGpu, MoreGpusThanTheMachineHasIsAClearError)
{
    NEED_GPUS(1);
    auto so = synth_options(3, {20, 20, 20}, 500, 4, 0.1, 1);
    Coo t;
    Model init;
    ASSERT_NO_FATAL_FAILURE(synth_with_start(so, 4, 4, 3, &t, &init));
    auto o = cuda_opts(usable_gpus() + 1, 128);
    Solver s;
    EXPECT_EQ(tk_tucker_solver_create(&o, &t.t, &init.m, &s.s), TK_ERR_ARGUMENT);
    const std::string want = std::to_string(usable_gpus() + 1) + " CUDA devices from device 0 asked for, but " +
                             std::to_string(usable_gpus()) + " found";
    EXPECT_NE(std::string(tk_last_error()).find(want), std::string::npos) << tk_last_error();
}

TEST(TuckerMultiGpu, AllReduceMeasurementRuns)
{
    NEED_GPUS(2);
    double ms = 0, gbps = 0;
    ASSERT_EQ(tk_nccl_allreduce_measure(usable_gpus(), 64u << 20, 3, &ms, &gbps), TK_OK) << tk_last_error();
    EXPECT_GT(ms, 0);
    EXPECT_GT(gbps, 1.0);  // anything slower than PCIe 1.0 means a broken link
}
