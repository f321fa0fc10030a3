// tk-fixels: fixels of an SH fiber ODF (the fixels core, fod2fixel's FMLS), written as the
// fixel directory MRtrix3 reads: index (X x Y x Z x 2, UInt32: count and offset), directions
// (N x 3 x 1) and one N x 1 x 1 Float32 file per metric, with the FOD's voxel size and
// transform, .mif or .nii by name; all through one output set (every file or none).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli.h"
#include "cli_failure.h"
#include "fixel_files.h"
#include "image_grid.h"
#include "sh_image_io.h"
#include "tk_fixels.h"
#include "tk_fixels_options.h"
#include "tk_output_set.h"
#ifdef TK_HAVE_VTK
#include "tkFiberGlyphOutput.h"
#include "tkPeaksToPolyData.h"
#endif

namespace {

const char *prog = "tk-fixels";

struct Args {
    std::string input, dir, mask, afd, peak_amp, disp, lobes, count_map, afd_map, vtp;
    tk_fixels_values v{};
};

bool ends_with(const std::string &s, const char *suffix)
{
    const size_t n = std::strlen(suffix);
    return s.size() > n && s.compare(s.size() - n, n, suffix) == 0;
}

int parse(int argc, char **argv, Args &a)
{
    tk_fixels_values_init(&a.v);
    tk_parsed parsed;
    if (!tk_cli_parse_options(&tk_fixels_command, argc, argv, 1, &a.v, &parsed)) return 0;
    a.v.gpus_given = tk_cli_given(&tk_fixels_command, &parsed, "gpus");
    if (parsed.num_positional != 2) {
        tk_cli_error(prog, "FOD and FIXEL_DIR are required; give both (see --help)");
        return 0;
    }
    a.input = parsed.positional[0], a.dir = parsed.positional[1];
    const auto text = [](const char *t) { return std::string(t ? t : ""); };
    a.mask = text(a.v.mask), a.afd = text(a.v.afd), a.peak_amp = text(a.v.peak_amp), a.disp = text(a.v.disp);
    a.lobes = text(a.v.lobes);
    a.count_map = text(a.v.count_map), a.afd_map = text(a.v.afd_map), a.vtp = text(a.v.vtp);
#ifndef TK_HAVE_VTK
    if (!a.vtp.empty()) {
        tk_cli_error(prog, "--vtp needs VTK, and this tk-fixels was built without it; build it with VTK "
                     "(-DTK_WITH_VTK=ON, Debian: libvtk9-dev)");
        return 0;
    }
#endif
    for (const auto &m : {std::make_pair("--count-map", &a.count_map), std::make_pair("--afd-map", &a.afd_map)})
        if (!m.second->empty() && !tk::volume_output_problem(*m.second).empty()) {
            tk_cli_error(prog, "%s %s: unknown output format (by its extension); give a name ending in %s", m.first,
                         m.second->c_str(), tk::volume_output_extensions());
            return 0;
        }
    if (!a.vtp.empty() && !ends_with(a.vtp, ".vtp")) {
        tk_cli_error(prog, "--vtp %s: give a name ending in .vtp", a.vtp.c_str());
        return 0;
    }
    for (const auto &m :
         {std::make_pair("--afd", &a.afd), std::make_pair("--peak-amp", &a.peak_amp), std::make_pair("--disp", &a.disp),
          std::make_pair("--lobes", &a.lobes)}) {
        if (m.second->empty()) continue;
        if (m.second->find('/') != std::string::npos || !(ends_with(*m.second, ".mif") || ends_with(*m.second, ".nii"))) {
            tk_cli_error(prog, "%s %s: give a file name inside FIXEL_DIR ending in .mif or .nii (as fod2fixel takes it)",
                         m.first, m.second->c_str());
            return 0;
        }
    }
    return 1;
}

tk::FixelGeometry geometry_of(const tk::VectorImage3 *im)
{
    tk::FixelGeometry g{};
    const auto size = im->GetLargestPossibleRegion().GetSize();
    for (int r = 0; r < 3; ++r) {
        const double flip = r < 2 ? -1.0 : 1.0;  // ITK's LPS to MRtrix3's RAS
        g.dim[r] = size[r], g.vox[r] = im->GetSpacing()[r], g.origin[r] = flip * im->GetOrigin()[r];
        for (int c = 0; c < 3; ++c) g.rot[r][c] = flip * im->GetDirection()[r][c];
    }
    return g;
}

// --lobes' direction set beside its masks: MRtrix3's direction-file convention (sh2amp's
// DIRECTIONS argument), one unit "x y z" a row in the frame of the FOD's SH coefficients.
const char *const kLobeDirections = "lobe_directions.txt";

// Files of an old fixel directory that --force replaces: its images (index, directions and
// every metric, fod2fixel's and ours); anything else (a user's notes) stays.
int old_fixel_file(const char *name)
{
    const std::string n(name);
    for (const char *e : {".mif", ".nii", ".mif.gz", ".nii.gz", ".mih"})
        if (ends_with(n, e)) return 1;
    return n == kLobeDirections;
}

// FIXEL_DIR/lobe_directions.txt (output idx's file k): the set's directions, in the order of
// the masks' second axis.
void write_lobe_directions(tk_outset *set, int idx, int k, const std::string &path, const std::string &lobes,
                           int count)
{
    std::string text = "# tk-fixels: the " + std::to_string(count) + " sphere directions of the lobe masks " + lobes +
                       " (row d: axis d of its second dimension), unit x y z in the frame of the FOD's SH "
                       "coefficients and of directions.mif\n";
    const double *dirs = nullptr;
    if (tk_fixels_direction_set(count, &dirs, nullptr) != TK_OK) throw std::runtime_error(tk_last_error());
    char row[96];
    for (size_t d = 0; d < (size_t)count; ++d) {
        std::snprintf(row, sizeof row, "%.9f %.9f %.9f\n", dirs[3 * d], dirs[3 * d + 1], dirs[3 * d + 2]);
        text += row;
    }
    tk::write_fixel_file(set, idx, k, path, text, nullptr, 0);
}

// Why a run found no fixel anywhere (fod2fixel writes nothing then either), and what to do.
std::string no_fixels_message(const Args &a, size_t bad, const std::vector<uint8_t> &mask, size_t nvox)
{
    size_t selected = nvox;
    if (!mask.empty()) {
        selected = 0;
        for (uint8_t m : mask) selected += m != 0;
        if (!selected)
            return "--mask " + a.mask + ": no voxel is non-zero, so there are no fixels at all; give a mask that "
                   "selects the voxels to segment";
    }
    if (bad == selected)
        return a.input + ": every voxel has non-finite coefficients (NaN or Inf), so there are no fixels at all; "
               "check the FOD";
    char threshold[64];
    std::snprintf(threshold, sizeof threshold, "%g", a.v.no_thresholds ? 0.0 : a.v.peak_value);
    return a.input + ": no lobe of any voxel reaches the thresholds (--fmls-peak-value " + threshold +
           "), so there are no fixels at all; check the FOD (its scale and basis), or lower --fmls-peak-value";
}

}  // namespace

