/* tk-track's option table: its parser, --help and Slicer description (tk-track --xml). */
#include "tk_track_options.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define V(member) offsetof(tk_track_values, member)

/* Slicer writes its temporaries in the first format listed: NRRD keeps vector volumes whole. */
#define IMAGES ".nrrd,.nhdr,.nii.gz,.nii,.mha"

/* --include ROI, once per region (tckgen -include takes several). */
static int parse_include(const char *prog, const char *flag, const char *v, void *dest)
{
    tk_track_paths *p = (tk_track_paths *)dest;
    if (p->count >= TK_TRACK_MAX_INCLUDE) {
        tk_cli_error(prog, "%s: at most %d include regions; merge some of them into one mask", flag,
                     TK_TRACK_MAX_INCLUDE);
        return 0;
    }
    p->path[p->count++] = v;
    return 1;
}

/* --seed-direction X,Y,Z: three finite numbers, not all zero (a direction, normalised later). */
static int parse_direction(const char *prog, const char *flag, const char *v, void *dest)
{
    double d[3];
    const char *s = v;
    for (int i = 0; i < 3; ++i) {
        char *end;
        d[i] = strtod(s, &end);
        if (end == s || !isfinite(d[i]) || (i < 2 && *end != ',') || (i == 2 && *end != '\0')) {
            tk_cli_error(prog, "%s '%s': give a direction as three numbers X,Y,Z (world RAS), e.g. 0,0,1", flag, v);
            return 0;
        }
        s = end + 1;
    }
    if (d[0] == 0 && d[1] == 0 && d[2] == 0) {
        tk_cli_error(prog, "%s 0,0,0 is no direction; give a nonzero X,Y,Z (world RAS), e.g. 0,0,1", flag);
        return 0;
    }
    memcpy(dest, d, sizeof d);
    return 1;
}

static const tk_opt_choice algorithms[] = {
    {"sd_stream", 0, 0}, {"ifod1", 1, 0}, {"SD_STREAM", 0, 1}, {"iFOD1", 1, 1}, {NULL, 0, 0}};
static const tk_opt_choice bases[] = {{"tournier", 0, 0}, {"descoteaux", 1, 0}, {NULL, 0, 0}};

