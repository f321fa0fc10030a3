// pltf: PLTF models (tk_pltf.h): parse an expression, generalized tensor multiplication, and
// the masked multiplicative-update fit, on float64 C-order arrays given by the caller (the
// factors and the reconstruction are written into them).  The fit's per-iteration hook calls
// the Python progress callback with the GIL taken back, and runs Python's signal handlers
// there, so Ctrl-C stops a fit at the next iteration.
#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bindings.h"
#include "tk_pltf.h"

namespace tkpy {

namespace {

using Sizes = std::map<std::string, std::size_t>;  // one letter -> its size

tk_pltf_model parse(const std::string &text, const char *what) {
    tk_pltf_model m;
    check(tk_pltf_parse(text.c_str(), &m), what);
    return m;
}

// The model with every index's size set (the core checks each letter is in the model).
tk_pltf_model sized(const std::string &text, const Sizes &sizes, const char *what) {
    tk_pltf_model m = parse(text, what);
    for (const auto &[letter, size] : sizes) {
        if (letter.size() != 1)
            check(tk_set_error(TK_ERR_ARGUMENT, "sizes: '%s' is not one index letter", letter.c_str()), what);
        check(tk_pltf_set_dim(&m, letter[0], size), what);
    }
    check(tk_pltf_check_dims(&m), what);
    return m;
}

std::string factor_name(const tk_pltf_model &m, int f) {
    char name[TK_PLTF_MAX_INDICES + 1];
    tk_pltf_factor_name(&m, f, name);
    return name;
}

// (the expression with presets expanded, the observed indices, the factors' indices)
nb::tuple describe_model(const std::string &text) {
    tk_pltf_model m = parse(text, "pltf.parse");
    std::string out;
    for (int o = 0; o < m.out_ndim; ++o) out += tk_pltf_index_letter(m.out[o]);
    std::vector<std::string> factors;
    for (int f = 0; f < m.num_factors; ++f) factors.push_back(factor_name(m, f));
    return nb::make_tuple(std::string(m.text), out, factors);
}

// (the contraction order, its multiply-adds) of the model's X^
nb::tuple plan(const std::string &text, const Sizes &sizes) {
    tk_pltf_model m = sized(text, sizes, "pltf.plan");
    char buf[2048];
    const double cost = tk_pltf_plan_describe(&m, buf, sizeof buf);
    return nb::make_tuple(std::string(buf), cost);
}

void gtm(const std::string &text, const Sizes &sizes, std::vector<In<double>> operands, Out<double> out, int backend,
         int naive) {
    tk_pltf_model m = sized(text, sizes, "pltf.gtm");
    if ((int)operands.size() != m.num_factors)
        check(tk_set_error(TK_ERR_ARGUMENT, "model \"%s\" has %d factors, %zu operands given", m.text, m.num_factors,
                           operands.size()),
              "pltf.gtm");
    std::vector<const double *> ops;
    for (int f = 0; f < m.num_factors; ++f) {
        check_size(("operand " + factor_name(m, f)).c_str(), operands[f].size(), tk_pltf_factor_count(&m, f));
        ops.push_back(operands[f].data());
    }
    check_size("out", out.size(), tk_pltf_out_count(&m));
    tk_status st;
    {
        nb::gil_scoped_release unlocked;
        st = tk_pltf_gtm(&m, static_cast<tk_backend>(backend), naive, ops.data(), out.data());
    }
    check(st, "pltf.gtm");
}

// The fit's hook: the callback (iteration, divergence) -> stop when it returns False; a
// signal handler's exception (KeyboardInterrupt) or the callback's stops the fit and is
// raised once the core has returned.
struct Hook {
    nb::object callback;
    std::unique_ptr<nb::python_error> error;
};

int on_iteration(void *user, int iteration, double divergence) {
    Hook *h = static_cast<Hook *>(user);
    nb::gil_scoped_acquire locked;
    try {
        if (PyErr_CheckSignals() != 0) throw nb::python_error();
        if (h->callback.is_valid() && !h->callback.is_none()) {
            nb::object r = h->callback(iteration, divergence);
            if (r.is(nb::handle(Py_False))) return 1;
        }
    } catch (nb::python_error &e) {
        h->error = std::make_unique<nb::python_error>(std::move(e));
        return 1;
    }
    return 0;
}

nb::tuple fit(const std::string &text, const Sizes &sizes, In<double> x, In<uint8_t> mask,
              std::vector<Out<double>> factors, Out<double> xhat, Out<double> divergence_out, int divergence,
              int backend, int iterations, uint64_t seed, int init_given, int naive_gtm, int track_divergence,
              int threads, int device, nb::object progress) {
    tk_pltf_model m = sized(text, sizes, "pltf.fit");
    const std::size_t count = tk_pltf_out_count(&m);
    check_size("x", x.size(), count);
    if (mask.is_valid()) check_size("mask", mask.size(), count);
    if (xhat.is_valid()) check_size("xhat", xhat.size(), count);
    if (iterations < 0) check(tk_set_error(TK_ERR_ARGUMENT, "iterations %d < 0", iterations), "pltf.fit");
    if (divergence_out.is_valid()) check_size("divergence", divergence_out.size(), (std::size_t)iterations + 1);
    if ((int)factors.size() != m.num_factors)
        check(tk_set_error(TK_ERR_ARGUMENT, "model \"%s\" has %d factors, %zu arrays given", m.text, m.num_factors,
                           factors.size()),
              "pltf.fit");
    tk_pltf_options o;
    tk_pltf_options_init(&o);
    o.divergence = static_cast<tk_pltf_divergence>(divergence);
    o.backend = static_cast<tk_backend>(backend);
    o.iterations = iterations;
    o.seed = seed;
    o.init_given = init_given;
    o.naive_gtm = naive_gtm;
    o.track_divergence = track_divergence;
    o.num_threads = threads;
    o.cuda_device = device;
    Hook hook{progress, nullptr};
    o.on_iteration = on_iteration;
    o.user = &hook;
    tk_pltf_result r{};
    for (int f = 0; f < m.num_factors; ++f) {
        check_size(("factor " + factor_name(m, f)).c_str(), factors[f].size(), tk_pltf_factor_count(&m, f));
        r.factors[f] = factors[f].data();
    }
    r.xhat = xhat.is_valid() ? xhat.data() : nullptr;
    r.divergence = divergence_out.is_valid() ? divergence_out.data() : nullptr;
    tk_status st;
    {
        nb::gil_scoped_release unlocked;
        st = tk_pltf_factorize(&m, &o, x.data(), mask.is_valid() ? mask.data() : nullptr, &r);
    }
    if (hook.error) throw nb::python_error(std::move(*hook.error));
    check(st, "pltf.fit");
    return nb::make_tuple(r.iterations_done, r.final_divergence, r.iterate_ms, r.total_ms);
}

}  // namespace

void bind_pltf(nb::module_ &m) {
    m.def("pltf_parse", &describe_model, nb::arg("model"));
    m.def("pltf_plan", &plan, nb::arg("model"), nb::arg("sizes"));
    m.def("pltf_gtm", &gtm, nb::arg("model"), nb::arg("sizes"), nb::arg("operands").noconvert(),
          nb::arg("out").noconvert(), nb::arg("backend"), nb::arg("naive"));
    m.def("pltf_fit", &fit, nb::arg("model"), nb::arg("sizes"), nb::arg("x").noconvert(),
          nb::arg("mask").noconvert().none(), nb::arg("factors").noconvert(), nb::arg("xhat").noconvert().none(),
          nb::arg("divergence_out").noconvert().none(), nb::arg("divergence"), nb::arg("backend"),
          nb::arg("iterations"), nb::arg("seed"), nb::arg("init_given"), nb::arg("naive_gtm"),
          nb::arg("track_divergence"), nb::arg("threads"), nb::arg("device"), nb::arg("progress").none());
    m.def("pltf_has_cblas", [] { return tk_pltf_has_cblas() != 0; });
}

}  // namespace tkpy
