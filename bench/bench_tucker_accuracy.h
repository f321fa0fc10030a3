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
    /* --init spectral: the rows start from tk_tucker_spectral_start (seeded by start_seed) instead
     * of the random start, and where round_iters ALS iterations leave the target unmet, up to
     * `deflate` rounds of tk_tucker_spectral_deflate, each followed by round_iters more (the last
     * round's ALS runs on to max_iters): tk-tucker train --init spectral --deflate K's schedule,
     * stopped at the target */
    int spectral;
    long deflate, round_iters;
    uint64_t start_seed;
    int auto_start;             /* --init auto chose `spectral` from sampling (tk_tucker_prefers_spectral) */
    tk_tucker_sampling sampling; /* the training entries' */
    int rank_j;                  /* the rows' factor rank (the rule's row line is per rank) */
} bench_tucker_accuracy;

/* The table's heading (settings, target, anchor), printed once. */
void bench_tucker_accuracy_header(const bench_tucker_accuracy *a);

/* One backend's row (name: how the table calls it; als: the defaults (ALS-WR), else the seed's SGD;
 * init: the random start, or with a->spectral the model whose shape the spectral start fills),
 * printed and added to the JSON. */
void bench_tucker_accuracy_row(const bench_tucker_accuracy *a, const char *name, int als, tk_backend backend,
                               tk_precision precision, const tk_tucker_coo *train, const tk_tucker_coo *test,
                               const tk_tucker_model *init);

#endif
