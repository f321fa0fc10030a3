// tucker: sparse FastTucker (tk_tucker.h).  A sparse tensor crosses as two NumPy arrays, the
// indices (nnz x order uint32, entry-major: the core's tk_tucker_coo.idx layout) and the values
// (nnz float32), read in place through a tk_tucker_coo view; a model as lists of its A(n)
// (I_n x J) and B(n) (J x R) float32 arrays through a tk_tucker_model view.  What the core
// allocates (a read .tns, a split, a synthetic tensor, a loaded model) is handed to NumPy as is:
// each buffer becomes an array that frees it, no copy.  The training loop (iterations, metrics,
// checkpoints, the progress callback) is the Python layer's (tensorkernels/tucker.py); the
// solver object here is the C solver, one call per update.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bindings.h"
#include "tk_tucker.h"

namespace tkpy {

namespace {

using Floats = std::vector<In<float>>;
using FloatsOut = std::vector<Out<float>>;
using Dims = std::vector<uint32_t>;

// A buffer the core malloc'ed, as a NumPy array that frees it when the last reference goes.
struct Freed {
    void operator()(void *p) const { std::free(p); }
};
template <typename T> using Owned = std::unique_ptr<T, Freed>;

template <typename T> nb::object hand_over(Owned<T> &p, std::initializer_list<size_t> shape) {
    nb::capsule owner(p.get(), [](void *q) noexcept { std::free(q); });
    T *data = p.release();  // the capsule owns it now
    return nb::cast(nb::ndarray<nb::numpy, T>(data, shape, owner));
}

[[noreturn]] void argument_error(const char *what, const std::string &why) {
    throw nb::value_error((std::string(what) + ": " + why).c_str());
}

int order_of(const char *what, const Dims &dims, int min_order) {
    const int order = (int)dims.size();
    if (order < min_order || order > TK_TUCKER_MAX_ORDER)
        argument_error(what, "order " + std::to_string(order) + " is outside " + std::to_string(min_order) + ".." +
                                 std::to_string(TK_TUCKER_MAX_ORDER));
    return order;
}

// Every index inside dims: the core trusts its COO views, so an index beyond them must not
// reach it (it would read outside the model's rows).
void check_indices(const char *what, const uint32_t *idx, std::size_t nnz, const Dims &dims) {
    const std::size_t order = dims.size();
    for (std::size_t e = 0; e < nnz; ++e)
        for (std::size_t n = 0; n < order; ++n)
            if (idx[e * order + n] >= dims[n])
                argument_error(what, "entry " + std::to_string(e + 1) + " has index " +
                                         std::to_string(idx[e * order + n]) + " (0-based) in mode " +
                                         std::to_string(n + 1) + ", beyond its size " + std::to_string(dims[n]));
}

// A COO view of the caller's arrays (the core's functions that take it only read it).
tk_tucker_coo coo_view(const char *what, const In<uint32_t> &idx, const In<float> *val, const Dims &dims,
                       int min_order = 2) {
    tk_tucker_coo t{};
    t.order = order_of(what, dims, min_order);
    t.nnz = idx.size() / (std::size_t)t.order;
    check_size("indices", idx.size(), t.nnz * (std::size_t)t.order);
    if (val) check_size("values", val->size(), t.nnz);
    for (int n = 0; n < t.order; ++n) {
        if (dims[n] == 0) argument_error(what, "mode " + std::to_string(n + 1) + " has size 0");
        t.dims[n] = dims[n];
    }
    check_indices(what, idx.data(), t.nnz, dims);
    t.idx = const_cast<uint32_t *>(idx.data());
    t.val = val ? const_cast<float *>(val->data()) : nullptr;
    return t;
}

// A model view of the caller's A(n) and B(n) arrays: shapes (I_n, J) and (J, R) checked.
template <typename Array>
tk_tucker_model model_view(std::vector<Array> &a, std::vector<Array> &b, int rank_j, int rank_r) {
    tk_tucker_model m{};
    if (a.size() != b.size() || a.size() < 3 || a.size() > TK_TUCKER_MAX_ORDER)
        argument_error("model", std::to_string(a.size()) + " A and " + std::to_string(b.size()) +
                                    " B arrays: a model of order 3.." + std::to_string(TK_TUCKER_MAX_ORDER) +
                                    " has one of each per mode");
    if (rank_j < TK_TUCKER_MIN_RANK || rank_j > TK_TUCKER_MAX_RANK || rank_r < TK_TUCKER_MIN_RANK ||
        rank_r > TK_TUCKER_MAX_RANK)
        argument_error("model", "ranks J=" + std::to_string(rank_j) + ", R=" + std::to_string(rank_r) +
                                    " outside " + std::to_string(TK_TUCKER_MIN_RANK) + ".." +
                                    std::to_string(TK_TUCKER_MAX_RANK));
    m.order = (int)a.size();
    m.rank_j = rank_j;
    m.rank_r = rank_r;
    for (int n = 0; n < m.order; ++n) {
        if (a[n].ndim() != 2 || a[n].shape(1) != (std::size_t)rank_j || a[n].shape(0) == 0 ||
            a[n].shape(0) > UINT32_MAX)
            argument_error("model", "A" + std::to_string(n + 1) + " must have shape (I, " + std::to_string(rank_j) +
                                        ") with 1 <= I < 2^32");
        if (b[n].ndim() != 2 || b[n].shape(0) != (std::size_t)rank_j || b[n].shape(1) != (std::size_t)rank_r)
            argument_error("model", "B" + std::to_string(n + 1) + " must have shape (" + std::to_string(rank_j) +
                                        ", " + std::to_string(rank_r) + ")");
        m.dims[n] = (uint32_t)a[n].shape(0);
        m.a[n] = const_cast<float *>(a[n].data());
        m.b[n] = const_cast<float *>(b[n].data());
    }
    return m;
}

Dims dims_of(const tk_tucker_coo &t) { return Dims(t.dims, t.dims + t.order); }

// (indices, values, dims) of a COO the core allocated; t is emptied.
nb::tuple hand_over_coo(tk_tucker_coo &t) {
    Owned<uint32_t> idx(t.idx);
    Owned<float> val(t.val);
    const Dims dims = dims_of(t);
    const std::size_t nnz = t.nnz, order = (std::size_t)t.order;
    t = tk_tucker_coo{};
    nb::object i = hand_over(idx, {nnz, order});
    nb::object v = hand_over(val, {nnz});
    return nb::make_tuple(i, v, dims);
}

// (A list, B list) of a model the core allocated; m is emptied.
nb::tuple hand_over_model(tk_tucker_model &m) {
    std::vector<Owned<float>> a, b;
    for (int n = 0; n < m.order; ++n) a.emplace_back(m.a[n]), b.emplace_back(m.b[n]);
    const tk_tucker_model shape = m;
    m = tk_tucker_model{};
    nb::list la, lb;
    for (int n = 0; n < shape.order; ++n) {
        la.append(hand_over(a[n], {shape.dims[n], (std::size_t)shape.rank_j}));
        lb.append(hand_over(b[n], {(std::size_t)shape.rank_j, (std::size_t)shape.rank_r}));
    }
    return nb::make_tuple(la, lb);
}

nb::tuple tns_read(const std::string &path, int order, std::optional<Dims> dims_hint, bool queries, bool cached) {
    if (dims_hint && (int)dims_hint->size() != order)
        argument_error("dims", "give one size per mode (" + std::to_string(order) + "), not " +
                                   std::to_string(dims_hint->size()));
    tk_tucker_coo t{};
    int from_cache = 0;
    tk_status st;
    {
        nb::gil_scoped_release unlocked;
        st = queries  ? tk_tns_read_queries(path.c_str(), order, &t)
             : cached ? tk_tns_read_cached(path.c_str(), order, &t, &from_cache)
                      : tk_tns_read(path.c_str(), order, dims_hint ? dims_hint->data() : nullptr, &t);
    }
    check(st, "tucker.read_tns");
    return hand_over_coo(t);
}

void tns_write(const std::string &path, In<uint32_t> idx, In<float> val, const Dims &dims) {
    tk_tucker_coo t = coo_view("coo", idx, &val, dims);
    tk_status st;
    {
        nb::gil_scoped_release unlocked;
        st = tk_tns_write(path.c_str(), &t);
    }
    check(st, "tucker.write_tns");
}

void coo_check(In<uint32_t> idx, In<float> val, const Dims &dims, const std::string &name) {
    tk_tucker_coo t{};
    t.order = order_of(name.c_str(), dims, 2);
    t.nnz = val.size();
    check_size("indices", idx.size(), t.nnz * (std::size_t)t.order);
    for (int n = 0; n < t.order; ++n) t.dims[n] = dims[n];
    t.idx = const_cast<uint32_t *>(idx.data());
    t.val = const_cast<float *>(val.data());
    tk_status st;
    {
        nb::gil_scoped_release unlocked;
        st = tk_tucker_coo_check(&t, name.c_str());
    }
    check(st, "tucker.Coo");
}

// tk_tucker_coo_fingerprint: what a checkpoint records of its training entries (train_entries).
uint64_t coo_fingerprint(In<uint32_t> idx, In<float> val, const Dims &dims) {
    const tk_tucker_coo t = coo_view("coo", idx, &val, dims);
    nb::gil_scoped_release unlocked;
    return tk_tucker_coo_fingerprint(&t);
}

nb::tuple split(In<uint32_t> idx, In<float> val, const Dims &dims, double test_fraction, uint64_t seed) {
    tk_tucker_coo all = coo_view("coo", idx, &val, dims), train{}, test{};
    tk_status st;
    {
        nb::gil_scoped_release unlocked;
        st = tk_tucker_coo_split(&all, test_fraction, seed, &train, &test);
    }
    check(st, "tucker.split");
    nb::tuple a = hand_over_coo(train);
    nb::tuple b = hand_over_coo(test);
    return nb::make_tuple(a, b);
}

nb::tuple synth(const Dims &dims, std::size_t nnz, int rank_j, int rank_r, double noise, double popularity, bool unique,
                uint64_t seed, int threads, bool truth) {
    tk_tucker_synth_options o;
    tk_tucker_synth_options_init(&o);
    o.order = order_of("shape", dims, 3);
    for (int n = 0; n < o.order; ++n) o.dims[n] = dims[n];
    o.nnz = nnz;
    o.rank_j = rank_j;
    o.rank_r = rank_r;
    o.noise = noise;
    o.popularity = popularity;
    o.unique = unique;
    o.seed = seed;
    o.num_threads = threads;
    tk_tucker_coo t{};
    tk_tucker_model m{};
    tk_status st;
    {
        nb::gil_scoped_release unlocked;
        st = tk_tucker_synth(&o, &t, truth ? &m : nullptr);
    }
    check(st, "tucker.synth");
    nb::tuple coo = hand_over_coo(t);
    nb::object model = truth ? nb::object(hand_over_model(m)) : nb::none();
    return nb::make_tuple(coo, model);
}

void model_init(FloatsOut a, FloatsOut b, int rank_j, int rank_r, uint64_t seed, double target_mean) {
    tk_tucker_model m = model_view(a, b, rank_j, rank_r);
    tk_status st;
    {
        nb::gil_scoped_release unlocked;
        st = tk_tucker_model_init(&m, seed, target_mean);
    }
    check(st, "tucker.init_model");
}

void spectral_start(In<uint32_t> idx, In<float> val, const Dims &dims, FloatsOut a, FloatsOut b, int rank_j,
                    int rank_r, uint64_t seed, int threads) {
    tk_tucker_model m = model_view(a, b, rank_j, rank_r);
    tk_tucker_coo t = coo_view("coo", idx, &val, dims, 3);
    tk_tucker_spectral_options o;
    tk_tucker_spectral_options_init(&o);
    o.seed = seed;
    o.num_threads = threads;
    tk_status st;
    {
        nb::gil_scoped_release unlocked;
        st = tk_tucker_spectral_start(&t, &o, &m);
    }
    check(st, "tucker.spectral_start");
}

// The default start's rule (tk_tucker_sampling_of, tk_tucker_prefers_spectral): (entries a
// column of the best-sampled unfolding, its mode, entries a row of the largest mode, that mode
// (0-based), spectral?).
nb::tuple start_choice(In<uint32_t> idx, In<float> val, const Dims &dims, int rank_j) {
    const tk_tucker_coo t = coo_view("coo", idx, &val, dims);
    tk_tucker_sampling s;
    tk_tucker_sampling_of(&t, &s);
    return nb::make_tuple(s.column_entries, s.column_mode, s.row_entries, s.row_mode,
                          tk_tucker_prefers_spectral(&t, rank_j) != 0);
}

// One deflation round on the model in a and b, in place; each mode's kept count returned.
std::vector<int> spectral_deflate(In<uint32_t> idx, In<float> val, const Dims &dims, FloatsOut a, FloatsOut b,
                                  int rank_j, int rank_r, double keep_fraction, uint64_t seed, int threads) {
    tk_tucker_model m = model_view(a, b, rank_j, rank_r);
    tk_tucker_coo t = coo_view("coo", idx, &val, dims, 3);
    tk_tucker_deflate_options o;
    tk_tucker_deflate_options_init(&o);
    o.keep_fraction = keep_fraction;
    o.seed = seed;
    o.num_threads = threads;
    std::vector<int> kept((size_t)m.order, 0);
    tk_status st;
    {
        nb::gil_scoped_release unlocked;
        st = tk_tucker_spectral_deflate(&t, &o, &m, kept.data());
    }
    check(st, "tucker.spectral_deflate");
    return kept;
}

void predict(Floats a, Floats b, int rank_j, int rank_r, In<uint32_t> idx, Out<float> out) {
    tk_tucker_model m = model_view(a, b, rank_j, rank_r);
    tk_tucker_coo q = coo_view("indices", idx, nullptr, Dims(m.dims, m.dims + m.order));
    check_size("out", out.size(), q.nnz);
    tk_status st;
    {
        nb::gil_scoped_release unlocked;
        st = tk_tucker_predict(&m, &q, out.data());
    }
    check(st, "tucker.predict");
}

// Every cell of the model's grid into out (prod(dims) floats, the FIRST index fastest).
void predict_dense(Floats a, Floats b, int rank_j, int rank_r, Out<float> out) {
    tk_tucker_model m = model_view(a, b, rank_j, rank_r);
    std::size_t cells = 1;
    for (int n = 0; n < m.order; ++n) cells *= m.dims[n];
    check_size("out", out.size(), cells);
    tk_status st;
    {
        nb::gil_scoped_release unlocked;
        st = tk_tucker_predict_dense(&m, out.data());
    }
    check(st, "tucker.predict_dense");
}

nb::dict evaluate(Floats a, Floats b, int rank_j, int rank_r, In<uint32_t> idx, In<float> val, const Dims &dims,
                  double lambda_a, double lambda_b) {
    tk_tucker_model m = model_view(a, b, rank_j, rank_r);
    tk_tucker_coo t = coo_view("coo", idx, &val, dims);
    tk_tucker_metrics r{};
    tk_status st;
    {
        nb::gil_scoped_release unlocked;
        st = tk_tucker_evaluate(&m, &t, lambda_a, lambda_b, &r);
    }
    check(st, "tucker.evaluate");
    nb::dict d;
    d["sse"] = r.sse;
    d["rmse"] = r.rmse;
    d["mae"] = r.mae;
    d["loss"] = r.loss;
    d["count"] = r.count;
    return d;
}

void model_save(const std::string &dir, Floats a, Floats b, int rank_j, int rank_r, const std::string &extra) {
    tk_tucker_model m = model_view(a, b, rank_j, rank_r);
    tk_status st;
    {
        nb::gil_scoped_release unlocked;
        st = tk_tucker_model_save(dir.c_str(), &m, extra.c_str());
    }
    check(st, "tucker.save_model");
}

nb::tuple model_load(const std::string &dir) {
    tk_tucker_model m{};
    char *manifest = nullptr;
    tk_status st;
    {
        nb::gil_scoped_release unlocked;
        st = tk_tucker_model_load(dir.c_str(), &m, &manifest);
    }
    check(st, "tucker.load_model");
    Owned<char> text(manifest);
    const int rank_j = m.rank_j, rank_r = m.rank_r;
    nb::tuple ab = hand_over_model(m);
    return nb::make_tuple(ab[0], ab[1], rank_j, rank_r, std::string(text ? text.get() : ""));
}

std::optional<std::string> manifest_get(const std::string &manifest, const std::string &key) {
    char value[4096];
    if (!tk_tucker_manifest_get(manifest.c_str(), key.c_str(), value, sizeof value)) return std::nullopt;
    return std::string(value);
}

// The C library's options of a factor update by name, as `tk-tucker train --factor-update`
// starts from them: "als" tk_tucker_options_init, "sgd" tk_tucker_options_init_sgd.
tk_tucker_options train_options(const std::string &factor_update) {
    tk_tucker_options o;
    if (factor_update == "als")
        tk_tucker_options_init(&o);
    else if (factor_update == "sgd")
        tk_tucker_options_init_sgd(&o);
    else
        argument_error("factor_update", "must be 'als' or 'sgd', not '" + factor_update + "'");
    return o;
}

// tensorkernels.tucker.train's defaults of a factor update, read from the C library (not
// restated in Python): its rates and ridges, and the iterations of `tk-tucker train`.
nb::dict train_defaults(const std::string &factor_update) {
    const tk_tucker_options o = train_options(factor_update);
    nb::dict d;
    d["lr_a"] = o.lr_a;
    d["lr_b"] = o.lr_b;
    d["lambda_a"] = o.lambda_a;
    d["lambda_b"] = o.lambda_b;
    d["fiber_threshold"] = o.fiber_threshold;
    d["iterations"] = TK_TUCKER_DEFAULT_ITERATIONS;
    return d;
}

// The C solver: built once from the training entries and a start model (the core takes a copy
// of it), then one GIL-free call per update.  It keeps the entries' arrays alive (COO storage
// reads them at every update).
class Solver {
  public:
    Solver(In<uint32_t> idx, In<float> val, const Dims &dims, Floats a, Floats b, int rank_j, int rank_r, int backend,
           int storage, int dbl, const std::string &factor_update, double lr_a, double lr_b, double lambda_a,
           double lambda_b, std::size_t fiber_threshold, int threads, int device, int gpus)
        : idx_(idx), val_(val) {
        tk_tucker_model m = model_view(a, b, rank_j, rank_r);
        tk_tucker_coo t = coo_view("train", idx_, &val_, dims, 3);
        tk_tucker_options o = train_options(factor_update);
        o.backend = static_cast<tk_backend>(backend);
        o.storage = static_cast<tk_tucker_storage>(storage);
        o.precision = dbl ? TK_PRECISION_DOUBLE : TK_PRECISION_SINGLE;
        o.lr_a = lr_a;
        o.lr_b = lr_b;
        o.lambda_a = lambda_a;
        o.lambda_b = lambda_b;
        o.fiber_threshold = fiber_threshold;
        o.num_threads = threads;
        o.cuda_device = device;
        o.cuda_device_count = gpus;
        order_ = m.order, rank_j_ = rank_j, rank_r_ = rank_r;
        for (int n = 0; n < m.order; ++n) dims_[n] = m.dims[n];
        tk_status st;
        {
            nb::gil_scoped_release unlocked;
            st = tk_tucker_solver_create(&o, &t, &m, &s_);
        }
        check(st, "tucker.train");
    }
    ~Solver() { tk_tucker_solver_destroy(s_); }
    Solver(const Solver &) = delete;
    Solver &operator=(const Solver &) = delete;

