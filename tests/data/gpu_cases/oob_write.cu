// Writes far outside the allocation: the runtime reports an illegal memory access.
#include "common.cuh"
__global__ void scatter(float* out, int n) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) out[i * 4096L * 1024L] = 1.0f;
}
int main() {
    const int n = 4096;
    float* out;
    CK(cudaMalloc(&out, n * sizeof(float)));
    scatter<<<n / 256, 256>>>(out, n);
    CK(cudaDeviceSynchronize());
    std::printf("done\n");
    return 0;
}
