// tk_sh_guess_basis: the SH basis of real fiber ODFs as DIPY and MRtrix3 write them, the same
// ODFs re-expressed in every other basis (through tk_sh_eval, checked against DIPY in
// test_fibers.cpp), noise-free fibers, and background voxels that must not count.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "tk_fibers.h"
#include "tk_npy.h"
#include "tk_sh_test_util.h"

using namespace tk_test;

namespace {

struct Basis {
    tk_sh_basis basis;
    int legacy;
    const char *name;
};
const Basis kBases[4] = {{TK_SH_TOURNIER, 0, "tournier"},
                         {TK_SH_TOURNIER, 1, "tournier legacy"},
                         {TK_SH_DESCOTEAUX, 0, "descoteaux"},
                         {TK_SH_DESCOTEAUX, 1, "descoteaux legacy"}};

// Data/fibers/small_64D_fod_*_sh.npy: DIPY's CSD (its default basis, descoteaux legacy) and
// MRtrix3's dwi2fod (tournier) of one real DWI volume, 1000 voxels x 45 (make_small_64D_fods.py).
std::vector<float> load_voxels(const std::string &name)
{
    tk_npy_array a;
    EXPECT_EQ(tk_npy_read((std::string(TK_FIBERS_DATA "/") + name).c_str(), &a), TK_OK) << tk_last_error();
    EXPECT_EQ(a.dtype, TK_NPY_FLOAT32);
    EXPECT_EQ(a.shape[1], 45u);
    std::vector<float> v((float *)a.data, (float *)a.data + a.shape[0] * a.shape[1]);
    tk_npy_free(&a);
    return v;
}

// The same functions in basis `to`: c_to = M c_from, M the least-squares fit of `from`'s basis
// functions by `to`'s on a dense lattice (exact: the spans are equal), by the normal equations
// for all columns at once.
std::vector<float> convert(const std::vector<float> &sh, int lmax, const Basis &from, const Basis &to)
{
    const int k = (int)tk_sh_num_coeffs(lmax), rows = 8 * k + 40;
    std::vector<double> btb((size_t)k * k, 0), bta((size_t)k * k, 0), a(k), b(k);
    for (int r = 0; r < rows; ++r) {
        const double z = 1 - (2.0 * r + 1) / rows, rho = std::sqrt(1 - z * z), phi = r * 2.399963229728653;
        const double g[3] = {rho * std::cos(phi), rho * std::sin(phi), z};
        tk_sh_eval(from.basis, from.legacy, lmax, g, a.data());
        tk_sh_eval(to.basis, to.legacy, lmax, g, b.data());
        for (int i = 0; i < k; ++i)
            for (int j = 0; j < k; ++j) btb[(size_t)i * k + j] += b[i] * b[j], bta[(size_t)i * k + j] += b[i] * a[j];
    }
    // Gauss-Jordan with partial pivoting: btb M = bta
    for (int c = 0; c < k; ++c) {
        int piv = c;
        for (int r = c + 1; r < k; ++r)
            if (std::fabs(btb[(size_t)r * k + c]) > std::fabs(btb[(size_t)piv * k + c])) piv = r;
        for (int j = 0; j < k; ++j)
            std::swap(btb[(size_t)c * k + j], btb[(size_t)piv * k + j]), std::swap(bta[(size_t)c * k + j], bta[(size_t)piv * k + j]);
        for (int r = 0; r < k; ++r) {
            if (r == c) continue;
            const double f = btb[(size_t)r * k + c] / btb[(size_t)c * k + c];
            for (int j = 0; j < k; ++j) btb[(size_t)r * k + j] -= f * btb[(size_t)c * k + j], bta[(size_t)r * k + j] -= f * bta[(size_t)c * k + j];
        }
    }
    for (int i = 0; i < k; ++i)
        for (int j = 0; j < k; ++j) bta[(size_t)i * k + j] /= btb[(size_t)i * k + i];
    std::vector<float> out(sh.size());
    for (size_t v = 0; v < sh.size() / k; ++v)
        for (int i = 0; i < k; ++i) {
            double s = 0;
            for (int j = 0; j < k; ++j) s += bta[(size_t)i * k + j] * sh[v * k + j];
            out[v * k + i] = (float)s;
        }
    return out;
}

tk_sh_basis_guess guess(const std::vector<float> &sh, int lmax, size_t max_samples = 0)
{
    tk_sh_basis_guess g;
    EXPECT_EQ(tk_sh_guess_basis(lmax, sh.size() / tk_sh_num_coeffs(lmax), sh.data(), max_samples, &g), TK_OK)
        << tk_last_error();
    return g;
}

// The data are in basis `truth`: the guess says so, and contradicts exactly the bases the
// data can tell from it (tournier's two scales are one class).
void expect_guessed(const tk_sh_basis_guess &g, const Basis &truth, const std::string &what)
{
    SCOPED_TRACE(what + " in " + truth.name);
    EXPECT_EQ(g.basis, truth.basis);
    EXPECT_EQ(g.legacy_known, truth.basis == TK_SH_DESCOTEAUX);
    if (g.legacy_known) {
        EXPECT_EQ(g.legacy, truth.legacy);
    }
    EXPECT_GE(g.confidence, 1.5) << g.score[0] << " " << g.score[1] << " " << g.score[2] << " " << g.score[3];
    for (const Basis &b : kBases) {
        const bool same_class = b.basis == truth.basis && (b.basis == TK_SH_TOURNIER || b.legacy == truth.legacy);
        EXPECT_EQ(tk_sh_basis_contradicts(&g, b.basis, b.legacy), !same_class) << "given " << b.name;
        if (same_class) {
            EXPECT_EQ(tk_sh_basis_evidence(&g, b.basis, b.legacy), 1.0);
        }
    }
}

// Noise-free fibers, sum_q w_q (v_q . x)^lmax, in MRtrix3's basis: one fiber along z fitted
// once, then turned to v_q by the addition theorem (c_lm = c_l0 / Y_l0(z) * Y_lm(v)).
std::vector<float> noise_free_fibers(int lmax, size_t voxels, unsigned seed)
{
    const size_t k = tk_sh_num_coeffs(lmax);
    const auto along_z = sh_of_fibers(lmax, TK_SH_TOURNIER, 0, {{0, 0, 1}}, {1.0});
    std::vector<double> yz(k), yv(k);
    const double z[3] = {0, 0, 1};
    tk_sh_eval(TK_SH_TOURNIER, 0, lmax, z, yz.data());
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> gauss;
    std::uniform_real_distribution<double> weight(0.3, 1.0);
    std::vector<float> out(voxels * k, 0.0f);
    for (size_t v = 0; v < voxels; ++v)
        for (size_t q = 0; q < 1 + v % 3; ++q) {
            const double d[3] = {gauss(rng), gauss(rng), gauss(rng)}, w = weight(rng);
            tk_sh_eval(TK_SH_TOURNIER, 0, lmax, d, yv.data());
            for (int l = 0; l <= lmax; l += 2) {
                const size_t centre = (size_t)l * (l + 1) / 2;
                for (int m = -l; m <= l; ++m)
                    out[v * k + centre + m] += (float)(w * along_z[centre] / yz[centre] * yv[centre + m]);
            }
        }
    return out;
}

}  // namespace

