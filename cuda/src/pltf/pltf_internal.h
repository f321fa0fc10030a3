/* PLTF internals: the tensor terms, the contraction plan and the engine (the few
 * primitives a backend provides: allocation, permute-and-reduce, batched GEMM and
 * the element-wise steps of the updates). */
#ifndef TK_PLTF_INTERNAL_H
#define TK_PLTF_INTERNAL_H

#include <stdint.h>

#include "common/timer.h"
#include "tk_pltf.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A tensor's axes: index ids in storage order (C order, last fastest). */
typedef struct tk_pltf_term {
    int ndim;
    int idx[TK_PLTF_MAX_INDICES];
} tk_pltf_term;

typedef struct tk_pltf_engine tk_pltf_engine;
struct tk_pltf_engine {
    void *ctx;
    /* Buffers hold the engine's own element type (double on the CPU, float on the GPU). */
    tk_status (*alloc)(tk_pltf_engine *e, size_t count, void **out);
    void (*release)(tk_pltf_engine *e, void *p);
    tk_status (*upload)(tk_pltf_engine *e, void *dst, const double *src, size_t count);
    tk_status (*download)(tk_pltf_engine *e, double *dst, const void *src, size_t count);
    tk_status (*fill)(tk_pltf_engine *e, void *dst, double value, size_t count);
    /* dst = src with its axes reordered to dst_axes (src axis numbers); src axes not
     * listed are summed out. */
    tk_status (*reduce_permute)(tk_pltf_engine *e, const void *src, int src_ndim, const size_t *src_shape, void *dst,
                                int dst_ndim, const int *dst_axes);
    /* dst (dst_shape) = src broadcast along the axes src lacks; src_axes[d] is the
     * dst axis of src axis d (increasing). */
    tk_status (*broadcast)(tk_pltf_engine *e, const void *src, int src_ndim, const int *src_axes, void *dst,
                           int dst_ndim, const size_t *dst_shape);
    /* Row-major C[b] (m x n) = op(A[b]) op(B[b]); A[b] is m x k (k x m if trans_a),
     * B[b] k x n (n x k if trans_b); batches packed one after the other. */
    tk_status (*gemm)(tk_pltf_engine *e, size_t batch, size_t m, size_t n, size_t k, const void *a, int trans_a,
                      const void *b, int trans_b, void *c);
    /* num = M X X^^(b-2), den = M X^^(b-1) (den NULL: M, for KL); mask NULL = all observed. */
    tk_status (*mu_terms)(tk_pltf_engine *e, tk_pltf_divergence d, const void *x, const void *mask, const void *xhat,
                          size_t count, void *num, void *den);
    /* dst += src */
    tk_status (*add)(tk_pltf_engine *e, void *dst, const void *src, size_t count);
    /* z *= (num / den)^exponent where den > 0. */
    tk_status (*mu_apply)(tk_pltf_engine *e, void *z, const void *num, const void *den, size_t count, double exponent);
    tk_status (*divergence)(tk_pltf_engine *e, tk_pltf_divergence d, const void *x, const void *mask, const void *xhat,
                            size_t count, double *out);
    /* The seed's GTM over the full joint index space (see pltf_naive.c). */
    tk_status (*naive_gtm)(tk_pltf_engine *e, const size_t *dims, int num_operands, const tk_pltf_term *terms,
                           const void *const *operands, const tk_pltf_term *out_term, void *out);
    /* Optional: one whole factor update of a fused special case; TK_ERR_UNSUPPORTED
     * when the model or divergence is not one it fuses. */
    tk_status (*fused_update)(tk_pltf_engine *e, const tk_pltf_model *m, tk_pltf_divergence d, int factor,
                              void *const *factors, const void *x, const void *mask);
    tk_status (*sync)(tk_pltf_engine *e);
    /* Optional: TK_ERR_MEMORY (naming what) when count values cannot all be resident at
     * once; the GPU engine's up-front refusal of a model that does not fit. */
    tk_status (*check_fit)(tk_pltf_engine *e, size_t count, const char *what);
    void (*destroy)(tk_pltf_engine *e);
};

/* A contraction plan for fixed operand terms and output. */
#define TK_PLTF_MAX_OPERANDS TK_PLTF_MAX_FACTORS
typedef struct tk_pltf_plan {
    int num_operands;
    tk_pltf_term operands[TK_PLTF_MAX_OPERANDS];
    tk_pltf_term out;
    size_t dims[TK_PLTF_MAX_INDICES];
    /* best split of every operand subset (bit mask), and its kept indices */
    uint16_t *split;
    uint64_t *keep;
    double cost;
} tk_pltf_plan;

tk_status tk_pltf_plan_make(tk_pltf_plan *plan, const size_t *dims, int num_operands, const tk_pltf_term *operands,
                            const tk_pltf_term *out);
void tk_pltf_plan_free(tk_pltf_plan *plan);
/* out (out term's layout) = GTM of the operands, on the engine. */
tk_status tk_pltf_plan_run(const tk_pltf_plan *plan, tk_pltf_engine *e, const void *const *operands, void *out);
void tk_pltf_plan_text(const tk_pltf_plan *plan, char *buf, size_t size);

tk_status tk_pltf_engine_cpu(tk_pltf_engine *e, int use_omp, int num_threads);
tk_status tk_pltf_engine_cuda(tk_pltf_engine *e, int device);

void tk_pltf_out_term(const tk_pltf_model *m, tk_pltf_term *t);
void tk_pltf_factor_term(const tk_pltf_model *m, int f, tk_pltf_term *t);
tk_status tk_pltf_make_engine(tk_pltf_engine *e, tk_backend b, int threads, int device);
uint64_t tk_pltf_next_random(uint64_t *s);
tk_status tk_pltf_check_model_for_updates(const tk_pltf_model *m);
tk_status tk_pltf_check_data(const tk_pltf_model *m, tk_pltf_divergence d, const double *x, const uint8_t *mask,
                             size_t count, double *mean);

/* The CPU naive GTM, shared by the CPU engine. */
tk_status tk_pltf_naive_gtm_cpu(const size_t *dims, int num_operands, const tk_pltf_term *terms,
                                const double *const *operands, const tk_pltf_term *out_term, double *out);

#ifdef __cplusplus
}
#endif
#endif
