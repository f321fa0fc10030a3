/** itk::NonnegativeTensorFactorizationImageFilter: a non-negative 3-D or 4-D image in,
 * its low-rank reconstruction out, the factors kept on the filter. \file
 * \ingroup tk_group_tk_itk */
#ifndef itkNonnegativeTensorFactorizationImageFilter_h
#define itkNonnegativeTensorFactorizationImageFilter_h

#include <string>
#include <vector>

#include "itkTensorKernelsMaskedImageFilter.h"
#include "tk_pltf.h"

namespace itk
{
/** \class NonnegativeTensorFactorizationImageFilter
 * \brief Fits a non-negative low-rank model (PARAFAC by default, Tucker or any PLTF
 * index expression) to an image and outputs the reconstruction.
 *
 * The image is the observed tensor, its axes in C (NumPy) order: for a 4-D image
 * (x, y, z, t) the model's first observed index is t and its last x, as
 * GetArrayFromImage presents it.  The default model is PARAFAC of rank Rank over every
 * axis ("ijk=ia,ja,ka" in 3-D, "ijkl=ia,ja,ka,la" in 4-D); SetModel takes any
 * expression whose observed part has ImageDimension indices (e.g. "tzyx=ta,za,ya,xa",
 * or "tzyx=tp,zyxp" for a spatial map times a time course), with LatentSizes "a=8,..."
 * for its latent indices.
 *
 * Updates: multiplicative, for the KL (default; Poisson counts such as dynamic PET),
 * Euclidean or Itakura-Saito divergence, which never increase the divergence.  With
 * a mask (SetMaskImage, nonzero = observed) the masked-out voxels are never read and the
 * reconstruction fills them in (completion).  Observed voxels must be non-negative (KL)
 * or positive (IS).  The whole image is processed at once (no streaming).
 *
 * After Update: GetFactor(n), GetFactorShape(n) and GetFactorName(n) (its indices, e.g.
 * "ia") give factor n in C order; GetDivergenceHistory() the divergence per iteration.
 * Backend: CPU one thread, OMP (alias OpenMP) the core's OpenMP threads, CUDA the GPU;
 * Auto (default) CUDA where a GPU is usable, else OpenMP.
 * \ingroup tk_group_tk_itk
 */
template <typename TInputImage = Image<float, 4>, typename TOutputImage = TInputImage>
class ITK_TEMPLATE_EXPORT NonnegativeTensorFactorizationImageFilter
    : public TensorKernelsWholeImageFilter<TInputImage, TOutputImage>
{
public:
    itkTensorKernelsClassMacro(NonnegativeTensorFactorizationImageFilter, TensorKernelsWholeImageFilter<TInputImage, TOutputImage>);
    itkNewMacro(Self);

    static constexpr unsigned int ImageDimension = TInputImage::ImageDimension;
    static_assert(ImageDimension == 3 || ImageDimension == 4, "3-D or 4-D images");
    using RegionType = typename Superclass::RegionType;

    enum class DivergenceType { KL = TK_PLTF_KL, Euclidean = TK_PLTF_EUCLIDEAN, ItakuraSaito = TK_PLTF_IS };
    using BackendType = typename Superclass::BackendType;

    /** Rank of the default PARAFAC model (ignored when a Model is set). */
    itkSetClampMacro(Rank, unsigned int, 1, 65536);
    itkGetConstMacro(Rank, unsigned int);
    /** A PLTF expression ("" = PARAFAC of rank Rank). */
    itkSetStringMacro(Model);
    itkGetStringMacro(Model);
    /** Sizes of the model's latent indices, "a=8,b=3". */
    itkSetStringMacro(LatentSizes);
    itkGetStringMacro(LatentSizes);
    itkSetMacro(Divergence, DivergenceType);
    itkGetConstMacro(Divergence, DivergenceType);
    itkSetClampMacro(NumberOfIterations, unsigned int, 0, 100000000);
    itkGetConstMacro(NumberOfIterations, unsigned int);
    itkSetMacro(Seed, uint64_t);
    itkGetConstMacro(Seed, uint64_t);
    /** The fitted model (valid after Update). */
    unsigned int GetNumberOfFactors() const { return static_cast<unsigned int>(m_Factors.size()); }
    const std::vector<double> &GetFactor(unsigned int n) const { return m_Factors.at(n); }
    const std::vector<size_t> &GetFactorShape(unsigned int n) const { return m_FactorShapes.at(n); }
    const std::string &GetFactorName(unsigned int n) const { return m_FactorNames.at(n); }
    const std::vector<double> &GetDivergenceHistory() const { return m_DivergenceHistory; }
    /** The model actually fitted, e.g. "ijkl=ia,ja,ka,la". */
    const std::string &GetFittedModel() const { return m_FittedModel; }

protected:
    NonnegativeTensorFactorizationImageFilter() = default;
    ~NonnegativeTensorFactorizationImageFilter() override = default;

    /** The model fitted to the observed voxels, in C order (the image's last axis first). */
    std::vector<double> Reconstruct(const RegionType &region, const std::vector<double> &values,
                                    const uint8_t *observed) override;
    void PrintSelf(std::ostream &os, Indent indent) const override;

private:
    static int OnIteration(void *user, int iteration, double divergence);
    /** The filter's one call of the core: factorizes \p x (\p observed: its mask or null)
     * with \p model and the filter's settings into \p result. */
    void FactorizeCore(tk_pltf_model &model, const double *x, const uint8_t *observed, tk_pltf_result &result);

    unsigned int m_Rank{4};
    std::string m_Model;
    std::string m_LatentSizes;
    DivergenceType m_Divergence{DivergenceType::KL};
    unsigned int m_NumberOfIterations{200};
    uint64_t m_Seed{0};

    std::vector<std::vector<double>> m_Factors;
    std::vector<std::vector<size_t>> m_FactorShapes;
    std::vector<std::string> m_FactorNames;
    std::vector<double> m_DivergenceHistory;
    std::string m_FittedModel;
};
} // namespace itk

#ifndef ITK_MANUAL_INSTANTIATION
#include "itkNonnegativeTensorFactorizationImageFilter.hxx"
#endif
#endif
