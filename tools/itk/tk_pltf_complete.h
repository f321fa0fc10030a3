/* tk-pltf's image mode (ITK): `tk-pltf complete IN_IMAGE OUT_IMAGE [--model M] [options]`,
 * and its option table (tk_pltf_complete_options.c: parsing, --help and the
 * SlicerExecutionModel description).  Linked into tk-pltf when TensorKernels is built with
 * ITK (TK_PLTF_WITH_IMAGES); the C tool calls these. */
#ifndef TK_PLTF_COMPLETE_H
#define TK_PLTF_COMPLETE_H
#include "complete_options.h"
#ifdef __cplusplus
extern "C" {
#endif
typedef struct tk_pltf_complete_values {
    const char *model, *dims;
    long rank, iters;
    int divergence; /* tk_pltf_divergence */
    tk_complete_values common;
} tk_pltf_complete_values;
/* The defaults of every option. */
void tk_pltf_complete_values_init(tk_pltf_complete_values *v);
extern const tk_command tk_pltf_complete_command;
/* 1 when the command line asks for the image mode: the word "complete" first, or anywhere
 * on a line without --input (3D Slicer puts the options first: `tk-pltf [options] complete
 * IN OUT`; the .npy mode always has --input and never a positional argument). */
int tk_pltf_complete_requested(int argc, char **argv);
/* The whole command line (the word "complete" may follow the options); returns the exit code. */
int tk_pltf_complete_main(int argc, char **argv);
#ifdef __cplusplus
}
#endif
#endif
