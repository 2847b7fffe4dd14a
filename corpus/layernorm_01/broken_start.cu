// Layer norm forward, fp32: one 256-thread block per row, the row held in registers and read with
// float4 loads. cols need not be a multiple of 4: the last vector of a row is loaded whole and its lanes
// past the end of the row are masked out of the statistics and the store.
#include "layernorm_api.h"

namespace {

constexpr int kThreads = 256;
constexpr int kMaxVecPerThread = 8;   // up to 8192 columns

__device__ __forceinline__ float block_sum(float v, float* red) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    __syncthreads();
    if (lane == 0) red[warp] = v;
    __syncthreads();
    v = lane < kThreads / 32 ? red[lane] : 0.0f;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__global__ void __launch_bounds__(kThreads) layernorm_f32_kernel(const float* __restrict__ x,
                                                                 const float* __restrict__ gamma,
                                                                 const float* __restrict__ beta,
                                                                 float* __restrict__ y, int cols, float eps) {
    __shared__ float red[kThreads / 32];
    const float* row = x + static_cast<size_t>(blockIdx.x) * cols;
    float* out = y + static_cast<size_t>(blockIdx.x) * cols;
    const int nvec = (cols + 3) / 4;   // round up: the tail vector is partly past the row

    float v[kMaxVecPerThread][4];
    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < kMaxVecPerThread; ++i) {
        const int idx = threadIdx.x + i * kThreads;
        if (idx < nvec) {
            const float4 f = reinterpret_cast<const float4*>(row)[idx];
            v[i][0] = f.x;
            v[i][1] = f.y;
            v[i][2] = f.z;
            v[i][3] = f.w;
#pragma unroll
            for (int k = 0; k < 4; ++k)
                if (idx * 4 + k < cols) sum += v[i][k];
        }
    }
    const float mean = block_sum(sum, red) / cols;
    float sq = 0.0f;
#pragma unroll
    for (int i = 0; i < kMaxVecPerThread; ++i) {
        const int idx = threadIdx.x + i * kThreads;
        if (idx < nvec) {
#pragma unroll
            for (int k = 0; k < 4; ++k) {
                const float d = v[i][k] - mean;
                if (idx * 4 + k < cols) sq += d * d;
            }
        }
    }
    const float rstd = rsqrtf(block_sum(sq, red) / cols + eps);
#pragma unroll
    for (int i = 0; i < kMaxVecPerThread; ++i) {
        const int idx = threadIdx.x + i * kThreads;
        if (idx < nvec) {
#pragma unroll
            for (int k = 0; k < 4; ++k) {
                const int c = idx * 4 + k;
                if (c < cols) out[c] = (v[i][k] - mean) * rstd * gamma[c] + beta[c];
            }
        }
    }
}

}  // namespace

void layernorm_forward(const float* x, const float* gamma, const float* beta, float* y, int rows, int cols,
                       float eps, cudaStream_t stream) {
    layernorm_f32_kernel<<<rows, kThreads, 0, stream>>>(x, gamma, beta, y, cols, eps);
}
