// A kernel that never terminates.
#include "common.cuh"
__global__ void spin(volatile int* flag) { while (*flag == 0) { } }
int main() {
    int* flag;
    CK(cudaMalloc(&flag, 4)); CK(cudaMemset(flag, 0, 4));
    spin<<<1, 32>>>(flag);
    CK(cudaDeviceSynchronize());
    std::printf("done\n");
    return 0;
}
