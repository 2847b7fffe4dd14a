// A device-side assertion fails.
#include <cassert>
#include "common.cuh"
__global__ void check(const int* v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) assert(v[i] >= 0 && "values must be non-negative");
}
int main() {
    const int n = 256;
    int* v;
    CK(cudaMallocManaged(&v, n * sizeof(int)));
    for (int i = 0; i < n; ++i) v[i] = (i == 77) ? -1 : i;
    check<<<1, n>>>(v, n);
    CK(cudaDeviceSynchronize());
    std::printf("done\n");
    return 0;
}
