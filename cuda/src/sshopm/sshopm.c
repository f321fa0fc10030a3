/* SS-HOPM front end: options, validation, shared tables, start vectors, dispatch. */
#define _POSIX_C_SOURCE 200809L
#include "sshopm_internal.h"
#include "common/device_arrays.h"
#include "common/multi_device.h"
#include "common/tk_hd.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>


double tk_sshopm_default_tol(tk_precision precision)
{
    return precision == TK_PRECISION_DOUBLE ? 1e-12 : 1e-6;
}

void tk_sshopm_options_init(tk_sshopm_options *opts, int order, int dim)
{
    memset(opts, 0, sizeof *opts);
    opts->order = order;
    opts->dim = dim;
    opts->precision = TK_PRECISION_SINGLE;
    opts->backend = TK_BACKEND_CPU;
    opts->impl = TK_IMPL_GENERAL;
    opts->shift_mode = TK_SHIFT_FIXED;
    opts->shift = 0.0;
    opts->tol = tk_sshopm_default_tol(TK_PRECISION_SINGLE);
    opts->max_iter = 1000;
    opts->num_starts = 128;
}

int tk_sshopm_has_unrolled(int order, int dim)
{
    return dim == 3 && (order == 4 || order == 6 || order == 8);
}

double tk_sshopm_flops_per_iteration(int order, int dim)
{
    if (order == 4 && dim == 3) return 140.0; /* the seed's own count (its Section 6.5) */
    double k1 = (double)tk_sym_num_unique(order - 1, dim);
    return dim * (order * k1 + k1 - 1);
}

tk_status tk_sshopm_tables_build(int order, int dim, tk_sshopm_tables *t)
{
    memset(t, 0, sizeof *t);
    t->order = order;
    t->dim = dim;
    t->k = tk_sym_num_unique(order, dim);
    size_t k1 = tk_sym_num_unique(order - 1, dim);
    if (!t->k || !k1 || k1 > (size_t)1 << 24)
        return tk_set_error(TK_ERR_UNSUPPORTED, "order %d, dimension %d: too many unique entries", order, dim);
    t->k1 = (int)k1;
    t->idx1 = malloc(k1 * (size_t)(order - 1));
    t->map = malloc(sizeof(unsigned) * k1 * (size_t)dim);
    t->mult1 = malloc(sizeof(double) * k1);
    int *index = malloc(sizeof(int) * (size_t)order);
    if (!t->idx1 || !t->map || !t->mult1 || !index) {
        free(index);
        tk_sshopm_tables_free(t);
        return tk_set_error(TK_ERR_MEMORY, "out of memory building tables for order %d, dimension %d", order, dim);
    }
    tk_sym_index_first(order - 1, index);
    for (size_t c = 0; c < k1; ++c) {
        for (int q = 0; q < order - 1; ++q) t->idx1[c * (size_t)(order - 1) + (size_t)q] = (unsigned char)index[q];
        t->mult1[c] = tk_sym_multiplicity(order - 1, index);
        for (int j = 0; j < dim; ++j) {
            index[order - 1] = j; /* the class plus j; tk_sym_rank sorts it */
            t->map[(size_t)j * k1 + c] = (unsigned)tk_sym_rank(order, dim, index);
        }
        tk_sym_index_next(order - 1, dim, index);
    }
    free(index);
    return TK_OK;
}

void tk_sshopm_tables_free(tk_sshopm_tables *t)
{
    free(t->idx1);
    free(t->map);
    free(t->mult1);
    memset(t, 0, sizeof *t);
}

static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

