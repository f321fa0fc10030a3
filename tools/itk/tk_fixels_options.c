/* tk-fixels' option table: its parser, --help and Slicer description (tk-fixels --xml).
 * The options are fod2fixel's, spelled with dashes. */
#include "tk_fixels_options.h"

#include <string.h>

#include "cli.h"

#define V(member) offsetof(tk_fixels_values, member)

#define IMAGES ".nii.gz,.nii,.mif,.nrrd,.mha"

static const tk_opt_choice bases[] = {{"tournier", 0, 0}, {"descoteaux", 1, 0}, {NULL, 0, 0}};
static const tk_opt_choice direction_sets[] = {{"1281", 1281, 0}, {"5121", 5121, 0}, {NULL, 0, 0}};

static const tk_option io[] = {
    {.position = 1, .value_name = "FOD", .kind = TK_OPT_TEXT,
     .xml = {.kind = TK_XML_IMAGE, .name = "inputFOD", .label = "Input FOD",
             .description = "Spherical-harmonic coefficients (fiber ODF) of each voxel (MRtrix3 dwi2fod, DIPY CSD)",
             .channel = TK_XML_INPUT, .image_type = "vector", .file_extensions = IMAGES}},
    {.position = 2, .value_name = "FIXEL_DIR", .kind = TK_OPT_TEXT,
     .xml = {.kind = TK_XML_DIRECTORY, .name = "fixelDirectory", .label = "Output fixel directory",
             .description = "The fixel directory MRtrix3 reads (index, directions, one file per metric)",
             .channel = TK_XML_OUTPUT}},
    {.name = "afd", .value_name = "NAME", .kind = TK_OPT_TEXT, .offset = V(afd),
     .help = "write each fixel's integral (apparent fiber density) as FIXEL_DIR/NAME\n(.mif or .nii by its name)"},
    {.name = "peak-amp", .value_name = "NAME", .kind = TK_OPT_TEXT, .offset = V(peak_amp),
     .help = "write each fixel's peak amplitude as FIXEL_DIR/NAME"},
    {.name = "disp", .value_name = "NAME", .kind = TK_OPT_TEXT, .offset = V(disp),
     .help = "write each fixel's dispersion (integral / peak amplitude) as FIXEL_DIR/NAME"},
    {.name = "lobes", .value_name = "NAME", .kind = TK_OPT_TEXT, .offset = V(lobes),
     .help = "write each fixel's lobe mask as FIXEL_DIR/NAME: N x D x 1 UInt8, 1 where\n"
             "sphere direction d belongs to the fixel (D = --directions, the directions in\n"
             "FIXEL_DIR/lobe_directions.txt, one 'x y z' a row, as sh2amp reads them)"},
    {.name = "nii", .kind = TK_OPT_FLAG, .offset = V(nii),
     .help = "index and directions as .nii (default .mif)"},
    {.name = "mask", .value_name = "MASK", .kind = TK_OPT_TEXT, .offset = V(mask),
     .help = "only voxels where MASK is non-zero",
     .xml = {.kind = TK_XML_IMAGE, .name = "mask", .label = "Mask", .description = "Only voxels where the mask is non-zero",
             .channel = TK_XML_INPUT, .image_type = "label"}},
    {.name = "count-map", .value_name = "IMAGE", .kind = TK_OPT_TEXT, .offset = V(count_map),
     .help = "also write the fixels per voxel as a scalar volume (any volume format)",
     .xml = {.kind = TK_XML_IMAGE, .name = "countMap", .label = "Output fixel count",
             .description = "Optional: the number of fixels in each voxel", .channel = TK_XML_OUTPUT,
             .image_type = "scalar", .file_extensions = IMAGES}},
    {.name = "afd-map", .value_name = "IMAGE", .kind = TK_OPT_TEXT, .offset = V(afd_map),
     .help = "also write each voxel's total AFD (the sum over its fixels) as a scalar volume",
     .xml = {.kind = TK_XML_IMAGE, .name = "afdMap", .label = "Output total AFD",
             .description = "Optional: the sum of each voxel's fixel AFDs", .channel = TK_XML_OUTPUT,
             .image_type = "scalar", .file_extensions = IMAGES}},
    {.name = "vtp",
#ifdef TK_HAVE_VTK
     .value_name = "FIXELS.vtp",
     .xml = {.kind = TK_XML_GEOMETRY, .name = "glyphs", .label = "Output fixel glyphs (model)",
             .description = "Optional: each fixel as a line through its voxel centre along its direction, length by AFD, "
                            "coloured by direction",
             .channel = TK_XML_OUTPUT, .image_type = "model", .file_extensions = ".vtp"},
     .help = "also write the fixels as VTK lines (ParaView, Slicer): one per fixel,\ncentred on its voxel "
             "(world RAS, mm), length by AFD, RGB by direction",
#else
     .value_name = "FILE",
     .help = "fixel glyphs: not in this build (built without VTK)",
#endif
     .kind = TK_OPT_TEXT, .offset = V(vtp)},
};

