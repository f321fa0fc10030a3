#include "bench.h"
int tk_bench_pltf(int argc, char **argv) { (void)argc, (void)argv; return 0; }
