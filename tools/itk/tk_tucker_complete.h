/* tk-tucker's image mode (ITK): `tk-tucker complete IN_IMAGE OUT_IMAGE [options]`, and its
 * SlicerExecutionModel description.  Linked into tk-tucker when TensorKernels is built
 * with ITK (TK_TUCKER_WITH_IMAGES); the C tool calls these two. */
#ifndef TK_TUCKER_COMPLETE_H
#define TK_TUCKER_COMPLETE_H
#include "cli_xml.h"
#ifdef __cplusplus
extern "C" {
#endif
/* The whole command line; the word "complete" may follow the options (Slicer puts the
 * positional arguments last).  Returns the exit code. */
int tk_tucker_complete_main(int argc, char **argv);
void tk_tucker_complete_usage(FILE *f);
extern const tk_xml_module tk_tucker_complete_xml;
#ifdef __cplusplus
}
#endif
#endif
