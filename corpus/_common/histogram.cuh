// histogram.cuh: harness of the "histogram" family. A task's test_main.cu picks the two sizes
// (correctness, timing) and calls histogram_task::run(...).
//
// Bytes are generated on the device from the run's seed (fresh for every run and every timed launch)
// with a triangular distribution (the mean of two uniform bytes), so bins differ in load as in real
// data. The 256 counters are poisoned before every launch and compared exactly with a host count; the
// harness also checks that the counts add up to n. Timing mode checks the last timed launch too.
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

inline bool check(const char* what, const beaver::DeviceBuffer<uint8_t>& data,
                  const beaver::DeviceBuffer<unsigned int>& bins) {
    const std::vector<uint8_t> h = data.download();
    const std::vector<unsigned int> got = bins.download();
    std::vector<unsigned long long> ref(256, 0);
    for (uint8_t b : h) ++ref[b];
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
                     h.size());
        return false;
    }
    std::printf("OK %s: 256 bins exact, n=%zu\n", what, h.size());
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
        ok = check(call == 0 ? "histogram" : "histogram (second call)", data, bins);
    }
    if (!ok || !a.bench) return beaver::finish(ok);
    beaver::bench(a, launch, prepare);
    beaver::sync_check("histogram256 (timed)");
    beaver::poison_left("bins_timed", bins.ptr, bins.n);
    ok = check("histogram after timing", data, bins);
    return beaver::finish(ok);
}

}  // namespace histogram_task