    void update_factors() { run(tk_tucker_update_factors); }
    void update_core() { run(tk_tucker_update_core); }

    // The current model into the caller's arrays (shapes checked against the solver's).
    void model(FloatsOut a, FloatsOut b) {
        open();
        tk_tucker_model m = model_view(a, b, rank_j_, rank_r_);
        for (int n = 0; n < order_; ++n)
            if (m.order != order_ || m.dims[n] != dims_[n])
                argument_error("model", "the arrays' shapes differ from the solver's");
        tk_status st;
        {
            nb::gil_scoped_release unlocked;
            st = tk_tucker_solver_model(s_, &m);
        }
        check(st, "tucker.train");
    }

    // (factor pass ms, core pass ms, set-up ms) of the last updates.
    nb::tuple timing() {
        open();
        tk_timing f{}, c{};
        tk_tucker_solver_timing(s_, &f, &c);
        return nb::make_tuple(f.kernel_ms, c.kernel_ms, f.setup_ms);
    }

    // Frees the solver now (its GPU memory, its B-CSF copies) rather than at garbage collection.
    void close() {
        tk_tucker_solver_destroy(s_);
        s_ = nullptr;
    }

  private:
    void open() const {
        if (!s_) throw nb::value_error("tucker.train: the solver is closed");
    }
    void run(tk_status (*update)(tk_tucker_solver *)) {
        open();
        tk_status st;
        {
            nb::gil_scoped_release unlocked;
            st = update(s_);
        }
        check(st, "tucker.train");
    }

