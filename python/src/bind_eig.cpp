// eig: eigenvalues (and vectors) of a batch of small real matrices (tk_eig_solve) into
// caller-given arrays: complex results as interleaved (re, im) reals, i.e. the float view
// of a NumPy complex array, so no copy is made on the way out.
#include <cstdint>
#include <memory>

#include "bindings.h"
#include "tk_eig.h"

namespace tkpy {

namespace {

tk_eig_options options(int n, bool dbl, int balance, int max_iter, int backend, int threads, int device, int gpus) {
    tk_eig_options o;
    tk_eig_options_init(&o, n);
    o.precision = dbl ? TK_PRECISION_DOUBLE : TK_PRECISION_SINGLE;
    o.balance = balance;
    o.max_iter = max_iter;
    o.backend = static_cast<tk_backend>(backend);
    o.num_threads = threads;
    o.cuda_device = device;
    o.cuda_device_count = gpus;
    if (n < 1) check(tk_set_error(TK_ERR_ARGUMENT, "matrix order %d < 1", n), "eig");
    return o;
}

// One batch through a plan, in chunks; exec(plan, count, matrices, result) runs one chunk.
template <typename I, typename O, typename OS, typename Exec>
void solve_with(const tk_eig_options &o, I a, O values, O vectors, OS status, Exec exec) {
    const int n = o.n;
    const std::size_t nn = (std::size_t)n * (std::size_t)n, count = a.size() / nn;
    check_size("a", a.size(), count * nn);
    check_size("values", values.size(), count * (std::size_t)n * 2);
    if (vectors.is_valid()) check_size("vectors", vectors.size(), count * nn * 2);
    check_size("status", status.size(), count);
    // Matrices a chunk, Ctrl-C between them (bindings.h): 16,384 on the CPU; on a GPU as many as
    // fill 256 MiB of input (at least that many), as the plan sizes its buffers for a chunk.
    const std::size_t elem = o.precision == TK_PRECISION_DOUBLE ? sizeof(double) : sizeof(float);
    const std::size_t gpu_chunk = ((std::size_t)256 << 20) / (nn * elem);
    const std::size_t chunk = o.backend == TK_BACKEND_CUDA && gpu_chunk > 16384 ? gpu_chunk : 16384;
    tk_eig_plan *plan = nullptr;
    check(tk_eig_plan_create(&o, count < chunk ? count : chunk, &plan), "eig");
    std::unique_ptr<tk_eig_plan, void (*)(tk_eig_plan *)> owned(plan, tk_eig_plan_destroy);
    in_chunks("eig", count, chunk, [&](std::size_t start, std::size_t k) {
        tk_eig_result r{values.data() + start * n * 2, vectors.is_valid() ? vectors.data() + start * nn * 2 : nullptr,
                        status.data() + start};
        return exec(plan, k, a.data() + start * nn, &r);
    });
}

// Returns the number of matrices that failed (status != 0).
template <typename T>
std::size_t solve(In<T> a, Out<T> values, Out<T> vectors, Out<int8_t> status, int n, int balance, int max_iter,
                  int backend, int threads, int device, int gpus) {
    const tk_eig_options o = options(n, sizeof(T) == sizeof(double), balance, max_iter, backend, threads, device, gpus);
    std::size_t failed = 0;
    solve_with(o, a, values, vectors, status, [&failed](tk_eig_plan *p, std::size_t k, const T *m, tk_eig_result *r) {
        std::size_t failed_here = 0;
        const tk_status st = tk_eig_plan_execute(p, k, m, r, nullptr, &failed_here);
        failed += failed_here;
        return st;
    });
    return failed;
}

// The same on CUDA arrays (CuPy, PyTorch): the cuda backend on the arrays' device, never
// copying them to the host; the failed matrices are the caller's to count in `status`.
template <typename T>
void solve_device(DIn<T> a, DOut<T> values, DOut<T> vectors, DOut<int8_t> status, int n, int balance, int max_iter,
                  int device, std::uintptr_t stream) {
    const tk_eig_options o = options(n, sizeof(T) == sizeof(double), balance, max_iter, TK_BACKEND_CUDA, 0, device, 1);
    solve_with(o, a, values, vectors, status, [stream](tk_eig_plan *p, std::size_t k, const T *m, tk_eig_result *r) {
        return tk_eig_plan_execute_device(p, k, m, r, cuda_stream(stream), nullptr);
    });
}

template <typename T> void def_solve(nb::module_ &m) {
    m.def("eig_solve", &solve<T>, nb::arg("a").noconvert(), nb::arg("values").noconvert(),
          nb::arg("vectors").noconvert().none(), nb::arg("status").noconvert(), nb::arg("n"), nb::arg("balance"),
          nb::arg("max_iter"), nb::arg("backend"), nb::arg("threads"), nb::arg("device"), nb::arg("gpus"));
    m.def("eig_solve_device", &solve_device<T>, nb::arg("a").noconvert(), nb::arg("values").noconvert(),
          nb::arg("vectors").noconvert().none(), nb::arg("status").noconvert(), nb::arg("n"), nb::arg("balance"),
          nb::arg("max_iter"), nb::arg("device"), nb::arg("stream"));
}

}  // namespace

void bind_eig(nb::module_ &m) {
    def_solve<float>(m);
    def_solve<double>(m);
    m.def("eig_max_n", [] { return TK_EIG_MAX_N; });
}

}  // namespace tkpy
