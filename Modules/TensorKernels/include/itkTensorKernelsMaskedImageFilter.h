/** itk::TensorKernelsMaskedImageFilter and itk::TensorKernelsWholeImageFilter: the
 * TensorKernels filters that take a mask, and those that fit the whole image at once. \file
 * \ingroup tk_group_tk_itk */
#ifndef itkTensorKernelsMaskedImageFilter_h
#define itkTensorKernelsMaskedImageFilter_h

#include <cstdint>
#include <vector>

#include "itkImage.h"
#include "itkImageRegionConstIterator.h"
#include "itkImageRegionIterator.h"
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
    itkTensorKernelsClassMacro(TensorKernelsMaskedImageFilter, TensorKernelsImageFilter<TInputImage, TOutputImage>);

    using MaskImageType = Image<unsigned char, TInputImage::ImageDimension>;

    void SetMaskImage(const MaskImageType *mask) { this->SetNthInput(1, const_cast<MaskImageType *>(mask)); }
    const MaskImageType *GetMaskImage() const { return dynamic_cast<const MaskImageType *>(this->ProcessObject::GetInput(1)); }

protected:
    TensorKernelsMaskedImageFilter() = default;
    ~TensorKernelsMaskedImageFilter() override = default;

    /** The mask over \p region as the core takes it: a byte a pixel, in the region's order,
     * 1 where the mask is nonzero; empty without a mask. */
    std::vector<uint8_t> MaskOver(const typename MaskImageType::RegionType &region) const
    {
        std::vector<uint8_t> used;
        const MaskImageType *mask = this->GetMaskImage();
        if (!mask) return used;
        used.reserve(region.GetNumberOfPixels());
        for (ImageRegionConstIterator<MaskImageType> it(mask, region); !it.IsAtEnd(); ++it) used.push_back(it.Get() != 0);
        return used;
    }
};

/** \class TensorKernelsWholeImageFilter
 * \brief A masked TensorKernels filter whose model couples every voxel: it always reads and
 * writes the whole image (no streaming), and its mask must have the image's grid.
 *
 * GenerateData reads the observed voxels (the mask's nonzero ones; every voxel without a
 * mask) and writes the output; a filter gives Reconstruct, its model fitted to them and
 * evaluated at every voxel.
 * \ingroup tk_group_tk_itk
 */
template <typename TInputImage, typename TOutputImage>
class ITK_TEMPLATE_EXPORT TensorKernelsWholeImageFilter : public TensorKernelsMaskedImageFilter<TInputImage, TOutputImage>
{
public:
    itkTensorKernelsClassMacro(TensorKernelsWholeImageFilter, TensorKernelsMaskedImageFilter<TInputImage, TOutputImage>);

    using MaskImageType = typename Superclass::MaskImageType;
    using RegionType = typename TInputImage::RegionType;

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

    /** Reads the observed voxels, fits the model (Reconstruct) and writes its values. */
    void GenerateData() override
    {
        const TInputImage *input = this->GetInput();
        const RegionType region = input->GetLargestPossibleRegion();
        const std::vector<uint8_t> observed = this->MaskOver(region);
        std::vector<double> values(region.GetNumberOfPixels());
        size_t v = 0;
        /// Unobserved voxels are never read, not even to copy them.
        for (ImageRegionConstIterator<TInputImage> it(input, region); !it.IsAtEnd(); ++it, ++v)
            values[v] = observed.empty() || observed[v] ? static_cast<double>(it.Get()) : 0.0;
        const std::vector<double> fitted = Reconstruct(region, values, observed.empty() ? nullptr : observed.data());
        this->AllocateOutputs();
        v = 0;
        for (ImageRegionIterator<TOutputImage> it(this->GetOutput(), region); !it.IsAtEnd(); ++it, ++v)
            it.Set(static_cast<typename TOutputImage::PixelType>(fitted[v]));
        this->UpdateProgress(1.0f);
    }

    /** The filter's model fitted to the observed voxels and evaluated at every voxel of
     * \p region (the whole image): \p values holds the image in buffer order (axis 0
     * fastest), 0 where a voxel is unobserved; \p observed the mask, a byte a voxel, or null
     * where every voxel is observed.  Returns the output's values, in the same order. */
    virtual std::vector<double> Reconstruct(const RegionType &region, const std::vector<double> &values,
                                            const uint8_t *observed) = 0;

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
