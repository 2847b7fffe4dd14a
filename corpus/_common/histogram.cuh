// histogram.cuh: harness of the "histogram" family. A task's test_main.cu picks the two sizes
// (correctness, timing) and calls histogram_task::run(...).
//
// Bytes are generated on the device from the run's seed (fresh for every run and every timed launch)
// with a triangular distribution (the mean of two uniform bytes), so bins differ in load as in real
// data. The 256 counters are poisoned before every launch and compared exactly with a reference count
// made on the device from the same bytes drawn again from their seed; a failure also says what the
// counts add up to. Timing mode checks the last timed launch too.
#pragma once

#include "beaver.cuh"
#include "histogram_api.h"

namespace histogram_task {

__host__ __device__ inline uint64_t mix64(uint64_t z) {
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

__global__ void gen_bytes(uint8_t* d, size_t n, uint64_t seed) {
    for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<size_t>(gridDim.x) * blockDim.x) {
        const uint64_t h = mix64(seed ^ mix64(i));
        d[i] = static_cast<uint8_t>(((h & 0xFF) + ((h >> 8) & 0xFF)) >> 1);
    }
}

// The reference count: the checked launch's bytes drawn again from their seed on the device (the
// solution never sees these), counted per block in shared memory and added into 64-bit bins.
__global__ void reference_count(size_t n, uint64_t seed, unsigned long long* bins) {
    __shared__ unsigned int local[256];
    for (int b = threadIdx.x; b < 256; b += blockDim.x) local[b] = 0;
    __syncthreads();
    for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<size_t>(gridDim.x) * blockDim.x) {
        const uint64_t h = mix64(seed ^ mix64(i));
        atomicAdd(&local[((h & 0xFF) + ((h >> 8) & 0xFF)) >> 1], 1u);
    }
    __syncthreads();
    for (int b = threadIdx.x; b < 256; b += blockDim.x)
        if (local[b]) atomicAdd(&bins[b], static_cast<unsigned long long>(local[b]));
}

inline bool check(const char* what, size_t n, uint64_t input_seed, const beaver::DeviceBuffer<unsigned int>& bins) {
    beaver::DeviceBuffer<unsigned long long> counts(256);
    BEAVER_CHECK(cudaMemset(counts.ptr, 0, 256 * sizeof(unsigned long long)));
    reference_count<<<1024, 256>>>(n, input_seed, counts.ptr);
    beaver::sync_check("the reference count");
    const std::vector<unsigned long long> ref = counts.download();
    const std::vector<unsigned int> got = bins.download();
    size_t bad = 0;
    unsigned long long total = 0;
    for (int b = 0; b < 256; ++b) {
        total += got[b];
        if (got[b] != ref[b]) {
            if (bad < 5)
                std::fprintf(stderr, "MISMATCH %s at bin %d: got %u expected %llu (diff %lld)\n", what, b, got[b],
                             ref[b], static_cast<long long>(got[b]) - static_cast<long long>(ref[b]));
            ++bad;
        }
    }
    if (bad) {
        std::fprintf(stderr, "FAILED %s: %zu of 256 bins differ; counts add up to %llu for n=%zu\n", what, bad, total,
                     n);
        return false;
    }
    std::printf("OK %s: 256 bins exact, n=%zu\n", what, n);
    return true;
}

inline int run(int argc, char** argv, size_t check_n, size_t bench_n) {
    const beaver::Args a = beaver::parse_args(argc, argv);
    const size_t n = a.bench ? bench_n : check_n;
    std::printf("histogram256 n=%zu bytes seed=%llu\n", n, static_cast<unsigned long long>(a.seed));
    beaver::DeviceBuffer<uint8_t> data(n);
    beaver::DeviceBuffer<unsigned int> bins(256);
    uint64_t seed = a.seed;
    auto prepare = [&] {
        gen_bytes<<<2048, 256>>>(data.ptr, n, seed++);
        BEAVER_CHECK(cudaGetLastError());
        bins.poison();
    };
    auto launch = [&] { histogram256(data.ptr, n, bins.ptr, 0); };
    bool ok = true;
    for (int call = 0; call < 2 && ok; ++call) {
        prepare();
        BEAVER_CHECK(cudaDeviceSynchronize());
        launch();
        beaver::sync_check("histogram256");
        if (call == 0) beaver::poison_left("bins", bins.ptr, bins.n);
        ok = check(call == 0 ? "histogram" : "histogram (second call)", n, seed - 1, bins);
    }
    if (!ok || !a.bench) return beaver::finish(ok);
    beaver::bench(a, launch, prepare);
    beaver::sync_check("histogram256 (timed)");
    beaver::poison_left("bins_timed", bins.ptr, bins.n);
    ok = check("histogram after timing", n, seed - 1, bins);
    return beaver::finish(ok);
}

}  // namespace histogram_task
