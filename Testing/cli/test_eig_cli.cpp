// tk-eig end to end: outputs checked against the core and the eigenpair equation,
// per-matrix failures reported, and every bad input ending in a clear message, a
// non-zero exit and no output file.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <string>
#include <vector>

#include "eig_test_util.h"
#include "cli_npy.h"
#include "tk_cli_runner.h"
#include "tk_npy.h"
#include "tk_refusal_test_util.h"

using namespace tk_test;
using namespace tk_eig_test;

namespace {

const std::string exe = TK_EIG_EXE;

struct Dir : TempDir {
    Dir() : TempDir("tk_eig") {}
};

struct Npy {
    tk_npy_array a{};
    explicit Npy(const std::string &path) { EXPECT_EQ(tk_npy_read(path.c_str(), &a), TK_OK) << tk_last_error(); }
    ~Npy() { tk_npy_free(&a); }
    std::vector<size_t> shape() const { return std::vector<size_t>(a.shape, a.shape + a.ndim); }
};

}  // namespace

TEST(EigCli, DoubleInputGivesTheCoresValuesAndVerifiedVectors)
{
    Dir dir;
    const int n = 7, count = 40;
    auto in = random_batch(n, count, 11);
    write_npy(dir / "a.npy", TK_NPY_FLOAT64, {(size_t)count, (size_t)n, (size_t)n}, in.data());
    auto r = run_tool(exe + " " + dir / "a.npy" + " " + dir / "w.npy --vectors " + dir / "v.npy --status " +
                          dir / "s.npy --backend cpu",
                      dir.path);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    Npy w(dir / "w.npy"), v(dir / "v.npy"), s(dir / "s.npy");
    EXPECT_EQ(w.a.dtype, TK_NPY_COMPLEX128);
    EXPECT_EQ(w.shape(), (std::vector<size_t>{40, 7}));
    EXPECT_EQ(v.a.dtype, TK_NPY_COMPLEX128);
    EXPECT_EQ(v.shape(), (std::vector<size_t>{40, 7, 7}));
    EXPECT_EQ(s.a.dtype, TK_NPY_INT8);
    EXPECT_EQ(s.shape(), (std::vector<size_t>{40}));

    tk_eig_options o;
    tk_eig_options_init(&o, n);
    Solved<double> core;
    ASSERT_EQ(solve<double>(o, in, core, true), TK_OK);
    ASSERT_EQ(0, std::memcmp(w.a.data, core.values.data(), core.values.size() * sizeof(double)));
    Solved<double> file;
    file.values.assign((double *)w.a.data, (double *)w.a.data + 2 * count * n);
    file.vectors.assign((double *)v.a.data, (double *)v.a.data + 2 * count * n * n);
    for (int b = 0; b < count; ++b) {
        EXPECT_EQ(((int8_t *)s.a.data)[b], 0);
        EXPECT_TRUE(sorted_row(file, b, n));
        EXPECT_LE(residual(in, b, n, file), 8 * n * 2.3e-16);
    }
}

