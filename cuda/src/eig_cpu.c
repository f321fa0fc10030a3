/* CPU backends of the batched eigensolver: sequential (cpu) and OpenMP across
 * matrices (omp), both running the shared per-matrix body with one "lane". */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "eig_internal.h"
#include "tk_hd.h"

#define EIG_LANE(c) 0
#define EIG_STRIDE(c) 1
#define EIG_SYNC(c) ((void)0)
#define EIG_ES(c) 1

#define EIG_REAL double
#define EIG_NAME(x) x##_d
#define EIG_EPS 0x1p-52
#define EIG_SAFMIN 0x1p-1022
#define EIG_SQRT sqrt
#define EIG_FABS fabs
#define EIG_LDEXP ldexp
#define EIG_FREXP frexp
#define EIG_HYPOT hypot
#define EIG_NAN ((double)NAN)
#include "eig_body.h"
#undef EIG_REAL
#undef EIG_NAME
#undef EIG_EPS
#undef EIG_SAFMIN
#undef EIG_SQRT
#undef EIG_FABS
#undef EIG_LDEXP
#undef EIG_FREXP
#undef EIG_HYPOT
#undef EIG_NAN

#define EIG_REAL float
#define EIG_NAME(x) x##_f
#define EIG_EPS 0x1p-23f
#define EIG_SAFMIN 0x1p-126f
#define EIG_SQRT sqrtf
#define EIG_FABS fabsf
#define EIG_LDEXP ldexpf
#define EIG_FREXP frexpf
#define EIG_HYPOT hypotf
#define EIG_NAN ((float)NAN)
#include "eig_body.h"

/* Scratch of one matrix: h, z, scale, wr, wi, pos, tmp. */
static size_t scratch_reals(int n) { return 2 * (size_t)n * (size_t)n + 6 * (size_t)n; }

#define TK_EIG_BIND_CTX(ctx, w, n, want)                                                                  \
    do {                                                                                                  \
        (ctx).n = (n), (ctx).ld = (n);                                                                    \
        (ctx).h = (w);                                                                                    \
        (ctx).z = (want) ? (w) + (size_t)(n) * (n) : NULL;                                                \
        (ctx).scale = (w) + 2 * (size_t)(n) * (n);                                                        \
        (ctx).wr = (ctx).scale + (n), (ctx).wi = (ctx).wr + (n), (ctx).pos = (ctx).wi + (n);             \
        (ctx).tmp = (ctx).pos + (n);                                                                      \
    } while (0)

tk_status tk_eig_solve_cpu(const tk_eig_options *o, size_t count, const void *matrices, void *values,
                           void *vectors, int8_t *status)
{
    const int n = o->n, dbl = o->precision == TK_PRECISION_DOUBLE, want = vectors != NULL;
    const int max_iter = tk_eig_max_iter(o), balance = o->balance != 0;
    const size_t nn = (size_t)n * (size_t)n;
    const long long total = (long long)count;
    int threads = 1;
#ifdef _OPENMP
    if (o->backend == TK_BACKEND_OMP) threads = o->num_threads > 0 ? o->num_threads : omp_get_max_threads();
#endif
    int oom = 0;
#pragma omp parallel num_threads(threads) if (threads > 1) reduction(| : oom)
    {
        void *work = malloc(scratch_reals(n) * (dbl ? sizeof(double) : sizeof(float)));
        if (!work) oom = 1;
        /* dynamic: a matrix that needs many sweeps must not hold up a whole static share */
#pragma omp for schedule(dynamic, 32)
        for (long long b = 0; b < total; ++b) {
            if (!work) {
                status[b] = TK_EIG_NOT_CONVERGED;
                continue;
            }
            if (dbl) {
                eig_ctx_d ctx;
                TK_EIG_BIND_CTX(ctx, (double *)work, n, want);
                status[b] = (int8_t)eig_solve_one_d(&ctx, (const double *)matrices + (size_t)b * nn,
                                                    (double *)values + 2 * (size_t)b * (size_t)n,
                                                    want ? (double *)vectors + 2 * (size_t)b * nn : NULL, balance,
                                                    max_iter);
            } else {
                eig_ctx_f ctx;
                TK_EIG_BIND_CTX(ctx, (float *)work, n, want);
                status[b] = (int8_t)eig_solve_one_f(&ctx, (const float *)matrices + (size_t)b * nn,
                                                    (float *)values + 2 * (size_t)b * (size_t)n,
                                                    want ? (float *)vectors + 2 * (size_t)b * nn : NULL, balance,
                                                    max_iter);
            }
        }
        free(work);
    }
    if (oom) return tk_set_error(TK_ERR_MEMORY, "out of memory for the per-thread scratch of order %d", n);
    return TK_OK;
}
