/* The CPU engine of PLTF (backends cpu and omp): double precision, GEMM through
 * CBLAS when the build found one (OpenBLAS from Debian), else plain C loops. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef TK_HAVE_CBLAS
#include <cblas.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

#include "pltf_internal.h"

typedef struct {
    int use_omp;
    int num_threads;
} cpu_ctx;

int tk_pltf_has_cblas(void)
{
#ifdef TK_HAVE_CBLAS
    return 1;
#else
    return 0;
#endif
}

/* The thread count of the loops of one call; 1 unless the omp backend. */
static int threads_of(const tk_pltf_engine *e)
{
    const cpu_ctx *c = e->ctx;
#ifdef _OPENMP
    if (c->use_omp) return c->num_threads > 0 ? c->num_threads : omp_get_max_threads();
#endif
    (void)c;
    return 1;
}

/* Element-wise loops are worth threads only past this size. */
#define PAR_MIN 32768

static tk_status cpu_alloc(tk_pltf_engine *e, size_t count, void **out)
{
    (void)e;
    *out = malloc((count ? count : 1) * sizeof(double));
    return *out ? TK_OK : tk_set_error(TK_ERR_MEMORY, "PLTF: out of memory for %zu values", count);
}

static void cpu_release(tk_pltf_engine *e, void *p)
{
    (void)e;
    free(p);
}

static tk_status cpu_copy(tk_pltf_engine *e, void *dst, const void *src, size_t count)
{
    (void)e;
    memcpy(dst, src, count * sizeof(double));
    return TK_OK;
}

static tk_status cpu_upload(tk_pltf_engine *e, void *dst, const double *src, size_t count)
{
    return cpu_copy(e, dst, src, count);
}

static tk_status cpu_download(tk_pltf_engine *e, double *dst, const void *src, size_t count)
{
    return cpu_copy(e, dst, src, count);
}

static tk_status cpu_fill(tk_pltf_engine *e, void *dst, double value, size_t count)
{
    (void)e;
    double *d = dst;
    for (size_t i = 0; i < count; ++i) d[i] = value;
    return TK_OK;
}

typedef struct {
    int dst_ndim, nr;
    size_t dshape[TK_PLTF_MAX_INDICES], dstride[TK_PLTF_MAX_INDICES];
    size_t rshape[TK_PLTF_MAX_INDICES], rstride[TK_PLTF_MAX_INDICES];
    size_t red_count;
} permute_plan;

/* dst[begin, end) of a reduce-permute; the innermost destination axis is a tight
 * strided loop (most relayouts here are small, so per-element overhead matters). */
static void permute_range(const permute_plan *p, const double *src, double *dst, size_t begin, size_t end)
{
    const int nd = p->dst_ndim;
    size_t pos[TK_PLTF_MAX_INDICES], off = 0, rest = begin;
    for (int d = nd - 1; d >= 0; --d) pos[d] = rest % p->dshape[d], rest /= p->dshape[d], off += pos[d] * p->dstride[d];
    const size_t inner = nd ? p->dshape[nd - 1] : 1, istride = nd ? p->dstride[nd - 1] : 0;
    size_t i = begin;
    while (i < end) {
        /* a run along the innermost axis, from pos[nd-1] to its end or to `end` */
        const size_t start = nd ? pos[nd - 1] : 0;
        size_t run = inner - start;
        if (run > end - i) run = end - i;
        if (!p->nr) {
            for (size_t q = 0; q < run; ++q) dst[i + q] = src[off + q * istride];
        } else {
            for (size_t q = 0; q < run; ++q) {
                size_t rpos[TK_PLTF_MAX_INDICES] = {0}, roff = 0;
                double sum = 0;
                for (size_t r = 0; r < p->red_count; ++r) {
                    sum += src[off + q * istride + roff];
                    for (int d = p->nr - 1; d >= 0; --d) {
                        roff += p->rstride[d];
                        if (++rpos[d] < p->rshape[d]) break;
                        roff -= rpos[d] * p->rstride[d], rpos[d] = 0;
                    }
                }
                dst[i + q] = sum;
            }
        }
        i += run;
        if (!nd) break;
        off += run * istride, pos[nd - 1] += run;
        for (int d = nd - 1; d > 0 && pos[d] == p->dshape[d]; --d) {
            off -= pos[d] * p->dstride[d], pos[d] = 0;
            off += p->dstride[d - 1], ++pos[d - 1];
        }
    }
}

