/** itk::TensorKernelsEnums: the enumerations the TensorKernels filters share. \file
 * \ingroup tk_group_tk_itk */
#ifndef itkTensorKernelsEnums_h
#define itkTensorKernelsEnums_h

#include <cstdint>
#include <ostream>

#include "tk_types.h"

namespace itk
{
/** \class TensorKernelsEnums
 * \brief Enumerations of the TensorKernels filters, in one place (ITK's ...Enums classes).
 * \ingroup tk_group_tk_itk */
class TensorKernelsEnums
{
public:
    /** Where a filter's Update() runs.  Auto (every filter's default) is a request:
     * CUDA where tk_cuda_device_usable() finds a GPU that runs this build's code, else the
     * filter's CPU backend (TensorKernelsBackend.h resolves it).  CPU is one thread (or ITK's
     * threader, for the filters that stream), OMP the core's OpenMP threads, CUDA the GPU
     * (without a usable GPU it throws).
     *
     * Signed, unlike ITK's uint8_t enums: the values are tk_backend's (Auto is -1), so a
     * tool's static_cast from the core's tk_backend keeps meaning what it says. */
    enum class Backend : int8_t
    {
        Auto = TK_BACKEND_AUTO,
        CPU = TK_BACKEND_CPU,
        OMP = TK_BACKEND_OMP,
        OpenMP = OMP, /**< the name NonnegativeTensorFactorizationImageFilter always had */
        CUDA = TK_BACKEND_CUDA
    };
};

/** "Auto", "CPU", "OpenMP" or "CUDA" (the Set macros' debug output, PrintSelf). */
inline std::ostream &operator<<(std::ostream &out, const TensorKernelsEnums::Backend value)
{
    switch (value) {
    case TensorKernelsEnums::Backend::Auto: return out << "Auto";
    case TensorKernelsEnums::Backend::CPU: return out << "CPU";
    case TensorKernelsEnums::Backend::OMP: return out << "OpenMP";
    case TensorKernelsEnums::Backend::CUDA: return out << "CUDA";
    }
    return out << "INVALID VALUE FOR itk::TensorKernelsEnums::Backend";
}

/** The core's name for a resolved backend (Auto has none: the core refuses it). */
inline tk_backend ToCoreBackend(const TensorKernelsEnums::Backend value)
{
    return static_cast<tk_backend>(value);
}
} // namespace itk
#endif
