// FastTucker's set-up on the GPU (label gpu; skips without a GPU): the B-CSF that
// tucker_bcsf_cuda.cu builds equals tk_tucker_bcsf_build's on the host element by element
// (sub-slices, offsets, the other modes' indices, the values' bits), whole and cut into the
// shares tk_tucker_bcsf_row_split gives several GPUs, on shapes with empty slices, one-entry
// fibers, fibers longer than the threshold, duplicate entries, a mode of size 1, no entry,
// and index keys wider than 64 bits; the solver's devices hold those arrays; and training on
// the GPU-built B-CSF is bit for bit training on the host-built one, which the solver falls
// back to (saying why) where the GPU build does not fit.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "memory_limit.h"
#include "tk_bench_hooks.h"
#include "tk_cuda_memory.h"
#include "tucker_test_util.h"

using namespace tk_test;

namespace {

struct Bcsf {
    tk_tucker_bcsf b{};
    Bcsf() = default;
    Bcsf(const Bcsf &) = delete;
    Bcsf &operator=(const Bcsf &) = delete;
    ~Bcsf() { tk_tucker_bcsf_free(&b); }
};

// Entries with skewed indices (u^skew of the mode's size: popular low indices, so long rows
// and long fibers, repeated tuples, and rarely hit high rows), values uniform in [-1, 1).
void random_coo(const std::vector<uint32_t> &dims, size_t nnz, double skew, uint64_t seed, Coo *out)
{
    const int order = (int)dims.size();
    ASSERT_EQ(tk_tucker_coo_alloc(&out->t, order, dims.data(), nnz), TK_OK);
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    for (size_t e = 0; e < nnz; ++e) {
        for (int n = 0; n < order; ++n) {
            uint32_t i = (uint32_t)(std::pow(u(rng), skew) * dims[(size_t)n]);
            out->t.idx[e * (size_t)order + (size_t)n] = i < dims[(size_t)n] ? i : dims[(size_t)n] - 1;
        }
        out->t.val[e] = (float)(2 * u(rng) - 1);
    }
}

struct Shape {
    std::string name;
    Coo coo;
};

// The shapes of the comparison, each with what it exercises in its name.
using Shapes = std::vector<std::unique_ptr<Shape>>;
void make_shapes(Shapes *shapes)
{
    auto add = [&](const std::string &name, const std::vector<uint32_t> &dims, size_t nnz, double skew) {
        shapes->push_back(std::make_unique<Shape>());
        shapes->back()->name = name;
        random_coo(dims, nnz, skew, 1000 + shapes->size(), &shapes->back()->coo);
    };
    add("order 3, repeated tuples", {70, 50, 40}, 20000, 2.0);
    add("one-entry fibers and rows", {4000, 3000, 2000}, 3000, 1.0);
    add("fibers longer than the thresholds", {3, 2, 5000}, 30000, 1.0);
    add("order 5", {9, 8, 7, 6, 5}, 5000, 1.5);
    add("order 10", {4, 3, 3, 3, 3, 3, 3, 3, 3, 3}, 3000, 1.0);
    add("keys of 84 bits (two sort passes)", {1u << 21, 1u << 21, 1u << 21, 1u << 21}, 5000, 3.0);
    add("Netflix's 46-bit keys", {480189, 17770, 2182}, 200000, 3.0);
    add("a mode of size 1", {1, 50, 40}, 4000, 1.0);
    add("no entry", {5, 4, 3}, 0, 1.0);
    add("one entry", {5, 4, 3}, 1, 1.0);
    add("order 2, keys of exactly 32 bits", {65536, 65536}, 20000, 2.0);
    // Empty slices everywhere: the first shape's mode-1 and mode-2 indices spread out (every
    // other and every third row empty, and trailing empty rows).
    const tk_tucker_coo &src = (*shapes)[0]->coo.t;
    shapes->push_back(std::make_unique<Shape>());
    shapes->back()->name = "empty slices";
    tk_tucker_coo &c = shapes->back()->coo.t;
    const uint32_t dims[3] = {2 * src.dims[0] + 9, 3 * src.dims[1] + 5, src.dims[2]};
    ASSERT_EQ(tk_tucker_coo_alloc(&c, 3, dims, src.nnz), TK_OK);
    for (size_t e = 0; e < src.nnz; ++e) {
        c.idx[3 * e] = 2 * src.idx[3 * e] + 1;
        c.idx[3 * e + 1] = 3 * src.idx[3 * e + 1];
        c.idx[3 * e + 2] = src.idx[3 * e + 2];
        c.val[e] = src.val[e];
    }
}

// The GPU's share [first, last) of host-built b against gpu, element by element (offsets
// rebased to the share's first entry; values compared as bits).
::testing::AssertionResult same_share(const tk_tucker_bcsf &b, size_t first, size_t last, const tk_tucker_bcsf &gpu)
{
    const size_t e0 = b.part_ptr[first], e1 = b.part_ptr[last], levels = (size_t)(b.order - 1);
    if (gpu.order != b.order || gpu.mode != b.mode || gpu.rows != b.rows)
        return ::testing::AssertionFailure() << "order/mode/rows " << gpu.order << "/" << gpu.mode << "/" << gpu.rows
                                             << " instead of " << b.order << "/" << b.mode << "/" << b.rows;
    for (size_t k = 0; k < levels; ++k)
        if (gpu.others[k] != b.others[k]) return ::testing::AssertionFailure() << "others[" << k << "] differs";
    if (gpu.num_parts != last - first || gpu.nnz != e1 - e0)
        return ::testing::AssertionFailure() << gpu.num_parts << " sub-slices and " << gpu.nnz << " entries instead of "
                                             << last - first << " and " << e1 - e0;
    for (size_t p = 0; p < gpu.num_parts; ++p) {
        if (gpu.part_row[p] != b.part_row[first + p] || gpu.part_count[p] != b.part_count[first + p] ||
            gpu.part_ptr[p] != b.part_ptr[first + p] - e0)
            return ::testing::AssertionFailure()
                   << "sub-slice " << p << ": row " << gpu.part_row[p] << " S " << gpu.part_count[p] << " first entry "
                   << gpu.part_ptr[p] << " instead of " << b.part_row[first + p] << ", " << b.part_count[first + p]
                   << ", " << b.part_ptr[first + p] - e0;
    }
    if (gpu.part_ptr[gpu.num_parts] != e1 - e0) return ::testing::AssertionFailure() << "the end offset differs";
    for (size_t e = 0; e < gpu.nnz; ++e) {
        for (size_t k = 0; k < levels; ++k)
            if (gpu.idx[e * levels + k] != b.idx[(e0 + e) * levels + k])
                return ::testing::AssertionFailure() << "entry " << e << " index column " << k << ": "
                                                     << gpu.idx[e * levels + k] << " instead of "
                                                     << b.idx[(e0 + e) * levels + k];
        if (std::memcmp(&gpu.val[e], &b.val[e0 + e], sizeof(float)))
            return ::testing::AssertionFailure() << "entry " << e << " value " << gpu.val[e] << " instead of "
                                                 << b.val[e0 + e];
    }
    return ::testing::AssertionSuccess();
}

// A random start of ranks j, r for t's shape.
void start_for(const tk_tucker_coo &t, int j, int r, Model *m)
{
    ASSERT_EQ(tk_tucker_model_alloc(&m->m, t.order, t.dims, j, r), TK_OK);
    ASSERT_EQ(tk_tucker_model_init(&m->m, 7, 0), TK_OK);
}

}  // namespace