tk_status tk_sshopm_make_starts(const tk_sshopm_options *o, double *starts)
{
    const int n = o->dim;
    uint64_t state = o->seed;
    for (int s = 0; s < o->num_starts; ++s) {
        double *x = starts + (size_t)s * (size_t)n, norm2 = 0;
        if (o->starts) {
            for (int i = 0; i < n; ++i) {
                x[i] = o->precision == TK_PRECISION_DOUBLE ? ((const double *)o->starts)[(size_t)s * n + i]
                                                           : ((const float *)o->starts)[(size_t)s * n + i];
                norm2 += x[i] * x[i];
            }
            if (!(norm2 > 0) || !isfinite(norm2))
                return tk_set_error(TK_ERR_DATA, "start vector %d is zero or not finite", s);
        } else {
            /* The seed's choice: entries uniform in [-1, 1], then normalized. */
            do {
                norm2 = 0;
                for (int i = 0; i < n; ++i) {
                    x[i] = (double)(splitmix64(&state) >> 11) * 0x1.0p-52 - 1.0;
                    norm2 += x[i] * x[i];
                }
            } while (norm2 < 1e-12);
        }
        double inv = 1.0 / sqrt(norm2);
        for (int i = 0; i < n; ++i) x[i] *= inv;
    }
    return TK_OK;
}

static tk_status validate_options(const tk_sshopm_options *o)
{
    if (!o) return tk_set_error(TK_ERR_ARGUMENT, "no options given");
    if (o->order < 2) return tk_set_error(TK_ERR_ARGUMENT, "order must be at least 2, got %d", o->order);
    if (o->dim < 2) return tk_set_error(TK_ERR_ARGUMENT, "dimension must be at least 2, got %d", o->dim);
    if (o->order > TK_KERNEL_MAX_ORDER)
        return tk_set_error(TK_ERR_UNSUPPORTED, "order %d is above the supported %d", o->order, TK_KERNEL_MAX_ORDER);
    if (o->dim > 255) return tk_set_error(TK_ERR_UNSUPPORTED, "dimension %d is above the supported 255", o->dim);
    if (o->precision != TK_PRECISION_SINGLE && o->precision != TK_PRECISION_DOUBLE)
        return tk_set_error(TK_ERR_ARGUMENT, "unknown precision %d", (int)o->precision);
    if (o->num_starts < 1) return tk_set_error(TK_ERR_ARGUMENT, "need at least one start, got %d", o->num_starts);
    if (o->max_iter < 0) return tk_set_error(TK_ERR_ARGUMENT, "max_iter must be >= 0, got %d", o->max_iter);
    if (!(o->tol >= 0) || !isfinite(o->tol)) return tk_set_error(TK_ERR_ARGUMENT, "tolerance must be finite and >= 0");
    if (!isfinite(o->shift)) return tk_set_error(TK_ERR_ARGUMENT, "shift must be finite");
    if (o->impl == TK_IMPL_UNROLLED && !tk_sshopm_has_unrolled(o->order, o->dim))
        return tk_set_error(TK_ERR_UNSUPPORTED,
                            "no unrolled kernel for order %d, dimension %d (unrolled: (4,3), (6,3), (8,3); use general)",
                            o->order, o->dim);
    if (o->shift_mode == TK_SHIFT_ADAPTIVE && o->dim > TK_KERNEL_MAX_DIM)
        return tk_set_error(TK_ERR_UNSUPPORTED, "the adaptive shift supports dimension up to %d, got %d",
                            TK_KERNEL_MAX_DIM, o->dim);
    if (!tk_device_count_checked(o->cuda_device_count, "cuda_device_count")) return TK_ERR_ARGUMENT;
    return TK_OK;
}

/* The position of the first non-finite value of v[0 .. count), or count: blocks checked at
 * once (x * 0 is 0 for every finite x and NaN otherwise, a sum that vectorizes), only a block
 * that holds one searched entry by entry; blocks over `threads` threads, the lowest found kept. */
#define TK_DEFINE_FIRST_NON_FINITE(NAME, REAL)                                                  \
    static size_t NAME(const REAL *v, size_t count, int threads)                               \
    {                                                                                          \
        enum { block = 4096 };                                                                 \
        size_t bad = count;                                                                    \
        _Pragma("omp parallel for num_threads(threads) reduction(min : bad) schedule(static)") \
        for (size_t b = 0; b < count; b += block) {                                            \
            const size_t end = count - b < block ? count : b + block;                          \
            REAL zero = 0;                                                                     \
            _Pragma("omp simd reduction(+ : zero)")                                            \
            for (size_t e = b; e < end; ++e) zero += v[e] * (REAL)0;                           \
            if (zero == 0) continue;                                                           \
            for (size_t e = b; e < end; ++e)                                                   \
                if (!isfinite(v[e])) {                                                         \
                    if (e < bad) bad = e;                                                      \
                    break;                                                                     \
                }                                                                              \
        }                                                                                      \
        return bad;                                                                            \
    }
