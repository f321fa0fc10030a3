/** itk::BatchedEigenvaluesImageFilter: an n x n real matrix per pixel in, its n complex
 * eigenvalues out. \file
 * \ingroup tk_group_tk_itk */
#ifndef itkBatchedEigenvaluesImageFilter_h
#define itkBatchedEigenvaluesImageFilter_h

#include <type_traits>

#include "itkImage.h"
#include "itkMatrix.h"
#include "itkTensorKernelsBatchedImageFilter.h"
#include "itkTensorKernelsImageFilter.h"
#include "itkVectorImage.h"
#include "tk_eig.h"

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

/** The filter's one plan of tk-eig, and its base: no mask. */
using Plan = TensorKernelsPlanHolder<tk_eig_options, tk_eig_plan, tk_eig_plan_create, tk_eig_plan_destroy>;
template <typename TInputImage, typename TOutputImage>
using FilterBase = TensorKernelsBatchedImageFilter<TensorKernelsImageFilter<TInputImage, TOutputImage>, Plan>;
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
class ITK_TEMPLATE_EXPORT BatchedEigenvaluesImageFilter : public BatchedEigenvaluesDetail::FilterBase<TInputImage, TOutputImage>
{
public:
    itkTensorKernelsClassMacro(BatchedEigenvaluesImageFilter, BatchedEigenvaluesDetail::FilterBase<TInputImage, TOutputImage>);
    itkNewMacro(Self);

    using InputPixelType = typename TInputImage::PixelType;
    using OutputComponentType = typename TOutputImage::InternalPixelType;
    static_assert(std::is_same<OutputComponentType, float>::value || std::is_same<OutputComponentType, double>::value,
                  "the output's components must be float or double");
    using OutputImageRegionType = typename Superclass::OutputImageRegionType;

    /** LAPACK-style balancing before the reduction (default on). */
    itkSetMacro(Balance, bool);
    itkGetConstMacro(Balance, bool);
    itkBooleanMacro(Balance);

    /** The matrix order n (known after UpdateOutputInformation). */
    itkGetConstMacro(MatrixOrder, unsigned int);
    /** Pixels whose matrix was not finite or did not converge (after Update). */
    SizeValueType GetNumberOfFailedPixels() const { return this->GetNumberOfSkippedPixels(); }

protected:
    BatchedEigenvaluesImageFilter()
        : Superclass("batched eigenvalues failed")
    {}
    ~BatchedEigenvaluesImageFilter() override = default;

    void GenerateOutputInformation() override;
    tk_eig_options CoreOptions(tk_backend backend) const override;
    /** The eigenvalues of the region's matrices into the output (row-major, as the core
     * reads them); returns the failed-pixel count. */
    SizeValueType ProcessRegion(const OutputImageRegionType &region) override;
    void PrintSelf(std::ostream &os, Indent indent) const override;

private:
    bool m_Balance{true};
    unsigned int m_MatrixOrder{0};
};
} // namespace itk

#ifndef ITK_MANUAL_INSTANTIATION
#include "itkBatchedEigenvaluesImageFilter.hxx"
#endif
#endif
