#include "sh_basis_warning.h"

#include "itkImageIOFactory.h"
#include "itkMetaDataObject.h"
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

// MRtrix3 (mrconvert, dwi2fod) writes "MRtrix version: 3.0.3" into a NIfTI's description
// (ITK: ITK_FileNotes); its SH are tournier07, non-legacy, the one choice the data cannot tell
// from the legacy scale.  Returns that description, or "" where the header says nothing of
// the kind (DIPY writes nothing).
std::string mrtrix3_description(const std::string &path)
{
    try {
        auto io = itk::ImageIOFactory::CreateImageIO(path.c_str(), itk::ImageIOFactory::FileModeEnum::ReadMode);
        if (!io || std::string(io->GetNameOfClass()) != "NiftiImageIO") return "";
        io->SetFileName(path);
        io->ReadImageInformation();
        std::string notes;
        if (!itk::ExposeMetaData<std::string>(io->GetMetaDataDictionary(), "ITK_FileNotes", notes)) return "";
        const std::string tag = "MRtrix version: ";
        if (notes.compare(0, tag.size(), tag) != 0) return "";
        const std::string version = notes.substr(tag.size());
        return version.compare(0, 2, "3.") == 0 || version.compare(0, 4, "0.3.") == 0 ? notes : "";
    } catch (const itk::ExceptionObject &) {
        return "";  // the reader reports unreadable files; this is only a hint
    }
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
    // The header only where the data agree that it is tournier (or cannot tell): mrconvert
    // also stamps its description on DIPY's files it merely converted.
    if ((descoteaux || legacy) && g.basis == TK_SH_TOURNIER) {
        const std::string writer = mrtrix3_description(path);
        if (!writer.empty()) {
            std::fprintf(err,
                         "%s: warning: %s was written by MRtrix3 (its description says '%s'), whose SH basis is "
                         "tournier07, not the given %s: its peaks would be wrong; rerun with --basis tournier and "
                         "without --legacy (--quiet silences this)\n",
                         prog, path.c_str(), writer.c_str(), given_flags(descoteaux, legacy).c_str());
            return true;
        }
    }
    if (!tk_sh_basis_contradicts(&g, given, legacy)) return false;
    std::fprintf(err,
                 "%s: warning: %s looks like %s, not the given %s (which fits it %.1fx worse over %zu sampled "
                 "voxels): its peaks would be wrong; rerun with %s (--quiet silences this)\n",
                 prog, path.c_str(), describe(g.basis, g.legacy), given_flags(descoteaux, legacy).c_str(),
                 tk_sh_basis_evidence(&g, given, legacy), g.sampled_voxels, fixing_flags(g).c_str());
    return true;
}

}  // namespace tk
