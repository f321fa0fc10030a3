// Packed symmetric storage and the reference kernels against dense brute force.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "tk_sshopm.h"
#include "tk_test_util.h"

using namespace tk_test;

TEST(SymStorage, NumUniqueIsTheBinomial)
{
    EXPECT_EQ(tk_sym_num_unique(4, 3), 15u);
    EXPECT_EQ(tk_sym_num_unique(6, 3), 28u);
    EXPECT_EQ(tk_sym_num_unique(8, 3), 45u);
    EXPECT_EQ(tk_sym_num_unique(3, 4), 20u);
    EXPECT_EQ(tk_sym_num_unique(2, 10), 55u);
    EXPECT_EQ(tk_sym_num_unique(0, 3), 0u);
    EXPECT_EQ(tk_sym_num_unique(400, 400), 0u);  // overflows size_t
}

TEST(SymStorage, IndexWalkMatchesTheSeedsTable31)
{
    // Table 3.1 of the seed: the index classes of [3, 4] in lexicographic order (1-based there).
    const int expected[20][3] = {{1, 1, 1}, {1, 1, 2}, {1, 1, 3}, {1, 1, 4}, {1, 2, 2}, {1, 2, 3}, {1, 2, 4},
                                 {1, 3, 3}, {1, 3, 4}, {1, 4, 4}, {2, 2, 2}, {2, 2, 3}, {2, 2, 4}, {2, 3, 3},
                                 {2, 3, 4}, {2, 4, 4}, {3, 3, 3}, {3, 3, 4}, {3, 4, 4}, {4, 4, 4}};
    int idx[3];
    tk_sym_index_first(3, idx);
    for (int r = 0; r < 20; ++r) {
        for (int q = 0; q < 3; ++q) EXPECT_EQ(idx[q] + 1, expected[r][q]) << "row " << r;
        EXPECT_EQ(tk_sym_rank(3, 4, idx), (size_t)r);
        EXPECT_EQ(tk_sym_index_next(3, 4, idx), r < 19 ? 1 : 0);
    }
}

TEST(SymStorage, RankOfAnyPermutationIsItsClass)
{
    int idx[4] = {2, 0, 1, 0};  // class 0012
    EXPECT_EQ(tk_sym_rank(4, 3, idx), 4u);
    int sorted[4] = {0, 0, 1, 2};
    EXPECT_DOUBLE_EQ(tk_sym_multiplicity(4, sorted), 12.0);
    int same[4] = {1, 1, 1, 1};
    EXPECT_DOUBLE_EQ(tk_sym_multiplicity(4, same), 1.0);
}

TEST(SymStorage, KernelsMatchDenseBruteForce)
{
    std::mt19937_64 rng(7);
    for (int m = 2; m <= 7; ++m)
        for (int n = 2; n <= 5; ++n) {
            if (full_size(m, n) > 20000) continue;
            auto packed = random_packed(m, n, 1, (uint64_t)(m * 100 + n));
            auto full = unpack(m, n, packed.data());
            for (int trial = 0; trial < 3; ++trial) {
                auto x = random_unit(n, rng);
                for (auto &v : x) v *= 1.3;  // off the sphere too
                double scale = 0;
                for (double v : full) scale += std::fabs(v);
                EXPECT_NEAR(tk_sym_axm_d(m, n, packed.data(), x.data()), dense_axm(m, n, full, x.data()),
                            1e-12 * scale * std::pow(1.3, m))
                    << "m=" << m << " n=" << n;
                std::vector<double> y(n), y2((size_t)n * n);
                tk_sym_axm1_d(m, n, packed.data(), x.data(), y.data());
                auto yd = dense_axm1(m, n, full, x.data());
                for (int i = 0; i < n; ++i) EXPECT_NEAR(y[i], yd[i], 1e-12 * scale * std::pow(1.3, m)) << m << "," << n;
                tk_sym_axm2_d(m, n, packed.data(), x.data(), y2.data());
                auto y2d = dense_axm2(m, n, full, x.data());
                for (size_t e = 0; e < y2.size(); ++e) EXPECT_NEAR(y2[e], y2d[e], 1e-12 * scale * std::pow(1.3, m));
                // single precision agrees to its rounding
                std::vector<float> pf(packed.begin(), packed.end()), xf(x.begin(), x.end()), yf(n);
                EXPECT_NEAR(tk_sym_axm_f(m, n, pf.data(), xf.data()), dense_axm(m, n, full, x.data()),
                            1e-5 * scale * std::pow(1.3, m));
                tk_sym_axm1_f(m, n, pf.data(), xf.data(), yf.data());
                for (int i = 0; i < n; ++i) EXPECT_NEAR(yf[i], yd[i], 1e-5 * scale * std::pow(1.3, m));
            }
        }
}

TEST(SymStorage, GradientIsMTimesAxm1ByFiniteDifferences)
{
    // d/dx (A x^m) = m A x^(m-1), and the Hessian is m (m-1) A x^(m-2).
    std::mt19937_64 rng(11);
    for (int m : {3, 4, 6, 8}) {
        const int n = 3;
        auto packed = random_packed(m, n, 1, (uint64_t)m);
        auto x = random_unit(n, rng);
        std::vector<double> y(n), h((size_t)n * n);
        tk_sym_axm1_d(m, n, packed.data(), x.data(), y.data());
        tk_sym_axm2_d(m, n, packed.data(), x.data(), h.data());
        const double step = 1e-5;
        for (int i = 0; i < n; ++i) {
            auto xp = x, xm = x;
            xp[i] += step, xm[i] -= step;
            double fd = (tk_sym_axm_d(m, n, packed.data(), xp.data()) - tk_sym_axm_d(m, n, packed.data(), xm.data())) /
                        (2 * step);
            EXPECT_NEAR(fd, m * y[i], 1e-6 * (1 + std::fabs(fd)));
            std::vector<double> yp(n), ym(n);
            tk_sym_axm1_d(m, n, packed.data(), xp.data(), yp.data());
            tk_sym_axm1_d(m, n, packed.data(), xm.data(), ym.data());
            for (int j = 0; j < n; ++j) {
                double fd2 = (yp[j] - ym[j]) / (2 * step);  // d(A x^(m-1))_j / dx_i = (m-1) (A x^(m-2))_ij
                EXPECT_NEAR(fd2, (m - 1) * h[(size_t)i * n + j], 1e-6 * (1 + std::fabs(fd2)));
            }
        }
    }
}

TEST(SymStorage, PackRejectsNonSymmetricAndRoundTrips)
{
    const int m = 4, n = 3;
    auto packed = random_packed(m, n, 1, 5);
    auto full = unpack(m, n, packed.data());
    std::vector<double> back(packed.size());
    size_t bad = 99;
    ASSERT_EQ(tk_sym_pack_d(m, n, full.data(), 0.0, back.data(), &bad), TK_OK);
    EXPECT_EQ(back, packed);
    full[1 * 27 + 0 * 9 + 2 * 3 + 1] += 1e-3;  // entry (1,0,2,1)
    EXPECT_EQ(tk_sym_pack_d(m, n, full.data(), 1e-9, back.data(), &bad), TK_ERR_DATA);
    EXPECT_EQ(bad, (size_t)(1 * 27 + 0 * 9 + 2 * 3 + 1));
}
