/* tk-fibers' option table: its parser, --help and Slicer description (tk-fibers --xml). */
#include "tk_fibers_options.h"

#include <math.h>
#include <string.h>

#include "cli.h"

#define V(member) offsetof(tk_fibers_values, member)

/* Slicer writes its temporaries in the first format listed: NRRD keeps vector volumes whole. */
#define IMAGES ".nrrd,.nhdr,.nii.gz,.nii,.mha"

/* --threshold A|none: 'none' (or -inf) keeps every maximum. */
static int parse_threshold(const char *prog, const char *flag, const char *v, void *dest)
{
    if (!strcmp(v, "none") || !strcmp(v, "-inf")) {
        *(double *)dest = -INFINITY;
        return 1;
    }
    return tk_cli_parse_double(prog, flag, v, -1e300, 1e300, (double *)dest);
}

static const tk_opt_choice bases[] = {{"tournier", 0, 0}, {"descoteaux", 1, 0}, {NULL, 0, 0}};

static const tk_option images[] = {
    {.position = 1, .value_name = "INPUT_SH", .kind = TK_OPT_TEXT,
     .xml = {.kind = TK_XML_IMAGE, .name = "inputSH", .label = "Input SH volume",
             .description = "Spherical-harmonic coefficients (fiber ODF) of each voxel: a 4-D NIfTI with the "
                            "even-degree coefficients on the 4th axis (MRtrix3 dwi2fod, DIPY CSD) or a vector volume "
                            "(NRRD)",
             .channel = TK_XML_INPUT, .image_type = "vector", .file_extensions = IMAGES}},
    {.position = 2, .value_name = "OUTPUT_PEAKS", .kind = TK_OPT_TEXT,
     .xml = {.kind = TK_XML_IMAGE, .name = "outputPeaks", .label = "Output peaks",
             .description = "Fiber directions as MRtrix3 sh2peaks writes them: 3 components per peak, the unit "
                            "direction times its amplitude, sorted by amplitude, NaN where a voxel has fewer peaks; the "
                            "directions in the file's world frame (LPS in NRRD, as Slicer reads them; RAS in NIfTI and "
                            ".mif)",
             .channel = TK_XML_OUTPUT, .image_type = "vector", .file_extensions = IMAGES}},
    {.name = "mask", .value_name = "MASK", .kind = TK_OPT_TEXT, .offset = V(mask),
     .help = "only voxels where MASK is non-zero (others NaN)",
     .xml = {.kind = TK_XML_IMAGE, .name = "mask", .label = "Mask",
             .description = "Only voxels where the mask is non-zero (others NaN)", .channel = TK_XML_INPUT,
             .image_type = "label"}},
    {.name = "amplitudes", .value_name = "AMP", .kind = TK_OPT_TEXT, .offset = V(amplitudes),
     .help = "also write the amplitudes, one volume per peak",
     .xml = {.kind = TK_XML_IMAGE, .name = "amplitudes", .label = "Output amplitudes",
             .description = "Optional: the peak amplitudes, one component per peak", .channel = TK_XML_OUTPUT,
             .image_type = "vector", .file_extensions = IMAGES}},
};

static const tk_option peaks[] = {
    {.name = "num", .value_name = "N", .kind = TK_OPT_LONG, .min = 1, .max = 64, .offset = V(num),
     .help = "peaks per voxel (default 3)",
     .xml = {.name = "numberOfPeaks", .label = "Peaks per voxel",
             .description = "Largest number of fiber directions kept per voxel", .default_value = "3",
             .minimum = "1", .maximum = "64", .step = "1"}},
    {.name = "threshold", .value_name = "A", .kind = TK_OPT_CUSTOM, .parse = parse_threshold, .offset = V(threshold),
     .help = "keep peaks with amplitude > A, any A, negative included; 'none' (or\n-inf) keeps every maximum, negative "
             "lobes too, as sh2peaks does by\ndefault (default 0: positive peaks only, unlike sh2peaks)",
     .xml = {.kind = TK_XML_DOUBLE, .name = "threshold", .label = "Amplitude threshold",
             .description = "Keep peaks with amplitude above this value", .default_value = "0"}},
    {.name = "relative-threshold", .value_name = "R", .kind = TK_OPT_DOUBLE, .min = 0, .max = 1, .offset = V(relative),
     .help = "keep peaks >= R times the voxel's largest (default 0)",
     .xml = {.name = "relativeThreshold", .label = "Relative threshold",
             .description = "Keep peaks of at least this fraction of the voxel's largest", .default_value = "0",
             .minimum = "0", .maximum = "1", .step = "0.05"}},
    {.name = "min-separation", .value_name = "DEG", .kind = TK_OPT_DOUBLE, .min = 0, .max = 90,
     .offset = V(separation), .help = "drop a peak within DEG degrees of a larger one (default 0)",
     .xml = {.name = "minimumSeparation", .label = "Minimum separation (degrees)",
             .description = "Drop a peak within this angle of a larger one", .default_value = "0", .minimum = "0",
             .maximum = "90", .step = "1"}},
    {.name = "basis", .value_name = "tournier|descoteaux", .kind = TK_OPT_CHOICE, .choices = bases,
     .offset = V(descoteaux), .help = "MRtrix3's (default) or DIPY's SH basis",
     .xml = {.name = "basis", .label = "SH basis", .description = "tournier: MRtrix3's basis; descoteaux: DIPY's",
             .default_value = "tournier"}},
    {.name = "legacy", .kind = TK_OPT_FLAG, .offset = V(legacy), .help = "MRtrix 0.2 / DIPY legacy variant of the basis",
     .xml = {.name = "legacy", .label = "Legacy basis", .description = "The MRtrix 0.2 / DIPY legacy variant of the basis",
             .default_value = "false"}},
};

