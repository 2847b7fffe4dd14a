// Row softmax: one thread block per row. When a row is a whole number of 16-byte vectors it is read
// once with 16-byte loads into registers (max, exp and sum from registers, one 16-byte store per
// vector); other widths use coalesced scalar accesses, still register-resident; rows too long for
// registers fall back to an online (max, sum) pass plus a write pass.
#include "softmax_api.h"

#include <cfloat>
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
// Block-wide max / sum; every thread gets the result. `red` holds one float per warp.
__device__ __forceinline__ float block_max(float v, float* red) {
    v = warp_max(v);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    __syncthreads();
    if (lane == 0) red[warp] = v;
    __syncthreads();
    v = lane < (kBlock >> 5) ? red[lane] : -FLT_MAX;
    return warp_max(v);
}
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
__global__ void __launch_bounds__(kBlock) softmax_regs(const T* __restrict__ x, T* __restrict__ y, int cols) {
    __shared__ float red[kBlock / 32];
    const size_t base = static_cast<size_t>(blockIdx.x) * cols;
    const Pack<T, W>* xr = reinterpret_cast<const Pack<T, W>*>(x + base);
    Pack<T, W>* yr = reinterpret_cast<Pack<T, W>*>(y + base);
    const int npack = cols / W;
    float v[NV][W];
#pragma unroll
    for (int j = 0; j < NV; ++j) {
        const int p = j * kBlock + threadIdx.x;
        if (p < npack) {
            const Pack<T, W> pk = xr[p];
#pragma unroll
            for (int k = 0; k < W; ++k) v[j][k] = to_f(pk.v[k]);
        } else {
#pragma unroll
            for (int k = 0; k < W; ++k) v[j][k] = -FLT_MAX;
        }
    }
    float m = -FLT_MAX;
#pragma unroll
    for (int j = 0; j < NV; ++j)
#pragma unroll
        for (int k = 0; k < W; ++k) m = fmaxf(m, v[j][k]);
    m = block_max(m, red);
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < NV; ++j)
#pragma unroll
        for (int k = 0; k < W; ++k) {
            v[j][k] = __expf(v[j][k] - m);
            s += v[j][k];
        }
    const float inv = 1.0f / block_sum(s, red);
#pragma unroll
    for (int j = 0; j < NV; ++j) {
        const int p = j * kBlock + threadIdx.x;
        if (p < npack) {
            Pack<T, W> pk;
#pragma unroll
            for (int k = 0; k < W; ++k) pk.v[k] = from_f<T>(v[j][k] * inv);
            yr[p] = pk;
        }
    }
}

// Rows too long for registers: online max/sum, then a second read that writes the result.
template <typename T>
__global__ void __launch_bounds__(kBlock) softmax_stream(const T* __restrict__ x, T* __restrict__ y, int cols) {
    __shared__ float red[kBlock / 32];
    const size_t base = static_cast<size_t>(blockIdx.x) * cols;
    float m = -FLT_MAX, s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += kBlock) {
        const float v = to_f(x[base + c]);
        const float nm = fmaxf(m, v);
        s = s * __expf(m - nm) + __expf(v - nm);
        m = nm;
    }
    const float bm = block_max(m, red);
    const float inv = 1.0f / block_sum(s * __expf(m - bm), red);
    for (int c = threadIdx.x; c < cols; c += kBlock) y[base + c] = from_f<T>(__expf(to_f(x[base + c]) - bm) * inv);
}

template <typename T, int W>
bool try_regs(const T* x, T* y, int rows, int cols, cudaStream_t stream) {
    const int per_thread = (cols / W + kBlock - 1) / kBlock;
    if (per_thread <= 1) softmax_regs<T, W, 1><<<rows, kBlock, 0, stream>>>(x, y, cols);
    else if (per_thread <= 2) softmax_regs<T, W, 2><<<rows, kBlock, 0, stream>>>(x, y, cols);
    else if (per_thread <= 4) softmax_regs<T, W, 4><<<rows, kBlock, 0, stream>>>(x, y, cols);
    else if (per_thread <= 8) softmax_regs<T, W, 8><<<rows, kBlock, 0, stream>>>(x, y, cols);
    else if (W == 1 && per_thread <= 16) softmax_regs<T, 1, 16><<<rows, kBlock, 0, stream>>>(x, y, cols);
    else if (W == 1 && per_thread <= 32) softmax_regs<T, 1, 32><<<rows, kBlock, 0, stream>>>(x, y, cols);
    else return false;
    return true;
}

template <typename T>
void launch(const T* x, T* y, int rows, int cols, cudaStream_t stream) {
    if (rows <= 0 || cols <= 0) return;
    constexpr int kVec = 16 / sizeof(T);
    const bool aligned = cols % kVec == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0 &&
                         reinterpret_cast<uintptr_t>(y) % 16 == 0;
    if (aligned && try_regs<T, kVec>(x, y, rows, cols, stream)) return;
    if (!aligned && try_regs<T, 1>(x, y, rows, cols, stream)) return;
    softmax_stream<T><<<rows, kBlock, 0, stream>>>(x, y, cols);
}

}  // namespace ref

using namespace ref;

void softmax_rows(const __half* x, __half* y, int rows, int cols, cudaStream_t stream) {
    launch(x, y, rows, cols, stream);
}
