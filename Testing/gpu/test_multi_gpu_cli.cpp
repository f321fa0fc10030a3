// The tools' --gpus on a GPU machine (label gpu): every visible GPU (--gpus 0) writes the
// very bytes one GPU (--gpus 1) writes, and more GPUs than are visible is a usage error
// naming --gpus and the count found.  Without a usable GPU: skipped.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "cli_npy.h"
#include "eig_test_util.h"
#include "tk_cli_runner.h"
#include "tk_device.h"
#include "tk_sshopm.h"
#include "tk_test_util.h"

using namespace tk_test;

namespace {

struct Dir : TempDir {
    Dir() : TempDir("tk_multi_gpu_cli") {}
};

// Skips where `--backend cuda` found no usable GPU (the message the tools give then).
#define TK_SKIP_IF_TOOL_HAS_NO_GPU(result)                                                                     \
    do {                                                                                                        \
        if ((result).exit_code == 1 && (result).err.find("no usable CUDA GPU") != std::string::npos)            \
            GTEST_SKIP() << "SKIPPED: no usable GPU here: " << (result).err;                                    \
    } while (0)

}  // namespace

TEST(MultiGpuCli, TeigOnEveryGpuWritesOneGpusCsv)
{
    Dir dir;
    const auto packed = random_packed(4, 3, 3001, 31);
    write_npy(dir / "t.npy", TK_NPY_FLOAT64, {3001, 15}, packed.data());
    const std::string cmd = std::string(TK_TEIG_EXE) + " --order 4 --dim 3 --input " + dir / "t.npy" +
                            " --backend cuda --starts 32 -q --gpus ";
    auto one = run_tool(cmd + "1", dir.path);
    TK_SKIP_IF_TOOL_HAS_NO_GPU(one);
    ASSERT_EQ(one.exit_code, 0) << one.err;
    auto all = run_tool(cmd + "0", dir.path);
    ASSERT_EQ(all.exit_code, 0) << all.err;
    EXPECT_EQ(all.out, one.out);
    EXPECT_GT(one.out.size(), 3001u * 20);
}

TEST(MultiGpuCli, EigOnEveryGpuWritesOneGpusFiles)
{
    Dir dir;
    const auto in = tk_eig_test::random_batch(6, 40001, 5);
    write_npy(dir / "a.npy", TK_NPY_FLOAT64, {40001, 6, 6}, in.data());
    std::string files[2];
    for (int g = 0; g < 2; ++g) {
        const std::string tag = std::to_string(g);
        auto r = run_tool(std::string(TK_EIG_EXE) + " " + dir / "a.npy" + " " + dir / ("w" + tag + ".npy") +
                              " --vectors " + dir / ("v" + tag + ".npy") + " --backend cuda -q --gpus " + (g ? "0" : "1"),
                          dir.path);
        TK_SKIP_IF_TOOL_HAS_NO_GPU(r);
        ASSERT_EQ(r.exit_code, 0) << r.err;
        files[g] = slurp(dir / ("w" + tag + ".npy")) + slurp(dir / ("v" + tag + ".npy"));
    }
    EXPECT_EQ(files[0], files[1]);
}

TEST(MultiGpuCli, MoreGpusThanVisibleIsAUsageError)
{
    Dir dir;
    const auto in = tk_eig_test::random_batch(3, 10, 5);
    write_npy(dir / "a.npy", TK_NPY_FLOAT64, {10, 3, 3}, in.data());
    const int visible = tk_cuda_device_count();
    auto r = run_tool(std::string(TK_EIG_EXE) + " " + dir / "a.npy" + " " + dir / "w.npy --backend cuda --gpus " +
                          std::to_string(visible + 1),
                      dir.path);
    TK_SKIP_IF_TOOL_HAS_NO_GPU(r);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("--gpus " + std::to_string(visible + 1) + ": " + std::to_string(visible) + " CUDA device"),
              std::string::npos)
        << r.err;
    EXPECT_FALSE(exists(dir / "w.npy"));
}

namespace {

// The test RMSE of the last iteration tk-tucker train printed (its 6th column).
double last_test_rmse(const std::string &out)
{
    std::istringstream lines(out);
    std::string line;
    double rmse = 0;
    while (std::getline(lines, line)) {
        std::istringstream fields(line);
        double v[6];
        bool numbers = true;
        for (double &x : v) numbers = numbers && static_cast<bool>(fields >> x);
        if (numbers) rmse = v[5];  // the header line is no row of numbers
    }
    return rmse;
}

}  // namespace

TEST(MultiGpuCli, TuckerTrainsOneModelOnEveryGpuAndResumesOnOne)
{
    Dir dir;
    auto synth = run_tool(std::string(TK_TUCKER_EXE) + " synth --shape 3000,800,60 --nnz 300000 --rank-j 8 --rank-r 8 "
                                                       "--noise 0.1 --seed 4 -q " + dir / "s.tns",
                          dir.path);
    ASSERT_EQ(synth.exit_code, 0) << synth.err;
    const std::string train = std::string(TK_TUCKER_EXE) + " train " + dir / "s.tns" +
                              " --test-fraction 0.05 --rank-j 8 --rank-r 8 --seed 2 --backend cuda --quiet";
    auto one = run_tool(train + " --iters 8 --gpus 1 --out " + dir / "m1", dir.path);
    TK_SKIP_IF_TOOL_HAS_NO_GPU(one);
    ASSERT_EQ(one.exit_code, 0) << one.err;
    auto all = run_tool(train + " --iters 8 --gpus 0 --out " + dir / "mall", dir.path);
    ASSERT_EQ(all.exit_code, 0) << all.err;
    // The same SGD to float rounding (Documentation/scaling.md): the test RMSE to 1%.
    const double r1 = last_test_rmse(one.out), rall = last_test_rmse(all.out);
    EXPECT_GT(r1, 0);
    EXPECT_NEAR(rall, r1, 0.01 * r1) << one.out << all.out;
    // A checkpoint of every GPU goes on on one (the model is the same on each GPU).
    auto half = run_tool(train + " --iters 4 --gpus 0 --out " + dir / "mres", dir.path);
    ASSERT_EQ(half.exit_code, 0) << half.err;
    auto rest = run_tool(train + " --iters 8 --gpus 1 --resume --out " + dir / "mres", dir.path);
    ASSERT_EQ(rest.exit_code, 0) << rest.err;
    EXPECT_NEAR(last_test_rmse(rest.out), r1, 0.01 * r1) << rest.out;
}
