/* CPU backends of the batched eigensolver: sequential (cpu) and OpenMP across
 * matrices (omp).  Values only: groups of matrices through the lockstep SIMD kernel
 * (eig_lanes_body.h); with vectors: the shared per-matrix body with one "lane". */
#define _POSIX_C_SOURCE 200112L
#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "eig_internal.h"
#include "common/tk_hd.h"

/* Matrices per lockstep group: four AVX2 vectors of either precision.  Measured on
 * tk-bench eig: 16 doubles beat 4 and 8 (the per-bulge-position scalar set-up and
 * the loop overheads are shared by more lanes) and 32 (more lanes idle while the
 * slowest converges; with the AVX-512 clone 32 ran as fast as 16, no faster). */
#define TK_EIG_LANES_D 16
#define TK_EIG_LANES_F 32
/* Below this order a matrix is solved faster alone than a group waits for its slowest lane. */
#define TK_EIG_LANES_MIN_N 3

/* The lockstep lane kernels, cloned for AVX-512 and for AVX2+FMA and picked at run
 * time.  The AVX-512 clone (two zmm vectors a row of 16 doubles) took 3.5% (n = 5) to
 * 16% (n = 30) off the AVX2 clone's time on this workplace's AMD EPYC (Zen 4, which
 * splits 512-bit operations in two). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__SANITIZE_ADDRESS__)
#define TK_CPU_TARGETS __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define TK_CPU_TARGETS
#endif

#define EIG_LANE(c) 0
#define EIG_STRIDE(c) 1
#define EIG_SYNC(c) ((void)0)
#define EIG_ES(c) 1

#define EIG_DOUBLE 1
#include "eig_precision.h"
#define EIG_W TK_EIG_LANES_D
#include "eig_body.h"
#include "eig_lanes_body.h"
#undef EIG_W

#undef EIG_DOUBLE
#define EIG_DOUBLE 0
#include "eig_precision.h"
#define EIG_W TK_EIG_LANES_F
#include "eig_body.h"
#include "eig_lanes_body.h"

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

/* One group of up to W matrices, values only: each is prepared (finite check,
 * prescale, balancing) alone, those with no isolated eigenvalue go through the
 * lockstep kernel together, the rest through the one-matrix path. */
#define TK_EIG_GROUP(SFX, R, W)                                                                                  \
    static void eig_group##SFX(int n, size_t first, size_t count, const R *a, R *values, int8_t *status,        \
                               int balance, int max_iter, R *work, R *lanes)                                     \
    {                                                                                                            \
        const size_t nn = (size_t)n * (size_t)n;                                                                 \
        const int ld = n + 1;                                                                                    \
        R *h = lanes, *vbuf = h + (size_t)ld * ld * W, *wr = vbuf + (size_t)n * W, *wi = wr + (size_t)n * W;      \
        int lane_status[W], expo[W];                                                                             \
        eig_ctx##SFX ctx;                                                                                        \
        TK_EIG_BIND_CTX(ctx, work, n, 0);                                                                        \
        memset(h, 0, sizeof(R) * (size_t)ld * ld * W);                                                           \
        for (int lane = 0; lane < W; ++lane) {                                                                   \
            const size_t b = first + (size_t)lane;                                                               \
            lane_status[lane] = -1;                                                                              \
            if (b >= count) continue;                                                                            \
            int ilo, ihi;                                                                                        \
            if (eig_prepare##SFX(&ctx, a + b * nn, balance, &expo[lane], &ilo, &ihi)) {                          \
                for (int e = 0; e < 2 * n; ++e) values[b * 2 * (size_t)n + (size_t)e] = (R)NAN;                   \
                status[b] = TK_EIG_NONFINITE;                                                                    \
            } else if (ilo != 0 || ihi != n - 1) {                                                               \
                status[b] = (int8_t)eig_solve_one##SFX(&ctx, a + b * nn, values + b * 2 * (size_t)n, NULL,        \
                                                       balance, max_iter);                                       \
            } else {                                                                                             \
                for (int i = 0; i < n; ++i)                                                                      \
                    for (int j = 0; j < n; ++j) h[((size_t)i * ld + (size_t)j) * W + (size_t)lane] = ctx.h[i * n + j]; \
                lane_status[lane] = 0;                                                                           \
            }                                                                                                    \
        }                                                                                                        \
        eig_lanes_hqr##SFX(n, h, vbuf, wr, wi, lane_status, max_iter);                                           \
        for (int lane = 0; lane < W; ++lane) {                                                                   \
            const size_t b = first + (size_t)lane;                                                               \
            if (lane_status[lane] < 0) continue;                                                                 \
            R *out = values + b * 2 * (size_t)n;                                                                 \
            if (lane_status[lane]) {                                                                             \
                for (int e = 0; e < 2 * n; ++e) out[e] = (R)NAN;                                                 \
                status[b] = TK_EIG_NOT_CONVERGED;                                                                \
                continue;                                                                                        \
            }                                                                                                    \
            for (int i = 0; i < n; ++i) ctx.wr[i] = wr[i * W + lane], ctx.wi[i] = wi[i * W + lane];              \
            eig_sort##SFX(&ctx);                                                                                 \
            for (int s = 0; s < n; ++s) out[2 * s] = eig_scale2##SFX(ctx.wr[s], expo[lane]),                     \
                                        out[2 * s + 1] = eig_scale2##SFX(ctx.wi[s], expo[lane]);                 \
            status[b] = TK_EIG_CONVERGED;                                                                        \
        }                                                                                                        \
    }

