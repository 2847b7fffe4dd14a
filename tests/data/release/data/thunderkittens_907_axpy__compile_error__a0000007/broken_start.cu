#include <kittens_fixture.cuh>

__global__ void axpy_kernel(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = kittens_fixture::fma3(a, x[i], y[i]);
}

#include "harness.impl"
