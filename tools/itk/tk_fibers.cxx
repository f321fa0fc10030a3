// tk-fibers: fiber directions of a spherical-harmonic volume, in sh2peaks' output layout.
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "cli.h"
#include "cli_failure.h"
#include "tk_fibers_options.h"
#include "itk_progress_bar.h"
#include "itkFiberDirectionsImageFilter.h"
#include "image_grid.h"
#include "sh_image_io.h"
#include "sh_basis_warning.h"
#ifdef TK_HAVE_VTK
#include "tkFiberGlyphOutput.h"
#include "tkPeaksToPolyData.h"
#endif

namespace {

const char *prog = "tk-fibers";

struct Args {
    std::string input, output, mask, amplitudes, vtp, png;
    long num = 3, slice = -1, threads = 0;
    int gpus = 0;
    bool gpus_given = false;
    double threshold = 0, relative = 0, separation = 0, glyph_scale = 0;
    bool descoteaux = false, legacy = false, quiet = false;
    tk_backend backend = TK_BACKEND_AUTO;
    tk_standard_values standard{};
};

int parse(int argc, char **argv, Args &a)
{
    tk_fibers_values v;
    tk_fibers_values_init(&v);
    tk_parsed parsed;
    if (!tk_cli_parse_options(&tk_fibers_command, argc, argv, 1, &v, &parsed)) return 0;
    if (parsed.num_positional != 2) {
        tk_cli_error(prog, "INPUT_SH and OUTPUT_PEAKS are required; give both (see --help)");
        return 0;
    }
    a.input = parsed.positional[0];
    a.output = parsed.positional[1];
    const auto text = [](const char *t) { return std::string(t ? t : ""); };
    a.mask = text(v.mask), a.amplitudes = text(v.amplitudes), a.vtp = text(v.vtp), a.png = text(v.png);
    a.num = v.num, a.slice = v.slice, a.threads = v.std.threads;
    a.threshold = v.threshold, a.relative = v.relative, a.separation = v.separation, a.glyph_scale = v.glyph_scale;
    a.descoteaux = v.descoteaux != 0, a.legacy = v.legacy != 0, a.quiet = v.std.quiet != 0;
    a.backend = v.std.backend;
    a.standard = v.std;
    a.gpus = v.gpus, a.gpus_given = tk_cli_given(&tk_fibers_command, &parsed, "gpus") != 0;
#ifndef TK_HAVE_VTK
    if (!a.vtp.empty() || !a.png.empty()) {
        tk_cli_error(prog, "%s needs VTK, and this tk-fibers was built without it; build it with VTK "
                     "(-DTK_WITH_VTK=ON, Debian: libvtk9-dev)", a.vtp.empty() ? "--png" : "--vtp");
        return 0;
    }
#endif
    if (a.glyph_scale > 0 && a.vtp.empty() && a.png.empty()) {
        tk_cli_error(prog, "--glyph-scale only applies with --vtp or --png; add one of them, or drop --glyph-scale");
        return 0;
    }
    if (a.slice >= 0 && a.png.empty()) {
        tk_cli_error(prog, "--slice only applies with --png; add --png, or drop --slice");
        return 0;
    }
    return 1;
}

bool ends_with(const std::string &s, const char *suffix)
{
    const size_t n = std::strlen(suffix);
    return s.size() > n && s.compare(s.size() - n, n, suffix) == 0;
}

// The folder and name of a path as the system resolves them (a link or "./" names the same
// file), for telling two outputs apart before either exists.
std::string resolved(const std::string &path)
{
    const size_t slash = path.find_last_of('/');
    const std::string folder = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
    char buf[PATH_MAX];
    return (realpath(folder.c_str(), buf) ? std::string(buf) : folder) + "/" + path.substr(slash + 1);
}

// Every output, before any work: a format tk-fibers writes (by its extension), a folder
// that exists and takes a new file now, not a directory, not an input, no two the same.
// 0, or the exit code after a message naming the flag and the file.
int check_outputs(const Args &a)
{
    struct Output {
        const char *flag;
        const std::string *path;
        const char *extension;  // the one a glyph output takes; null for a volume
    };
    const Output outputs[] = {{"OUTPUT_PEAKS", &a.output, nullptr},
                              {"--amplitudes", &a.amplitudes, nullptr},
                              {"--vtp", &a.vtp, ".vtp"},
                              {"--png", &a.png, ".png"}};
    const char *inputs[] = {a.input.c_str(), a.mask.empty() ? nullptr : a.mask.c_str(), nullptr};
    for (const Output &o : outputs)  // a directory, an input, a folder missing or not writable
        if (!o.path->empty())
            if (int bad = tk_cli_check_output(prog, o.path->c_str(), 0, inputs)) return bad;
    for (const Output &o : outputs) {
        if (o.path->empty()) continue;
        if (o.extension ? !ends_with(*o.path, o.extension) : !tk::volume_output_problem(*o.path).empty()) {
            tk_cli_error(prog,
                         "%s %s: unknown output format (by its extension); give a name ending in %s (what %s writes)",
                         o.flag, o.path->c_str(), o.extension ? o.extension : tk::volume_output_extensions(), o.flag);
            return TK_EXIT_USAGE;
        }
    }
    // no two outputs, or an output and an input, share a file (a detached header's data file
    // included: peaks.nhdr and peaks.mhd both write peaks.raw)
    std::vector<std::pair<const char *, std::string>> written, read;
    for (const Output &o : outputs)
        if (!o.path->empty())
            for (const std::string &f : o.extension ? std::vector<std::string>{*o.path} : tk::volume_files(*o.path))
                written.emplace_back(o.flag, resolved(f));
    for (const std::string *in : {&a.input, &a.mask})
        if (!in->empty())
            for (const std::string &f : tk::volume_files(*in)) read.emplace_back(in->c_str(), resolved(f));
    for (size_t i = 0; i < written.size(); ++i) {
        for (size_t j = 0; j < i; ++j)
            if (written[i].second == written[j].second) {
                tk_cli_error(prog, "%s and %s would go to the same file '%s'; give each output its own path",
                             written[j].first, written[i].first,
                             written[i].second.substr(written[i].second.find_last_of('/') + 1).c_str());
                return TK_EXIT_USAGE;
            }
        for (const auto &in : read)
            if (written[i].second == in.second) {
                tk_cli_error(prog, "%s would write %s, a file of the input %s: refusing to overwrite an input; choose "
                             "another output path",
                             written[i].first, in.second.substr(in.second.find_last_of('/') + 1).c_str(), in.first);
                return TK_EXIT_USAGE;
            }
    }
    for (const Output &o : outputs) {
        if (o.path->empty()) continue;
        const std::string why = tk::creation_problem(*o.path);  // e.g. /proc, which access() calls writable
        if (!why.empty()) {
            tk_cli_error(prog, "%s; choose a folder you can write to", why.c_str());
            return TK_EXIT_FAILURE;
        }
    }
    for (const Output &o : outputs)  // last: the problems above say more than "exists"
        if (int bad = tk_cli_refuse_existing(prog, &a.standard, o.path->empty() ? nullptr : o.path->c_str(), 0))
            return bad;
    return 0;
}

// Every output of the call in one output set (tk_output_set.h): registered before any work
// (checked against the inputs and each other by path and by inode), written as temporaries
// and renamed together at the end, so that a failure leaves none of them.  Indices, or
// minus an exit code after the set's message.
struct Outputs {
    std::unique_ptr<tk_outset, void (*)(tk_outset *)> set{tk_outset_new(prog), tk_outset_free};
    int peaks = -1, amplitudes = -1, vtp = -1, png = -1;
};

int register_outputs(const Args &a, Outputs &o)
{
    if (!o.set) {
        tk_cli_error(prog, "out of memory; free memory and run again");
        return TK_EXIT_FAILURE;
    }
    for (const std::pair<const char *, const std::string *> &in : {std::make_pair("INPUT_SH", &a.input),
                                                                  std::make_pair("--mask", &a.mask)})
        if (!in.second->empty())
            for (const std::string &f : tk::volume_files(*in.second))
                if (int bad = tk_outset_input(o.set.get(), in.first, f.c_str())) return bad;
    if ((o.peaks = tk::add_volume_output(o.set.get(), "OUTPUT_PEAKS", a.output)) < 0) return -o.peaks;
    if (!a.amplitudes.empty() && (o.amplitudes = tk::add_volume_output(o.set.get(), "--amplitudes", a.amplitudes)) < 0)
        return -o.amplitudes;
    if (!a.vtp.empty() && (o.vtp = tk_outset_add(o.set.get(), "--vtp", a.vtp.c_str(), nullptr)) < 0) return -o.vtp;
    if (!a.png.empty() && (o.png = tk_outset_add(o.set.get(), "--png", a.png.c_str(), nullptr)) < 0) return -o.png;
    return 0;
}

#ifdef TK_HAVE_VTK
// The glyphs' view of the filter's outputs: ITK's geometry is LPS, the directions (and the
// glyphs) are RAS, so voxel-to-RAS = diag(-1, -1, 1) (origin + direction * spacing * ijk).
tk::PeaksImage peaks_view(const tk::VectorImage3 *peaks, const tk::VectorImage3 *amplitudes)
{
    tk::PeaksImage im;
    im.peaks = peaks->GetBufferPointer();
    im.amplitudes = amplitudes->GetBufferPointer();
    im.num_peaks = amplitudes->GetNumberOfComponentsPerPixel();
    const auto size = peaks->GetLargestPossibleRegion().GetSize();
    for (int r = 0; r < 3; ++r) {
        const double flip = r < 2 ? -1.0 : 1.0;
        im.size[r] = size[r];
        for (int c = 0; c < 3; ++c) im.ijk_to_ras[4 * r + c] = flip * peaks->GetDirection()[r][c] * peaks->GetSpacing()[c];
        im.ijk_to_ras[4 * r + 3] = flip * peaks->GetOrigin()[r];
    }
    return im;
}
#endif

}  // namespace

