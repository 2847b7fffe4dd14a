// Layer norm forward, bf16 storage with fp32 math: one 256-thread block per row, each thread loading
// 16-byte vectors of 8 bf16 values. The bf16 <-> fp32 conversions of whole vectors use CUTLASS's array
// converters, which round to nearest even and compile to packed cvt instructions.
#include "layernorm_api.h"

#include "cutlass/array.h"
#include "cutlass/numeric_conversion.h"
#include "cutlass/numeric_types.h"

namespace {

constexpr int kThreads = 256;
constexpr int kVec = 8;
constexpr int kMaxVecPerThread = 4;   // up to 8192 columns

using BF16x8 = cutlass::Array<cutlass::bfloat16_t, kVec>;
using F32x8 = cutlass::Array<float, kVec>;

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

__global__ void __launch_bounds__(kThreads) layernorm_bf16_kernel(const BF16x8* __restrict__ x,
                                                                  const BF16x8* __restrict__ gamma,
                                                                  const BF16x8* __restrict__ beta,
                                                                  BF16x8* __restrict__ y, int cols, float eps) {
    __shared__ float red[kThreads / 32];
    cutlass::NumericArrayConverter<float, cutlass::bfloat16_t, kVec> to_float;
    cutlass::NumericArrayConverter<cutlass::bfloat16_t, float, kVec, cutlass::FloatRoundStyle::round_to_nearest>
        to_bf16;
    const int nvec = cols / kVec;
    const BF16x8* row = x + static_cast<size_t>(blockIdx.x) * nvec;
    BF16x8* out = y + static_cast<size_t>(blockIdx.x) * nvec;

    F32x8 v[kMaxVecPerThread];
    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < kMaxVecPerThread; ++i) {
        const int idx = threadIdx.x + i * kThreads;
        if (idx < nvec) {
            v[i] = to_float(row[idx]);
#pragma unroll
            for (int k = 0; k < kVec; ++k) sum += v[i][k];
        }
    }
    const float mean = block_sum(sum, red) / cols;
    float sq = 0.0f;
#pragma unroll
    for (int i = 0; i < kMaxVecPerThread; ++i) {
        if (threadIdx.x + i * kThreads < nvec) {
#pragma unroll
            for (int k = 0; k < kVec; ++k) {
                v[i][k] -= mean;
                sq += v[i][k] * v[i][k];
            }
        }
    }
    const float rstd = rsqrtf(block_sum(sq, red) / cols + eps);
#pragma unroll
    for (int i = 0; i < kMaxVecPerThread; ++i) {
        const int idx = threadIdx.x + i * kThreads;
        if (idx < nvec) {
            const F32x8 g = to_float(gamma[idx]), b = to_float(beta[idx]);
            F32x8 r;
#pragma unroll
            for (int k = 0; k < kVec; ++k) r[k] = v[i][k] * rstd * g[k] + b[k];
            out[idx] = to_bf16(r);
        }
    }
}

}  // namespace

void layernorm_forward(const __nv_bfloat16* x, const __nv_bfloat16* gamma, const __nv_bfloat16* beta,
                       __nv_bfloat16* y, int rows, int cols, float eps, cudaStream_t stream) {
    layernorm_bf16_kernel<<<rows, kThreads, 0, stream>>>(
        reinterpret_cast<const BF16x8*>(x), reinterpret_cast<const BF16x8*>(gamma),
        reinterpret_cast<const BF16x8*>(beta), reinterpret_cast<BF16x8*>(y), cols, eps);
}
