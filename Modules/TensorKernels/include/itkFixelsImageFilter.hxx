#ifndef itkFixelsImageFilter_hxx
#define itkFixelsImageFilter_hxx

#include <cmath>
#include <vector>

#include "itkFixelsImageFilter.h"
#include "itkImageRegionConstIterator.h"
#include "itkImageRegionIterator.h"
#include "itkMacro.h"

namespace itk
{
template <typename TInputImage, typename TOutputImage>
FixelsImageFilter<TInputImage, TOutputImage>::FixelsImageFilter()
    : Superclass("fixels failed")
{
    this->SetNumberOfRequiredOutputs(4);
    for (unsigned i = 0; i < 4; ++i) this->SetNthOutput(i, this->MakeOutput(i));
}

template <typename TInputImage, typename TOutputImage>
void FixelsImageFilter<TInputImage, TOutputImage>::GenerateOutputInformation()
{
    Superclass::GenerateOutputInformation(); ///< the SH order, or an exception
    if (m_NumberOfDirections != TK_FIXELS_DIRECTIONS && m_NumberOfDirections != TK_FIXELS_DIRECTIONS_DENSE)
        itkExceptionMacro(<< "NumberOfDirections is " << m_NumberOfDirections << ": give " << TK_FIXELS_DIRECTIONS
                          << " (fod2fixel's) or " << TK_FIXELS_DIRECTIONS_DENSE);
    const unsigned int slots = m_MaximumNumberOfFixels;
    this->GetOutput(0)->SetNumberOfComponentsPerPixel(3 * slots);
    this->GetAFDOutput()->SetNumberOfComponentsPerPixel(slots);
    this->GetPeakAmplitudeOutput()->SetNumberOfComponentsPerPixel(slots);
    this->GetFixelCountOutput()->SetNumberOfComponentsPerPixel(1);
}

template <typename TInputImage, typename TOutputImage>
tk_fixels_options FixelsImageFilter<TInputImage, TOutputImage>::CoreOptions(tk_backend backend) const
{
    tk_fixels_options o = FixelsDetail::Plan::ZeroedOptions();
    tk_fixels_options_init(&o, this->GetLmax());
    o.basis = this->CoreBasis();
    o.legacy = this->GetLegacy();
    o.integral_threshold = m_IntegralThreshold;
    o.peak_value_threshold = m_PeakValueThreshold;
    o.lobe_merge_ratio = m_LobeMergeRatio;
    o.max_fixels = static_cast<int>(m_MaximumNumberOfFixels);
    o.directions = static_cast<int>(m_NumberOfDirections);
    o.backend = backend;
    return o;
}

template <typename TInputImage, typename TOutputImage>
SizeValueType FixelsImageFilter<TInputImage, TOutputImage>::ProcessRegion(const OutputImageRegionType &region)
{
    const size_t voxels = region.GetNumberOfPixels(), k = tk_sh_num_coeffs(this->GetLmax()), S = m_MaximumNumberOfFixels;
    if (voxels == 0) return 0;
    std::vector<float> sh(voxels * k), afd(voxels * S), amp(voxels * S), dirs(voxels * S * 3);
    std::vector<uint8_t> count(voxels);
    size_t v = 0;
    for (ImageRegionConstIterator<TInputImage> it(this->GetInput(), region); !it.IsAtEnd(); ++it, ++v) {
        const auto pixel = it.Get();
        for (size_t c = 0; c < k; ++c) sh[v * k + c] = static_cast<float>(pixel[c]);
    }
    const std::vector<uint8_t> inside = this->MaskOver(region);
    tk_fixels_output out{count.data(), afd.data(), amp.data(), m_UsePeakDirection ? nullptr : dirs.data(),
                         m_UsePeakDirection ? dirs.data() : nullptr, nullptr, 0, 0};
    this->ThrowUnlessPlanOK(
        tk_fixels_plan_execute(this->GetPlan(), voxels, sh.data(), inside.empty() ? nullptr : inside.data(), &out, nullptr));
    using OutPixel = typename TOutputImage::InternalPixelType;
    ImageRegionIterator<TOutputImage> di(this->GetOutput(0), region), ai(this->GetAFDOutput(), region),
        pi(this->GetPeakAmplitudeOutput(), region), ci(this->GetFixelCountOutput(), region);
    typename TOutputImage::PixelType dpix(3 * S), apix(S), ppix(S), cpix(1);
    for (v = 0; !di.IsAtEnd(); ++di, ++ai, ++pi, ++ci, ++v) {
        for (size_t f = 0; f < S; ++f) {
            double ras[3];
            this->ToWorldRas(&dirs[(v * S + f) * 3], ras);
            for (int r = 0; r < 3; ++r) dpix[3 * f + r] = static_cast<OutPixel>(ras[r]);
            apix[f] = static_cast<OutPixel>(afd[v * S + f]);
            ppix[f] = static_cast<OutPixel>(amp[v * S + f]);
        }
        cpix[0] = static_cast<OutPixel>(count[v]);
        di.Set(dpix), ai.Set(apix), pi.Set(ppix), ci.Set(cpix);
    }
    return out.bad_voxels;
}

template <typename TInputImage, typename TOutputImage>
void FixelsImageFilter<TInputImage, TOutputImage>::PrintSelf(std::ostream &os, Indent indent) const
{
    Superclass::PrintSelf(os, indent);
    os << indent << "MaximumNumberOfFixels: " << m_MaximumNumberOfFixels << "\n"
       << indent << "IntegralThreshold: " << m_IntegralThreshold << "\n"
       << indent << "PeakValueThreshold: " << m_PeakValueThreshold << "\n"
       << indent << "LobeMergeRatio: " << m_LobeMergeRatio << "\n"
       << indent << "UsePeakDirection: " << m_UsePeakDirection << "\n"
       << indent << "NumberOfDirections: " << m_NumberOfDirections << "\n";
}
} // namespace itk
#endif
