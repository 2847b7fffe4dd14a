// Sum of an fp32 array in two launches: a persistent grid-stride pass with float4 loads writes one
// partial per block into a workspace, and a single block adds the partials in double precision, so
// the result does not depend on atomic ordering. The entry point has C linkage so that it can also be
// loaded from Python with ctypes.
#include "reduce_api.h"

namespace {

constexpr int kThreads = 512;
constexpr int kMaxBlocks = 2048;

__device__ float g_partials[kMaxBlocks];

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__global__ void __launch_bounds__(kThreads) partial_sums(const float* __restrict__ x, size_t n) {
    __shared__ float red[kThreads / 32];
    const size_t n4 = n / 4;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    const size_t stride = static_cast<size_t>(gridDim.x) * kThreads;
    float a = 0.0f, b = 0.0f;
    size_t i = blockIdx.x * static_cast<size_t>(kThreads) + threadIdx.x;
    for (; i + stride < n4; i += 2 * stride) {
        const float4 u = __ldcs(x4 + i), v = __ldcs(x4 + i + stride);
        a += (u.x + u.y) + (u.z + u.w);
        b += (v.x + v.y) + (v.z + v.w);
    }
    if (i < n4) {
        const float4 u = __ldcs(x4 + i);
        a += (u.x + u.y) + (u.z + u.w);
    }
    if (blockIdx.x == 0 && threadIdx.x < n % 4) a += x[n4 * 4 + threadIdx.x];
    float s = warp_sum(a + b);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) red[warp] = s;
    __syncthreads();
    if (warp == 0) {
        s = warp_sum(lane < kThreads / 32 ? red[lane] : 0.0f);
        if (lane == 0) g_partials[blockIdx.x] = s;
    }
}

__global__ void __launch_bounds__(kThreads) final_sum(int blocks, float* out) {
    __shared__ double red[kThreads / 32];
    double d = 0.0;
    for (int b = threadIdx.x; b < blocks; b += kThreads) d += g_partials[b];
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) d += __shfl_xor_sync(0xffffffffu, d, o);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) red[warp] = d;
    __syncthreads();
    if (threadIdx.x == 0) {
        double t = 0.0;
        for (int w = 0; w < kThreads / 32; ++w) t += red[w];
        *out = static_cast<float>(t);
    }
}

}  // namespace

extern "C" void reduce_sum(const float* x, size_t n, float* out, cudaStream_t stream) {
    int dev = 0, sms = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    const int blocks = sms * 4 < kMaxBlocks ? sms * 4 : kMaxBlocks;
    partial_sums<<<blocks, kThreads, 0, stream>>>(x, n);
    final_sum<<<1, kThreads, 0, stream>>>(blocks, out);
}