TK_DEFINE_FIRST_NON_FINITE(first_non_finite_f, float)
TK_DEFINE_FIRST_NON_FINITE(first_non_finite_d, double)
#undef TK_DEFINE_FIRST_NON_FINITE

static tk_status validate_batch(const tk_sshopm_options *o, size_t num_tensors, const void *packed)
{
    if (num_tensors && !packed) return tk_set_error(TK_ERR_ARGUMENT, "no tensor data given");
    size_t k = tk_sym_num_unique(o->order, o->dim);
    size_t elem = o->precision == TK_PRECISION_DOUBLE ? sizeof(double) : sizeof(float);
    if (!k || num_tensors > SIZE_MAX / k / elem / (size_t)o->num_starts)
        return tk_set_error(TK_ERR_MEMORY, "%zu tensors of order %d, dimension %d overflow memory sizes", num_tensors,
                            o->order, o->dim);
    /* Non-finite entries would make every start of the tensor meaningless.  The first one in
     * the packed order is reported.  A large batch for the GPU or the omp backend is checked
     * by threads (1M (4,3) tensors take about 6 ms on one core, a sixth of the unrolled
     * kernel's time; the cpu backend stays on its one thread). */
    const size_t total = num_tensors * k;
    const int threads = o->backend == TK_BACKEND_CPU || total < ((size_t)1 << 20) ? 1
                        : o->backend == TK_BACKEND_OMP && o->num_threads > 0 ? o->num_threads
                                                                              : omp_get_max_threads();
    const size_t bad = o->precision == TK_PRECISION_DOUBLE ? first_non_finite_d(packed, total, threads)
                                                           : first_non_finite_f(packed, total, threads);
    if (bad < total)
        return tk_set_error(TK_ERR_DATA, "tensor %zu has a non-finite entry (packed position %zu)", bad / k, bad % k);
    return TK_OK;
}

static tk_status validate_backend(const tk_sshopm_options *o)
{
    if (o->backend != TK_BACKEND_CPU && o->backend != TK_BACKEND_OMP && o->backend != TK_BACKEND_CUDA)
        return tk_set_error(TK_ERR_ARGUMENT, "unknown backend %d", (int)o->backend);
    return TK_OK;
}

/* What a plan holds: its own copy of the options (their starts pointer cleared: the
 * start vectors are the plan's), the tables, and the CUDA backend's device state, one a
 * device. */
struct tk_sshopm_plan {
    tk_sshopm_options opts;
    tk_sshopm_tables tables;
    void *starts; /* num_starts * dim unit vectors in opts.precision */
    int num_devices; /* CUDA: devices opts.cuda_device .. + num_devices - 1; 0 on the CPU */
    tk_sshopm_cuda *cuda[TK_MAX_CUDA_DEVICES];
    tk_eigenpairs device_pairs[TK_MAX_CUDA_DEVICES]; /* over several devices: each one's pairs of
                                                        a distinct execute, kept for the next */
};

void tk_sshopm_plan_destroy(tk_sshopm_plan *plan)
{
    if (!plan) return;
    for (int d = 0; d < plan->num_devices; ++d) {
        tk_sshopm_cuda_destroy(plan->cuda[d]);
        tk_eigenpairs_free(&plan->device_pairs[d]);
    }
    tk_sshopm_tables_free(&plan->tables);
    free(plan->starts);
    free(plan);
}

/* The CUDA states, one a device, each for its share of max_batch (an execute gives each
 * device a contiguous share of its tensors, tk_run_on_devices). */
static tk_status create_cuda_states(tk_sshopm_plan *plan, size_t max_batch)
{
    const int devices = tk_device_count_checked(plan->opts.cuda_device_count, "cuda_device_count");
    tk_status status = tk_cuda_require_devices(plan->opts.cuda_device, devices);
    size_t first;
    const size_t share = tk_device_range(max_batch, devices, 0, &first); /* the largest share */
    for (int d = 0; d < devices && status == TK_OK; ++d) {
        tk_sshopm_options one = plan->opts; /* copied by the state */
        one.cuda_device = plan->opts.cuda_device + d, one.cuda_device_count = 1;
        status = tk_sshopm_cuda_create(&one, &plan->tables, plan->starts, share, &plan->cuda[d]);
        if (status == TK_OK) plan->num_devices = d + 1;
    }
    return status;
}

