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
    long rank_j = 8, rank_r = 8, iters = 200;
    double lr_a = 0.02, lr_b = 0.5, lambda_a = 1e-3, lambda_b = 1e-3;
};

int parse(int argc, char **argv, CompleteArgs &a)
{
    for (int i = 1; i < argc; ++i) {
        const char *arg = argv[i], *v = nullptr;
#define VALUE(flag) (v = tk_cli_value(prog, argc, argv, &i, flag))
#define NUMBER(flag, parse_fn, lo, hi, out) \
    (VALUE(flag) && parse_fn(prog, flag, v, lo, hi, out))
        if (!std::strcmp(arg, "--help") || !std::strcmp(arg, "-h")) {
            tk_tucker_complete_usage(stdout);
            std::exit(0);
        } else if (tk_cli_is(arg, "--rank-j")) {
            if (!NUMBER("--rank-j", tk_cli_parse_int, TK_TUCKER_MIN_RANK, TK_TUCKER_MAX_RANK, &a.rank_j)) return 0;
        } else if (tk_cli_is(arg, "--rank-r")) {
            if (!NUMBER("--rank-r", tk_cli_parse_int, TK_TUCKER_MIN_RANK, TK_TUCKER_MAX_RANK, &a.rank_r)) return 0;
        } else if (tk_cli_is(arg, "--iters")) {
            if (!NUMBER("--iters", tk_cli_parse_int, 1, 1000000, &a.iters)) return 0;
        } else if (tk_cli_is(arg, "--lr-a")) {
            if (!NUMBER("--lr-a", tk_cli_parse_double, 1e-12, 1e6, &a.lr_a)) return 0;
        } else if (tk_cli_is(arg, "--lr-b")) {
            if (!NUMBER("--lr-b", tk_cli_parse_double, 0, 1e6, &a.lr_b)) return 0;
        } else if (tk_cli_is(arg, "--lambda-a")) {
            if (!NUMBER("--lambda-a", tk_cli_parse_double, 0, 1e6, &a.lambda_a)) return 0;
        } else if (tk_cli_is(arg, "--lambda-b")) {
            if (!NUMBER("--lambda-b", tk_cli_parse_double, 0, 1e6, &a.lambda_b)) return 0;
        } else if (!tk::parse_complete_shared(prog, "tk-tucker complete", argc, argv, &i, a)) {
            return 0;
        }
#undef NUMBER
#undef VALUE
    }
    if (!tk::complete_operands_given(prog, "tk-tucker complete", a)) return 0;
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

extern "C" void tk_tucker_complete_usage(FILE *f)
{
    std::fprintf(f,
                 "usage: tk-tucker complete IN_IMAGE OUT_IMAGE [--mask MASK] [options]\n"
                 "\n"
                 "Tensor completion of an image (itk::TuckerCompletionImageFilter): a low-rank FastTucker\n"
                 "model fitted by SGD to the voxels MASK marks as observed (non-zero), evaluated on the\n"
                 "whole grid, so the voxels where MASK is zero (dropped slices or volumes) are filled.\n"
                 "IN_IMAGE: a 3-D scalar volume, or 4-D (4-D NIfTI, or a vector volume such as a DWI\n"
                 "series in NRRD); OUT_IMAGE keeps its layout.  MASK: 3-D (the same for every volume) or\n"
                 "with the image's volumes.  No mask: a low-rank approximation of the whole image.\n"
                 "A voxel row no observation reaches (a whole slice dropped from every volume) cannot be\n"
                 "recovered by a low-rank model: drop slices per volume (a 4-D mask).\n"
                 "\n"
                 "options:\n"
                 "  --rank-j J, --rank-r R   factor and core ranks, 4..64 (default 8)\n"
                 "  --iters K                SGD iterations (default 200)\n"
                 "  --lr-a X, --lr-b X       learning rates on the standardized values (default 0.02, 0.5)\n"
                 "  --lambda-a X, --lambda-b X  regularization (default 0.001)\n"
                 "  --seed S                 seed of the model's start (default 0)\n"
                 "  --keep-observed          copy the input at observed voxels\n"
                 "  --backend auto|omp|cuda  auto (default): cuda where a usable GPU is found, else omp\n"
                 "                           with a warning on stderr (cpu is the same as omp)\n"
                 "  --quiet                  no progress bar, summary or warnings\n"
                 "With the options before the word complete, as 3D Slicer calls it, the same runs:\n"
                 "  tk-tucker --mask MASK --iters 100 complete IN_IMAGE OUT_IMAGE\n");
}

extern "C" int tk_tucker_complete_main(int argc, char **argv)
{
    CompleteArgs a;
    if (!parse(argc, argv, a)) return TK_EXIT_USAGE;
    const char *inputs[] = {a.input.c_str(), a.mask.empty() ? nullptr : a.mask.c_str(), nullptr};
    if (int bad = tk_cli_check_output(prog, a.output.c_str(), 0, inputs)) return bad;
    // OUT_IMAGE (and a detached header's data file) through an output set: no file of an
    // input, a temporary removed on a signal, the size checked, renamed at the end.
    tk::VolumeOutput out;
    if (int bad = tk::register_volume_output(prog, {{"IN_IMAGE", a.input}, {"--mask", a.mask}}, "OUT_IMAGE", a.output,
                                             out))
        return bad;
    try {
        const tk::CompletionInput kind = tk::completion_input(a.input);
        if (kind == tk::CompletionInput::Scalar3) {
            auto image = tk::read_scalar_volume(a.input);
            tk::MaskImage3::Pointer mask;
            if (!a.mask.empty()) {
                mask = tk::read_mask(a.mask);
                tk::same_grid(image.GetPointer(), a.input, mask.GetPointer(), a.mask);
            }
            if (!tk_cli_resolve_backend(prog, a.backend, 0, TK_BACKEND_OMP, a.quiet, &a.backend)) return TK_EXIT_FAILURE;
            tk::write_scalar_volume(complete<Image3>(a, image, mask), out.set.get(), out.idx);
        } else if (kind == tk::CompletionInput::Scalar4) {
            // a 4-D image keeps its whole 4-D geometry (the volumes' spacing on the 4th axis)
            auto image = tk::read_scalar_image4(a.input);
            itk::Image<unsigned char, 4>::Pointer mask;
            if (!a.mask.empty()) mask = tk::mask_4d(image, a.input, a.mask);
            if (!tk_cli_resolve_backend(prog, a.backend, 0, TK_BACKEND_OMP, a.quiet, &a.backend)) return TK_EXIT_FAILURE;
            tk::write_scalar_image4(complete<Image4>(a, image, mask), out.set.get(), out.idx);
        } else {
            auto vectors = tk::read_vector_volume(a.input);  // a vector volume (NRRD, e.g. a DWI series)
            auto image = tk::to_4d(vectors);
            itk::Image<unsigned char, 4>::Pointer mask;
            if (!a.mask.empty()) mask = tk::mask_4d(image, a.input, a.mask);
            if (!tk_cli_resolve_backend(prog, a.backend, 0, TK_BACKEND_OMP, a.quiet, &a.backend)) return TK_EXIT_FAILURE;
            tk::copy_back(complete<Image4>(a, image, mask), vectors);  // the input's grid and layout, the completed values
            tk::write_vector_volume(vectors, out.set.get(), out.idx);
        }
        if (tk_outset_commit(out.set.get()) != 0) return TK_EXIT_FAILURE;  // it said why
    } catch (...) {
        // what() of std::bad_alloc is just "std::bad_alloc": say which work, and what to do
        return tk::report_failure(prog, a.input,
                                  std::string("out of memory: the volume and its results need more than this machine "
                                              "can give; use a smaller volume") +
                                      (a.mask.empty() ? " or a --mask" : ""));
    }
    return 0;
}
