// FastTucker core: recovery, gradients, storage equivalence, reproducibility, .tns files.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "tk_bench_hooks.h"
#include "tk_cli_runner.h"
#include "tucker_test_util.h"

using namespace tk_test;

namespace {

tk_tucker_options opts(tk_backend backend, double lr_a, double lr_b, double lambda)
{
    tk_tucker_options o;
    tk_tucker_options_init(&o);
    o.backend = backend;
    o.factor_update = TK_TUCKER_FACTOR_SGD;  // these tests are of the seed's SGD steps
    o.lr_a = lr_a;
    o.lr_b = lr_b;
    o.lambda_a = o.lambda_b = lambda;
    return o;
}

}  // namespace

TEST(Tucker, RecoversASyntheticModelToTheNoiseLevel)
{
    const double noise = 0.2;
    auto so = synth_options(3, {300, 200, 100}, 100000, 4, noise, 11);
    so.unique = 1;
    Coo all, tr, te;
    ASSERT_EQ(tk_tucker_synth(&so, &all.t, nullptr), TK_OK) << tk_last_error();
    ASSERT_EQ(tk_tucker_coo_split(&all.t, 0.1, 3, &tr.t, &te.t), TK_OK);
    double rms = 0;
    for (size_t e = 0; e < te.t.nnz; ++e) rms += (double)te.t.val[e] * te.t.val[e];
    rms = std::sqrt(rms / (double)te.t.nnz);
    Model init, fit;
    start_model(so, 4, 4, 5, &init.m);
    train(opts(TK_BACKEND_OMP, 0.1, 5, 1e-4), tr.t, init.m, 70, &fit.m);
    tk_tucker_metrics m;
    ASSERT_EQ(tk_tucker_evaluate(&fit.m, &te.t, 0, 0, &m), TK_OK);
    // Held-out entries: the noise alone gives RMSE 0.2; predicting 0 gives rms (~0.57).
    EXPECT_LT(m.rmse, 1.15 * noise) << "signal rms " << rms;
    EXPECT_GT(rms, 2.5 * noise);
    EXPECT_NEAR(m.mae, noise * std::sqrt(2 / M_PI), 0.2 * noise);
}

TEST(Tucker, GradientMatchesFiniteDifferencesOfTheTuckerLoss)
{
    for (int order : {3, 4}) {
        auto so = synth_options(order, {5, 4, 3, 4}, 40, 4, 0.3, 2);
        Coo t;
        Model m;
        ASSERT_NO_FATAL_FAILURE(synth_with_start(so, 4, 4, 9, &t, &m));
        const double la = 0.03, lb = 0.07;
        std::vector<std::vector<double>> ga(order), gb(order);
        std::vector<double *> pa(order), pb(order);
        for (int n = 0; n < order; ++n) {
            ga[n].resize(so.dims[n] * 4);
            gb[n].resize(16);
            pa[n] = ga[n].data();
            pb[n] = gb[n].data();
        }
        ASSERT_EQ(tk_tucker_gradient(&m.m, &t.t, la, lb, pa.data(), pb.data()), TK_OK);
        // The core's evaluation agrees with the dense Tucker oracle.
        tk_tucker_metrics met;
        ASSERT_EQ(tk_tucker_evaluate(&m.m, &t.t, la, lb, &met), TK_OK);
        EXPECT_NEAR(met.loss, loss_dense(m.m, t.t, la, lb), 1e-9 * met.loss);
        auto check = [&](float *param, double analytic) {
            float keep = *param;
            const float h = 1e-2f;
            *param = keep + h;
            double up = loss_dense(m.m, t.t, la, lb), dp = (double)*param - keep;
            *param = keep - h;
            double down = loss_dense(m.m, t.t, la, lb), dm = keep - (double)*param;
            *param = keep;
            double fd = (up - down) / (dp + dm);
            EXPECT_NEAR(analytic, fd, 2e-3 * (1 + std::fabs(fd))) << "order " << order;
        };
        for (int n = 0; n < order; ++n) {
            for (size_t k = 0; k < ga[n].size(); k += 3) check(&m.m.a[n][k], ga[n][k]);
            for (size_t k = 0; k < 16; k += 5) check(&m.m.b[n][k], gb[n][k]);
        }
    }
}