int main(int argc, char **argv)
{
    if (tk_xml_requested(argc, argv)) return tk_cli_print_xml(stdout, &tk_fixels_command) ? 0 : TK_EXIT_FAILURE;
    Args a;
    if (!parse(argc, argv, a)) return TK_EXIT_USAGE;
    const bool quiet = a.v.std.quiet != 0;
    std::unique_ptr<tk_outset, void (*)(tk_outset *)> set{tk_outset_new(prog), tk_outset_free};
    if (!set) return TK_EXIT_FAILURE;
    const std::string ext = a.v.nii ? ".nii" : ".mif";
    const std::string index_name = "index" + ext, dir_name = "directions" + ext;
    if (int bad = tk_cli_refuse_existing(prog, &a.v.std, a.dir.c_str(), 1)) return bad;
    for (const std::string *in : {&a.input, &a.mask})
        if (!in->empty())
            for (const std::string &f : tk::volume_files(*in))
                if (int bad = tk_outset_input(set.get(), in == &a.input ? "FOD" : "--mask", f.c_str())) return bad;
    std::vector<std::string> names{index_name, dir_name};
    for (const std::string *m : {&a.afd, &a.peak_amp, &a.disp, &a.lobes})
        if (!m->empty()) {
            for (const std::string &n : names)
                if (n == *m) {
                    tk_cli_error(prog, "%s is written twice in %s; give each metric its own name", m->c_str(), a.dir.c_str());
                    return TK_EXIT_USAGE;
                }
            names.push_back(*m);
        }
    if (!a.lobes.empty()) names.push_back(kLobeDirections);
    std::vector<const char *> cnames;
    for (const std::string &n : names) cnames.push_back(n.c_str());
    cnames.push_back(nullptr);
    const int out = tk_outset_add_folder(set.get(), "FIXEL_DIR", a.dir.c_str(), cnames.data(), old_fixel_file);
    if (out < 0) return -out;
    int count_out = -1, afd_out = -1, vtp_out = -1;
    if (!a.count_map.empty() && (count_out = tk::add_volume_output(set.get(), "--count-map", a.count_map)) < 0)
        return -count_out;
    if (!a.afd_map.empty() && (afd_out = tk::add_volume_output(set.get(), "--afd-map", a.afd_map)) < 0) return -afd_out;
    if (!a.vtp.empty() && (vtp_out = tk_outset_add(set.get(), "--vtp", a.vtp.c_str(), nullptr)) < 0) return -vtp_out;
    try {
        auto sh = tk::read_vector_volume(a.input);
        const unsigned comps = sh->GetNumberOfComponentsPerPixel();
        const int lmax = tk_sh_lmax_for_count(comps);
        if (lmax < 2 || lmax > TK_SH_MAX_LMAX)
            throw std::runtime_error(a.input + ": " + std::to_string(comps) +
                                     " volumes is no even-degree SH size (6, 15, 28, 45, 66, 91, 120, 153); give an SH "
                                     "image with one of those numbers of volumes");
        std::vector<uint8_t> mask;
        if (!a.mask.empty()) {
            auto m = tk::read_mask(a.mask);
            tk::require_same_grid(sh, a.input, m, a.mask);
            const size_t n = m->GetLargestPossibleRegion().GetNumberOfPixels();
            mask.assign(m->GetBufferPointer(), m->GetBufferPointer() + n);
        }
        // auto stays on the CPU until the CUDA backend has had its first GPU run (fixels.md):
        // --backend cuda asks for it
        tk_backend backend = TK_BACKEND_OMP;
        if (a.v.std.backend != TK_BACKEND_AUTO &&
            !tk_cli_resolve_backend(prog, a.v.std.backend, a.v.std.device, TK_BACKEND_OMP, quiet, &backend))
            return TK_EXIT_FAILURE;
        if (a.v.gpus_given && a.v.std.backend == TK_BACKEND_AUTO) {
            tk_cli_error(prog, "--gpus %d: tk-fixels' --backend auto runs on the CPU (omp); add --backend cuda to run "
                               "on the GPUs, or drop --gpus", a.v.gpus);
            return TK_EXIT_USAGE;
        }
        int gpus = 1;
        if (!tk_cli_resolve_gpus(prog, a.v.gpus, a.v.gpus_given, a.v.std.backend, backend, (int)a.v.std.device, &gpus))
            return TK_EXIT_USAGE;
        tk_fixels_options o;
        tk_fixels_options_init(&o, lmax);
        o.basis = a.v.descoteaux ? TK_SH_DESCOTEAUX : TK_SH_TOURNIER, o.legacy = a.v.legacy;
        o.integral_threshold = a.v.no_thresholds ? 0 : a.v.integral;
        o.peak_value_threshold = a.v.no_thresholds ? 0 : a.v.peak_value;
        o.lobe_merge_ratio = a.v.merge_ratio;
        o.max_fixels = (int)a.v.maxnum;
        o.directions = a.v.directions;
        o.backend = backend, o.num_threads = (int)a.v.std.threads, o.cuda_device = (int)a.v.std.device;
        o.cuda_device_count = gpus;
        tk_fixels_plan *plan = nullptr;
        if (tk_fixels_plan_create(&o, &plan) != TK_OK)
            throw std::runtime_error(std::string("fixels: ") + tk_last_error());
        std::unique_ptr<tk_fixels_plan, void (*)(tk_fixels_plan *)> hold{plan, tk_fixels_plan_destroy};
        const tk::FixelGeometry g = geometry_of(sh);
        const size_t nvox = g.dim[0] * g.dim[1] * g.dim[2], S = (size_t)tk_fixels_plan_slots(plan);
        // a chunk a progress step; on CUDA each GPU takes 65536 voxels of one; on the CPU 16384
        // (~20 MB of slots): each chunk ends in the threads waiting for each other, which on a
        // busy machine costs a descheduled thread's time slice
        const size_t chunk = backend == TK_BACKEND_CUDA ? 65536 * static_cast<size_t>(gpus) : 16384;
        // the core fills every slot (NaN past a voxel's count): buffers left uninitialised, so
        // that their pages are first touched by the threads filling them, not zeroed here first
        const std::unique_ptr<uint8_t[]> count(new uint8_t[chunk]);
        const std::unique_ptr<float[]> afd(new float[chunk * S]), amp(new float[chunk * S]), dir(new float[chunk * S * 3]);
        std::vector<uint32_t> index(2 * nvox, 0);
        std::vector<float> f_dir, f_afd, f_amp;
        // --lobes: each voxel's direction labels (the core's), then each fixel's mask
        const size_t D = (size_t)tk_fixels_plan_directions(plan);
        const std::unique_ptr<uint8_t[]> labels(a.lobes.empty() ? nullptr : new uint8_t[chunk * D]);
        std::vector<uint8_t> f_lobe;
        size_t bad = 0, truncated = 0;
        const float *data = sh->GetBufferPointer();
        tk_progress bar;  // on stderr while a terminal shows it (and not --quiet)
        tk_progress_begin(&bar, prog, nvox, quiet);
        for (size_t first = 0; first < nvox; first += chunk) {
            const size_t n = std::min(chunk, nvox - first);
            tk_fixels_output res{count.get(), afd.get(), amp.get(), a.v.dirpeak ? nullptr : dir.get(),
                                 a.v.dirpeak ? dir.get() : nullptr, labels.get(), 0, 0};
            if (tk_fixels_plan_execute(plan, n, data + first * comps, mask.empty() ? nullptr : mask.data() + first, &res,
                                       nullptr) != TK_OK)
                throw std::runtime_error(std::string("fixels: ") + tk_last_error());
            bad += res.bad_voxels, truncated += res.truncated;
            tk_progress_advance(&bar, n);
            for (size_t v = 0; v < n; ++v) {
                if (!count[v]) continue;
                index[first + v] = count[v];
                index[nvox + first + v] = (uint32_t)f_afd.size();
                for (size_t f = 0; f < count[v]; ++f) {
                    f_afd.push_back(afd[v * S + f]), f_amp.push_back(amp[v * S + f]);
                    for (int i = 0; i < 3; ++i) f_dir.push_back(dir[(v * S + f) * 3 + i]);
                    if (labels)
                        for (size_t d = 0; d < D; ++d) f_lobe.push_back(labels[v * D + d] == f);
                }
            }
        }
        tk_progress_end(&bar);
        if (!quiet && bad) std::fprintf(stderr, "%s: warning: %zu voxels have non-finite coefficients; no fixels there\n", prog, bad);
        if (!quiet && truncated)
            std::fprintf(stderr, "%s: warning: %zu voxels have more than %zu fixels; the first %zu kept\n", prog,
                         truncated, S, S);
        const size_t nf = f_afd.size();
        if (nf == 0) throw std::runtime_error(no_fixels_message(a, bad, mask, nvox));
        const tk::FixelGeometry data_g = tk::realigned(g);
        const std::string key = "nfixels: " + std::to_string(nf) + "\n";
        const size_t idim[4] = {g.dim[0], g.dim[1], g.dim[2], 2}, ddim[3] = {nf, 3, 1}, mdim[3] = {nf, 1, 1};
        // each file k of the folder output: names[k], named FIXEL_DIR/NAME in messages
        const auto put = [&](int k, const tk::FixelGeometry &geo, const size_t *dim, int ndim, tk::FixelType type,
                             const void *values, const char *extra) {
            tk::write_fixel_image(set.get(), out, k, names[k], a.dir + "/" + names[k], geo, dim, ndim, type, values,
                                  extra);
        };
        put(0, g, idim, 4, tk::FixelType::UInt32, index.data(), key.c_str());
        // directions: N x 3 x 1 with the fixel axis fastest
        std::vector<float> dirs_t(3 * nf);
        for (size_t f = 0; f < nf; ++f)
            for (int i = 0; i < 3; ++i) dirs_t[i * nf + f] = f_dir[3 * f + i];
        put(1, data_g, ddim, 3, tk::FixelType::Float32, dirs_t.data(), nullptr);
        int k = 2;
        if (!a.afd.empty()) put(k++, data_g, mdim, 3, tk::FixelType::Float32, f_afd.data(), nullptr);
        if (!a.peak_amp.empty()) put(k++, data_g, mdim, 3, tk::FixelType::Float32, f_amp.data(), nullptr);
        if (!a.disp.empty()) {
            std::vector<float> disp(nf);
            for (size_t f = 0; f < nf; ++f) disp[f] = f_afd[f] / f_amp[f];
            put(k++, data_g, mdim, 3, tk::FixelType::Float32, disp.data(), nullptr);
        }
        if (!a.lobes.empty()) {
            // N x D x 1, the fixel axis fastest, as every fixel data file
            std::vector<uint8_t> masks(nf * D);
            for (size_t f = 0; f < nf; ++f)
                for (size_t d = 0; d < D; ++d) masks[d * nf + f] = f_lobe[f * D + d];
            const size_t ldim[3] = {nf, D, 1};
            put(k++, data_g, ldim, 3, tk::FixelType::UInt8, masks.data(), nullptr);
            write_lobe_directions(set.get(), out, k++, a.dir + "/" + kLobeDirections, a.lobes, (int)D);
        }
        // the voxel maps on the FOD's grid (Slicer's scalar volumes)
        for (const std::pair<int, bool> &m : {std::make_pair(count_out, true), std::make_pair(afd_out, false)}) {
            if (m.first < 0) continue;
            auto map = tk::ScalarImage3::New();
            map->SetRegions(sh->GetLargestPossibleRegion());
            map->SetSpacing(sh->GetSpacing()), map->SetOrigin(sh->GetOrigin()), map->SetDirection(sh->GetDirection());
            map->Allocate();
            float *px = map->GetBufferPointer();
            for (size_t v = 0; v < nvox; ++v) {
                double sum = 0;
                for (uint32_t f = 0; f < index[v]; ++f) sum += f_afd[index[nvox + v] + f];
                px[v] = m.second ? (float)index[v] : (float)sum;
            }
            tk::write_scalar_volume(map, set.get(), m.first);
        }
#ifdef TK_HAVE_VTK
        if (vtp_out >= 0) {
            // the fixels as sh2peaks-style peaks (direction times AFD), as many slots as the
            // fullest voxel holds; ITK's geometry is LPS, the glyphs RAS
            uint32_t most = 0;
            for (size_t v = 0; v < nvox; ++v) most = std::max(most, index[v]);
            std::vector<float> peaks(nvox * most * 3, NAN), amps(nvox * most, NAN);
            for (size_t v = 0; v < nvox; ++v)
                for (uint32_t f = 0; f < index[v]; ++f) {
                    const size_t src = index[nvox + v] + f, dst = v * most + f;
                    amps[dst] = f_afd[src];
                    for (int i = 0; i < 3; ++i) peaks[dst * 3 + i] = f_dir[3 * src + i] * f_afd[src];
                }
            tk::PeaksImage im;
            im.peaks = peaks.data(), im.amplitudes = amps.data(), im.num_peaks = most;
            for (int r = 0; r < 3; ++r) {
                const double flip = r < 2 ? -1.0 : 1.0;
                im.size[r] = g.dim[r];
                for (int c = 0; c < 3; ++c) im.ijk_to_ras[4 * r + c] = flip * sh->GetDirection()[r][c] * sh->GetSpacing()[c];
                im.ijk_to_ras[4 * r + 3] = flip * sh->GetOrigin()[r];
            }
            tk::WritePolyDataXML(tk::PeaksToPolyData(im, tk::GlyphOptions{}), tk_outset_temp(set.get(), vtp_out, 0));
        }
#endif
        if (tk_outset_commit(set.get()) != 0) return TK_EXIT_FAILURE;
        if (!quiet) std::fprintf(stderr, "%s: %zu fixels in %s\n", prog, nf, a.dir.c_str());
    } catch (const tk::FixelWriteError &) {
        return TK_EXIT_FAILURE;  // the output set said why
    } catch (...) {
        return tk::report_failure(prog, a.input, tk::volume_out_of_memory(a.mask.empty()));
    }
    return 0;
}
