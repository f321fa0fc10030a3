/** itk::FiberDirectionsImageFilter: spherical-harmonic image in, fiber directions out. \file
 * \ingroup tk_group_tk_itk */
#ifndef itkFiberDirectionsImageFilter_h
#define itkFiberDirectionsImageFilter_h

#include "itkTensorKernelsBatchedImageFilter.h"
#include "itkTensorKernelsMaskedImageFilter.h"
#include "itkTensorKernelsSHImageFilter.h"
#include "itkVectorImage.h"
#include "tk_fibers.h"

namespace itk
{
namespace FiberDirectionsDetail
{
/** The filter's one plan of tk-fibers, and its base: SH input with a mask. */
using Plan = TensorKernelsPlanHolder<tk_fibers_options, tk_fibers_plan, tk_fibers_plan_create, tk_fibers_plan_destroy>;
template <typename TInputImage, typename TOutputImage>
using FilterBase =
    TensorKernelsSHImageFilter<TensorKernelsBatchedImageFilter<TensorKernelsMaskedImageFilter<TInputImage, TOutputImage>, Plan>>;
} // namespace FiberDirectionsDetail

/** \class FiberDirectionsImageFilter
 * \brief The local maxima (fiber directions) of each voxel's spherical-harmonic function.
 *
 * Input: a 3-D itk::VectorImage whose components are the even-degree SH coefficients of
 * order lmax (6, 15, 28, 45, ... components; MRtrix3's or DIPY's basis), and optionally a
 * mask (SetMaskImage; voxels where it is zero get NaN).  Output 0 (GetOutput): a VectorImage
 * of 3 * NumberOfPeaks components, each peak's unit direction times its amplitude as
 * MRtrix3's sh2peaks writes it, NaN where a voxel has fewer peaks.  Output 1
 * (GetAmplitudeOutput): the NumberOfPeaks amplitudes.  Peaks are sorted by amplitude.
 *
 * Frame: directions are reported in world RAS coordinates, as sh2peaks reports them. The
 * tournier basis (MRtrix3) is already defined in that frame; the descoteaux basis (DIPY)
 * is defined in voxel axes, so its peaks are rotated by the image's direction matrix
 * (converted from ITK's LPS to RAS).
 *
 * The CPU backends (CPU or OMP) run on ITK's threader over the requested region (streaming
 * works; a whole float image goes to the core's OpenMP threads in chunks); the CUDA backend
 * processes the requested region on the GPU in large batches.
 * \ingroup tk_group_tk_itk
 */
template <typename TInputImage = VectorImage<float, 3>, typename TOutputImage = VectorImage<float, 3>>
class ITK_TEMPLATE_EXPORT FiberDirectionsImageFilter : public FiberDirectionsDetail::FilterBase<TInputImage, TOutputImage>
{
public:
    itkTensorKernelsClassMacro(FiberDirectionsImageFilter, FiberDirectionsDetail::FilterBase<TInputImage, TOutputImage>);
    itkNewMacro(Self);

    using MaskImageType = typename Superclass::MaskImageType;
    using OutputImageRegionType = typename Superclass::OutputImageRegionType;
    using BasisType = typename Superclass::BasisType;

    itkSetClampMacro(NumberOfPeaks, unsigned int, 1, 64);
    itkGetConstMacro(NumberOfPeaks, unsigned int);
    /** Keep peaks whose amplitude is greater than this (sh2peaks -threshold; default 0). */
    itkSetMacro(Threshold, double);
    itkGetConstMacro(Threshold, double);
    /** Keep peaks at least this fraction of the voxel's largest (0..1; default 0). */
    itkSetClampMacro(RelativeThreshold, double, 0.0, 1.0);
    itkGetConstMacro(RelativeThreshold, double);
    /** Drop a peak within this angle (degrees) of a larger one (default 0: off). */
    itkSetClampMacro(MinimumSeparationAngle, double, 0.0, 90.0);
    itkGetConstMacro(MinimumSeparationAngle, double);
    TOutputImage *GetAmplitudeOutput() { return dynamic_cast<TOutputImage *>(this->ProcessObject::GetOutput(1)); }

    /** Voxels skipped because their coefficients were not finite (after Update). */
    SizeValueType GetNumberOfInvalidVoxels() const { return this->GetNumberOfSkippedPixels(); }

protected:
    FiberDirectionsImageFilter();
    ~FiberDirectionsImageFilter() override = default;

    void GenerateOutputInformation() override;
    void PrintSelf(std::ostream &os, Indent indent) const override;
    tk_fibers_options CoreOptions(tk_backend backend) const override;
    /** Peaks of one region, written to both outputs; returns the invalid-voxel count. */
    SizeValueType ProcessRegion(const OutputImageRegionType &region) override;
    /** Whole buffers go to the core on the CPU too, in chunks, each threaded by the core
     * (its OpenMP schedule hands out small batches as threads free up: a voxel's cost
     * varies a hundredfold between background, one fiber and three). */
    bool TakesWholeRequestOnCPU() const override { return TakesWholeBuffers(); }
    /** Whole buffers through ProcessBuffers, on CUDA or the CPU; else the region on CUDA. */
    SizeValueType ProcessWholeRequest(tk_backend backend) override;

private:
    /** Whether the whole request is the images' buffers, in float, as the core takes them
     * (ProcessBuffers applies). */
    bool TakesWholeBuffers() const;
    /** Peaks of the whole buffers in chunks, straight from the input's buffer into the
     * outputs' (the core threads each chunk itself); returns the invalid-voxel count. */
    SizeValueType ProcessBuffers(tk_backend backend);
    /** The filter's one call of the core, on its plan: the peaks of \p voxels voxels
     * (\p inside: their mask or null) as the core writes them; returns the invalid-voxel count.
     * The threader's regions call it at once: a cpu plan only reads its tables there. */
    size_t FindPeaks(size_t voxels, const float *sh, const uint8_t *inside, float *dirs, float *amps) const;
    /** Writes the core's unit directions and amplitudes of n voxels as the outputs hold them:
     * each direction scaled by its amplitude, in RAS for the DIPY basis. */
    void ScaleAndOrient(float *dirs, const float *amps, size_t n) const;

    unsigned int m_NumberOfPeaks{3};
    double m_Threshold{0.0};
    double m_RelativeThreshold{0.0};
    double m_MinimumSeparationAngle{0.0};
};
} // namespace itk

#ifndef ITK_MANUAL_INSTANTIATION
#include "itkFiberDirectionsImageFilter.hxx"
#endif
#endif
