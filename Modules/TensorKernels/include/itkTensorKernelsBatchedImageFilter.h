/** itk::TensorKernelsBatchedImageFilter: the TensorKernels filters that stream pixels through
 * one kept plan of a batched core. \file
 * \ingroup tk_group_tk_itk */
#ifndef itkTensorKernelsBatchedImageFilter_h
#define itkTensorKernelsBatchedImageFilter_h

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <string>

#include "itkTensorKernelsImageFilter.h"
#include "itkTensorKernelsMacro.h"
#include "itkTensorKernelsPlanHolder.h"
#include "tk_device.h"

namespace itk
{
/** \class TensorKernelsBatchedImageFilter
 * \brief A TensorKernels filter whose core solves each pixel on its own, in batches, on one
 * plan (TensorKernelsPlanHolder) kept from one Update to the next while the filter's
 * settings stay the same.
 *
 * On the CPU, ITK's threader splits the requested region (streaming works) and every
 * region calls the core on the one cpu plan at once; on CUDA the whole requested region
 * goes to the GPU in one call, which the core chunks and streams.  The pixels the core
 * skipped (input not finite, no convergence; NaN in the output) are summed over the
 * regions.
 *
 * \p TSuperclass is the base the filter extends (TensorKernelsImageFilter, or
 * TensorKernelsMaskedImageFilter for a mask), \p TPlanHolder the core's plan.  A filter
 * gives the core's options of its settings (CoreOptions) and the work of one region
 * (ProcessRegion); it may send the whole request to the CPU too (TakesWholeRequestOnCPU,
 * ProcessWholeRequest).
 * \ingroup tk_group_tk_itk
 */
template <typename TSuperclass, typename TPlanHolder>
class ITK_TEMPLATE_EXPORT TensorKernelsBatchedImageFilter : public TSuperclass
{
public:
    itkTensorKernelsClassMacro(TensorKernelsBatchedImageFilter, TSuperclass);

    using BackendType = typename TSuperclass::BackendType;
    using OutputImageRegionType = typename TSuperclass::OutputImageRegionType;
    using CoreOptionsType = typename TPlanHolder::OptionsType;

    /** On CUDA: the first GPU (default 0) and how many GPUs from it share each request
     * (default 1; 0: every visible GPU from CudaDevice on), each a contiguous share of the
     * pixels, with results identical to one GPU (Documentation/multi_gpu.md).  Ignored on
     * the CPU. */
    itkSetMacro(CudaDevice, unsigned);
    itkGetConstMacro(CudaDevice, unsigned);
    itkSetMacro(NumberOfCudaDevices, unsigned);
    itkGetConstMacro(NumberOfCudaDevices, unsigned);

protected:
    /** \p coreFailure: the text before the core's error in the exception a failed call throws. */
    explicit TensorKernelsBatchedImageFilter(const char *coreFailure)
        : m_CoreFailure(coreFailure)
    {
        this->DynamicMultiThreadingOn();
    }
    ~TensorKernelsBatchedImageFilter() override = default;

    /** The core's options of the filter's settings on \p backend, made from
     * TPlanHolder::ZeroedOptions() (the plan compares them bytewise). */
    virtual CoreOptionsType CoreOptions(tk_backend backend) const = 0;
    /** The pixels of \p region through the plan into the outputs; returns how many the core
     * skipped.  The threader's regions call it at once. */
    virtual SizeValueType ProcessRegion(const OutputImageRegionType &region) = 0;
    /** Whether Backend Auto may resolve to CUDA (default: yes).  A filter whose CUDA backend
     * has not yet run on a GPU says no: Auto stays on the CPU, and only Backend CUDA asks for
     * the GPU (as that core's tool does with --backend auto). */
    virtual bool AutoMayPickCUDA() const { return true; }
    /** Whether the whole request goes to ProcessWholeRequest on the CPU too (default: no,
     * the threader splits it). */
    virtual bool TakesWholeRequestOnCPU() const { return false; }
    /** The whole requested region at once, on \p backend (CUDA, or OMP where
     * TakesWholeRequestOnCPU): by default ProcessRegion on a plan sized for it. */
    virtual SizeValueType ProcessWholeRequest(tk_backend backend)
    {
        const OutputImageRegionType region = this->GetOutput()->GetRequestedRegion();
        PreparePlan(CoreOptions(backend), region.GetNumberOfPixels());
        return ProcessRegion(region);
    }

    /** The device settings into the core's options (their cuda_device and cuda_device_count):
     * each filter's CoreOptions calls it. */
    template <typename TOptions>
    void ApplyCudaDevices(TOptions &options) const
    {
        options.cuda_device = static_cast<int>(m_CudaDevice);
        int count = static_cast<int>(m_NumberOfCudaDevices);
        if (count == 0) count = std::max(1, tk_cuda_device_count() - options.cuda_device);
        options.cuda_device_count = count;
    }

    /** The plan for \p options: the kept one if they are its options, else a new one. */
    void PreparePlan(const CoreOptionsType &options, size_t max_batch) { ThrowUnlessPlanOK(m_Plan.Prepare(options, max_batch)); }
    /** The plan of the last PreparePlan, for the core's calls. */
    typename TPlanHolder::PlanType *GetPlan() const { return m_Plan.Get(); }
    /** Throws "<coreFailure>: <the core's last error>" unless a call of the core returned TK_OK. */
    void ThrowUnlessPlanOK(tk_status status) const { this->ThrowUnlessCoreOK(status, m_CoreFailure); }
    /** The pixels the core skipped in the last Update. */
    SizeValueType GetNumberOfSkippedPixels() const { return m_NumberOfSkippedPixels; }

    void GenerateData() override
    {
        const bool cuda = (this->GetBackend() != BackendType::Auto || AutoMayPickCUDA()) &&
                          this->ResolveBackend(BackendType::CPU) == BackendType::CUDA;
        if (!cuda && !TakesWholeRequestOnCPU()) {
            PreparePlan(CoreOptions(TK_BACKEND_CPU), 0); ///< one cpu plan, read by every region at once
            Superclass::GenerateData();                  ///< ITK's threader over the requested region
            return;
        }
        this->AllocateOutputs();
        this->BeforeThreadedGenerateData();
        m_SkippedPixels += ProcessWholeRequest(cuda ? TK_BACKEND_CUDA : TK_BACKEND_OMP);
        this->AfterThreadedGenerateData();
    }
    void BeforeThreadedGenerateData() override { m_SkippedPixels = 0; }
    void DynamicThreadedGenerateData(const OutputImageRegionType &region) override { m_SkippedPixels += ProcessRegion(region); }
    void AfterThreadedGenerateData() override { m_NumberOfSkippedPixels = m_SkippedPixels; }

private:
    const std::string m_CoreFailure;
    unsigned m_CudaDevice{0};
    unsigned m_NumberOfCudaDevices{1};
    TPlanHolder m_Plan;
    std::atomic<SizeValueType> m_SkippedPixels{0};
    SizeValueType m_NumberOfSkippedPixels{0};
};
} // namespace itk
#endif