static const tk_option images[] = {
    {.position = 1, .value_name = "FOD", .kind = TK_OPT_TEXT,
     .xml = {.kind = TK_XML_IMAGE, .name = "inputFOD", .label = "Input FOD (SH volume)",
             .description = "Spherical-harmonic coefficients of the fiber ODF in each voxel: a 4-D NIfTI or .mif "
                            "with the even-degree coefficients on the 4th axis (MRtrix3 dwi2fod) or a vector volume "
                            "(NRRD)",
             .channel = TK_XML_INPUT, .image_type = "vector", .file_extensions = IMAGES}},
    {.position = 2, .value_name = "OUTPUT", .kind = TK_OPT_TEXT,
     .xml = {.kind = TK_XML_GEOMETRY, .name = "outputTracks", .label = "Output streamlines",
             .description = "The streamlines, format by extension: .vtp (Slicer's fiber bundle), .vtk, .tck, .trk, "
                            ".trx",
             .channel = TK_XML_OUTPUT, .image_type = "fiberbundle", .file_extensions = ".vtp,.vtk,.tck,.trk,.trx"}},
    {.name = "seed-mask", .value_name = "MASK", .kind = TK_OPT_TEXT, .offset = V(seed_mask),
     .help = "seed in the voxels where MASK is non-zero: --seeds random points in\neach (tckgen -seed_random_per_voxel)",
     .xml = {.kind = TK_XML_IMAGE, .name = "seedMask", .label = "Seed mask",
             .description = "Seeds are drawn in the voxels where this mask is non-zero", .channel = TK_XML_INPUT,
             .image_type = "label"}},
    {.name = "seeds-file", .value_name = "F", .kind = TK_OPT_TEXT, .offset = V(seeds_file),
     .help = "seed at the points of a text file, world RAS mm: 'x y z' a line, or\ntckgen -output_seeds' "
             "'index,seed_index,x,y,z,' rows ('#' lines skipped)",
     .xml = {.kind = TK_XML_FILE, .name = "seedsFile", .label = "Seed points file",
             .description = "Seed points in world RAS mm, one 'x y z' per line (or tckgen -output_seeds' file)",
             .channel = TK_XML_INPUT, .file_extensions = ".txt,.csv"}},
    {.name = "mask", .value_name = "MASK", .kind = TK_OPT_TEXT, .offset = V(mask),
     .help = "stop where a streamline leaves MASK (tckgen -mask)",
     .xml = {.kind = TK_XML_IMAGE, .name = "mask", .label = "Stopping mask",
             .description = "Streamlines end where they leave this mask", .channel = TK_XML_INPUT,
             .image_type = "label"}},
    {.name = "include", .value_name = "ROI", .kind = TK_OPT_CUSTOM, .parse = parse_include, .offset = V(include),
     .help = "keep only streamlines that visit ROI (a mask; repeat for several:\nall must be visited; tckgen -include)",
     .xml = {.kind = TK_XML_IMAGE, .name = "include", .label = "Include region",
             .description = "Only streamlines that visit this region are kept", .channel = TK_XML_INPUT,
             .image_type = "label"}},
    {.name = "exclude", .value_name = "ROI", .kind = TK_OPT_TEXT, .offset = V(exclude),
     .help = "drop streamlines that enter ROI (a mask; tckgen -exclude)",
     .xml = {.kind = TK_XML_IMAGE, .name = "exclude", .label = "Exclude region",
             .description = "Streamlines that enter this region are dropped", .channel = TK_XML_INPUT,
             .image_type = "label"}},
    /* No Slicer parameter: Slicer shows the bundle in its 3D view (the .vtp). */
    {.name = "png", .value_name = "BUNDLE.png", .kind = TK_OPT_TEXT, .offset = V(png),
#ifdef TK_HAVE_VTK
     .help = "also render the streamlines offscreen: axial view from below, R on the\nleft, colours by "
             "tangent as in the .vtp; every k-th kept streamline, at\nmost 20000 (and 1 million points); needs an X "
             "display: run under\nxvfb-run -a without one"},
#else
     .help = "a picture of the streamlines: not in this build (built without VTK)"},
#endif
};

