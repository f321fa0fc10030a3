#ifndef itkTuckerCompletionImageFilter_hxx
#define itkTuckerCompletionImageFilter_hxx

#include <cmath>
#include <memory>
#include <vector>

#include "itkMacro.h"
#include "itkTuckerCompletionImageFilter.h"

namespace itk
{
template <typename TImage>
std::vector<double> TuckerCompletionImageFilter<TImage>::Reconstruct(const RegionType &region,
                                                                    const std::vector<double> &values,
                                                                    const uint8_t *observed)
{
    constexpr unsigned D = TImage::ImageDimension;
    tk_tucker_coo coo{};
    uint32_t dims[TK_TUCKER_MAX_ORDER] = {0};
    size_t voxels = 1;
    for (unsigned n = 0; n < D; ++n) {
        dims[n] = static_cast<uint32_t>(region.GetSize(n));
        voxels *= dims[n];
        if (dims[n] < 1) itkExceptionMacro(<< "axis " << n << " of the image is empty");
    }
    /// Observed voxels, in buffer order (axis 0 fastest); all of them without a mask.
    const auto is_observed = [observed](size_t v) { return !observed || observed[v]; };
    size_t count = 0, v = 0;
    double mean = 0;
    for (v = 0; v < voxels; ++v) {
        if (!is_observed(v)) continue;
        if (!std::isfinite(values[v]))
            itkExceptionMacro(<< "observed voxel " << this->GetInput()->ComputeIndex(static_cast<OffsetValueType>(v))
                              << " is not finite (" << values[v] << "): mask it out or fix the input");
        mean += values[v];
        ++count;
    }
    if (count == 0) itkExceptionMacro(<< "the mask marks no voxel as observed: nothing to fit; mark the observed voxels with nonzero values");
    mean /= static_cast<double>(count);
    double var = 0;
    for (v = 0; v < voxels; ++v)
        if (is_observed(v)) var += (values[v] - mean) * (values[v] - mean);
    const double scale = var > 0 ? std::sqrt(var / static_cast<double>(count)) : 1.0;

    this->ThrowUnlessCoreOK(tk_tucker_coo_alloc(&coo, static_cast<int>(D), dims, count), "cannot hold the observed voxels");
    std::unique_ptr<tk_tucker_coo, void (*)(tk_tucker_coo *)> coo_guard(&coo, tk_tucker_coo_free);
    size_t e = 0;
    for (v = 0; v < voxels; ++v) {
        if (!is_observed(v)) continue;
        size_t rest = v;
        for (unsigned n = 0; n < D; ++n) {
            coo.idx[e * D + n] = static_cast<uint32_t>(rest % dims[n]);
            rest /= dims[n];
        }
        coo.val[e++] = static_cast<float>((values[v] - mean) / scale);
    }

    tk_tucker_model model{};
    this->ThrowUnlessCoreOK(
        tk_tucker_model_alloc(&model, static_cast<int>(D), dims, static_cast<int>(m_RankJ), static_cast<int>(m_RankR)),
        "cannot allocate the model");
    std::unique_ptr<tk_tucker_model, void (*)(tk_tucker_model *)> model_guard(&model, tk_tucker_model_free);
    tk_tucker_model_init(&model, m_Seed, 0);
    FitCore(coo, model);
    tk_tucker_metrics fit;
    this->ThrowUnlessCoreOK(tk_tucker_evaluate(&model, &coo, 0, 0, &fit), "");
    if (!std::isfinite(fit.rmse))
        itkExceptionMacro(<< "the fit diverged: lower LearningRateA / LearningRateB");
    m_TrainingRMSE = fit.rmse * scale;
    m_NumberOfObservedVoxels = count;

    std::vector<float> dense(voxels);
    this->ThrowUnlessCoreOK(tk_tucker_predict_dense(&model, dense.data()), "");
    std::vector<double> reconstruction(voxels);
    for (v = 0; v < voxels; ++v)
        reconstruction[v] = m_KeepObservedValues && is_observed(v) ? values[v] : dense[v] * scale + mean;
    return reconstruction;
}

template <typename TImage>
void TuckerCompletionImageFilter<TImage>::FitCore(const tk_tucker_coo &coo, tk_tucker_model &model)
{
    tk_tucker_options o;
    tk_tucker_options_init(&o);
    /// The CPU backend of FastTucker is OpenMP's, for CPU as for OMP.
    o.backend = this->ResolveBackend(BackendType::OMP) == BackendType::CUDA ? TK_BACKEND_CUDA : TK_BACKEND_OMP;
    /// The filter's settings are learning rates: it trains by the seed's SGD steps.
    o.factor_update = TK_TUCKER_FACTOR_SGD;
    o.lr_a = m_LearningRateA;
    o.lr_b = m_LearningRateB;
    o.lambda_a = m_LambdaA;
    o.lambda_b = m_LambdaB;
    o.num_threads = static_cast<int>(this->GetNumberOfWorkUnits());
    tk_tucker_solver *solver = nullptr;
    this->ThrowUnlessCoreOK(tk_tucker_solver_create(&o, &coo, &model, &solver), "FastTucker set-up failed");
    std::unique_ptr<tk_tucker_solver, void (*)(tk_tucker_solver *)> solver_guard(solver, tk_tucker_solver_destroy);
    for (unsigned it = 0; it < m_NumberOfIterations; ++it) {
        if (tk_tucker_update_factors(solver) != TK_OK || tk_tucker_update_core(solver) != TK_OK)
            itkExceptionMacro(<< "FastTucker iteration " << it + 1 << " failed: " << tk_last_error());
        this->UpdateProgressOf(it + 1, m_NumberOfIterations + 1);
        if (this->GetAbortGenerateData()) break;
    }
    this->ThrowUnlessCoreOK(tk_tucker_solver_model(solver, &model), "");
}

template <typename TImage>
void TuckerCompletionImageFilter<TImage>::PrintSelf(std::ostream &os, Indent indent) const
{
    Superclass::PrintSelf(os, indent);
    os << indent << "RankJ: " << m_RankJ << "\n"
       << indent << "RankR: " << m_RankR << "\n"
       << indent << "NumberOfIterations: " << m_NumberOfIterations << "\n"
       << indent << "LearningRateA: " << m_LearningRateA << "\n"
       << indent << "LearningRateB: " << m_LearningRateB << "\n"
       << indent << "LambdaA: " << m_LambdaA << "\n"
       << indent << "LambdaB: " << m_LambdaB << "\n"
       << indent << "Seed: " << m_Seed << "\n"
       << indent << "KeepObservedValues: " << m_KeepObservedValues << "\n";
}
} // namespace itk
#endif
