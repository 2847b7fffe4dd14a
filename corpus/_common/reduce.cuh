// reduce.cuh: harness of the "reduce" family. A task's test_main.cu picks the two sizes (correctness,
// timing) and calls reduce_task::run(...).
//
// Inputs are uniform in [-1, 1), generated on the device from the run's seed (fresh for every run and
// every timed launch); *out is poisoned (NaN) before every launch. The result is compared with a host
// double sum with tolerance 2^-23 * sum|x| + 1e-5 * |sum| (one fp32 unit roundoff of the summation's
// condition bound: far above what a tree or per-thread-partial fp32 sum accumulates, far below the
// contribution of a skipped block). The launcher is called twice before timing (its workspace must be
// ready for the next call); timing mode checks the timing size before timing and the last timed launch
// after it.
#pragma once

#include "beaver.cuh"
#include "reduce_api.h"

namespace reduce_task {

__host__ __device__ inline uint64_t mix64(uint64_t z) {
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

__global__ void gen_inputs(float* x, size_t n, uint64_t seed) {
    for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<size_t>(gridDim.x) * blockDim.x)
        x[i] = static_cast<float>(mix64(seed ^ mix64(i)) >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

inline bool check(const char* what, const beaver::DeviceBuffer<float>& x, const beaver::DeviceBuffer<float>& out) {
    const std::vector<float> hx = x.download();
    double sum = 0.0, abs_sum = 0.0;
    for (float v : hx) {
        sum += v;
        abs_sum += std::fabs(v);
    }
    const float got = out.download()[0];
    const double err = std::fabs(static_cast<double>(got) - sum);
    const double tol = abs_sum * 0x1p-23 + 1e-5 * std::fabs(sum);
    std::printf("checking %s: n=%zu sum=%.9g got=%.9g abs err %.3g (tolerance %.3g)\n", what, hx.size(), sum,
                static_cast<double>(got), err, tol);
    if (!std::isfinite(got) || err > tol) {
        std::fprintf(stderr, "MISMATCH %s: got %.9g expected %.9g (abs err %.3g > tolerance %.3g, n=%zu)\n", what,
                     static_cast<double>(got), sum, err, tol, hx.size());
        return false;
    }
    return true;
}

inline int run(int argc, char** argv, size_t check_n, size_t bench_n) {
    const beaver::Args a = beaver::parse_args(argc, argv);
    const size_t n = a.bench ? bench_n : check_n;
    std::printf("reduce_sum fp32 n=%zu seed=%llu\n", n, static_cast<unsigned long long>(a.seed));
    beaver::DeviceBuffer<float> x(n), out(1);
    uint64_t seed = a.seed;
    auto prepare = [&] {
        gen_inputs<<<2048, 256>>>(x.ptr, n, seed++);
        BEAVER_CHECK(cudaGetLastError());
        out.poison();
    };
    auto launch = [&] { reduce_sum(x.ptr, n, out.ptr, 0); };
    prepare();
    BEAVER_CHECK(cudaDeviceSynchronize());
    launch();
    beaver::sync_check("reduce_sum");
    beaver::poison_left("out", out.ptr, out.n);
    bool ok = check("reduce", x, out);
    // A second call on new inputs: the launcher must leave its workspace ready for the next call.
    prepare();
    launch();
    beaver::sync_check("reduce_sum (second call)");
    ok = ok && check("reduce (second call)", x, out);
    if (!ok || !a.bench) return beaver::finish(ok);
    beaver::bench(a, launch, prepare);
    beaver::sync_check("reduce_sum (timed)");
    beaver::poison_left("out_timed", out.ptr, out.n);
    ok = check("reduce after timing", x, out);
    return beaver::finish(ok);
}

}  // namespace reduce_task
