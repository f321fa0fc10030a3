// FastTucker's ALS row solves against LAPACK: every row of the first mode after one factor pass
// (the other modes still the start's) against a QR least-squares solve (LAPACKE_dgels) of the
// row's entries and its ridge, [V; sqrt(lambda_a n) I] a = [x; 0] for a row of n entries
// (ALS-WR, the default) or [V; sqrt(lambda_a) I] a = [x; 0] (TK_TUCKER_ALS_RIDGE=flat, the
// ridge before, kept for A/B), on a power-law tensor whose
// rows mostly have fewer entries than J and some none (their minimiser of f is 0), in double
// and in float (the float solver's normal equations and solve are in double too); and ALS's
// loss f never rising over the iterations on such a tensor.
#include <gtest/gtest.h>

#include <lapacke.h>

#include <cmath>
#include <cstdlib>
#include <vector>

#include "tucker_test_util.h"

using namespace tk_test;

namespace {

// Mode 0's rows solved the long way: v_e = B(0) q_e, q_e = prod over the other modes of
// their rows of A(k) B(k), in double from the model's floats; one dgels a row, the ridge
// lambda n (per_entry) or lambda.
std::vector<double> dense_rows(const tk_tucker_model &m, const tk_tucker_coo &t, double lambda, bool per_entry,
                               std::vector<int> *count)
{
    const int N = m.order, J = m.rank_j, R = m.rank_r;
    const uint32_t rows = m.dims[0];
    std::vector<std::vector<double>> v(rows), x(rows);
    count->assign(rows, 0);
    for (size_t e = 0; e < t.nnz; ++e) {
        const uint32_t *ix = t.idx + e * (size_t)N;
        std::vector<double> q((size_t)R, 1.0);
        for (int k = 1; k < N; ++k)
            for (int r = 0; r < R; ++r) {
                double c = 0;
                for (int j = 0; j < J; ++j) c += (double)m.a[k][(size_t)ix[k] * J + j] * m.b[k][j * R + r];
                q[(size_t)r] *= c;
            }
        for (int j = 0; j < J; ++j) {
            double s = 0;
            for (int r = 0; r < R; ++r) s += (double)m.b[0][j * R + r] * q[(size_t)r];
            v[ix[0]].push_back(s);
        }
        x[ix[0]].push_back(t.val[e]);
        ++(*count)[ix[0]];
    }
    std::vector<double> out((size_t)rows * J, 0.0);
    for (uint32_t i = 0; i < rows; ++i) {
        const int n = (*count)[i], rows_aug = n + J;
        if (!n) continue;  // no entries: 0
        std::vector<double> A((size_t)rows_aug * J, 0.0), b((size_t)rows_aug, 0.0);  // row-major
        for (int e = 0; e < n; ++e) {
            for (int j = 0; j < J; ++j) A[(size_t)e * J + j] = v[i][(size_t)e * J + j];
            b[(size_t)e] = x[i][(size_t)e];
        }
        const double ridge = per_entry ? lambda * n : lambda;
        for (int j = 0; j < J; ++j) A[(size_t)(n + j) * J + j] = std::sqrt(ridge);
        EXPECT_EQ(LAPACKE_dgels(LAPACK_ROW_MAJOR, 'N', rows_aug, J, 1, A.data(), J, b.data(), 1), 0);
        for (int j = 0; j < J; ++j) out[(size_t)i * J + j] = b[(size_t)j];
    }
    return out;
}

}  // namespace