TK_EIG_GROUP(_d, double, TK_EIG_LANES_D)
TK_EIG_GROUP(_f, float, TK_EIG_LANES_F)

tk_status tk_eig_solve_cpu(const tk_eig_options *o, size_t count, const void *matrices, void *values,
                           void *vectors, int8_t *status)
{
    const int n = o->n, dbl = o->precision == TK_PRECISION_DOUBLE, want = vectors != NULL;
    const int max_iter = tk_eig_max_iter(o), balance = o->balance != 0;
    const size_t nn = (size_t)n * (size_t)n, elem = dbl ? sizeof(double) : sizeof(float);
    const int lanes = want || n < TK_EIG_LANES_MIN_N ? 1 : dbl ? TK_EIG_LANES_D : TK_EIG_LANES_F;
    const long long groups = (long long)((count + (size_t)lanes - 1) / (size_t)lanes);
    const size_t lane_reals = lanes > 1 ? ((size_t)(n + 1) * (size_t)(n + 1) + 3 * (size_t)n) * (size_t)lanes : 0;
    int threads = 1;
#ifdef _OPENMP
    if (o->backend == TK_BACKEND_OMP) threads = o->num_threads > 0 ? o->num_threads : omp_get_max_threads();
#endif
    int oom = 0;
#pragma omp parallel num_threads(threads) if (threads > 1) reduction(| : oom)
    {
        /* 64-byte aligned: the lane loops then run on whole cache lines */
        void *work = NULL, *lane_work = NULL;
        if (posix_memalign(&work, 64, scratch_reals(n) * elem)) work = NULL;
        if (lanes > 1 && posix_memalign(&lane_work, 64, lane_reals * elem)) lane_work = NULL;
        if (!work || (lanes > 1 && !lane_work)) oom = 1;
        /* dynamic: a group that needs many sweeps must not hold up a whole static share */
#pragma omp for schedule(dynamic, 4)
        for (long long g = 0; g < groups; ++g) {
            const size_t b = (size_t)g * (size_t)lanes;
            if (oom) {
                for (size_t q = b; q < b + (size_t)lanes && q < count; ++q) status[q] = TK_EIG_NOT_CONVERGED;
                continue;
            }
            if (lanes > 1) {
                if (dbl)
                    eig_group_d(n, b, count, matrices, values, status, balance, max_iter, work, lane_work);
                else
                    eig_group_f(n, b, count, matrices, values, status, balance, max_iter, work, lane_work);
            } else if (dbl) {
                eig_ctx_d ctx;
                TK_EIG_BIND_CTX(ctx, (double *)work, n, want);
                status[b] = (int8_t)eig_solve_one_d(&ctx, (const double *)matrices + b * nn,
                                                    (double *)values + 2 * b * (size_t)n,
                                                    want ? (double *)vectors + 2 * b * nn : NULL, balance, max_iter);
            } else {
                eig_ctx_f ctx;
                TK_EIG_BIND_CTX(ctx, (float *)work, n, want);
                status[b] = (int8_t)eig_solve_one_f(&ctx, (const float *)matrices + b * nn,
                                                    (float *)values + 2 * b * (size_t)n,
                                                    want ? (float *)vectors + 2 * b * nn : NULL, balance, max_iter);
            }
        }
        free(work);
        free(lane_work);
    }
    if (oom) return tk_set_error(TK_ERR_MEMORY, "out of memory for the per-thread scratch of order %d", n);
    return TK_OK;
}
