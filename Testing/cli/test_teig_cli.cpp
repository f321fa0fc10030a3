// tk-teig end to end: results checked against the eigenpair equation, and every
// bad input ending in a clear message, a non-zero exit and no output file.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <dirent.h>
#include <sstream>
#include <string>
#include <vector>

#include "cli_npy.h"
#include "tk_cli_runner.h"
#include "tk_refusal_test_util.h"
#include "tk_npy.h"
#include "tk_sshopm.h"
#include "tk_test_util.h"

using namespace tk_test;

namespace {

const std::string exe = TK_TEIG_EXE;

struct Dir : TempDir {
    Dir() : TempDir("tk_teig") {}
};

std::vector<std::vector<std::string>> parse_csv(const std::string &text)
{
    std::vector<std::vector<std::string>> rows;
    std::stringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        std::vector<std::string> cells;
        std::stringstream ls(line);
        std::string cell;
        while (std::getline(ls, cell, ',')) cells.push_back(cell);
        rows.push_back(cells);
    }
    return rows;
}

}  // namespace

TEST(TeigCli, PackedAndFullInputsGiveTheSameVerifiedEigenpairs)
{
    Dir dir;
    const int m = 4, n = 3;
    auto packed = random_packed(m, n, 5, 42);
    std::vector<double> full;
    for (size_t t = 0; t < 5; ++t) {
        auto f = unpack(m, n, packed.data() + t * 15);
        full.insert(full.end(), f.begin(), f.end());
    }
    write_npy(dir / "packed.npy", TK_NPY_FLOAT64, {5, 15}, packed.data());
    write_npy(dir / "full.npy", TK_NPY_FLOAT64, {5, 3, 3, 3, 3}, full.data());
    auto a = run_tool(exe + " --order 4 --dim 3 --input " + dir / "packed.npy" + " --output " + dir / "a.csv", dir.path);
    ASSERT_EQ(a.exit_code, 0) << a.err;
    auto b = run_tool(exe + " --order=4 --dim=3 --input=" + dir / "full.npy", dir.path);
    ASSERT_EQ(b.exit_code, 0) << b.err;
    EXPECT_EQ(slurp(dir / "a.csv"), b.out);

    auto rows = parse_csv(b.out);
    ASSERT_GT(rows.size(), 5u);
    EXPECT_EQ(b.out.substr(0, b.out.find('\n')), "tensor,lambda,x0,x1,x2,stability,starts");
    size_t last_tensor = 0;
    double last_lambda = 1e300;
    for (size_t r = 1; r < rows.size(); ++r) {
        ASSERT_EQ(rows[r].size(), 7u);
        size_t t = std::stoul(rows[r][0]);
        double lambda = std::stod(rows[r][1]), x[3] = {std::stod(rows[r][2]), std::stod(rows[r][3]), std::stod(rows[r][4])};
        if (t == last_tensor) {  // sorted by lambda descending
            EXPECT_LE(lambda, last_lambda);
        }
        EXPECT_GE(t, last_tensor);
        last_tensor = t, last_lambda = lambda;
        double y[3];
        tk_sym_axm1_d(m, n, packed.data() + t * 15, x, y);
        for (int i = 0; i < 3; ++i) EXPECT_NEAR(y[i], lambda * x[i], 1e-10);
        EXPECT_EQ(rows[r][5], "max");  // the default adaptive shift finds maxima
        EXPECT_GE(std::stoi(rows[r][6]), 1);
    }
}

TEST(TeigCli, BackendsImplementationsAndPrecisionsAgree)
{
    Dir dir;
    auto packed = random_packed(4, 3, 20, 8);
    std::vector<float> pf(packed.begin(), packed.end());
    write_npy(dir / "t.npy", TK_NPY_FLOAT32, {20, 15}, pf.data());
    auto base = run_tool(exe + " --order 4 --dim 3 --input " + dir / "t.npy" + " --backend cpu --impl general", dir.path);
    ASSERT_EQ(base.exit_code, 0) << base.err;
    auto omp = run_tool(exe + " --order 4 --dim 3 --input " + dir / "t.npy" + " --backend omp --impl general", dir.path);
    EXPECT_EQ(omp.out, base.out);
    auto unrolled = run_tool(exe + " --order 4 --dim 3 --input " + dir / "t.npy" + " --impl unrolled", dir.path);
    auto r0 = parse_csv(base.out), r1 = parse_csv(unrolled.out);
    ASSERT_EQ(r0.size(), r1.size());
    for (size_t r = 1; r < r0.size(); ++r) EXPECT_NEAR(std::stod(r0[r][1]), std::stod(r1[r][1]), 1e-5);
    // Slowly converging maxima need more iterations at double's tighter tolerance.
    auto dbl = run_tool(exe + " --order 4 --dim 3 --input " + dir / "t.npy" + " --precision double --max-iter 5000", dir.path);
    auto r2 = parse_csv(dbl.out);
    ASSERT_EQ(r0.size(), r2.size());
    for (size_t r = 1; r < r0.size(); ++r) EXPECT_NEAR(std::stod(r0[r][1]), std::stod(r2[r][1]), 1e-5);
}

