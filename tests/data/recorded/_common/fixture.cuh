// Shared harness helpers of the test-fixture corpus: error checks and the BEAVER_TIME_MS timing mode.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

#define FX_CHECK(call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) { \
    std::fprintf(stderr, "CUDA error %s (%s) at %s:%d\n", cudaGetErrorName(e_), cudaGetErrorString(e_), __FILE__, __LINE__); \
    std::exit(3); } } while (0)

// Times `launch` `iters` times after `warmup` runs, flushing a 256 MiB buffer before each timed run,
// and prints one BEAVER_TIME_MS line per run.
template <typename F>
void fx_bench(F launch, int iters, int warmup = 3) {
    static char* flush = nullptr;
    const size_t flush_bytes = 256u << 20;
    if (!flush) FX_CHECK(cudaMalloc(&flush, flush_bytes));
    for (int i = 0; i < warmup; ++i) launch();
    FX_CHECK(cudaDeviceSynchronize());
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    for (int i = 0; i < iters; ++i) {
        FX_CHECK(cudaMemsetAsync(flush, i & 0xff, flush_bytes));
        cudaEventRecord(a);
        launch();
        cudaEventRecord(b);
        FX_CHECK(cudaEventSynchronize(b));
        float ms = 0;
        cudaEventElapsedTime(&ms, a, b);
        std::printf("BEAVER_TIME_MS %.6f\n", ms);
    }
}

inline int fx_bench_iters(int argc, char** argv) {
    for (int i = 1; i < argc; ++i)
        if (!std::strcmp(argv[i], "--bench")) return i + 1 < argc ? std::atoi(argv[i + 1]) : 20;
    return 0;
}
