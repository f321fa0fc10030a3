// PLTF on the CPU: the parser, GTM against a brute-force einsum, and the
// multiplicative updates (monotone divergence, masks, presets).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "pltf_test_util.h"
#include "tk_pltf.h"

using namespace tk_test;

TEST(PltfParse, PresetsAndCustomModels)
{
    tk_pltf_model m;
    ASSERT_EQ(tk_pltf_parse("parafac", &m), TK_OK) << tk_last_error();
    EXPECT_STREQ(m.text, "ijk=ia,ja,ka");
    EXPECT_EQ(m.out_ndim, 3);
    EXPECT_EQ(m.num_factors, 3);
    char name[TK_PLTF_MAX_INDICES + 1];
    tk_pltf_factor_name(&m, 1, name);
    EXPECT_STREQ(name, "ja");
    ASSERT_EQ(tk_pltf_parse("tucker3", &m), TK_OK);
    EXPECT_STREQ(m.text, "ijk=ip,jq,kr,pqr");
    EXPECT_EQ(m.num_factors, 4);
    tk_pltf_factor_name(&m, 3, name);
    EXPECT_STREQ(name, "pqr");
    ASSERT_EQ(tk_pltf_parse(" ij = iA , Aj ", &m), TK_OK) << tk_last_error();
    EXPECT_EQ(m.factor[0][1], tk_pltf_index_id('A'));
    size_t shape[2] = {4, 5};
    ASSERT_EQ(tk_pltf_set_out_shape(&m, 2, shape), TK_OK);
    EXPECT_EQ(tk_pltf_check_dims(&m), TK_ERR_ARGUMENT);
    EXPECT_NE(std::string(tk_last_error()).find("no size given for index 'A'"), std::string::npos) << tk_last_error();
    ASSERT_EQ(tk_pltf_set_dims(&m, "A=3"), TK_OK);
    EXPECT_EQ(tk_pltf_check_dims(&m), TK_OK);
    EXPECT_EQ(tk_pltf_factor_count(&m, 0), 12u);
    EXPECT_EQ(tk_pltf_out_count(&m), 20u);
}

TEST(PltfParse, ErrorsNameTheCharacterAndPosition)
{
    struct Case {
        const char *text, *message;
    } cases[] = {
        {"ijk=ia,j1,ka", "not an index letter, '=' or ',' at position 9 ('1')"},
        {"ijk", "expected '=' and the factors at position 4 (end of text)"},
        {"iik=ia,ka", "index repeated in the output at position 2 ('i')"},
        {"ijk=iaa,ja,ka", "index repeated within one factor at position 7 ('a')"},
        {"ijk=ia,,ka", "expected a factor's indices at position 8 (',')"},
        {"ijk=ia,ja,", "expected a factor's indices at position 11 (end of text)"},
        {"ijk=ia=ja", "a second '=' at position 7"},
        {"=ia", "expected the output's indices at position 1 ('=')"},
        {"ij,k=ia", "expected '=' after the output's indices at position 3 (',')"},
        {"ijk=ia,ja", "output index appears in no factor at position 3 ('k')"},
        {"ijk=ia;ja", "position 7 (';')"},
    };
    for (const auto &c : cases) {
        tk_pltf_model m;
        EXPECT_EQ(tk_pltf_parse(c.text, &m), TK_ERR_ARGUMENT) << c.text;
        EXPECT_NE(std::string(tk_last_error()).find(c.message), std::string::npos)
            << c.text << "\nmessage: " << tk_last_error();
    }
    tk_pltf_model m = pltf_model("parafac", "");
    EXPECT_EQ(tk_pltf_set_dims(&m, "a=20,z=3"), TK_ERR_ARGUMENT);
    EXPECT_NE(std::string(tk_last_error()).find("has no index 'z'"), std::string::npos) << tk_last_error();
    EXPECT_EQ(tk_pltf_set_dims(&m, "a=x"), TK_ERR_ARGUMENT);
    EXPECT_NE(std::string(tk_last_error()).find("positive integer at position 3"), std::string::npos);
    EXPECT_EQ(tk_pltf_set_dims(&m, "a=0"), TK_ERR_ARGUMENT);
    EXPECT_EQ(tk_pltf_set_dims(&m, "a20"), TK_ERR_ARGUMENT);
    size_t shape[2] = {3, 4};
    EXPECT_EQ(tk_pltf_set_out_shape(&m, 2, shape), TK_ERR_ARGUMENT);
    EXPECT_NE(std::string(tk_last_error()).find("3 observed axes, the data has 2"), std::string::npos);
}