/* Options already validated. */
static tk_status plan_create(const tk_sshopm_options *o, size_t max_batch, tk_sshopm_plan **out)
{
    *out = NULL;
    const size_t count = (size_t)o->num_starts * (size_t)o->dim;
    tk_sshopm_plan *plan = calloc(1, sizeof *plan);
    double *starts_d = malloc(sizeof(double) * count);
    tk_status status = TK_OK;
    if (!plan || !starts_d) {
        free(plan);
        free(starts_d);
        return tk_set_error(TK_ERR_MEMORY, "out of memory for %d start vectors", o->num_starts);
    }
    plan->opts = *o;
    plan->opts.starts = NULL;
    if ((status = tk_sshopm_make_starts(o, starts_d)) != TK_OK) goto fail;
    if (o->precision == TK_PRECISION_DOUBLE) {
        plan->starts = starts_d;
        starts_d = NULL;
    } else {
        float *starts_f = malloc(sizeof(float) * count);
        if (!starts_f) {
            status = tk_set_error(TK_ERR_MEMORY, "out of memory for %d start vectors", o->num_starts);
            goto fail;
        }
        for (size_t e = 0; e < count; ++e) starts_f[e] = (float)starts_d[e];
        plan->starts = starts_f;
    }
    if ((status = tk_sshopm_tables_build(o->order, o->dim, &plan->tables)) != TK_OK) goto fail;
    if (o->backend == TK_BACKEND_CUDA && (status = create_cuda_states(plan, max_batch)) != TK_OK) goto fail;
    free(starts_d);
    *out = plan;
    return TK_OK;
fail:
    free(starts_d);
    tk_sshopm_plan_destroy(plan);
    return status;
}

tk_status tk_sshopm_plan_create(const tk_sshopm_options *o, size_t max_batch, tk_sshopm_plan **plan)
{
    tk_clear_error();
    if (!plan) return tk_set_error(TK_ERR_ARGUMENT, "no place for the plan given");
    *plan = NULL;
    tk_status status = validate_options(o);
    if (status == TK_OK) status = validate_backend(o);
    if (status != TK_OK) return status;
    return plan_create(o, max_batch, plan);
}

/* One batch's arrays and each device's kernel time (run_device). */
typedef struct {
    tk_sshopm_plan *plan;
    const void *packed;
    const tk_sshopm_starts_result *out;
    double kernel_ms[TK_MAX_CUDA_DEVICES];
} sshopm_devices_run;

/* Device `index`'s share of a batch: its tensors' slice of the input and of every result. */
static tk_status run_device(void *ctx, int index, size_t first, size_t count)
{
    sshopm_devices_run *r = ctx;
    const tk_sshopm_options *o = &r->plan->opts;
    const size_t elem = o->precision == TK_PRECISION_DOUBLE ? sizeof(double) : sizeof(float);
    const size_t slots = first * (size_t)o->num_starts, n = (size_t)o->dim;
    const tk_sshopm_starts_result *all = r->out;
    tk_sshopm_starts_result mine = {
        .lambda = all->lambda ? (char *)all->lambda + slots * elem : NULL,
        .x = all->x ? (char *)all->x + slots * n * elem : NULL,
        .iterations = all->iterations ? all->iterations + slots : NULL,
        .converged = all->converged ? all->converged + slots : NULL};
    tk_timing timing = {0};
    const tk_status status = tk_sshopm_cuda_execute(r->plan->cuda[index], count,
                                                    (const char *)r->packed + first * r->plan->tables.k * elem, &mine,
                                                    &timing);
    r->kernel_ms[index] = timing.kernel_ms;
    return status;
}

/* A validated batch on a plan: kernel_ms set (over several devices the longest device's:
 * they run at once), the other times left to the caller. */
