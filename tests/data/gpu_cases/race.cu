// Shared-memory reduction without barriers: racecheck reports hazards; the sum may come out wrong.
#include "common.cuh"
__global__ void reduce(const int* in, int* out) {
    __shared__ int s[256];
    s[threadIdx.x] = in[threadIdx.x];
    for (int stride = 128; stride > 0; stride /= 2) {
        if (threadIdx.x < stride) s[threadIdx.x] += s[threadIdx.x + stride];
    }
    if (threadIdx.x == 0) *out = s[0];
}
int main() {
    int *in, *out;
    CK(cudaMallocManaged(&in, 256 * 4)); CK(cudaMallocManaged(&out, 4));
    for (int i = 0; i < 256; ++i) in[i] = 1;
    reduce<<<1, 256>>>(in, out);
    CK(cudaDeviceSynchronize());
    if (*out != 256) { std::printf("wrong sum: got %d, expected 256\n", *out); return 1; }
    std::printf("PASS sum=%d\n", *out);
    return 0;
}
