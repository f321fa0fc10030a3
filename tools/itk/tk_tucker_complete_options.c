/* The option table of `tk-tucker complete`: its parser, --help and Slicer description
 * (tk-tucker --xml). */
#include "tk_tucker_complete.h"

#include "tk_tucker.h"

#define V(member) offsetof(tk_tucker_complete_values, member)

static const tk_option operands[] = {
    TK_COMPLETE_OPERANDS("tk-tucker",
                         "The image to complete: 3-D, or 4-D (a 4-D NIfTI or a vector volume, e.g. a DWI series)",
                         "The low-rank reconstruction, in the input's layout"),
};

static const tk_option model[] = {
    {.name = "rank-j", .value_name = "J", .kind = TK_OPT_LONG, .min = TK_TUCKER_MIN_RANK, .max = TK_TUCKER_MAX_RANK,
     .offset = V(rank_j), .help = "factor rank, 4..64 (default 8)",
     .xml = {.name = "rankJ", .label = "Factor rank J", .description = "Columns of each factor matrix",
             .default_value = "8", .minimum = "4", .maximum = "64", .step = "1"}},
    {.name = "rank-r", .value_name = "R", .kind = TK_OPT_LONG, .min = TK_TUCKER_MIN_RANK, .max = TK_TUCKER_MAX_RANK,
     .offset = V(rank_r), .help = "core rank, 4..64 (default 8)",
     .xml = {.name = "rankR", .label = "Core rank R", .description = "Rank of the Kruskal core",
             .default_value = "8", .minimum = "4", .maximum = "64", .step = "1"}},
    {.name = "iters", .value_name = "K", .kind = TK_OPT_LONG, .min = 1, .max = 1000000, .offset = V(iters),
     .help = "SGD iterations (default 200)",
     .xml = {.name = "iterations", .label = "Iterations", .description = "SGD iterations", .default_value = "200",
             .minimum = "1", .maximum = "100000", .step = "10"}},
};

static const tk_option solver[] = {
    {.name = "lr-a", .value_name = "X", .kind = TK_OPT_DOUBLE, .min = 1e-12, .max = 1e6, .offset = V(lr_a),
     .help = "factor learning rate on the standardized values (default 0.02)",
     .xml = {.name = "learningRateA", .label = "Factor learning rate", .description = "On the standardized values",
             .default_value = "0.02"}},
    {.name = "lr-b", .value_name = "X", .kind = TK_OPT_DOUBLE, .min = 0, .max = 1e6, .offset = V(lr_b),
     .help = "core learning rate (default 0.5)",
     .xml = {.name = "learningRateB", .label = "Core learning rate", .description = "Scales the mean core gradient",
             .default_value = "0.5"}},
    {.name = "lambda-a", .value_name = "X", .kind = TK_OPT_DOUBLE, .min = 0, .max = 1e6, .offset = V(lambda_a),
     .help = "factor regularization (default 0.001)",
     .xml = {.name = "lambdaA", .label = "Factor regularization", .description = "L2 weight",
             .default_value = "0.001"}},
    {.name = "lambda-b", .value_name = "X", .kind = TK_OPT_DOUBLE, .min = 0, .max = 1e6, .offset = V(lambda_b),
     .help = "core regularization (default 0.001)",
     .xml = {.name = "lambdaB", .label = "Core regularization", .description = "L2 weight",
             .default_value = "0.001"}},
};

static const tk_option_group groups[] = {
    {.title = "images", .label = "Input/Output", .description = "Images", .options = operands,
     .count = TK_OPT_COUNT(operands)},
    {.title = "options", .label = "Model", .description = "The low-rank FastTucker model", .options = model,
     .count = TK_OPT_COUNT(model)},
    {.title = "solver options", .label = "Solver", .description = "SGD settings", .advanced = 1, .options = solver,
     .count = TK_OPT_COUNT(solver)},
    TK_COMPLETE_GROUPS(tk_tucker_complete_values, common),
};

static const tk_xml_module slicer = TK_XML_TOOL_MODULE(
    "Diffusion", "Tucker Completion",
    "Tensor completion: fills the unobserved voxels of a 3-D or 4-D image (dropped slices or volumes) "
    "from a low-rank sparse FastTucker model fitted by SGD to the observed ones, on the CPU or CUDA.",
    "FastTucker model and SGD updates after cuFasterTucker.");

const tk_command tk_tucker_complete_command = {
    TK_COMPLETE_COMMAND("tk-tucker", "--mask MASK --iters 100", groups, slicer),
    .usage = "tk-tucker complete IN_IMAGE OUT_IMAGE [--mask MASK] [options]",
    .description =
        "Tensor completion of an image (itk::TuckerCompletionImageFilter): a low-rank FastTucker\n"
        "model fitted by SGD to the voxels MASK marks as observed (non-zero), evaluated on the\n"
        "whole grid, so the voxels where MASK is zero (dropped slices or volumes) are filled.\n"
        "IN_IMAGE: a 3-D scalar volume, or 4-D (4-D NIfTI, or a vector volume such as a DWI\n"
        "series in NRRD); OUT_IMAGE keeps its layout.  MASK: 3-D (the same for every volume) or\n"
        "with the image's volumes.  No mask: a low-rank approximation of the whole image.\n"
        "A voxel row no observation reaches (a whole slice dropped from every volume) cannot be\n"
        "recovered by a low-rank model: drop slices per volume (a 4-D mask).\n",
};

void tk_tucker_complete_values_init(tk_tucker_complete_values *v)
{
    tk_complete_values_init(&v->common);
    v->rank_j = v->rank_r = 8;
    v->iters = 200;
    v->lr_a = 0.02, v->lr_b = 0.5, v->lambda_a = v->lambda_b = 1e-3;
}