// One entry: the factor step is -lr_a/2 times the gradient of e^2 + lambda_a |a|^2
// (seed eq. 10) and the core step -lr_b times that of (1/2M) sum e^2 + lambda_b/2 |B|^2
// (eq. 11); checked on mode 1, the first one updated.
TEST(Tucker, SgdStepsFollowTheLossGradient)
{
    uint32_t dims[3] = {3, 3, 3};
    Coo t;
    ASSERT_EQ(tk_tucker_coo_alloc(&t.t, 3, dims, 1), TK_OK);
    t.t.idx[0] = 1, t.t.idx[1] = 2, t.t.idx[2] = 0, t.t.val[0] = 1.5f;
    Model m;
    ASSERT_EQ(tk_tucker_model_alloc(&m.m, 3, dims, 4, 5), TK_OK);
    tk_tucker_model_init(&m.m, 4, 0);
    const double la = 0.05, lb = 0.02, lr = 1e-3;
    std::vector<std::vector<double>> ga(3, std::vector<double>(12)), gb(3, std::vector<double>(20));
    double *pa[3] = {ga[0].data(), ga[1].data(), ga[2].data()}, *pb[3] = {gb[0].data(), gb[1].data(), gb[2].data()};
    ASSERT_EQ(tk_tucker_gradient(&m.m, &t.t, la, lb, pa, pb), TK_OK);
    for (int dbl : {0, 1}) {
        auto o = opts(TK_BACKEND_CPU, lr, lr, 0);
        o.lambda_a = la, o.lambda_b = lb, o.precision = dbl ? TK_PRECISION_DOUBLE : TK_PRECISION_SINGLE;
        Model after;
        ASSERT_NO_FATAL_FAILURE(factors_once(o, t.t, m.m, &after.m));
        for (int k = 0; k < 12; ++k) {
            double expect = k / 4 == 1 ? m.m.a[0][k] - lr / 2 * ga[0][k] : m.m.a[0][k];
            EXPECT_NEAR(after.m.a[0][k], expect, 1e-6) << k;
        }
        {
            Solver s;
            ASSERT_EQ(tk_tucker_solver_create(&o, &t.t, &m.m, &s.s), TK_OK);
            ASSERT_EQ(tk_tucker_update_core(s.s), TK_OK);
            ASSERT_EQ(tk_tucker_solver_model(s.s, &after.m), TK_OK);
        }
        for (int k = 0; k < 20; ++k) {
            double data = gb[0][k] - 2 * lb * m.m.b[0][k];  // the squared-error part
            double expect = m.m.b[0][k] - lr * (data / 2 + lb * m.m.b[0][k]);
            EXPECT_NEAR(after.m.b[0][k], expect, 1e-6) << k;
        }
    }
}

TEST(Tucker, CooAndBcsfGiveTheSameUpdates)
{
    auto so = synth_options(3, {60, 40, 30}, 6000, 8, 0.1, 21);
    Coo t;
    Model init;
    ASSERT_NO_FATAL_FAILURE(synth_with_start(so, 8, 8, 1, &t, &init));
    ASSERT_EQ(tk_tucker_coo_sort(&t.t), TK_OK);
    for (int dbl : {0, 1}) {
        auto o = opts(TK_BACKEND_CPU, 0.05, 1, 1e-3);
        o.precision = dbl ? TK_PRECISION_DOUBLE : TK_PRECISION_SINGLE;
        o.fiber_threshold = 1u << 30;  // whole slices: plain sequential SGD per row
        Model bcsf, coo;
        // Factor pass alone: the same arithmetic in the same per-row order.
        {
            ASSERT_NO_FATAL_FAILURE(factors_once(o, t.t, init.m, &bcsf.m));
            o.storage = TK_TUCKER_COO;
            ASSERT_NO_FATAL_FAILURE(factors_once(o, t.t, init.m, &coo.m));
            EXPECT_TRUE(models_identical(bcsf.m, coo.m)) << max_abs_diff(bcsf.m, coo.m);
            EXPECT_GT(max_abs_diff(bcsf.m, init.m), 1e-3);  // it did move
            o.storage = TK_TUCKER_BCSF;
        }
        // Full iterations: the core gradient is summed in another order.
        train(o, t.t, init.m, 3, &bcsf.m);
        o.storage = TK_TUCKER_COO;
        Model coo3;
        train(o, t.t, init.m, 3, &coo3.m);
        EXPECT_LT(max_abs_diff(bcsf.m, coo3.m), dbl ? 1e-10 : 2e-4);
    }
}