TEST(TuckerSetupCuda, GpuBuiltBcsfEqualsTheHostsWholeAndInEveryShare)
{
    Shapes shapes;
    ASSERT_NO_FATAL_FAILURE(make_shapes(&shapes));
    for (const auto &shape : shapes) {
        const Shape &s = *shape;
        const tk_tucker_coo &t = s.coo.t;
        for (size_t threshold : {(size_t)1, (size_t)7, (size_t)128}) {
            for (int mode = 0; mode < t.order; ++mode) {
                Bcsf host;
                ASSERT_EQ(tk_tucker_bcsf_build(&t, mode, threshold, &host.b), TK_OK) << tk_last_error();
                for (int pieces = 1; pieces <= 4; ++pieces) {
                    size_t first[TK_TUCKER_MAX_DEVICES + 1];
                    ASSERT_EQ(tk_tucker_bcsf_row_split(&host.b, pieces, first), TK_OK);
                    for (int piece = 0; piece < pieces; ++piece) {
                        Bcsf gpu;
                        tk_status st = tk_tucker_bcsf_build_cuda(&t, mode, threshold, pieces, piece, 0, &gpu.b);
                        TK_SKIP_IF_NO_GPU(st);
                        ASSERT_EQ(st, TK_OK) << tk_last_error();
                        EXPECT_TRUE(same_share(host.b, first[piece], first[piece + 1], gpu.b))
                            << s.name << ", threshold " << threshold << ", mode " << mode + 1 << ", share "
                            << piece + 1 << " of " << pieces;
                        if (HasFailure()) return;
                    }
                }
            }
        }
    }
    EXPECT_EQ(tk_cuda_memory_in_use(), 0u);
}

