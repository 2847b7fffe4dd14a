// The host dereferences a null pointer after the kernel: SIGSEGV.
#include "common.cuh"
__global__ void noop() {}
int main() {
    noop<<<1, 1>>>();
    CK(cudaDeviceSynchronize());
    volatile int* p = nullptr;
    *p = 42;
    return 0;
}
