#include <cstdio>
#include <cmath>
#include <vector>
#include <cuda_runtime.h>
#include "solution.h"

int main() {
    const int M = 512, N = 512, K = 512;
    std::vector<float> a(M * K), b(K * N), c(M * N);
    for (int i = 0; i < M * K; ++i) a[i] = ((i * 7) % 23) / 23.0f - 0.5f;
    for (int i = 0; i < K * N; ++i) b[i] = ((i * 11) % 29) / 29.0f - 0.5f;
    float *da, *db, *dc;
    cudaMalloc(&da, a.size() * 4); cudaMalloc(&db, b.size() * 4); cudaMalloc(&dc, c.size() * 4);
    cudaMemcpy(da, a.data(), a.size() * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(db, b.data(), b.size() * 4, cudaMemcpyHostToDevice);
    for (int rep = 0; rep < 20; ++rep) run_gemm(M, N, K, da, db, dc);
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
    std::printf("Passed\n");
    return 0;
}