static tk_status plan_run(tk_sshopm_plan *plan, size_t num_tensors, const void *packed, tk_sshopm_starts_result *out,
                          tk_timing *timing)
{
    if (plan->num_devices) {
        sshopm_devices_run r = {.plan = plan, .packed = packed, .out = out};
        const tk_status status = tk_run_on_devices(plan->opts.cuda_device, plan->num_devices, num_tensors, run_device, &r);
        for (int d = 0; d < plan->num_devices; ++d)
            if (r.kernel_ms[d] > timing->kernel_ms) timing->kernel_ms = r.kernel_ms[d];
        return status;
    }
    double k0 = tk_now_ms();
    tk_status status = tk_sshopm_solve_cpu(&plan->opts, &plan->tables, num_tensors, packed, plan->starts, out);
    timing->kernel_ms = tk_now_ms() - k0;
    return status;
}

tk_status tk_sshopm_plan_execute(tk_sshopm_plan *plan, size_t num_tensors, const void *packed,
                                 tk_sshopm_starts_result *out, tk_timing *timing)
{
    tk_clear_error();
    double t0 = tk_now_ms();
    if (!plan) return tk_set_error(TK_ERR_ARGUMENT, "no plan given");
    tk_status status = validate_batch(&plan->opts, num_tensors, packed);
    if (status != TK_OK) return status;
    if (!out) return tk_set_error(TK_ERR_ARGUMENT, "no result arrays given");
    tk_timing local = {0};
    status = plan_run(plan, num_tensors, packed, out, &local);
    local.total_ms = tk_now_ms() - t0;
    if (timing) *timing = local;
    return status;
}

tk_status tk_sshopm_plan_execute_device(tk_sshopm_plan *plan, size_t num_tensors, const void *d_packed,
                                        const tk_sshopm_starts_result *d_out, void *cuda_stream, tk_timing *timing)
{
    tk_clear_error();
    const double t0 = tk_now_ms();
    if (timing) memset(timing, 0, sizeof *timing);
    if (!plan) return tk_set_error(TK_ERR_ARGUMENT, "no plan given");
    if (!d_out) return tk_set_error(TK_ERR_ARGUMENT, "no result arrays given");
    tk_status status = tk_device_arrays_plan_check(plan->num_devices);
    if (status != TK_OK) return status;
    const tk_sshopm_options *o = &plan->opts;
    const size_t k = tk_sym_num_unique(o->order, o->dim);
    const size_t elem = o->precision == TK_PRECISION_DOUBLE ? sizeof(double) : sizeof(float);
    if (num_tensors > SIZE_MAX / k / elem / (size_t)o->num_starts / (size_t)o->dim)
        return tk_set_error(TK_ERR_MEMORY, "%zu tensors of order %d, dimension %d overflow memory sizes", num_tensors,
                            o->order, o->dim);
    const size_t slots = num_tensors * (size_t)o->num_starts;
    const int device = o->cuda_device;
    if ((status = tk_device_array_check(d_packed, num_tensors * k * elem, device, "tensors")) != TK_OK ||
        (d_out->lambda && (status = tk_device_array_check(d_out->lambda, slots * elem, device, "eigenvalues")) != TK_OK) ||
        (d_out->x && (status = tk_device_array_check(d_out->x, slots * (size_t)o->dim * elem, device, "eigenvectors")) != TK_OK) ||
        (d_out->iterations &&
         (status = tk_device_array_check(d_out->iterations, slots * sizeof(int32_t), device, "iterations")) != TK_OK) ||
        (d_out->converged && (status = tk_device_array_check(d_out->converged, slots, device, "converged")) != TK_OK))
        return status;
    if ((status = tk_cuda_stream_wait(cuda_stream, "SS-HOPM")) != TK_OK) return status;
    tk_sshopm_starts_result out = *d_out;
    tk_timing local = {0};
    status = tk_sshopm_cuda_execute_device(plan->cuda[0], num_tensors, d_packed, &out, &local);
    local.total_ms = tk_now_ms() - t0;
    if (timing) *timing = local;
    return status;
}

