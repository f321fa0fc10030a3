/* The option group both image-completion commands share (complete_options.h). */
#include "complete_options.h"

#include <string.h>

const tk_option tk_complete_options[TK_COMPLETE_OPTION_COUNT] = {
    {.name = "mask", .value_name = "MASK", .kind = TK_OPT_TEXT, .offset = offsetof(tk_complete_values, mask),
     .help = "non-zero where a voxel is observed (fitted), zero where it is\nto be filled: 3-D (the same for every "
             "volume) or with the\nimage's volumes (default: every voxel observed)",
     .xml = {.kind = TK_XML_IMAGE, .name = "mask", .label = "Observed mask",
             .description = "Non-zero where a voxel is observed (fitted); zero where it is to be filled.  No mask: "
                            "every voxel is observed and the output is a low-rank approximation",
             .channel = TK_XML_INPUT, .image_type = "label"}},
    {.name = "keep-observed", .kind = TK_OPT_FLAG, .offset = offsetof(tk_complete_values, keep_observed),
     .help = "copy the input at observed voxels",
     .xml = {.name = "keepObserved", .label = "Keep observed values",
             .description = "Copy the input at observed voxels; the reconstruction only where the mask is zero",
             .default_value = "false"}},
    {.name = "seed", .value_name = "S", .kind = TK_OPT_SEED, .offset = offsetof(tk_complete_values, seed),
     .help = "seed of the model's start (default 0)",
     .xml = {.name = "seed", .label = "Seed",
             .description = "Seed of the model's start: a fixed seed gives the same result on any thread count",
             .default_value = "0"}},
};

void tk_complete_values_init(tk_complete_values *v)
{
    memset(v, 0, sizeof *v);
}
