/* The one CUDA error check of every core.  A failed CUDA call becomes a tk_status with the
 * message "<who>: <call> failed: <CUDA's reason>"; out of device memory is TK_ERR_MEMORY (so a
 * caller can retry with smaller chunks or tell the user to free memory), anything else
 * TK_ERR_CUDA. */
#ifndef TK_CUDA_CHECK_CUH
#define TK_CUDA_CHECK_CUH

#include <cuda_runtime.h>

#include "tk_status.h"

static inline tk_status tk_cuda_status(cudaError_t err, const char *who, const char *call)
{
    if (err == cudaSuccess) return TK_OK;
    return tk_set_error(err == cudaErrorMemoryAllocation ? TK_ERR_MEMORY : TK_ERR_CUDA, "%s: %s failed: %s", who, call,
                        cudaGetErrorString(err));
}

/* On failure: the status into status_var, then goto label (where the call's resources are freed). */
#define TK_CUDA_TRY_GOTO(status_var, label, who, call)                  \
    do {                                                                \
        const cudaError_t tk_cuda_err_ = (call);                        \
        if (tk_cuda_err_ != cudaSuccess) {                              \
            (status_var) = tk_cuda_status(tk_cuda_err_, (who), #call); \
            goto label;                                                 \
        }                                                               \
    } while (0)

/* On failure: return the status from the enclosing function (nothing to free). */
#define TK_CUDA_TRY_RETURN(who, call)                                                                   \
    do {                                                                                                \
        const cudaError_t tk_cuda_err_ = (call);                                                        \
        if (tk_cuda_err_ != cudaSuccess) return tk_cuda_status(tk_cuda_err_, (who), #call);            \
    } while (0)

#endif
