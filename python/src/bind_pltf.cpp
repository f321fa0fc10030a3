// pltf: PLTF models (tk_pltf.h): parse an expression, generalized tensor multiplication, and
// the masked multiplicative-update fit, on float64 C-order arrays given by the caller (the
// factors and the reconstruction are written into them).  The fit's per-iteration hook calls
// the Python progress callback with the GIL taken back, and runs Python's signal handlers
// there, so Ctrl-C stops a fit at the next iteration.
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
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

// The options both fits take from Python, the progress hook in them.
tk_pltf_options fit_options(int divergence, int backend, int iterations, uint64_t seed, int init_given,
                            int track_divergence, int threads, int device, Hook *hook) {
    tk_pltf_options o;
    tk_pltf_options_init(&o);
    o.divergence = static_cast<tk_pltf_divergence>(divergence);
    o.backend = static_cast<tk_backend>(backend);
    o.iterations = iterations;
    o.seed = seed;
    o.init_given = init_given;
    o.track_divergence = track_divergence;
    o.num_threads = threads;
    o.cuda_device = device;
    o.on_iteration = on_iteration;
    o.user = hook;
    return o;
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
    Hook hook{progress, nullptr};
    tk_pltf_options o = fit_options(divergence, backend, iterations, seed, init_given, track_divergence, threads, device,
                                    &hook);
    o.naive_gtm = naive_gtm;
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

// The views of a coupled fit: each model sized with its own letters.
std::vector<tk_pltf_model> view_models(const std::vector<std::string> &models, const std::vector<Sizes> &sizes,
                                       const char *what) {
    if (models.empty() || models.size() > TK_PLTF_MAX_VIEWS || sizes.size() != models.size())
        check(tk_set_error(TK_ERR_ARGUMENT, "%zu views (1 to %d, each with its sizes)", models.size(),
                           TK_PLTF_MAX_VIEWS),
              what);
    std::vector<tk_pltf_model> ms;
    for (std::size_t v = 0; v < models.size(); ++v) ms.push_back(sized(models[v], sizes[v], what));
    return ms;
}

// The distinct factors of the views, in the core's order (view 0's, then the new ones of view 1, ...).
// The core checks each view's data is there: the views' x arrays come along (only their
// sizes are checked here; nothing is read).
std::vector<std::string> coupled_factors(const std::vector<std::string> &models, const std::vector<Sizes> &sizes,
                                         std::vector<In<double>> xs) {
    std::vector<tk_pltf_model> ms = view_models(models, sizes, "pltf.fit_coupled");
    if (xs.size() != ms.size())
        check(tk_set_error(TK_ERR_ARGUMENT, "%zu views but %zu data", ms.size(), xs.size()), "pltf.fit_coupled");
    std::vector<tk_pltf_view> views(ms.size());
    for (std::size_t v = 0; v < ms.size(); ++v) {
        check_size(("x of view " + std::to_string(v)).c_str(), xs[v].size(), tk_pltf_out_count(&ms[v]));
        views[v].model = &ms[v];
        views[v].x = xs[v].data();
    }
    char names[TK_PLTF_MAX_FACTORS][TK_PLTF_MAX_INDICES + 1];
    const int n = tk_pltf_coupled_factors((int)views.size(), views.data(), names);
    if (n < 0) check(TK_ERR_ARGUMENT, "pltf.fit_coupled");
    return std::vector<std::string>(names, names + n);
}

nb::tuple fit_coupled(const std::vector<std::string> &models, const std::vector<Sizes> &sizes,
                      std::vector<In<double>> xs, std::vector<std::optional<In<uint8_t>>> masks,
                      std::vector<Out<double>> xhats, std::vector<Out<double>> factors, Out<double> divergence_out,
                      int divergence, int backend, int iterations, uint64_t seed, int init_given,
                      int track_divergence, int threads, int device, nb::object progress) {
    const char *what = "pltf.fit_coupled";
    std::vector<tk_pltf_model> ms = view_models(models, sizes, what);
    const std::size_t nv = ms.size();
    if (xs.size() != nv || masks.size() != nv || xhats.size() != nv)
        check(tk_set_error(TK_ERR_ARGUMENT, "%zu views but %zu data, %zu masks, %zu xhat arrays", nv, xs.size(),
                           masks.size(), xhats.size()),
              what);
    std::vector<tk_pltf_view> views(nv);
    for (std::size_t v = 0; v < nv; ++v) {
        const std::size_t count = tk_pltf_out_count(&ms[v]);
        check_size(("x of view " + std::to_string(v)).c_str(), xs[v].size(), count);
        if (masks[v]) check_size(("mask of view " + std::to_string(v)).c_str(), masks[v]->size(), count);
        check_size(("xhat of view " + std::to_string(v)).c_str(), xhats[v].size(), count);
        views[v] = tk_pltf_view{&ms[v], xs[v].data(), masks[v] ? masks[v]->data() : nullptr, xhats[v].data()};
    }
    char names[TK_PLTF_MAX_FACTORS][TK_PLTF_MAX_INDICES + 1];
    const int nf = tk_pltf_coupled_factors((int)nv, views.data(), names);
    if (nf < 0) check(TK_ERR_ARGUMENT, what);
    if ((int)factors.size() != nf)
        check(tk_set_error(TK_ERR_ARGUMENT, "the views have %d distinct factors, %zu arrays given", nf,
                           factors.size()),
              what);
    if (iterations < 0) check(tk_set_error(TK_ERR_ARGUMENT, "iterations %d < 0", iterations), what);
    if (divergence_out.is_valid()) check_size("divergence", divergence_out.size(), (std::size_t)iterations + 1);
    tk_pltf_result r{};
    for (int g = 0; g < nf; ++g) {
        // the factor's size from the first view that holds it
        std::size_t count = 0;
        for (std::size_t v = 0; v < nv && !count; ++v)
            for (int f = 0; f < ms[v].num_factors && !count; ++f)
                if (factor_name(ms[v], f) == names[g]) count = tk_pltf_factor_count(&ms[v], f);
        check_size(("factor " + std::string(names[g])).c_str(), factors[g].size(), count);
        r.factors[g] = factors[g].data();
    }
    r.divergence = divergence_out.is_valid() ? divergence_out.data() : nullptr;
    Hook hook{progress, nullptr};
    const tk_pltf_options o = fit_options(divergence, backend, iterations, seed, init_given, track_divergence, threads,
                                          device, &hook);
    tk_status st;
    {
        nb::gil_scoped_release unlocked;
        st = tk_pltf_factorize_coupled((int)nv, views.data(), &o, &r);
    }
    if (hook.error) throw nb::python_error(std::move(*hook.error));
    check(st, what);
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
    m.def("pltf_coupled_factors", &coupled_factors, nb::arg("models"), nb::arg("sizes"), nb::arg("xs").noconvert());
    m.def("pltf_fit_coupled", &fit_coupled, nb::arg("models"), nb::arg("sizes"), nb::arg("xs").noconvert(),
          nb::arg("masks").noconvert(), nb::arg("xhats").noconvert(), nb::arg("factors").noconvert(),
          nb::arg("divergence_out").noconvert().none(), nb::arg("divergence"), nb::arg("backend"),
          nb::arg("iterations"), nb::arg("seed"), nb::arg("init_given"), nb::arg("track_divergence"),
          nb::arg("threads"), nb::arg("device"), nb::arg("progress").none());
    m.def("pltf_has_cblas", [] { return tk_pltf_has_cblas() != 0; });
}

}  // namespace tkpy
