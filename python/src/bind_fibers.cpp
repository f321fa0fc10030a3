// fibers: peaks of SH series (tk_fibers_find) into caller-given direction and amplitude arrays.
#include <cstdint>
#include <memory>

#include "bindings.h"
#include "tk_fibers.h"

namespace tkpy {

namespace {

tk_fibers_options options(int lmax, int basis, int legacy, int num_peaks, double threshold, double relative_threshold,
                          double min_separation_deg, int backend, int threads, int device, int gpus) {
    tk_fibers_options o;
    tk_fibers_options_init(&o, lmax);
    o.basis = static_cast<tk_sh_basis>(basis);
    o.legacy = legacy;
    o.num_peaks = num_peaks;
    o.threshold = threshold;
    o.relative_threshold = relative_threshold;
    o.min_separation_deg = min_separation_deg;
    o.backend = static_cast<tk_backend>(backend);
    o.num_threads = threads;
    o.cuda_device = device;
    o.cuda_device_count = gpus;
    return o;
}

std::size_t coeffs(int lmax) {
    const std::size_t ncoef = tk_sh_num_coeffs(lmax);
    if (ncoef == 0) check(tk_set_error(TK_ERR_ARGUMENT, "lmax %d is not an even order >= 0", lmax), "fibers.peaks");
    return ncoef;
}

// Returns the number of voxels with non-finite coefficients (their outputs are NaN).
template <typename I, typename M, typename O, typename Exec>
std::size_t run(const tk_fibers_options &o, I sh, M mask, O directions, O amplitudes, Exec exec) {
    const std::size_t ncoef = coeffs(o.lmax), num_peaks = (std::size_t)o.num_peaks;
    const std::size_t nvox = sh.size() / ncoef;
    check_size("sh", sh.size(), nvox * ncoef);
    if (mask.is_valid()) check_size("mask", mask.size(), nvox);
    check_size("directions", directions.size(), nvox * (std::size_t)num_peaks * 3);
    check_size("amplitudes", amplitudes.size(), nvox * (std::size_t)num_peaks);
    // Chunks of 16,384 voxels (about 0.1 s on 2 cores at lmax 8): one plan, its tables made once.
    // On a GPU (10-25 million voxels a second) a chunk of 2^20 keeps Ctrl-C as prompt and the
    // launches and waits per voxel few; the plan's buffers stay within its own cap.
    const std::size_t chunk = o.backend == TK_BACKEND_CUDA ? (std::size_t)1 << 20 : 16384;
    tk_fibers_plan *plan = nullptr;
    check(tk_fibers_plan_create(&o, nvox < chunk ? nvox : chunk, &plan), "fibers.peaks");
    std::unique_ptr<tk_fibers_plan, void (*)(tk_fibers_plan *)> owned(plan, tk_fibers_plan_destroy);
    std::size_t bad = 0;
    const std::size_t np = num_peaks;
    in_chunks("fibers.peaks", nvox, chunk, [&](std::size_t start, std::size_t count) {
        std::size_t bad_here = 0;
        tk_status st = exec(plan, count, sh.data() + start * ncoef, mask.is_valid() ? mask.data() + start : nullptr,
                            directions.data() + start * np * 3, amplitudes.data() + start * np, &bad_here);
        bad += bad_here;
        return st;
    });
    return bad;
}

std::size_t peaks(In<float> sh, In<uint8_t> mask, Out<float> directions, Out<float> amplitudes, int lmax, int basis,
                  int legacy, int num_peaks, double threshold, double relative_threshold, double min_separation_deg,
                  int backend, int threads, int device, int gpus) {
    const tk_fibers_options o = options(lmax, basis, legacy, num_peaks, threshold, relative_threshold,
                                        min_separation_deg, backend, threads, device, gpus);
    return run(o, sh, mask, directions, amplitudes,
               [](tk_fibers_plan *p, std::size_t n, const float *s, const uint8_t *m, float *d, float *a,
                  std::size_t *bad) { return tk_fibers_plan_execute(p, n, s, m, d, a, bad, nullptr); });
}

// The same on CUDA arrays (CuPy, PyTorch): the cuda backend on the arrays' device, which
// never copies them to the host (tk_fibers_plan_execute_device).
std::size_t peaks_device(DIn<float> sh, DIn<uint8_t> mask, DOut<float> directions, DOut<float> amplitudes, int lmax,
                         int basis, int legacy, int num_peaks, double threshold, double relative_threshold,
                         double min_separation_deg, int device, std::uintptr_t stream) {
    const tk_fibers_options o = options(lmax, basis, legacy, num_peaks, threshold, relative_threshold,
                                        min_separation_deg, TK_BACKEND_CUDA, 0, device, 1);
    return run(o, sh, mask, directions, amplitudes,
               [stream](tk_fibers_plan *p, std::size_t n, const float *s, const uint8_t *m, float *d, float *a,
                        std::size_t *bad) {
                   return tk_fibers_plan_execute_device(p, n, s, m, d, a, bad, cuda_stream(stream), nullptr);
               });
}

// The basis the data look like (tk_sh_guess_basis) and whether it contradicts the given one.
nb::dict guess_basis(In<float> sh, int lmax, int basis, int legacy) {
    const std::size_t ncoef = tk_sh_num_coeffs(lmax);
    if (ncoef == 0) check(tk_set_error(TK_ERR_ARGUMENT, "lmax %d is not an even order >= 0", lmax), "guess_basis");
    check_size("sh", sh.size(), sh.size() / ncoef * ncoef);
    tk_sh_basis_guess g;
    tk_status st;
    {
        nb::gil_scoped_release unlocked;
        st = tk_sh_guess_basis(lmax, sh.size() / ncoef, sh.data(), 0, &g);
    }
    check(st, "guess_basis");
    nb::dict d;
    d["basis"] = g.basis == TK_SH_TOURNIER ? "tournier" : "descoteaux";
    d["legacy"] = g.legacy;
    d["legacy_known"] = g.legacy_known;
    d["confidence"] = g.confidence;
    d["usable_voxels"] = g.usable_voxels;
    d["sampled_voxels"] = g.sampled_voxels;
    d["evidence"] = tk_sh_basis_evidence(&g, static_cast<tk_sh_basis>(basis), legacy);
    d["contradicts"] = tk_sh_basis_contradicts(&g, static_cast<tk_sh_basis>(basis), legacy) != 0;
    return d;
}

}  // namespace

void bind_fibers(nb::module_ &m) {
    m.def("fibers_peaks", &peaks, nb::arg("sh").noconvert(), nb::arg("mask").noconvert().none(),
          nb::arg("directions").noconvert(), nb::arg("amplitudes").noconvert(), nb::arg("lmax"), nb::arg("basis"),
          nb::arg("legacy"), nb::arg("num_peaks"), nb::arg("threshold"), nb::arg("relative_threshold"),
          nb::arg("min_separation_deg"), nb::arg("backend"), nb::arg("threads"), nb::arg("device"), nb::arg("gpus"));
    m.def("fibers_peaks_device", &peaks_device, nb::arg("sh").noconvert(), nb::arg("mask").noconvert().none(),
          nb::arg("directions").noconvert(), nb::arg("amplitudes").noconvert(), nb::arg("lmax"), nb::arg("basis"),
          nb::arg("legacy"), nb::arg("num_peaks"), nb::arg("threshold"), nb::arg("relative_threshold"),
          nb::arg("min_separation_deg"), nb::arg("device"), nb::arg("stream"));
    m.def("sh_guess_basis", &guess_basis, nb::arg("sh").noconvert(), nb::arg("lmax"), nb::arg("basis"),
          nb::arg("legacy"));
    m.def("sh_num_coeffs", [](int lmax) { return tk_sh_num_coeffs(lmax); });
    m.def("sh_lmax_for_count", [](std::size_t n) { return tk_sh_lmax_for_count(n); });
}

}  // namespace tkpy
