#ifndef itkFiberDirectionsImageFilter_hxx
#define itkFiberDirectionsImageFilter_hxx

#include <cmath>
#include <vector>

#include "itkFiberDirectionsImageFilter.h"
#include "itkImageRegionConstIterator.h"
#include "itkImageRegionIterator.h"
#include "itkMacro.h"

namespace itk
{
template <typename TInputImage, typename TOutputImage>
FiberDirectionsImageFilter<TInputImage, TOutputImage>::FiberDirectionsImageFilter()
{
    this->SetNumberOfRequiredInputs(1);
    this->SetNumberOfRequiredOutputs(2);
    this->SetNthOutput(0, this->MakeOutput(0));
    this->SetNthOutput(1, this->MakeOutput(1));
    this->DynamicMultiThreadingOn();
}

template <typename TInputImage, typename TOutputImage>
void FiberDirectionsImageFilter<TInputImage, TOutputImage>::VerifyInputInformation() const
{
    // The mask is compared by region and geometry in BeforeThreadedGenerateData; the SH
    // image alone decides the output grid.
    if (this->GetMaskImage()) Superclass::VerifyInputInformation();
}

template <typename TInputImage, typename TOutputImage>
void FiberDirectionsImageFilter<TInputImage, TOutputImage>::GenerateOutputInformation()
{
    Superclass::GenerateOutputInformation();
    const TInputImage *input = this->GetInput();
    const unsigned int components = input->GetNumberOfComponentsPerPixel();
    m_Lmax = tk_sh_lmax_for_count(components);
    if (m_Lmax < 2 || m_Lmax > TK_SH_MAX_LMAX)
        itkExceptionMacro(<< "the input has " << components
                          << " components per voxel, which is no even-degree SH size with lmax 2.."
                          << TK_SH_MAX_LMAX << " (6, 15, 28, 45, 66, 91, 120, 153)");
    this->GetOutput(0)->SetNumberOfComponentsPerPixel(3 * m_NumberOfPeaks);
    this->GetAmplitudeOutput()->SetNumberOfComponentsPerPixel(m_NumberOfPeaks);
}

template <typename TInputImage, typename TOutputImage>
void FiberDirectionsImageFilter<TInputImage, TOutputImage>::BeforeThreadedGenerateData()
{
    const TInputImage *input = this->GetInput();
    // ITK directions are LPS; RAS = diag(-1, -1, 1) * LPS, applied to the voxel-axis
    // directions of the DIPY basis.
    const auto &dir = input->GetDirection();
    for (unsigned r = 0; r < 3; ++r)
        for (unsigned c = 0; c < 3; ++c) m_VoxelToRas[r][c] = (r < 2 ? -1.0 : 1.0) * dir[r][c];
    if (const MaskImageType *mask = this->GetMaskImage()) {
        if (!mask->GetBufferedRegion().IsInside(this->GetOutput()->GetRequestedRegion()))
            itkExceptionMacro(<< "the mask does not cover the requested region of the SH image");
    }
    m_InvalidVoxels = 0;
}

template <typename TInputImage, typename TOutputImage>
bool FiberDirectionsImageFilter<TInputImage, TOutputImage>::UsesCUDA() const
{
    if (m_Backend != BackendType::Auto) return m_Backend == BackendType::CUDA;
    char reason[512] = "";
    const bool usable = tk_cuda_device_usable(0, reason, sizeof reason) != 0;
    itkDebugMacro(<< "Backend Auto: " << (usable ? "CUDA" : "CPU, no usable CUDA GPU: ") << (usable ? "" : reason));
    return usable;
}

template <typename TInputImage, typename TOutputImage>
void FiberDirectionsImageFilter<TInputImage, TOutputImage>::GenerateData()
{
    if (!UsesCUDA()) {
        Superclass::GenerateData(); // ITK's threader over the requested region
        return;
    }
    // CUDA: the whole requested region at once; the core batches it on the GPU.
    this->AllocateOutputs();
    this->BeforeThreadedGenerateData();
    m_InvalidVoxels += ProcessRegion(this->GetOutput()->GetRequestedRegion(), TK_FIBERS_CUDA);
    this->AfterThreadedGenerateData();
}

template <typename TInputImage, typename TOutputImage>
void FiberDirectionsImageFilter<TInputImage, TOutputImage>::DynamicThreadedGenerateData(const OutputRegionType &region)
{
    m_InvalidVoxels += ProcessRegion(region, TK_FIBERS_CPU);
}

template <typename TInputImage, typename TOutputImage>
SizeValueType FiberDirectionsImageFilter<TInputImage, TOutputImage>::ProcessRegion(const OutputRegionType &region,
                                                                                  tk_fibers_backend backend)
{
    const TInputImage *input = this->GetInput();
    const MaskImageType *mask = this->GetMaskImage();
    const size_t voxels = region.GetNumberOfPixels(), k = tk_sh_num_coeffs(m_Lmax), np = m_NumberOfPeaks;
    if (voxels == 0) return 0;
    std::vector<float> sh(voxels * k), dirs(voxels * np * 3), amps(voxels * np);
    std::vector<uint8_t> inside(mask ? voxels : 0);
    size_t v = 0;
    for (ImageRegionConstIterator<TInputImage> it(input, region); !it.IsAtEnd(); ++it, ++v) {
        const auto pixel = it.Get();
        for (size_t c = 0; c < k; ++c) sh[v * k + c] = static_cast<float>(pixel[c]);
    }
    if (mask) {
        v = 0;
        for (ImageRegionConstIterator<MaskImageType> it(mask, region); !it.IsAtEnd(); ++it, ++v) inside[v] = it.Get() != 0;
    }
    tk_fibers_options o;
    tk_fibers_options_init(&o, m_Lmax);
    o.basis = static_cast<tk_sh_basis>(m_Basis);
    o.legacy = m_Legacy;
    o.num_peaks = static_cast<int>(np);
    o.threshold = m_Threshold;
    o.relative_threshold = m_RelativeThreshold;
    o.min_separation_deg = m_MinimumSeparationAngle;
    o.backend = backend;
    size_t bad = 0;
    if (tk_fibers_find(&o, voxels, sh.data(), mask ? inside.data() : nullptr, dirs.data(), amps.data(), &bad) != TK_OK)
        itkExceptionMacro(<< "fiber directions failed: " << tk_last_error());
    const bool rotate = m_Basis == BasisType::Descoteaux;
    TOutputImage *out_dirs = this->GetOutput(0), *out_amps = this->GetAmplitudeOutput();
    ImageRegionIterator<TOutputImage> di(out_dirs, region), ai(out_amps, region);
    typename TOutputImage::PixelType dpix(3 * np), apix(np);
    for (v = 0; !di.IsAtEnd(); ++di, ++ai, ++v) {
        for (size_t p = 0; p < np; ++p) {
            const float *d = &dirs[(v * np + p) * 3];
            const float a = amps[v * np + p];
            double w[3] = {d[0], d[1], d[2]};
            if (rotate)
                for (int r = 0; r < 3; ++r)
                    w[r] = m_VoxelToRas[r][0] * d[0] + m_VoxelToRas[r][1] * d[1] + m_VoxelToRas[r][2] * d[2];
            for (int r = 0; r < 3; ++r) dpix[3 * p + r] = static_cast<typename TOutputImage::InternalPixelType>(w[r] * a);
            apix[p] = a;
        }
        di.Set(dpix);
        ai.Set(apix);
    }
    return bad;
}

template <typename TInputImage, typename TOutputImage>
void FiberDirectionsImageFilter<TInputImage, TOutputImage>::AfterThreadedGenerateData()
{
    m_NumberOfInvalidVoxels = m_InvalidVoxels;
}

template <typename TInputImage, typename TOutputImage>
void FiberDirectionsImageFilter<TInputImage, TOutputImage>::PrintSelf(std::ostream &os, Indent indent) const
{
    Superclass::PrintSelf(os, indent);
    os << indent << "NumberOfPeaks: " << m_NumberOfPeaks << "\n"
       << indent << "Threshold: " << m_Threshold << "\n"
       << indent << "RelativeThreshold: " << m_RelativeThreshold << "\n"
       << indent << "MinimumSeparationAngle: " << m_MinimumSeparationAngle << "\n"
       << indent << "Basis: " << (m_Basis == BasisType::Tournier ? "tournier" : "descoteaux") << (m_Legacy ? " (legacy)" : "")
       << "\n"
       << indent << "Backend: " << m_Backend << "\n";
}
} // namespace itk
#endif