TEST(ShBasisGuess, DipysDefaultOutputIsDescoteauxLegacy)
{
    const auto dipy = load_voxels("small_64D_fod_dipy_sh.npy");
    const auto g = guess(dipy, 8);
    EXPECT_EQ(g.usable_voxels, 1000u);
    EXPECT_EQ(g.sampled_voxels, 1000u);
    expect_guessed(g, kBases[3], "DIPY's CSD");
    // what the issue saw: read as MRtrix3's (tk-fibers' default), the data say otherwise clearly
    EXPECT_GE(tk_sh_basis_evidence(&g, TK_SH_TOURNIER, 0), 2.0);
}

TEST(ShBasisGuess, MrtrixOutputIsTournier)
{
    const auto g = guess(load_voxels("small_64D_fod_mrtrix_sh.npy"), 8);
    expect_guessed(g, kBases[0], "MRtrix3's dwi2fod");
    EXPECT_GE(tk_sh_basis_evidence(&g, TK_SH_DESCOTEAUX, 1), 2.0);
}

// The same ODFs written in each of the four bases: the guess follows the data.
TEST(ShBasisGuess, FollowsTheDataIntoEveryBasis)
{
    const struct {
        const char *file;
        Basis basis;
    } sources[2] = {{"small_64D_fod_dipy_sh.npy", kBases[3]}, {"small_64D_fod_mrtrix_sh.npy", kBases[0]}};
    for (const auto &source : sources) {
        const auto sh = load_voxels(source.file);
        for (const Basis &to : kBases)
            expect_guessed(guess(convert(sh, 8, source.basis, to), 8), to, source.file);
    }
}