TEST(EigCli, PrecisionsLeadingAxesAndBackends)
{
    Dir dir;
    const int n = 5;
    auto in = random_batch(n, 6, 21);
    std::vector<float> inf(in.begin(), in.end());
    write_npy(dir / "f.npy", TK_NPY_FLOAT32, {2, 3, (size_t)n, (size_t)n}, inf.data());
    write_npy(dir / "d.npy", TK_NPY_FLOAT64, {2, 3, (size_t)n, (size_t)n}, in.data());
    write_npy(dir / "one.npy", TK_NPY_FLOAT64, {(size_t)n, (size_t)n}, in.data());

    auto r = run_tool(exe + " " + dir / "f.npy " + dir / "wf.npy --status " + dir / "sf.npy --quiet", dir.path);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    Npy wf(dir / "wf.npy"), sf(dir / "sf.npy");
    EXPECT_EQ(wf.a.dtype, TK_NPY_COMPLEX64);
    EXPECT_EQ(wf.shape(), (std::vector<size_t>{2, 3, 5}));
    EXPECT_EQ(sf.shape(), (std::vector<size_t>{2, 3}));

    r = run_tool(exe + " " + dir / "d.npy " + dir / "ws.npy --precision single", dir.path);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    Npy ws(dir / "ws.npy");
    EXPECT_EQ(ws.a.dtype, TK_NPY_COMPLEX64);
    // float32 input and float64 input run in single precision: nearly the same values
    for (size_t e = 0; e < wf.a.count * 2; ++e)
        EXPECT_NEAR(((float *)wf.a.data)[e], ((float *)ws.a.data)[e], 1e-4) << e;

    std::string outs[2];
    int i = 0;
    for (const char *backend : {"cpu", "omp"}) {
        r = run_tool(exe + " " + dir / "d.npy " + dir / ("w_" + std::string(backend) + ".npy") + " --backend " + backend,
                     dir.path);
        ASSERT_EQ(r.exit_code, 0) << r.err;
        outs[i++] = slurp(dir / ("w_" + std::string(backend) + ".npy"));
    }
    EXPECT_EQ(outs[0], outs[1]);
    r = run_tool(exe + " " + dir / "d.npy " + dir / "w_cuda.npy --backend cuda", dir.path);
    if (r.exit_code != 0) {
        EXPECT_EQ(r.exit_code, 1);
        EXPECT_TRUE(r.err.find("no usable CUDA GPU") != std::string::npos) << r.err;
        EXPECT_FALSE(exists(dir / "w_cuda.npy"));
    }

    // one matrix, shape (n, n): values of shape (n,)
    r = run_tool(exe + " " + dir / "one.npy " + dir / "w1.npy --no-balance --status " + dir / "s1.npy", dir.path);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    Npy w1(dir / "w1.npy"), s1(dir / "s1.npy");
    EXPECT_EQ(w1.shape(), (std::vector<size_t>{5}));
    EXPECT_EQ(s1.shape(), (std::vector<size_t>{1}));
    Npy wd(dir / "w_cpu.npy");
    for (int k = 0; k < 2 * n; ++k) EXPECT_NEAR(((double *)w1.a.data)[k], ((double *)wd.a.data)[k], 1e-12);
}

TEST(EigCli, NonFiniteMatricesAreMarkedNotFatal)
{
    Dir dir;
    const int n = 4;
    auto in = random_batch(n, 5, 31);
    in[2 * 16 + 5] = NAN;
    in[4 * 16] = INFINITY;
    write_npy(dir / "a.npy", TK_NPY_FLOAT64, {5, 4, 4}, in.data());
    auto r = run_tool(exe + " " + dir / "a.npy " + dir / "w.npy --status " + dir / "s.npy", dir.path);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("2 of 5 matrices hold NaN or Inf (first: matrix 2)"), std::string::npos) << r.err;
    Npy w(dir / "w.npy"), s(dir / "s.npy");
    std::vector<int8_t> st((int8_t *)s.a.data, (int8_t *)s.a.data + 5);
    EXPECT_EQ(st, (std::vector<int8_t>{0, 0, 2, 0, 2}));
    EXPECT_TRUE(std::isnan(((double *)w.a.data)[2 * 2 * n]));
    EXPECT_TRUE(std::isfinite(((double *)w.a.data)[3 * 2 * n]));
    r = run_tool(exe + " " + dir / "a.npy " + dir / "w2.npy --quiet", dir.path);
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_EQ(r.err, "");
}

