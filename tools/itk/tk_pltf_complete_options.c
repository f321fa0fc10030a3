/* The option table of `tk-pltf complete`: its parser, --help and Slicer description
 * (tk-pltf --xml). */
#include "tk_pltf_complete.h"

#include "tk_pltf.h"

#define V(member) offsetof(tk_pltf_complete_values, member)

static const tk_option operands[] = {
    TK_COMPLETE_OPERANDS("tk-pltf",
                         "The non-negative image to complete: 3-D, or 4-D (a 4-D NIfTI or a vector volume, e.g. "
                         "dynamic PET frames or a DWI series)",
                         "The low-rank reconstruction, with the input's geometry and layout"),
};

static const tk_opt_choice divergences[] = {{"kl", TK_PLTF_KL, 0},
                                            {"euclidean", TK_PLTF_EUCLIDEAN, 0},
                                            {"eu", TK_PLTF_EUCLIDEAN, 1},
                                            {"is", TK_PLTF_IS, 0},
                                            {NULL, 0, 0}};

static const tk_option model[] = {
    {.name = "model", .value_name = "MODEL", .kind = TK_OPT_TEXT, .offset = V(model),
     .help = "parafac (default; or cp), tucker, or a PLTF expression over the\nimage's axes in C order: \"zyx=...\" "
             "in 3-D, \"tzyx=...\" in 4-D\n(t the 4th axis), e.g. \"tzyx=tp,zyxp\" (spatial maps times\ntime courses)",
     .xml = {.kind = TK_XML_STRING, .name = "model", .label = "Model",
             .description = "parafac (PARAFAC/CP over every axis), tucker (Tucker with a full core), or a PLTF "
                            "expression over the image's axes in C order, e.g. zyx=za,ya,xa in 3-D or tzyx=tp,zyxp "
                            "(spatial maps times time courses) in 4-D",
             .default_value = "parafac"}},
    {.name = "rank", .value_name = "R", .kind = TK_OPT_LONG, .min = 1, .max = 1024, .offset = V(rank),
     .help = "size of every latent index (default 4): the PARAFAC rank,\nTucker's core sizes",
     .xml = {.name = "rank", .label = "Rank",
             .description = "Size of every latent index: the PARAFAC rank, the Tucker core's sizes",
             .default_value = "4", .minimum = "1", .maximum = "1024", .step = "1"}},
    {.name = "dims", .value_name = "a=N[,b=M...]", .kind = TK_OPT_TEXT, .offset = V(dims),
     .help = "sizes of single latent indices (the others: --rank)",
     .xml = {.kind = TK_XML_STRING, .name = "dims", .label = "Latent sizes",
             .description = "Sizes of single latent indices, e.g. a=10,b=5 (the others: the rank); empty: none"}},
    {.name = "divergence", .value_name = "kl|euclidean|is", .kind = TK_OPT_CHOICE, .choices = divergences,
     .offset = V(divergence), .help = "(default kl: observed voxels >= 0; is: > 0)",
     .xml = {.name = "divergence", .label = "Divergence",
             .description = "kl: Poisson-like data such as PET counts, observed voxels >= 0; euclidean: Gaussian "
                            "noise; is (Itakura-Saito): observed voxels > 0",
             .default_value = "kl"}},
    {.name = "iters", .value_name = "K", .kind = TK_OPT_LONG, .min = 1, .max = 1000000, .offset = V(iters),
     .help = "iterations, each updating every factor once (default 200)",
     .xml = {.name = "iterations", .label = "Iterations",
             .description = "Multiplicative-update iterations, each updating every factor once",
             .default_value = "200", .minimum = "1", .maximum = "1000000", .step = "10"}},
};

static const tk_option_group groups[] = {
    {.title = "images", .label = "Input/Output", .description = "Images", .options = operands,
     .count = TK_OPT_COUNT(operands)},
    {.title = "options", .label = "Model", .description = "The non-negative low-rank model and its fit",
     .options = model, .count = TK_OPT_COUNT(model)},
    TK_COMPLETE_GROUPS(tk_pltf_complete_values, common),
};

static const tk_xml_module slicer = TK_XML_TOOL_MODULE(
    "Diffusion", "Non-negative Tensor Completion",
    "Non-negative low-rank completion: fits a PARAFAC, Tucker or any PLTF model with KL, Euclidean or "
    "Itakura-Saito multiplicative updates to the observed voxels of a 3-D or 4-D image and fills the "
    "unobserved ones (dropped slices, frames or volumes), on the CPU or CUDA.",
    "Probabilistic Latent Tensor Factorization after Yilmaz and Cemgil.");

const tk_command tk_pltf_complete_command = {
    TK_COMPLETE_COMMAND("tk-pltf", "--mask MASK --rank 6", groups, slicer),
    .usage = "tk-pltf complete IN_IMAGE OUT_IMAGE [--model MODEL] [--mask MASK] [options]",
    .description =
        "Non-negative low-rank completion of an image (itk::NonnegativeTensorFactorizationImageFilter):\n"
        "a PLTF model fitted by multiplicative updates to the voxels MASK marks as observed\n"
        "(non-zero; the others are never read), evaluated on the whole grid, so the voxels where\n"
        "MASK is zero are filled.  No mask: a low-rank approximation of the whole image.\n"
        "IN_IMAGE: a 3-D scalar volume, a 4-D image (4-D NIfTI, NRRD, MHA) or a vector volume\n"
        "(NRRD, e.g. a DWI series or PET frames as components, taken as the 4th axis).\n"
        "OUT_IMAGE: the reconstruction with the input's geometry and layout, in float.\n",
};

void tk_pltf_complete_values_init(tk_pltf_complete_values *v)
{
    tk_complete_values_init(&v->common);
    v->model = "parafac";
    v->dims = NULL;
    v->rank = 4;
    v->iters = 200;
    v->divergence = TK_PLTF_KL;
}
