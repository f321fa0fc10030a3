/* tk-bench tucker --to-accuracy: FastTucker's time to accuracy (issue 26).  Each backend
 * trains the suite's planted tensor with the library's default settings (ALS-WR row solves,
 * core fixed) and with the seed's SGD (`--updates` picks either), no tuning flags, until the
 * test RMSE is within 5% of the noise the tensor was drawn with, and each row says
 * how many iterations and seconds (set-up included) that took, beside cuFasterTucker's COO
 * variant at its measured per-iteration time for the same count. */
#ifndef TK_BENCH_TUCKER_ACCURACY_H
#define TK_BENCH_TUCKER_ACCURACY_H

#include "tk_tucker.h"

typedef struct bench_tucker_accuracy {
    long max_iters;     /* give up after this many iterations */
    double noise;       /* the synthetic tensor's noise: the floor of the test RMSE */
    double truth_rmse;  /* the planted model's own test RMSE (the floor on this test set) */
    int threads;        /* cpu backends: 0 = all cores */
    size_t threshold;   /* B-CSF sub-slice size */
} bench_tucker_accuracy;

/* The table's heading (settings, target, anchor), printed once. */
void bench_tucker_accuracy_header(const bench_tucker_accuracy *a);

/* One backend's row (name: how the table calls it; als: the defaults (ALS-WR), else the seed's SGD),
 * printed and added to the JSON. */
void bench_tucker_accuracy_row(const bench_tucker_accuracy *a, const char *name, int als, tk_backend backend,
                               tk_precision precision, const tk_tucker_coo *train, const tk_tucker_coo *test,
                               const tk_tucker_model *init);

#endif