TEST(EigCli, BadInputsFailClearlyAndLeaveNoOutput)
{
    Dir dir;
    auto in = random_batch(3, 2, 41);
    write_npy(dir / "good.npy", TK_NPY_FLOAT64, {2, 3, 3}, in.data());
    write_npy(dir / "rect.npy", TK_NPY_FLOAT64, {2, 3, 1, 3}, in.data());
    write_npy(dir / "flat.npy", TK_NPY_FLOAT64, {18}, in.data());
    std::vector<int32_t> ints(18, 1);
    write_npy(dir / "ints.npy", TK_NPY_INT32, {2, 3, 3}, ints.data());
    std::vector<double> big(65 * 65, 0.0);
    write_npy(dir / "big.npy", TK_NPY_FLOAT64, {1, 65, 65}, big.data());
    { std::ofstream(dir / "empty.npy"); }
    std::string good = slurp(dir / "good.npy");
    { std::ofstream(dir / "trunc.npy", std::ios::binary) << good.substr(0, good.size() - 9); }
    { std::ofstream(dir / "junk.npy", std::ios::binary) << "this is not a numpy file at all"; }
    const std::string out = " " + dir / "out.npy";
    const std::vector<Refusal> cases = {
        {dir / "nope.npy" + out, "nope.npy: cannot open", 1},
        {dir / "empty.npy" + out, "empty file", 1},
        {dir / "trunc.npy" + out, "truncated", 1},
        {dir / "junk.npy" + out, "junk.npy", 1},
        {dir / "ints.npy" + out, "dtype int32 is not supported", 1},
        {dir / "rect.npy" + out, "shape (2, 3, 1, 3): the matrices are not square", 1},
        {dir / "flat.npy" + out, "shape (18,) is not a stack of matrices", 1},
        {dir / "big.npy" + out, "matrix order 65 is outside the supported 1..64", 1},
        {dir / "good.npy" + out + " --frobnicate", "unknown option '--frobnicate'", 2},
        {dir / "good.npy" + out + " --backend gpu", "--backend expects auto, cpu, omp or cuda", 2},
        {dir / "good.npy" + out + " --precision half", "--precision expects auto, single or double", 2},
        {dir / "good.npy" + out + " --threads -1", "--threads expects an integer from 0", 2},
        {dir / "good.npy" + out + " extra.npy", "unexpected argument 'extra.npy'", 2},
        {dir / "good.npy" + out + " --status " + dir / "out.npy", "two outputs would go to the same file", 2},
        {dir / "good.npy", "INPUT.npy and OUTPUT.npy are required", 2},
    };
    for (const auto &c : cases) {
        auto r = expect_refused(exe + " " + c.args, c.message, c.code, dir.path);
        EXPECT_NE(r.err.find("tk-eig: error: "), std::string::npos) << r.err;
        EXPECT_FALSE(exists(dir / "out.npy")) << c.args;
    }
    auto missing = run_tool(exe + " " + dir / "good.npy" + out + " --vectors", dir.path);
    EXPECT_EQ(missing.exit_code, 2);
    EXPECT_NE(missing.err.find("--vectors needs a value"), std::string::npos) << missing.err;
    auto r = run_tool(exe + " " + dir / "good.npy " + dir / "no/such/dir/out.npy", dir.path);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("no/such/dir/out.npy"), std::string::npos) << r.err;
    // inputs never change, temporaries never stay
    EXPECT_EQ(slurp(dir / "good.npy"), good);
    size_t files = count_files(dir.path);
    r = run_tool(exe + " " + dir / "good.npy " + dir / "ok.npy", dir.path);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(count_files(dir.path), files + 1);
    // an input named as an output is refused before any work, never overwritten
    r = run_tool(exe + " " + dir / "good.npy " + dir / "good.npy", dir.path);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("refusing to overwrite an input"), std::string::npos) << r.err;
    EXPECT_EQ(slurp(dir / "good.npy"), good);
}

// --gpus names GPUs: off the GPU it is a usage error naming it, before any output.
TEST(EigCli, GpusOffTheGpuIsAClearError)
{
    Dir dir;
    auto in = random_batch(3, 5, 4);
    write_npy(dir / "a.npy", TK_NPY_FLOAT64, {5, 3, 3}, in.data());
    auto r = run_tool(exe + " " + dir / "a.npy" + " " + dir / "w.npy --backend omp --gpus 1", dir.path);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("--gpus 1 applies to the cuda backend, and --backend omp was given"), std::string::npos) << r.err;
    EXPECT_FALSE(exists(dir / "w.npy"));
    // --gpus 0, the default, names no GPU: 3D Slicer passes it with every run, on any backend.
    auto slicer = run_tool(exe + " " + dir / "a.npy" + " " + dir / "w.npy --backend omp --gpus 0", dir.path);
    EXPECT_EQ(slicer.exit_code, 0) << slicer.err;
    EXPECT_EQ(slicer.err, "");
}

TEST(EigCli, Help)
{
    Dir dir;
    auto r = run_tool(exe + " --help", dir.path);
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_NE(r.out.find("usage: tk-eig INPUT.npy OUTPUT.npy"), std::string::npos);
    EXPECT_NE(r.out.find("sorted by real part ascending, then imaginary part ascending"), std::string::npos);
}
