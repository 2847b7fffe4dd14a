// Inclusive fp32 scan in one launch with no inter-block coordination: a single 1024-thread block walks
// the array in chunks of 4096 elements. Each thread loads one float4 (coalesced), scans it, the block
// combines the 32 warp totals in shared memory, and the running total of all previous chunks is carried
// from chunk to chunk in a register, so every element is read once and written once.
#include "scan_api.h"

namespace {

constexpr int kThreads = 1024;
constexpr int kChunk = kThreads * 4;

__device__ __forceinline__ float warp_inclusive(float v, int lane) {
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const float up = __shfl_up_sync(0xffffffffu, v, o);
        if (lane >= o) v += up;
    }
    return v;
}

__global__ void __launch_bounds__(kThreads) scan_chunks_kernel(const float* __restrict__ x, float* __restrict__ out,
                                                               size_t n) {
    __shared__ float warp_tot[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    float carry = 0.0f;
    for (size_t base = 0; base < n; base += kChunk) {
        const size_t e = base + static_cast<size_t>(threadIdx.x) * 4;
        float4 v;
        if (e + 3 < n) {
            v = *reinterpret_cast<const float4*>(x + e);
        } else {
            v.x = e < n ? x[e] : 0.0f;
            v.y = e + 1 < n ? x[e + 1] : 0.0f;
            v.z = e + 2 < n ? x[e + 2] : 0.0f;
            v.w = e + 3 < n ? x[e + 3] : 0.0f;
        }
        v.y += v.x;
        v.z += v.y;
        v.w += v.z;
        const float incl = warp_inclusive(v.w, lane);
        if (lane == 31) warp_tot[warp] = incl;
        __syncthreads();
        if (warp == 0) warp_tot[lane] = warp_inclusive(warp_tot[lane], lane);
        __syncthreads();
        const float add = carry + (warp > 0 ? warp_tot[warp - 1] : 0.0f) + (incl - v.w);
        const float4 r = make_float4(v.x + add, v.y + add, v.z + add, v.w + add);
        if (e + 3 < n) {
            *reinterpret_cast<float4*>(out + e) = r;
        } else {
            if (e < n) out[e] = r.x;
            if (e + 1 < n) out[e + 1] = r.y;
            if (e + 2 < n) out[e + 2] = r.z;
        }
        carry += warp_tot[31];
        __syncthreads();
    }
}

}  // namespace

void inclusive_scan(const float* x, float* out, size_t n, cudaStream_t stream) {
    if (n == 0) return;
    scan_chunks_kernel<<<1, kThreads, 0, stream>>>(x, out, n);
}
