// tk-fibers: fiber directions of a spherical-harmonic volume, in sh2peaks' output layout.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

#include "cli.h"
#include "tk_fibers_xml.h"
#include "itkCommand.h"
#include "itkFiberDirectionsImageFilter.h"
#include "sh_image_io.h"

namespace {

const char *prog = "tk-fibers";

void usage(FILE *f)
{
    std::fprintf(f,
                 "usage: tk-fibers INPUT_SH OUTPUT_PEAKS [options]\n"
                 "       tk-fibers --xml    the 3D Slicer CLI module description (SlicerExecutionModel)\n"
                 "\n"
                 "The local maxima (fiber directions) of each voxel's spherical-harmonic function, as\n"
                 "MRtrix3's sh2peaks writes them: 3 volumes per peak, the unit direction (world RAS) times\n"
                 "the peak's amplitude, sorted by amplitude, NaN where a voxel has fewer peaks.\n"
                 "INPUT_SH: 4-D NIfTI with the even-degree SH coefficients on the 4th axis (MRtrix3's\n"
                 "dwi2fod, DIPY's CSD), or a 3-D vector image ITK reads (NRRD, MHA); lmax follows from\n"
                 "the number of coefficients (6, 15, 28, 45, ...).\n"
                 "\n"
                 "options:\n"
                 "  --num N                 peaks per voxel (default 3)\n"
                 "  --threshold A           keep peaks with amplitude > A (default 0)\n"
                 "  --relative-threshold R  keep peaks >= R times the voxel's largest (default 0)\n"
                 "  --min-separation DEG    drop a peak within DEG degrees of a larger one (default 0)\n"
                 "  --mask MASK             only voxels where MASK is non-zero (others NaN)\n"
                 "  --basis tournier|descoteaux  MRtrix3's (default) or DIPY's SH basis\n"
                 "  --legacy                MRtrix 0.2 / DIPY legacy variant of the basis\n"
                 "  --amplitudes AMP        also write the amplitudes, one volume per peak\n"
                 "  --backend cpu|omp|cuda  (default omp: all cores through ITK's threader)\n"
                 "  --quiet                 no progress bar or warnings\n");
}

struct Args {
    std::string input, output, mask, amplitudes;
    long num = 3;
    double threshold = 0, relative = 0, separation = 0;
    bool descoteaux = false, legacy = false, quiet = false;
    std::string backend = "omp";
};

int parse(int argc, char **argv, Args &a)
{
    int positional = 0;
    for (int i = 1; i < argc; ++i) {
        const char *arg = argv[i], *v = nullptr;
        if (!std::strcmp(arg, "--help") || !std::strcmp(arg, "-h")) {
            usage(stdout);
            std::exit(0);
        } else if (tk_cli_is(arg, "--num")) {
            if (!(v = tk_cli_value(prog, argc, argv, &i, "--num")) || !tk_cli_parse_int(prog, "--num", v, 1, 64, &a.num))
                return 0;
        } else if (tk_cli_is(arg, "--threshold")) {
            if (!(v = tk_cli_value(prog, argc, argv, &i, "--threshold")) ||
                !tk_cli_parse_double(prog, "--threshold", v, -1e300, 1e300, &a.threshold))
                return 0;
        } else if (tk_cli_is(arg, "--relative-threshold")) {
            if (!(v = tk_cli_value(prog, argc, argv, &i, "--relative-threshold")) ||
                !tk_cli_parse_double(prog, "--relative-threshold", v, 0, 1, &a.relative))
                return 0;
        } else if (tk_cli_is(arg, "--min-separation")) {
            if (!(v = tk_cli_value(prog, argc, argv, &i, "--min-separation")) ||
                !tk_cli_parse_double(prog, "--min-separation", v, 0, 90, &a.separation))
                return 0;
        } else if (tk_cli_is(arg, "--mask")) {
            if (!(v = tk_cli_value(prog, argc, argv, &i, "--mask"))) return 0;
            a.mask = v;
        } else if (tk_cli_is(arg, "--amplitudes")) {
            if (!(v = tk_cli_value(prog, argc, argv, &i, "--amplitudes"))) return 0;
            a.amplitudes = v;
        } else if (tk_cli_is(arg, "--basis")) {
            if (!(v = tk_cli_value(prog, argc, argv, &i, "--basis"))) return 0;
            if (std::strcmp(v, "tournier") && std::strcmp(v, "descoteaux")) {
                tk_cli_error(prog, "--basis expects tournier or descoteaux, got '%s'", v);
                return 0;
            }
            a.descoteaux = !std::strcmp(v, "descoteaux");
        } else if (tk_cli_is(arg, "--backend")) {
            if (!(v = tk_cli_value(prog, argc, argv, &i, "--backend"))) return 0;
            a.backend = v;
            if (a.backend != "cpu" && a.backend != "omp" && a.backend != "cuda") {
                tk_cli_error(prog, "--backend expects cpu, omp or cuda, got '%s'", v);
                return 0;
            }
        } else if (!std::strcmp(arg, "--legacy")) {
            a.legacy = true;
        } else if (!std::strcmp(arg, "--quiet") || !std::strcmp(arg, "-q")) {
            a.quiet = true;
        } else if (arg[0] == '-' && arg[1] != '\0') {
            tk_cli_error(prog, "unknown option '%s' (see --help)", arg);
            return 0;
        } else if (positional == 0) {
            a.input = arg, ++positional;
        } else if (positional == 1) {
            a.output = arg, ++positional;
        } else {
            tk_cli_error(prog, "unexpected argument '%s' (see --help)", arg);
            return 0;
        }
    }
    if (positional != 2) {
        tk_cli_error(prog, "need INPUT_SH and OUTPUT_PEAKS (see --help)");
        return 0;
    }
    return 1;
}

}  // namespace

