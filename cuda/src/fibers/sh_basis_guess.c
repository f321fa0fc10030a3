/* Which SH basis a volume of fiber ODFs was written in, from the data alone.
 *
 * The four conventions tk_fibers.h names span the same functions: their coefficients differ
 * by a signed permutation and a scale (m <-> -m, the sign of odd-m terms, sqrt2), so each
 * candidate's reading of a voxel is re-expressed in one reference basis (MRtrix3's) exactly
 * and evaluated on one dense half-sphere.  Read in the basis it was written in, a fiber ODF
 * is mostly positive and its lobes are roughly axially symmetric; read in another, the
 * coefficients are scrambled and the function grows negative lobes and loses that symmetry.
 * Each candidate's score over a sample of voxels is
 *   (negative mass / absolute mass) + (energy outside the best axially symmetric fit about
 *   the largest value / energy), both for l >= 2 where energy is concerned,
 * the lower the likelier.  Tournier's legacy scale (sqrt2 on m != 0) is no scramble: its
 * wrong reading of true data is a blend of the function and its z-axis average, which is as
 * positive and as symmetric as the function itself, so the data cannot tell the two apart
 * and the guess treats them as one class. */
#include "tk_fibers.h"

#include <math.h>
#include <stdlib.h>

#define TK_PI 3.14159265358979323846

/* Candidates in tk_sh_basis_guess.score's order: tournier, tournier legacy, descoteaux,
 * descoteaux legacy. */
enum { CANDIDATES = 4 };

static int candidate_index(tk_sh_basis basis, int legacy) { return (basis == TK_SH_DESCOTEAUX ? 2 : 0) + !!legacy; }

/* The classes the data can tell apart: tournier (either scale), descoteaux, descoteaux legacy. */
static int class_of(int candidate) { return candidate < 2 ? 0 : candidate - 1; }

static double class_score(const double *score, int cls)
{
    return cls == 0 ? fmin(score[0], score[1]) : score[cls + 1];
}

/* Coefficients c read in candidate k, re-expressed in MRtrix3's basis (tournier, non-legacy). */
static void to_reference(int k, int lmax, const float *c, double *ref)
{
    const double inv_sqrt2 = 1.0 / sqrt(2.0);
    for (int l = 0; l <= lmax; l += 2) {
        const size_t centre = (size_t)l * (size_t)(l + 1) / 2;
        ref[centre] = c[centre];
        for (int m = 1; m <= l; ++m) {
            const double plus = c[centre + (size_t)m], minus = c[centre - (size_t)m];
            switch (k) {
            case 0: ref[centre + (size_t)m] = plus, ref[centre - (size_t)m] = minus; break;
            case 1: ref[centre + (size_t)m] = plus * inv_sqrt2, ref[centre - (size_t)m] = minus * inv_sqrt2; break;
            /* descoteaux: +m holds the sin (Im) term, -m the cos (Re) term, (-1)^m in the
             * non-legacy variant (Y_l^-m rather than Y_l^|m|) */
            case 2: ref[centre - (size_t)m] = plus, ref[centre + (size_t)m] = (m % 2 ? -minus : minus); break;
            default: ref[centre - (size_t)m] = plus, ref[centre + (size_t)m] = minus; break;
            }
        }
    }
}

/* A voxel the guess can use: finite coefficients, not all zero (background), positive mean. */
static int usable(const float *c, size_t k)
{
    int nonzero = 0;
    for (size_t j = 0; j < k; ++j) {
        if (!isfinite(c[j])) return 0;
        nonzero |= c[j] != 0;
    }
    return nonzero && c[0] > 0;
}

size_t tk_sh_guess_default_samples(int lmax)
{
    const size_t k = tk_sh_num_coeffs(lmax), rows = 4 * (size_t)(lmax + 1) * (size_t)(lmax + 1);
    if (!k) return 0;
    const size_t budget = 60000000 / (k * rows); /* ~60 M multiply-adds per candidate: tens of ms */
    return budget < 1000 ? (budget < 100 ? 100 : budget) : 1000;
}

