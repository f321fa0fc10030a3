/* tk-fixels' option table (tk_fixels_options.c): its parser, --help and the
 * SlicerExecutionModel description (tk-fixels --xml). */
#ifndef TK_FIXELS_OPTIONS_H
#define TK_FIXELS_OPTIONS_H
#include "cli_options.h"
#ifdef __cplusplus
extern "C" {
#endif
typedef struct tk_fixels_values {
    const char *mask, *afd, *peak_amp, *disp, *lobes, *count_map, *afd_map, *vtp;
    long maxnum;
    double integral, peak_value, merge_ratio;
    int no_thresholds, dirpeak, nii, descoteaux, legacy, directions;
    int gpus, gpus_given; /* --gpus: 0 (every visible GPU) unless given; gpus_given set by the tool */
    tk_standard_values std;
} tk_fixels_values;
/* The defaults of every option (fod2fixel's). */
void tk_fixels_values_init(tk_fixels_values *v);
extern const tk_command tk_fixels_command;
#ifdef __cplusplus
}
#endif
#endif
