#ifndef itkNonnegativeTensorFactorizationImageFilter_hxx
#define itkNonnegativeTensorFactorizationImageFilter_hxx

#include <vector>

#include "itkMacro.h"
#include "itkNonnegativeTensorFactorizationImageFilter.h"

namespace itk
{
template <typename TInputImage, typename TOutputImage>
int NonnegativeTensorFactorizationImageFilter<TInputImage, TOutputImage>::OnIteration(void *user, int iteration,
                                                                                       double divergence)
{
    auto *self = static_cast<Self *>(user);
    self->m_DivergenceHistory.push_back(divergence);
    if (self->m_NumberOfIterations) self->UpdateProgressOf(static_cast<size_t>(iteration), self->m_NumberOfIterations);
    return self->GetAbortGenerateData() ? 1 : 0;
}

template <typename TInputImage, typename TOutputImage>
std::vector<double> NonnegativeTensorFactorizationImageFilter<TInputImage, TOutputImage>::Reconstruct(
    const RegionType &region, const std::vector<double> &values, const uint8_t *observed)
{
    const auto size = region.GetSize();

    std::string text = m_Model, latent = m_LatentSizes;
    if (text.empty()) {
        text = ImageDimension == 3 ? "ijk=ia,ja,ka" : "ijkl=ia,ja,ka,la";
        latent = "a=" + std::to_string(m_Rank);
    }
    tk_pltf_model model;
    this->ThrowUnlessCoreOK(tk_pltf_parse(text.c_str(), &model), "");
    /// C order: the first observed index is the image's last axis.
    size_t shape[ImageDimension];
    for (unsigned int d = 0; d < ImageDimension; ++d) shape[d] = size[ImageDimension - 1 - d];
    if (tk_pltf_set_out_shape(&model, ImageDimension, shape) != TK_OK ||
        (!latent.empty() && tk_pltf_set_dims(&model, latent.c_str()) != TK_OK) || tk_pltf_check_dims(&model) != TK_OK)
        itkExceptionMacro(<< tk_last_error());

    std::vector<double> xhat(region.GetNumberOfPixels());
    m_Factors.assign(static_cast<size_t>(model.num_factors), {});
    m_FactorShapes.assign(static_cast<size_t>(model.num_factors), {});
    m_FactorNames.assign(static_cast<size_t>(model.num_factors), {});
    m_DivergenceHistory.clear();
    tk_pltf_result result{};
    for (int f = 0; f < model.num_factors; ++f) {
        m_Factors[f].resize(tk_pltf_factor_count(&model, f));
        result.factors[f] = m_Factors[f].data();
        char name[TK_PLTF_MAX_INDICES + 1];
        tk_pltf_factor_name(&model, f, name);
        m_FactorNames[f] = name;
        for (int d = 0; d < model.factor_ndim[f]; ++d) m_FactorShapes[f].push_back(model.dims[model.factor[f][d]]);
    }
    result.xhat = xhat.data();
    FactorizeCore(model, values.data(), observed, result);
    m_FittedModel = model.text;
    return xhat;
}

template <typename TInputImage, typename TOutputImage>
void NonnegativeTensorFactorizationImageFilter<TInputImage, TOutputImage>::FactorizeCore(tk_pltf_model &model,
                                                                                          const double *x,
                                                                                          const uint8_t *observed,
                                                                                          tk_pltf_result &result)
{
    tk_pltf_options o;
    tk_pltf_options_init(&o);
    o.divergence = static_cast<tk_pltf_divergence>(m_Divergence);
    o.backend = ToCoreBackend(this->ResolveBackend(BackendType::OMP));
    o.iterations = static_cast<int>(m_NumberOfIterations);
    o.seed = m_Seed;
    o.on_iteration = &Self::OnIteration;
    o.user = this;
    this->ThrowUnlessCoreOK(tk_pltf_factorize(&model, &o, x, observed, &result),
                            "non-negative tensor factorization (" + std::string(model.text) + ") failed");
}

template <typename TInputImage, typename TOutputImage>
void NonnegativeTensorFactorizationImageFilter<TInputImage, TOutputImage>::PrintSelf(std::ostream &os, Indent indent) const
{
    Superclass::PrintSelf(os, indent);
    os << indent << "Model: " << (m_Model.empty() ? "PARAFAC" : m_Model) << "\n"
       << indent << "Rank: " << m_Rank << "\n"
       << indent << "LatentSizes: " << m_LatentSizes << "\n"
       << indent << "Divergence: " << tk_pltf_divergence_name(static_cast<tk_pltf_divergence>(m_Divergence)) << "\n"
       << indent << "NumberOfIterations: " << m_NumberOfIterations << "\n"
       << indent << "Seed: " << m_Seed << "\n";
}
} // namespace itk
#endif
