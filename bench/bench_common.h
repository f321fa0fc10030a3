/* What the suites of tk-bench share to make and judge their figures: the random data of a
 * seeded run, the median of repeated runs and the word a goal gets. */
#ifndef TK_BENCH_COMMON_H
#define TK_BENCH_COMMON_H

#include <stdint.h>

/* xorshift64: the same data in every run of a suite, so runs compare (not for statistics). */
typedef struct bench_rng {
    uint64_t s;
} bench_rng;

/* A generator for one data set: seed picks the set, stream keeps sets of one seed apart. */
static inline bench_rng bench_rng_seed(uint64_t seed, uint64_t stream)
{
    return (bench_rng){seed * 0x9E3779B97F4A7C15ull + stream};
}
/* The next 53 random bits. */
static inline uint64_t bench_rng_bits(bench_rng *r)
{
    r->s ^= r->s << 13, r->s ^= r->s >> 7, r->s ^= r->s << 17;
    return r->s >> 11;
}
/* Uniform in [0, 1). */
static inline double bench_rng_uniform(bench_rng *r) { return (double)bench_rng_bits(r) * 0x1.0p-53; }
/* Uniform in [-1, 1): the entries of the seeds' random matrices and tensors. */
static inline double bench_rng_symmetric(bench_rng *r) { return (double)bench_rng_bits(r) * 0x1.0p-52 - 1.0; }

/* Which of n > 0 figures is their median (the upper one for even n): repeated runs on a
 * shared machine scatter, and the median is the figure one run typically gives. */
int bench_median_index(const double *v, int n);
static inline double bench_median(const double *v, int n) { return v[bench_median_index(v, n)]; }

/* Wall seconds of one whole process (argv[0] looked up on PATH), or -1 where it did not run
 * or failed: the anchors (sh2peaks, tckgen) timed as a user runs them. */
double bench_timed_process(char *const argv[]);

/* The word a goal gets: "met" or "MISSED" (capitals, to stand out in a table). */
static inline const char *bench_verdict(int met) { return met ? "met" : "MISSED"; }

/* --gpus N of the fibers, teig and eig suites (BENCH_GPUS_OPTION): the GPU count of their
 * scaling lines, the same CUDA run on one GPU and on N printed with the speed-up.  -1 (not
 * given): no scaling lines, 0; 0: every visible GPU.  A count below 2 prints why it is
 * skipped and gives 0. */
int bench_scaling_gpus(long option);

#endif