static const tk_option tracking[] = {
    {.name = "algorithm", .value_name = "sd_stream|ifod1", .kind = TK_OPT_CHOICE, .choices = algorithms,
     .offset = V(algorithm), .help = "deterministic SD_STREAM (default) or probabilistic iFOD1, as MRtrix3's",
     .xml = {.name = "algorithm", .label = "Algorithm",
             .description = "sd_stream: the FOD peak nearest the current direction; ifod1: a direction drawn from "
                            "the FOD within the angle cone",
             .default_value = "sd_stream"}},
    {.name = "seeds", .value_name = "N", .kind = TK_OPT_LONG, .min = 1, .max = 1000000, .offset = V(seeds),
     .help = "random seeds per voxel of --seed-mask (default 1)",
     .xml = {.name = "seedsPerVoxel", .label = "Seeds per voxel",
             .description = "Random seeds in each voxel of the seed mask", .default_value = "1", .minimum = "1",
             .maximum = "1000", .step = "1"}},
    {.name = "select", .value_name = "K", .kind = TK_OPT_LONG, .min = 0, .max = 1e12, .offset = V(select),
     .help = "stop once K streamlines are kept (tckgen -select); with --seed-mask,\nrounds of --seeds per voxel "
             "(at least 4096 seeds a round) are drawn\nuntil then or until 1000 K seeds (tckgen's -seeds default); "
             "0\n(default): every seed once",
     .xml = {.name = "select", .label = "Streamlines to keep",
             .description = "Stop once this many streamlines are kept; 0: track every seed once",
             .default_value = "0", .minimum = "0", .maximum = "10000000", .step = "1000"}},
    {.name = "step", .value_name = "MM", .kind = TK_OPT_DOUBLE, .min = 0, .max = 1e6, .offset = V(step),
     .help = "step length (default 0: 0.1 voxel, MRtrix3's)",
     .xml = {.name = "step", .label = "Step (mm)", .description = "Step length; 0: 0.1 voxel (MRtrix3's default)",
             .default_value = "0", .minimum = "0", .maximum = "10", .step = "0.05"}},
    {.name = "angle", .value_name = "DEG", .kind = TK_OPT_DOUBLE, .min = 0, .max = 90, .offset = V(angle),
     .help = "largest turn per step (default 0: 60 for sd_stream, 15 for ifod1)",
     .xml = {.name = "angle", .label = "Maximum angle (degrees)",
             .description = "Largest turn per step; 0: MRtrix3's default (60 sd_stream, 15 ifod1)",
             .default_value = "0", .minimum = "0", .maximum = "90", .step = "1"}},
    {.name = "cutoff", .value_name = "A", .kind = TK_OPT_DOUBLE, .min = 0, .max = 1e30, .offset = V(cutoff),
     .help = "FOD amplitude where tracking stops, also the seeds' (default 0.1)",
     .xml = {.name = "cutoff", .label = "FOD cutoff", .description = "FOD amplitude below which tracking stops",
             .default_value = "0.1", .minimum = "0", .maximum = "10", .step = "0.01"}},
    {.name = "min-length", .value_name = "MM", .kind = TK_OPT_DOUBLE, .min = 0, .max = 1e9, .offset = V(min_length),
     .help = "drop shorter streamlines (default 0: 5 voxels, MRtrix3's)",
     .xml = {.name = "minLength", .label = "Minimum length (mm)",
             .description = "Shorter streamlines are dropped; 0: 5 voxels (MRtrix3's default)", .default_value = "0",
             .minimum = "0", .maximum = "1000", .step = "1"}},
    {.name = "max-length", .value_name = "MM", .kind = TK_OPT_DOUBLE, .min = 0, .max = 1e9, .offset = V(max_length),
     .help = "cut longer streamlines (default 0: 100 voxels, MRtrix3's)",
     .xml = {.name = "maxLength", .label = "Maximum length (mm)",
             .description = "Longer streamlines are cut; 0: 100 voxels (MRtrix3's default)", .default_value = "0",
             .minimum = "0", .maximum = "10000", .step = "10"}},
    {.name = "power", .value_name = "P", .kind = TK_OPT_DOUBLE, .min = 0, .max = 1e3, .offset = V(power),
     .help = "ifod1: sample the FOD raised to this power (tckgen -power; default\n0: 1)",
     .xml = {.name = "power", .label = "FOD power (iFOD1)",
             .description = "iFOD1 samples the FOD raised to this power; 0: 1 (MRtrix3's default)",
             .default_value = "0", .minimum = "0", .maximum = "10", .step = "0.1"}},
    {.name = "trials", .value_name = "N", .kind = TK_OPT_INT, .min = 0, .max = 1048576, .offset = V(trials),
     .help = "ifod1: directions drawn per step before the streamline ends\n(tckgen -trials; default 0: 1000)",
     .xml = {.name = "trials", .label = "Trials per step (iFOD1)",
             .description = "iFOD1 draws at most this many directions a step; 0: 1000 (MRtrix3's default)",
             .default_value = "0", .minimum = "0", .maximum = "100000", .step = "100"}},
    {.name = "seed-direction", .value_name = "X,Y,Z", .kind = TK_OPT_CUSTOM, .parse = parse_direction,
     .offset = V(seed_direction),
     .help = "the first direction at every seed, world RAS (tckgen -seed_direction;\ndefault: random)",
     .xml = {.kind = TK_XML_STRING, .name = "seedDirection", .label = "Seed direction",
             .description = "X,Y,Z (world RAS): the first direction at every seed; empty: random"}},
    {.name = "unidirectional", .kind = TK_OPT_FLAG, .offset = V(unidirectional),
     .help = "track from each seed along its first direction only\n(tckgen -seed_unidirectional)",
     .xml = {.name = "unidirectional", .label = "Unidirectional",
             .description = "Track from each seed along its first direction only", .default_value = "false"}},
    {.name = "seed", .value_name = "S", .kind = TK_OPT_SEED, .offset = V(seed),
     .help = "the random numbers' key (default 0): the same S, the same output,\nwhatever the threads",
     .xml = {.kind = TK_XML_INTEGER, .name = "randomSeed", .label = "Random seed",
             .description = "Key of the random numbers: the same key gives the same streamlines",
             .default_value = "0"}},
    {.name = "basis", .value_name = "tournier|descoteaux", .kind = TK_OPT_CHOICE, .choices = bases,
     .offset = V(descoteaux), .help = "MRtrix3's (default) or DIPY's SH basis",
     .xml = {.name = "basis", .label = "SH basis", .description = "tournier: MRtrix3's basis; descoteaux: DIPY's",
             .default_value = "tournier"}},
    {.name = "legacy", .kind = TK_OPT_FLAG, .offset = V(legacy), .help = "MRtrix 0.2 / DIPY legacy variant of the basis",
     .xml = {.name = "legacy", .label = "Legacy basis", .description = "The MRtrix 0.2 / DIPY legacy variant of the basis",
             .default_value = "false"}},
};

