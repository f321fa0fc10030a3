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
#include "image_layout.h"
#include "itk_progress_bar.h"
#include "itkTuckerCompletionImageFilter.h"
#include "sh_image_io.h"

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

using Image3 = itk::Image<float, 3>;
using Image4 = itk::Image<float, 4>;

template <typename TImage>
typename TImage::Pointer complete(const CompleteArgs &a, const TImage *image,
                                  const typename itk::TuckerCompletionImageFilter<TImage>::MaskImageType *mask)
{
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
    tk::VolumeOutput out;
    if (int bad = tk::prepare_complete_output(prog, a, out)) return bad;
    try {
        const tk::CompletionInput kind = tk::completion_input(a.input);
        if (kind == tk::CompletionInput::Scalar3) {
            auto image = tk::read_scalar_volume(a.input);
            tk::MaskImage3::Pointer mask;
            if (!a.mask.empty()) {
                mask = tk::read_mask(a.mask);
                tk::same_grid(image.GetPointer(), a.input, mask.GetPointer(), a.mask);
            }
            if (!tk_cli_resolve_backend(prog, a.backend, a.device, TK_BACKEND_OMP, a.quiet, &a.backend)) return TK_EXIT_FAILURE;
            tk::write_scalar_volume(complete<Image3>(a, image, mask), out.set.get(), out.idx);
        } else if (kind == tk::CompletionInput::Scalar4) {
            // a 4-D image keeps its whole 4-D geometry (the volumes' spacing on the 4th axis)
            auto image = tk::read_scalar_image4(a.input);
            itk::Image<unsigned char, 4>::Pointer mask;
            if (!a.mask.empty()) mask = tk::mask_4d(image, a.input, a.mask);
            if (!tk_cli_resolve_backend(prog, a.backend, a.device, TK_BACKEND_OMP, a.quiet, &a.backend)) return TK_EXIT_FAILURE;
            tk::write_scalar_image4(complete<Image4>(a, image, mask), out.set.get(), out.idx);
        } else {
            auto vectors = tk::read_vector_volume(a.input);  // a vector volume (NRRD, e.g. a DWI series)
            auto image = tk::to_4d(vectors);
            itk::Image<unsigned char, 4>::Pointer mask;
            if (!a.mask.empty()) mask = tk::mask_4d(image, a.input, a.mask);
            if (!tk_cli_resolve_backend(prog, a.backend, a.device, TK_BACKEND_OMP, a.quiet, &a.backend)) return TK_EXIT_FAILURE;
            tk::copy_back(complete<Image4>(a, image, mask), vectors);  // the input's grid and layout, the completed values
            tk::write_vector_volume(vectors, out.set.get(), out.idx);
        }
        if (tk_outset_commit(out.set.get()) != 0) return TK_EXIT_FAILURE;  // it said why
    } catch (...) {
        // what() of std::bad_alloc is just "std::bad_alloc": say which work, and what to do
        return tk::report_failure(prog, a.input, tk::volume_out_of_memory(a.mask.empty()));
    }
    return 0;
}
