// Device-side probe of the host-to-device copy rate in the eig pipeline's pattern: a batch
// copied in chunks (the pipeline's ramp of chunk sizes), repeated back to back, so that a
// copy slowed by what ran before (a run's freeing and allocating of device memory, a
// preceding FP64 load) shows up chunk by chunk.  Not part of the build: compiled on the
// GPU machine by scripts/device/copy_probe.sh.
//
//   copy_probe MB REPS MODE GAP_MS
//   MODE bit 0: cudaMalloc / cudaFree the device buffer around each repetition
//   MODE bit 1: an FP64 load kernel runs beside the copies (another stream), as the
//               eig kernels do in the pipeline
//   GAP_MS: host sleep between repetitions
#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(call)                                                                                 \
    do {                                                                                            \
        cudaError_t e_ = (call);                                                                    \
        if (e_ != cudaSuccess) {                                                                    \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
            exit(1);                                                                                \
        }                                                                                           \
    } while (0)

// a dependent FP64 chain per thread, long enough to keep every SM busy for `iters` steps
__global__ void fp64_load(double *out, long iters)
{
    double x = threadIdx.x * 1e-3, y = 1.0;
    for (long i = 0; i < iters; ++i) y = fma(y, x, 0.999999), x = fma(x, y, 1e-9);
    if (x == 12345.0) out[threadIdx.x] = x + y; // never true: keeps the loop
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: copy_probe MB REPS MODE GAP_MS\n");
        return 2;
    }
    const size_t bytes = (size_t)atol(argv[1]) << 20;
    const int reps = atoi(argv[2]), mode = atoi(argv[3]), gap_ms = atoi(argv[4]);
    unsigned char *host = NULL, *dev = NULL;
    double *sink = NULL;
    CHECK(cudaMallocHost(&host, bytes));
    memset(host, 1, bytes);
    CHECK(cudaMalloc(&sink, 1024 * sizeof(double)));
    if (!(mode & 1)) CHECK(cudaMalloc(&dev, bytes));
    cudaStream_t copy, load;
    CHECK(cudaStreamCreateWithFlags(&copy, cudaStreamNonBlocking));
    CHECK(cudaStreamCreateWithFlags(&load, cudaStreamNonBlocking));
    cudaEvent_t ev[64];
    for (int i = 0; i < 64; ++i) CHECK(cudaEventCreate(&ev[i]));
    // chunks: a sixteenth of 252 MB, growing by 30% to 252 MB, like the pipeline at n = 30
    size_t sizes[63];
    int chunks = 0;
    size_t done = 0, c = (252u << 20) / 16;
    while (done < bytes && chunks < 63) {
        if (c > (252u << 20)) c = 252u << 20;
        if (c > bytes - done) c = bytes - done;
        sizes[chunks++] = c;
        done += c;
        c = c + c * 3 / 10;
    }
    for (int r = 0; r < reps; ++r) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        if (mode & 1) CHECK(cudaMalloc(&dev, bytes));
        clock_gettime(CLOCK_MONOTONIC, &t1);
        if (mode & 2) fp64_load<<<132 * 8, 256, 0, load>>>(sink, 2000000);
        CHECK(cudaGetLastError());
        size_t off = 0;
        CHECK(cudaEventRecord(ev[0], copy));
        for (int i = 0; i < chunks; ++i) {
            CHECK(cudaMemcpyAsync(dev + off, host + off, sizes[i], cudaMemcpyHostToDevice, copy));
            CHECK(cudaEventRecord(ev[i + 1], copy));
            off += sizes[i];
        }
        CHECK(cudaStreamSynchronize(copy));
        CHECK(cudaStreamSynchronize(load));
        float total = 0;
        CHECK(cudaEventElapsedTime(&total, ev[0], ev[chunks]));
        printf("rep %d: malloc %.2f ms, %zu MB in %.2f ms = %.1f GB/s; first chunks GB/s:", r,
               (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) * 1e-6, bytes >> 20, total,
               bytes / total / 1e6);
        for (int i = 0; i < chunks && i < 10; ++i) {
            float ms = 0;
            CHECK(cudaEventElapsedTime(&ms, ev[i], ev[i + 1]));
            printf(" %.0f", sizes[i] / ms / 1e6);
        }
        printf("\n");
        fflush(stdout);
        if (mode & 1) {
            clock_gettime(CLOCK_MONOTONIC, &t0);
            CHECK(cudaFree(dev));
            clock_gettime(CLOCK_MONOTONIC, &t1);
            printf("       free %.2f ms\n", (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) * 1e-6);
        }
        if (gap_ms) {
            struct timespec g = {gap_ms / 1000, (long)(gap_ms % 1000) * 1000000L};
            nanosleep(&g, NULL);
        }
    }
    return 0;
}
