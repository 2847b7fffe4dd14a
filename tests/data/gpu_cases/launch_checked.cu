// A vector add whose harness checks the launch itself (cudaGetLastError right after it).
#include "common.cuh"
__global__ void add(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
int main() {
    const int n = 1 << 16;
    float *a, *b, *c;
    CK(cudaMallocManaged(&a, n * 4)); CK(cudaMallocManaged(&b, n * 4)); CK(cudaMallocManaged(&c, n * 4));
    for (int i = 0; i < n; ++i) { a[i] = i; b[i] = 2 * i; }
    add<<<(n + 255) / 256, 256>>>(a, b, c, n);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    for (int i = 0; i < n; ++i) if (c[i] != 3.0f * i) { std::printf("mismatch at %d\n", i); return 1; }
    std::printf("PASS\n");
    return 0;
}
