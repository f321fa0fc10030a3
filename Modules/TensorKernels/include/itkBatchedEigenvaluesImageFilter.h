/** itk::BatchedEigenvaluesImageFilter: an n x n real matrix per pixel in, its n complex
 * eigenvalues out. \file
 * \ingroup tk_group_tk_itk */
#ifndef itkBatchedEigenvaluesImageFilter_h
#define itkBatchedEigenvaluesImageFilter_h

#include <atomic>
#include <type_traits>

#include "itkImage.h"
#include "itkMatrix.h"
#include "itkTensorKernelsImageFilter.h"
#include "itkVectorImage.h"
#include "tk_eig.h"

#include <memory>

namespace itk
{
namespace BatchedEigenvaluesDetail
{
/** Pixel access of the two input kinds: itk::Matrix<T, n, n> (n fixed at compile time) and
 * a VectorImage's VariableLengthVector of n*n components, row-major. */
template <typename TPixel> struct MatrixPixel {
    static constexpr unsigned int FixedOrder = 0;
    static double Get(const TPixel &p, unsigned int n, unsigned int i, unsigned int j) { return static_cast<double>(p[i * n + j]); }
};
template <typename T, unsigned int R, unsigned int C> struct MatrixPixel<Matrix<T, R, C>> {
    static_assert(R == C, "BatchedEigenvaluesImageFilter needs square matrices");
    static constexpr unsigned int FixedOrder = R;
    static double Get(const Matrix<T, R, C> &p, unsigned int, unsigned int i, unsigned int j) { return static_cast<double>(p(i, j)); }
};
} // namespace BatchedEigenvaluesDetail

/** \class BatchedEigenvaluesImageFilter
 * \brief The eigenvalues of the real n x n matrix at every pixel (n = 1..64).
 *
 * Input: an itk::Image<itk::Matrix<T, n, n>, D>, or an itk::VectorImage<T, D> with n*n
 * components holding each matrix row-major (C order, as tk-eig reads them).
 * Output: an itk::VectorImage with 2n components: the real and imaginary parts of the
 * eigenvalues, interleaved (re0, im0, re1, im1, ...), sorted as tk-eig sorts them: by real
 * part ascending, then imaginary part ascending, so a conjugate pair is (x - iy, x + iy).
 * The output's component type sets the precision (float: single, double: double).
 *
 * The method is LAPACK dgeev's: balancing (on by default, SetBalance), Householder
 * Hessenberg reduction, implicit double-shift QR.  A pixel whose matrix holds NaN or Inf,
 * or whose iteration does not converge, gets NaN components; it is counted in
 * GetNumberOfFailedPixels() and never stops the filter.
 *
 * The CPU backend (CPU or OMP) runs on ITK's threader over the requested region (streaming
 * works); the CUDA backend sends the whole requested region to the GPU in one batched call.
 * \ingroup tk_group_tk_itk
 */
template <typename TInputImage, typename TOutputImage = VectorImage<double, TInputImage::ImageDimension>>
class ITK_TEMPLATE_EXPORT BatchedEigenvaluesImageFilter : public TensorKernelsImageFilter<TInputImage, TOutputImage>
{
public:
    ITK_DISALLOW_COPY_AND_MOVE(BatchedEigenvaluesImageFilter);

    using Self = BatchedEigenvaluesImageFilter;
    using Superclass = TensorKernelsImageFilter<TInputImage, TOutputImage>;
    using Pointer = SmartPointer<Self>;
    using ConstPointer = SmartPointer<const Self>;
    itkNewMacro(Self);
    itkTypeMacro(BatchedEigenvaluesImageFilter, TensorKernelsImageFilter);

    using InputPixelType = typename TInputImage::PixelType;
    using OutputComponentType = typename TOutputImage::InternalPixelType;
    using OutputRegionType = typename TOutputImage::RegionType;
    static_assert(std::is_same<OutputComponentType, float>::value || std::is_same<OutputComponentType, double>::value,
                  "the output's components must be float or double");

    using BackendType = typename Superclass::BackendType;


    /** LAPACK-style balancing before the reduction (default on). */
    itkSetMacro(Balance, bool);
    itkGetConstMacro(Balance, bool);
    itkBooleanMacro(Balance);

    /** The matrix order n (known after UpdateOutputInformation). */
    itkGetConstMacro(MatrixOrder, unsigned int);
    /** Pixels whose matrix was not finite or did not converge (after Update). */
    itkGetConstMacro(NumberOfFailedPixels, SizeValueType);

protected:
    BatchedEigenvaluesImageFilter();
    ~BatchedEigenvaluesImageFilter() override = default;

    void GenerateOutputInformation() override;
    void BeforeThreadedGenerateData() override;
    void GenerateData() override;
    void DynamicThreadedGenerateData(const OutputRegionType &region) override;
    void AfterThreadedGenerateData() override;
    void PrintSelf(std::ostream &os, Indent indent) const override;

private:
    /** Eigenvalues of one region into the output; returns its failed-pixel count. */
    SizeValueType ProcessRegion(const OutputRegionType &region);
    /** The filter's one core plan, on \p backend with the filter's settings, kept from one
     * Update to the next while they stay the same (on CUDA it holds the device buffers and
     * streams), made anew when they change. */
    void PreparePlan(tk_backend backend, size_t max_batch);
    /** The filter's one call of the core, on its plan: the eigenvalues of \p pixels matrices
     * (row-major) into \p values and \p status; returns the failed-pixel count.  The
     * threader's regions call it at once: a cpu plan only reads itself there. */
    size_t SolveCore(size_t pixels, const OutputComponentType *matrices, OutputComponentType *values,
                     int8_t *status) const;
    /** The Backend setting resolved: true to run on CUDA. */
    bool UsesCUDA() const;

    bool m_Balance{true};
    unsigned int m_MatrixOrder{0};
    std::atomic<SizeValueType> m_FailedPixels{0};
    struct PlanDeleter {
        void operator()(tk_eig_plan *plan) const { tk_eig_plan_destroy(plan); }
    };
    std::unique_ptr<tk_eig_plan, PlanDeleter> m_Plan;
    tk_eig_options m_PlanOptions{};
    SizeValueType m_NumberOfFailedPixels{0};
};
} // namespace itk

#ifndef ITK_MANUAL_INSTANTIATION
#include "itkBatchedEigenvaluesImageFilter.hxx"
#endif
#endif
