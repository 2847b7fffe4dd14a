// Sum of an fp32 array: a persistent grid-stride kernel with float4 loads and two accumulators per
// thread, a shared-memory stage sized from the launch configuration, and one atomicAdd per block.
#include "reduce_api.h"

namespace {

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}

__global__ void reduce_kernel(const float* __restrict__ x, size_t n, float* out) {
    // One slot per warp of this block.
    __shared__ float warp_sums[blockDim.x / 32];
    const size_t n4 = n / 4;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
    float a = 0.0f, b = 0.0f;
    size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    for (; i + stride < n4; i += 2 * stride) {
        const float4 u = x4[i], v = x4[i + stride];
        a += (u.x + u.y) + (u.z + u.w);
        b += (v.x + v.y) + (v.z + v.w);
    }
    if (i < n4) {
        const float4 u = x4[i];
        a += (u.x + u.y) + (u.z + u.w);
    }
    if (blockIdx.x == 0 && threadIdx.x < n % 4) a += x[n4 * 4 + threadIdx.x];
    float s = warp_sum(a + b);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) warp_sums[warp] = s;
    __syncthreads();
    if (warp == 0) {
        s = warp_sum(lane < blockDim.x / 32 ? warp_sums[lane] : 0.0f);
        if (lane == 0) atomicAdd(out, s);
    }
}

}  // namespace

void reduce_sum(const float* x, size_t n, float* out, cudaStream_t stream) {
    cudaMemsetAsync(out, 0, sizeof(float), stream);
    int dev = 0, sms = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    reduce_kernel<<<sms * 4, 512, 0, stream>>>(x, n, out);
}
