/* What the two image-completion commands (tk-tucker complete, tk-pltf complete) share on
 * their command lines: the operands "complete IN_IMAGE OUT_IMAGE" and the option group
 * --mask, --keep-observed, --seed (with the standard group, cli_options.h).  C, so that the
 * tables (tk_*_complete_options.c) are written with designated initializers. */
#ifndef TK_COMPLETE_OPTIONS_H
#define TK_COMPLETE_OPTIONS_H

#include <stdint.h>

#include "cli_options.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The values of the shared group; embed one in each completion command's values. */
typedef struct tk_complete_values {
    const char *mask;
    uint64_t seed;
    int keep_observed;
    tk_standard_values std;
} tk_complete_values;

#define TK_COMPLETE_OPTION_COUNT 3
extern const tk_option tk_complete_options[TK_COMPLETE_OPTION_COUNT];

/* Slicer writes its temporaries in the first format listed: NRRD keeps vector volumes whole. */
#define TK_COMPLETE_IMAGES ".nrrd,.nhdr,.nii.gz,.nii,.mha"

/* The operands, positions 1..3; Slicer appends positional arguments after the options, so
 * the hidden first one makes its command line `TOOL [options] complete IN OUT`. */
#define TK_COMPLETE_OPERANDS(tool, input_description, output_description)                                       \
    {.position = 1, .value_name = "complete", .kind = TK_OPT_TEXT,                                              \
     .xml = {.kind = TK_XML_STRING, .name = "command", .label = "Command", .description = tool "'s image mode",  \
             .default_value = "complete", .hidden = 1}},                                                        \
    {.position = 2, .value_name = "IN_IMAGE", .kind = TK_OPT_TEXT,                                              \
     .xml = {.kind = TK_XML_IMAGE, .name = "inputVolume", .label = "Input volume", .description = input_description, \
             .channel = TK_XML_INPUT, .image_type = "scalar", .file_extensions = TK_COMPLETE_IMAGES}},           \
    {.position = 3, .value_name = "OUT_IMAGE", .kind = TK_OPT_TEXT,                                             \
     .xml = {.kind = TK_XML_IMAGE, .name = "outputVolume", .label = "Output volume",                            \
             .description = output_description, .channel = TK_XML_OUTPUT, .image_type = "scalar",               \
             .file_extensions = TK_COMPLETE_IMAGES}}

/* The groups every completion command has: the shared options (its values at member of TYPE)
 * and the standard ones. */
#define TK_COMPLETE_GROUPS(TYPE, member)                                                                        \
    {.title = "image options", .label = "Mask", .description = "Which voxels are observed",                    \
     .options = tk_complete_options, .count = TK_COMPLETE_OPTION_COUNT, .base = offsetof(TYPE, member)},       \
    TK_STANDARD_GROUP(TYPE, member.std)

/* The fields every completion command's tk_command shares (its own are .usage and
 * .description): tool ("tk-tucker"), the options of the epilog's example of the order 3D
 * Slicer writes (options before the word complete), and the command's groups and module. */
#define TK_COMPLETE_COMMAND(tool, slicer_order_options, groups_, slicer_)                                      \
    .prog = tool, .subcommand = "complete",                                                                     \
    .epilog = "--threads: the filter runs on all cores; --device picks the GPU that --backend auto checks.\n"   \
              "With the options before the word complete, as 3D Slicer calls it, the same runs:\n"              \
              "  " tool " " slicer_order_options " complete IN_IMAGE OUT_IMAGE\n",                              \
    .groups = groups_, .count = TK_OPT_COUNT(groups_), .xml = &slicer_,                                         \
    .max_positional = 8, /* complete_args.cxx names a stray operand */                                         \
    .positional_hint = "give IN_IMAGE and OUT_IMAGE once"

void tk_complete_values_init(tk_complete_values *v);

#ifdef __cplusplus
}
#endif
#endif
