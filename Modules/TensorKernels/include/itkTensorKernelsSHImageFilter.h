/** itk::TensorKernelsSHImageFilter: what the batched filters on spherical-harmonic images
 * share (FiberDirections, Fixels). \file
 * \ingroup tk_group_tk_itk */
#ifndef itkTensorKernelsSHImageFilter_h
#define itkTensorKernelsSHImageFilter_h

#include <ostream>

#include "itkTensorKernelsMacro.h"
#include "tk_fibers.h"

namespace itk
{
/** \class TensorKernelsSHImageFilter
 * \brief A filter of a 3-D itk::VectorImage of even-degree SH coefficients (6, 15, 28, 45,
 * ... components; MRtrix3's basis or DIPY's), with an optional mask on its grid: the basis
 * settings, the order lmax read from the input's component count (an exception for another
 * count), and the directions of the core (in the SH's frame) turned to world RAS.
 *
 * Frame: the tournier basis (MRtrix3) is defined in world RAS already; the descoteaux basis
 * (DIPY) in voxel axes, so its directions are rotated by the image's direction matrix
 * (converted from ITK's LPS to RAS).  \p TBase is the batched base the filter extends
 * (TensorKernelsBatchedImageFilter over a TensorKernelsMaskedImageFilter).
 * \ingroup tk_group_tk_itk
 */
template <typename TBase>
class ITK_TEMPLATE_EXPORT TensorKernelsSHImageFilter : public TBase
{
public:
    itkTensorKernelsClassMacro(TensorKernelsSHImageFilter, TBase);

    using MaskImageType = typename Superclass::MaskImageType;

    enum class BasisType { Tournier = TK_SH_TOURNIER, Descoteaux = TK_SH_DESCOTEAUX };
    /// Printed by the Set macros' debug output (builds without NDEBUG).
    friend std::ostream &operator<<(std::ostream &os, BasisType b)
    {
        return os << (b == BasisType::Tournier ? "Tournier" : "Descoteaux");
    }

    itkSetMacro(Basis, BasisType);
    itkGetConstMacro(Basis, BasisType);
    /** DIPY's legacy descoteaux07 or MRtrix 0.2's tournier07 (no sqrt 2). */
    itkSetMacro(Legacy, bool);
    itkGetConstMacro(Legacy, bool);
    itkBooleanMacro(Legacy);

protected:
    explicit TensorKernelsSHImageFilter(const char *coreFailure)
        : Superclass(coreFailure)
    {
    }
    ~TensorKernelsSHImageFilter() override = default;

    /** The input's lmax (after GenerateOutputInformation). */
    int GetLmax() const { return m_Lmax; }
    /** The core's basis and legacy flag of the settings. */
    tk_sh_basis CoreBasis() const { return static_cast<tk_sh_basis>(m_Basis); }

    /** A direction of the core (SH frame) in world RAS (after BeforeThreadedGenerateData). */
    void ToWorldRas(const float *d, double *ras) const
    {
        for (int r = 0; r < 3; ++r)
            ras[r] = m_Basis == BasisType::Descoteaux
                         ? m_VoxelToRas[r][0] * d[0] + m_VoxelToRas[r][1] * d[1] + m_VoxelToRas[r][2] * d[2]
                         : d[r];
    }

    /// The mask is compared by region and geometry in BeforeThreadedGenerateData; the SH
    /// image alone decides the output grid.
    void VerifyInputInformation() const override
    {
        if (this->GetMaskImage()) Superclass::VerifyInputInformation();
    }

    void GenerateOutputInformation() override
    {
        Superclass::GenerateOutputInformation();
        const unsigned int components = this->GetInput()->GetNumberOfComponentsPerPixel();
        m_Lmax = tk_sh_lmax_for_count(components);
        if (m_Lmax < 2 || m_Lmax > TK_SH_MAX_LMAX)
            itkExceptionMacro(<< "the input has " << components
                              << " components per voxel, which is no even-degree SH size with lmax 2.."
                              << TK_SH_MAX_LMAX << " (6, 15, 28, 45, 66, 91, 120, 153)");
    }

    void BeforeThreadedGenerateData() override
    {
        /// ITK directions are LPS; RAS = diag(-1, -1, 1) * LPS, applied to the voxel-axis
        /// directions of the DIPY basis.
        const auto &dir = this->GetInput()->GetDirection();
        for (unsigned r = 0; r < 3; ++r)
            for (unsigned c = 0; c < 3; ++c) m_VoxelToRas[r][c] = (r < 2 ? -1.0 : 1.0) * dir[r][c];
        if (const MaskImageType *mask = this->GetMaskImage()) {
            if (!mask->GetBufferedRegion().IsInside(this->GetOutput()->GetRequestedRegion()))
                itkExceptionMacro(<< "the mask does not cover the requested region of the SH image");
        }
        Superclass::BeforeThreadedGenerateData();
    }

    void PrintSelf(std::ostream &os, Indent indent) const override
    {
        Superclass::PrintSelf(os, indent);
        os << indent << "Basis: " << (m_Basis == BasisType::Tournier ? "tournier" : "descoteaux")
           << (m_Legacy ? " (legacy)" : "") << "\n";
    }

private:
    BasisType m_Basis{BasisType::Tournier};
    bool m_Legacy{false};
    int m_Lmax{0};
    double m_VoxelToRas[3][3]{};
};
} // namespace itk
#endif
