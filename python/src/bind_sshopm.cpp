// sshopm: per-start SS-HOPM results of a batch of packed symmetric tensors (tk_sshopm_solve)
// into caller-given arrays, and their distinct eigenpairs (tk_sshopm_distinct).
#include <cstdint>
#include <cstring>
#include <memory>
#include <type_traits>

#include "bindings.h"
#include "tk_sshopm.h"

namespace tkpy {

namespace {

struct Settings {
    int order, dim, impl, adaptive;
    double shift, tol;
    int max_iter, num_starts;
    uint64_t seed;
    int backend, threads, device, gpus;
};

template <typename T> tk_sshopm_options options(const Settings &s, const T *starts) {
    tk_sshopm_options o;
    tk_sshopm_options_init(&o, s.order, s.dim);
    o.precision = sizeof(T) == sizeof(double) ? TK_PRECISION_DOUBLE : TK_PRECISION_SINGLE;
    o.impl = static_cast<tk_impl>(s.impl);
    o.shift_mode = s.adaptive ? TK_SHIFT_ADAPTIVE : TK_SHIFT_FIXED;
    o.shift = s.shift;
    o.tol = s.tol > 0 ? s.tol : tk_sshopm_default_tol(o.precision);
    o.max_iter = s.max_iter;
    o.num_starts = s.num_starts;
    o.seed = s.seed;
    o.starts = starts;
    o.backend = static_cast<tk_backend>(s.backend);
    o.num_threads = s.threads;
    o.cuda_device = s.device;
    o.cuda_device_count = s.gpus;
    return o;
}

std::size_t batch_size(std::size_t size, int order, int dim) {
    const std::size_t k = tk_sym_num_unique(order, dim);
    if (k == 0) check(tk_set_error(TK_ERR_ARGUMENT, "order %d, dim %d: no packed storage", order, dim), "sshopm");
    check_size("tensors", size, size / k * k);
    return size / k;
}

// One batch through a plan, in chunks; exec(plan, count, packed, result) runs one chunk.
template <typename T, typename I, typename O, typename OI, typename OB, typename Exec>
void solve_with(const Settings &s, I packed, In<T> starts, O lambda, O x, OI iterations, OB converged, Exec exec) {
    const int dim = s.dim, num_starts = s.num_starts;
    const std::size_t count = batch_size(packed.size(), s.order, dim), rows = count * (std::size_t)num_starts;
    if (starts.is_valid()) check_size("starts", starts.size(), (std::size_t)num_starts * dim);
    check_size("eigenvalues", lambda.size(), rows);
    check_size("eigenvectors", x.size(), rows * dim);
    check_size("iterations", iterations.size(), rows);
    check_size("converged", converged.size(), rows);
    tk_sshopm_options o = options<T>(s, starts.is_valid() ? starts.data() : nullptr);
    // Chunks of 4,096 tensors (65,536 on a GPU): Ctrl-C between them (bindings.h); the plan makes
    // the starts once, shared by every tensor as in one call.
    const std::size_t chunk = s.backend == TK_BACKEND_CUDA ? 65536 : 4096;
    const std::size_t k = tk_sym_num_unique(s.order, dim), S = (std::size_t)num_starts;
    tk_sshopm_plan *plan = nullptr;
    check(tk_sshopm_plan_create(&o, count < chunk ? count : chunk, &plan), "sshopm");
    std::unique_ptr<tk_sshopm_plan, void (*)(tk_sshopm_plan *)> owned(plan, tk_sshopm_plan_destroy);
    in_chunks("sshopm", count, chunk, [&](std::size_t start, std::size_t c) {
        tk_sshopm_starts_result r{lambda.data() + start * S, x.data() + start * S * dim, iterations.data() + start * S,
                                  converged.data() + start * S};
        return exec(plan, c, packed.data() + start * k, &r);
    });
}

template <typename T>
void solve(In<T> packed, In<T> starts, Out<T> lambda, Out<T> x, Out<int32_t> iterations, Out<uint8_t> converged,
           int order, int dim, int impl, int adaptive, double shift, double tol, int max_iter, int num_starts,
           uint64_t seed, int backend, int threads, int device, int gpus) {
    Settings s{order, dim, impl, adaptive, shift, tol, max_iter, num_starts, seed, backend, threads, device, gpus};
    solve_with<T>(s, packed, starts, lambda, x, iterations, converged,
                  [](tk_sshopm_plan *p, std::size_t c, const T *t, tk_sshopm_starts_result *r) {
                      return tk_sshopm_plan_execute(p, c, t, r, nullptr);
                  });
}

// The same on CUDA arrays (CuPy, PyTorch; the starts, a plan parameter, stay a host array):
// the cuda backend on the arrays' device, never copying them to the host.
template <typename T>
void solve_device(DIn<T> packed, In<T> starts, DOut<T> lambda, DOut<T> x, DOut<int32_t> iterations,
                  DOut<uint8_t> converged, int order, int dim, int impl, int adaptive, double shift, double tol,
                  int max_iter, int num_starts, uint64_t seed, int device, std::uintptr_t stream) {
    Settings s{order, dim, impl, adaptive, shift, tol, max_iter, num_starts, seed, TK_BACKEND_CUDA, 0, device, 1};
    solve_with<T>(s, packed, starts, lambda, x, iterations, converged,
                  [stream](tk_sshopm_plan *p, std::size_t c, const T *t, tk_sshopm_starts_result *r) {
                      return tk_sshopm_plan_execute_device(p, c, t, r, cuda_stream(stream), nullptr);
                  });
}

// The distinct pairs, as a tuple of NumPy arrays (tensor, eigenvalue, eigenvector, stability,
// num_starts): their count is known only after the merge, so these are new arrays (small: a
// few pairs per tensor), copied from the core's.
template <typename T>
nb::tuple distinct(In<T> packed, In<T> lambda, In<T> x, In<int32_t> iterations, In<uint8_t> converged, int order,
                   int dim, int num_starts, double merge_tol) {
    Settings s{order, dim, 0, 0, 0.0, 0.0, 1, num_starts, 0, 0, 0, 0, 1};
    const std::size_t count = batch_size(packed.size(), order, dim), rows = count * (std::size_t)num_starts;
    check_size("eigenvalues", lambda.size(), rows);
    check_size("eigenvectors", x.size(), rows * dim);
    check_size("iterations", iterations.size(), rows);
    check_size("converged", converged.size(), rows);
    tk_sshopm_options o = options<T>(s, nullptr);
    tk_sshopm_starts_result r{const_cast<T *>(lambda.data()), const_cast<T *>(x.data()),
                              const_cast<int32_t *>(iterations.data()), const_cast<uint8_t *>(converged.data())};
    tk_eigenpairs pairs{};
    tk_status st;
    {
        nb::gil_scoped_release unlocked;
        st = tk_sshopm_distinct(&o, count, packed.data(), &r, merge_tol, &pairs);
    }
    check(st, "sshopm distinct eigenpairs");
    const std::size_t n = pairs.count;
    auto *t = new int64_t[n ? n : 1];
    auto *l = new double[n ? n : 1];
    auto *v = new double[n ? n * dim : 1];
    auto *stab = new int8_t[n ? n : 1];
    auto *ns = new int32_t[n ? n : 1];
    for (std::size_t i = 0; i < n; ++i) {
        t[i] = (int64_t)pairs.tensor[i];
        l[i] = pairs.lambda[i];
        stab[i] = (int8_t)pairs.stability[i];
        ns[i] = pairs.num_starts[i];
    }
    if (n) std::memcpy(v, pairs.x, sizeof(double) * n * dim);
    tk_eigenpairs_free(&pairs);
    auto own = [](auto *p) {
        using P = std::remove_pointer_t<decltype(p)>;
        return nb::capsule(p, [](void *q) noexcept { delete[] static_cast<P *>(q); });
    };
    return nb::make_tuple(nb::ndarray<nb::numpy, int64_t, nb::ndim<1>>(t, {n}, own(t)),
                          nb::ndarray<nb::numpy, double, nb::ndim<1>>(l, {n}, own(l)),
                          nb::ndarray<nb::numpy, double, nb::ndim<2>>(v, {n, (std::size_t)dim}, own(v)),
                          nb::ndarray<nb::numpy, int8_t, nb::ndim<1>>(stab, {n}, own(stab)),
                          nb::ndarray<nb::numpy, int32_t, nb::ndim<1>>(ns, {n}, own(ns)));
}

template <typename T> void def(nb::module_ &m) {
    m.def("sshopm_solve", &solve<T>, nb::arg("tensors").noconvert(), nb::arg("starts").noconvert().none(),
          nb::arg("eigenvalues").noconvert(), nb::arg("eigenvectors").noconvert(), nb::arg("iterations").noconvert(),
          nb::arg("converged").noconvert(), nb::arg("order"), nb::arg("dim"), nb::arg("impl"), nb::arg("adaptive"),
          nb::arg("shift"), nb::arg("tol"), nb::arg("max_iter"), nb::arg("num_starts"), nb::arg("seed"),
          nb::arg("backend"), nb::arg("threads"), nb::arg("device"), nb::arg("gpus"));
    m.def("sshopm_solve_device", &solve_device<T>, nb::arg("tensors").noconvert(), nb::arg("starts").noconvert().none(),
          nb::arg("eigenvalues").noconvert(), nb::arg("eigenvectors").noconvert(), nb::arg("iterations").noconvert(),
          nb::arg("converged").noconvert(), nb::arg("order"), nb::arg("dim"), nb::arg("impl"), nb::arg("adaptive"),
          nb::arg("shift"), nb::arg("tol"), nb::arg("max_iter"), nb::arg("num_starts"), nb::arg("seed"),
          nb::arg("device"), nb::arg("stream"));
    m.def("sshopm_distinct", &distinct<T>, nb::arg("tensors").noconvert(), nb::arg("eigenvalues").noconvert(),
          nb::arg("eigenvectors").noconvert(), nb::arg("iterations").noconvert(), nb::arg("converged").noconvert(),
          nb::arg("order"), nb::arg("dim"), nb::arg("num_starts"), nb::arg("merge_tol"));
}

}  // namespace

void bind_sshopm(nb::module_ &m) {
    def<float>(m);
    def<double>(m);
    m.def("sym_num_unique", [](int order, int dim) { return tk_sym_num_unique(order, dim); });
    m.def("sshopm_has_unrolled", [](int order, int dim) { return tk_sshopm_has_unrolled(order, dim) != 0; });
    m.def("stability_name", [](int s) { return tk_stability_name(static_cast<tk_stability>(s)); });
}

}  // namespace tkpy
