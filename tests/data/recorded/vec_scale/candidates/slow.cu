#include "scale.h"

// One block walks the whole array: correct, but uses a sliver of the GPU.
__global__ void scale_kernel(const float* __restrict__ in, float* __restrict__ out, float s, int n) {
    for (int i = threadIdx.x; i < n; i += blockDim.x) out[i] = s * in[i];
}

void launch_scale(const float* in, float* out, float s, int n) {
    scale_kernel<<<1, 256>>>(in, out, s, n);
}