TEST(TuckerSetupCuda, AnIndexBeyondItsModeIsRefusedNamingTheMode)
{
    Coo c;
    ASSERT_NO_FATAL_FAILURE(random_coo({10, 10, 10}, 100, 1.0, 5, &c));
    c.t.idx[3 * 42 + 2] = 12;
    Bcsf gpu;
    tk_status st = tk_tucker_bcsf_build_cuda(&c.t, 0, 128, 1, 0, 0, &gpu.b);
    TK_SKIP_IF_NO_GPU(st);
    EXPECT_EQ(st, TK_ERR_DATA);
    EXPECT_NE(std::string(tk_last_error()).find("mode 3"), std::string::npos) << tk_last_error();
    EXPECT_EQ(tk_cuda_memory_in_use(), 0u);
}

TEST(TuckerSetupCuda, TheSolversGpuHoldsTheHostLayout)
{
    Shapes shapes;
    ASSERT_NO_FATAL_FAILURE(make_shapes(&shapes));
    for (const auto &shape : shapes) {
        const Shape &s = *shape;
        const tk_tucker_coo &t = s.coo.t;
        if (t.order < 3 || t.dims[0] > 100000) continue; /* the solver's orders; a model of modest size */
        Model init;
        ASSERT_NO_FATAL_FAILURE(start_for(t, 4, 4, &init));
        auto o = cuda_opts(1, 7);
        Solver solver;
        tk_status st = tk_tucker_solver_create(&o, &t, &init.m, &solver.s);
        TK_SKIP_IF_NO_GPU(st);
        ASSERT_EQ(st, TK_OK) << s.name << ": " << tk_last_error();
        tk_tucker_setup_info info;
        ASSERT_EQ(tk_tucker_solver_setup_info(solver.s, &info), TK_OK);
        EXPECT_EQ(info.gpu_built, 1) << s.name << ": " << info.note;
        EXPECT_GT(info.peak_device_bytes, 0u) << s.name;
        for (int mode = 0; mode < t.order; ++mode) {
            Bcsf host, gpu;
            ASSERT_EQ(tk_tucker_bcsf_build(&t, mode, 7, &host.b), TK_OK);
            ASSERT_EQ(tk_tucker_solver_device_bcsf(solver.s, 0, mode, &gpu.b), TK_OK) << tk_last_error();
            EXPECT_TRUE(same_share(host.b, 0, host.b.num_parts, gpu.b)) << s.name << ", mode " << mode + 1;
        }
    }
    EXPECT_EQ(tk_cuda_memory_in_use(), 0u);
}

