// Inclusive scan in a single pass with decoupled look-back. Each block takes the next tile of 4096
// elements (tile order comes from an atomic counter, so a tile only ever waits for tiles that are
// already running), reads it with 16-byte loads (each warp owns 512 consecutive elements), scans it in
// registers with warp shuffles, publishes its aggregate, then one warp looks back over the predecessors'
// published (flag, value) words, 32 at a time, until it meets an inclusive prefix. The flag and the value
// share one 64-bit word, so a reader never sees a flag without its value. Memory traffic: one read and
// one write of the array, plus 8 bytes per tile.
#include "scan_api.h"

#include <cstdint>

namespace ref {

constexpr int kBlock = 256;
constexpr int kWarps = kBlock / 32;
constexpr int kTile = kBlock * 16;        // 4 vectors of 4 elements per thread
constexpr int kMaxTiles = 1 << 20;        // n up to 2^32 elements
constexpr unsigned kFlagAggregate = 1u;   // value = this tile's sum
constexpr unsigned kFlagPrefix = 2u;      // value = sum of tiles 0..this one

// Word 0 is the tile counter; word 1 + t is tile t's published (flag << 32 | value bits).
__device__ unsigned long long g_ws[1 + kMaxTiles];

template <typename T> __device__ __forceinline__ unsigned bits(T v);
template <> __device__ __forceinline__ unsigned bits<int>(int v) { return static_cast<unsigned>(v); }
template <> __device__ __forceinline__ unsigned bits<float>(float v) { return __float_as_uint(v); }
template <typename T> __device__ __forceinline__ T from_bits(unsigned b);
template <> __device__ __forceinline__ int from_bits<int>(unsigned b) { return static_cast<int>(b); }
template <> __device__ __forceinline__ float from_bits<float>(unsigned b) { return __uint_as_float(b); }

template <typename T> struct Vec4;
template <> struct Vec4<int> { using type = int4; };
template <> struct Vec4<float> { using type = float4; };

template <typename T>
__device__ __forceinline__ void publish(unsigned tile, unsigned flag, T value) {
    volatile unsigned long long* w = g_ws + 1 + tile;
    *w = (static_cast<unsigned long long>(flag) << 32) | bits(value);
}

template <typename T>
__device__ __forceinline__ T warp_reduce(T v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// Sum of all tiles before `tile` (tile > 0), by warp 0.
template <typename T>
__device__ T look_back(int tile, int lane) {
    T prefix = T(0);
    int pred = tile - 1;
    while (true) {
        const int idx = pred - lane;
        const unsigned long long w =
            idx >= 0 ? *reinterpret_cast<volatile unsigned long long*>(g_ws + 1 + idx)
                     : (static_cast<unsigned long long>(kFlagPrefix) << 32);
        const unsigned flag = static_cast<unsigned>(w >> 32);
        if (__any_sync(0xffffffffu, flag == 0u)) continue;  // a predecessor has not published yet
        const unsigned prefixes = __ballot_sync(0xffffffffu, flag == kFlagPrefix);
        const int stop = prefixes ? __ffs(prefixes) - 1 : 31;  // nearest predecessor with a full prefix
        prefix += warp_reduce(lane <= stop ? from_bits<T>(static_cast<unsigned>(w)) : T(0));
        if (prefixes) return prefix;
        pred -= 32;
    }
}

template <typename T>
__global__ void __launch_bounds__(kBlock) scan_kernel(const T* __restrict__ x, T* __restrict__ out, size_t n) {
    using V = typename Vec4<T>::type;
    __shared__ unsigned s_tile;
    __shared__ T s_warp[kWarps];
    __shared__ T s_prefix;
    if (threadIdx.x == 0) s_tile = atomicAdd(reinterpret_cast<unsigned*>(g_ws), 1u);
    __syncthreads();
    const unsigned tile = s_tile;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const size_t seg = static_cast<size_t>(tile) * kTile + static_cast<size_t>(warp) * 512;
    V v[4];
    if (static_cast<size_t>(tile + 1) * kTile <= n) {
#pragma unroll
        for (int j = 0; j < 4; ++j) v[j] = __ldcs(reinterpret_cast<const V*>(x + seg) + j * 32 + lane);
    } else {
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const size_t e = seg + (j * 32 + lane) * 4;
            v[j].x = e < n ? x[e] : T(0);
            v[j].y = e + 1 < n ? x[e + 1] : T(0);
            v[j].z = e + 2 < n ? x[e + 2] : T(0);
            v[j].w = e + 3 < n ? x[e + 3] : T(0);
        }
    }
    // Scan the warp's 512 elements: within each vector, then across lanes, carrying between vectors.
    T carry = T(0);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        v[j].y += v[j].x;
        v[j].z += v[j].y;
        v[j].w += v[j].z;
        T incl = v[j].w;
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
            const T up = __shfl_up_sync(0xffffffffu, incl, o);
            if (lane >= o) incl += up;
        }
        const T add = carry + incl - v[j].w;
        v[j].x += add;
        v[j].y += add;
        v[j].z += add;
        v[j].w += add;
        carry += __shfl_sync(0xffffffffu, incl, 31);
    }
    if (lane == 31) s_warp[warp] = carry;
    __syncthreads();
    if (warp == 0) {
        // Exclusive scan of the warp totals (lanes 0..kWarps-1) and the tile aggregate.
        const T t = lane < kWarps ? s_warp[lane] : T(0);
        T incl = t;
#pragma unroll
        for (int o = 1; o < kWarps; o <<= 1) {
            const T up = __shfl_up_sync(0xffffffffu, incl, o);
            if (lane >= o) incl += up;
        }
        const T aggregate = __shfl_sync(0xffffffffu, incl, kWarps - 1);
        T before = T(0);
        if (tile == 0) {
            if (lane == 0) publish<T>(0, kFlagPrefix, aggregate);
        } else {
            if (lane == 0) publish<T>(tile, kFlagAggregate, aggregate);
            before = look_back<T>(static_cast<int>(tile), lane);
            if (lane == 0) publish<T>(tile, kFlagPrefix, before + aggregate);
        }
        __syncwarp();
        if (lane < kWarps) s_warp[lane] = before + incl - t;
    }
    __syncthreads();
    const T add = s_warp[warp];
    if (static_cast<size_t>(tile + 1) * kTile <= n) {
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            v[j].x += add;
            v[j].y += add;
            v[j].z += add;
            v[j].w += add;
            __stcs(reinterpret_cast<V*>(out + seg) + j * 32 + lane, v[j]);
        }
    } else {
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const size_t e = seg + (j * 32 + lane) * 4;
            if (e < n) out[e] = v[j].x + add;
            if (e + 1 < n) out[e + 1] = v[j].y + add;
            if (e + 2 < n) out[e + 2] = v[j].z + add;
            if (e + 3 < n) out[e + 3] = v[j].w + add;
        }
    }
}

template <typename T>
void launch(const T* x, T* out, size_t n, cudaStream_t stream) {
    if (n == 0) return;
    const size_t tiles = (n + kTile - 1) / kTile;
    if (tiles > static_cast<size_t>(kMaxTiles)) return;  // beyond 2^32 elements: not supported
    void* ws = nullptr;
    cudaGetSymbolAddress(&ws, g_ws);
    cudaMemsetAsync(ws, 0, (1 + tiles) * sizeof(unsigned long long), stream);
    scan_kernel<T><<<static_cast<unsigned>(tiles), kBlock, 0, stream>>>(x, out, n);
}

}  // namespace ref

using namespace ref;

void inclusive_scan(const int* x, int* out, size_t n, cudaStream_t stream) { launch(x, out, n, stream); }
