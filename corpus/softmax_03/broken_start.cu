// Row softmax, fp16 storage with fp32 math: one 256-thread block per row. Rows of this task are 1000
// elements (2000 bytes), so rows are not 16-byte aligned: each thread reads single halves (coalesced
// across the block) and keeps its values in registers.
#include "softmax_api.h"

#include <cstdint>

namespace {

constexpr int kThreads = 256;
constexpr int kMaxPerThread = 16;

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__global__ void __launch_bounds__(kThreads) softmax_fp16_kernel(const __half* __restrict__ x, __half* __restrict__ y,
                                                                int64_t cols) {
    __shared__ float red[kThreads / 32];
    __shared__ float bcast;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const __half* in = x + blockIdx.x * cols;
    __half* out = y + blockIdx.x * cols;

    float v[kMaxPerThread];
    float m = -INFINITY;
#pragma unroll
    for (int i = 0; i < kMaxPerThread; ++i) {
        const int64_t c = threadIdx.x + static_cast<int64_t>(i) * kThreads;
        v[i] = c < cols ? __half2float(in[c]) : -INFINITY;
        m = fmaxf(m, v[i]);
    }
    m = warp_max(m);
    if (lane == 0) red[warp] = m;
    __syncthreads();
    if (warp == 0) {
        m = warp_max(lane < kThreads / 32 ? red[lane] : -INFINITY);
        if (lane == 0) bcast = m;
    }
    __syncthreads();
    m = bcast;

    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < kMaxPerThread; ++i) {
        v[i] = __expf(v[i] - m);
        s += v[i];
    }
    s = warp_sum(s);
    __syncthreads();
    if (lane == 0) red[warp] = s;
    __syncthreads();
    if (warp == 0) {
        s = warp_sum(lane < kThreads / 32 ? red[lane] : 0.0f);
        if (lane == 0) bcast = 1.0f / s;
    }
    __syncthreads();
    const float inv = bcast;
#pragma unroll
    for (int i = 0; i < kMaxPerThread; ++i) {
        const int64_t c = threadIdx.x + static_cast<int64_t>(i) * kThreads;
        if (c < cols) out[c] = __float2half_rn(v[i] * inv);
    }
}

}  // namespace

// 64-bit sizes so that rows * cols cannot overflow for large batches.
void softmax_rows(const __half* x, __half* y, int64_t rows, int64_t cols, cudaStream_t stream) {
    if (rows == 0 || cols == 0) return;
    softmax_fp16_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(x, y, cols);
}
