/* tk-pltf's image mode (ITK): `tk-pltf complete IN_IMAGE OUT_IMAGE [--model M] [options]`,
 * and its SlicerExecutionModel description.  Linked into tk-pltf when TensorKernels is
 * built with ITK (TK_PLTF_WITH_IMAGES); the C tool calls these. */
#ifndef TK_PLTF_COMPLETE_H
#define TK_PLTF_COMPLETE_H
#include "cli_xml.h"
#ifdef __cplusplus
extern "C" {
#endif
/* 1 when the command line asks for the image mode: the word "complete" first, or anywhere
 * on a line without --input (3D Slicer puts the options first: `tk-pltf [options] complete
 * IN OUT`; the .npy mode always has --input and never a positional argument). */
int tk_pltf_complete_requested(int argc, char **argv);
/* The whole command line (the word "complete" may follow the options); returns the exit code. */
int tk_pltf_complete_main(int argc, char **argv);
void tk_pltf_complete_usage(FILE *f);
extern const tk_xml_module tk_pltf_complete_xml;
#ifdef __cplusplus
}
#endif
#endif