TEST(PltfGtm, EqualsBruteForceEinsum)
{
    const ModelCase cases[] = {
        {"ijk=ia,ja,ka", "i=3,j=4,k=5,a=2"},
        {"ijk=ip,jq,kr,pqr", "i=3,j=4,k=2,p=2,q=3,r=2"},
        {"ik=ij,jk", "i=3,j=4,k=5"},
        {"bik=bij,bjk", "b=2,i=3,j=4,k=2"},
        {"ki=ij,jk", "i=3,j=4,k=5"},           // output transposed
        {"i=ijk", "i=3,j=2,k=4"},              // one operand, reduced
        {"ji=ij", "i=3,j=4"},                  // one operand, permuted
        {"ij=iab,bj,ac", "i=2,j=3,a=2,b=3,c=2"}, // an index summed out of one operand
        {"ijkl=ia,ja,ka,la", "i=2,j=3,k=2,l=3,a=3"},
        {"ij=ia,ja,ab,b", "i=3,j=2,a=2,b=3"},
    };
    for (const auto &c : cases)
        for (auto b : {TK_BACKEND_CPU, TK_BACKEND_OMP}) {
            tk_status s = TK_OK;
            expect_gtm_equals_einsum(c, b, 7, 1e-12, &s);
            ASSERT_EQ(s, TK_OK) << tk_last_error();
            if (HasFatalFailure()) return;
        }
}

TEST(PltfGtm, PlanAvoidsTheJointTensor)
{
    tk_pltf_model m = pltf_model("parafac", "i=256,j=256,k=256,a=32");
    char buf[256];
    double cost = tk_pltf_plan_describe(&m, buf, sizeof buf);
    // Two pairwise steps, each at most |i||j||k||a| multiply-adds; the seed's
    // joint tensor costs three multiplies per entry of the same space.
    EXPECT_LE(cost, 2.0 * 256 * 256 * 256 * 32) << buf;
    EXPECT_NE(std::string(buf).find(")->ijk"), std::string::npos) << buf;
    tk_pltf_model t = pltf_model("tucker3", "i=100,j=100,k=100,p=5,q=5,r=5");
    cost = tk_pltf_plan_describe(&t, buf, sizeof buf);
    // Tucker by successive mode products: far below the joint space's 1e6 * 125.
    EXPECT_LT(cost, 2e7) << buf;
}

namespace {

tk_pltf_options opts(tk_pltf_divergence d, int iterations, uint64_t seed = 3)
{
    tk_pltf_options o;
    tk_pltf_options_init(&o);
    o.divergence = d;
    o.iterations = iterations;
    o.seed = seed;
    return o;
}

// Data made exactly by the model from random factors (seed) and a fit of the model to it.
struct ExactDataFit {
    std::vector<double> x;
    PltfFit fit;
};

ExactDataFit fit_exact_data(const tk_pltf_model &m, uint64_t seed, tk_pltf_divergence d, int iterations)
{
    ExactDataFit r;
    r.x = brute_force_einsum(m, random_factors(m, seed));
    r.fit = pltf_fit(m, opts(d, iterations), r.x);
    return r;
}

}  // namespace

