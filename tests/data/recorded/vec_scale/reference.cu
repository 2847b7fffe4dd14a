#include "scale.h"

__global__ void scale_kernel(const float4* __restrict__ in, float4* __restrict__ out, float s, int n4) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += gridDim.x * blockDim.x) {
        float4 v = in[i];
        out[i] = make_float4(s * v.x, s * v.y, s * v.z, s * v.w);
    }
}

void launch_scale(const float* in, float* out, float s, int n) {
    // n is a multiple of 4 in this task.
    scale_kernel<<<132 * 8, 256>>>(reinterpret_cast<const float4*>(in), reinterpret_cast<float4*>(out), s, n / 4);
}
