// Host-side integer division by zero after a correct kernel: SIGFPE.
#include "common.cuh"
__global__ void count(int* c) { atomicAdd(c, 1); }
int main(int argc, char**) {
    int* c;
    CK(cudaMallocManaged(&c, 4)); *c = 0;
    count<<<1, 32>>>(c);
    CK(cudaDeviceSynchronize());
    volatile int zero = argc - 1;
    std::printf("per-thread share %d\n", *c / zero);
    return 0;
}
