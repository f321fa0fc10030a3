// PLTF on the CUDA backend against the brute-force einsum and the CPU backend
// (label gpu; skips without a GPU or a CUDA build).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "pltf_test_util.h"
#include "tk_pltf.h"
#include "gpu_skip.h"

using namespace tk_test;

namespace {

tk_pltf_options opts(tk_pltf_divergence d, int iterations, tk_backend b)
{
    tk_pltf_options o;
    tk_pltf_options_init(&o);
    o.divergence = d;
    o.iterations = iterations;
    o.backend = b;
    o.seed = 9;
    return o;
}

// The relative noise of model_data's data in these tests.
constexpr double kNoise = 0.3;

// CUDA (float) against CPU (double) from the same start: traces and factors agree.
void expect_backends_agree(const tk_pltf_model &m, tk_pltf_divergence d, const std::vector<double> &x,
                           const std::vector<uint8_t> *mask, int iterations, double tol)
{
    auto cpu = pltf_fit(m, opts(d, iterations, TK_BACKEND_CPU), x, mask);
    ASSERT_EQ(cpu.status, TK_OK) << tk_last_error();
    auto gpu = pltf_fit(m, opts(d, iterations, TK_BACKEND_CUDA), x, mask);
    TK_SKIP_IF_NO_GPU(gpu.status);
    ASSERT_EQ(gpu.status, TK_OK) << tk_last_error();
    for (size_t t = 0; t < cpu.divergence.size(); ++t)
        ASSERT_NEAR(gpu.divergence[t], cpu.divergence[t], tol * (1 + cpu.divergence[t])) << m.text << " iteration " << t;
    for (int f = 0; f < m.num_factors; ++f)
        for (size_t i = 0; i < cpu.factors[f].size(); ++i)
            ASSERT_NEAR(gpu.factors[f][i], cpu.factors[f][i], 10 * tol * (1 + std::fabs(cpu.factors[f][i])))
                << m.text << " factor " << f << " entry " << i;
    for (size_t i = 0; i < cpu.xhat.size(); ++i) ASSERT_NEAR(gpu.xhat[i], cpu.xhat[i], 10 * tol * (1 + cpu.xhat[i]));
}

}  // namespace

TEST(PltfCuda, GtmEqualsBruteForceEinsum)
{
    const ModelCase cases[] = {
        {"ijk=ia,ja,ka", "i=5,j=6,k=7,a=3"},
        {"ijk=ip,jq,kr,pqr", "i=4,j=5,k=3,p=2,q=3,r=2"},
        {"ki=ij,jk", "i=33,j=17,k=9"},
        {"i=ijk", "i=3,j=2,k=4"},
        {"ij=iab,bj,ac", "i=2,j=3,a=2,b=3,c=2"},
    };
    for (const auto &c : cases) {
        tk_status s = TK_OK;
        expect_gtm_equals_einsum(c, TK_BACKEND_CUDA, 3, 1e-5, &s);
        TK_SKIP_IF_NO_GPU(s);
        ASSERT_EQ(s, TK_OK) << tk_last_error();
        if (HasFatalFailure()) return;
    }
}

TEST(PltfCuda, FusedKlParafacMatchesCpu)
{
    // Ranks below, at and between the fused kernel's register widths; |k| not a
    // multiple of the warp; enough fibers that blocks split rows.
    const char *dims[] = {"i=6,j=5,k=10,a=3", "i=40,j=37,k=50,a=16", "i=30,j=20,k=33,a=20", "i=9,j=70,k=64,a=32",
                          "i=8,j=9,k=7,a=64"};
    for (const char *dm : dims) {
        tk_pltf_model m = pltf_model("parafac", dm);
        auto x = model_data(m, 4, kNoise);
        expect_backends_agree(m, TK_PLTF_KL, x, nullptr, 15, 2e-4);
        if (HasFatalFailure() || IsSkipped()) return;
        std::vector<uint8_t> mask(x.size(), 1);
        for (size_t i = 0; i < mask.size(); i += 5) mask[i] = 0;
        expect_backends_agree(m, TK_PLTF_KL, x, &mask, 15, 2e-4);
        if (HasFatalFailure()) return;
    }
    // The factor order and letters of the model do not matter to the fused path.
    tk_pltf_model m = pltf_model("xyz=zr,xr,yr", "x=7,y=9,z=11,r=4");
    expect_backends_agree(m, TK_PLTF_KL, model_data(m, 6, kNoise), nullptr, 15, 2e-4);
}

TEST(PltfCuda, GenericPathMatchesCpuForEveryDivergence)
{
    tk_pltf_model t = pltf_model("tucker3", "i=7,j=6,k=5,p=2,q=3,r=2");
    auto x = model_data(t, 8, kNoise);
    std::vector<uint8_t> mask(x.size(), 1);
    for (size_t i = 0; i < mask.size(); i += 4) mask[i] = 0;
    for (auto d : {TK_PLTF_KL, TK_PLTF_EUCLIDEAN, TK_PLTF_IS}) {
        expect_backends_agree(t, d, x, nullptr, 15, 2e-4);
        if (HasFatalFailure() || IsSkipped()) return;
        expect_backends_agree(t, d, x, &mask, 15, 2e-4);
        if (HasFatalFailure()) return;
    }
    tk_pltf_model p = pltf_model("parafac", "i=6,j=5,k=4,a=3");
    auto y = model_data(p, 2, kNoise);
    expect_backends_agree(p, TK_PLTF_IS, y, nullptr, 15, 2e-4);
}

