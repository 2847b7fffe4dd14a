#include <algorithm>
#include <cstdio>
#include <cmath>
#include <vector>
#include <cuda_runtime.h>
#include <cutlass/fixture_gemm.h>
#include "solution.h"

// Checks the solution's run_gemm on sampled entries, then times it against the reference GEMM compiled in
// (cutlass_fixture::reference_gemm) and prints the release's cutlass speed lines: Ref time, Kernel time,
// Speedup (the reference's best trial over the solution's).

template <typename F>
static void time_trials(F launch, int trials, float* avg_ms, float* min_ms) {
    cudaEvent_t start, stop;
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
    for (int w = 0; w < 3; ++w) launch();
    float total = 0.f, best = 1e30f;
    for (int t = 0; t < trials; ++t) {
        cudaEventRecord(start);
        launch();
        cudaEventRecord(stop);
        cudaEventSynchronize(stop);
        float ms = 0.f;
        cudaEventElapsedTime(&ms, start, stop);
        total += ms;
        best = std::min(best, ms);
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    *avg_ms = total / trials;
    *min_ms = best;
}

int main() {
    const int M = 512, N = 512, K = 512, trials = 20;
    std::vector<float> a(M * K), b(K * N), c(M * N);
    for (int i = 0; i < M * K; ++i) a[i] = ((i * 7) % 23) / 23.0f - 0.5f;
    for (int i = 0; i < K * N; ++i) b[i] = ((i * 11) % 29) / 29.0f - 0.5f;
    float *da, *db, *dc;
    cudaMalloc(&da, a.size() * 4); cudaMalloc(&db, b.size() * 4); cudaMalloc(&dc, c.size() * 4);
    cudaMemcpy(da, a.data(), a.size() * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(db, b.data(), b.size() * 4, cudaMemcpyHostToDevice);
    run_gemm(M, N, K, da, db, dc);
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) { std::printf("CUDA error: %s\n", cudaGetErrorString(e)); return 2; }
    cudaMemcpy(c.data(), dc, c.size() * 4, cudaMemcpyDeviceToHost);
    int bad = 0;
    for (int i = 0; i < M; i += 37)
        for (int j = 0; j < N; j += 41) {
            double s = 0;
            for (int k = 0; k < K; ++k) s += (double)a[i * K + k] * b[k * N + j];
            if (std::fabs(c[i * N + j] - s) > 1e-3 * (1 + std::fabs(s))) ++bad;
        }
    if (bad) { std::printf("GEMM mismatch: %d sampled entries wrong\n", bad); return 1; }
    float ref_avg, ref_min, sol_avg, sol_min;
    time_trials([&] { cutlass_fixture::reference_gemm(M, N, K, da, db, dc); }, trials, &ref_avg, &ref_min);
    time_trials([&] { run_gemm(M, N, K, da, db, dc); }, trials, &sol_avg, &sol_min);
    e = cudaDeviceSynchronize();
    if (e != cudaSuccess) { std::printf("CUDA error: %s\n", cudaGetErrorString(e)); return 2; }
    std::printf("Ref time: %.4f ms (avg over %d trials, min: %.4f ms)\n", ref_avg, trials, ref_min);
    std::printf("Kernel time: %.4f ms (avg over %d trials, min: %.4f ms)\n", sol_avg, trials, sol_min);
    std::printf("Speedup: %.4fx (ref_min / kernel_min)\n", ref_min / sol_min);
    std::printf("Passed\n");
    return 0;
}