static tk_status cpu_reduce_permute(tk_pltf_engine *e, const void *src_v, int src_ndim, const size_t *src_shape,
                                    void *dst_v, int dst_ndim, const int *dst_axes)
{
    const double *src = src_v;
    double *dst = dst_v;
    permute_plan p;
    size_t src_stride[TK_PLTF_MAX_INDICES];
    int listed[TK_PLTF_MAX_INDICES] = {0};
    size_t st = 1, dst_count = 1;
    for (int d = src_ndim - 1; d >= 0; --d) src_stride[d] = st, st *= src_shape[d];
    p.dst_ndim = dst_ndim, p.nr = 0, p.red_count = 1;
    for (int d = 0; d < dst_ndim; ++d) {
        p.dshape[d] = src_shape[dst_axes[d]], p.dstride[d] = src_stride[dst_axes[d]];
        listed[dst_axes[d]] = 1, dst_count *= p.dshape[d];
    }
    for (int d = 0; d < src_ndim; ++d)
        if (!listed[d]) p.rshape[p.nr] = src_shape[d], p.rstride[p.nr++] = src_stride[d], p.red_count *= src_shape[d];
    const int threads = dst_count * p.red_count >= PAR_MIN ? threads_of(e) : 1;
    if (threads <= 1) {
        permute_range(&p, src, dst, 0, dst_count);
        return TK_OK;
    }
#pragma omp parallel num_threads(threads)
    {
        size_t begin = 0, end = dst_count;
#ifdef _OPENMP
        size_t nt = (size_t)omp_get_num_threads(), t = (size_t)omp_get_thread_num();
        begin = dst_count * t / nt, end = dst_count * (t + 1) / nt;
#endif
        permute_range(&p, src, dst, begin, end);
    }
    return TK_OK;
}

static tk_status cpu_broadcast(tk_pltf_engine *e, const void *src_v, int src_ndim, const int *src_axes, void *dst_v,
                               int dst_ndim, const size_t *dst_shape)
{
    (void)e;
    const double *src = src_v;
    double *dst = dst_v;
    size_t sstride[TK_PLTF_MAX_INDICES] = {0}, count = 1, s = 1, pos[TK_PLTF_MAX_INDICES] = {0}, off = 0;
    for (int d = src_ndim - 1; d >= 0; --d) sstride[src_axes[d]] = s, s *= dst_shape[src_axes[d]];
    for (int d = 0; d < dst_ndim; ++d) count *= dst_shape[d];
    for (size_t i = 0; i < count; ++i) {
        dst[i] = src[off];
        for (int d = dst_ndim - 1; d >= 0; --d) {
            off += sstride[d];
            if (++pos[d] < dst_shape[d]) break;
            off -= pos[d] * sstride[d], pos[d] = 0;
        }
    }
    return TK_OK;
}

/* C[b] = op(A[b]) op(B[b]) by plain loops: the fallback without CBLAS, and the
 * faster choice for the many tiny products of a batched step (a BLAS call costs
 * about a microsecond before any arithmetic). */
static void loop_gemm(const tk_pltf_engine *e, size_t batch, size_t m, size_t n, size_t k, const double *a,
                      int trans_a, const double *b, int trans_b, double *c)
{
    const int threads = batch * m * n * k >= PAR_MIN ? threads_of(e) : 1;
    (void)threads;
    const long rows = (long)(batch * m);
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
    for (long row = 0; row < rows; ++row) {
        const size_t q = (size_t)row / m, i = (size_t)row % m;
        const double *A = a + q * m * k, *B = b + q * k * n;
        double *C = c + q * m * n + i * n;
        for (size_t j = 0; j < n; ++j) C[j] = 0;
        for (size_t p = 0; p < k; ++p) {
            const double aip = trans_a ? A[p * m + i] : A[i * k + p];
            if (trans_b)
                for (size_t j = 0; j < n; ++j) C[j] += aip * B[j * k + p];
            else
                for (size_t j = 0; j < n; ++j) C[j] += aip * B[p * n + j];
        }
    }
}

static tk_status cpu_gemm(tk_pltf_engine *e, size_t batch, size_t m, size_t n, size_t k, const void *a_v, int trans_a,
                          const void *b_v, int trans_b, void *c_v)
{
    const double *a = a_v, *b = b_v;
    double *c = c_v;
#ifdef TK_HAVE_CBLAS
    if (m * n * k >= 4096) {
        for (size_t q = 0; q < batch; ++q)
            cblas_dgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, (int)m,
                        (int)n, (int)k, 1.0, a + q * m * k, trans_a ? (int)m : (int)k, b + q * k * n,
                        trans_b ? (int)k : (int)n, 0.0, c + q * m * n, (int)n);
        return TK_OK;
    }
#endif
    loop_gemm(e, batch, m, n, k, a, trans_a, b, trans_b, c);
    return TK_OK;
}

/* Below this the ratio is taken at the floor, so that an empty model entry next
 * to observed data pulls its factors up instead of producing Inf. */
#define XHAT_FLOOR 1e-300

