/* Benchmark suites of tk-bench. */
#ifndef TK_BENCH_H
#define TK_BENCH_H
int tk_bench_teig(int argc, char **argv);
int tk_bench_fibers(int argc, char **argv);
int tk_bench_tucker(int argc, char **argv);
int tk_bench_pltf(int argc, char **argv);
int tk_bench_eig(int argc, char **argv);
int tk_bench_track(int argc, char **argv);
int tk_bench_fixels(int argc, char **argv);
#endif
