/* The PLTF CUDA engine's state, shared by its generic primitives (pltf_cuda.cu), its fused
 * KL-PARAFAC pass (pltf_cuda_fused.cu) and its naive GTM (pltf_cuda_naive.cu).  Device buffers are float. */
#ifndef TK_PLTF_CUDA_INTERNAL_H
#define TK_PLTF_CUDA_INTERNAL_H

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "common/cuda_memory.h"
#include "pltf_internal.h"

#define TK_PLTF_CUDA_CACHE 64

typedef struct {
    int device, sm_count;
    cublasHandle_t blas;
    /* Freed buffers kept for reuse: a GTM allocates the same intermediates every
     * iteration, and cudaFree would synchronize the device each time. */
    void *cache_ptr[TK_PLTF_CUDA_CACHE];
    size_t cache_count[TK_PLTF_CUDA_CACHE];
    int cache_used;
    /* sizes of live allocations, for release into the cache */
    void **live_ptr;
    size_t *live_count;
    int live_used, live_cap;
    /* fused KL-PARAFAC scratch: num, den (or the unmasked column-sum product) */
    float *fused_num, *fused_den;
    size_t fused_cap;
    double *reduce_slot; /* one double on the device for divergence sums */
} cuda_ctx;

tk_status tk_pltf_cuda_fused_update(tk_pltf_engine *e, const tk_pltf_model *m, tk_pltf_divergence d, int factor,
                                    void *const *factors, const void *x, const void *mask);
tk_status tk_pltf_cuda_naive_gtm(tk_pltf_engine *e, const size_t *dims, int num_operands, const tk_pltf_term *terms,
                                 const void *const *operands, const tk_pltf_term *out_term, void *out);

#endif
