#ifndef itkFiberDirectionsImageFilter_hxx
#define itkFiberDirectionsImageFilter_hxx

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "itkFiberDirectionsImageFilter.h"
#include "itkImageRegionConstIterator.h"
#include "itkImageRegionIterator.h"
#include "itkMacro.h"

namespace itk
{
template <typename TInputImage, typename TOutputImage>
FiberDirectionsImageFilter<TInputImage, TOutputImage>::FiberDirectionsImageFilter()
    : Superclass("fiber directions failed")
{
    this->SetNumberOfRequiredOutputs(2);
    this->SetNthOutput(0, this->MakeOutput(0));
    this->SetNthOutput(1, this->MakeOutput(1));
}

template <typename TInputImage, typename TOutputImage>
void FiberDirectionsImageFilter<TInputImage, TOutputImage>::GenerateOutputInformation()
{
    Superclass::GenerateOutputInformation(); ///< the SH order, or an exception
    this->GetOutput(0)->SetNumberOfComponentsPerPixel(3 * m_NumberOfPeaks);
    this->GetAmplitudeOutput()->SetNumberOfComponentsPerPixel(m_NumberOfPeaks);
}

template <typename TInputImage, typename TOutputImage>
bool FiberDirectionsImageFilter<TInputImage, TOutputImage>::TakesWholeBuffers() const
{
    if (!std::is_same<typename TInputImage::InternalPixelType, float>::value ||
        !std::is_same<typename TOutputImage::InternalPixelType, float>::value)
        return false;
    const TInputImage *input = this->GetInput();
    const auto whole = input->GetLargestPossibleRegion();
    const MaskImageType *mask = this->GetMaskImage();
    return input->GetBufferedRegion() == whole && this->GetOutput()->GetRequestedRegion() == whole &&
           (!mask || mask->GetBufferedRegion() == whole);
}

template <typename TInputImage, typename TOutputImage>
SizeValueType FiberDirectionsImageFilter<TInputImage, TOutputImage>::ProcessWholeRequest(tk_backend backend)
{
    return TakesWholeBuffers() ? ProcessBuffers(backend) : Superclass::ProcessWholeRequest(backend);
}

template <typename TInputImage, typename TOutputImage>
tk_fibers_options FiberDirectionsImageFilter<TInputImage, TOutputImage>::CoreOptions(tk_backend backend) const
{
    tk_fibers_options o = FiberDirectionsDetail::Plan::ZeroedOptions();
    tk_fibers_options_init(&o, this->GetLmax());
    o.basis = this->CoreBasis();
    o.legacy = this->GetLegacy();
    o.num_peaks = static_cast<int>(m_NumberOfPeaks);
    o.threshold = m_Threshold;
    o.relative_threshold = m_RelativeThreshold;
    o.min_separation_deg = m_MinimumSeparationAngle;
    o.backend = backend;
    this->ApplyCudaDevices(o);
    return o;
}

template <typename TInputImage, typename TOutputImage>
size_t FiberDirectionsImageFilter<TInputImage, TOutputImage>::FindPeaks(size_t voxels, const float *sh,
                                                                        const uint8_t *inside, float *dirs,
                                                                        float *amps) const
{
    size_t bad = 0;
    this->ThrowUnlessPlanOK(tk_fibers_plan_execute(this->GetPlan(), voxels, sh, inside, dirs, amps, &bad, nullptr));
    return bad;
}

template <typename TInputImage, typename TOutputImage>
void FiberDirectionsImageFilter<TInputImage, TOutputImage>::ScaleAndOrient(float *dirs, const float *amps, size_t n) const
{
    const size_t np = m_NumberOfPeaks;
    for (size_t q = 0; q < n * np; ++q) {
        float *d = dirs + 3 * q;
        double w[3];
        this->ToWorldRas(d, w);
        for (int r = 0; r < 3; ++r) d[r] = static_cast<float>(w[r] * amps[q]);
    }
}

template <typename TInputImage, typename TOutputImage>
SizeValueType FiberDirectionsImageFilter<TInputImage, TOutputImage>::ProcessBuffers(tk_backend backend)
{
    const TInputImage *input = this->GetInput();
    const MaskImageType *mask = this->GetMaskImage();
    const size_t voxels = input->GetLargestPossibleRegion().GetNumberOfPixels(), k = tk_sh_num_coeffs(this->GetLmax()),
                 np = m_NumberOfPeaks;
    const float *sh = reinterpret_cast<const float *>(input->GetBufferPointer());
    const unsigned char *inside = mask ? mask->GetBufferPointer() : nullptr;
    float *dirs = reinterpret_cast<float *>(this->GetOutput(0)->GetBufferPointer());
    float *amps = reinterpret_cast<float *>(this->GetAmplitudeOutput()->GetBufferPointer());
    tk_fibers_options o = CoreOptions(backend);
    /// as many threads as ITK's threader would run at once: its limit, and the work units
    o.num_threads = static_cast<int>(
        std::min<ThreadIdType>(this->GetMultiThreader()->GetMaximumNumberOfThreads(), this->GetNumberOfWorkUnits()));
    /// CUDA in one call (it chunks and overlaps transfers itself); the CPU in about 64 chunks
    const size_t chunk = backend == TK_BACKEND_CUDA ? voxels : std::max<size_t>(4096, (voxels + 63) / 64);
    this->PreparePlan(o, chunk);
    SizeValueType bad = 0;
    for (size_t first = 0; first < voxels; first += chunk) {
        const size_t n = std::min(chunk, voxels - first);
        const size_t chunk_bad =
            FindPeaks(n, sh + first * k, inside ? inside + first : nullptr, dirs + first * np * 3, amps + first * np);
        ScaleAndOrient(dirs + first * np * 3, amps + first * np, n);
        bad += chunk_bad;
        this->UpdateProgressOf(first + n, voxels);
    }
    return bad;
}

template <typename TInputImage, typename TOutputImage>
SizeValueType FiberDirectionsImageFilter<TInputImage, TOutputImage>::ProcessRegion(const OutputImageRegionType &region)
{
    const TInputImage *input = this->GetInput();
    const size_t voxels = region.GetNumberOfPixels(), k = tk_sh_num_coeffs(this->GetLmax()), np = m_NumberOfPeaks;
    if (voxels == 0) return 0;
    std::vector<float> sh(voxels * k), dirs(voxels * np * 3), amps(voxels * np);
    size_t v = 0;
    for (ImageRegionConstIterator<TInputImage> it(input, region); !it.IsAtEnd(); ++it, ++v) {
        const auto pixel = it.Get();
        for (size_t c = 0; c < k; ++c) sh[v * k + c] = static_cast<float>(pixel[c]);
    }
    const std::vector<uint8_t> inside = this->MaskOver(region);
    const size_t bad = FindPeaks(voxels, sh.data(), inside.empty() ? nullptr : inside.data(), dirs.data(), amps.data());
    ScaleAndOrient(dirs.data(), amps.data(), voxels);
    TOutputImage *out_dirs = this->GetOutput(0), *out_amps = this->GetAmplitudeOutput();
    ImageRegionIterator<TOutputImage> di(out_dirs, region), ai(out_amps, region);
    typename TOutputImage::PixelType dpix(3 * np), apix(np);
    for (v = 0; !di.IsAtEnd(); ++di, ++ai, ++v) {
        for (size_t c = 0; c < 3 * np; ++c) dpix[c] = static_cast<typename TOutputImage::InternalPixelType>(dirs[v * np * 3 + c]);
        for (size_t p = 0; p < np; ++p) apix[p] = amps[v * np + p];
        di.Set(dpix);
        ai.Set(apix);
    }
    return bad;
}

template <typename TInputImage, typename TOutputImage>
void FiberDirectionsImageFilter<TInputImage, TOutputImage>::PrintSelf(std::ostream &os, Indent indent) const
{
    Superclass::PrintSelf(os, indent);
    os << indent << "NumberOfPeaks: " << m_NumberOfPeaks << "\n"
       << indent << "Threshold: " << m_Threshold << "\n"
       << indent << "RelativeThreshold: " << m_RelativeThreshold << "\n"
       << indent << "MinimumSeparationAngle: " << m_MinimumSeparationAngle << "\n";
}
} // namespace itk
#endif