tk_status tk_sshopm_solve(const tk_sshopm_options *o, size_t num_tensors, const void *packed,
                          tk_sshopm_starts_result *out, tk_timing *timing)
{
    tk_clear_error();
    double t0 = tk_now_ms();
    tk_status status = validate_options(o);
    if (status == TK_OK) status = validate_batch(o, num_tensors, packed);
    if (status != TK_OK) return status;
    if (!out) return tk_set_error(TK_ERR_ARGUMENT, "no result arrays given");
    if ((status = validate_backend(o)) != TK_OK) return status;

    tk_sshopm_plan *plan = NULL;
    if ((status = plan_create(o, num_tensors, &plan)) != TK_OK) return status;
    tk_timing local = {0};
    local.setup_ms = tk_now_ms() - t0;
    status = plan_run(plan, num_tensors, packed, out, &local);
    tk_sshopm_plan_destroy(plan);
    local.total_ms = tk_now_ms() - t0;
    if (timing) *timing = local;
    return status;
}

/* ---- distinct pairs straight from the tensors ------------------------------------ */

/* The host's path: chunks of the batch solved on the plan's backend (on CUDA for a shape the
 * device does not merge) and merged by tk_sshopm_distinct, each chunk's pairs appended; the
 * pairs and their order are those of one merge of the whole batch (sorted by tensor first). */
static tk_status distinct_on_host(tk_sshopm_plan *plan, size_t T, const void *packed, double merge_tol,
                                  tk_eigenpairs *out, double *kernel_ms)
{
    const tk_sshopm_options *o = &plan->opts;
    const size_t elem = o->precision == TK_PRECISION_DOUBLE ? sizeof(double) : sizeof(float);
    const size_t S = (size_t)o->num_starts, n = (size_t)o->dim, k = plan->tables.k;
    /* chunks bound the per-start memory: a few MiB of starts on the CPU, more for a GPU */
    size_t chunk = plan->num_devices ? 65536 : 1024;
    const size_t max_slots = plan->num_devices ? (size_t)1 << 24 : (size_t)1 << 20;
    if (chunk * S > max_slots) chunk = max_slots / S ? max_slots / S : 1;
    if (chunk > T) chunk = T ? T : 1;
    tk_sshopm_starts_result res = {malloc(chunk * S * elem), malloc(chunk * S * n * elem),
                                   malloc(chunk * S * sizeof(int32_t)), malloc(chunk * S)};
    tk_status status = TK_OK;
    if (!res.lambda || !res.x || !res.iterations || !res.converged)
        status = tk_set_error(TK_ERR_MEMORY, "out of memory for the results of %zu starts", chunk * S);
    for (size_t first = 0; first < T && status == TK_OK; first += chunk) {
        const size_t todo = T - first < chunk ? T - first : chunk;
        const void *part = (const char *)packed + first * k * elem;
        tk_timing t = {0};
        const double t0 = tk_now_ms();
        status = plan_run(plan, todo, part, &res, &t);
        tk_eigenpairs pairs = {0};
        if (status == TK_OK) status = tk_sshopm_distinct(o, todo, part, &res, merge_tol, &pairs);
        if (status == TK_OK) status = tk_eigenpairs_append(out, &pairs, first);
        tk_eigenpairs_free(&pairs);
        *kernel_ms += plan->num_devices ? t.kernel_ms : tk_now_ms() - t0;
    }
    free(res.lambda), free(res.x), free(res.iterations), free(res.converged);
    return status;
}

/* One batch's distinct pairs over the plan's devices: each device's share merged on it. */
typedef struct {
    tk_sshopm_plan *plan;
    const void *packed;
    double merge_tol;
    tk_eigenpairs *pairs[TK_MAX_CUDA_DEVICES];
    size_t first[TK_MAX_CUDA_DEVICES];
    double kernel_ms[TK_MAX_CUDA_DEVICES];
} distinct_devices_run;

static tk_status run_device_distinct(void *ctx, int index, size_t first, size_t count)
{
    distinct_devices_run *r = ctx;
    const tk_sshopm_options *o = &r->plan->opts;
    const size_t elem = o->precision == TK_PRECISION_DOUBLE ? sizeof(double) : sizeof(float);
    r->first[index] = first;
    return tk_sshopm_cuda_execute_distinct(r->plan->cuda[index], count,
                                           (const char *)r->packed + first * r->plan->tables.k * elem, r->merge_tol,
                                           r->pairs[index], &r->kernel_ms[index]);
}

