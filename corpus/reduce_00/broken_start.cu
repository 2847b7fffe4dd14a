// Sum of an fp32 array in one launch: every block reduces its slice with float4 loads and warp shuffles
// and stores a partial; a grid-wide barrier (an arrival counter) then lets block 0 add the partials, so
// no second kernel launch and no host round trip are needed.
#include "reduce_api.h"

namespace {

constexpr int kThreads = 256;
constexpr int kVecPerThread = 2;   // float4 vectors per thread
constexpr int kMaxBlocks = 1 << 20;

__device__ float g_partials[kMaxBlocks];
__device__ unsigned int g_arrived = 0;

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ float block_sum(float v) {
    __shared__ float red[kThreads / 32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_sum(v);
    __syncthreads();
    if (lane == 0) red[warp] = v;
    __syncthreads();
    return warp_sum(lane < kThreads / 32 ? red[lane] : 0.0f);
}

__global__ void __launch_bounds__(kThreads) reduce_kernel(const float* __restrict__ x, size_t n,
                                                          float* __restrict__ out) {
    const size_t n4 = n / 4;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < kVecPerThread; ++k) {
        const size_t i = (static_cast<size_t>(blockIdx.x) * kVecPerThread + k) * kThreads + threadIdx.x;
        if (i < n4) {
            const float4 v = x4[i];
            s += (v.x + v.y) + (v.z + v.w);
        }
    }
    if (blockIdx.x == 0 && threadIdx.x < n % 4) s += x[n4 * 4 + threadIdx.x];
    s = block_sum(s);
    if (threadIdx.x == 0) {
        g_partials[blockIdx.x] = s;
        __threadfence();
        atomicAdd(&g_arrived, 1u);
        // Grid-wide barrier: wait until every block has published its partial.
        while (atomicAdd(&g_arrived, 0u) < gridDim.x) {
        }
    }
    __syncthreads();
    if (blockIdx.x == 0) {
        float t = 0.0f;
        for (unsigned b = threadIdx.x; b < gridDim.x; b += kThreads) t += g_partials[b];
        t = block_sum(t);
        if (threadIdx.x == 0) *out = t;
    }
}

}  // namespace

void reduce_sum(const float* x, size_t n, float* out, cudaStream_t stream) {
    const size_t per_block = static_cast<size_t>(kThreads) * kVecPerThread * 4;
    const unsigned blocks = static_cast<unsigned>((n + per_block - 1) / per_block);
    reduce_kernel<<<blocks, kThreads, 0, stream>>>(x, n, out);
}
