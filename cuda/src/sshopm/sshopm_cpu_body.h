/* CPU SS-HOPM for one precision; included by sshopm_cpu.c once per precision
 * after TK_REAL and TK_SFX are defined.  No include guard on purpose. */

/* A x^(m-1) of the kernel the options picked; the switch is predicted perfectly
 * and lets the straight-line kernels inline. */
static inline void TK_SFX(cpu_axm1)(const tk_sshopm_tables *tb, int kernel, const TK_REAL *c, const TK_REAL *x,
                                    TK_REAL *y)
{
    switch (kernel) {
    case 43: TK_SFX(tk_unrolled_axm1_4_3)(c, x[0], x[1], x[2], &y[0], &y[1], &y[2]); break;
    case 63: TK_SFX(tk_unrolled_axm1_6_3)(c, x[0], x[1], x[2], &y[0], &y[1], &y[2]); break;
    case 83: TK_SFX(tk_unrolled_axm1_8_3)(c, x[0], x[1], x[2], &y[0], &y[1], &y[2]); break;
    default: TK_SFX(tk_k_axm1_general)(tb->order, tb->dim, tb->k1, tb->idx1, c, x, y); break;
    }
}

static void TK_SFX(cpu_prescale)(const tk_sshopm_tables *tb, int kernel, const TK_REAL *a, TK_REAL *c)
{
    switch (kernel) {
    case 43: TK_SFX(tk_unrolled_prescale_4_3)(a, c); break;
    case 63: TK_SFX(tk_unrolled_prescale_6_3)(a, c); break;
    case 83: TK_SFX(tk_unrolled_prescale_8_3)(a, c); break;
    default: TK_SFX(tk_k_prescale)(tb->dim, tb->k1, tb->map, tb->mult1, a, c); break;
    }
}


/* Fixed-shift SS-HOPM of up to TK_CPU_LANES starts of one (m, 3) tensor at once, one
 * start per SIMD lane: the loops over lanes vectorize, and a lane that has converged
 * (or failed) is frozen by selects, so each lane's result and iteration count are the
 * scalar path's. */