TEST(PltfCuda, NaiveGtmFactorizationMatchesCpu)
{
    tk_pltf_model m = pltf_model("parafac", "i=5,j=6,k=7,a=3");
    auto x = model_data(m, 1, kNoise);
    auto o = opts(TK_PLTF_KL, 10, TK_BACKEND_CUDA);
    o.naive_gtm = 1;
    auto gpu = pltf_fit(m, o, x);
    TK_SKIP_IF_NO_GPU(gpu.status);
    ASSERT_EQ(gpu.status, TK_OK) << tk_last_error();
    auto cpu = pltf_fit(m, opts(TK_PLTF_KL, 10, TK_BACKEND_CPU), x);
    for (size_t t = 0; t < cpu.divergence.size(); ++t)
        EXPECT_NEAR(gpu.divergence[t], cpu.divergence[t], 2e-4 * (1 + cpu.divergence[t]));
}

TEST(PltfCuda, DivergenceDecreasesAndBadDeviceIsAnError)
{
    tk_pltf_model m = pltf_model("parafac", "i=20,j=30,k=40,a=8");
    auto x = model_data(m, 3, kNoise);
    auto fit = pltf_fit(m, opts(TK_PLTF_KL, 40, TK_BACKEND_CUDA), x);
    TK_SKIP_IF_NO_GPU(fit.status);
    ASSERT_EQ(fit.status, TK_OK) << tk_last_error();
    for (size_t t = 1; t < fit.divergence.size(); ++t)
        EXPECT_LE(fit.divergence[t], fit.divergence[t - 1] * (1 + 1e-5)) << "iteration " << t;  // float rounding
    EXPECT_LT(fit.divergence.back(), 0.5 * fit.divergence.front());
    auto o = opts(TK_PLTF_KL, 2, TK_BACKEND_CUDA);
    o.cuda_device = 999;
    EXPECT_EQ(pltf_fit(m, o, x).status, TK_ERR_ARGUMENT);
    EXPECT_NE(std::string(tk_last_error()).find("CUDA device 999 does not exist"), std::string::npos);
}

TEST(PltfCuda, CoupledMatchesCpu)
{
    tk_pltf_model m1 = pltf_model("ijk=ia,ja,ka", "i=6,j=5,k=4,a=3"), m2 = pltf_model("il=ia,la", "i=6,l=7,a=3");
    auto x1 = model_data(m1, 3, kNoise), x2 = model_data(m2, 4, kNoise);
    std::vector<uint8_t> mask(x2.size(), 1);
    mask[2] = mask[9] = 0;
    tk_pltf_view views[2] = {{&m1, x1.data(), nullptr, nullptr}, {&m2, x2.data(), mask.data(), nullptr}};
    std::vector<double> traces[2];
    for (int b = 0; b < 2; ++b) {
        std::vector<std::vector<double>> z = {std::vector<double>(18), std::vector<double>(15), std::vector<double>(12),
                                              std::vector<double>(21)};
        traces[b].resize(16);
        tk_pltf_result r{};
        for (int g = 0; g < 4; ++g) r.factors[g] = z[(size_t)g].data();
        r.divergence = traces[b].data();
        auto o = opts(TK_PLTF_KL, 15, b ? TK_BACKEND_CUDA : TK_BACKEND_CPU);
        tk_status s = tk_pltf_factorize_coupled(2, views, &o, &r);
        TK_SKIP_IF_NO_GPU(s);
        ASSERT_EQ(s, TK_OK) << tk_last_error();
    }
    for (size_t t = 0; t < traces[0].size(); ++t) EXPECT_NEAR(traces[1][t], traces[0][t], 2e-4 * (1 + traces[0][t]));
}

TEST(PltfCuda, CublasPathForKlParafacMatchesFused)
{
    // The same KL-PARAFAC fit by the fused kernels and by cuBLAS GEMMs (no_fused).
    tk_pltf_model m = pltf_model("parafac", "i=20,j=30,k=40,a=8");
    auto x = model_data(m, 5, kNoise);
    std::vector<uint8_t> mask(x.size(), 1);
    for (size_t i = 0; i < mask.size(); i += 7) mask[i] = 0;
    const std::vector<const std::vector<uint8_t> *> masks = {nullptr, &mask};
    for (const auto *mk : masks) {
        auto fused = pltf_fit(m, opts(TK_PLTF_KL, 10, TK_BACKEND_CUDA), x, mk);
        TK_SKIP_IF_NO_GPU(fused.status);
        ASSERT_EQ(fused.status, TK_OK) << tk_last_error();
        auto o = opts(TK_PLTF_KL, 10, TK_BACKEND_CUDA);
        o.no_fused = 1;
        auto gemm = pltf_fit(m, o, x, mk);
        ASSERT_EQ(gemm.status, TK_OK) << tk_last_error();
        for (size_t t = 0; t < fused.divergence.size(); ++t)
            EXPECT_NEAR(gemm.divergence[t], fused.divergence[t], 2e-4 * (1 + fused.divergence[t]));
    }
}
