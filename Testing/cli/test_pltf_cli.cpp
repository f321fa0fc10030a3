// tk-pltf end to end: factors and reconstruction checked against a brute-force
// einsum, masks honoured, and every bad input ending in a clear message, a
// non-zero exit and no output file.
#include <gtest/gtest.h>

#include <cmath>
#include <dirent.h>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "pltf_test_util.h"
#include "cli_npy.h"
#include "tk_cli_runner.h"
#include "tk_refusal_test_util.h"
#include "tk_npy.h"
#include "tk_pltf.h"

using namespace tk_test;

namespace {

const std::string exe = TK_PLTF_EXE;

struct Dir : TempDir {
    Dir() : TempDir("tk_pltf") {}
};

std::vector<double> read_doubles(const std::string &path, std::vector<size_t> *shape = nullptr,
                                 tk_npy_dtype *dtype = nullptr)
{
    tk_npy_array a;
    EXPECT_EQ(tk_npy_read(path.c_str(), &a), TK_OK) << tk_last_error();
    std::vector<double> v(a.count);
    for (size_t i = 0; i < a.count; ++i)
        v[i] = a.dtype == TK_NPY_FLOAT64 ? ((double *)a.data)[i] : ((float *)a.data)[i];
    if (shape) shape->assign(a.shape, a.shape + a.ndim);
    if (dtype) *dtype = a.dtype;
    tk_npy_free(&a);
    return v;
}

// "iteration divergence" lines after the header.
std::vector<std::pair<int, double>> trace(const std::string &out)
{
    std::vector<std::pair<int, double>> t;
    std::stringstream in(out);
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        std::stringstream ls(line);
        int it;
        double d;
        ls >> it >> d;
        t.push_back({it, d});
    }
    return t;
}

}  // namespace

TEST(PltfCli, ParafacWritesFactorsAndReconstruction)
{
    Dir dir;
    tk_pltf_model m = pltf_model("parafac", "i=6,j=5,k=4,a=2");
    auto x = brute_force_einsum(m, random_factors(m, 3));
    write_npy(dir / "x.npy", TK_NPY_FLOAT64, {6, 5, 4}, x.data());
    auto r = run_tool(exe + " --model ijk=ia,ja,ka --input " + dir / "x.npy" + " --dims a=2 --iters 40 --out " +
                          dir / "out",
                      dir.path);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto t = trace(r.out);
    ASSERT_EQ(t.size(), 41u) << r.out;
    for (size_t i = 1; i < t.size(); ++i) {
        EXPECT_EQ(t[i].first, (int)i);
        EXPECT_LE(t[i].second, t[i - 1].second * (1 + 1e-9));
    }
    EXPECT_LT(t.back().second, 0.1 * t.front().second);
    std::vector<std::vector<double>> f;
    for (const char *name : {"ia", "ja", "ka"}) {
        std::vector<size_t> shape;
        tk_npy_dtype dt;
        f.push_back(read_doubles(dir / "out/" + name + ".npy", &shape, &dt));
        EXPECT_EQ(dt, TK_NPY_FLOAT64);
        ASSERT_EQ(shape.size(), 2u);
        EXPECT_EQ(shape[1], 2u);
        for (double v : f.back()) EXPECT_GE(v, 0.0);
    }
    EXPECT_EQ(count_files(dir / "out"), 4u);  // three factors and xhat, no temporaries
    std::vector<size_t> xs;
    auto xhat = read_doubles(dir / "out/xhat.npy", &xs);
    EXPECT_EQ(xs, (std::vector<size_t>{6, 5, 4}));
    auto want = brute_force_einsum(m, f);
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(xhat[i], want[i], 1e-12 * (1 + want[i]));
    // --print-every and the final iteration; --quiet leaves stderr empty.
    r = run_tool(exe + " --model parafac --input " + dir / "x.npy" + " --dims a=2 --iters 25 --print-every 10 --quiet --out " +
                     dir / "out2",
                 dir.path);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    t = trace(r.out);
    ASSERT_EQ(t.size(), 4u) << r.out;
    EXPECT_EQ(t[1].first, 10);
    EXPECT_EQ(t[3].first, 25);
    EXPECT_EQ(r.err, "");
}