int main(int argc, char **argv)
{
    if (tk_xml_requested(argc, argv)) return tk_xml_print(stdout, &tk_fibers_xml) ? 0 : TK_EXIT_FAILURE;
    Args a;
    if (!parse(argc, argv, a)) return TK_EXIT_USAGE;
    try {
        auto sh = tk::read_vector_volume(a.input);
        const unsigned comps = sh->GetNumberOfComponentsPerPixel();
        if (tk_sh_lmax_for_count(comps) < 2 || tk_sh_lmax_for_count(comps) > TK_SH_MAX_LMAX)
            throw std::runtime_error(a.input + ": " + std::to_string(comps) +
                                     " volumes is no even-degree SH size (6, 15, 28, 45, 66, 91, 120, 153)");
        using Filter = itk::FiberDirectionsImageFilter<>;
        auto filter = Filter::New();
        filter->SetInput(sh);
        if (!a.mask.empty()) {
            auto mask = tk::read_mask(a.mask);
            if (mask->GetLargestPossibleRegion().GetSize() != sh->GetLargestPossibleRegion().GetSize())
                throw std::runtime_error(a.mask + ": the mask's size differs from the SH volume's");
            mask->SetOrigin(sh->GetOrigin());  // same grid; tolerate header rounding
            mask->SetSpacing(sh->GetSpacing());
            mask->SetDirection(sh->GetDirection());
            filter->SetMaskImage(mask);
        }
        filter->SetNumberOfPeaks(static_cast<unsigned>(a.num));
        filter->SetThreshold(a.threshold);
        filter->SetRelativeThreshold(a.relative);
        filter->SetMinimumSeparationAngle(a.separation);
        filter->SetBasis(a.descoteaux ? Filter::BasisType::Descoteaux : Filter::BasisType::Tournier);
        filter->SetLegacy(a.legacy);
        filter->SetBackend(a.backend == "cuda" ? Filter::BackendType::CUDA : Filter::BackendType::CPU);
        if (a.backend == "cpu") filter->SetNumberOfWorkUnits(1);
        tk_progress bar;
        tk_progress_begin(&bar, prog, 1000, a.quiet);
        auto progress = itk::CStyleCommand::New();
        progress->SetClientData(&bar);
        progress->SetCallback([](itk::Object *caller, const itk::EventObject &, void *data) {
            auto *b = static_cast<tk_progress *>(data);
            size_t done = static_cast<size_t>(static_cast<itk::ProcessObject *>(caller)->GetProgress() * 1000);
            if (done > b->done) tk_progress_advance(b, done - b->done);
        });
        filter->AddObserver(itk::ProgressEvent(), progress);
        filter->Update();
        tk_progress_end(&bar);
        if (filter->GetNumberOfInvalidVoxels() && !a.quiet)
            std::fprintf(stderr, "%s: warning: %lu voxels have non-finite coefficients; their peaks are NaN\n", prog,
                         static_cast<unsigned long>(filter->GetNumberOfInvalidVoxels()));
        tk::write_vector_volume(filter->GetOutput(), a.output);
        if (!a.amplitudes.empty()) {
            try {
                tk::write_vector_volume(filter->GetAmplitudeOutput(), a.amplitudes);
            } catch (...) {
                std::remove(a.output.c_str());  // all outputs or none
                throw;
            }
        }
    } catch (const itk::ExceptionObject &e) {  // before std::exception, which it derives from
        tk_cli_error(prog, "%s", e.GetDescription());
        return TK_EXIT_FAILURE;
    } catch (const std::exception &e) {
        tk_cli_error(prog, "%s", e.what());
        return TK_EXIT_FAILURE;
    }
    return 0;
}