static const tk_option fmls[] = {
    {.name = "fmls-integral", .value_name = "A", .kind = TK_OPT_DOUBLE, .min = 0, .max = 1e30, .offset = V(integral),
     .help = "drop lobes whose integral is below A (default 0)"},
    {.name = "fmls-peak-value", .value_name = "A", .kind = TK_OPT_DOUBLE, .min = 0, .max = 1e30,
     .offset = V(peak_value), .help = "drop lobes whose peak amplitude is below A (default 0.1)",
     .xml = {.name = "peakValue", .label = "Peak value threshold",
             .description = "Drop lobes whose peak amplitude is below this (fod2fixel -fmls_peak_value)",
             .default_value = "0.1", .minimum = "0", .maximum = "10", .step = "0.01"}},
    {.name = "fmls-no-thresholds", .kind = TK_OPT_FLAG, .offset = V(no_thresholds),
     .help = "keep every positive lobe (both thresholds 0)"},
    {.name = "fmls-lobe-merge-ratio", .value_name = "R", .kind = TK_OPT_DOUBLE, .min = 0, .max = 1,
     .offset = V(merge_ratio),
     .help = "merge two lobes where the amplitude between them over the smaller\npeak exceeds R (default 1: never)"},
    {.name = "maxnum", .value_name = "N", .kind = TK_OPT_LONG, .min = 1, .max = 64, .offset = V(maxnum),
     .help = "at most N fixels per voxel, the first ones (default: up to 64)",
     .xml = {.name = "maxnum", .label = "Most fixels per voxel",
             .description = "Keep at most this many fixels per voxel, the first ones (fod2fixel -maxnum)",
             .default_value = "64", .minimum = "1", .maximum = "64", .step = "1"}},
    {.name = "directions", .value_name = "1281|5121", .kind = TK_OPT_CHOICE, .choices = direction_sets,
     .offset = V(directions),
     .help = "the sphere's direction set: fod2fixel's 1281 (default) or the next\n"
             "tessellation's 5121 (~2 degrees apart: finer lobe borders, AFD nearer the\n"
             "exact integral, ~2.5x the time)",
     .xml = {.name = "directions", .label = "Sphere directions",
             .description = "1281: fod2fixel's direction set; 5121: the next tessellation (finer lobe borders, "
                            "~2.5x the time)",
             .default_value = "1281"}},
    {.name = "dirpeak", .kind = TK_OPT_FLAG, .offset = V(dirpeak),
     .help = "fixel direction: the lobe's peak (default: its weighted mean direction)",
     .xml = {.name = "dirpeak", .label = "Peak directions",
             .description = "Each fixel's direction is its lobe's peak (default: the weighted mean direction)",
             .default_value = "false"}},
    {.name = "basis", .value_name = "tournier|descoteaux", .kind = TK_OPT_CHOICE, .choices = bases,
     .offset = V(descoteaux), .help = "MRtrix3's (default) or DIPY's SH basis",
     .xml = {.name = "basis", .label = "SH basis", .description = "tournier: MRtrix3's basis; descoteaux: DIPY's",
             .default_value = "tournier"}},
    {.name = "legacy", .kind = TK_OPT_FLAG, .offset = V(legacy), .help = "MRtrix 0.2 / DIPY legacy variant of the basis",
     .xml = {.name = "legacy", .label = "Legacy basis", .description = "The MRtrix 0.2 / DIPY legacy variant of the basis",
             .default_value = "false"}},
};

static const tk_option_group groups[] = {
    {.title = "options", .label = "Input/Output", .description = "Images", .options = io, .count = TK_OPT_COUNT(io)},
    {.title = "segmentation options", .label = "Segmentation", .description = "fod2fixel's FMLS parameters",
     .options = fmls, .count = TK_OPT_COUNT(fmls)},
    TK_GPUS_GROUP(tk_fixels_values, gpus),
    TK_STANDARD_GROUP(tk_fixels_values, std),
};

static const tk_xml_module slicer = TK_XML_TOOL_MODULE(
    "Diffusion", "Fixels",
    "Fixels: each voxel's fiber ODF split into lobes by FMLS as MRtrix3's fod2fixel does, with each lobe's "
    "integral (AFD), peak and direction, written as a fixel directory.",
    "FMLS after Smith et al. 2013 (MRtrix3's fod2fixel).");

const tk_command tk_fixels_command = {
    .prog = "tk-fixels",
    .usage = "tk-fixels FOD FIXEL_DIR [options]\n"
             "       tk-fixels --xml    the 3D Slicer CLI module description (SlicerExecutionModel)",
    .description =
        "Fixels of an SH fiber ODF as MRtrix3's fod2fixel makes them: each voxel's FOD sampled on\n"
        "1,281 directions (--directions 5121: 5,121) and split into lobes (FMLS), each lobe's\n"
        "integral (AFD), peak amplitude (Newton's exact maximum) and direction written as a fixel\n"
        "directory: index and directions (.mif, or .nii with --nii) and one file per metric asked\n"
        "for, in voxel order.\n"
        "FIXEL_DIR must not exist (--force replaces it); every file appears at once or none.\n",
    .epilog = TK_GPUS_SHARE_NOTE
              "--backend auto runs omp here (no warning); --backend cuda asks for the GPU\n"
              "(Documentation/fixels.md says why).\n",
    .groups = groups,
    .count = TK_OPT_COUNT(groups),
    .xml = &slicer,
    .max_positional = 2,
    .positional_hint = "give FOD and FIXEL_DIR once",
};

void tk_fixels_values_init(tk_fixels_values *v)
{
    memset(v, 0, sizeof *v);
    v->peak_value = 0.1;
    v->merge_ratio = 1.0;
    v->directions = 1281;
}
