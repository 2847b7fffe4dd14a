// Reads a double through a pointer that is not 8-byte aligned.
#include "common.cuh"
__global__ void read_double(const char* raw, double* out) {
    const double* p = reinterpret_cast<const double*>(raw + 4);
    out[threadIdx.x] = p[threadIdx.x];
}
int main() {
    char* raw; double* out;
    CK(cudaMalloc(&raw, 4096)); CK(cudaMalloc(&out, 32 * sizeof(double)));
    read_double<<<1, 32>>>(raw, out);
    CK(cudaDeviceSynchronize());
    std::printf("done\n");
    return 0;
}
