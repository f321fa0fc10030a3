// tk-track: streamline tractography on an SH volume (the tracking core, tk_tracking.h),
// written through the streaming writers (tk_streamlines.h), with tckgen's options.
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
#include "image_grid.h"
#include "sh_basis_warning.h"
#include "sh_image_io.h"
#include "tk_output_set.h"
#include "tk_streamlines.h"
#include "tk_track_options.h"
#include "tk_tracking.h"
#include "track_sample.h"
#include "track_seeds_file.h"
#ifdef TK_HAVE_VTK
#include "tkFiberGlyphOutput.h"
#include "tkStreamlinePicture.h"
#endif

namespace {

const char *prog = "tk-track";
// Steps of one streamline at most (--max-length / --step): 1000 times tckgen's default 1,000.
const double kMaxSteps = 1e6;

struct Args {
    tk_track_values v;
    std::string input, output, png;
    tk_backend backend = TK_BACKEND_OMP;
    bool gpus_given = false;
};

int parse(int argc, char **argv, Args &a)
{
    tk_track_values_init(&a.v);
    tk_parsed parsed;
    if (!tk_cli_parse_options(&tk_track_command, argc, argv, 1, &a.v, &parsed)) return 0;
    if (parsed.num_positional != 2) {
        tk_cli_error(prog, "FOD and OUTPUT are required; give both (see --help)");
        return 0;
    }
    a.input = parsed.positional[0];
    a.output = parsed.positional[1];
    a.gpus_given = tk_cli_given(&tk_track_command, &parsed, "gpus") != 0;
    a.png = a.v.png ? a.v.png : "";
    if (!a.png.empty()) {
#ifndef TK_HAVE_VTK
        tk_cli_error(prog, "--png needs VTK, and this tk-track was built without it (-DTK_WITH_VTK=ON, Debian: "
                     "libvtk9-dev); drop --png");
        return 0;
#endif
        const size_t n = a.png.size();
        if (n < 4 || a.png.compare(n - 4, 4, ".png") != 0) {
            tk_cli_error(prog, "--png %s: give a name ending in .png (a PNG picture is what --png writes)",
                         a.png.c_str());
            return 0;
        }
    }
    // tckgen refuses to run without a seed option; so does tk-track, rather than guess one
    if (!a.v.seed_mask && !a.v.seeds_file) {
        tk_cli_error(prog, "no seeds: give --seed-mask MASK (with --seeds N per voxel) or --seeds-file F");
        return 0;
    }
    if (a.v.seed_mask && a.v.seeds_file) {
        tk_cli_error(prog, "--seed-mask and --seeds-file both given; give one of them");
        return 0;
    }
    // (3D Slicer passes every integer parameter, so its default --seeds 1 comes with a file too)
    if (a.v.seeds_file && tk_cli_given(&tk_track_command, &parsed, "seeds") && a.v.seeds != 1) {
        tk_cli_error(prog, "--seeds N counts seeds per voxel of --seed-mask, and with --seeds-file every point is one "
                     "seed; drop --seeds");
        return 0;
    }
    a.backend = a.v.std.backend; // auto is resolved at the run, where a GPU is looked for
    return 1;
}

// Every input path, for refusing an output that would overwrite one.
std::vector<const char *> input_paths(const Args &a)
{
    std::vector<const char *> in{a.input.c_str()};
    for (const char *p : {a.v.seed_mask, a.v.mask, a.v.exclude, a.v.seeds_file})
        if (p) in.push_back(p);
    for (int i = 0; i < a.v.include.count; ++i) in.push_back(a.v.include.path[i]);
    in.push_back(nullptr);
    return in;
}

// The output before any work: a folder that takes a new file, not an input, a format the
// writers know (by its extension), and not there already unless --force.
int check_output(const Args &a)
{
    const std::vector<const char *> inputs = input_paths(a);
    if (int bad = tk_cli_check_output(prog, a.output.c_str(), 0, inputs.data())) return bad;
    if (tk_streamlines_format_of(a.output.c_str(), nullptr) != TK_OK) {
        tk_cli_error(prog, "OUTPUT %s", tk_last_error());
        return TK_EXIT_USAGE;
    }
    const std::string why = tk::creation_problem(a.output);  // e.g. /proc, which access() calls writable
    if (!why.empty()) {
        tk_cli_error(prog, "%s; choose a folder you can write to", why.c_str());
        return TK_EXIT_FAILURE;
    }
    if (int bad = tk_cli_refuse_existing(prog, &a.v.std, a.output.c_str(), 0)) return bad;
    if (a.png.empty()) return 0;
    std::vector<const char *> before = inputs;  // the picture overwrites no input and not OUTPUT
    before.back() = a.output.c_str();
    before.push_back(nullptr);
    if (int bad = tk_cli_check_output(prog, a.png.c_str(), 0, before.data())) return bad;
    return tk_cli_refuse_existing(prog, &a.v.std, a.png.c_str(), 0);
}

// --png's output set (tk_output_set.h): the picture is rendered into its temporary before
// OUTPUT is closed and put in place after it, so a failed render leaves neither file.
struct Picture {
    std::unique_ptr<tk_outset, void (*)(tk_outset *)> set{nullptr, tk_outset_free};
    int index = -1;
};

// 0, or the exit code after a message: no display (checked before any work, as tk-fibers
// does), or a path the output set refuses.
int open_picture(const Args &a, Picture &p)
{
    if (a.png.empty()) return 0;
#ifdef TK_HAVE_VTK
    const std::string why = tk::RenderUnavailableReason();
    if (!why.empty()) {
        tk_cli_error(prog, "--png %s: cannot render: %s; run under Xvfb, e.g. `xvfb-run -a tk-track ... --png %s`",
                     a.png.c_str(), why.c_str(), a.png.c_str());
        return TK_EXIT_FAILURE;
    }
#endif
    p.set.reset(tk_outset_new(prog));
    if (!p.set) {
        tk_cli_error(prog, "out of memory; free memory and run again");
        return TK_EXIT_FAILURE;
    }
    for (const char *in : input_paths(a))
        if (in)
            if (int bad = tk_outset_input(p.set.get(), nullptr, in)) return bad;
    if ((p.index = tk_outset_add(p.set.get(), "--png", a.png.c_str(), nullptr)) < 0) return -p.index;
    return 0;
}

// Draws the sample into the picture's temporary: 0, or 1 after a message naming --png's file.
int render_picture(const Args &a, const Picture &p, const tk::StreamlineSample &sample, uint64_t kept)
{
#ifdef TK_HAVE_VTK
    const std::string tmp = tk_outset_temp(p.set.get(), p.index, 0);
    try {
        tk::StreamlineBundleView view;
        view.points = sample.points().data();
        view.rgb = sample.rgb().data();
        view.num_points = sample.num_points().data();
        view.num_streamlines = sample.size();
        view.streamlines_in_file = kept;
        tk::RenderStreamlinesPNG(view, tmp);
    } catch (const std::exception &e) {
        std::string why = e.what();  // it names the temporary; the user knows the file by its name
        for (size_t at; (at = why.find(tmp)) != std::string::npos;) why.replace(at, tmp.size(), a.png);
        tk_cli_error(prog, "--png %s", why.c_str());
        return TK_EXIT_FAILURE;
    }
    return 0;
#else
    (void)a, (void)p, (void)sample, (void)kept;
    return TK_EXIT_FAILURE;  // refused at parse
#endif
}

// The FOD's grid in the core's frame: ITK holds LPS (origin + direction * spacing * ijk), the
// core world RAS, so the first two rows are negated.
tk_tracking_grid grid_of(const tk::VectorImage3 *sh)
{
    tk_tracking_grid g{};
    const auto size = sh->GetLargestPossibleRegion().GetSize();
    for (int r = 0; r < 3; ++r) {
        const double flip = r < 2 ? -1.0 : 1.0;
        g.dims[r] = size[r];
        for (int c = 0; c < 3; ++c) g.vox2world[4 * r + c] = flip * sh->GetDirection()[r][c] * sh->GetSpacing()[c];
        g.vox2world[4 * r + 3] = flip * sh->GetOrigin()[r];
    }
    g.vox2world[15] = 1;
    return g;
}

// A mask on the FOD's grid (refused, naming both files, on another grid).  ITK's buffer is
// one byte a voxel, i fastest: the core's layout.
tk::MaskImage3::Pointer read_region(const char *flag, const std::string &path, const tk::VectorImage3 *sh,
                                    const std::string &sh_path)
{
    tk::MaskImage3::Pointer mask;
    try {
        mask = tk::read_mask(path);
    } catch (const itk::ExceptionObject &e) {
        throw std::runtime_error(std::string(flag) + " " + path + ": " + tk::itk_message(e));
    }
    try {
        tk::require_same_grid(sh, sh_path, mask, path);
    } catch (const std::runtime_error &e) {  // the message starts with the mask's path: name the flag too
        throw std::runtime_error(std::string(flag) + " " + e.what());
    }
    return mask;
}

// The first non-finite coefficient, refused before any work: the core refuses it too
// (TK_ERR_DATA), but only here can the message say what to do about it.  0, or the exit code
// after the message naming the file, the voxel (i, j, k as the file numbers them) and the
// coefficient.
int refuse_nonfinite(const tk::VectorImage3 *sh, const std::string &path)
{
    const size_t comps = sh->GetNumberOfComponentsPerPixel();
    const size_t n = sh->GetLargestPossibleRegion().GetNumberOfPixels() * comps;
    const float *v = sh->GetBufferPointer();
    for (size_t i = 0; i < n; ++i)
        if (!std::isfinite(v[i])) {
            const auto size = sh->GetLargestPossibleRegion().GetSize();
            const size_t voxel = i / comps;
            tk_cli_error(prog,
                         "%s: a non-finite coefficient (%g) at voxel (%zu, %zu, %zu), coefficient %zu: tracking would "
                         "end there silently; fix the FOD (e.g. mrcalc %s -finite %s 0 -if FIXED.mif), or mask that "
                         "voxel out before making it",
                         path.c_str(), static_cast<double>(v[i]), voxel % size[0], (voxel / size[0]) % size[1],
                         voxel / (size[0] * size[1]), i % comps, path.c_str(), path.c_str());
            return TK_EXIT_FAILURE;
        }
    return 0;
}

// Seed points outside the FOD's grid (beyond half a voxel of its outer voxels' centres) are
// rejected by the core one by one: all of them outside is a wrong file or frame (not world
// RAS mm), refused; some of them, one warning.  0, or the exit code after the message.
int check_seed_points(const std::vector<double> &points, const tk_tracking_grid &g, const char *file, bool quiet)
{
    const double *m = g.vox2world;
    const double a[9] = {m[0], m[1], m[2], m[4], m[5], m[6], m[8], m[9], m[10]};
    const double det = a[0] * (a[4] * a[8] - a[5] * a[7]) - a[1] * (a[3] * a[8] - a[5] * a[6]) +
                       a[2] * (a[3] * a[7] - a[4] * a[6]);
    const double inv[9] = {(a[4] * a[8] - a[5] * a[7]) / det, (a[2] * a[7] - a[1] * a[8]) / det,
                           (a[1] * a[5] - a[2] * a[4]) / det, (a[5] * a[6] - a[3] * a[8]) / det,
                           (a[0] * a[8] - a[2] * a[6]) / det, (a[2] * a[3] - a[0] * a[5]) / det,
                           (a[3] * a[7] - a[4] * a[6]) / det, (a[1] * a[6] - a[0] * a[7]) / det,
                           (a[0] * a[4] - a[1] * a[3]) / det};
    size_t outside = 0, first = 0;
    for (size_t p = 0; p < points.size() / 3; ++p) {
        const double d[3] = {points[3 * p] - m[3], points[3 * p + 1] - m[7], points[3 * p + 2] - m[11]};
        bool in = true;
        for (int r = 0; r < 3; ++r) {
            const double ijk = inv[3 * r] * d[0] + inv[3 * r + 1] * d[1] + inv[3 * r + 2] * d[2];
            in = in && ijk >= -0.5 && ijk <= static_cast<double>(g.dims[r]) - 0.5;
        }
        if (!in && outside++ == 0) first = p;
    }
    const size_t n = points.size() / 3;
    if (outside == n) {
        tk_cli_error(prog, "--seeds-file %s: none of its %zu points lies within the FOD's grid (the first: %g, %g, %g "
                     "mm); give the points in world RAS mm (scanner coordinates, as tckgen -output_seeds writes them)",
                     file, n, points[0], points[1], points[2]);
        return TK_EXIT_FAILURE;
    }
    if (outside && !quiet)
        std::fprintf(stderr, "%s: warning: --seeds-file %s: %zu of its %zu points lie outside the FOD's grid (the first "
                     "is point %zu); the core rejects them\n", prog, file, outside, n, first + 1);
    return 0;
}

size_t count_nonzero(const tk::MaskImage3 *m)
{
    const size_t n = m->GetLargestPossibleRegion().GetNumberOfPixels();
    size_t k = 0;
    for (size_t i = 0; i < n; ++i) k += m->GetBufferPointer()[i] != 0;
    return k;
}

// 2nd, 4th, ... 32nd: --png's stride in the summary line.
std::string ordinal(uint64_t n)
{
    const uint64_t tens = n % 100, ones = n % 10;
    const char *suffix = tens >= 11 && tens <= 13 ? "th" : ones == 1 ? "st" : ones == 2 ? "nd" : ones == 3 ? "rd" : "th";
    return std::to_string(n) + suffix;
}

// What the sink needs: the writer, --select's count, the seed limit, progress.
struct Run {
    tk_streamlines_writer *writer = nullptr;
    uint64_t select = 0;        // 0: no limit
    uint64_t seed_limit = 0;    // 0: no limit (seeds over every round)
    uint64_t kept = 0, seeds_before = 0, seeds_in_round = 0;
    bool stopped = false;       // --select reached or the seed limit hit: not an error
    tk_progress bar{};
    tk::StreamlineSample *sample = nullptr;  // --png's: every k-th streamline written
};

// Appends a chunk (cut at --select's count) and stops the run once it is reached or the
// seed limit is: the core stops on any status but TK_OK, which `stopped` tells from errors.
tk_status sink(const tk_tracking_chunk *chunk, void *user)
{
    Run &r = *static_cast<Run *>(user);
    tk_tracking_chunk part = *chunk;
    if (r.select && r.kept + part.num_streamlines > r.select) {
        part.num_streamlines = r.select - r.kept;  // the first ones: the arrays are in seed order
        part.total_points = 0;
        for (size_t i = 0; i < part.num_streamlines; ++i) part.total_points += part.num_points[i];
    }
    if (tk_status st = tk_streamlines_sink(&part, r.writer)) return st;
    if (r.sample) {
        try {  // no exception through the core's C frames
            r.sample->add(part);
        } catch (...) {
            return tk_set_error(TK_ERR_MEMORY, "out of memory for --png's sample of the streamlines; free memory "
                                "or drop --png");
        }
    }
    r.kept += part.num_streamlines;
    const uint64_t seeds = r.seeds_before + chunk->seeds_done;
    if (r.select) {
        if (r.kept > r.bar.done) tk_progress_advance(&r.bar, r.kept - r.bar.done);
    } else if (seeds > r.bar.done) {
        tk_progress_advance(&r.bar, seeds - r.bar.done);
    }
    r.seeds_in_round = chunk->seeds_done;
    if ((r.select && r.kept >= r.select) || (r.seed_limit && seeds >= r.seed_limit)) {
        r.stopped = true;
        return tk_set_error(TK_ERR_ARGUMENT, "stopped");  // not reported: see `stopped`
    }
    return TK_OK;
}

void add_stats(tk_tracking_stats &sum, const tk_tracking_stats &s)
{
    uint64_t *a = &sum.seeds;
    const uint64_t *b = &s.seeds;
    for (size_t i = 0; i < sizeof sum / sizeof(uint64_t); ++i) a[i] += b[i];
}

// A key for round r of --select's rounds that shares no stream with the key's other rounds
// (distinct keys give independent Philox streams); round 0 is the key itself.
uint64_t round_key(uint64_t key, uint64_t round) { return key + round * 0x9E3779B97F4A7C15ull; }

int track(const Args &a)
{
    Picture picture;
    if (int bad = open_picture(a, picture)) return bad;
    // The picture's streamlines: a uniform subsample bounded in memory (the run may keep
    // millions, streamed to OUTPUT in chunks), not the file read back: five formats would need
    // five readers, and a picture shows no more than some ten thousand lines legibly.
    tk::StreamlineSample sample(20000, 1000000);

    tk::FileGeometry geometry;
    auto sh = tk::read_vector_volume(a.input, &geometry);
    const unsigned comps = sh->GetNumberOfComponentsPerPixel();
    const int lmax = tk_sh_lmax_for_count(comps);
    if (lmax < 2 || lmax > TK_SH_MAX_LMAX)
        throw std::runtime_error(a.input + ": " + std::to_string(comps) +
                                 " volumes is no even-degree SH size (6, 15, 28, 45, 66, 91, 120, 153); give an SH "
                                 "image (the FOD of dwi2fod) with one of those numbers of volumes");
    if (int bad = refuse_nonfinite(sh, a.input)) return bad;
    const bool quiet = a.v.std.quiet != 0;
    if (!quiet) tk::warn_if_other_basis(stderr, prog, a.input, sh, a.v.descoteaux != 0, a.v.legacy != 0);
    const size_t nvox = sh->GetLargestPossibleRegion().GetNumberOfPixels();
    const tk_tracking_grid grid = grid_of(sh);

    // regions and seeds, every mask on the FOD's grid
    tk::MaskImage3::Pointer stop, exclude, seed_mask;
    std::vector<tk::MaskImage3::Pointer> include;
    std::vector<const uint8_t *> include_data;
    if (a.v.mask) stop = read_region("--mask", a.v.mask, sh, a.input);
    if (a.v.exclude) exclude = read_region("--exclude", a.v.exclude, sh, a.input);
    for (int i = 0; i < a.v.include.count; ++i) {
        include.push_back(read_region("--include", a.v.include.path[i], sh, a.input));
        include_data.push_back(include.back()->GetBufferPointer());
    }
    tk_tracking_regions regions{};
    regions.stop_mask = stop ? stop->GetBufferPointer() : nullptr;
    regions.exclude = exclude ? exclude->GetBufferPointer() : nullptr;
    regions.include = include_data.empty() ? nullptr : include_data.data();
    regions.num_include = include_data.size();
    regions.mask_voxels = nvox;

    tk_tracking_seeds seeds{};
    std::vector<double> points;
    if (a.v.seed_mask) {
        seed_mask = read_region("--seed-mask", a.v.seed_mask, sh, a.input);
        if (count_nonzero(seed_mask) == 0) {
            tk_cli_error(prog, "--seed-mask %s: no voxel is non-zero, so there is nowhere to seed; give a mask with "
                         "the voxels to seed in", a.v.seed_mask);
            return TK_EXIT_FAILURE;
        }
        seeds.mask = seed_mask->GetBufferPointer();
        seeds.mask_voxels = nvox;
        seeds.per_voxel = static_cast<size_t>(a.v.seeds);
    } else {
        points = tk::read_seed_points(a.v.seeds_file);
        if (int bad = check_seed_points(points, grid, a.v.seeds_file, a.v.std.quiet != 0)) return bad;
        seeds.points = points.data();
        seeds.num_points = points.size() / 3;
    }
    const uint64_t seed_voxels = seeds.mask ? count_nonzero(seed_mask) : 0;
    if (seeds.mask && a.v.select > 0) {
        // --select's rounds: at least one chunk of seeds a round, so that a small mask does not
        // cost a plan (and iFOD1's calibration) for every few seeds
        const uint64_t chunk = 4096, least = (chunk + seed_voxels - 1) / seed_voxels;
        if (seeds.per_voxel < least) seeds.per_voxel = static_cast<size_t>(least);
    }
    const uint64_t seeds_per_round = seeds.mask ? seed_voxels * seeds.per_voxel : static_cast<uint64_t>(seeds.num_points);

    tk_tracking_options o;
    tk_tracking_options_init(&o, lmax);
    o.algorithm = a.v.algorithm == 1 ? TK_TRACK_IFOD1 : TK_TRACK_SD_STREAM;
    o.basis = a.v.descoteaux ? TK_SH_DESCOTEAUX : TK_SH_TOURNIER;
    o.legacy = a.v.legacy;
    o.step_mm = a.v.step;
    o.max_angle_deg = a.v.angle;
    o.cutoff = a.v.cutoff;
    o.min_length_mm = a.v.min_length;
    o.max_length_mm = a.v.max_length;
    o.fod_power = a.v.power;
    o.max_trials = a.v.trials;
    o.unidirectional = a.v.unidirectional;
    std::memcpy(o.seed_direction, a.v.seed_direction, sizeof o.seed_direction);
    o.rng_seed = a.v.seed;
    // auto: the CUDA tracker where a usable GPU is found, else OpenMP with one warning line
    if (!tk_cli_resolve_backend(prog, a.backend, a.v.std.device, TK_BACKEND_OMP, a.v.std.quiet, &o.backend))
        return TK_EXIT_FAILURE;
    o.cuda_device = a.v.std.device;
    if (!tk_cli_resolve_gpus(prog, a.v.gpus, a.gpus_given, a.backend, o.backend, o.cuda_device, &o.cuda_device_count))
        return TK_EXIT_USAGE;
    o.num_threads = a.v.std.threads;
    tk_tracking_plan *plan = nullptr;
    if (tk_tracking_plan_create(&o, &grid, &plan) != TK_OK) {
        const std::string why = tk_last_error();
        if (why.find("length") != std::string::npos) {  // the lengths given, or one given and the other's default
            tk_cli_error(prog, "%s for %s's voxels; change --min-length or --max-length (0: 5 and 100 voxels)",
                         why.c_str(), a.input.c_str());
            return TK_EXIT_USAGE;
        }
        tk_cli_error(prog, "%s: %s", a.input.c_str(), why.c_str());
        return TK_EXIT_FAILURE;
    }
    std::unique_ptr<tk_tracking_plan, void (*)(tk_tracking_plan *)> plan_owner(plan, tk_tracking_plan_destroy);
    {
        // a step so small against --max-length that one streamline takes millions of steps is
        // a typo, not a request (tckgen's defaults: 1,000; a --step of 1e-300 overflowed)
        tk_tracking_options resolved;
        tk_tracking_plan_options(plan, &resolved);
        const double steps = resolved.max_length_mm / resolved.step_mm;
        if (!(steps <= kMaxSteps)) {
            tk_cli_error(prog, "--step %g mm and --max-length %g mm: %.3g steps a streamline, more than %g; give a "
                         "larger --step or a smaller --max-length", resolved.step_mm, resolved.max_length_mm, steps,
                         kMaxSteps);
            return TK_EXIT_USAGE;
        }
    }

    Run run;
    run.select = static_cast<uint64_t>(a.v.select);
    if (picture.index >= 0) run.sample = &sample;
    // tckgen's -select with an unlimited seeder stops at -seeds, by default 1000 x -select
    const bool rounds = run.select && seeds.mask;
    if (rounds) run.seed_limit = 1000 * run.select;
    if (tk_streamlines_writer_open(a.output.c_str(), &grid, nullptr, &run.writer) != TK_OK) {
        tk_cli_error(prog, "%s", tk_last_error());
        return TK_EXIT_FAILURE;
    }
    tk_progress_begin(&run.bar, prog, run.select ? run.select : seeds_per_round, quiet);
    tk_tracking_stats total{};
    tk_status st = TK_OK;
    for (uint64_t round = 0; st == TK_OK; ++round) {
        o.rng_seed = round_key(a.v.seed, round);
        if (round > 0) {  // a new plan only for the new key
            tk_tracking_plan *next = nullptr;
            if ((st = tk_tracking_plan_create(&o, &grid, &next)) != TK_OK) break;
            plan_owner.reset(next);
        }
        tk_tracking_stats stats{};
        run.seeds_in_round = 0;
        st = tk_tracking_plan_execute(plan_owner.get(), sh->GetBufferPointer(), nvox * comps, &regions, &seeds, sink,
                                      &run, &stats, nullptr);
        add_stats(total, stats);
        run.seeds_before += run.stopped ? run.seeds_in_round : seeds_per_round;
        if (run.stopped) st = TK_OK;
        if (st != TK_OK || run.stopped || !rounds) break;
        if (stats.accepted == 0 && round == 0) break;  // no seed of the mask gives a streamline: more rounds won't
    }
    tk_progress_end(&run.bar);
    if (st != TK_OK) {
        const std::string why = tk_last_error();
        tk_streamlines_writer_abort(run.writer);
        // the core's data errors (a NaN coefficient, naming its voxel) are about the FOD
        tk_cli_error(prog, "%s%s%s", st == TK_ERR_DATA ? (a.input + ": ").c_str() : "", why.c_str(),
                     st == TK_ERR_DATA ? "; fix the FOD there" : "");
        return TK_EXIT_FAILURE;
    }
    if (picture.index >= 0)
        if (int bad = render_picture(a, picture, sample, run.kept)) {
            tk_streamlines_writer_abort(run.writer);
            return bad;
        }
    if (tk_streamlines_writer_close(run.writer) != TK_OK) {
        tk_cli_error(prog, "%s", tk_last_error());
        return TK_EXIT_FAILURE;
    }
    if (picture.index >= 0 && tk_outset_commit(picture.set.get()) != 0) return TK_EXIT_FAILURE;
    if (!quiet) {
        // a report, not a diagnostic: on stdout, which 3D Slicer logs as the run's output
        // (it logs anything on stderr as an error)
        std::fprintf(stdout,
                     "%s: %llu seeds, %llu streamlines kept (seeds rejected %llu, no step %llu, too short %llu, "
                     "excluded %llu, missed an include region %llu)\n",
                     prog, (unsigned long long)run.seeds_before, (unsigned long long)run.kept,
                     (unsigned long long)total.rejected_seed, (unsigned long long)total.rejected_no_propagation,
                     (unsigned long long)total.rejected_too_short, (unsigned long long)total.rejected_exclude,
                     (unsigned long long)total.rejected_missed_include);
        if (picture.index >= 0 && sample.stride() == 1)
            std::fprintf(stdout, "%s: --png %s: all %zu streamlines drawn\n", prog, a.png.c_str(), sample.size());
        else if (picture.index >= 0)
            std::fprintf(stdout, "%s: --png %s: %zu of the %llu streamlines drawn (every %s kept one)\n", prog,
                         a.png.c_str(), sample.size(), (unsigned long long)run.kept, ordinal(sample.stride()).c_str());
        if (run.select && run.kept < run.select)
            std::fprintf(stderr, "%s: warning: %llu of the %llu streamlines --select asks for were kept (%s)\n", prog,
                         (unsigned long long)run.kept, (unsigned long long)run.select,
                         rounds ? "the seed limit of 1000 per streamline asked for was reached, or no seed tracks"
                                : "every seed of the file was tracked");
    }
    return 0;
}

}  // namespace

int main(int argc, char **argv)
{
    if (tk_xml_requested(argc, argv)) return tk_cli_print_xml(stdout, &tk_track_command) ? 0 : TK_EXIT_FAILURE;
    Args a;
    if (!parse(argc, argv, a)) return TK_EXIT_USAGE;
    if (int bad = check_output(a)) return bad;
    try {
        return track(a);
    } catch (...) {
        return tk::report_failure(prog, a.input, tk::volume_out_of_memory(false));
    }
}
