// 256-bin byte histogram: a grid-stride loop reads 16 bytes per thread per step (uint4, coalesced) and
// counts each byte with an atomicAdd on the output bins, so there is no per-block state to merge.
#include "histogram_api.h"

namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ void count_word(unsigned int* bins, unsigned w) {
    atomicAdd(bins + (w & 0xFFu), 1u);
    atomicAdd(bins + ((w >> 8) & 0xFFu), 1u);
    atomicAdd(bins + ((w >> 16) & 0xFFu), 1u);
    atomicAdd(bins + (w >> 24), 1u);
}

__global__ void __launch_bounds__(kThreads) histogram_kernel(const uint8_t* __restrict__ data, size_t n,
                                                             unsigned int* __restrict__ bins) {
    const uint4* d4 = reinterpret_cast<const uint4*>(data);
    const size_t n16 = n / 16;
    const size_t stride = static_cast<size_t>(gridDim.x) * kThreads;
    const size_t tid = blockIdx.x * static_cast<size_t>(kThreads) + threadIdx.x;
    for (size_t i = tid; i < n16; i += stride) {
        const uint4 v = d4[i];
        count_word(bins, v.x);
        count_word(bins, v.y);
        count_word(bins, v.z);
        count_word(bins, v.w);
    }
    if (tid < n % 16) atomicAdd(bins + data[n16 * 16 + tid], 1u);
}

}  // namespace

void histogram256(const uint8_t* data, size_t n, unsigned int* bins, cudaStream_t stream) {
    cudaMemsetAsync(bins, 0, 256 * sizeof(unsigned int), stream);
    int dev = 0, sms = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    histogram_kernel<<<sms * 8, kThreads, 0, stream>>>(data, n, bins);
}