TEST(PltfFactorize, DivergenceNeverIncreases)
{
    const ModelCase cases[] = {
        {"parafac", "i=6,j=5,k=4,a=3"},
        {"tucker3", "i=5,j=4,k=6,p=2,q=3,r=2"},
        {"ij=ia,ja", "i=7,j=6,a=2"},
    };
    for (const auto &c : cases)
        for (auto d : {TK_PLTF_KL, TK_PLTF_EUCLIDEAN, TK_PLTF_IS})
            for (int masked = 0; masked < 2; ++masked) {
                tk_pltf_model m = pltf_model(c.model, c.dims);
                auto x = model_data(m, 11);
                std::vector<uint8_t> mask(x.size(), 1);
                for (size_t i = 0; i < mask.size(); i += 3) mask[i] = 0;
                auto fit = pltf_fit(m, opts(d, 60), x, masked ? &mask : nullptr);
                ASSERT_EQ(fit.status, TK_OK) << tk_last_error();
                for (size_t t = 1; t < fit.divergence.size(); ++t)
                    ASSERT_LE(fit.divergence[t], fit.divergence[t - 1] * (1 + 1e-12) + 1e-14)
                        << c.model << " " << tk_pltf_divergence_name(d) << " masked " << masked << " iteration " << t;
                EXPECT_LT(fit.divergence.back(), 0.9 * fit.divergence.front()) << c.model << tk_pltf_divergence_name(d);
                // The reported divergence is that of the returned reconstruction, and
                // the reconstruction is the GTM of the returned factors.
                auto xhat = brute_force_einsum(m, fit.factors);
                for (size_t i = 0; i < xhat.size(); ++i) ASSERT_NEAR(fit.xhat[i], xhat[i], 1e-10 * (1 + xhat[i]));
                double div = tk_pltf_divergence_value(d, x.data(), masked ? mask.data() : nullptr, xhat.data(), x.size());
                EXPECT_NEAR(div, fit.divergence.back(), 1e-9 * (1 + div));
            }
}

TEST(PltfFactorize, MaskedEntriesHaveNoInfluence)
{
    tk_pltf_model m = pltf_model("parafac", "i=5,j=6,k=4,a=3");
    auto x = model_data(m, 5);
    std::vector<uint8_t> mask(x.size(), 1);
    for (size_t i = 1; i < mask.size(); i += 4) mask[i] = 0;
    for (auto d : {TK_PLTF_KL, TK_PLTF_EUCLIDEAN, TK_PLTF_IS}) {
        auto a = pltf_fit(m, opts(d, 25), x, &mask);
        ASSERT_EQ(a.status, TK_OK) << tk_last_error();
        auto y = x;
        for (size_t i = 0; i < y.size(); ++i)
            if (!mask[i]) y[i] = i % 8 == 1 ? NAN : -1e6 * (double)i;  // never read, so NaN and negatives are fine
        auto b = pltf_fit(m, opts(d, 25), y, &mask);
        ASSERT_EQ(b.status, TK_OK) << tk_last_error();
        for (int f = 0; f < m.num_factors; ++f) EXPECT_EQ(a.factors[f], b.factors[f]) << tk_pltf_divergence_name(d);
        EXPECT_EQ(a.divergence, b.divergence);
        // The same unobserved entries changed without a mask do change the fit.
        auto c = pltf_fit(m, opts(d, 25), x);
        auto e = x;
        for (size_t i = 0; i < e.size(); ++i)
            if (!mask[i]) e[i] *= 3;
        auto g = pltf_fit(m, opts(d, 25), e);
        EXPECT_NE(c.factors[0], g.factors[0]);
    }
}

TEST(PltfFactorize, ParafacPresetRecoversExactLowRankData)
{
    auto r = fit_exact_data(pltf_model("parafac", "i=8,j=7,k=6,a=2"), 21, TK_PLTF_KL, 1500);
    ASSERT_EQ(r.fit.status, TK_OK) << tk_last_error();
    EXPECT_LT(relative_error(r.fit.xhat, r.x), 1e-3) << "KL " << r.fit.divergence.back();
}