TEST(TuckerAlsRows, RowSolvesMatchLapackLeastSquaresWithFewAndNoEntries)
{
    const int J = 6;
    auto so = synth_options(3, {60, 12, 10}, 160, J, 0.1, 9);  // mode 0: 2.7 entries a row
    Coo t;
    Model init;
    ASSERT_NO_FATAL_FAILURE(synth_with_start(so, J, J, 3, &t, &init));
    tk_tucker_model_balance_core(&init.m);  // the form the solver starts from: it keeps this one
    for (bool per_entry : {true, false}) {
        const double lambda = per_entry ? 0.004 : 0.01;  // per entry: 0.004-0.04 on rows of 1-10 entries
        struct Unset {
            ~Unset() { unsetenv("TK_TUCKER_ALS_RIDGE"); }  // the next case, or test, per entry again
        } unset;
        if (!per_entry) setenv("TK_TUCKER_ALS_RIDGE", "flat", 1);
        std::vector<int> count;
        const std::vector<double> want = dense_rows(init.m, t.t, lambda, per_entry, &count);
        int few = 0, none = 0;
        for (int c : count) few += c > 0 && c < J, none += c == 0;
        ASSERT_GT(few, 20);   // rows that J unknowns leave underdetermined but for the ridge
        ASSERT_GT(none, 3);   // and rows without entries
        for (int dbl : {1, 0}) {
            for (auto storage : {TK_TUCKER_BCSF, TK_TUCKER_COO}) {
                tk_tucker_options o = als_options(lambda);
                o.storage = storage;
                o.fiber_threshold = 2;  // rows split into sub-slices
                o.precision = dbl ? TK_PRECISION_DOUBLE : TK_PRECISION_SINGLE;
                Model after;
                ASSERT_NO_FATAL_FAILURE(factors_once(o, t.t, init.m, &after.m));
                double scale = 0, err = 0;
                for (size_t k = 0; k < want.size(); ++k) {
                    scale = std::fmax(scale, std::fabs(want[k]));
                    err = std::fmax(err, std::fabs(want[k] - (double)after.m.a[0][k]));
                }
                for (uint32_t i = 0; i < so.dims[0]; ++i) {
                    if (count[i]) continue;
                    for (int j = 0; j < J; ++j) EXPECT_EQ(after.m.a[0][(size_t)i * J + j], 0.0f) << "row " << i;
                }
                EXPECT_GT(scale, 1e-2);
                // double: the rounding of the float model's values; float: v = B q in float.
                EXPECT_LT(err, (dbl ? 1e-6 : 1e-3) * scale)
                    << (dbl ? "double" : "float") << " storage " << storage << (per_entry ? " per entry" : " flat");
            }
        }
    }
}

// Every row move is the exact minimiser of f over that row (or is refused where it would raise
// the row's loss), so f = sum e^2 + lambda_a sum_i n_i |a_i|^2 (ALS-WR) never rises, rows of
// fewer entries than J and rows without any included.
TEST(TuckerAlsRows, LossNeverRisesOnPowerLawRowsWithFewerEntriesThanJ)
{
    const int J = 8;
    auto so = synth_options(3, {400, 40, 20}, 2400, J, 0.1, 12);  // mode 0: 6 entries a row
    Coo t;
    Model init;
    ASSERT_NO_FATAL_FAILURE(synth_with_start(so, J, J, 4, &t, &init));
    tk_tucker_model_balance_core(&init.m);  // the same model, the solver's start: f at it is f's start
    for (double lambda : {1e-3, 0.0}) {
        const tk_tucker_options o = als_options(lambda);
        Solver s;
        Model m;
        ASSERT_EQ(tk_tucker_model_copy(&m.m, &init.m), TK_OK);
        ASSERT_EQ(tk_tucker_solver_create(&o, &t.t, &init.m, &s.s), TK_OK) << tk_last_error();
        double last = loss_per_entry(init.m, t.t, lambda);
        for (int it = 0; it < 8; ++it) {
            ASSERT_EQ(tk_tucker_update_factors(s.s), TK_OK);
            ASSERT_EQ(tk_tucker_solver_model(s.s, &m.m), TK_OK);
            const double loss = loss_per_entry(m.m, t.t, lambda);
            // the model comes back rounded to float: allow that much
            EXPECT_LE(loss, last * (1 + 1e-5) + 1e-9) << "lambda " << lambda << " iteration " << it;
            EXPECT_TRUE(std::isfinite(loss));
            last = loss;
        }
    }
}