static const tk_option_group groups[] = {
    {.title = "options", .label = "Input/Output", .description = "Images, seeds and regions", .options = images,
     .count = TK_OPT_COUNT(images)},
    {.title = "tracking options", .label = "Tracking", .description = "MRtrix3 tckgen's parameters",
     .options = tracking, .count = TK_OPT_COUNT(tracking)},
    TK_GPUS_GROUP(tk_track_values, gpus),
    TK_STANDARD_GROUP(tk_track_values, std),
};

static const tk_xml_module slicer = {
    .category = "Diffusion.TensorKernels",
    .title = "Tractography (TensorKernels)",
    .description = "Streamline tractography on a spherical-harmonic fiber ODF: MRtrix3's SD_STREAM and iFOD1, "
                   "seeded in a mask or at listed points, written as a fiber bundle.",
    .contributor = "TensorKernels developers",
    .acknowledgements = "SD_STREAM and iFOD1 as MRtrix3 defines them (Tournier et al.).",
};

const tk_command tk_track_command = {
    .prog = "tk-track",
    .usage = "tk-track FOD OUTPUT (--seed-mask MASK [--seeds N] | --seeds-file F) [options]\n"
             "       tk-track --xml    the 3D Slicer CLI module description (SlicerExecutionModel)",
    .description =
        "Streamlines through a fiber ODF, as MRtrix3's tckgen tracks them (SD_STREAM, iFOD1).\n"
        "FOD: the SH volume as tk-fibers reads it (4-D NIfTI, .mif, or a NRRD/MHA vector image;\n"
        "NIfTI orientation by the sform, else the qform, as MRtrix3).  Seeds: --seed-mask (with\n"
        "--seeds per voxel) or --seeds-file, one of the two, as tckgen needs a seed option.\n"
        "Every mask lies on the FOD's grid.  Lengths and the angle: 0 gives MRtrix3's default\n"
        "for the algorithm and the voxel size.\n"
        "OUTPUT by its extension: .tck (MRtrix3), .trk (TrackVis), .trx, .vtp or .vtk (VTK,\n"
        "LPS as 3D Slicer writes them); written whole or not at all.\n",
    .epilog = "--gpus: each GPU tracks a contiguous share of every chunk of seeds; the output is one\n"
              "GPU's, streamline for streamline and in the same order.\n"
              "Exit status: 0 done, 1 failed work (bad data, I/O), 2 bad command line.\n"
              "--backend: auto (the GPU where a usable one is found, else omp), cpu, omp or cuda.\n",
    .groups = groups,
    .count = TK_OPT_COUNT(groups),
    .xml = &slicer,
    .max_positional = 2,
    .positional_hint = "give FOD and OUTPUT once",
};

void tk_track_values_init(tk_track_values *v)
{
    memset(v, 0, sizeof *v);
    v->seeds = 1;
    v->cutoff = 0.1;
}
