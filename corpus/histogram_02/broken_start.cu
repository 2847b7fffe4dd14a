// 256-bin byte histogram: per-block shared-memory histograms (one sub-histogram per warp to spread
// collisions), 16-byte loads in a grid-stride loop, and one global atomic per non-empty bin per block.
// CUDA calls in the launcher are checked with the samples' checkCudaErrors.
#include "histogram_api.h"

#include <helper_cuda.h>

namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kBins = 256;

__device__ __forceinline__ void count4(unsigned* h, unsigned w) {
    atomicAdd(h + (w & 0xFFu), 1u);
    atomicAdd(h + ((w >> 8) & 0xFFu), 1u);
    atomicAdd(h + ((w >> 16) & 0xFFu), 1u);
    atomicAdd(h + (w >> 24), 1u);
}

__global__ void __launch_bounds__(kThreads) histogram_smem(const uint8_t* __restrict__ data, size_t n,
                                                           unsigned* __restrict__ bins) {
    __shared__ unsigned hist[kWarps][kBins];
    for (int i = threadIdx.x; i < kWarps * kBins; i += kThreads) (&hist[0][0])[i] = 0u;
    __syncthreads();
    unsigned* h = hist[threadIdx.x / 32];
    const uint4* d4 = reinterpret_cast<const uint4*>(data);
    const size_t n16 = n / 16;
    const size_t tid = blockIdx.x * static_cast<size_t>(kThreads) + threadIdx.x;
    for (size_t i = tid; i < n16; i += static_cast<size_t>(gridDim.x) * kThreads) {
        const uint4 v = d4[i];
        count4(h, v.x);
        count4(h, v.y);
        count4(h, v.z);
        count4(h, v.w);
    }
    if (tid < n % 16) atomicAdd(h + data[n16 * 16 + tid], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < kBins; b += kThreads) {
        unsigned s = 0;
        for (int w = 0; w < kWarps; ++w) s += hist[w][b];
        if (s) atomicAdd(bins + b, s);
    }
}

}  // namespace

void histogram256(const uint8_t* data, size_t n, unsigned int* bins, cudaStream_t stream) {
    int dev = 0, sms = 0;
    checkCudaErrors(cudaGetDevice(&dev));
    checkCudaErrors(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    checkCudaErrors(cudaMemsetAsync(bins, 0, kBins * sizeof(unsigned), stream));
    histogram_smem<<<sms * 8, kThreads, 0, stream>>>(data, n, bins);
    getLastCudaError("histogram_smem launch failed");
}