TEST(PltfFactorize, TuckerPresetFitsTuckerData)
{
    auto r = fit_exact_data(pltf_model("tucker3", "i=6,j=5,k=7,p=2,q=2,r=3"), 8, TK_PLTF_EUCLIDEAN, 8000);
    ASSERT_EQ(r.fit.status, TK_OK) << tk_last_error();
    EXPECT_LT(relative_error(r.fit.xhat, r.x), 1e-2);
    EXPECT_EQ(r.fit.factors[3].size(), 12u);  // the core pqr
}

TEST(PltfFactorize, BackendsAndNaiveGtmAgree)
{
    tk_pltf_model m = pltf_model("tucker3", "i=4,j=5,k=3,p=2,q=2,r=2");
    auto x = model_data(m, 2);
    auto base = pltf_fit(m, opts(TK_PLTF_KL, 20), x);
    ASSERT_EQ(base.status, TK_OK);
    auto o = opts(TK_PLTF_KL, 20);
    o.backend = TK_BACKEND_OMP;
    auto omp = pltf_fit(m, o, x);
    o.backend = TK_BACKEND_CPU;
    o.naive_gtm = 1;
    auto naive = pltf_fit(m, o, x);
    for (size_t t = 0; t < base.divergence.size(); ++t) {
        EXPECT_NEAR(omp.divergence[t], base.divergence[t], 1e-9 * base.divergence[t]);
        EXPECT_NEAR(naive.divergence[t], base.divergence[t], 1e-9 * base.divergence[t]);
    }
    // A given start is used as is; the same seed gives the same start.
    auto again = pltf_fit(m, opts(TK_PLTF_KL, 20), x);
    EXPECT_EQ(again.factors, base.factors);
    auto other = pltf_fit(m, opts(TK_PLTF_KL, 20, 4), x);
    EXPECT_NE(other.factors, base.factors);
}

TEST(PltfFactorize, BadDataAndModelsFailClearly)
{
    tk_pltf_model m = pltf_model("parafac", "i=3,j=3,k=3,a=2");
    std::vector<double> x(27, 1.0);
    x[13] = -0.5;
    auto fit = pltf_fit(m, opts(TK_PLTF_KL, 5), x);
    EXPECT_EQ(fit.status, TK_ERR_DATA);
    EXPECT_NE(std::string(tk_last_error()).find("entry 13 is negative"), std::string::npos) << tk_last_error();
    EXPECT_EQ(pltf_fit(m, opts(TK_PLTF_EUCLIDEAN, 5), x).status, TK_OK);  // any real data for Euclidean
    x[13] = 0;
    EXPECT_EQ(pltf_fit(m, opts(TK_PLTF_KL, 5), x).status, TK_OK);
    EXPECT_EQ(pltf_fit(m, opts(TK_PLTF_IS, 5), x).status, TK_ERR_DATA);
    EXPECT_NE(std::string(tk_last_error()).find("Itakura-Saito divergence needs positive data"), std::string::npos);
    x[13] = NAN;
    EXPECT_EQ(pltf_fit(m, opts(TK_PLTF_EUCLIDEAN, 5), x).status, TK_ERR_DATA);
    std::vector<uint8_t> none(27, 0);
    x[13] = 1;
    EXPECT_EQ(pltf_fit(m, opts(TK_PLTF_KL, 5), x, &none).status, TK_ERR_DATA);
    EXPECT_NE(std::string(tk_last_error()).find("no observed entry"), std::string::npos);
    tk_pltf_model lonely = pltf_model("ij=iab,ja", "i=3,j=3,a=2,b=2");
    std::vector<double> y(9, 1.0);
    EXPECT_EQ(pltf_fit(lonely, opts(TK_PLTF_KL, 5), y).status, TK_ERR_ARGUMENT);
    EXPECT_NE(std::string(tk_last_error()).find("latent index 'b' appears only in factor 'iab'"), std::string::npos);
    tk_pltf_model nosize = pltf_model("parafac", "");
    EXPECT_EQ(pltf_fit(nosize, opts(TK_PLTF_KL, 5), y).status, TK_ERR_ARGUMENT);
    auto o = opts(TK_PLTF_KL, 5);
    o.backend = TK_BACKEND_CUDA;
    if (!tk_has_cuda()) {
        EXPECT_EQ(pltf_fit(m, o, x).status, TK_ERR_UNSUPPORTED);
        EXPECT_NE(std::string(tk_last_error()).find("no CUDA backend"), std::string::npos);
    }
}

