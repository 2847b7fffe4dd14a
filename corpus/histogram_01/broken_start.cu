// 256-bin byte histogram without any atomics: every thread counts into its own private histogram in
// global memory (no contention at all), and a second kernel adds the private histograms bin by bin,
// one block per bin, with a shared-memory tree.
#include "histogram_api.h"

#include <cstdio>

namespace {

constexpr int kThreads = 256;
constexpr int kBins = 256;

__global__ void __launch_bounds__(kThreads) private_count(const uint8_t* __restrict__ data, size_t n,
                                                          unsigned int* __restrict__ priv) {
    const size_t t = blockIdx.x * static_cast<size_t>(kThreads) + threadIdx.x;
    if (t >= n) return;
    unsigned int* mine = priv + t * kBins;
    for (int b = 0; b < kBins; ++b) mine[b] = 0u;
    mine[data[t]] += 1u;
}

__global__ void __launch_bounds__(kThreads) merge_bins(const unsigned int* __restrict__ priv, size_t threads,
                                                       unsigned int* __restrict__ bins) {
    __shared__ unsigned int red[kThreads];
    const int b = blockIdx.x;
    unsigned int s = 0;
    for (size_t t = threadIdx.x; t < threads; t += kThreads) s += priv[t * kBins + b];
    red[threadIdx.x] = s;
    __syncthreads();
    for (int o = kThreads / 2; o > 0; o >>= 1) {
        if (threadIdx.x < o) red[threadIdx.x] += red[threadIdx.x + o];
        __syncthreads();
    }
    if (threadIdx.x == 0) bins[b] = red[0];
}

}  // namespace

void histogram256(const uint8_t* data, size_t n, unsigned int* bins, cudaStream_t stream) {
    static unsigned int* priv = nullptr;
    static size_t priv_threads = 0;
    const size_t threads = n;  // one thread per byte
    if (threads > priv_threads) {
        cudaFree(priv);
        const cudaError_t err = cudaMalloc(&priv, threads * kBins * sizeof(unsigned int));
        if (err != cudaSuccess) {
            std::fprintf(stderr, "histogram256: cudaMalloc(%zu bytes) failed: %s\n",
                         threads * kBins * sizeof(unsigned int), cudaGetErrorString(err));
            return;
        }
        priv_threads = threads;
    }
    const unsigned blocks = static_cast<unsigned>((threads + kThreads - 1) / kThreads);
    private_count<<<blocks, kThreads, 0, stream>>>(data, n, priv);
    merge_bins<<<kBins, kThreads, 0, stream>>>(priv, threads, bins);
}
