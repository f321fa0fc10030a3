/* tk-bench: benchmarks that print each figure beside the reference it must beat. */
#include <stdio.h>
#include <string.h>

#include "bench.h"
#include "bench_json.h"
#include "cli.h"
#include "cli_options.h"

int main(int argc, char **argv);

/* --json FILE: the suite runs as usual (main again, the option now taken out of argv)
 * between the start of the run's JSON document and its writing, which only a
 * successful suite commits (bench_json.h). */
static int run_with_json(const char *path, const tk_standard_values *std, int argc, char **argv)
{
    for (int i = 2; i < argc; ++i)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return main(argc, argv); /* usage: no results */
    int bad_output = tk_cli_check_new_output("tk-bench", std, path, 0, NULL); /* before the suite runs */
    if (bad_output) return bad_output;
    if (!tk_bench_json_begin(path, argv[1], argc - 1, argv + 1)) return TK_EXIT_FAILURE;
    int rc = main(argc, argv);
    if (!tk_bench_json_end(rc == 0) && rc == 0) rc = TK_EXIT_FAILURE;
    return rc;
}

/* Take the flag out of argv (the suites parse the rest); 1 when it was there. */
static int take_flag(int *argc, char **argv, const char *flag)
{
    int found = 0;
    for (int i = 1; i < *argc;)
        if (!strcmp(argv[i], flag)) {
            memmove(argv + i, argv + i + 1, (size_t)(*argc - i) * sizeof *argv); /* argv[argc] (NULL) too */
            --*argc;
            found = 1;
        } else {
            ++i;
        }
    return found;
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "--version")) {
        printf("tk-bench TensorKernels %s\n", tk_version());
        return 0;
    }
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        fprintf(argc < 2 ? stderr : stdout,
                "usage: tk-bench SUITE [options] [--json FILE]\n"
                "       tk-bench --version\n"
                "--json FILE: also write the results as JSON (Documentation/plots/plot_benchmarks.py); an\n"
                "             existing FILE is replaced only with --force\n"
                "suites:\n"
                "  teig    SS-HOPM: the seed's Table 6.1 set-up for {general, unrolled} x {cpu, omp, cuda},\n"
                "          then diffusion-MRI-sized runs on CUDA (tk-bench teig --help)\n"
                "  fibers  fiber directions: voxels/s and accuracy beside MRtrix3's sh2peaks (tk-bench fibers --help)\n"
                "  tucker  sparse FastTucker: per-iteration factor and core update times on a Netflix-shaped\n"
                "          synthetic tensor vs the goals and cuFasterTucker, test RMSE vs the double CPU\n"
                "          reference, omp nonzeros/s (tk-bench tucker --help)\n"
                "  pltf    KL-PARAFAC: the seed's 10x11x12 rank-20 set-up on the CPU, then 256^3 rank 32 on\n"
                "          CUDA, against the seed's full-joint GTM (tk-bench pltf --help)\n"

                "  eig     batched eigenvalues: the seed's Table 4 set-up on cuda, omp and LAPACK\n"
                "          (tk-bench eig --help)\n"
                "  track   tractography: SD_STREAM and iFOD1 streamlines/s on a tiled real FOD, the core and\n"
                "          with .tck writing, beside MRtrix3's tckgen (tk-bench track --help)\n"
                "  fixels  fixels (FMLS): voxels/s beside MRtrix3's fod2fixel on real FOD voxels\n"
                "          (tk-bench fixels --help)\n");
        return argc < 2 ? TK_EXIT_USAGE : 0;
    }
    const char *json = NULL;
    const tk_standard_values std = {.force = take_flag(&argc, argv, "--force")};
    if (!tk_bench_json_take_option(&argc, argv, &json)) return TK_EXIT_USAGE;
    if (json) return run_with_json(json, &std, argc, argv);
    if (!strcmp(argv[1], "teig")) return tk_bench_teig(argc - 1, argv + 1);
    if (!strcmp(argv[1], "fibers")) return tk_bench_fibers(argc - 1, argv + 1);
    if (!strcmp(argv[1], "tucker")) return tk_bench_tucker(argc - 1, argv + 1);
    if (!strcmp(argv[1], "pltf")) return tk_bench_pltf(argc - 1, argv + 1);
    if (!strcmp(argv[1], "eig")) return tk_bench_eig(argc - 1, argv + 1);
    if (!strcmp(argv[1], "track")) return tk_bench_track(argc - 1, argv + 1);
    if (!strcmp(argv[1], "fixels")) return tk_bench_fixels(argc - 1, argv + 1);
    tk_cli_error("tk-bench", "unknown suite '%s'; see --help for the suites", argv[1]);
    return TK_EXIT_USAGE;
}
