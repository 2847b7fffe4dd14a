// reduce.cuh: harness of the "reduce" family. A task's test_main.cu picks the two sizes (correctness,
// timing) and calls reduce_task::run(...).
//
// Inputs are uniform in [-1, 1), generated on the device from the run's seed (fresh for every run and
// every timed launch); *out is poisoned (NaN) before every launch. The result is compared with a double
// sum computed on the device from the same inputs drawn again from their seed, with tolerance 2^-23 * sum|x| + 1e-5 * |sum| (one fp32 unit roundoff of the summation's
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

// sum and sum |x| in double on the device (the check's reference and its tolerance's scale).
__global__ void double_sums(const float* x, size_t n, double* out) {
    __shared__ double s_sum[256], s_abs[256];
    double sum = 0.0, abs_sum = 0.0;
    for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<size_t>(gridDim.x) * blockDim.x) {
        const double v = x[i];
        sum += v;
        abs_sum += fabs(v);
    }
    s_sum[threadIdx.x] = sum;
    s_abs[threadIdx.x] = abs_sum;
    __syncthreads();
    for (unsigned w = blockDim.x / 2; w > 0; w /= 2) {
        if (threadIdx.x < w) {
            s_sum[threadIdx.x] += s_sum[threadIdx.x + w];
            s_abs[threadIdx.x] += s_abs[threadIdx.x + w];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        atomicAdd(out, s_sum[0]);
        atomicAdd(out + 1, s_abs[0]);
    }
}

// The inputs of the checked launch are drawn again from their seed into `x` (a buffer the solution never
// sees), so the reference cannot be steered by a solution that writes into its own inputs.
inline bool check(const char* what, beaver::DeviceBuffer<float>& x, uint64_t input_seed,
                  const beaver::DeviceBuffer<float>& out) {
    gen_inputs<<<2048, 256>>>(x.ptr, x.n, input_seed);
    BEAVER_CHECK(cudaGetLastError());
    beaver::DeviceBuffer<double> sums(2);
    BEAVER_CHECK(cudaMemset(sums.ptr, 0, 2 * sizeof(double)));
    double_sums<<<1024, 256>>>(x.ptr, x.n, sums.ptr);
    beaver::sync_check("the double-precision reference sum");
    const std::vector<double> h = sums.download();
    const double sum = h[0], abs_sum = h[1];
    const float got = out.download()[0];
    const double err = std::fabs(static_cast<double>(got) - sum);
    const double tol = abs_sum * 0x1p-23 + 1e-5 * std::fabs(sum);
    std::printf("checking %s: n=%zu sum=%.9g got=%.9g abs err %.3g (tolerance %.3g)\n", what, x.n, sum,
                static_cast<double>(got), err, tol);
    if (!std::isfinite(got) || err > tol) {
        std::fprintf(stderr, "MISMATCH %s: got %.9g expected %.9g (abs err %.3g > tolerance %.3g, n=%zu)\n", what,
                     static_cast<double>(got), sum, err, tol, x.n);
        return false;
    }
    return true;
}

inline int run(int argc, char** argv, size_t check_n, size_t bench_n) {
    const beaver::Args a = beaver::parse_args(argc, argv);
    const size_t n = a.bench ? bench_n : check_n;
    std::printf("reduce_sum fp32 n=%zu seed=%llu\n", n, static_cast<unsigned long long>(a.seed));
    beaver::DeviceBuffer<float> x(n), out(1), xr(n);
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
    bool ok = check("reduce", xr, seed - 1, out);
    // A second call on new inputs: the launcher must leave its workspace ready for the next call.
    prepare();
    launch();
    beaver::sync_check("reduce_sum (second call)");
    ok = ok && check("reduce (second call)", xr, seed - 1, out);
    if (!ok || !a.bench) return beaver::finish(ok);
    beaver::bench(a, launch, prepare);
    beaver::sync_check("reduce_sum (timed)");
    beaver::poison_left("out_timed", out.ptr, out.n);
    ok = check("reduce after timing", xr, seed - 1, out);
    return beaver::finish(ok);
}

}  // namespace reduce_task