/* The glyph options: parsed in every build (a build without VTK refuses them clearly); in
 * --help and --xml where this build has VTK (scripts read --help to tell). */
#ifdef TK_HAVE_VTK
#define GLYPH_HELP(text) text
#else
#define GLYPH_HELP(text) "fiber glyphs: not in this build (built without VTK)"
#endif
static const tk_option glyphs[] = {
    {.name = "vtp",
#ifdef TK_HAVE_VTK
     .value_name = "FIBERS.vtp",
     /* Slicer loads the .vtp into a model node for the 3D view; the file says its points are
      * RAS (field data SPACE), so it lands on the volume. */
     .xml = {.kind = TK_XML_GEOMETRY, .name = "glyphs", .label = "Output glyphs (model)",
             .description = "Optional: the peaks as lines for the 3D view, one per peak centred on its voxel, length "
                            "by amplitude, coloured by direction (point scalars RGB: show them as direct colours)",
             .channel = TK_XML_OUTPUT, .image_type = "model", .file_extensions = ".vtp"},
#else
     .value_name = "FILE",
#endif
     .kind = TK_OPT_TEXT, .offset = V(vtp),
     .help = GLYPH_HELP("also write the peaks as VTK lines (ParaView, Slicer): one per peak,\ncentred on its voxel "
                        "(world RAS, mm), length by amplitude, RGB\n|x|,|y|,|z| by direction")},
    {.name = "png", .value_name = "SLICE.png", .kind = TK_OPT_TEXT, .offset = V(png),
     .help = GLYPH_HELP("also render an axial slice of those lines over the largest amplitude\n(offscreen; needs an X "
                        "display: run under xvfb-run -a without one)")},
    {.name = "slice", .value_name = "K", .kind = TK_OPT_LONG, .min = 0, .max = (double)(1L << 30), .offset = V(slice),
     .help = GLYPH_HELP("the axial slice for --png (default: the middle one)")},
    {.name = "glyph-scale", .value_name = "S", .kind = TK_OPT_DOUBLE, .min = 0, .max = 1e30, .offset = V(glyph_scale),
     .help = GLYPH_HELP("line length in mm per unit amplitude (default 0: the largest peak\nspans the smallest voxel "
                        "spacing)"),
#ifdef TK_HAVE_VTK
     /* 0: automatic (Slicer passes it) */
     .xml = {.name = "glyphScale", .label = "Glyph length (mm per unit amplitude)",
             .description = "Length of the glyph lines per unit amplitude; 0: the largest peak spans the smallest "
                            "voxel spacing",
             .default_value = "0"}
#endif
    },
};

static const tk_option_group groups[] = {
    {.title = "options", .label = "Input/Output", .description = "Images", .options = images,
     .count = TK_OPT_COUNT(images)},
    {.title = "peak options", .label = "Peaks", .description = "Which local maxima count as fibers", .options = peaks,
     .count = TK_OPT_COUNT(peaks)},
    {.title = "glyph options", .label = "Glyphs", .description = "The output model's lines", .advanced = 1,
     .options = glyphs, .count = TK_OPT_COUNT(glyphs)},
    TK_GPUS_GROUP(tk_fibers_values, gpus),
    TK_STANDARD_GROUP(tk_fibers_values, std),
};

static const tk_xml_module slicer = TK_XML_TOOL_MODULE(
    "Diffusion", "Fiber Directions",
    "Fiber directions: the local maxima of each voxel's spherical-harmonic fiber ODF, found through "
    "its equivalent symmetric tensor by SS-HOPM on the CPU or CUDA, in MRtrix3 sh2peaks' layout.",
    "SS-HOPM after Kolda and Mayo; SH bases after MRtrix3 and DIPY.");

const tk_command tk_fibers_command = {
    .prog = "tk-fibers",
    .usage = "tk-fibers INPUT_SH OUTPUT_PEAKS [options]\n"
             "       tk-fibers --xml    the 3D Slicer CLI module description (SlicerExecutionModel)",
    .description =
        "The local maxima (fiber directions) of each voxel's spherical-harmonic function, as\n"
        "MRtrix3's sh2peaks writes them: 3 volumes per peak, the unit direction (world RAS) times\n"
        "the peak's amplitude, sorted by amplitude, NaN where a voxel has fewer peaks.\n"
        "INPUT_SH: 4-D NIfTI (.nii, .nii.gz) or MRtrix3 image (.mif, .mif.gz, .mih) with the\n"
        "even-degree SH coefficients on the 4th axis (MRtrix3's dwi2fod, DIPY's CSD), or a 3-D\n"
        "vector image (NRRD, MHA); lmax follows from the number of coefficients (6, 15, 28, 45,\n"
        "...).  NIfTI orientation as nibabel and MRtrix3 read it: the sform where sform_code > 0,\n"
        "else the qform; NIfTI outputs keep the input's qform and sform with their codes.\n"
        "OUTPUT_PEAKS: .nii, .nii.gz, .mif, .mif.gz (RAS vectors, 4-D), .nrrd, .nhdr, .mha, .mhd\n"
        "(a vector image; its vectors in the file's LPS space, as NRRD readers such as 3D Slicer\n"
        "take them).\n",
    .epilog = TK_GPUS_SHARE_NOTE
              "--threads: ITK's threader runs the omp backend; --device picks the GPU that --backend\n"
              "auto checks.\n",
    .groups = groups,
    .count = TK_OPT_COUNT(groups),
    .xml = &slicer,
    .max_positional = 2,
    .positional_hint = "give INPUT_SH and OUTPUT_PEAKS once",
};

void tk_fibers_values_init(tk_fibers_values *v)
{
    memset(v, 0, sizeof *v);
    v->num = 3;
    v->slice = -1;
}
