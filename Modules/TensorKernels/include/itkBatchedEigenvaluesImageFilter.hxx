#ifndef itkBatchedEigenvaluesImageFilter_hxx
#define itkBatchedEigenvaluesImageFilter_hxx

#include <cmath>
#include <vector>

#include "itkBatchedEigenvaluesImageFilter.h"
#include "itkImageRegionConstIterator.h"
#include "itkImageRegionIterator.h"
#include "itkMacro.h"

namespace itk
{
template <typename TInputImage, typename TOutputImage>
void BatchedEigenvaluesImageFilter<TInputImage, TOutputImage>::GenerateOutputInformation()
{
    Superclass::GenerateOutputInformation();
    using Access = BatchedEigenvaluesDetail::MatrixPixel<InputPixelType>;
    unsigned int n = Access::FixedOrder;
    if (n == 0) {
        const unsigned int components = this->GetInput()->GetNumberOfComponentsPerPixel();
        n = static_cast<unsigned int>(std::lround(std::sqrt(static_cast<double>(components))));
        if (n * n != components)
            itkExceptionMacro(<< "the input has " << components
                              << " components per pixel, which is no square n*n (a matrix per pixel, row-major)");
    }
    if (n < 1 || n > TK_EIG_MAX_N)
        itkExceptionMacro(<< "matrix order " << n << " is outside the supported 1.." << TK_EIG_MAX_N);
    m_MatrixOrder = n;
    this->GetOutput()->SetNumberOfComponentsPerPixel(2 * n);
}

template <typename TInputImage, typename TOutputImage>
SizeValueType BatchedEigenvaluesImageFilter<TInputImage, TOutputImage>::ProcessRegion(const OutputImageRegionType &region)
{
    using Access = BatchedEigenvaluesDetail::MatrixPixel<InputPixelType>;
    using R = OutputComponentType;
    const size_t pixels = region.GetNumberOfPixels(), n = m_MatrixOrder, nn = n * n;
    if (pixels == 0) return 0;
    std::vector<R> matrices(pixels * nn), values(pixels * 2 * n);
    std::vector<int8_t> status(pixels);
    size_t p = 0;
    for (ImageRegionConstIterator<TInputImage> it(this->GetInput(), region); !it.IsAtEnd(); ++it, ++p) {
        const InputPixelType &pixel = it.Get();
        for (unsigned int i = 0; i < n; ++i)
            for (unsigned int j = 0; j < n; ++j) matrices[p * nn + i * n + j] = static_cast<R>(Access::Get(pixel, n, i, j));
    }
    tk_eig_result result = {values.data(), nullptr, status.data()};
    size_t failed = 0;
    this->ThrowUnlessPlanOK(tk_eig_plan_execute(this->GetPlan(), pixels, matrices.data(), &result, nullptr, &failed));
    typename TOutputImage::PixelType out(static_cast<unsigned int>(2 * n));
    p = 0;
    for (ImageRegionIterator<TOutputImage> it(this->GetOutput(), region); !it.IsAtEnd(); ++it, ++p) {
        for (size_t c = 0; c < 2 * n; ++c) out[static_cast<unsigned int>(c)] = values[p * 2 * n + c];
        it.Set(out);
    }
    return failed;
}

template <typename TInputImage, typename TOutputImage>
tk_eig_options BatchedEigenvaluesImageFilter<TInputImage, TOutputImage>::CoreOptions(tk_backend backend) const
{
    tk_eig_options o = BatchedEigenvaluesDetail::Plan::ZeroedOptions();
    tk_eig_options_init(&o, static_cast<int>(m_MatrixOrder));
    o.precision = std::is_same<OutputComponentType, double>::value ? TK_PRECISION_DOUBLE : TK_PRECISION_SINGLE;
    o.backend = backend;
    o.balance = m_Balance ? 1 : 0;
    this->ApplyCudaDevices(o);
    return o;
}

template <typename TInputImage, typename TOutputImage>
void BatchedEigenvaluesImageFilter<TInputImage, TOutputImage>::PrintSelf(std::ostream &os, Indent indent) const
{
    Superclass::PrintSelf(os, indent);
    os << indent << "MatrixOrder: " << m_MatrixOrder << "\n"
       << indent << "Balance: " << (m_Balance ? "on" : "off") << "\n";
}
} // namespace itk
#endif
