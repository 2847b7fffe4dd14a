// Row softmax, fp32: one 256-thread block per row, the row kept in registers and read with float4 loads.
#include "softmax_api.h"

namespace {

constexpr int kThreads = 256;
constexpr int kMaxVecPerThread = 8;

__device__ __forceinline__ float warp_reduce_sum(float v) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

__device__ float block_reduce_sum(float v) {
    __shared__ float partial[kThreads / 32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_reduce_sum(v);
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    v = (threadIdx.x < kThreads / 32) ? partial[lane] : 0.0f;
    if (warp == 0) v = warp_reduce_sum(v);
    __shared__ float total;
    if (threadIdx.x == 0) total = v;
    __syncthreads();
    return total;
}

__global__ void __launch_bounds__(kThreads) softmax_row_kernel(const float* __restrict__ x, float* __restrict__ y,
                                                               int cols) {
    const float4* row_in = reinterpret_cast<const float4*>(x + static_cast<size_t>(blockIdx.x) * cols);
    float4* row_out = reinterpret_cast<float4*>(y + static_cast<size_t>(blockIdx.x) * cols);
    const int nvec = cols / 4;

    float4 e[kMaxVecPerThread];
    float local_sum = 0.0f;
#pragma unroll
    for (int i = 0; i < kMaxVecPerThread; ++i) {
        const int idx = threadIdx.x + i * kThreads;
        if (idx < nvec) {
            const float4 v = row_in[idx];
            // exp(x) / sum(exp(x)): fuse the exponent with the load so the row is read once.
            e[i] = make_float4(__expf(v.x), __expf(v.y), __expf(v.z), __expf(v.w));
            local_sum += (e[i].x + e[i].y) + (e[i].z + e[i].w);
        }
    }
    const float inv_sum = 1.0f / block_reduce_sum(local_sum);
#pragma unroll
    for (int i = 0; i < kMaxVecPerThread; ++i) {
        const int idx = threadIdx.x + i * kThreads;
        if (idx < nvec)
            row_out[idx] = make_float4(e[i].x * inv_sum, e[i].y * inv_sum, e[i].z * inv_sum, e[i].w * inv_sum);
    }
}

}  // namespace

void softmax_rows(const float* x, float* y, int rows, int cols, cudaStream_t stream) {
    // cols is a multiple of 4 and at most kThreads * kMaxVecPerThread * 4 = 8192 for this task.
    softmax_row_kernel<<<rows, kThreads, 0, stream>>>(x, y, cols);
}
