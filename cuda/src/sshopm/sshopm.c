/* SS-HOPM front end: options, validation, shared tables, start vectors, dispatch. */
#define _POSIX_C_SOURCE 200809L
#include "sshopm_internal.h"
#include "common/tk_hd.h"

#include <math.h>
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

static tk_status validate(const tk_sshopm_options *o, size_t num_tensors, const void *packed)
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
    if (num_tensors && !packed) return tk_set_error(TK_ERR_ARGUMENT, "no tensor data given");
    size_t k = tk_sym_num_unique(o->order, o->dim);
    size_t elem = o->precision == TK_PRECISION_DOUBLE ? sizeof(double) : sizeof(float);
    if (!k || num_tensors > SIZE_MAX / k / elem / (size_t)o->num_starts)
        return tk_set_error(TK_ERR_MEMORY, "%zu tensors of order %d, dimension %d overflow memory sizes", num_tensors,
                            o->order, o->dim);
    /* Non-finite entries would make every start of the tensor meaningless. */
    size_t total = num_tensors * k;
    for (size_t e = 0; e < total; ++e) {
        double v = o->precision == TK_PRECISION_DOUBLE ? ((const double *)packed)[e] : ((const float *)packed)[e];
        if (!isfinite(v))
            return tk_set_error(TK_ERR_DATA, "tensor %zu has a non-finite entry (packed position %zu)", e / k, e % k);
    }
    return TK_OK;
}

tk_status tk_sshopm_solve(const tk_sshopm_options *o, size_t num_tensors, const void *packed,
                          tk_sshopm_starts_result *out, tk_timing *timing)
{
    tk_clear_error();
    double t0 = tk_now_ms();
    tk_status status = validate(o, num_tensors, packed);
    if (status != TK_OK) return status;
    if (!out) return tk_set_error(TK_ERR_ARGUMENT, "no result arrays given");
    if (o->backend != TK_BACKEND_CPU && o->backend != TK_BACKEND_OMP && o->backend != TK_BACKEND_CUDA)
        return tk_set_error(TK_ERR_ARGUMENT, "unknown backend %d", (int)o->backend);

    const size_t n = (size_t)o->dim, count = (size_t)o->num_starts * n;
    double *starts_d = malloc(sizeof(double) * count);
    void *starts = o->precision == TK_PRECISION_DOUBLE ? (void *)starts_d : malloc(sizeof(float) * count);
    tk_sshopm_tables tables;
    memset(&tables, 0, sizeof tables);
    if (!starts_d || !starts) {
        status = tk_set_error(TK_ERR_MEMORY, "out of memory for %d start vectors", o->num_starts);
        goto done;
    }
    if ((status = tk_sshopm_make_starts(o, starts_d)) != TK_OK) goto done;
    if (o->precision == TK_PRECISION_SINGLE)
        for (size_t e = 0; e < count; ++e) ((float *)starts)[e] = (float)starts_d[e];
    if ((status = tk_sshopm_tables_build(o->order, o->dim, &tables)) != TK_OK) goto done;

    tk_timing local = {0};
    if (o->backend == TK_BACKEND_CUDA) {
        status = tk_sshopm_solve_cuda(o, &tables, num_tensors, packed, starts, out, &local);
    } else {
        double k0 = tk_now_ms();
        status = tk_sshopm_solve_cpu(o, &tables, num_tensors, packed, starts, out);
        local.kernel_ms = tk_now_ms() - k0;
    }
    local.total_ms = tk_now_ms() - t0;
    if (timing) *timing = local;
done:
    tk_sshopm_tables_free(&tables);
    if (starts != starts_d) free(starts);
    free(starts_d);
    return status;
}
