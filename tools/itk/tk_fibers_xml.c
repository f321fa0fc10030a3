/* tk-fibers' SlicerExecutionModel description (tk-fibers --xml); the flags and defaults
 * are those tk_fibers.cxx parses. */
#include "tk_fibers_xml.h"

/* Slicer writes its temporaries in the first format listed: NRRD keeps vector volumes whole. */
#define IMAGES ".nrrd,.nhdr,.nii.gz,.nii,.mha"

static const tk_xml_param io_params[] = {
    {.kind = TK_XML_IMAGE, .name = "inputSH", .label = "Input SH volume",
     .description = "Spherical-harmonic coefficients (fiber ODF) of each voxel: a 4-D NIfTI with the even-degree "
                    "coefficients on the 4th axis (MRtrix3 dwi2fod, DIPY CSD) or a vector volume (NRRD)",
     .index = 0, .channel = TK_XML_INPUT, .image_type = "vector", .file_extensions = IMAGES},
    {.kind = TK_XML_IMAGE, .name = "outputPeaks", .label = "Output peaks",
     .description = "Fiber directions as MRtrix3 sh2peaks writes them: 3 components per peak, the unit direction "
                    "times its amplitude, sorted by amplitude, NaN where a voxel has fewer peaks; the directions in "
                    "the file's world frame (LPS in NRRD, as Slicer reads them; RAS in NIfTI and .mif)",
     .index = 1, .channel = TK_XML_OUTPUT, .image_type = "vector", .file_extensions = IMAGES},
    {.kind = TK_XML_IMAGE, .name = "mask", .label = "Mask",
     .description = "Only voxels where the mask is non-zero (others NaN)",
     .longflag = "mask", .index = -1, .channel = TK_XML_INPUT, .image_type = "label"},
    {.kind = TK_XML_IMAGE, .name = "amplitudes", .label = "Output amplitudes",
     .description = "Optional: the peak amplitudes, one component per peak",
     .longflag = "amplitudes", .index = -1, .channel = TK_XML_OUTPUT, .image_type = "vector",
     .file_extensions = IMAGES},
#ifdef TK_HAVE_VTK
    /* Slicer loads the .vtp into a model node for the 3D view; the file says its points are
     * RAS (field data SPACE), so it lands on the volume. */
    {.kind = TK_XML_GEOMETRY, .name = "glyphs", .label = "Output glyphs (model)",
     .description = "Optional: the peaks as lines for the 3D view, one per peak centred on its voxel, length by "
                    "amplitude, coloured by direction (point scalars RGB: show them as direct colours)",
     .longflag = "vtp", .index = -1, .channel = TK_XML_OUTPUT, .image_type = "model", .file_extensions = ".vtp"},
#endif
};

static const tk_xml_param peak_params[] = {
    {.kind = TK_XML_INTEGER, .name = "numberOfPeaks", .label = "Peaks per voxel",
     .description = "Largest number of fiber directions kept per voxel", .longflag = "num", .index = -1,
     .default_value = "3", .minimum = "1", .maximum = "64", .step = "1"},
    {.kind = TK_XML_DOUBLE, .name = "threshold", .label = "Amplitude threshold",
     .description = "Keep peaks with amplitude above this value", .longflag = "threshold", .index = -1,
     .default_value = "0"},
    {.kind = TK_XML_DOUBLE, .name = "relativeThreshold", .label = "Relative threshold",
     .description = "Keep peaks of at least this fraction of the voxel's largest", .longflag = "relative-threshold",
     .index = -1, .default_value = "0", .minimum = "0", .maximum = "1", .step = "0.05"},
    {.kind = TK_XML_DOUBLE, .name = "minimumSeparation", .label = "Minimum separation (degrees)",
     .description = "Drop a peak within this angle of a larger one", .longflag = "min-separation", .index = -1,
     .default_value = "0", .minimum = "0", .maximum = "90", .step = "1"},
    {.kind = TK_XML_STRING_ENUMERATION, .name = "basis", .label = "SH basis",
     .description = "tournier: MRtrix3's basis; descoteaux: DIPY's", .longflag = "basis", .index = -1,
     .default_value = "tournier", .elements = "tournier|descoteaux"},
    {.kind = TK_XML_BOOLEAN, .name = "legacy", .label = "Legacy basis",
     .description = "The MRtrix 0.2 / DIPY legacy variant of the basis", .longflag = "legacy", .index = -1,
     .default_value = "false"},
};

#ifdef TK_HAVE_VTK
static const tk_xml_param glyph_params[] = {
    {.kind = TK_XML_DOUBLE, .name = "glyphScale", .label = "Glyph length (mm per unit amplitude)",
     .description = "Length of the glyph lines per unit amplitude; 0: the largest peak spans the smallest voxel "
                    "spacing",
     .longflag = "glyph-scale", .index = -1, .default_value = "0"},
};
#endif

static const tk_xml_param run_params[] = {
    {.kind = TK_XML_STRING_ENUMERATION, .name = "backend", .label = "Backend",
     .description = "auto: the GPU where a usable one is found, else all cores (with a warning); "
                    "omp: all cores; cpu: one core; cuda: the GPU",
     .longflag = "backend", .index = -1,
     .default_value = "auto", .elements = "auto|omp|cpu|cuda"},
    {.kind = TK_XML_INTEGER, .name = "threads", .label = "Threads",
     .description = "Threads of the omp backend (ITK's threader); 0: all cores", .longflag = "threads", .index = -1,
     .default_value = "0", .minimum = "0", .maximum = "4096", .step = "1"},
};

static const tk_xml_group groups[] = {
    {.label = "Input/Output", .description = "Images", .params = io_params, .count = TK_XML_COUNT(io_params)},
    {.label = "Peaks", .description = "Which local maxima count as fibers", .params = peak_params,
     .count = TK_XML_COUNT(peak_params)},
#ifdef TK_HAVE_VTK
    {.label = "Glyphs", .description = "The output model's lines", .advanced = 1, .params = glyph_params,
     .count = TK_XML_COUNT(glyph_params)},
#endif
    {.label = "Computation", .description = "Where it runs", .advanced = 1, .params = run_params,
     .count = TK_XML_COUNT(run_params)},
};

const tk_xml_module tk_fibers_xml = {
    .category = "Diffusion.TensorKernels",
    .title = "Fiber Directions (TensorKernels)",
    .description = "Fiber directions: the local maxima of each voxel's spherical-harmonic fiber ODF, found through "
                   "its equivalent symmetric tensor by SS-HOPM on the CPU or CUDA, in MRtrix3 sh2peaks' layout.",
    .contributor = "TensorKernels developers",
    .acknowledgements = "SS-HOPM after Kolda and Mayo; SH bases after MRtrix3 and DIPY.",
    .groups = groups,
    .count = TK_XML_COUNT(groups),
};
