// Asks for 256 TiB of device memory.
#include "common.cuh"
int main() {
    float* p;
    CK(cudaMalloc(&p, 1ull << 48));
    std::printf("allocated\n");
    return 0;
}
