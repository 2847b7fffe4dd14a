// 256-bin byte histogram: a persistent grid walks the data with 16-byte loads (two in flight per thread
// per step); each warp counts into its own shared-memory sub-histogram (fewer collisions between warps
// than one per block), the block adds its sub-histograms and merges them into the global bins with one
// atomic per non-empty bin. The bins are zeroed on the stream first.
#include "histogram_api.h"

namespace {

constexpr int kBlock = 512;
constexpr int kWarps = kBlock / 32;
constexpr int kBins = 256;

__device__ __forceinline__ void count_word(unsigned* h, unsigned w) {
    atomicAdd(h + (w & 0xFFu), 1u);
    atomicAdd(h + ((w >> 8) & 0xFFu), 1u);
    atomicAdd(h + ((w >> 16) & 0xFFu), 1u);
    atomicAdd(h + (w >> 24), 1u);
}
__device__ __forceinline__ void count_vec(unsigned* h, uint4 v) {
    count_word(h, v.x);
    count_word(h, v.y);
    count_word(h, v.z);
    count_word(h, v.w);
}

__global__ void __launch_bounds__(kBlock) histogram_kernel(const uint8_t* __restrict__ data, size_t n,
                                                           unsigned* __restrict__ bins) {
    __shared__ unsigned sub[kWarps][kBins];
    for (int i = threadIdx.x; i < kWarps * kBins; i += kBlock) (&sub[0][0])[i] = 0u;
    __syncthreads();
    unsigned* h = sub[threadIdx.x >> 5];
    const uint4* d4 = reinterpret_cast<const uint4*>(data);
    const size_t n16 = n / 16;
    const size_t stride = static_cast<size_t>(gridDim.x) * kBlock;
    size_t i = blockIdx.x * static_cast<size_t>(kBlock) + threadIdx.x;
    for (; i + stride < n16; i += 2 * stride) {
        const uint4 a = __ldcs(d4 + i), b = __ldcs(d4 + i + stride);
        count_vec(h, a);
        count_vec(h, b);
    }
    if (i < n16) count_vec(h, __ldcs(d4 + i));
    const size_t t = blockIdx.x * static_cast<size_t>(kBlock) + threadIdx.x;
    if (t < n - n16 * 16) atomicAdd(h + data[n16 * 16 + t], 1u);  // the last n % 16 bytes
    __syncthreads();
    for (int b = threadIdx.x; b < kBins; b += kBlock) {
        unsigned s = 0;
#pragma unroll
        for (int w = 0; w < kWarps; ++w) s += sub[w][b];
        if (s) atomicAdd(bins + b, s);
    }
}

int grid_size() {
    static int blocks = 0;
    if (blocks == 0) {
        int dev = 0, sms = 0, per_sm = 0;
        cudaGetDevice(&dev);
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, histogram_kernel, kBlock, 0);
        blocks = sms * (per_sm > 0 ? per_sm : 1);
    }
    return blocks;
}

}  // namespace

void histogram256(const uint8_t* data, size_t n, unsigned int* bins, cudaStream_t stream) {
    cudaMemsetAsync(bins, 0, kBins * sizeof(unsigned), stream);
    if (n == 0) return;
    int blocks = grid_size();
    const size_t needed = (n / 16 + kBlock - 1) / kBlock;
    if (needed < static_cast<size_t>(blocks)) blocks = needed > 0 ? static_cast<int>(needed) : 1;
    histogram_kernel<<<blocks, kBlock, 0, stream>>>(data, n, bins);
}