int main(int argc, char **argv)
{
    if (tk_xml_requested(argc, argv)) return tk_cli_print_xml(stdout, &tk_fibers_command) ? 0 : TK_EXIT_FAILURE;
    Args a;
    if (!parse(argc, argv, a)) return TK_EXIT_USAGE;
    if (int bad = check_outputs(a)) return bad;
    Outputs out;
    if (int bad = register_outputs(a, out)) return bad;
    try {
#ifdef TK_HAVE_VTK
        if (!a.png.empty()) {  // before any work: no display, no outputs at all
            std::string why = tk::RenderUnavailableReason();
            if (!why.empty())
                throw std::runtime_error(a.png + ": cannot render: " + why +
                                         "; run under Xvfb, e.g. `xvfb-run -a tk-fibers ...`");
        }
#endif
        tk::FileGeometry geometry;  // a NIfTI input's qform and sform, kept on NIfTI outputs
        auto sh = tk::read_vector_volume(a.input, &geometry);
        const unsigned comps = sh->GetNumberOfComponentsPerPixel();
        if (tk_sh_lmax_for_count(comps) < 2 || tk_sh_lmax_for_count(comps) > TK_SH_MAX_LMAX)
            throw std::runtime_error(a.input + ": " + std::to_string(comps) +
                                     " volumes is no even-degree SH size (6, 15, 28, 45, 66, 91, 120, 153); give an SH image with one of those numbers of volumes");
        if (!a.quiet) tk::warn_if_other_basis(stderr, prog, a.input, sh, a.descoteaux, a.legacy);
#ifdef TK_HAVE_VTK
        if (!a.png.empty() && a.slice >= 0) {
            tk::PeaksImage geometry;  // the slice axis follows from the orientation alone
            const auto size = sh->GetLargestPossibleRegion().GetSize();
            for (int r = 0; r < 3; ++r)
                for (int c = 0; c < 3; ++c)
                    geometry.ijk_to_ras[4 * r + c] = (r < 2 ? -1.0 : 1.0) * sh->GetDirection()[r][c] * sh->GetSpacing()[c];
            const int axis = tk::AxialAxis(geometry.ijk_to_ras);
            if (static_cast<unsigned long>(a.slice) >= size[axis]) {
                tk_cli_error(prog, "--slice %ld is outside the axial slices of %s; give one from 0 to %lu", a.slice, a.input.c_str(),
                             static_cast<unsigned long>(size[axis]) - 1);
                return TK_EXIT_USAGE;
            }
        }
#endif
        tk_backend run;
        if (!tk_cli_resolve_backend(prog, a.backend, a.standard.device, TK_BACKEND_OMP, a.quiet, &run)) return TK_EXIT_FAILURE;
        int gpus = 1;
        if (!tk_cli_resolve_gpus(prog, a.gpus, a.gpus_given, a.backend, run, a.standard.device, &gpus)) return TK_EXIT_USAGE;
        using Filter = itk::FiberDirectionsImageFilter<>;
        auto filter = Filter::New();
        filter->SetInput(sh);
        if (!a.mask.empty()) {
            auto mask = tk::read_mask(a.mask);
            tk::require_same_grid(sh, a.input, mask, a.mask);  // the same voxels, not just as many
            filter->SetMaskImage(mask);
        }
        filter->SetNumberOfPeaks(static_cast<unsigned>(a.num));
        filter->SetThreshold(a.threshold);
        filter->SetRelativeThreshold(a.relative);
        filter->SetMinimumSeparationAngle(a.separation);
        filter->SetBasis(a.descoteaux ? Filter::BasisType::Descoteaux : Filter::BasisType::Tournier);
        filter->SetLegacy(a.legacy);
        filter->SetBackend(run == TK_BACKEND_CUDA ? Filter::BackendType::CUDA : Filter::BackendType::CPU);
        filter->SetCudaDevice(static_cast<unsigned>(a.standard.device));
        filter->SetNumberOfCudaDevices(static_cast<unsigned>(gpus));
        if (run == TK_BACKEND_CPU) {
            filter->SetNumberOfWorkUnits(1);
        } else {
            // ITK's threader runs at most `threads` pieces at once; the volume is cut into 16
            // pieces a thread, handed out as threads free up: a voxel's cost varies a
            // hundredfold (zero background, one fiber, three crossing), so one piece a thread
            // left a thread idle for a third of a whole-brain run
            const unsigned threads = a.threads > 0 ? static_cast<unsigned>(a.threads)
                                                   : filter->GetMultiThreader()->GetMaximumNumberOfThreads();
            if (a.threads > 0) filter->GetMultiThreader()->SetMaximumNumberOfThreads(static_cast<itk::ThreadIdType>(threads));
            filter->SetNumberOfWorkUnits(static_cast<itk::ThreadIdType>(16 * threads));
        }
        tk::update_with_progress(filter, prog, a.quiet);
        if (filter->GetNumberOfInvalidVoxels() && !a.quiet)
            std::fprintf(stderr, "%s: warning: %lu voxels have non-finite coefficients; their peaks are NaN\n", prog,
                         static_cast<unsigned long>(filter->GetNumberOfInvalidVoxels()));
        tk::write_vector_volume(filter->GetOutput(), out.set.get(), out.peaks, tk::Components::RasVectors, &geometry);
        if (out.amplitudes >= 0)
            tk::write_vector_volume(filter->GetAmplitudeOutput(), out.set.get(), out.amplitudes, tk::Components::Values,
                                    &geometry);
#ifdef TK_HAVE_VTK
        if (out.vtp >= 0 || out.png >= 0) {
            const tk::PeaksImage peaks = peaks_view(filter->GetOutput(), filter->GetAmplitudeOutput());
            tk::GlyphOptions glyphs;
            glyphs.scale = a.glyph_scale;
            if (out.vtp >= 0) tk::WritePolyDataXML(tk::PeaksToPolyData(peaks, glyphs), tk_outset_temp(out.set.get(), out.vtp, 0));
            if (out.png >= 0) {
                // the grey picture: each voxel's largest amplitude (the first; NaN where none)
                const size_t nvox = peaks.size[0] * peaks.size[1] * peaks.size[2];
                std::vector<float> largest(nvox);
                for (size_t v = 0; v < nvox; ++v) largest[v] = peaks.amplitudes[v * peaks.num_peaks];
                tk::SliceRenderOptions render;
                render.glyphs = glyphs;
                render.slice_index = a.slice;
                tk::RenderAxialSlicePNG(peaks, largest.data(), render, tk_outset_temp(out.set.get(), out.png, 0));
            }
        }
#endif
        if (tk_outset_commit(out.set.get()) != 0) return TK_EXIT_FAILURE;  // the set said why
    } catch (...) {
        // what() of std::bad_alloc is just "std::bad_alloc": say which work, and what to do
        return tk::report_failure(prog, a.input, tk::volume_out_of_memory(a.mask.empty()));
    }
    return 0;
}