TEST(PltfCli, TuckerFloat32AndEveryDivergence)
{
    Dir dir;
    tk_pltf_model m = pltf_model("tucker3", "i=5,j=4,k=3,p=2,q=2,r=2");
    auto x = brute_force_einsum(m, random_factors(m, 5));
    std::vector<float> xf(x.begin(), x.end());
    write_npy(dir / "x.npy", TK_NPY_FLOAT32, {5, 4, 3}, xf.data());
    for (const char *d : {"kl", "euclidean", "is"}) {
        std::string out = dir / (std::string("out_") + d);
        auto r = run_tool(exe + " --model tucker3 --input " + dir / "x.npy" + " --dims p=2,q=2,r=2 --iters 10 --divergence " +
                              d + " --backend omp --seed 7 --out " + out,
                          dir.path);
        ASSERT_EQ(r.exit_code, 0) << r.err;
        EXPECT_NE(r.out.find(std::string("# iteration ") + d + "-divergence"), std::string::npos) << r.out;
        for (const char *name : {"ip", "jq", "kr", "pqr", "xhat"}) {
            tk_npy_dtype dt;
            std::vector<size_t> shape;
            read_doubles(out + "/" + name + ".npy", &shape, &dt);
            EXPECT_EQ(dt, TK_NPY_FLOAT32) << name;
        }
        std::vector<size_t> shape;
        read_doubles(out + "/pqr.npy", &shape);
        EXPECT_EQ(shape, (std::vector<size_t>{2, 2, 2}));
    }
}

TEST(PltfCli, MaskedEntriesAreNeverRead)
{
    Dir dir;
    tk_pltf_model m = pltf_model("parafac", "i=5,j=4,k=6,a=2");
    auto x = brute_force_einsum(m, random_factors(m, 9));
    std::vector<uint8_t> mask(x.size(), 1);
    for (size_t i = 0; i < mask.size(); i += 3) mask[i] = 0;
    auto y = x;
    for (size_t i = 0; i < y.size(); i += 3) y[i] = i % 2 ? NAN : -5.0;  // unobserved: anything goes
    write_npy(dir / "x.npy", TK_NPY_FLOAT64, {5, 4, 6}, x.data());
    write_npy(dir / "y.npy", TK_NPY_FLOAT64, {5, 4, 6}, y.data());
    write_npy(dir / "m.npy", TK_NPY_UINT8, {5, 4, 6}, mask.data());
    std::vector<double> md(mask.begin(), mask.end());
    write_npy(dir / "md.npy", TK_NPY_FLOAT64, {5, 4, 6}, md.data());
    std::string common = " --model parafac --dims a=2 --iters 15 --quiet";
    auto a = run_tool(exe + common + " --input " + dir / "x.npy" + " --mask " + dir / "m.npy" + " --out " + dir / "a", dir.path);
    auto b = run_tool(exe + common + " --input " + dir / "y.npy" + " --mask " + dir / "md.npy" + " --out " + dir / "b",
                      dir.path);
    ASSERT_EQ(a.exit_code, 0) << a.err;
    ASSERT_EQ(b.exit_code, 0) << b.err;
    EXPECT_EQ(a.out, b.out);
    for (const char *name : {"ia", "ja", "ka"})
        EXPECT_EQ(slurp(dir / "a/" + name + ".npy"), slurp(dir / "b/" + name + ".npy")) << name;
}