#define TK_DEFINE_CPU_LANES(M)                                                                                  \
    TK_CPU_TARGETS static void TK_SFX(cpu_lanes_##M)(const TK_REAL *TK_RESTRICT c, const TK_REAL *starts,      \
                                                     int count, const tk_sshopm_options *o, TK_REAL *lambda,    \
                                                     TK_REAL *xout, int32_t *iterations, uint8_t *converged)    \
    {                                                                                                           \
        enum { L = TK_CPU_LANES };                                                                              \
        TK_REAL x0[L], x1[L], x2[L], y0[L], y1[L], y2[L], moved2[L];                                                \
        int32_t it[L], live[L];                                                                                 \
        const TK_REAL sign = o->shift >= 0 ? 1 : -1, alpha = (TK_REAL)o->shift;                                \
        const TK_REAL tol2 = (TK_REAL)(o->tol * o->tol);                                                        \
        const int fixed = o->fixed_iterations;                                                                  \
        for (int l = 0; l < L; ++l) {                                                                           \
            int s = l < count ? l : 0;                                                                          \
            x0[l] = starts[3 * s], x1[l] = starts[3 * s + 1], x2[l] = starts[3 * s + 2];                        \
            moved2[l] = (TK_REAL)INFINITY, it[l] = 0, live[l] = l < count;                                          \
        }                                                                                                       \
        for (int l = 0; l < L; ++l) TK_SFX(tk_unrolled_axm1_##M##_3)(c, x0[l], x1[l], x2[l], &y0[l], &y1[l], &y2[l]); \
        for (int k = 0; k < o->max_iter; ++k) {                                                                 \
            int32_t any = 0;                                                                                    \
            TK_SIMD_ANY                                                                                         \
            for (int l = 0; l < L; ++l) {                                                                       \
                TK_REAL n0 = sign * TK_FMA(alpha, x0[l], y0[l]), n1 = sign * TK_FMA(alpha, x1[l], y1[l]);       \
                TK_REAL n2 = sign * TK_FMA(alpha, x2[l], y2[l]);                                                \
                TK_REAL nn = n0 * n0 + n1 * n1 + n2 * n2;                                                       \
                int32_t finite = (nn > 0) & (nn < (TK_REAL)INFINITY);                                              \
                TK_REAL inv = (TK_REAL)1 / TK_SQRT(finite ? nn : (TK_REAL)1);                                   \
                n0 *= inv, n1 *= inv, n2 *= inv;                                                                \
                TK_REAL d0 = n0 - x0[l], d1 = n1 - x1[l], d2 = n2 - x2[l];                                      \
                TK_REAL d = d0 * d0 + d1 * d1 + d2 * d2; /* squared, against tol^2 */                          \
                int32_t step = live[l] & finite;                                                                \
                moved2[l] = step ? d : (live[l] ? (TK_REAL)-1 : moved2[l]);                                             \
                x0[l] = step ? n0 : x0[l], x1[l] = step ? n1 : x1[l], x2[l] = step ? n2 : x2[l];                \
                it[l] += step;                                                                                  \
                live[l] = step & (fixed | (d > tol2));                                                           \
                any |= live[l];                                                                                 \
            }                                                                                                   \
            TK_SIMD                                                                                             \
            for (int l = 0; l < L; ++l)                                                                         \
                TK_SFX(tk_unrolled_axm1_##M##_3)(c, x0[l], x1[l], x2[l], &y0[l], &y1[l], &y2[l]);               \
            if (!any) break;                                                                                    \
        }                                                                                                       \
        for (int l = 0; l < count; ++l) {                                                                       \
            if (lambda) lambda[l] = x0[l] * y0[l] + x1[l] * y1[l] + x2[l] * y2[l];                             \
            if (xout) xout[3 * l] = x0[l], xout[3 * l + 1] = x1[l], xout[3 * l + 2] = x2[l];                   \
            if (iterations) iterations[l] = it[l];                                                              \
            if (converged) converged[l] = (uint8_t)(moved2[l] >= 0 && moved2[l] <= tol2);                               \
        }                                                                                                       \
    }
TK_DEFINE_CPU_LANES(4)
TK_DEFINE_CPU_LANES(6)
TK_DEFINE_CPU_LANES(8)
#undef TK_DEFINE_CPU_LANES

/* All starts of one tensor through the lane kernels (fixed shift, unrolled (m, 3)). */
static void TK_SFX(cpu_solve_tensor_lanes)(const tk_sshopm_options *o, const tk_sshopm_tables *tb, int kernel,
                                           const TK_REAL *a, const TK_REAL *starts, TK_REAL *c, size_t tensor,
                                           tk_sshopm_starts_result *out)
{
    TK_SFX(cpu_prescale)(tb, kernel, a, c);
    for (int s = 0; s < o->num_starts; s += TK_CPU_LANES) {
        int count = o->num_starts - s < TK_CPU_LANES ? o->num_starts - s : TK_CPU_LANES;
        size_t slot = tensor * (size_t)o->num_starts + (size_t)s;
        TK_REAL *lambda = out->lambda ? (TK_REAL *)out->lambda + slot : NULL;
        TK_REAL *x = out->x ? (TK_REAL *)out->x + slot * 3 : NULL;
        int32_t *its = out->iterations ? out->iterations + slot : NULL;
        uint8_t *conv = out->converged ? out->converged + slot : NULL;
        const TK_REAL *st = starts + (size_t)s * 3;
        switch (kernel) {
        case 43: TK_SFX(cpu_lanes_4)(c, st, count, o, lambda, x, its, conv); break;
        case 63: TK_SFX(cpu_lanes_6)(c, st, count, o, lambda, x, its, conv); break;
        default: TK_SFX(cpu_lanes_8)(c, st, count, o, lambda, x, its, conv); break;
        }
    }
}

/* All starts of one tensor.  work: dim * k1 + tk_sshopm_cpu_scratch(dim) values. */
static void TK_SFX(cpu_solve_tensor)(const tk_sshopm_options *o, const tk_sshopm_tables *tb, int kernel,
                                     const TK_REAL *a, const TK_REAL *starts, TK_REAL *work, size_t tensor,
                                     tk_sshopm_starts_result *out)
{
    const int n = o->dim;
    const int maximize = o->shift >= 0;
    const TK_REAL sign = maximize ? 1 : -1, tol2 = (TK_REAL)(o->tol * o->tol);
    TK_REAL *c = work, *x = c + (size_t)n * (size_t)tb->k1, *y = x + n, *xn = y + n, *scratch = xn + n;
    TK_SFX(cpu_prescale)(tb, kernel, a, c);
    for (int s = 0; s < o->num_starts; ++s) {
        for (int i = 0; i < n; ++i) x[i] = starts[(size_t)s * n + i];
        TK_SFX(cpu_axm1)(tb, kernel, c, x, y);
        TK_REAL lambda = TK_SFX(tk_k_dot)(n, x, y), moved2 = (TK_REAL)INFINITY;
        int it = 0;
        while (it < o->max_iter) {
            TK_REAL alpha = o->shift_mode == TK_SHIFT_ADAPTIVE
                                ? TK_SFX(tk_k_adaptive_shift)(o->order, n, a, x, maximize, scratch)
                                : (TK_REAL)o->shift;
            moved2 = TK_SFX(tk_k_step)(n, sign, alpha, x, y, xn);
            if (moved2 < 0) break;
            ++it;
            for (int i = 0; i < n; ++i) x[i] = xn[i];
            TK_SFX(cpu_axm1)(tb, kernel, c, x, y);
            lambda = TK_SFX(tk_k_dot)(n, x, y);
            if (!o->fixed_iterations && moved2 <= tol2) break;
        }
        size_t slot = tensor * (size_t)o->num_starts + (size_t)s;
        if (out->lambda) ((TK_REAL *)out->lambda)[slot] = lambda;
        if (out->x)
            for (int i = 0; i < n; ++i) ((TK_REAL *)out->x)[slot * n + i] = x[i];
        if (out->iterations) out->iterations[slot] = it;
        if (out->converged) out->converged[slot] = (uint8_t)(moved2 >= 0 && moved2 <= tol2);
    }
}

static void TK_SFX(cpu_solve_one)(const tk_sshopm_options *o, const tk_sshopm_tables *tb, int kernel,
                                  const TK_REAL *a, const TK_REAL *starts, TK_REAL *work, size_t tensor,
                                  tk_sshopm_starts_result *out)
{
    if (kernel && o->shift_mode == TK_SHIFT_FIXED)
        TK_SFX(cpu_solve_tensor_lanes)(o, tb, kernel, a, starts, work, tensor, out);
    else
        TK_SFX(cpu_solve_tensor)(o, tb, kernel, a, starts, work, tensor, out);
}

static tk_status TK_SFX(cpu_solve)(const tk_sshopm_options *o, const tk_sshopm_tables *tb, size_t num_tensors,
                                   const TK_REAL *packed, const TK_REAL *starts, tk_sshopm_starts_result *out)
{
    const int kernel = o->impl == TK_IMPL_UNROLLED ? o->order * 10 + o->dim : 0;
    const size_t per_thread = (size_t)o->dim * (size_t)tb->k1 + tk_sshopm_cpu_scratch(o->dim);
    const long long count = (long long)num_tensors;
    int failed = 0;
    if (o->backend == TK_BACKEND_OMP) {
#ifdef _OPENMP
        int threads = o->num_threads > 0 ? o->num_threads : omp_get_max_threads();
#pragma omp parallel num_threads(threads)
        {
            TK_REAL *work = malloc(sizeof(TK_REAL) * per_thread);
            if (!work) {
#pragma omp atomic write
                failed = 1;
            }
#pragma omp for schedule(dynamic, 16)
            for (long long t = 0; t < count; ++t)
                if (work) TK_SFX(cpu_solve_one)(o, tb, kernel, packed + (size_t)t * tb->k, starts, work, (size_t)t, out);
            free(work);
        }
#else
        return tk_set_error(TK_ERR_UNSUPPORTED, "this build has no OpenMP: use the cpu backend");
#endif
    } else {
        TK_REAL *work = malloc(sizeof(TK_REAL) * per_thread);
        if (!work) failed = 1;
        for (long long t = 0; t < count && work; ++t)
            TK_SFX(cpu_solve_one)(o, tb, kernel, packed + (size_t)t * tb->k, starts, work, (size_t)t, out);
        free(work);
    }
    return failed ? tk_set_error(TK_ERR_MEMORY, "out of memory for SS-HOPM scratch") : TK_OK;
}