TEST(TeigCli, BadInputsFailClearlyAndLeaveNoOutput)
{
    Dir dir;
    auto packed = random_packed(4, 3, 2, 1);
    write_npy(dir / "good.npy", TK_NPY_FLOAT64, {2, 15}, packed.data());
    write_npy(dir / "shape.npy", TK_NPY_FLOAT64, {2, 14}, packed.data());
    std::vector<int32_t> ints(30, 1);
    write_npy(dir / "ints.npy", TK_NPY_INT32, {2, 15}, ints.data());
    auto nan = packed;
    nan[17] = NAN;
    write_npy(dir / "nan.npy", TK_NPY_FLOAT64, {2, 15}, nan.data());
    auto full = unpack(4, 3, packed.data());
    full[5] += 0.5;
    write_npy(dir / "asym.npy", TK_NPY_FLOAT64, {1, 3, 3, 3, 3}, full.data());
    { std::ofstream(dir / "empty.npy"); }
    std::string good = slurp(dir / "good.npy");
    { std::ofstream(dir / "trunc.npy", std::ios::binary) << good.substr(0, good.size() - 9); }
    std::string in = " --order 4 --dim 3 --input ";
    const std::vector<Refusal> cases = {
        {in + dir / "nope.npy", "nope.npy: cannot open", 1},
        {in + dir.path, "is a directory", 1},
        {in + dir / "empty.npy", "empty file", 1},
        {in + dir / "trunc.npy", "truncated", 1},
        {in + dir / "ints.npy", "int32 is not supported", 1},
        {in + dir / "shape.npy", "shape (2, 14) fits neither packed (T, 15)", 1},
        {in + dir / "nan.npy", "tensor 1 has a non-finite value", 1},
        {in + dir / "asym.npy", "not symmetric: entry (0, 0, 2, 1)", 1},
        {in + dir / "good.npy --frobnicate", "unknown option '--frobnicate'", 2},
        {in + dir / "good.npy --starts 0", "--starts expects an integer from 1", 2},
        {in + dir / "good.npy --shift wobble", "--shift expects a number", 2},
        {in + dir / "good.npy --backend gpu", "--backend expects auto, cpu, omp or cuda", 2},
        {in + dir / "good.npy --seed -5", "--seed expects a non-negative integer", 2},
        {" --dim 3 --input " + dir / "good.npy", "are required", 2},
        {" --order 5 --dim 3 --impl unrolled --input " + dir / "good.npy", "no unrolled kernel for order 5", 2},
        {" --order 5 --dim 3 --impl unrolled --input " + dir / "shape.npy", "no unrolled kernel for order 5", 2},
    };
    for (const auto &c : cases) {
        auto r = expect_refused(exe + c.args + " --output " + dir / "out.csv", c.message, c.code, dir.path);
        EXPECT_NE(r.err.find("tk-teig: error: "), std::string::npos) << r.err;
        EXPECT_FALSE(exists(dir / "out.csv")) << c.args;
    }
    // A flag at the very end with no value.
    auto missing = run_tool(exe + in + dir / "good.npy --max-iter", dir.path);
    EXPECT_EQ(missing.exit_code, 2);
    EXPECT_NE(missing.err.find("--max-iter needs a value"), std::string::npos) << missing.err;
    // Unrolled kernels exist for (4,3), (6,3), (8,3) only.
    auto p5 = random_packed(5, 3, 1, 1);
    write_npy(dir / "five.npy", TK_NPY_FLOAT64, {1, 21}, p5.data());
    auto r = run_tool(exe + " --order 5 --dim 3 --impl unrolled --input " + dir / "five.npy" + " --output " + dir / "out.csv",
                      dir.path);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("--impl unrolled: no unrolled kernel for order 5"), std::string::npos) << r.err;
    EXPECT_FALSE(exists(dir / "out.csv"));
    // An output folder that does not exist.
    r = run_tool(exe + in + dir / "good.npy --output " + dir / "no/such/dir/out.csv", dir.path);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("no/such/dir/out.csv: cannot write: the folder"), std::string::npos) << r.err;
    // Inputs are never changed, temporaries never left behind.
    EXPECT_EQ(slurp(dir / "good.npy"), good);
    size_t files = count_files(dir.path);
    r = run_tool(exe + in + dir / "good.npy --output " + dir / "ok.csv", dir.path);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(count_files(dir.path), files + 1);
}

// --gpus names GPUs: off the GPU it is a usage error naming it, never a silent CPU run.
TEST(TeigCli, GpusOffTheGpuIsAClearError)
{
    Dir dir;
    auto packed = random_packed(4, 3, 4, 8);
    write_npy(dir / "t.npy", TK_NPY_FLOAT64, {4, 15}, packed.data());
    for (const char *backend : {"cpu", "omp"}) {
        auto r = run_tool(exe + " --order 4 --dim 3 --input " + dir / "t.npy" + " --gpus 2 --backend " + backend, dir.path);
        EXPECT_EQ(r.exit_code, 2) << r.err;
        EXPECT_NE(r.err.find(std::string("--gpus 2 applies to the cuda backend, and --backend ") + backend + " was given"),
                  std::string::npos)
            << r.err;
        EXPECT_TRUE(r.out.empty());
    }
    auto range = run_tool(exe + " --order 4 --dim 3 --input " + dir / "t.npy" + " --gpus 65", dir.path);
    EXPECT_EQ(range.exit_code, 2);
    EXPECT_NE(range.err.find("--gpus expects an integer from 0 to 64"), std::string::npos) << range.err;
    // not given: the cpu run is as before
    auto plain = run_tool(exe + " --order 4 --dim 3 --input " + dir / "t.npy" + " --backend cpu", dir.path);
    EXPECT_EQ(plain.exit_code, 0) << plain.err;
}

TEST(TeigCli, HelpAndQuiet)
{
    Dir dir;
    auto r = run_tool(exe + " --help", dir.path);
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_NE(r.out.find("usage: tk-teig"), std::string::npos);
}
