/* The SlicerExecutionModel description of `tk-pltf complete` (tk-pltf --xml); the flags
 * and defaults are those tk_pltf_complete.cxx parses. */
#include "tk_pltf_complete.h"

/* Slicer writes its temporaries in the first format listed: NRRD keeps vector volumes whole. */
#define IMAGES ".nrrd,.nhdr,.nii.gz,.nii,.mha"

static const tk_xml_param io_params[] = {
    /* Slicer appends positional arguments after the options: this makes the command line
     * `tk-pltf [options] complete IN OUT`. */
    {.kind = TK_XML_STRING, .name = "command", .label = "Command", .description = "tk-pltf's image mode",
     .index = 0, .default_value = "complete", .hidden = 1},
    {.kind = TK_XML_IMAGE, .name = "inputVolume", .label = "Input volume",
     .description = "The non-negative image to complete: 3-D, or 4-D (a 4-D NIfTI or a vector volume, e.g. "
                    "dynamic PET frames or a DWI series)",
     .index = 1, .channel = TK_XML_INPUT, .image_type = "scalar", .file_extensions = IMAGES},
    {.kind = TK_XML_IMAGE, .name = "outputVolume", .label = "Output volume",
     .description = "The low-rank reconstruction, with the input's geometry and layout", .index = 2,
     .channel = TK_XML_OUTPUT, .image_type = "scalar", .file_extensions = IMAGES},
    {.kind = TK_XML_IMAGE, .name = "mask", .label = "Observed mask",
     .description = "Non-zero where a voxel is observed (fitted); zero where it is to be filled (never read).  "
                    "No mask: every voxel is observed and the output is a low-rank approximation",
     .longflag = "mask", .index = -1, .channel = TK_XML_INPUT, .image_type = "label"},
    {.kind = TK_XML_BOOLEAN, .name = "keepObserved", .label = "Keep observed values",
     .description = "Copy the input at observed voxels; the reconstruction only where the mask is zero",
     .longflag = "keep-observed", .index = -1, .default_value = "false"},
};

static const tk_xml_param model_params[] = {
    {.kind = TK_XML_STRING, .name = "model", .label = "Model",
     .description = "parafac (PARAFAC/CP over every axis), tucker (Tucker with a full core), or a PLTF expression "
                    "over the image's axes in C order, e.g. zyx=za,ya,xa in 3-D or tzyx=tp,zyxp (spatial maps times "
                    "time courses) in 4-D",
     .longflag = "model", .index = -1, .default_value = "parafac"},
    {.kind = TK_XML_INTEGER, .name = "rank", .label = "Rank",
     .description = "Size of every latent index: the PARAFAC rank, the Tucker core's sizes", .longflag = "rank",
     .index = -1, .default_value = "4", .minimum = "1", .maximum = "1024", .step = "1"},
    {.kind = TK_XML_STRING_ENUMERATION, .name = "divergence", .label = "Divergence",
     .description = "kl: Poisson-like data such as PET counts, observed voxels >= 0; euclidean: Gaussian noise; "
                    "is (Itakura-Saito): observed voxels > 0",
     .longflag = "divergence", .index = -1, .default_value = "kl", .elements = "kl|euclidean|is"},
    {.kind = TK_XML_INTEGER, .name = "iterations", .label = "Iterations",
     .description = "Multiplicative-update iterations, each updating every factor once", .longflag = "iters",
     .index = -1, .default_value = "200", .minimum = "1", .maximum = "1000000", .step = "10"},
};

static const tk_xml_param solver_params[] = {
    {.kind = TK_XML_INTEGER, .name = "seed", .label = "Seed", .description = "Seed of the random non-negative start",
     .longflag = "seed", .index = -1, .default_value = "0"},
    {.kind = TK_XML_STRING_ENUMERATION, .name = "backend", .label = "Backend",
     .description = "auto: the GPU when one is usable, else all CPU cores; omp: all CPU cores; cpu: one thread; "
                    "cuda: the GPU",
     .longflag = "backend", .index = -1, .default_value = "auto", .elements = "auto|omp|cpu|cuda"},
};

static const tk_xml_group groups[] = {
    {.label = "Input/Output", .description = "Images", .params = io_params, .count = TK_XML_COUNT(io_params)},
    {.label = "Model", .description = "The non-negative low-rank model and its fit", .params = model_params,
     .count = TK_XML_COUNT(model_params)},
    {.label = "Solver", .description = "Start and hardware", .advanced = 1, .params = solver_params,
     .count = TK_XML_COUNT(solver_params)},
};

const tk_xml_module tk_pltf_complete_xml = {
    .category = "Diffusion.TensorKernels",
    .title = "Non-negative Tensor Completion (TensorKernels)",
    .description = "Non-negative low-rank completion: fits a PARAFAC, Tucker or any PLTF model with KL, Euclidean or "
                   "Itakura-Saito multiplicative updates to the observed voxels of a 3-D or 4-D image and fills the "
                   "unobserved ones (dropped slices, frames or volumes), on the CPU or CUDA.",
    .contributor = "TensorKernels developers",
    .acknowledgements = "Probabilistic Latent Tensor Factorization after Yilmaz and Cemgil.",
    .groups = groups,
    .count = TK_XML_COUNT(groups),
};