TEST(PltfFactorize, CallbackSeesEveryIterationAndCanStop)
{
    tk_pltf_model m = pltf_model("parafac", "i=4,j=4,k=4,a=2");
    auto x = model_data(m, 1);
    std::vector<std::pair<int, double>> seen;
    auto o = opts(TK_PLTF_KL, 10);
    o.user = &seen;
    o.on_iteration = [](void *user, int it, double div) {
        auto *s = static_cast<std::vector<std::pair<int, double>> *>(user);
        s->push_back({it, div});
        return it == 6 ? 1 : 0;
    };
    auto fit = pltf_fit(m, o, x);
    ASSERT_EQ(fit.status, TK_OK);
    ASSERT_EQ(seen.size(), 7u);
    for (int t = 0; t < 7; ++t) EXPECT_EQ(seen[(size_t)t].first, t);
    EXPECT_EQ(seen.back().second, fit.divergence[6]);
}

namespace {

// D_f(q) by brute force: the einsum "<factor indices>=<out>,<other factors>".
std::vector<double> brute_delta(const tk_pltf_model &m, int f, const std::vector<double> &q,
                                const std::vector<std::vector<double>> &factors)
{
    std::string text;
    char name[TK_PLTF_MAX_INDICES + 1];
    tk_pltf_factor_name(&m, f, name);
    text = std::string(name) + "=";
    for (int d = 0; d < m.out_ndim; ++d) text += tk_pltf_index_letter(m.out[d]);
    std::vector<std::vector<double>> ops = {q};
    for (int g = 0; g < m.num_factors; ++g)
        if (g != f) {
            tk_pltf_factor_name(&m, g, name);
            text += std::string(",") + name;
            ops.push_back(factors[(size_t)g]);
        }
    tk_pltf_model dm;
    EXPECT_EQ(tk_pltf_parse(text.c_str(), &dm), TK_OK) << text;
    memcpy(dm.dims, m.dims, sizeof dm.dims);
    return brute_force_einsum(dm, ops);
}

}  // namespace

