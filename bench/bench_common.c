/* The suites' shared measurement helpers (bench_common.h). */
#include "bench_common.h"

#include <spawn.h>
#include <stdio.h>
#include <stddef.h>
#include <sys/wait.h>

#include "cli.h"
#include "tk_device.h"

extern char **environ;

int bench_median_index(const double *v, int n)
{
    /* v[r] stands at place n / 2 of the sorted figures when at most n / 2 are below it and at
     * most n - 1 - n / 2 above it; n is small (repeats of a run), so counting is enough. */
    for (int r = 0; r < n; ++r) {
        int below = 0, above = 0;
        for (int q = 0; q < n; ++q) below += v[q] < v[r], above += v[q] > v[r];
        if (below <= n / 2 && above <= n - 1 - n / 2) return r;
    }
    return 0;
}

double bench_timed_process(char *const argv[])
{
    pid_t pid;
    int status = 0;
    const double t0 = tk_cli_now_ms();
    if (posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ) != 0 || waitpid(pid, &status, 0) < 0 ||
        !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return -1;
    return (tk_cli_now_ms() - t0) / 1000;
}

int bench_scaling_gpus(long option)
{
    if (option < 0) return 0;
    const int visible = tk_cuda_device_count(), gpus = option ? (int)option : visible;
    if (gpus < 2 || gpus > visible) {
        printf("# scaling over GPUs: skipped: --gpus %ld asks for %d GPUs, %d visible; it needs 2 or more that exist\n",
               option, gpus, visible);
        return 0;
    }
    return gpus;
}
