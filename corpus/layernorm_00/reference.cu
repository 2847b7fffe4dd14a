// Layer norm forward: one thread block per row, the row held in registers. When a row is a whole
// number of 16-byte vectors it is read with 16-byte loads (gamma/beta too); otherwise (e.g. an odd
// number of columns, so rows do not start on a 16-byte boundary) coalesced scalar accesses are used.
// Mean and variance are two exact passes over the registers (no E[x^2] - E[x]^2 cancellation); rows too
// long for registers fall back to a streaming version that reads the row three times.
#include "layernorm_api.h"

#include <cstdint>

namespace ref {

constexpr int kBlock = 256;

__device__ __forceinline__ float to_f(float v) { return v; }
__device__ __forceinline__ float to_f(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T> __device__ __forceinline__ T from_f(float v);
template <> __device__ __forceinline__ float from_f<float>(float v) { return v; }
template <> __device__ __forceinline__ __half from_f<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

template <typename T, int W>
struct alignas(sizeof(T) * W) Pack {
    T v[W];
};

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
// Block-wide sum; every thread gets the result. `red` holds one float per warp.
__device__ __forceinline__ float block_sum(float v, float* red) {
    v = warp_sum(v);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    __syncthreads();
    if (lane == 0) red[warp] = v;
    __syncthreads();
    v = lane < (kBlock >> 5) ? red[lane] : 0.0f;
    return warp_sum(v);
}

// Each thread owns NV packs of W elements: pack j of thread t covers columns [(j*kBlock + t)*W, +W).
template <typename T, int W, int NV>
__global__ void __launch_bounds__(kBlock) layernorm_regs(const T* __restrict__ x, const T* __restrict__ gamma,
                                                         const T* __restrict__ beta, T* __restrict__ y, int cols,
                                                         float eps) {
    __shared__ float red[kBlock / 32];
    const size_t base = static_cast<size_t>(blockIdx.x) * cols;
    const Pack<T, W>* xr = reinterpret_cast<const Pack<T, W>*>(x + base);
    Pack<T, W>* yr = reinterpret_cast<Pack<T, W>*>(y + base);
    const int npack = cols / W;
    float v[NV][W];
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < NV; ++j) {
        const int p = j * kBlock + threadIdx.x;
        if (p < npack) {
            const Pack<T, W> pk = xr[p];
#pragma unroll
            for (int k = 0; k < W; ++k) {
                v[j][k] = to_f(pk.v[k]);
                s += v[j][k];
            }
        }
    }
    const float mean = block_sum(s, red) / cols;
    float q = 0.0f;
#pragma unroll
    for (int j = 0; j < NV; ++j) {
        if (j * kBlock + static_cast<int>(threadIdx.x) < npack) {
#pragma unroll
            for (int k = 0; k < W; ++k) {
                v[j][k] -= mean;
                q += v[j][k] * v[j][k];
            }
        }
    }
    const float rstd = rsqrtf(block_sum(q, red) / cols + eps);
    const Pack<T, W>* g = reinterpret_cast<const Pack<T, W>*>(gamma);
    const Pack<T, W>* b = reinterpret_cast<const Pack<T, W>*>(beta);
#pragma unroll
    for (int j = 0; j < NV; ++j) {
        const int p = j * kBlock + threadIdx.x;
        if (p < npack) {
            const Pack<T, W> gp = g[p], bp = b[p];
            Pack<T, W> out;
#pragma unroll
            for (int k = 0; k < W; ++k) out.v[k] = from_f<T>(fmaf(v[j][k] * rstd, to_f(gp.v[k]), to_f(bp.v[k])));
            yr[p] = out;
        }
    }
}

// Rows too long for registers: mean pass, variance pass, write pass.
template <typename T>
__global__ void __launch_bounds__(kBlock) layernorm_stream(const T* __restrict__ x, const T* __restrict__ gamma,
                                                           const T* __restrict__ beta, T* __restrict__ y, int cols,
                                                           float eps) {
    __shared__ float red[kBlock / 32];
    const size_t base = static_cast<size_t>(blockIdx.x) * cols;
    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += kBlock) s += to_f(x[base + c]);
    const float mean = block_sum(s, red) / cols;
    float q = 0.0f;
    for (int c = threadIdx.x; c < cols; c += kBlock) {
        const float d = to_f(x[base + c]) - mean;
        q += d * d;
    }
    const float rstd = rsqrtf(block_sum(q, red) / cols + eps);
    for (int c = threadIdx.x; c < cols; c += kBlock)
        y[base + c] = from_f<T>(fmaf((to_f(x[base + c]) - mean) * rstd, to_f(gamma[c]), to_f(beta[c])));
}

template <typename T, int W>
bool try_regs(const T* x, const T* g, const T* b, T* y, int rows, int cols, float eps, cudaStream_t st) {
    const int per_thread = (cols / W + kBlock - 1) / kBlock;
    if (per_thread <= 1) layernorm_regs<T, W, 1><<<rows, kBlock, 0, st>>>(x, g, b, y, cols, eps);
    else if (per_thread <= 2) layernorm_regs<T, W, 2><<<rows, kBlock, 0, st>>>(x, g, b, y, cols, eps);
    else if (per_thread <= 4) layernorm_regs<T, W, 4><<<rows, kBlock, 0, st>>>(x, g, b, y, cols, eps);
    else if (per_thread <= 8) layernorm_regs<T, W, 8><<<rows, kBlock, 0, st>>>(x, g, b, y, cols, eps);
    else if (W == 1 && per_thread <= 16) layernorm_regs<T, 1, 16><<<rows, kBlock, 0, st>>>(x, g, b, y, cols, eps);
    else if (W == 1 && per_thread <= 32) layernorm_regs<T, 1, 32><<<rows, kBlock, 0, st>>>(x, g, b, y, cols, eps);
    else return false;
    return true;
}

template <typename T>
void launch(const T* x, const T* g, const T* b, T* y, int rows, int cols, float eps, cudaStream_t st) {
    if (rows <= 0 || cols <= 0) return;
    constexpr int kVec = 16 / sizeof(T);
    const bool aligned = cols % kVec == 0 && (reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(y) |
                                              reinterpret_cast<uintptr_t>(g) | reinterpret_cast<uintptr_t>(b)) %
                                                     16 == 0;
    if (aligned && try_regs<T, kVec>(x, g, b, y, rows, cols, eps, st)) return;
    if (!aligned && try_regs<T, 1>(x, g, b, y, rows, cols, eps, st)) return;
    layernorm_stream<T><<<rows, kBlock, 0, st>>>(x, g, b, y, cols, eps);
}

}  // namespace ref

using namespace ref;

void layernorm_forward(const __half* x, const __half* gamma, const __half* beta, __half* y, int rows, int cols,
                       float eps, cudaStream_t stream) {
    launch(x, gamma, beta, y, rows, cols, eps, stream);
}