static tk_status cpu_mu_terms(tk_pltf_engine *e, tk_pltf_divergence d, const void *x_v, const void *mask_v,
                              const void *xhat_v, size_t count, void *num_v, void *den_v)
{
    const double *x = x_v, *mask = mask_v, *xh = xhat_v;
    double *num = num_v, *den = den_v;
    const int threads = count >= PAR_MIN ? threads_of(e) : 1;
    (void)threads;
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
    for (long li = 0; li < (long)count; ++li) {
        const size_t i = (size_t)li;
        if (mask && mask[i] == 0) { /* unobserved: x is never read */
            num[i] = 0;
            if (den) den[i] = 0;
            continue;
        }
        const double h = xh[i] > XHAT_FLOOR ? xh[i] : XHAT_FLOOR;
        switch (d) {
        case TK_PLTF_KL:
            num[i] = x[i] / h;
            if (den) den[i] = 1;
            break;
        case TK_PLTF_EUCLIDEAN:
            num[i] = x[i];
            if (den) den[i] = h;
            break;
        case TK_PLTF_IS:
            num[i] = x[i] / (h * h);
            if (den) den[i] = 1 / h;
            break;
        }
    }
    return TK_OK;
}

static tk_status cpu_add(tk_pltf_engine *e, void *dst_v, const void *src_v, size_t count)
{
    (void)e;
    double *dst = dst_v;
    const double *src = src_v;
    for (size_t i = 0; i < count; ++i) dst[i] += src[i];
    return TK_OK;
}

static tk_status cpu_mu_apply(tk_pltf_engine *e, void *z_v, const void *num_v, const void *den_v, size_t count,
                              double exponent)
{
    (void)e;
    double *z = z_v;
    const double *num = num_v, *den = den_v;
    for (size_t i = 0; i < count; ++i) {
        if (!(den[i] > 0)) continue; /* no observed entry depends on this one */
        const double r = num[i] / den[i];
        z[i] *= exponent == 1 ? r : pow(r, exponent);
    }
    return TK_OK;
}

static tk_status cpu_divergence(tk_pltf_engine *e, tk_pltf_divergence d, const void *x, const void *mask,
                                const void *xhat, size_t count, double *out)
{
    (void)e;
    const double *xd = x, *md = mask, *hd = xhat;
    double sum = 0;
    for (size_t i = 0; i < count; ++i) {
        if (md && md[i] == 0) continue;
        const double h = hd[i] > XHAT_FLOOR ? hd[i] : XHAT_FLOOR, v = xd[i];
        switch (d) {
        case TK_PLTF_KL: sum += (v > 0 ? v * log(v / h) - v : 0) + h; break;
        case TK_PLTF_EUCLIDEAN: sum += 0.5 * (v - hd[i]) * (v - hd[i]); break;
        case TK_PLTF_IS: sum += v / h - log(v / h) - 1; break;
        }
    }
    *out = sum;
    return TK_OK;
}

static tk_status cpu_naive(tk_pltf_engine *e, const size_t *dims, int n, const tk_pltf_term *terms,
                           const void *const *operands, const tk_pltf_term *out_term, void *out)
{
    (void)e;
    return tk_pltf_naive_gtm_cpu(dims, n, terms, (const double *const *)operands, out_term, out);
}

static tk_status cpu_sync(tk_pltf_engine *e)
{
    (void)e;
    return TK_OK;
}

static void cpu_destroy(tk_pltf_engine *e)
{
    free(e->ctx);
    e->ctx = NULL;
}

tk_status tk_pltf_engine_cpu(tk_pltf_engine *e, int use_omp, int num_threads)
{
    memset(e, 0, sizeof *e);
    cpu_ctx *c = calloc(1, sizeof *c);
    if (!c) return tk_set_error(TK_ERR_MEMORY, "PLTF: out of memory");
    c->use_omp = use_omp, c->num_threads = num_threads;
#if defined(TK_HAVE_OPENBLAS_THREADS)
    /* cpu is one thread throughout, GEMMs included; omp lets OpenBLAS use its pool.  The
     * count is process-wide: a cpu and an omp fit running at once on two threads may each
     * run GEMMs with the other's count.  Results do not depend on it (OpenBLAS splits a GEMM
     * by output blocks, never its sums; Testing/core/test_concurrency.cpp checks). */
    openblas_set_num_threads(use_omp ? (num_threads > 0 ? num_threads : threads_of(&(tk_pltf_engine){.ctx = c})) : 1);
#endif
    e->ctx = c;
    e->alloc = cpu_alloc, e->release = cpu_release, e->upload = cpu_upload, e->download = cpu_download;
    e->fill = cpu_fill, e->reduce_permute = cpu_reduce_permute, e->broadcast = cpu_broadcast, e->gemm = cpu_gemm, e->mu_terms = cpu_mu_terms;
    e->add = cpu_add, e->mu_apply = cpu_mu_apply, e->divergence = cpu_divergence, e->naive_gtm = cpu_naive, e->sync = cpu_sync;
    e->destroy = cpu_destroy;
    return TK_OK;
}
