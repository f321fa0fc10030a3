/* tk-tucker's image mode (ITK): `tk-tucker complete IN_IMAGE OUT_IMAGE [options]`, and its
 * option table (tk_tucker_complete_options.c: parsing, --help and the SlicerExecutionModel
 * description).  Linked into tk-tucker when TensorKernels is built with ITK
 * (TK_TUCKER_WITH_IMAGES); the C tool calls these. */
#ifndef TK_TUCKER_COMPLETE_H
#define TK_TUCKER_COMPLETE_H
#include "complete_options.h"
#ifdef __cplusplus
extern "C" {
#endif
typedef struct tk_tucker_complete_values {
    long rank_j, rank_r, iters;
    double lr_a, lr_b, lambda_a, lambda_b;
    tk_complete_values common;
} tk_tucker_complete_values;
/* The defaults of every option. */
void tk_tucker_complete_values_init(tk_tucker_complete_values *v);
extern const tk_command tk_tucker_complete_command;
/* The whole command line; the word "complete" may follow the options (Slicer puts the
 * positional arguments last).  Returns the exit code. */
int tk_tucker_complete_main(int argc, char **argv);
#ifdef __cplusplus
}
#endif
#endif