    In<uint32_t> idx_;
    In<float> val_;
    tk_tucker_solver *s_ = nullptr;
    int order_ = 0, rank_j_ = 0, rank_r_ = 0;
    uint32_t dims_[TK_TUCKER_MAX_ORDER] = {0};
};

}  // namespace

void bind_tucker(nb::module_ &m) {
    m.def("tucker_tns_read", &tns_read, nb::arg("path"), nb::arg("order"), nb::arg("dims").none(),
          nb::arg("queries"), nb::arg("cached"));
    m.def("tucker_tns_write", &tns_write, nb::arg("path"), nb::arg("indices").noconvert(),
          nb::arg("values").noconvert(), nb::arg("dims"));
    m.def("tucker_coo_check", &coo_check, nb::arg("indices").noconvert(), nb::arg("values").noconvert(),
          nb::arg("dims"), nb::arg("name"));
    m.def("tucker_coo_fingerprint", &coo_fingerprint, nb::arg("indices").noconvert(), nb::arg("values").noconvert(),
          nb::arg("dims"));
    m.def("tucker_split", &split, nb::arg("indices").noconvert(), nb::arg("values").noconvert(), nb::arg("dims"),
          nb::arg("test_fraction"), nb::arg("seed"));
    m.def("tucker_synth", &synth, nb::arg("dims"), nb::arg("nnz"), nb::arg("rank_j"), nb::arg("rank_r"),
          nb::arg("noise"), nb::arg("popularity"), nb::arg("unique"), nb::arg("seed"), nb::arg("threads"),
          nb::arg("truth"));
    m.def("tucker_model_init", &model_init, nb::arg("a").noconvert(), nb::arg("b").noconvert(), nb::arg("rank_j"),
          nb::arg("rank_r"), nb::arg("seed"), nb::arg("target_mean"));
    m.def("tucker_spectral_start", &spectral_start, nb::arg("indices").noconvert(), nb::arg("values").noconvert(),
          nb::arg("dims"), nb::arg("a").noconvert(), nb::arg("b").noconvert(), nb::arg("rank_j"), nb::arg("rank_r"),
          nb::arg("seed"), nb::arg("threads"));
    m.def("tucker_start_choice", &start_choice, nb::arg("indices").noconvert(), nb::arg("values").noconvert(),
          nb::arg("dims"), nb::arg("rank_j"));
    m.def("tucker_spectral_below", [] {
        return nb::make_tuple(TK_TUCKER_SPECTRAL_BELOW_COLUMN_ENTRIES, TK_TUCKER_SPECTRAL_BELOW_ROW_ENTRIES_PER_RANK);
    });
    m.def("tucker_spectral_deflate", &spectral_deflate, nb::arg("indices").noconvert(), nb::arg("values").noconvert(),
          nb::arg("dims"), nb::arg("a").noconvert(), nb::arg("b").noconvert(), nb::arg("rank_j"), nb::arg("rank_r"),
          nb::arg("keep_fraction"), nb::arg("seed"), nb::arg("threads"));
    m.def("tucker_predict", &predict, nb::arg("a").noconvert(), nb::arg("b").noconvert(), nb::arg("rank_j"),
          nb::arg("rank_r"), nb::arg("indices").noconvert(), nb::arg("out").noconvert());
    m.def("tucker_predict_dense", &predict_dense, nb::arg("a").noconvert(), nb::arg("b").noconvert(),
          nb::arg("rank_j"), nb::arg("rank_r"), nb::arg("out").noconvert());
    m.def("tucker_evaluate", &evaluate, nb::arg("a").noconvert(), nb::arg("b").noconvert(), nb::arg("rank_j"),
          nb::arg("rank_r"), nb::arg("indices").noconvert(), nb::arg("values").noconvert(), nb::arg("dims"),
          nb::arg("lambda_a"), nb::arg("lambda_b"));
    m.def("tucker_model_save", &model_save, nb::arg("dir"), nb::arg("a").noconvert(), nb::arg("b").noconvert(),
          nb::arg("rank_j"), nb::arg("rank_r"), nb::arg("extra"));
    m.def("tucker_model_load", &model_load, nb::arg("dir"));
    m.def("tucker_manifest_get", &manifest_get, nb::arg("manifest"), nb::arg("key"));
    m.def("tucker_max_devices", [] { return tk_tucker_max_devices(); });
    m.def("tucker_limits", [] {
        return nb::make_tuple(TK_TUCKER_MAX_ORDER, TK_TUCKER_MIN_RANK, TK_TUCKER_MAX_RANK,
                              TK_TUCKER_DEFAULT_FIBER_THRESHOLD);
    });
    m.def("tucker_train_defaults", &train_defaults, nb::arg("factor_update"));
    nb::class_<Solver>(m, "TuckerSolver")
        .def(nb::init<In<uint32_t>, In<float>, const Dims &, Floats, Floats, int, int, int, int, int,
                      const std::string &, double, double, double, double, std::size_t, int, int, int>(),
             nb::arg("indices").noconvert(), nb::arg("values").noconvert(), nb::arg("dims"), nb::arg("a").noconvert(),
             nb::arg("b").noconvert(), nb::arg("rank_j"), nb::arg("rank_r"), nb::arg("backend"), nb::arg("storage"),
             nb::arg("double"), nb::arg("factor_update"), nb::arg("lr_a"), nb::arg("lr_b"), nb::arg("lambda_a"),
             nb::arg("lambda_b"), nb::arg("fiber_threshold"), nb::arg("threads"), nb::arg("device"), nb::arg("gpus"))
        .def("update_factors", &Solver::update_factors)
        .def("update_core", &Solver::update_core)
        .def("model", &Solver::model, nb::arg("a").noconvert(), nb::arg("b").noconvert())
        .def("timing", &Solver::timing)
        .def("close", &Solver::close);
}

}  // namespace tkpy
