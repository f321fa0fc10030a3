/** itk::ResolveTensorKernelsBackend: the one place that decides whether a TensorKernels
 * filter runs on CUDA or on the CPU. \file
 * \ingroup tk_group_tk_itk */
#ifndef itkTensorKernelsBackend_h
#define itkTensorKernelsBackend_h

#include <string>

#include "itkTensorKernelsEnums.h"
#include "tk_device.h"

namespace itk
{
/** Where a filter runs, and why (for its debug output). */
struct TensorKernelsBackendChoice {
    TensorKernelsEnums::Backend backend; /**< never Auto */
    std::string reason;                  /**< why this one */
};

/** A Backend setting resolved: an explicit CPU, OMP or CUDA is kept (CUDA without a usable
 * GPU then fails in the core, which says why); Auto becomes CUDA where
 * tk_cuda_device_usable() finds a GPU that runs this build's code (false in a build without
 * CUDA), else \p withoutGpu, the filter's own CPU backend, silently: a workstation without a
 * GPU is no error. */
inline TensorKernelsBackendChoice ResolveTensorKernelsBackend(TensorKernelsEnums::Backend requested,
                                                              TensorKernelsEnums::Backend withoutGpu)
{
    if (requested != TensorKernelsEnums::Backend::Auto) return {requested, "set explicitly"};
    char reason[512] = "";
    if (tk_cuda_device_usable(0, reason, sizeof reason)) return {TensorKernelsEnums::Backend::CUDA, "Auto, a usable CUDA GPU"};
    return {withoutGpu, std::string("Auto, no usable CUDA GPU: ") + reason};
}
} // namespace itk
#endif