TEST(Tucker, OmpEqualsCpuBitForBitWithSplitSlices)
{
    auto so = synth_options(4, {50, 40, 30, 20}, 20000, 8, 0.1, 5);
    Coo t;
    Model init, cpu, omp;
    ASSERT_NO_FATAL_FAILURE(synth_with_start(so, 8, 6, 8, &t, &init));
    auto o = opts(TK_BACKEND_CPU, 0.05, 1, 1e-3);
    o.fiber_threshold = 16;  // many rows split into averaged sub-slices
    train(o, t.t, init.m, 2, &cpu.m);
    o.backend = TK_BACKEND_OMP;
    o.num_threads = 3;
    train(o, t.t, init.m, 2, &omp.m);
    EXPECT_TRUE(models_identical(cpu.m, omp.m)) << max_abs_diff(cpu.m, omp.m);
}

TEST(Tucker, ResumedTrainingEqualsUninterrupted)
{
    auto so = synth_options(3, {80, 60, 40}, 10000, 8, 0.1, 6);
    Coo t;
    Model init, whole, half, resumed;
    ASSERT_NO_FATAL_FAILURE(synth_with_start(so, 8, 8, 3, &t, &init));
    auto o = opts(TK_BACKEND_CPU, 0.05, 1, 1e-3);
    train(o, t.t, init.m, 4, &whole.m);
    train(o, t.t, init.m, 2, &half.m);
    train(o, t.t, half.m, 2, &resumed.m);
    EXPECT_TRUE(models_identical(whole.m, resumed.m)) << max_abs_diff(whole.m, resumed.m);
}

TEST(Tucker, DoubleReferenceAndFloatAgree)
{
    auto so = synth_options(3, {60, 50, 40}, 8000, 8, 0.1, 7);
    Coo t;
    Model init, f, d;
    ASSERT_NO_FATAL_FAILURE(synth_with_start(so, 8, 8, 3, &t, &init));
    auto o = opts(TK_BACKEND_OMP, 0.05, 1, 1e-3);
    train(o, t.t, init.m, 3, &f.m);
    o.precision = TK_PRECISION_DOUBLE;
    train(o, t.t, init.m, 3, &d.m);
    EXPECT_LT(max_abs_diff(f.m, d.m), 1e-4);
}

TEST(Tucker, BcsfSlicesAreSortedAndBalanced)
{
    auto so = synth_options(3, {40, 30, 20}, 5000, 4, 0.1, 8);
    so.popularity = 1.0;
    Coo t;
    ASSERT_EQ(tk_tucker_synth(&so, &t.t, nullptr), TK_OK);
    for (int mode = 0; mode < 3; ++mode) {
        tk_tucker_bcsf b;
        ASSERT_EQ(tk_tucker_bcsf_build(&t.t, mode, 50, &b), TK_OK);
        EXPECT_EQ(b.nnz, t.t.nnz);
        std::vector<size_t> per_row(30 + 40, 0);
        for (size_t p = 0; p < b.num_parts; ++p) {
            size_t len = b.part_ptr[p + 1] - b.part_ptr[p];
            EXPECT_GE(len, 1u);
            EXPECT_LE(len, 50u);
            per_row[b.part_row[p]] += len;
            if (p) {
                EXPECT_GE(b.part_row[p], b.part_row[p - 1]);
            }
            for (size_t e = b.part_ptr[p] + 1; e < b.part_ptr[p + 1]; ++e)
                EXPECT_TRUE(std::lexicographical_compare(b.idx + (e - 1) * 2, b.idx + e * 2, b.idx + e * 2,
                                                         b.idx + (e + 1) * 2) ||
                            std::equal(b.idx + (e - 1) * 2, b.idx + e * 2, b.idx + e * 2));
        }
        std::vector<size_t> truth(40, 0);
        for (size_t e = 0; e < t.t.nnz; ++e) ++truth[t.t.idx[e * 3 + (size_t)mode]];
        for (uint32_t i = 0; i < so.dims[mode]; ++i) EXPECT_EQ(per_row[i], truth[i]);
        size_t first[5];
        ASSERT_EQ(tk_tucker_bcsf_row_split(&b, 4, first), TK_OK);
        EXPECT_EQ(first[0], 0u);
        EXPECT_EQ(first[4], b.num_parts);
        for (int k = 1; k < 4; ++k)
            if (first[k] > 0 && first[k] < b.num_parts) {
                EXPECT_NE(b.part_row[first[k]], b.part_row[first[k] - 1]);
            }
        tk_tucker_bcsf_free(&b);
    }
}

