// Reads one element past the end; the result is still right, so only memcheck sees the bug.
#include "common.cuh"
__global__ void copy_next(const float* in, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float next = in[i + 1];            // i == n - 1 reads in[n]
        out[i] = (next > 3.0e38f) ? 0.0f : in[i];
    }
}
int main() {
    const int n = 1000;
    float *in, *out;
    CK(cudaMallocManaged(&in, n * 4)); CK(cudaMallocManaged(&out, n * 4));
    for (int i = 0; i < n; ++i) in[i] = i * 0.5f;
    copy_next<<<(n + 127) / 128, 128>>>(in, out, n);
    CK(cudaDeviceSynchronize());
    for (int i = 0; i < n; ++i) if (out[i] != in[i]) { std::printf("mismatch at %d\n", i); return 1; }
    std::printf("PASS\n");
    return 0;
}
