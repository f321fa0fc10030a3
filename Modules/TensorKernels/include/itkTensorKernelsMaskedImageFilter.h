/** itk::TensorKernelsMaskedImageFilter and itk::TensorKernelsWholeImageFilter: the
 * TensorKernels filters that take a mask, and those that fit the whole image at once. \file
 * \ingroup tk_group_tk_itk */
#ifndef itkTensorKernelsMaskedImageFilter_h
#define itkTensorKernelsMaskedImageFilter_h

#include "itkImage.h"
#include "itkTensorKernelsImageFilter.h"

namespace itk
{
/** \class TensorKernelsMaskedImageFilter
 * \brief A TensorKernels filter with an optional mask as input 1 (nonzero: the voxel is
 * used; its meaning, inside or observed, is the filter's).
 * \ingroup tk_group_tk_itk
 */
template <typename TInputImage, typename TOutputImage>
class ITK_TEMPLATE_EXPORT TensorKernelsMaskedImageFilter : public TensorKernelsImageFilter<TInputImage, TOutputImage>
{
public:
    ITK_DISALLOW_COPY_AND_MOVE(TensorKernelsMaskedImageFilter);

    using Self = TensorKernelsMaskedImageFilter;
    using Superclass = TensorKernelsImageFilter<TInputImage, TOutputImage>;
    using Pointer = SmartPointer<Self>;
    using ConstPointer = SmartPointer<const Self>;
    itkTypeMacro(TensorKernelsMaskedImageFilter, TensorKernelsImageFilter);

    using MaskImageType = Image<unsigned char, TInputImage::ImageDimension>;

    void SetMaskImage(const MaskImageType *mask) { this->SetNthInput(1, const_cast<MaskImageType *>(mask)); }
    const MaskImageType *GetMaskImage() const { return dynamic_cast<const MaskImageType *>(this->ProcessObject::GetInput(1)); }

protected:
    TensorKernelsMaskedImageFilter() = default;
    ~TensorKernelsMaskedImageFilter() override = default;
};

/** \class TensorKernelsWholeImageFilter
 * \brief A masked TensorKernels filter whose model couples every voxel: it always reads and
 * writes the whole image (no streaming), and its mask must have the image's grid.
 * \ingroup tk_group_tk_itk
 */
template <typename TInputImage, typename TOutputImage>
class ITK_TEMPLATE_EXPORT TensorKernelsWholeImageFilter : public TensorKernelsMaskedImageFilter<TInputImage, TOutputImage>
{
public:
    ITK_DISALLOW_COPY_AND_MOVE(TensorKernelsWholeImageFilter);

    using Self = TensorKernelsWholeImageFilter;
    using Superclass = TensorKernelsMaskedImageFilter<TInputImage, TOutputImage>;
    using Pointer = SmartPointer<Self>;
    using ConstPointer = SmartPointer<const Self>;
    itkTypeMacro(TensorKernelsWholeImageFilter, TensorKernelsMaskedImageFilter);

    using MaskImageType = typename Superclass::MaskImageType;

protected:
    TensorKernelsWholeImageFilter() = default;
    ~TensorKernelsWholeImageFilter() override = default;

    void GenerateInputRequestedRegion() override
    {
        Superclass::GenerateInputRequestedRegion();
        for (unsigned int k = 0; k < this->GetNumberOfIndexedInputs(); ++k)
            if (auto *input = dynamic_cast<ImageBase<TInputImage::ImageDimension> *>(this->ProcessObject::GetInput(k)))
                input->SetRequestedRegionToLargestPossibleRegion();
    }

    void EnlargeOutputRequestedRegion(DataObject *output) override
    {
        Superclass::EnlargeOutputRequestedRegion(output);
        output->SetRequestedRegionToLargestPossibleRegion();
    }

    /** The mask's size first (the clearer message), then ITK's geometry check. */
    void VerifyInputInformation() const override
    {
        const MaskImageType *mask = this->GetMaskImage();
        if (!mask) return; ///< one input: nothing to compare
        const auto size = this->GetInput()->GetLargestPossibleRegion().GetSize();
        if (mask->GetLargestPossibleRegion().GetSize() != size)
            itkExceptionMacro(<< "the mask's size " << mask->GetLargestPossibleRegion().GetSize()
                              << " differs from the image's " << size);
        Superclass::VerifyInputInformation();
    }
};
} // namespace itk
#endif
