/* tk-eig's SlicerExecutionModel description (tk-eig --xml); the flags and defaults are those
 * tk_eig.c parses. */
#include "tk_eig_xml.h"

static const tk_xml_param io_params[] = {
    {.kind = TK_XML_FILE, .name = "inputMatrices", .label = "Input matrices",
     .description = "A .npy array of real n x n matrices, shape (..., n, n), float32 or float64, C order",
     .index = 0, .channel = TK_XML_INPUT, .file_extensions = ".npy"},
    {.kind = TK_XML_FILE, .name = "outputEigenvalues", .label = "Output eigenvalues",
     .description = "A .npy array of complex eigenvalues, shape (..., n), each row sorted by real part, then "
                    "imaginary part",
     .index = 1, .channel = TK_XML_OUTPUT, .file_extensions = ".npy"},
    {.kind = TK_XML_FILE, .name = "vectors", .label = "Output eigenvectors",
     .description = "Optional: right eigenvectors, shape (..., n, n), column j for eigenvalue j, unit 2-norm",
     .longflag = "vectors", .index = -1, .channel = TK_XML_OUTPUT, .file_extensions = ".npy"},
    {.kind = TK_XML_FILE, .name = "status", .label = "Output status",
     .description = "Optional: int8 per matrix: 0 converged, 1 not converged, 2 non-finite input",
     .longflag = "status", .index = -1, .channel = TK_XML_OUTPUT, .file_extensions = ".npy"},
};

static const tk_xml_param run_params[] = {
    {.kind = TK_XML_STRING_ENUMERATION, .name = "precision", .label = "Precision",
     .description = "auto: the input's; single or double otherwise", .longflag = "precision", .index = -1,
     .default_value = "auto", .elements = "auto|single|double"},
    {.kind = TK_XML_BOOLEAN, .name = "noBalance", .label = "No balancing",
     .description = "Skip the balancing LAPACK does before the QR iteration", .longflag = "no-balance", .index = -1,
     .default_value = "false"},
    {.kind = TK_XML_STRING_ENUMERATION, .name = "backend", .label = "Backend",
     .description = "auto: the GPU where a usable one is found, else all cores (with a warning); "
                    "omp: all cores; cpu: one core; cuda: the GPU",
     .longflag = "backend", .index = -1,
     .default_value = "auto", .elements = "auto|omp|cpu|cuda"},
};

static const tk_xml_group groups[] = {
    {.label = "Input/Output", .description = "Files", .params = io_params, .count = TK_XML_COUNT(io_params)},
    {.label = "Computation", .description = "How and where it runs", .advanced = 1, .params = run_params,
     .count = TK_XML_COUNT(run_params)},
};

const tk_xml_module tk_eig_xml = {
    .category = "Utilities.TensorKernels",
    .title = "Batched Eigenvalues (TensorKernels)",
    .description = "Eigenvalues (and optionally right eigenvectors) of every small nonsymmetric matrix of a batch: "
                   "balancing, Householder Hessenberg reduction and implicit double-shift QR, on the CPU or CUDA.",
    .contributor = "TensorKernels developers",
    .acknowledgements = "Batched Hessenberg QR after the seed paper on GPU eigenvalues of many small matrices.",
    .groups = groups,
    .count = TK_XML_COUNT(groups),
};
