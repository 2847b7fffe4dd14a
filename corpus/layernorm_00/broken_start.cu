// Layer norm forward, fp16 storage with fp32 math: one 256-thread block per row, each thread loads one
// 16-byte vector (8 halves) per 2048 columns. Mean and variance come from a single pass with Welford's
// update; the per-thread (count, mean, M2) states are merged with warp shuffles and then across warps.
#include "layernorm_api.h"

namespace {

constexpr int kThreads = 256;
constexpr int kVec = 8;            // halves per 16-byte load
constexpr int kMaxVecPerThread = 4;

struct Welford {
    float count;
    float mean;
    float m2;
};

__device__ __forceinline__ Welford welford_merge(const Welford& a, const Welford& b) {
    const float count = a.count + b.count;
    if (count == 0.0f) return a;
    const float delta = b.mean - a.mean;
    const float wb = b.count / count;
    return {count, a.mean + delta * wb, a.m2 + b.m2 + delta * delta * a.count * wb};
}

__device__ __forceinline__ Welford warp_merge(Welford w) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) w = welford_merge(w, __shfl_xor_sync(0xffffffffu, w, offset));
    return w;
}

__global__ void __launch_bounds__(kThreads) layernorm_fp16_kernel(const __half* __restrict__ x,
                                                                  const __half* __restrict__ gamma,
                                                                  const __half* __restrict__ beta,
                                                                  __half* __restrict__ y, int cols, float eps) {
    __shared__ Welford partial[kThreads / 32];
    __shared__ float s_mean, s_rstd;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const uint4* in = reinterpret_cast<const uint4*>(x + static_cast<size_t>(blockIdx.x) * cols);
    uint4* out = reinterpret_cast<uint4*>(y + static_cast<size_t>(blockIdx.x) * cols);
    const int nvec = cols / kVec;

    float v[kMaxVecPerThread][kVec];
    Welford w = {0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int i = 0; i < kMaxVecPerThread; ++i) {
        const int idx = threadIdx.x + i * kThreads;
        if (idx < nvec) {
            const uint4 raw = in[idx];
            const __half2* h = reinterpret_cast<const __half2*>(&raw);
#pragma unroll
            for (int k = 0; k < kVec / 2; ++k) {
                const float2 f = __half22float2(h[k]);
                v[i][2 * k] = f.x;
                v[i][2 * k + 1] = f.y;
            }
#pragma unroll
            for (int k = 0; k < kVec; ++k) {
                w.count += 1.0f;
                const float d = v[i][k] - w.mean;
                w.mean += d / w.count;
                w.m2 += d * (v[i][k] - w.mean);
            }
        }
    }
    w = warp_merge(w);
    if (lane == 0) partial[warp] = w;
    __syncthreads();
    if (warp == 0) {
        w = lane < kThreads / 32 ? partial[lane] : Welford{0.0f, 0.0f, 0.0f};
        w = warp_merge(w);
        if (lane == 0) {
            s_mean = w.mean;
            s_rstd = rsqrtf(w.m2 / w.count + eps);
        }
    }
    __syncthreads();
    const float mean = s_mean, rstd = s_rstd;
    const uint4* g4 = reinterpret_cast<const uint4*>(gamma);
    const uint4* b4 = reinterpret_cast<const uint4*>(beta);
#pragma unroll
    for (int i = 0; i < kMaxVecPerThread; ++i) {
        const int idx = threadIdx.x + i * kThreads;
        if (idx < nvec) {
            const uint4 graw = g4[idx], braw = b4[idx];
            const __half2* g = reinterpret_cast<const __half2*>(&graw);
            const __half2* b = reinterpret_cast<const __half2*>(&braw);
            uint4 res;
            __half2* r = reinterpret_cast<__half2*>(&res);
#pragma unroll
            for (int k = 0; k < kVec / 2; ++k) {
                const float2 gf = __half22float2(g[k]), bf = __half22float2(b[k]);
                r[k] = __floats2half2_rn((v[i][2 * k] - mean) * rstd * gf.x + bf.x,
                                         (v[i][2 * k + 1] - mean) * rstd * gf.y + bf.y);
            }
            out[idx] = res;
        }
    }
}

}  // namespace

void layernorm_forward(const __half* x, const __half* gamma, const __half* beta, __half* y, int rows, int cols,
                       float eps, cudaStream_t stream) {
    layernorm_fp16_kernel<<<rows, kThreads, 0, stream>>>(x, gamma, beta, y, cols, eps);
}