tk_status tk_sh_guess_basis(int lmax, size_t num_voxels, const float *sh, size_t max_samples, tk_sh_basis_guess *guess)
{
    if (!guess) return tk_set_error(TK_ERR_ARGUMENT, "guess is NULL");
    *guess = (tk_sh_basis_guess){.basis = TK_SH_TOURNIER, .confidence = 1.0};
    if (lmax < 2 || lmax % 2 || lmax > TK_SH_MAX_LMAX)
        return tk_set_error(TK_ERR_ARGUMENT, "lmax must be even and from 2 to %d, got %d", TK_SH_MAX_LMAX, lmax);
    if (num_voxels && !sh) return tk_set_error(TK_ERR_ARGUMENT, "sh is NULL");
    const size_t k = tk_sh_num_coeffs(lmax);
    if (!max_samples) max_samples = tk_sh_guess_default_samples(lmax);

    size_t count = 0;
    for (size_t v = 0; v < num_voxels; ++v) count += usable(sh + v * k, k);
    guess->usable_voxels = count;
    if (!count) return TK_OK;
    const size_t samples = count < max_samples ? count : max_samples;

    /* The upper half of a Fibonacci lattice of 8 (lmax+1)^2 points: even functions repeat
     * on the other half.  Spacing ~ 0.6 / (lmax+1) rad, a fraction of a lobe's width. */
    const size_t rows = 4 * (size_t)(lmax + 1) * (size_t)(lmax + 1), full = 2 * rows;
    double *basis = malloc(sizeof(double) * rows * k), *ref = malloc(sizeof(double) * k),
           *values = malloc(sizeof(double) * rows);
    tk_status status = TK_OK;
    if (!basis || !ref || !values) {
        status = tk_set_error(TK_ERR_MEMORY, "out of memory guessing the SH basis");
        goto done;
    }
    for (size_t i = 0; i < rows; ++i) {
        const double z = 1.0 - (2.0 * (double)i + 1.0) / (double)full, rho = sqrt(1.0 - z * z),
                     angle = (double)i * TK_PI * (3.0 - sqrt(5.0));
        const double dir[3] = {rho * cos(angle), rho * sin(angle), z};
        if ((status = tk_sh_eval(TK_SH_TOURNIER, 0, lmax, dir, basis + i * k)) != TK_OK) goto done;
    }

    double negative[CANDIDATES] = {0}, absolute[CANDIDATES] = {0}, residual[CANDIDATES] = {0}, energy[CANDIDATES] = {0};
    size_t seen = 0, taken = 0;
    for (size_t v = 0; v < num_voxels && taken < samples; ++v) {
        const float *c = sh + v * k;
        if (!usable(c, k)) continue;
        /* the taken-th of `samples` evenly spread usable voxels is usable voxel taken * count / samples */
        if (seen++ != (size_t)((double)taken * (double)count / (double)samples)) continue;
        ++taken;
        for (int cand = 0; cand < CANDIDATES; ++cand) {
            to_reference(cand, lmax, c, ref);
            size_t peak = 0;
            for (size_t i = 0; i < rows; ++i) {
                const double *y = basis + i * k;
                double f = 0;
                for (size_t j = 0; j < k; ++j) f += y[j] * ref[j];
                values[i] = f;
                if (f > values[peak]) peak = i;
                negative[cand] += f < 0 ? -f : 0;
                absolute[cand] += fabs(f);
            }
            /* The best axially symmetric fit about the peak u, per degree: k_l Y_l(u) (the
             * addition theorem in any orthonormal basis); what it leaves is the asymmetry. */
            const double *y = basis + peak * k;
            for (int l = 2; l <= lmax; l += 2) {
                const size_t first = (size_t)(l - 1) * (size_t)l / 2, last = first + 2 * (size_t)l;
                double cy = 0, yy = 0, cc = 0;
                for (size_t j = first; j <= last; ++j) cy += ref[j] * y[j], yy += y[j] * y[j], cc += ref[j] * ref[j];
                residual[cand] += yy > 0 ? fmax(0.0, cc - cy * cy / yy) : cc;
                energy[cand] += cc;
            }
        }
    }
    guess->sampled_voxels = taken;
    for (int cand = 0; cand < CANDIDATES; ++cand)
        guess->score[cand] = (absolute[cand] > 0 ? negative[cand] / absolute[cand] : 0) +
                             (energy[cand] > 0 ? residual[cand] / energy[cand] : 0);
    int best = 0;
    for (int cls = 1; cls < 3; ++cls)
        if (class_score(guess->score, cls) < class_score(guess->score, best)) best = cls;
    double second = INFINITY;
    for (int cls = 0; cls < 3; ++cls)
        if (cls != best) second = fmin(second, class_score(guess->score, cls));
    const double top = class_score(guess->score, best);
    guess->confidence = top > 0 ? second / top : (second > 0 ? INFINITY : 1.0);
    guess->basis = best == 0 ? TK_SH_TOURNIER : TK_SH_DESCOTEAUX;
    guess->legacy = best == 2;
    guess->legacy_known = best != 0;
done:
    free(basis);
    free(ref);
    free(values);
    return status;
}

double tk_sh_basis_evidence(const tk_sh_basis_guess *guess, tk_sh_basis basis, int legacy)
{
    if (!guess || guess->sampled_voxels < TK_SH_GUESS_MIN_VOXELS) return 1.0;
    const int given = class_of(candidate_index(basis, legacy));
    const int likeliest = class_of(candidate_index(guess->basis, guess->legacy));
    if (given == likeliest) return 1.0;
    const double top = class_score(guess->score, likeliest), mine = class_score(guess->score, given);
    return top > 0 ? mine / top : (mine > 0 ? INFINITY : 1.0);
}

int tk_sh_basis_contradicts(const tk_sh_basis_guess *guess, tk_sh_basis basis, int legacy)
{
    return tk_sh_basis_evidence(guess, basis, legacy) >= TK_SH_GUESS_MIN_RATIO;
}