TEST(Tucker, SynthIsDeterministicAndPowerLaw)
{
    auto so = synth_options(3, {1000, 500, 100}, 50000, 8, 0.1, 9);
    Coo a, b;
    ASSERT_EQ(tk_tucker_synth(&so, &a.t, nullptr), TK_OK);
    so.num_threads = 1;
    ASSERT_EQ(tk_tucker_synth(&so, &b.t, nullptr), TK_OK);
    ASSERT_EQ(a.t.nnz, b.t.nnz);
    EXPECT_EQ(0, std::memcmp(a.t.idx, b.t.idx, a.t.nnz * 3 * sizeof(uint32_t)));
    EXPECT_EQ(0, std::memcmp(a.t.val, b.t.val, a.t.nnz * sizeof(float)));
    std::vector<size_t> count(1000, 0);
    for (size_t e = 0; e < a.t.nnz; ++e) ++count[a.t.idx[e * 3]];
    size_t top = *std::max_element(count.begin(), count.end());
    EXPECT_GT(top, 8 * a.t.nnz / 1000);  // the most popular index: many times the mean
    so.unique = 1;
    Coo u;
    ASSERT_EQ(tk_tucker_synth(&so, &u.t, nullptr), TK_OK);
    ASSERT_EQ(u.t.nnz, so.nnz);
    for (size_t e = 1; e < u.t.nnz; ++e)
        EXPECT_NE(0, std::memcmp(u.t.idx + (e - 1) * 3, u.t.idx + e * 3, 12)) << e;
}

TEST(Tucker, DensePredictionMatchesTheTuckerOracle)
{
    uint32_t dims[4] = {5, 3, 4, 2};
    Model m;
    ASSERT_EQ(tk_tucker_model_alloc(&m.m, 4, dims, 4, 5), TK_OK);
    tk_tucker_model_init(&m.m, 12, 0);
    std::vector<float> dense(5 * 3 * 4 * 2);
    ASSERT_EQ(tk_tucker_predict_dense(&m.m, dense.data()), TK_OK);
    size_t k = 0;
    for (uint32_t l = 0; l < 2; ++l)
        for (uint32_t z = 0; z < 4; ++z)
            for (uint32_t y = 0; y < 3; ++y)
                for (uint32_t x = 0; x < 5; ++x, ++k) {
                    uint32_t ix[4] = {x, y, z, l};
                    EXPECT_NEAR(dense[k], tucker_value_dense(m.m, ix), 1e-5) << k;
                }
}

TEST(Tucker, RejectsBadShapesAndRanks)
{
    uint32_t dims[3] = {4, 4, 4};
    Model m;
    EXPECT_EQ(tk_tucker_model_alloc(&m.m, 3, dims, 3, 8), TK_ERR_ARGUMENT);
    EXPECT_EQ(tk_tucker_model_alloc(&m.m, 3, dims, 8, 65), TK_ERR_ARGUMENT);
    EXPECT_EQ(tk_tucker_model_alloc(&m.m, 11, dims, 8, 8), TK_ERR_ARGUMENT);
    ASSERT_EQ(tk_tucker_model_alloc(&m.m, 3, dims, 4, 4), TK_OK);
    uint32_t big[4] = {5, 4, 4, 4};
    Coo t;
    ASSERT_EQ(tk_tucker_coo_alloc(&t.t, 3, big, 0), TK_OK);
    tk_tucker_options o;
    tk_tucker_options_init(&o);
    Solver s;
    EXPECT_EQ(tk_tucker_solver_create(&o, &t.t, &m.m, &s.s), TK_ERR_ARGUMENT);
    EXPECT_NE(std::string(tk_last_error()).find("mode 1"), std::string::npos) << tk_last_error();
    t.t.dims[0] = 4;
    o.storage = TK_TUCKER_COO;
    o.backend = TK_BACKEND_OMP;
    EXPECT_EQ(tk_tucker_solver_create(&o, &t.t, &m.m, &s.s), TK_ERR_UNSUPPORTED);
    Coo u;
    ASSERT_EQ(tk_tucker_coo_alloc(&u.t, 3, dims, 1), TK_OK);
    u.t.idx[0] = 0, u.t.idx[1] = 4, u.t.idx[2] = 0, u.t.val[0] = 1;
    EXPECT_EQ(tk_tucker_coo_check(&u.t, "x.tns"), TK_ERR_DATA);
    u.t.idx[1] = 0, u.t.val[0] = NAN;
    EXPECT_EQ(tk_tucker_coo_check(&u.t, "x.tns"), TK_ERR_DATA);
}