TEST(PltfCli, BadInputsFailClearlyAndLeaveNoOutput)
{
    Dir dir;
    std::vector<double> x(60, 1.0);
    write_npy(dir / "good.npy", TK_NPY_FLOAT64, {3, 4, 5}, x.data());
    auto neg = x;
    neg[1 * 20 + 2 * 5 + 3] = -2;
    write_npy(dir / "neg.npy", TK_NPY_FLOAT64, {3, 4, 5}, neg.data());
    auto zero = x;
    zero[7] = 0;
    write_npy(dir / "zero.npy", TK_NPY_FLOAT64, {3, 4, 5}, zero.data());
    auto nan = x;
    nan[0] = NAN;
    write_npy(dir / "nan.npy", TK_NPY_FLOAT64, {3, 4, 5}, nan.data());
    write_npy(dir / "flat.npy", TK_NPY_FLOAT64, {60}, x.data());
    write_npy(dir / "mask_shape.npy", TK_NPY_FLOAT64, {3, 5, 4}, x.data());
    std::vector<int32_t> ints(60, 1);
    write_npy(dir / "ints.npy", TK_NPY_INT32, {3, 4, 5}, ints.data());
    std::vector<uint8_t> none(60, 0);
    write_npy(dir / "none.npy", TK_NPY_UINT8, {3, 4, 5}, none.data());
    { std::ofstream(dir / "afile") << "x"; }
    std::string in = " --input " + dir / "good.npy", base = " --model parafac --dims a=2";
    const std::vector<Refusal> cases = {
        {base + " --input " + dir / "neg.npy", "entry (1, 2, 3) = -2 is negative: the KL divergence needs X >= 0", 1},
        {base + " --divergence is --input " + dir / "zero.npy", "entry (0, 1, 2) = 0 is zero: the Itakura-Saito", 1},
        {base + " --divergence euclidean --input " + dir / "nan.npy", "entry (0, 0, 0) = nan is not finite", 1},
        {base + " --input " + dir / "flat.npy", "shape (60) has 1 axes, but model \"ijk=ia,ja,ka\" observes 3", 1},
        {base + in + " --mask " + dir / "mask_shape.npy", "shape (3, 5, 4) differs from the input's (3, 4, 5)", 1},
        {base + in + " --mask " + dir / "none.npy", "the mask leaves no observed entry", 1},
        {base + " --input " + dir / "ints.npy", "dtype int32 is not supported", 1},
        {base + " --input " + dir / "nope.npy", "nope.npy: cannot open", 1},
        {" --model parafac" + in, "no size given for index 'a'", 2},
        {" --model ijk=ia,j2,ka --dims a=2" + in, "--model: model \"ijk=ia,j2,ka\": not an index letter, '=' or ',' at position 9 ('2')", 2},
        {base + in + " --dims z=3", "has no index 'z'", 2},
        {" --model parafac --dims a=2,i=7" + in, "sets observed index 'i' to 7, but", 2},
        {base + in + " --divergence hellinger", "--divergence expects kl, euclidean or is", 2},
        {base + in + " --backend gpu", "--backend expects auto, cpu, omp or cuda", 2},
        {base + in + " --iters -1", "--iters expects an integer from 0", 2},
        {base + in + " --frobnicate", "unknown option '--frobnicate'", 2},
        {" --dims a=2" + in, "are required", 2},
    };
    for (const auto &c : cases) {
        auto r = expect_refused(exe + c.args + " --out " + dir / "out", c.message, c.code, dir.path);
        EXPECT_NE(r.err.find("tk-pltf: error: "), std::string::npos) << r.err;
        EXPECT_FALSE(exists(dir / "out")) << c.args;
    }
    auto r = run_tool(exe + base + in + " --out " + dir / "afile", dir.path);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("exists and is not a directory"), std::string::npos) << r.err;
    if (!tk_has_cuda()) {
        r = run_tool(exe + base + in + " --backend cuda --out " + dir / "out", dir.path);
        EXPECT_EQ(r.exit_code, 1);
        EXPECT_NE(r.err.find("no CUDA backend"), std::string::npos) << r.err;
        EXPECT_FALSE(exists(dir / "out"));
    }
    // Inputs are never changed.
    std::vector<size_t> shape;
    EXPECT_EQ(read_doubles(dir / "neg.npy", &shape), neg);
}

TEST(PltfCli, Help)
{
    Dir dir;
    auto r = run_tool(exe + " --help", dir.path);
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_NE(r.out.find("usage: tk-pltf"), std::string::npos);
}
