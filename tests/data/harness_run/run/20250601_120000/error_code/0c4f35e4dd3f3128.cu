#include "saxpy.h"

__global__ void saxpy_kernel(const float* __restrict__ x, float* __restrict__ y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

void launch_saxpy(const float* x, float* y, float a, int n) {
    saxpy_kernel<<<(n + 255) / 256, 256>>>(x, y, a, n);
}