/** itk::FixelsImageFilter: spherical-harmonic image in, fixels (FOD lobes) out. \file
 * \ingroup tk_group_tk_itk */
#ifndef itkFixelsImageFilter_h
#define itkFixelsImageFilter_h

#include "itkTensorKernelsBatchedImageFilter.h"
#include "itkTensorKernelsMaskedImageFilter.h"
#include "itkTensorKernelsSHImageFilter.h"
#include "itkVectorImage.h"
#include "tk_fixels.h"

namespace itk
{
namespace FixelsDetail
{
/** The fixels core's create in the plan holder's form (its plans take no batch size). */
inline tk_status CreatePlan(const tk_fixels_options *options, size_t, tk_fixels_plan **plan)
{
    return tk_fixels_plan_create(options, plan);
}
/** The filter's one plan of the fixels core, and its base: SH input with a mask. */
using Plan = TensorKernelsPlanHolder<tk_fixels_options, tk_fixels_plan, CreatePlan, tk_fixels_plan_destroy>;
template <typename TInputImage, typename TOutputImage>
using FilterBase =
    TensorKernelsSHImageFilter<TensorKernelsBatchedImageFilter<TensorKernelsMaskedImageFilter<TInputImage, TOutputImage>, Plan>>;
} // namespace FixelsDetail

/** \class FixelsImageFilter
 * \brief Each voxel's fiber ODF split into lobes (fixels) as MRtrix3's fod2fixel does (FMLS,
 * the fixels core, tk_fixels.h), with each lobe's direction, integral (AFD) and peak amplitude.
 *
 * Input: a 3-D itk::VectorImage of even-degree SH coefficients (6, 15, 28, 45, ... components;
 * MRtrix3's or DIPY's basis), and optionally a mask (SetMaskImage; voxels where it is zero get
 * no fixels).  Outputs, each with MaximumNumberOfFixels slots a voxel (the first lobes, as
 * fod2fixel -maxnum keeps them), NaN past the voxel's count:
 *  - 0 (GetOutput): 3 x slots components, each fixel's unit direction (the lobe's
 *    amplitude-weighted mean direction, or its peak with UsePeakDirection, as fod2fixel
 *    -dirpeak), in world RAS as FiberDirectionsImageFilter reports peaks (DIPY's basis rotated
 *    from voxel axes by the image's direction);
 *  - 1 (GetAFDOutput): its integral, the apparent fiber density;
 *  - 2 (GetPeakAmplitudeOutput): the FOD's amplitude at its peak (Newton's exact maximum);
 *  - 3 (GetFixelCountOutput): one component, the number of fixels in the voxel.
 * tk-fixels writes the same fixels (its --maxnum) as MRtrix3's fixel directory.
 *
 * The CPU backend runs on ITK's threader over the requested region (streaming works); CUDA
 * takes the requested region at once.  Backend Auto stays on the CPU until the fixels' CUDA
 * backend has had its first GPU run (Documentation/fixels.md): Backend CUDA asks for it.
 * \ingroup tk_group_tk_itk
 */
template <typename TInputImage = VectorImage<float, 3>, typename TOutputImage = VectorImage<float, 3>>
class ITK_TEMPLATE_EXPORT FixelsImageFilter : public FixelsDetail::FilterBase<TInputImage, TOutputImage>
{
public:
    itkTensorKernelsClassMacro(FixelsImageFilter, FixelsDetail::FilterBase<TInputImage, TOutputImage>);
    itkNewMacro(Self);

    using MaskImageType = typename Superclass::MaskImageType;
    using OutputImageRegionType = typename Superclass::OutputImageRegionType;
    using BasisType = typename Superclass::BasisType;

    /** Slots a voxel, the first lobes kept (fod2fixel -maxnum; default 4). */
    itkSetClampMacro(MaximumNumberOfFixels, unsigned int, 1, TK_FIXELS_MAX);
    itkGetConstMacro(MaximumNumberOfFixels, unsigned int);
    /** Drop lobes whose integral is below this (-fmls_integral; default 0). */
    itkSetClampMacro(IntegralThreshold, double, 0.0, NumericTraits<double>::max());
    itkGetConstMacro(IntegralThreshold, double);
    /** Drop lobes whose peak amplitude is below this (-fmls_peak_value; default 0.1). */
    itkSetClampMacro(PeakValueThreshold, double, 0.0, NumericTraits<double>::max());
    itkGetConstMacro(PeakValueThreshold, double);
    /** Merge lobes where the amplitude between them over the smaller peak exceeds this
     * (-fmls_lobe_merge_ratio, 0..1; default 1: never). */
    itkSetClampMacro(LobeMergeRatio, double, 0.0, 1.0);
    itkGetConstMacro(LobeMergeRatio, double);
    /** Output 0 holds each lobe's peak direction instead of its mean (fod2fixel -dirpeak). */
    itkSetMacro(UsePeakDirection, bool);
    itkGetConstMacro(UsePeakDirection, bool);
    itkBooleanMacro(UsePeakDirection);
    /** The sphere's directions: TK_FIXELS_DIRECTIONS (1281, fod2fixel's; default) or
     * TK_FIXELS_DIRECTIONS_DENSE (5121); another count throws at Update. */
    itkSetMacro(NumberOfDirections, unsigned int);
    itkGetConstMacro(NumberOfDirections, unsigned int);

    TOutputImage *GetAFDOutput() { return dynamic_cast<TOutputImage *>(this->ProcessObject::GetOutput(1)); }
    TOutputImage *GetPeakAmplitudeOutput() { return dynamic_cast<TOutputImage *>(this->ProcessObject::GetOutput(2)); }
    TOutputImage *GetFixelCountOutput() { return dynamic_cast<TOutputImage *>(this->ProcessObject::GetOutput(3)); }

    /** Voxels skipped because their coefficients were not finite (after Update). */
    SizeValueType GetNumberOfInvalidVoxels() const { return this->GetNumberOfSkippedPixels(); }

protected:
    FixelsImageFilter();
    ~FixelsImageFilter() override = default;

    void GenerateOutputInformation() override;
    void PrintSelf(std::ostream &os, Indent indent) const override;
    tk_fixels_options CoreOptions(tk_backend backend) const override;
    /** The fixels of one region, written to the four outputs; returns the invalid-voxel count. */
    SizeValueType ProcessRegion(const OutputImageRegionType &region) override;
    /** The fixels' CUDA backend has not yet run on a GPU: Auto stays on the CPU. */
    bool AutoMayPickCUDA() const override { return false; }

private:
    unsigned int m_MaximumNumberOfFixels{4};
    double m_IntegralThreshold{0.0};
    double m_PeakValueThreshold{0.1};
    double m_LobeMergeRatio{1.0};
    bool m_UsePeakDirection{false};
    unsigned int m_NumberOfDirections{TK_FIXELS_DIRECTIONS};
};
} // namespace itk

#ifndef ITK_MANUAL_INSTANTIATION
#include "itkFixelsImageFilter.hxx"
#endif
#endif
