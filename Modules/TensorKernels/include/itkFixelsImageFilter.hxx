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
void FixelsImageFilter<TInputImage, TOutputImage>::VerifyInputInformation() const
{
    /// The mask is compared by region and geometry in BeforeThreadedGenerateData; the SH
    /// image alone decides the output grid.
    if (this->GetMaskImage()) Superclass::VerifyInputInformation();
}

template <typename TInputImage, typename TOutputImage>
void FixelsImageFilter<TInputImage, TOutputImage>::GenerateOutputInformation()
{
    Superclass::GenerateOutputInformation();
    const unsigned int components = this->GetInput()->GetNumberOfComponentsPerPixel();
    m_Lmax = tk_sh_lmax_for_count(components);
    if (m_Lmax < 2 || m_Lmax > TK_SH_MAX_LMAX)
        itkExceptionMacro(<< "the input has " << components
                          << " components per voxel, which is no even-degree SH size with lmax 2.." << TK_SH_MAX_LMAX
                          << " (6, 15, 28, 45, 66, 91, 120, 153)");
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
void FixelsImageFilter<TInputImage, TOutputImage>::BeforeThreadedGenerateData()
{
    /// ITK directions are LPS; RAS = diag(-1, -1, 1) * LPS, applied to the voxel-axis
    /// directions of the DIPY basis (as FiberDirectionsImageFilter)
    const auto &dir = this->GetInput()->GetDirection();
    for (unsigned r = 0; r < 3; ++r)
        for (unsigned c = 0; c < 3; ++c) m_VoxelToRas[r][c] = (r < 2 ? -1.0 : 1.0) * dir[r][c];
    if (const MaskImageType *mask = this->GetMaskImage()) {
        if (!mask->GetBufferedRegion().IsInside(this->GetOutput()->GetRequestedRegion()))
            itkExceptionMacro(<< "the mask does not cover the requested region of the SH image");
    }
    Superclass::BeforeThreadedGenerateData();
}

template <typename TInputImage, typename TOutputImage>
tk_fixels_options FixelsImageFilter<TInputImage, TOutputImage>::CoreOptions(tk_backend backend) const
{
    tk_fixels_options o = FixelsDetail::Plan::ZeroedOptions();
    tk_fixels_options_init(&o, m_Lmax);
    o.basis = static_cast<tk_sh_basis>(m_Basis);
    o.legacy = m_Legacy;
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
    const size_t voxels = region.GetNumberOfPixels(), k = tk_sh_num_coeffs(m_Lmax), S = m_MaximumNumberOfFixels;
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
    const bool rotate = m_Basis == BasisType::Descoteaux;
    using OutPixel = typename TOutputImage::InternalPixelType;
    ImageRegionIterator<TOutputImage> di(this->GetOutput(0), region), ai(this->GetAFDOutput(), region),
        pi(this->GetPeakAmplitudeOutput(), region), ci(this->GetFixelCountOutput(), region);
    typename TOutputImage::PixelType dpix(3 * S), apix(S), ppix(S), cpix(1);
    for (v = 0; !di.IsAtEnd(); ++di, ++ai, ++pi, ++ci, ++v) {
        for (size_t f = 0; f < S; ++f) {
            const float *d = &dirs[(v * S + f) * 3];
            for (int r = 0; r < 3; ++r)
                dpix[3 * f + r] = static_cast<OutPixel>(
                    rotate ? m_VoxelToRas[r][0] * d[0] + m_VoxelToRas[r][1] * d[1] + m_VoxelToRas[r][2] * d[2] : d[r]);
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
       << indent << "NumberOfDirections: " << m_NumberOfDirections << "\n"
       << indent << "Basis: " << (m_Basis == BasisType::Tournier ? "tournier" : "descoteaux") << (m_Legacy ? " (legacy)" : "")
       << "\n";
}
} // namespace itk
#endif
