// Sums with the wrong scale: the harness reports a mismatch and exits 1.
#include "common.cuh"
__global__ void scale(float* v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) v[i] = v[i] * 3.0f;   // should be 2
}
int main() {
    const int n = 512;
    float* v;
    CK(cudaMallocManaged(&v, n * 4));
    for (int i = 0; i < n; ++i) v[i] = i;
    scale<<<2, 256>>>(v, n);
    CK(cudaDeviceSynchronize());
    for (int i = 1; i < n; ++i)
        if (v[i] != 2.0f * i) { std::printf("Test FAILED: v[%d] = %f, expected %f\n", i, v[i], 2.0f * i); return 1; }
    std::printf("PASS\n");
    return 0;
}
