/** itk::TuckerCompletionImageFilter: image + mask of observed voxels in, low-rank
 * FastTucker reconstruction out. \file
 * \ingroup tk_group_tk_itk */
#ifndef itkTuckerCompletionImageFilter_h
#define itkTuckerCompletionImageFilter_h

#include "itkTensorKernelsMaskedImageFilter.h"
#include "tk_tucker.h"

namespace itk
{
/** \class TuckerCompletionImageFilter
 * \brief Tensor completion: fills unobserved voxels of a 3-D or 4-D image from a low-rank
 * sparse FastTucker model fitted to the observed ones.
 *
 * The image is an order-N tensor (N = ImageDimension, axis n = mode n).  The voxels where
 * the mask (SetMaskImage, same grid; nonzero = observed) is set are the training entries;
 * with no mask every voxel is observed and the output is a low-rank approximation.  The
 * values are standardized (mean 0, standard deviation 1) before fitting, so the learning
 * rates do not depend on the intensity scale, and the model is evaluated on the whole
 * grid.  Output: the reconstruction everywhere, or with KeepObservedValues on, the input
 * at observed voxels and the reconstruction elsewhere (e.g. a DWI series with dropped
 * slices: the 4-D image and a mask that is zero on the dropped slices).
 *
 * The whole image is processed at once (the model couples every voxel): no streaming.
 * Backend CPU and OMP run the OpenMP backend; CUDA the GPU one; Auto (default) CUDA where a
 * GPU is usable, else OpenMP.  With a fixed Seed the CPU result is reproducible for any
 * thread count.
 * \ingroup tk_group_tk_itk
 */
template <typename TImage = Image<float, 3>>
class ITK_TEMPLATE_EXPORT TuckerCompletionImageFilter : public TensorKernelsWholeImageFilter<TImage, TImage>
{
public:
    itkTensorKernelsClassMacro(TuckerCompletionImageFilter, TensorKernelsWholeImageFilter<TImage, TImage>);
    itkNewMacro(Self);
    static_assert(TImage::ImageDimension >= 3 && TImage::ImageDimension <= 4,
                  "TuckerCompletionImageFilter works on 3-D and 4-D images");

    using ImageType = TImage;
    using RegionType = typename Superclass::RegionType;
    using BackendType = typename Superclass::BackendType;

    /** Factor rank J and core rank R (4..64; default 8). */
    itkSetClampMacro(RankJ, unsigned int, TK_TUCKER_MIN_RANK, TK_TUCKER_MAX_RANK);
    itkGetConstMacro(RankJ, unsigned int);
    itkSetClampMacro(RankR, unsigned int, TK_TUCKER_MIN_RANK, TK_TUCKER_MAX_RANK);
    itkGetConstMacro(RankR, unsigned int);
    /** SGD iterations (default 200). */
    itkSetClampMacro(NumberOfIterations, unsigned int, 1, 1000000);
    itkGetConstMacro(NumberOfIterations, unsigned int);
    /** Learning rates and regularization of the factor and core matrices (on the
     *  standardized values; defaults 0.02, 0.5, 1e-3, 1e-3).  Ranks above the data's
     *  true rank converge faster (the default 8 suits smooth images). */
    itkSetMacro(LearningRateA, double);
    itkGetConstMacro(LearningRateA, double);
    itkSetMacro(LearningRateB, double);
    itkGetConstMacro(LearningRateB, double);
    itkSetMacro(LambdaA, double);
    itkGetConstMacro(LambdaA, double);
    itkSetMacro(LambdaB, double);
    itkGetConstMacro(LambdaB, double);
    itkSetMacro(Seed, uint64_t);
    itkGetConstMacro(Seed, uint64_t);
    itkSetMacro(KeepObservedValues, bool);
    itkGetConstMacro(KeepObservedValues, bool);
    itkBooleanMacro(KeepObservedValues);
    /** After Update: observed voxels, and the fit's RMSE on them (input units). */
    itkGetConstMacro(NumberOfObservedVoxels, SizeValueType);
    itkGetConstMacro(TrainingRMSE, double);

protected:
    TuckerCompletionImageFilter() = default;
    ~TuckerCompletionImageFilter() override = default;

    /** The values standardized, the model fitted to the observed ones and evaluated
     * everywhere (or the input kept where observed, with KeepObservedValues). */
    std::vector<double> Reconstruct(const RegionType &region, const std::vector<double> &values,
                                    const uint8_t *observed) override;
    void PrintSelf(std::ostream &os, Indent indent) const override;

private:
    /** The filter's one use of the core: fits the model to the observed entries \p coo
     * (standardized) with the filter's settings, leaving the fitted model in \p model. */
    void FitCore(const tk_tucker_coo &coo, tk_tucker_model &model);

    unsigned int m_RankJ{8};
    unsigned int m_RankR{8};
    unsigned int m_NumberOfIterations{200};
    double m_LearningRateA{0.02};
    double m_LearningRateB{0.5};
    double m_LambdaA{1e-3};
    double m_LambdaB{1e-3};
    uint64_t m_Seed{0};
    bool m_KeepObservedValues{false};
    SizeValueType m_NumberOfObservedVoxels{0};
    double m_TrainingRMSE{0.0};
};
} // namespace itk

#ifndef ITK_MANUAL_INSTANTIATION
#include "itkTuckerCompletionImageFilter.hxx"
#endif
#endif
