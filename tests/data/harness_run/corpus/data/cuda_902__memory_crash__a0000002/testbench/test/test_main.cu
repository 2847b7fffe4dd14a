#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>
#include <cuda_runtime.h>
#include "saxpy.h"

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    std::printf("CUDA error: %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); return 2; } } while (0)

int main() {
    const int n = 1 << 20;
    std::vector<float> x(n), y(n), want(n);
    for (int i = 0; i < n; ++i) { x[i] = (i % 97) * 0.5f; y[i] = (i % 13) - 6.0f; want[i] = 3.0f * x[i] + y[i]; }
    float *dx, *dy;
    CHECK(cudaMalloc(&dx, n * sizeof(float)));
    CHECK(cudaMalloc(&dy, n * sizeof(float)));
    CHECK(cudaMemcpy(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dy, y.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    launch_saxpy(dx, dy, 3.0f, n);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(y.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int i = 0; i < n; ++i)
        if (std::fabs(y[i] - want[i]) > 1e-4f) { if (bad < 3) std::printf("mismatch at %d: got %f want %f\n", i, y[i], want[i]); ++bad; }
    if (bad) { std::printf("FAILED: %d mismatches\n", bad); return 1; }
    std::printf("PASSED\n");
    return 0;
}
