/** itk::TensorKernelsImageFilter: what every TensorKernels filter shares (the Backend
 * setting, the core's errors as ITK exceptions, progress). \file
 * \ingroup tk_group_tk_itk */
#ifndef itkTensorKernelsImageFilter_h
#define itkTensorKernelsImageFilter_h

#include <cstddef>
#include <string>

#include "itkImageToImageFilter.h"
#include "itkMacro.h"
#include "itkTensorKernelsBackend.h"
#include "itkTensorKernelsEnums.h"
#include "itkTensorKernelsMacro.h"
#include "tk_status.h"

namespace itk
{
/** \class TensorKernelsImageFilter
 * \brief Base of the TensorKernels filters: an ImageToImageFilter that runs one of the C
 * core's computations on the backend its Backend setting names.
 *
 * A filter reads its settings from its members into the core's options, calls the core,
 * and turns a failed call into an itk::ExceptionObject with ThrowUnlessCoreOK(); Auto is
 * resolved by ResolveBackend() (ResolveTensorKernelsBackend(): one place for all filters).
 * \ingroup tk_group_tk_itk
 */
template <typename TInputImage, typename TOutputImage>
class ITK_TEMPLATE_EXPORT TensorKernelsImageFilter : public ImageToImageFilter<TInputImage, TOutputImage>
{
public:
    itkTensorKernelsClassMacro(TensorKernelsImageFilter, ImageToImageFilter<TInputImage, TOutputImage>);

    /** The filters' name of TensorKernelsEnums::Backend (Filter::BackendType::CUDA, ...). */
    using BackendType = TensorKernelsEnums::Backend;

    /** Where Update() runs: Auto (default) on CUDA where tk_cuda_device_usable() finds a GPU
     * that runs this build's code, else on the filter's CPU backend, silently (the debug
     * output says which and why); the others force one (CUDA without a usable GPU throws). */
    itkSetMacro(Backend, BackendType);
    itkGetConstMacro(Backend, BackendType);

protected:
    /** One required input, the image (a mask, where a filter takes one, is optional). */
    TensorKernelsImageFilter() { this->SetNumberOfRequiredInputs(1); }
    ~TensorKernelsImageFilter() override = default;

    /** The Backend setting resolved, Auto to CUDA or \p withoutGpu (the filter's CPU
     * backend); the debug output says which and why. */
    BackendType ResolveBackend(BackendType withoutGpu) const
    {
        const TensorKernelsBackendChoice choice = ResolveTensorKernelsBackend(m_Backend, withoutGpu);
        itkDebugMacro(<< "Backend " << choice.backend << " (" << choice.reason << ")");
        return choice.backend;
    }

    /** Throws an itk::ExceptionObject "<what>: <the core's last error>" (just the error when
     * \p what is empty) unless a core call returned TK_OK. */
    void ThrowUnlessCoreOK(tk_status status, const std::string &what) const
    {
        if (status == TK_OK) return;
        if (what.empty()) itkExceptionMacro(<< tk_last_error());
        itkExceptionMacro(<< what << ": " << tk_last_error());
    }

    /** Progress as the fraction done / total of the filter's work. */
    void UpdateProgressOf(size_t done, size_t total) { this->UpdateProgress(static_cast<float>(done) / static_cast<float>(total)); }

    void PrintSelf(std::ostream &os, Indent indent) const override
    {
        Superclass::PrintSelf(os, indent);
        os << indent << "Backend: " << m_Backend << "\n";
    }

private:
    BackendType m_Backend{BackendType::Auto};
};
} // namespace itk
#endif
