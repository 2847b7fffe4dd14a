// Reads device memory that was never written: initcheck reports it; the plain run exits 0.
#include "common.cuh"
__global__ void sum(const float* v, float* out, int n) {
    float s = 0.f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) s += v[i];
    atomicAdd(out, s);
}
int main() {
    const int n = 1024;
    float *v, *out;
    CK(cudaMalloc(&v, n * 4)); CK(cudaMalloc(&out, 4));
    CK(cudaMemset(out, 0, 4));
    sum<<<1, 128>>>(v, out, n);  // v was never initialised
    float h = 0;
    CK(cudaMemcpy(&h, out, 4, cudaMemcpyDeviceToHost));
    std::printf("sum=%g\n", h);
    return 0;
}
