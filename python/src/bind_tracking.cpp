// tracking: streamlines through an SH volume (tk_tracking.h).  The volume, the region masks and
// the seeds are the caller's arrays, read in place on the grid the Python layer describes
// (tensorkernels/tracking.py: a C-order (x, y, z, C) array is the core's i-fastest layout with
// the axes reversed, so it passes the reversed dims and the affine's columns to match).  Each
// chunk of streamlines the core hands over is copied into new NumPy arrays (the core reuses
// its buffers) and given to the Python sink with the GIL taken back; Python's signal handlers
// run there, so Ctrl-C stops a run at the next chunk.
#include <nanobind/stl/array.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bindings.h"
#include "tk_tracking.h"

namespace tkpy {

namespace {

// The options, set field by field by the Python layer; until then each holds
// tk_tracking_options_init's value (the one place the defaults are written).
struct Settings {
    int algorithm, lmax, basis, legacy;
    double step_mm, max_angle_deg, cutoff, min_length_mm, max_length_mm;
    int unidirectional;
    std::array<double, 3> seed_direction;
    uint64_t rng_seed;
    int max_trials;
    double fod_power;
    int allow_nonfinite;
    std::size_t chunk_seeds;
    int backend, threads, device, gpus;

    Settings() {
        tk_tracking_options o;
        tk_tracking_options_init(&o, 0);
        algorithm = o.algorithm, lmax = o.lmax, basis = o.basis, legacy = o.legacy;
        step_mm = o.step_mm, max_angle_deg = o.max_angle_deg, cutoff = o.cutoff;
        min_length_mm = o.min_length_mm, max_length_mm = o.max_length_mm, unidirectional = o.unidirectional;
        for (int a = 0; a < 3; ++a) seed_direction[a] = o.seed_direction[a];
        rng_seed = o.rng_seed, max_trials = o.max_trials, fod_power = o.fod_power;
        allow_nonfinite = o.allow_nonfinite, chunk_seeds = o.chunk_seeds;
        backend = o.backend, threads = o.num_threads, device = o.cuda_device, gpus = 1;
    }
};

struct Sink {
    nb::object callback;  // (num_points, seed_index, points, seeds_done, seeds_total) -> False stops
    std::unique_ptr<nb::python_error> error;
    bool stopped = false;
};

template <typename T> nb::object copy_of(const T *data, std::initializer_list<std::size_t> shape, std::size_t count) {
    T *buf = new T[count ? count : 1];
    if (count) std::memcpy(buf, data, count * sizeof(T));
    nb::capsule owner(buf, [](void *p) noexcept { delete[] static_cast<T *>(p); });
    return nb::cast(nb::ndarray<nb::numpy, T>(buf, shape, owner));
}

tk_status to_python(const tk_tracking_chunk *c, void *user) {
    Sink *s = static_cast<Sink *>(user);
    nb::gil_scoped_acquire locked;
    try {
        if (PyErr_CheckSignals() != 0) throw nb::python_error();
        std::vector<uint64_t> counts(c->num_points, c->num_points + c->num_streamlines);
        nb::object r = s->callback(copy_of(counts.data(), {c->num_streamlines}, c->num_streamlines),
                                   copy_of(c->seed_index, {c->num_streamlines}, c->num_streamlines),
                                   copy_of(c->points, {c->total_points, 3}, c->total_points * 3), c->seeds_done,
                                   c->seeds_total);
        if (r.is(nb::handle(Py_False))) {
            s->stopped = true;
            return tk_set_error(TK_ERR_ARGUMENT, "stopped by the progress callback");
        }
    } catch (nb::python_error &e) {
        s->error = std::make_unique<nb::python_error>(std::move(e));
        return tk_set_error(TK_ERR_ARGUMENT, "interrupted");
    } catch (const std::exception &e) {  // out of memory for a copy: no C++ exception through the core
        return tk_set_error(TK_ERR_MEMORY, "tracking: %s", e.what());
    }
    return TK_OK;
}

nb::dict stats_dict(const tk_tracking_stats &s) {
    nb::dict d;
    d["seeds"] = s.seeds;
    d["accepted"] = s.accepted;
    d["rejected_seed"] = s.rejected_seed;
    d["rejected_no_propagation"] = s.rejected_no_propagation;
    d["rejected_too_short"] = s.rejected_too_short;
    d["rejected_exclude"] = s.rejected_exclude;
    d["rejected_missed_include"] = s.rejected_missed_include;
    d["ended_exit_image"] = s.ended_exit_image;
    d["ended_model"] = s.ended_model;
    d["ended_curvature"] = s.ended_curvature;
    d["ended_max_length"] = s.ended_max_length;
    d["ended_exit_mask"] = s.ended_exit_mask;
    d["ended_calibrator"] = s.ended_calibrator;
    return d;
}

// Returns (stats, resolved options, stopped by the callback).
nb::tuple track(In<float> sh, std::array<std::size_t, 3> dims, std::array<double, 16> vox2world, const Settings &s,
                In<uint8_t> stop_mask, In<uint8_t> exclude, std::vector<In<uint8_t>> include, In<uint8_t> seed_mask,
                std::size_t per_voxel, In<double> seed_points, nb::object sink) {
    tk_tracking_grid grid{};
    for (int a = 0; a < 3; ++a) grid.dims[a] = dims[a];
    std::memcpy(grid.vox2world, vox2world.data(), sizeof grid.vox2world);
    const std::size_t nvox = dims[0] * dims[1] * dims[2];
    if (stop_mask.is_valid()) check_size("mask", stop_mask.size(), nvox);
    if (exclude.is_valid()) check_size("exclude", exclude.size(), nvox);
    if (seed_mask.is_valid()) check_size("seed_mask", seed_mask.size(), nvox);
    if (s.lmax < 2 || tk_sh_num_coeffs(s.lmax) == 0)
        check(tk_set_error(TK_ERR_ARGUMENT, "lmax %d is not an even order >= 2", s.lmax), "tracking.track");
    check_size("sh", sh.size(), nvox * tk_sh_num_coeffs(s.lmax));
    std::vector<const uint8_t *> inc;
    for (auto &m : include) {
        check_size("include", m.size(), nvox);
        inc.push_back(m.data());
    }
    if (seed_mask.is_valid() == seed_points.is_valid())
        check(tk_set_error(TK_ERR_ARGUMENT, "give seed points or a seed mask, one of them"), "tracking.track");
    if (seed_points.is_valid()) check_size("seeds", seed_points.size(), seed_points.size() / 3 * 3);

    tk_tracking_options o;
    tk_tracking_options_init(&o, s.lmax);
    o.algorithm = static_cast<tk_tracking_algorithm>(s.algorithm);
    o.basis = static_cast<tk_sh_basis>(s.basis);
    o.legacy = s.legacy;
    o.step_mm = s.step_mm;
    o.max_angle_deg = s.max_angle_deg;
    o.cutoff = s.cutoff;
    o.min_length_mm = s.min_length_mm;
    o.max_length_mm = s.max_length_mm;
    o.unidirectional = s.unidirectional;
    for (int a = 0; a < 3; ++a) o.seed_direction[a] = s.seed_direction[a];
    o.rng_seed = s.rng_seed;
    o.max_trials = s.max_trials;
    o.fod_power = s.fod_power;
    o.allow_nonfinite = s.allow_nonfinite;
    o.chunk_seeds = s.chunk_seeds;
    o.backend = static_cast<tk_backend>(s.backend);
    o.num_threads = s.threads;
    o.cuda_device = s.device;
    o.cuda_device_count = s.gpus;
    // The grid is the C-order (x, y, z) array seen as (z, y, x) (tracking.py): mask seeds numbered
    // x fastest and drawn x first, as tk-track's, so one mask and rng_seed seed the same points.
    o.reversed_axes = 1;

    tk_tracking_regions regions{};
    regions.stop_mask = stop_mask.is_valid() ? stop_mask.data() : nullptr;
    regions.exclude = exclude.is_valid() ? exclude.data() : nullptr;
    regions.include = inc.empty() ? nullptr : inc.data();
    regions.num_include = inc.size();
    regions.mask_voxels = nvox;
    tk_tracking_seeds seeds{};
    if (seed_mask.is_valid()) {
        seeds.mask = seed_mask.data();
        seeds.mask_voxels = nvox;
        seeds.per_voxel = per_voxel;
    } else {
        seeds.points = seed_points.data();
        seeds.num_points = seed_points.size() / 3;
    }

    tk_tracking_plan *plan = nullptr;
    tk_status st;
    {
        nb::gil_scoped_release unlocked;
        st = tk_tracking_plan_create(&o, &grid, &plan);
    }
    check(st, "tracking.track");
    std::unique_ptr<tk_tracking_plan, void (*)(tk_tracking_plan *)> owned(plan, tk_tracking_plan_destroy);
    tk_tracking_options r;
    tk_tracking_plan_options(plan, &r);
    Sink out{sink, nullptr};
    tk_tracking_stats stats{};
    {
        nb::gil_scoped_release unlocked;
        st = tk_tracking_plan_execute(plan, sh.data(), sh.size(), &regions, &seeds, to_python, &out, &stats, nullptr);
    }
    if (out.error) throw nb::python_error(std::move(*out.error));
    if (!out.stopped) check(st, "tracking.track");
    std::size_t min_points = 0, max_points = 0;
    tk_tracking_plan_point_limits(plan, &min_points, &max_points);
    nb::dict resolved;
    resolved["step_mm"] = r.step_mm;
    resolved["max_angle_deg"] = r.max_angle_deg;
    resolved["min_length_mm"] = r.min_length_mm;
    resolved["max_length_mm"] = r.max_length_mm;
    resolved["cutoff"] = r.cutoff;
    resolved["max_trials"] = r.max_trials;
    resolved["fod_power"] = r.fod_power;
    resolved["min_points"] = min_points;
    resolved["max_points"] = max_points;
    return nb::make_tuple(stats_dict(stats), resolved, out.stopped);
}

}  // namespace

void bind_tracking(nb::module_ &m) {
    nb::class_<Settings>(m, "TrackingSettings")
        .def(nb::init<>())
        .def_rw("algorithm", &Settings::algorithm)
        .def_rw("lmax", &Settings::lmax)
        .def_rw("basis", &Settings::basis)
        .def_rw("legacy", &Settings::legacy)
        .def_rw("step_mm", &Settings::step_mm)
        .def_rw("max_angle_deg", &Settings::max_angle_deg)
        .def_rw("cutoff", &Settings::cutoff)
        .def_rw("min_length_mm", &Settings::min_length_mm)
        .def_rw("max_length_mm", &Settings::max_length_mm)
        .def_rw("unidirectional", &Settings::unidirectional)
        .def_rw("seed_direction", &Settings::seed_direction)
        .def_rw("rng_seed", &Settings::rng_seed)
        .def_rw("max_trials", &Settings::max_trials)
        .def_rw("fod_power", &Settings::fod_power)
        .def_rw("allow_nonfinite", &Settings::allow_nonfinite)
        .def_rw("chunk_seeds", &Settings::chunk_seeds)
        .def_rw("backend", &Settings::backend)
        .def_rw("threads", &Settings::threads)
        .def_rw("device", &Settings::device)
        .def_rw("gpus", &Settings::gpus);
    m.def("tracking_track", &track, nb::arg("sh").noconvert(), nb::arg("dims"), nb::arg("vox2world"),
          nb::arg("settings"), nb::arg("mask").noconvert().none(), nb::arg("exclude").noconvert().none(),
          nb::arg("include").noconvert(), nb::arg("seed_mask").noconvert().none(), nb::arg("per_voxel"),
          nb::arg("seed_points").noconvert().none(), nb::arg("sink"));
}

}  // namespace tkpy
