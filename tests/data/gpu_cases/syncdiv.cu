// __syncthreads() inside a branch only some threads of the block take: synccheck reports it.
#include "common.cuh"
__global__ void half_barrier(int* out) {
    __shared__ int s[64];
    s[threadIdx.x] = threadIdx.x;
    if (threadIdx.x < 16) __syncthreads();
    out[threadIdx.x] = s[(threadIdx.x + 1) % 64];
}
int main() {
    int* out;
    CK(cudaMallocManaged(&out, 64 * 4));
    half_barrier<<<1, 64>>>(out);
    CK(cudaDeviceSynchronize());
    std::printf("out[0]=%d\n", out[0]);
    return 0;
}