TEST(Tucker, SeveralGpusAreCheckedAndNeedTheCudaBackend)
{
    auto so = synth_options(3, {20, 20, 20}, 500, 4, 0.1, 1);
    Coo t;
    Model init;
    ASSERT_NO_FATAL_FAILURE(synth_with_start(so, 4, 4, 3, &t, &init));
    tk_tucker_options o;
    tk_tucker_options_init(&o);
    Solver s;
    o.cuda_device_count = -1;
    EXPECT_EQ(tk_tucker_solver_create(&o, &t.t, &init.m, &s.s), TK_ERR_ARGUMENT);
    o.cuda_device_count = TK_TUCKER_MAX_DEVICES + 1;
    EXPECT_EQ(tk_tucker_solver_create(&o, &t.t, &init.m, &s.s), TK_ERR_ARGUMENT);
    o.cuda_device_count = 2;
    o.backend = TK_BACKEND_OMP;
    EXPECT_EQ(tk_tucker_solver_create(&o, &t.t, &init.m, &s.s), TK_ERR_ARGUMENT);
    EXPECT_NE(std::string(tk_last_error()).find("cuda backend"), std::string::npos) << tk_last_error();
    // One device on cpu/omp is the plain path: 1 and 0 mean the same.
    o.cuda_device_count = 1;
    EXPECT_EQ(tk_tucker_solver_create(&o, &t.t, &init.m, &s.s), TK_OK) << tk_last_error();
    // Without CUDA, without a GPU, with one GPU, or without NCCL, two GPUs are refused with
    // the reason: the build's ("no CUDA backend"), the device check's ("no usable CUDA GPU";
    // "2 CUDA devices from device 0 asked for, but 1 found ...") or NCCL's.
    o.backend = TK_BACKEND_CUDA;
    o.cuda_device_count = 2;
    Solver g;
    tk_status st = tk_tucker_solver_create(&o, &t.t, &init.m, &g.s);
    if (st == TK_OK) GTEST_SKIP() << "SKIPPED: this machine has two GPUs and NCCL (test_tucker_multi_gpu.cpp)";
    const std::string why = tk_last_error();
    const bool too_few = why.find("2 CUDA devices from device 0 asked for, but") != std::string::npos &&
                         why.find(" found") != std::string::npos;
    EXPECT_TRUE(why.find("no CUDA backend") != std::string::npos || why.find("NCCL") != std::string::npos ||
                why.find("no usable CUDA GPU") != std::string::npos || too_few)
        << why;
    double ms = 0, gbps = 0;
    st = tk_nccl_allreduce_measure(2, 1024, 1, &ms, &gbps);
    if (st == TK_ERR_UNSUPPORTED) {
        EXPECT_NE(std::string(tk_last_error()).find("NCCL"), std::string::npos);
    }
}

// ---- .tns files -----------------------------------------------------------------

namespace {

std::string write_text(const std::string &dir, const std::string &name, const std::string &text)
{
    std::string path = dir + "/" + name;
    std::ofstream(path) << text;
    return path;
}

std::string read_error(const std::string &path)
{
    tk_tucker_coo t;
    tk_status s = tk_tns_read(path.c_str(), 0, nullptr, &t);
    EXPECT_NE(s, TK_OK);
    if (s == TK_OK) tk_tucker_coo_free(&t);
    return tk_last_error();
}

}  // namespace

