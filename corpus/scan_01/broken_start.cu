// Inclusive int32 scan, reduce-then-scan in three launches:
//   1. every block sums its 4096-element tile (int4 loads, warp shuffles) into tile_sums;
//   2. one block scans tile_sums into per-tile offsets;
//   3. every block scans its tile again in registers and adds its tile's offset.
// Traffic is 3 passes over the data (read, read, write), with no inter-block waiting at all.
#include "scan_api.h"

namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kTile = kThreads * 16;

__device__ __forceinline__ int warp_inclusive(int v, int lane) {
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const int up = __shfl_up_sync(0xffffffffu, v, o);
        if (lane >= o) v += up;
    }
    return v;
}

// Loads the 16 elements of this thread: warp w owns 512 consecutive elements of the tile, lane l holds
// vectors l, l + 32, l + 64, l + 96 of them.
__device__ __forceinline__ void load_tile(const int* x, size_t n, size_t tile, int4 (&v)[4]) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const size_t seg = tile * kTile + static_cast<size_t>(warp) * 512;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        const size_t e = seg + (j * 32 + lane) * 4;
        if (e + 3 < n) {
            v[j] = *reinterpret_cast<const int4*>(x + e);
        } else {
            v[j].x = e < n ? x[e] : 0;
            v[j].y = e + 1 < n ? x[e + 1] : 0;
            v[j].z = e + 2 < n ? x[e + 2] : 0;
            v[j].w = e + 3 < n ? x[e + 3] : 0;
        }
    }
}

__global__ void __launch_bounds__(kThreads) tile_sums_kernel(const int* __restrict__ x, size_t n,
                                                             int* __restrict__ tile_sums) {
    __shared__ int red[kWarps];
    int4 v[4];
    load_tile(x, n, blockIdx.x, v);
    int s = 0;
#pragma unroll
    for (int j = 0; j < 4; ++j) s += (v[j].x + v[j].y) + (v[j].z + v[j].w);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) red[warp] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
        int t = 0;
        for (int w = 0; w < kWarps; ++w) t += red[w];
        tile_sums[blockIdx.x] = t;
    }
}

// One block of 1024 threads turns the tile sums into the offset each tile adds to its local scan.
__global__ void __launch_bounds__(1024) tile_offsets_kernel(const int* __restrict__ tile_sums, int tiles,
                                                            int* __restrict__ offsets) {
    __shared__ int warp_tot[32];
    __shared__ int carry;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (threadIdx.x == 0) carry = 0;
    __syncthreads();
    for (int base = 0; base < tiles; base += 1024) {
        const int i = base + threadIdx.x;
        const int v = i < tiles ? tile_sums[i] : 0;
        const int incl = warp_inclusive(v, lane);
        if (lane == 31) warp_tot[warp] = incl;
        __syncthreads();
        if (warp == 0) warp_tot[lane] = warp_inclusive(warp_tot[lane], lane);
        __syncthreads();
        const int before_warp = warp > 0 ? warp_tot[warp - 1] : 0;
        if (i < tiles) offsets[i] = carry + before_warp + incl;
        __syncthreads();
        if (threadIdx.x == 0) carry += warp_tot[31];
        __syncthreads();
    }
}

__global__ void __launch_bounds__(kThreads) scan_tiles_kernel(const int* __restrict__ x, size_t n,
                                                              const int* __restrict__ offsets, int* __restrict__ out) {
    __shared__ int warp_before[kWarps];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int4 v[4];
    load_tile(x, n, blockIdx.x, v);
    int carry = 0;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        v[j].y += v[j].x;
        v[j].z += v[j].y;
        v[j].w += v[j].z;
        const int incl = warp_inclusive(v[j].w, lane);
        const int add = carry + incl - v[j].w;
        v[j].x += add;
        v[j].y += add;
        v[j].z += add;
        v[j].w += add;
        carry += __shfl_sync(0xffffffffu, incl, 31);
    }
    if (lane == 31) warp_before[warp] = carry;
    __syncthreads();
    if (threadIdx.x == 0) {
        int run = offsets[blockIdx.x];
        for (int w = 0; w < kWarps; ++w) {
            const int t = warp_before[w];
            warp_before[w] = run;
            run += t;
        }
    }
    __syncthreads();
    const int add = warp_before[warp];
    const size_t seg = static_cast<size_t>(blockIdx.x) * kTile + static_cast<size_t>(warp) * 512;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        const size_t e = seg + (j * 32 + lane) * 4;
        const int4 r = make_int4(v[j].x + add, v[j].y + add, v[j].z + add, v[j].w + add);
        if (e + 3 < n) {
            *reinterpret_cast<int4*>(out + e) = r;
        } else {
            if (e < n) out[e] = r.x;
            if (e + 1 < n) out[e + 1] = r.y;
            if (e + 2 < n) out[e + 2] = r.z;
        }
    }
}

}  // namespace

void inclusive_scan(const int* x, int* out, size_t n, cudaStream_t stream) {
    static int* ws = nullptr;
    static size_t ws_tiles = 0;
    if (n == 0) return;
    const size_t tiles = (n + kTile - 1) / kTile;
    if (tiles > ws_tiles) {
        cudaFree(ws);
        cudaMalloc(&ws, 2 * tiles * sizeof(int));
        ws_tiles = tiles;
    }
    int* tile_sums = ws;
    int* offsets = ws + tiles;
    tile_sums_kernel<<<static_cast<unsigned>(tiles), kThreads, 0, stream>>>(x, n, tile_sums);
    tile_offsets_kernel<<<1, 1024, 0, stream>>>(tile_sums, static_cast<int>(tiles), offsets);
    scan_tiles_kernel<<<static_cast<unsigned>(tiles), kThreads, 0, stream>>>(x, n, offsets, out);
}
