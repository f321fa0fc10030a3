/* The SlicerExecutionModel description of `tk-tucker complete` (tk-tucker --xml); the
 * flags and defaults are those tk_tucker_complete.cxx parses. */
#include "tk_tucker_complete.h"

/* Slicer writes its temporaries in the first format listed: NRRD keeps vector volumes whole. */
#define IMAGES ".nrrd,.nhdr,.nii.gz,.nii,.mha"

static const tk_xml_param io_params[] = {
    /* Slicer appends positional arguments after the options: this makes the command line
     * `tk-tucker [options] complete IN OUT`. */
    {.kind = TK_XML_STRING, .name = "command", .label = "Command", .description = "tk-tucker's image mode",
     .index = 0, .default_value = "complete", .hidden = 1},
    {.kind = TK_XML_IMAGE, .name = "inputVolume", .label = "Input volume",
     .description = "The image to complete: 3-D, or 4-D (a 4-D NIfTI or a vector volume, e.g. a DWI series)",
     .index = 1, .channel = TK_XML_INPUT, .image_type = "scalar", .file_extensions = IMAGES},
    {.kind = TK_XML_IMAGE, .name = "outputVolume", .label = "Output volume",
     .description = "The low-rank reconstruction, in the input's layout", .index = 2, .channel = TK_XML_OUTPUT,
     .image_type = "scalar", .file_extensions = IMAGES},
    {.kind = TK_XML_IMAGE, .name = "mask", .label = "Observed mask",
     .description = "Non-zero where a voxel is observed (fitted); zero where it is to be filled.  No mask: every "
                    "voxel is observed and the output is a low-rank approximation",
     .longflag = "mask", .index = -1, .channel = TK_XML_INPUT, .image_type = "label"},
    {.kind = TK_XML_BOOLEAN, .name = "keepObserved", .label = "Keep observed values",
     .description = "Copy the input at observed voxels; the reconstruction only where the mask is zero",
     .longflag = "keep-observed", .index = -1, .default_value = "false"},
};

static const tk_xml_param model_params[] = {
    {.kind = TK_XML_INTEGER, .name = "rankJ", .label = "Factor rank J", .description = "Columns of each factor matrix",
     .longflag = "rank-j", .index = -1, .default_value = "8", .minimum = "4", .maximum = "64", .step = "1"},
    {.kind = TK_XML_INTEGER, .name = "rankR", .label = "Core rank R", .description = "Rank of the Kruskal core",
     .longflag = "rank-r", .index = -1, .default_value = "8", .minimum = "4", .maximum = "64", .step = "1"},
    {.kind = TK_XML_INTEGER, .name = "iterations", .label = "Iterations", .description = "SGD iterations",
     .longflag = "iters", .index = -1, .default_value = "200", .minimum = "1", .maximum = "100000", .step = "10"},
};

static const tk_xml_param solver_params[] = {
    {.kind = TK_XML_DOUBLE, .name = "learningRateA", .label = "Factor learning rate",
     .description = "On the standardized values", .longflag = "lr-a", .index = -1, .default_value = "0.02"},
    {.kind = TK_XML_DOUBLE, .name = "learningRateB", .label = "Core learning rate",
     .description = "Scales the mean core gradient", .longflag = "lr-b", .index = -1, .default_value = "0.5"},
    {.kind = TK_XML_DOUBLE, .name = "lambdaA", .label = "Factor regularization", .description = "L2 weight",
     .longflag = "lambda-a", .index = -1, .default_value = "0.001"},
    {.kind = TK_XML_DOUBLE, .name = "lambdaB", .label = "Core regularization", .description = "L2 weight",
     .longflag = "lambda-b", .index = -1, .default_value = "0.001"},
    {.kind = TK_XML_INTEGER, .name = "seed", .label = "Seed",
     .description = "Seed of the model's start: a fixed seed gives the same result on any thread count",
     .longflag = "seed", .index = -1, .default_value = "0"},
    {.kind = TK_XML_STRING_ENUMERATION, .name = "backend", .label = "Backend",
     .description = "auto: the GPU where a usable one is found, else all cores (with a warning); "
                    "omp: all cores; cuda: the GPU",
     .longflag = "backend", .index = -1, .default_value = "auto",
     .elements = "auto|omp|cuda"},
};

static const tk_xml_group groups[] = {
    {.label = "Input/Output", .description = "Images", .params = io_params, .count = TK_XML_COUNT(io_params)},
    {.label = "Model", .description = "The low-rank FastTucker model", .params = model_params,
     .count = TK_XML_COUNT(model_params)},
    {.label = "Solver", .description = "SGD settings", .advanced = 1, .params = solver_params,
     .count = TK_XML_COUNT(solver_params)},
};

const tk_xml_module tk_tucker_complete_xml = {
    .category = "Diffusion.TensorKernels",
    .title = "Tucker Completion (TensorKernels)",
    .description = "Tensor completion: fills the unobserved voxels of a 3-D or 4-D image (dropped slices or volumes) "
                   "from a low-rank sparse FastTucker model fitted by SGD to the observed ones, on the CPU or CUDA.",
    .contributor = "TensorKernels developers",
    .acknowledgements = "FastTucker model and SGD updates after cuFasterTucker.",
    .groups = groups,
    .count = TK_XML_COUNT(groups),
};