TEST(TuckerTns, ReadsCommentsBlankLinesAndWritesBack)
{
    std::string dir = make_temp_dir("tk_tns");
    std::string p = write_text(dir, "a.tns", "# FROSTT\n1 2 3 1.5\n\n  2 1 1 -2e-1  # trailing\n\t3 3 4 7\n");
    Coo t;
    ASSERT_EQ(tk_tns_read(p.c_str(), 0, nullptr, &t.t), TK_OK) << tk_last_error();
    ASSERT_EQ(t.t.order, 3);
    ASSERT_EQ(t.t.nnz, 3u);
    EXPECT_EQ(t.t.dims[0], 3u);
    EXPECT_EQ(t.t.dims[2], 4u);
    EXPECT_EQ(t.t.idx[3], 1u);
    EXPECT_FLOAT_EQ(t.t.val[1], -0.2f);
    std::string q = dir + "/b.tns";
    ASSERT_EQ(tk_tns_write(q.c_str(), &t.t), TK_OK);
    EXPECT_EQ(slurp(q), "1 2 3 1.5\n2 1 1 -0.200000003\n3 3 4 7\n");
}

TEST(TuckerTns, BadLinesNameTheLine)
{
    std::string dir = make_temp_dir("tk_tns_bad");
    struct BadFile {
        const char *name, *text, *where, *what; /* the message holds where and what ("": anything) */
    } cases[] = {
        {"a.tns", "1 1 1 1\n# c\n1 x 1 2\n", "a.tns:3:", "not an integer"},
        {"b.tns", "1 1 1 1\n1 1 1 abc\n", "b.tns:2:", "not a number"},
        {"c.tns", "1 1 1 1\n\n0 1 1 2\n", "c.tns:3:", "1-based"},
        {"d.tns", "1 1 1 1\n1 -2 1 2\n", "d.tns:2:", "negative"},
        {"e.tns", "1 1 1 1\n1 1 1 1\n1 1 2\n", "e.tns:3:", "3 columns"},
        {"f.tns", "# nothing\n", "", "no entries"},
        {"g.tns", "1 1 1 nan\n", "g.tns:1:", ""},
    };
    for (const auto &c : cases) {
        const std::string e = read_error(write_text(dir, c.name, c.text));
        EXPECT_NE(e.find(c.where), std::string::npos) << e;
        EXPECT_NE(e.find(c.what), std::string::npos) << e;
    }
    std::string e = read_error(dir + "/missing.tns");
    EXPECT_NE(e.find("missing.tns"), std::string::npos) << e;
}

TEST(TuckerTns, BinaryCacheIsUsedOnlyWhileTheTextIsUnchanged)
{
    std::string dir = make_temp_dir("tk_tns_cache");
    std::string p = write_text(dir, "a.tns", "1 2 3 1.5\n2 1 1 2.5\n");
    Coo a, b, c;
    int cached = -1;
    ASSERT_EQ(tk_tns_read_cached(p.c_str(), 0, &a.t, &cached), TK_OK);
    EXPECT_EQ(cached, 0);
    EXPECT_TRUE(exists(p + ".tkc"));
    ASSERT_EQ(tk_tns_read_cached(p.c_str(), 0, &b.t, &cached), TK_OK);
    EXPECT_EQ(cached, 1);
    ASSERT_EQ(b.t.nnz, 2u);
    EXPECT_EQ(0, std::memcmp(a.t.idx, b.t.idx, 6 * sizeof(uint32_t)));
    EXPECT_FLOAT_EQ(b.t.val[1], 2.5f);
    write_text(dir, "a.tns", "1 2 3 1.5\n2 1 1 2.5\n3 3 3 4.5\n");  // new size
    ASSERT_EQ(tk_tns_read_cached(p.c_str(), 0, &c.t, &cached), TK_OK);
    EXPECT_EQ(cached, 0);
    EXPECT_EQ(c.t.nnz, 3u);
    // A corrupt cache is ignored and rebuilt.
    std::ofstream(p + ".tkc", std::ios::trunc) << "garbage";
    Coo d;
    ASSERT_EQ(tk_tns_read_cached(p.c_str(), 0, &d.t, &cached), TK_OK);
    EXPECT_EQ(cached, 0);
    EXPECT_EQ(d.t.nnz, 3u);
}
