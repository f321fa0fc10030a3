/* tk-fibers' option table (tk_fibers_options.c): its parser, --help and the
 * SlicerExecutionModel description (tk-fibers --xml). */
#ifndef TK_FIBERS_OPTIONS_H
#define TK_FIBERS_OPTIONS_H
#include "cli_options.h"
#ifdef __cplusplus
extern "C" {
#endif
typedef struct tk_fibers_values {
    const char *mask, *amplitudes, *vtp, *png;
    long num, slice; /* slice -1: the middle one */
    double threshold, relative, separation, glyph_scale;
    int descoteaux, legacy;
    int gpus; /* --gpus: 0 (every visible GPU) unless given */
    tk_standard_values std;
} tk_fibers_values;
/* The defaults of every option. */
void tk_fibers_values_init(tk_fibers_values *v);
extern const tk_command tk_fibers_command;
#ifdef __cplusplus
}
#endif
#endif
