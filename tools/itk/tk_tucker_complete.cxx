// tk-tucker complete: itk::TuckerCompletionImageFilter on an image file (the mode 3D
// Slicer runs).  3-D scalar volumes stay 3-D; a 4-D image (4-D NIfTI, NRRD, MHA) keeps its
// whole 4-D geometry; a vector volume (NRRD, e.g. a DWI series) becomes 4-D with the
// components on the 4th axis and is written back in the input's layout.
#include "tk_tucker_complete.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

#include "cli.h"
#include "cli_failure.h"
#include "complete_args.h"
#include "complete_run.h"
#include "itk_progress_bar.h"
#include "itkTuckerCompletionImageFilter.h"

namespace {

const char *prog = "tk-tucker";

struct CompleteArgs : tk::CompleteShared {
    long rank_j = 0, rank_r = 0, iters = 0;  // tk_tucker_complete_values_init: the defaults
    double lr_a = 0, lr_b = 0, lambda_a = 0, lambda_b = 0;
};

int parse(int argc, char **argv, CompleteArgs &a)
{
    tk_tucker_complete_values v;
    tk_tucker_complete_values_init(&v);
    if (!tk::parse_complete(&tk_tucker_complete_command, argc, argv, &v, v.common, a)) return 0;
    a.rank_j = v.rank_j, a.rank_r = v.rank_r, a.iters = v.iters;
    a.lr_a = v.lr_a, a.lr_b = v.lr_b, a.lambda_a = v.lambda_a, a.lambda_b = v.lambda_b;
    return 1;
}

// The completed image, or null after printing why --backend cannot run.
template <typename TImage>
typename TImage::Pointer complete(CompleteArgs &a, const TImage *image,
                                  const typename itk::TuckerCompletionImageFilter<TImage>::MaskImageType *mask)
{
    // --backend once the image and the mask are read
    if (!tk_cli_resolve_backend(prog, a.backend, a.device, TK_BACKEND_OMP, a.quiet, &a.backend)) return nullptr;
    using Filter = itk::TuckerCompletionImageFilter<TImage>;
    auto filter = Filter::New();
    filter->SetInput(image);
    if (mask) filter->SetMaskImage(mask);
    filter->SetRankJ(static_cast<unsigned>(a.rank_j));
    filter->SetRankR(static_cast<unsigned>(a.rank_r));
    filter->SetNumberOfIterations(static_cast<unsigned>(a.iters));
    filter->SetLearningRateA(a.lr_a);
    filter->SetLearningRateB(a.lr_b);
    filter->SetLambdaA(a.lambda_a);
    filter->SetLambdaB(a.lambda_b);
    filter->SetSeed(a.seed);
    filter->SetKeepObservedValues(a.keep_observed);
    filter->SetBackend(a.backend == TK_BACKEND_CUDA ? Filter::BackendType::CUDA : Filter::BackendType::CPU);
    try {
        tk::update_with_progress(filter, prog, a.quiet);
    } catch (const itk::ExceptionObject &e) {
        // The filter's complaints are about the data: name the file they come from.
        const std::string why = tk::itk_message(e);
        const bool about_mask = !a.mask.empty() && why.rfind("the mask", 0) == 0;
        throw std::runtime_error((about_mask ? a.mask : a.input) + ": " + why);
    }
    if (!a.quiet)
        std::fprintf(stderr, "%s: %lu observed voxels, training RMSE %.6g\n", prog,
                     static_cast<unsigned long>(filter->GetNumberOfObservedVoxels()), filter->GetTrainingRMSE());
    typename TImage::Pointer out = filter->GetOutput();
    out->DisconnectPipeline();
    return out;
}

}  // namespace

extern "C" int tk_tucker_complete_main(int argc, char **argv)
{
    CompleteArgs a;
    if (!parse(argc, argv, a)) return TK_EXIT_USAGE;
    return tk::run_completion(prog, a, tk::volume_out_of_memory(a.mask.empty()),
                              [](tk::CompletionInput) { return true; },  // nothing to settle before reading
                              [&a](auto *image, auto *mask) { return complete(a, image, mask); });
}