TEST(TuckerSetupCuda, TrainingOnTheGpuBuildIsTheHostBuildsBitForBit)
{
    // 300 x 200 x 100, 100,000 entries, J = R = 8: about 3.5 MiB resident, about 7 MiB while
    // the GPU builds the B-CSF.  Under a 5 MiB limit the solver builds it on the host and says
    // so.  With one sub-slice a row and one block of the A^T Z product no float sum depends on
    // timing, so the two runs must give the same bits; with split rows (threshold 16) the
    // atomic sums leave them equal to rounding.
    auto so = synth_options(3, {300, 200, 100}, 100000, 8, 0.1, 21);
    Coo t;
    Model init;
    ASSERT_NO_FATAL_FAILURE(synth_with_start(so, 8, 8, 4, &t, &init));
    for (size_t threshold : {(size_t)1 << 20, (size_t)16}) {
        auto o = cuda_opts(1, threshold);
        Model on_gpu, on_host;
        tk_tucker_setup_info gpu_info, host_info;
        {
            Solver s;
            tk_status st = tk_tucker_solver_create(&o, &t.t, &init.m, &s.s);
            TK_SKIP_IF_NO_GPU(st);
            ASSERT_EQ(st, TK_OK) << tk_last_error();
            tk_tucker_solver_destroy(s.s);
            s.s = nullptr;
            ASSERT_NO_FATAL_FAILURE(train_in(o, t.t, init.m, 3, &s, &on_gpu.m));
            ASSERT_EQ(tk_tucker_solver_setup_info(s.s, &gpu_info), TK_OK);
        }
        {
            MemoryLimit limit("5");
            Solver s;
            ASSERT_NO_FATAL_FAILURE(train_in(o, t.t, init.m, 3, &s, &on_host.m));
            ASSERT_EQ(tk_tucker_solver_setup_info(s.s, &host_info), TK_OK);
        }
        EXPECT_EQ(gpu_info.gpu_built, 1) << gpu_info.note;
        EXPECT_STREQ(gpu_info.note, "");
        EXPECT_EQ(host_info.gpu_built, 0);
        EXPECT_NE(std::string(host_info.note).find("built on the host"), std::string::npos) << host_info.note;
        EXPECT_NE(std::string(host_info.note).find("GPU memory"), std::string::npos) << host_info.note;
        if (threshold > 100000)
            EXPECT_TRUE(models_identical(on_gpu.m, on_host.m)) << "max difference " << max_abs_diff(on_gpu.m, on_host.m);
        else
            expect_same_to_rounding(on_gpu.m, on_host.m, t.t, "threshold 16");
    }
    EXPECT_EQ(tk_cuda_memory_in_use(), 0u);
}

TEST(TuckerSetupCuda, EveryGpuHoldsItsRowSplitShare)
{
    const int gpus = usable_gpus();
    if (gpus < 1) GTEST_SKIP() << "SKIPPED: no usable GPU here";
    if (gpus < 2 || tk_tucker_max_devices() < 2)
        GTEST_SKIP() << "SKIPPED: needs 2 GPUs and NCCL; this machine has " << gpus << " GPUs, this build drives "
                     << tk_tucker_max_devices();
    const int devices = gpus < 4 ? gpus : 4;
    Shapes shapes;
    ASSERT_NO_FATAL_FAILURE(make_shapes(&shapes));
    for (size_t k : {(size_t)0, (size_t)2, shapes.size() - 1}) {
        const tk_tucker_coo &t = shapes[k]->coo.t;
        Model init;
        ASSERT_NO_FATAL_FAILURE(start_for(t, 4, 4, &init));
        auto o = cuda_opts(devices, 7);
        Solver solver;
        ASSERT_EQ(tk_tucker_solver_create(&o, &t, &init.m, &solver.s), TK_OK) << tk_last_error();
        tk_tucker_setup_info info;
        ASSERT_EQ(tk_tucker_solver_setup_info(solver.s, &info), TK_OK);
        EXPECT_EQ(info.gpu_built, 1) << info.note;
        for (int mode = 0; mode < t.order; ++mode) {
            Bcsf host;
            ASSERT_EQ(tk_tucker_bcsf_build(&t, mode, 7, &host.b), TK_OK);
            size_t first[TK_TUCKER_MAX_DEVICES + 1];
            ASSERT_EQ(tk_tucker_bcsf_row_split(&host.b, devices, first), TK_OK);
            for (int p = 0; p < devices; ++p) {
                Bcsf gpu;
                ASSERT_EQ(tk_tucker_solver_device_bcsf(solver.s, p, mode, &gpu.b), TK_OK) << tk_last_error();
                EXPECT_TRUE(same_share(host.b, first[p], first[p + 1], gpu.b))
                    << shapes[k]->name << ", mode " << mode + 1 << ", GPU " << p;
            }
        }
    }
    EXPECT_EQ(tk_cuda_memory_in_use(), 0u);
}
