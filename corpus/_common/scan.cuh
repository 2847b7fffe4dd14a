// scan.cuh: harness of the "scan" family. A task's test_main.cu picks the element type and the two sizes
// (correctness, timing) and calls scan_task::run<T>(...).
//
// Inputs are generated on the device from the run's seed (fresh for every run and every timed launch):
// int32 uniform in [-1000, 1000] (prefix sums stay far inside int32, checked exactly against an int64
// host scan), fp32 uniform in [-1, 1) (checked against a double host scan with tolerance
// 1e-7 * sum_{j<=i} |x[j]| + 1e-5 * |ref| + 1e-5). The output is poisoned before every launch and every
// element is checked. The harness calls the launcher twice before timing (its workspace must be ready
// for the next call); timing mode checks the last timed launch in full too.
#pragma once

#include "beaver.cuh"
#include "scan_api.h"

namespace scan_task {

__host__ __device__ inline uint64_t mix64(uint64_t z) {
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
__device__ inline void draw(int& v, uint64_t h) { v = static_cast<int>(h % 2001) - 1000; }
__device__ inline void draw(float& v, uint64_t h) {
    v = static_cast<float>(h >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

template <typename T>
__global__ void gen_inputs(T* x, size_t n, uint64_t seed) {
    for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<size_t>(gridDim.x) * blockDim.x)
        draw(x[i], mix64(seed ^ mix64(i)));
}

inline const char* dtype_name(int) { return "int32"; }
inline const char* dtype_name(float) { return "fp32"; }

inline size_t report(const char* what, size_t i, double got, double ref, size_t bad) {
    if (bad < 5)
        std::fprintf(stderr, "MISMATCH %s at index %zu: got %.9g expected %.9g (abs err %.3g)\n", what, i, got, ref,
                     std::fabs(got - ref));
    return bad + 1;
}

inline bool check(const char* what, const std::vector<int>& x, const std::vector<int>& got) {
    size_t bad = 0;
    long long acc = 0;
    for (size_t i = 0; i < x.size(); ++i) {
        acc += x[i];
        if (got[i] != acc) bad = report(what, i, got[i], static_cast<double>(acc), bad);
    }
    if (bad) {
        std::fprintf(stderr, "FAILED %s: %zu of %zu elements differ (int32, exact)\n", what, bad, x.size());
        return false;
    }
    std::printf("OK %s: %zu elements exact\n", what, x.size());
    return true;
}

inline bool check(const char* what, const std::vector<float>& x, const std::vector<float>& got) {
    size_t bad = 0;
    double acc = 0.0, abs_acc = 0.0, worst = 0.0;
    for (size_t i = 0; i < x.size(); ++i) {
        acc += x[i];
        abs_acc += std::fabs(x[i]);
        const double err = std::fabs(got[i] - acc);
        const double tol = 1e-7 * abs_acc + 1e-5 * std::fabs(acc) + 1e-5;
        if (!(err <= tol)) bad = report(what, i, got[i], acc, bad);
        if (err > worst) worst = err;
    }
    if (bad) {
        std::fprintf(stderr, "FAILED %s: %zu of %zu elements out of tolerance (fp32)\n", what, bad, x.size());
        return false;
    }
    std::printf("OK %s: %zu elements, max abs err %.3g\n", what, x.size(), worst);
    return true;
}

template <typename T>
int run(int argc, char** argv, size_t check_n, size_t bench_n) {
    const beaver::Args a = beaver::parse_args(argc, argv);
    const size_t n = a.bench ? bench_n : check_n;
    std::printf("inclusive_scan %s n=%zu seed=%llu\n", dtype_name(T{}), n, static_cast<unsigned long long>(a.seed));
    beaver::DeviceBuffer<T> x(n), out(n);
    uint64_t seed = a.seed;
    auto prepare = [&] {
        gen_inputs<T><<<2048, 256>>>(x.ptr, n, seed++);
        BEAVER_CHECK(cudaGetLastError());
        out.poison();
    };
    auto launch = [&] { inclusive_scan(x.ptr, out.ptr, n, 0); };
    bool ok = true;
    for (int call = 0; call < 2 && ok; ++call) {
        prepare();
        BEAVER_CHECK(cudaDeviceSynchronize());
        launch();
        beaver::sync_check("inclusive_scan");
        if (call == 0) beaver::poison_left("out", out.ptr, out.n);
        ok = check(call == 0 ? "scan" : "scan (second call)", x.download(), out.download());
    }
    if (!ok || !a.bench) return beaver::finish(ok);
    beaver::bench(a, launch, prepare);
    beaver::sync_check("inclusive_scan (timed)");
    beaver::poison_left("out_timed", out.ptr, out.n);
    ok = check("scan after timing", x.download(), out.download());
    return beaver::finish(ok);
}

}  // namespace scan_task
