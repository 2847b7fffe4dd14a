// Off-by-one stencil: every output is wrong and the last thread reads past the end.
#include "common.cuh"
__global__ void shift(const float* in, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 2.0f * in[i + 1];
}
int main() {
    const int n = 1 << 12;
    float *in, *out;
    CK(cudaMallocManaged(&in, n * 4)); CK(cudaMallocManaged(&out, n * 4));
    for (int i = 0; i < n; ++i) in[i] = i;
    shift<<<n / 256, 256>>>(in, out, n);
    CK(cudaDeviceSynchronize());
    int bad = 0, first = -1;
    for (int i = 0; i < n; ++i) if (out[i] != 2.0f * in[i]) { if (first < 0) first = i; ++bad; }
    if (bad) { std::printf("MISMATCH out: %d of %d wrong, first at %d: got %g want %g\n", bad, n, first, out[first], 2.0f * in[first]); return 1; }
    std::printf("PASS\n");
    return 0;
}
