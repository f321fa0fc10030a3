// Device-side probe of what a one-shot eig call's device allocation costs: the n = 5 batch's
// copies (pinned, 100 MB in and 20.5 MB out) into a buffer kept between calls, into one
// made by cudaMalloc and freed by cudaFree each call, and into one from the stream-ordered
// allocator's default pool (freed and synchronized, then also trimmed); medians of 7 calls
// 300 ms apart (Documentation/benchmarks.md, "The one-shot call's allocation").  Not part of
// the build: nvcc -O2 -std=c++17 -arch=sm_90 -o /tmp/alloc_probe scripts/device/alloc_probe.cu
#include <cstdio>
#include <cstdlib>
#include <chrono>
#include <thread>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e_)); exit(1);} } while (0)
static double now() { return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
int main() {
    const size_t in_b = 500000ull * 25 * 8, out_b = 500000ull * 10 * 8 + 500000;
    void *h_in, *h_out; CK(cudaMallocHost(&h_in, in_b)); CK(cudaMallocHost(&h_out, out_b));
    cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaFree(0);
    int dev = 0; cudaMemPool_t pool; CK(cudaDeviceGetDefaultMemPool(&pool, dev));
    for (size_t S : {size_t(20) << 20, size_t(70) << 20, size_t(140) << 20}) {
      for (int mode = 0; mode < 4; ++mode) {
        std::vector<double> a, c, f, tot;
        void *keep = nullptr; if (mode == 0) CK(cudaMalloc(&keep, S));
        for (int r = 0; r < 7; ++r) {
            std::this_thread::sleep_for(std::chrono::milliseconds(300));
            double t0 = now(); void *d = keep;
            if (mode == 1) CK(cudaMalloc(&d, S));
            if (mode == 2 || mode == 3) CK(cudaMallocAsync(&d, S, s));
            double t1 = now();
            const size_t piece = 4 << 20;
            for (size_t k = 0; k < in_b; k += piece) {
                size_t m = std::min(piece, in_b - k);
                size_t at = k % (S - piece);
                CK(cudaMemcpyAsync((char *)d + at, (char *)h_in + k, m, cudaMemcpyHostToDevice, s));
            }
            CK(cudaMemcpyAsync(h_out, d, std::min(out_b, S), cudaMemcpyDeviceToHost, s));
            CK(cudaStreamSynchronize(s));
            double t2 = now();
            if (mode == 1) CK(cudaFree(d));
            if (mode == 2) { CK(cudaFreeAsync(d, s)); CK(cudaStreamSynchronize(s)); }
            if (mode == 3) { CK(cudaFreeAsync(d, s)); CK(cudaStreamSynchronize(s)); CK(cudaMemPoolTrimTo(pool, 0)); }
            double t3 = now();
            size_t used = 0; cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &used);
            if (r == 6 && mode >= 2) printf("  (pool reserved after: %zu bytes)\n", used);
            a.push_back(t1 - t0); c.push_back(t2 - t1); f.push_back(t3 - t2); tot.push_back(t3 - t0);
        }
        if (keep) CK(cudaFree(keep));
        auto med = [](std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; };
        const char *nm[] = {"buffer kept", "cudaMalloc/cudaFree", "mallocAsync/freeAsync+sync", "mallocAsync/freeAsync+trim"};
        printf("S=%zu MB %-28s alloc %.3f  copies %.3f  free %.3f  total %.3f ms (median of 7)\n", S >> 20, nm[mode], med(a), med(c), med(f), med(tot));
      }
    }
    return 0;
}