TEST(PltfCoupled, OneIterationEqualsBruteForceUpdates)
{
    // Two views sharing "ia": a masked matrix X1 (i, j) and a matrix X2 (i, k).
    tk_pltf_model m1 = pltf_model("ij=ia,ja", "i=4,j=5,a=2"), m2 = pltf_model("ik=ia,ka", "i=4,k=3,a=2");
    auto x1 = uniform(20, 1, 0.5, 2.0), x2 = uniform(12, 2, 0.5, 2.0);
    std::vector<uint8_t> mask1(20, 1);
    mask1[3] = mask1[11] = 0;
    x1[3] = NAN;  // unobserved: never read
    std::vector<std::vector<double>> z = {uniform(8, 3), uniform(10, 4), uniform(6, 5)};  // ia, ja, ka
    for (auto d : {TK_PLTF_KL, TK_PLTF_EUCLIDEAN, TK_PLTF_IS}) {
        tk_pltf_view views[2] = {{&m1, x1.data(), mask1.data(), nullptr}, {&m2, x2.data(), nullptr, nullptr}};
        char names[TK_PLTF_MAX_FACTORS][TK_PLTF_MAX_INDICES + 1];
        ASSERT_EQ(tk_pltf_coupled_factors(2, views, names), 3);
        EXPECT_STREQ(names[0], "ia");
        EXPECT_STREQ(names[2], "ka");
        auto got = z;
        tk_pltf_result r{};
        for (int g = 0; g < 3; ++g) r.factors[g] = got[(size_t)g].data();
        tk_pltf_options o = opts(d, 1);
        o.init_given = 1;
        ASSERT_EQ(tk_pltf_factorize_coupled(2, views, &o, &r), TK_OK) << tk_last_error();

        // The same step by brute force: each distinct factor in turn, summing the views.
        const double beta = d == TK_PLTF_KL ? 1 : d == TK_PLTF_EUCLIDEAN ? 2 : 0, gamma = d == TK_PLTF_IS ? 0.5 : 1;
        auto want = z;
        const tk_pltf_model *models[2] = {&m1, &m2};
        const std::vector<double> *xs[2] = {&x1, &x2};
        const std::vector<int> map[2] = {{0, 1}, {0, 2}};
        for (int g = 0; g < 3; ++g) {
            std::vector<double> num(want[(size_t)g].size(), 0.0), den(num.size(), 0.0);
            for (int v = 0; v < 2; ++v)
                for (int f = 0; f < 2; ++f) {
                    if (map[v][(size_t)f] != g) continue;
                    std::vector<std::vector<double>> fs = {want[(size_t)map[v][0]], want[(size_t)map[v][1]]};
                    auto xh = brute_force_einsum(*models[v], fs);
                    std::vector<double> qn(xh.size()), qd(xh.size());
                    for (size_t e = 0; e < xh.size(); ++e) {
                        bool obs = v == 1 || mask1[e];
                        qn[e] = obs ? (*xs[v])[e] * std::pow(xh[e], beta - 2) : 0;
                        qd[e] = obs ? std::pow(xh[e], beta - 1) : 0;
                    }
                    auto dn = brute_delta(*models[v], f, qn, fs), dd = brute_delta(*models[v], f, qd, fs);
                    for (size_t e = 0; e < num.size(); ++e) num[e] += dn[e], den[e] += dd[e];
                }
            for (size_t e = 0; e < num.size(); ++e) want[(size_t)g][e] *= std::pow(num[e] / den[e], gamma);
        }
        for (int g = 0; g < 3; ++g)
            for (size_t e = 0; e < want[(size_t)g].size(); ++e)
                ASSERT_NEAR(got[(size_t)g][e], want[(size_t)g][e], 1e-12 * (1 + want[(size_t)g][e]))
                    << tk_pltf_divergence_name(d) << " factor " << g;
    }
}

TEST(PltfCoupled, SummedDivergenceNeverIncreases)
{
    // A 3-way tensor and a matrix sharing the factor "ia" (e.g. a tensor and side information).
    tk_pltf_model m1 = pltf_model("ijk=ia,ja,ka", "i=6,j=5,k=4,a=3"), m2 = pltf_model("il=ia,la", "i=6,l=7,a=3");
    auto x1 = model_data(m1, 3), x2 = model_data(m2, 4);
    std::vector<double> xh1(x1.size()), xh2(x2.size());
    for (auto d : {TK_PLTF_KL, TK_PLTF_EUCLIDEAN, TK_PLTF_IS}) {
        tk_pltf_view views[2] = {{&m1, x1.data(), nullptr, xh1.data()}, {&m2, x2.data(), nullptr, xh2.data()}};
        std::vector<std::vector<double>> z = {std::vector<double>(18), std::vector<double>(15), std::vector<double>(12),
                                              std::vector<double>(21)};
        std::vector<double> trace(41);
        tk_pltf_result r{};
        for (int g = 0; g < 4; ++g) r.factors[g] = z[(size_t)g].data();
        r.divergence = trace.data();
        tk_pltf_options o = opts(d, 40);
        for (auto b : {TK_BACKEND_CPU, TK_BACKEND_OMP}) {
            o.backend = b;
            ASSERT_EQ(tk_pltf_factorize_coupled(2, views, &o, &r), TK_OK) << tk_last_error();
            for (size_t t = 1; t < trace.size(); ++t)
                ASSERT_LE(trace[t], trace[t - 1] * (1 + 1e-12) + 1e-14) << tk_pltf_divergence_name(d) << " " << t;
            EXPECT_LT(trace.back(), 0.9 * trace.front());
            // The summed divergence is that of the views' returned reconstructions.
            double sum = tk_pltf_divergence_value(d, x1.data(), nullptr, xh1.data(), x1.size()) +
                         tk_pltf_divergence_value(d, x2.data(), nullptr, xh2.data(), x2.size());
            EXPECT_NEAR(sum, trace.back(), 1e-9 * sum);
        }
    }
}

