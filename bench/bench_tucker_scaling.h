/* tk-bench tucker --gpus: FastTucker on several GPUs of one host (strong and weak scaling,
 * NCCL all-reduce bandwidth), beside issue 27's goals.  The tucker suite (bench_tucker.c)
 * parses the command line and makes the tensor; this file runs the scaling rows. */
#ifndef TK_BENCH_TUCKER_SCALING_H
#define TK_BENCH_TUCKER_SCALING_H

#include "tk_tucker.h"

#define BENCH_TUCKER_MAX_GPU_COUNTS 8

typedef struct bench_tucker_scaling {
    long gpus[BENCH_TUCKER_MAX_GPU_COUNTS]; /* GPU counts to run, ascending; the first is the baseline */
    int count;                              /* how many; 0: no scaling rows */
    int weak;                               /* also weak scaling: g GPUs on g times the entries and first mode */
    int allreduce;                          /* also the all-reduce bandwidth of every count above 1 */
    long iters;
    tk_tucker_options solver;               /* cuda, the suite's rates and threshold */
    tk_tucker_synth_options synth;          /* the tensor of the strong rows (weak: scaled) */
    double test_fraction;
} bench_tucker_scaling;

/* The test metrics of the solver's current model (init gives its shape); 0s where it cannot
 * be copied or evaluated. */
tk_tucker_metrics bench_tucker_test_metrics(const tk_tucker_solver *s, const tk_tucker_model *init,
                                            const tk_tucker_coo *test);

/* The rows, printed and added to the JSON; train/test/init: the strong rows' tensor and start. */
void bench_tucker_scaling_run(const bench_tucker_scaling *b, const tk_tucker_coo *train, const tk_tucker_coo *test,
                              const tk_tucker_model *init);

#endif
