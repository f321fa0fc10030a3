#include "sh_basis_warning.h"

#include "tk_fibers.h"

namespace tk {

namespace {

const char *describe(tk_sh_basis basis, int legacy)
{
    if (basis == TK_SH_TOURNIER) return "MRtrix3's basis (tournier07)";
    return legacy ? "DIPY's default basis (descoteaux07, legacy)" : "DIPY's descoteaux07 basis (non-legacy)";
}

std::string given_flags(bool descoteaux, bool legacy)
{
    return std::string(descoteaux ? "--basis descoteaux" : "--basis tournier") + (legacy ? " --legacy" : "");
}

// The flags that read the guessed basis.  Tournier's two scales look alike in the data, so
// for tournier the fix is --basis tournier, --legacy only for MRtrix 0.2 / DIPY's legacy tournier07.
std::string fixing_flags(const tk_sh_basis_guess &g)
{
    if (g.basis == TK_SH_DESCOTEAUX) return g.legacy ? "--basis descoteaux --legacy" : "--basis descoteaux";
    return "--basis tournier (without --legacy, unless the data are MRtrix 0.2's or DIPY's legacy tournier07)";
}

}  // namespace

bool warn_if_other_basis(std::FILE *err, const char *prog, const std::string &path, const VectorImage3 *sh,
                         bool descoteaux, bool legacy)
{
    const int lmax = tk_sh_lmax_for_count(sh->GetNumberOfComponentsPerPixel());
    tk_sh_basis_guess g;
    if (tk_sh_guess_basis(lmax, sh->GetLargestPossibleRegion().GetNumberOfPixels(), sh->GetBufferPointer(), 0, &g) !=
        TK_OK)
        return false;  // no guess (cannot happen for a volume that passed the SH size check): nothing to say
    const tk_sh_basis given = descoteaux ? TK_SH_DESCOTEAUX : TK_SH_TOURNIER;
    if (!tk_sh_basis_contradicts(&g, given, legacy)) return false;
    std::fprintf(err,
                 "%s: warning: %s looks like %s, not the given %s (which fits it %.1fx worse over %zu sampled "
                 "voxels): its peaks would be wrong; rerun with %s (--quiet silences this)\n",
                 prog, path.c_str(), describe(g.basis, g.legacy), given_flags(descoteaux, legacy).c_str(),
                 tk_sh_basis_evidence(&g, given, legacy), g.sampled_voxels, fixing_flags(g).c_str());
    return true;
}

}  // namespace tk
