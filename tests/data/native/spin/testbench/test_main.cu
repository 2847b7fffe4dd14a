#include "fixture.cuh"
void launch_wait(int* flag);
int main() {
    int* flag;
    FX_CHECK(cudaMalloc(&flag, sizeof(int)));
    FX_CHECK(cudaMemset(flag, 0, sizeof(int)));
    launch_wait(flag);
    FX_CHECK(cudaDeviceSynchronize());
    std::printf("PASS\n");
    return 0;
}