static tk_status distinct_on_devices(tk_sshopm_plan *plan, size_t T, const void *packed, double merge_tol,
                                     tk_eigenpairs *out, double *kernel_ms)
{
    distinct_devices_run r = {.plan = plan, .packed = packed, .merge_tol = merge_tol};
    const int several = plan->num_devices > 1;
    for (int d = 0; d < plan->num_devices; ++d) {
        /* one device appends to out itself; several each fill their own, joined in order */
        r.pairs[d] = several ? &plan->device_pairs[d] : out;
        if (several) r.pairs[d]->count = 0, r.pairs[d]->dim = plan->opts.dim;
    }
    tk_status status = tk_run_on_devices(plan->opts.cuda_device, plan->num_devices, T, run_device_distinct, &r);
    for (int d = 0; d < plan->num_devices; ++d)
        if (r.kernel_ms[d] > *kernel_ms) *kernel_ms = r.kernel_ms[d];
    for (int d = 0; several && d < plan->num_devices && status == TK_OK; ++d)
        if (plan->device_pairs[d].count) status = tk_eigenpairs_append(out, &plan->device_pairs[d], r.first[d]);
    return status;
}

/* A validated batch's pairs into out (emptied first; its arrays kept). */
static tk_status distinct_run(tk_sshopm_plan *plan, size_t T, const void *packed, double merge_tol,
                              tk_eigenpairs *out, tk_timing *timing)
{
    if (out->tensor && out->dim != plan->opts.dim) tk_eigenpairs_free(out); /* x's rows are another size */
    if (!out->tensor) out->capacity = 0;
    out->count = 0;
    out->dim = plan->opts.dim;
    tk_status status;
    if (plan->num_devices && tk_sshopm_cuda_merges_on_device(&plan->opts))
        status = distinct_on_devices(plan, T, packed, merge_tol, out, &timing->kernel_ms);
    else
        status = distinct_on_host(plan, T, packed, merge_tol, out, &timing->kernel_ms);
    if (status != TK_OK) out->count = 0;
    return status;
}

tk_status tk_sshopm_plan_execute_distinct(tk_sshopm_plan *plan, size_t num_tensors, const void *packed,
                                          double merge_tol, tk_eigenpairs *out, tk_timing *timing)
{
    tk_clear_error();
    const double t0 = tk_now_ms();
    if (!plan) return tk_set_error(TK_ERR_ARGUMENT, "no plan given");
    if (!out) return tk_set_error(TK_ERR_ARGUMENT, "no place for the eigenpairs given");
    out->count = 0;
    tk_status status = validate_batch(&plan->opts, num_tensors, packed);
    if (status != TK_OK) return status;
    tk_timing local = {0};
    status = distinct_run(plan, num_tensors, packed, merge_tol, out, &local);
    local.total_ms = tk_now_ms() - t0;
    if (timing) *timing = local;
    return status;
}

tk_status tk_sshopm_solve_distinct(const tk_sshopm_options *o, size_t num_tensors, const void *packed,
                                   double merge_tol, tk_eigenpairs *out, tk_timing *timing)
{
    tk_clear_error();
    const double t0 = tk_now_ms();
    if (!out) return tk_set_error(TK_ERR_ARGUMENT, "no place for the eigenpairs given");
    out->count = 0;
    tk_status status = validate_options(o);
    if (status == TK_OK) status = validate_batch(o, num_tensors, packed);
    if (status == TK_OK) status = validate_backend(o);
    if (status != TK_OK) return status;
    tk_sshopm_plan *plan = NULL;
    if ((status = plan_create(o, num_tensors, &plan)) != TK_OK) return status;
    tk_timing local = {0};
    local.setup_ms = tk_now_ms() - t0;
    status = distinct_run(plan, num_tensors, packed, merge_tol, out, &local);
    tk_sshopm_plan_destroy(plan);
    local.total_ms = tk_now_ms() - t0;
    if (timing) *timing = local;
    return status;
}
