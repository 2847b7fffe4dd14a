// Sum of a large fp32 array in one launch: a persistent grid (as many blocks as fit on the GPU at once)
// walks the array with 16-byte loads, four independent accumulators per thread to keep many loads in
// flight; warp shuffles and one shared-memory step reduce each block to one partial; the last block to
// finish (found with a fence and an atomic ticket) adds the partials in double and writes *out, then
// re-arms the ticket for the next call.
#include "reduce_api.h"

#include <cstdint>

namespace {

constexpr int kBlock = 512;
constexpr int kMaxBlocks = 4096;

__device__ float g_partials[kMaxBlocks];
__device__ unsigned int g_ticket = 0;

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__global__ void __launch_bounds__(kBlock) reduce_kernel(const float* __restrict__ x, size_t n, float* out) {
    __shared__ float red[kBlock / 32];
    __shared__ bool last;
    const size_t tid = blockIdx.x * static_cast<size_t>(kBlock) + threadIdx.x;
    const size_t stride = static_cast<size_t>(gridDim.x) * kBlock;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    const size_t n4 = n / 4;
    float a0 = 0.f, a1 = 0.f, a2 = 0.f, a3 = 0.f;
    size_t i = tid;
    for (; i + 3 * stride < n4; i += 4 * stride) {
        const float4 v0 = __ldcs(x4 + i), v1 = __ldcs(x4 + i + stride), v2 = __ldcs(x4 + i + 2 * stride),
                     v3 = __ldcs(x4 + i + 3 * stride);
        a0 += (v0.x + v0.y) + (v0.z + v0.w);
        a1 += (v1.x + v1.y) + (v1.z + v1.w);
        a2 += (v2.x + v2.y) + (v2.z + v2.w);
        a3 += (v3.x + v3.y) + (v3.z + v3.w);
    }
    for (; i < n4; i += stride) {
        const float4 v = __ldcs(x4 + i);
        a0 += (v.x + v.y) + (v.z + v.w);
    }
    if (tid < n - n4 * 4) a1 += x[n4 * 4 + tid];  // the last n % 4 elements
    float s = warp_sum((a0 + a1) + (a2 + a3));
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (lane == 0) red[warp] = s;
    __syncthreads();
    if (warp == 0) {
        s = warp_sum(lane < kBlock / 32 ? red[lane] : 0.f);
        if (lane == 0) {
            g_partials[blockIdx.x] = s;
            __threadfence();  // the partial is visible device-wide before the ticket is taken
            last = atomicAdd(&g_ticket, 1u) == gridDim.x - 1;
        }
    }
    __syncthreads();
    if (!last) return;
    // Last block: every other block's partial is visible (each fenced before its ticket).
    __threadfence();
    double d = 0.0;
    for (unsigned b = threadIdx.x; b < gridDim.x; b += kBlock) d += __ldcg(g_partials + b);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) d += __shfl_xor_sync(0xffffffffu, d, o);
    __shared__ double dred[kBlock / 32];
    if (lane == 0) dred[warp] = d;
    __syncthreads();
    if (threadIdx.x == 0) {
        double t = 0.0;
        for (int w = 0; w < kBlock / 32; ++w) t += dred[w];
        *out = static_cast<float>(t);
        g_ticket = 0;  // ready for the next launch (kernels on one stream do not overlap)
    }
}

int grid_size() {
    static int blocks = 0;
    if (blocks == 0) {
        int dev = 0, sms = 0, per_sm = 0;
        cudaGetDevice(&dev);
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, reduce_kernel, kBlock, 0);
        blocks = sms * (per_sm > 0 ? per_sm : 1);
        if (blocks > kMaxBlocks) blocks = kMaxBlocks;
    }
    return blocks;
}

}  // namespace

void reduce_sum(const float* x, size_t n, float* out, cudaStream_t stream) {
    int blocks = grid_size();
    const size_t needed = (n / 4 + kBlock - 1) / kBlock;
    if (needed < static_cast<size_t>(blocks)) blocks = needed > 0 ? static_cast<int>(needed) : 1;
    reduce_kernel<<<blocks, kBlock, 0, stream>>>(x, n, out);
}