// Lower degrees carry less shape; lmax 4 still tells the bases apart.
TEST(ShBasisGuess, WorksAtLmax4)
{
    for (const char *file : {"small_64D_fod_dipy_sh.npy", "small_64D_fod_mrtrix_sh.npy"}) {
        const auto sh = load_voxels(file);
        std::vector<float> l4;
        for (size_t v = 0; v < sh.size() / 45; ++v) l4.insert(l4.end(), sh.begin() + v * 45, sh.begin() + v * 45 + 15);
        const Basis &truth = std::string(file).find("dipy") != std::string::npos ? kBases[3] : kBases[0];
        expect_guessed(guess(l4, 4), truth, std::string(file) + " cut to lmax 4");
    }
}

TEST(ShBasisGuess, NoiseFreeFibersInEveryBasis)
{
    for (int lmax : {4, 8, 12}) {
        const auto sh = noise_free_fibers(lmax, 200, 7);
        for (const Basis &to : kBases)
            expect_guessed(guess(to.basis == TK_SH_TOURNIER && !to.legacy ? sh : convert(sh, lmax, kBases[0], to), lmax),
                           to, "noise-free fibers, lmax " + std::to_string(lmax));
    }
}

// A whole-brain volume is mostly background: zeros, and here NaN and negative-mean voxels,
// are skipped, so the padded volume scores exactly as its brain voxels alone.
TEST(ShBasisGuess, SkipsBackgroundAndNonFiniteVoxels)
{
    const auto dipy = load_voxels("small_64D_fod_dipy_sh.npy");
    std::vector<float> padded(20 * dipy.size(), 0.0f);
    for (size_t v = 0; v < 1000; ++v) std::copy(dipy.begin() + v * 45, dipy.begin() + (v + 1) * 45, padded.begin() + 20 * v * 45);
    padded[45 * 3 + 7] = NAN;         // a voxel with one bad coefficient
    padded[45 * 5] = -1.0f;           // a negative mean
    padded[45 * 9 + 2] = INFINITY;
    const auto alone = guess(dipy, 8), g = guess(padded, 8);
    EXPECT_EQ(g.usable_voxels, 1000u);
    EXPECT_EQ(g.sampled_voxels, 1000u);
    for (int c = 0; c < 4; ++c) EXPECT_EQ(g.score[c], alone.score[c]) << c;
    expect_guessed(g, kBases[3], "DIPY's CSD padded with background");

    // nothing usable: no guess, and no contradiction of any basis
    std::vector<float> background(45 * 500, 0.0f);
    background[45 * 10] = NAN;
    const auto none = guess(background, 8);
    EXPECT_EQ(none.usable_voxels, 0u);
    EXPECT_EQ(none.sampled_voxels, 0u);
    EXPECT_EQ(none.confidence, 1.0);
    for (const Basis &b : kBases) EXPECT_FALSE(tk_sh_basis_contradicts(&none, b.basis, b.legacy)) << b.name;
}

// The cost stays small: a bounded, evenly spread sample decides as the whole volume does,
// and too few voxels decide nothing.
TEST(ShBasisGuess, SamplesFewVoxels)
{
    EXPECT_EQ(tk_sh_guess_default_samples(8), 1000u);
    EXPECT_LT(tk_sh_guess_default_samples(16), 500u);
    EXPECT_GE(tk_sh_guess_default_samples(16), 100u);
    const auto dipy = load_voxels("small_64D_fod_dipy_sh.npy");
    const auto g = guess(dipy, 8, 64);
    EXPECT_EQ(g.usable_voxels, 1000u);
    EXPECT_EQ(g.sampled_voxels, 64u);
    expect_guessed(g, kBases[3], "DIPY's CSD, 64 voxels");
    const auto few = guess(dipy, 8, TK_SH_GUESS_MIN_VOXELS - 1);
    EXPECT_EQ(few.basis, TK_SH_DESCOTEAUX);
    EXPECT_FALSE(tk_sh_basis_contradicts(&few, TK_SH_TOURNIER, 0)) << "too few voxels to contradict anything";
}

TEST(ShBasisGuess, RejectsBadArguments)
{
    tk_sh_basis_guess g;
    const float sh[45] = {1.0f};
    EXPECT_EQ(tk_sh_guess_basis(7, 1, sh, 0, &g), TK_ERR_ARGUMENT);
    EXPECT_EQ(tk_sh_guess_basis(TK_SH_MAX_LMAX + 2, 1, sh, 0, &g), TK_ERR_ARGUMENT);
    EXPECT_EQ(tk_sh_guess_basis(8, 1, nullptr, 0, &g), TK_ERR_ARGUMENT);
    EXPECT_EQ(tk_sh_guess_basis(8, 1, sh, 0, nullptr), TK_ERR_ARGUMENT);
}