TEST(PltfCoupled, OneViewEqualsTheSingleFactorization)
{
    tk_pltf_model m = pltf_model("tucker3", "i=4,j=5,k=3,p=2,q=2,r=2");
    auto x = model_data(m, 6);
    auto single = pltf_fit(m, opts(TK_PLTF_KL, 15), x);
    ASSERT_EQ(single.status, TK_OK);
    auto start = pltf_fit(m, opts(TK_PLTF_KL, 0), x);  // the same seeded start
    tk_pltf_view view = {&m, x.data(), nullptr, nullptr};
    tk_pltf_result r{};
    for (int f = 0; f < 4; ++f) r.factors[f] = start.factors[(size_t)f].data();
    std::vector<double> trace(16);
    r.divergence = trace.data();
    tk_pltf_options o = opts(TK_PLTF_KL, 15);
    o.init_given = 1;
    ASSERT_EQ(tk_pltf_factorize_coupled(1, &view, &o, &r), TK_OK) << tk_last_error();
    for (size_t t = 0; t < trace.size(); ++t) EXPECT_NEAR(trace[t], single.divergence[t], 1e-10 * trace[t]);
}

TEST(PltfCoupled, InconsistentViewsFailClearly)
{
    tk_pltf_model m1 = pltf_model("ij=ia,ja", "i=4,j=5,a=2"), m2 = pltf_model("ik=ia,ka", "i=3,k=3,a=2");
    std::vector<double> x1(20, 1.0), x2(9, 1.0);
    tk_pltf_view views[2] = {{&m1, x1.data(), nullptr, nullptr}, {&m2, x2.data(), nullptr, nullptr}};
    tk_pltf_result r{};
    tk_pltf_options o = opts(TK_PLTF_KL, 2);
    EXPECT_EQ(tk_pltf_factorize_coupled(2, views, &o, &r), TK_ERR_ARGUMENT);
    EXPECT_NE(std::string(tk_last_error()).find("index 'i' has size 4 in view 0 (\"ij=ia,ja\") but 3 in view 1"),
              std::string::npos)
        << tk_last_error();
    tk_pltf_model twice = pltf_model("ijk=ia,ja,ka,ia", "i=2,j=2,k=2,a=2");
    std::vector<double> y(8, 1.0);
    tk_pltf_view one = {&twice, y.data(), nullptr, nullptr};
    EXPECT_EQ(tk_pltf_coupled_factors(1, &one, nullptr), -1);
    EXPECT_NE(std::string(tk_last_error()).find("factor 'ia' occurs twice in view 0"), std::string::npos);
    x2[4] = -1;
    tk_pltf_model m3 = pltf_model("ik=ia,ka", "i=4,k=3,a=2");
    std::vector<double> x3(12, 1.0);
    x3[5] = -2;
    views[1] = {&m3, x3.data(), nullptr, nullptr};
    std::vector<double> a(8), b(10), c(6);
    r.factors[0] = a.data(), r.factors[1] = b.data(), r.factors[2] = c.data();
    EXPECT_EQ(tk_pltf_factorize_coupled(2, views, &o, &r), TK_ERR_DATA);
    EXPECT_NE(std::string(tk_last_error()).find("view 1: observed entry 5 is negative"), std::string::npos)
        << tk_last_error();
}
