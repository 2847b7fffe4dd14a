// layernorm.cuh: harness of the "layernorm" family. A task's test_main.cu picks the storage type and
// the two shapes (correctness, timing) and calls layernorm_task::run<T>(...).
//
// Inputs are generated on the device from the run's seed (fresh for every run and every timed launch):
// each row has its own mean in [-5, 5] and spread in [0.5, 3.5], gamma in [-1.5, 1.5] and beta in
// [-0.5, 0.5]. The output is poisoned before every launch and every element is compared with a host
// double reference (biased variance, eps inside the square root). Timing mode checks the timing shape
// once in full before timing and a sample of rows after it.
#pragma once

#include "beaver.cuh"
#include "layernorm_api.h"

namespace layernorm_task {

struct Shape {
    int rows;
    int cols;
};

constexpr float kEps = 1e-5f;

__host__ __device__ inline uint64_t mix64(uint64_t z) {
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
// Uniform in [-1, 1) from (seed, index).
__device__ inline float unit(uint64_t seed, uint64_t i) {
    return static_cast<float>(mix64(seed ^ mix64(i)) >> 40) * (2.0f / 16777216.0f) - 1.0f;
}
template <typename T> __device__ inline T from_float(float v);
template <> __device__ inline float from_float<float>(float v) { return v; }
template <> __device__ inline __half from_float<__half>(float v) { return __float2half_rn(v); }
template <> __device__ inline __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

template <typename T>
__global__ void gen_inputs(T* x, T* gamma, T* beta, int rows, int cols, uint64_t seed) {
    const size_t n = static_cast<size_t>(rows) * cols;
    const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
    for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += stride) {
        const size_t r = i / cols;
        const float mean = 5.0f * unit(seed + 1, r);
        const float spread = 2.0f + 1.5f * unit(seed + 2, r);
        x[i] = from_float<T>(mean + spread * unit(seed, i));
    }
    for (size_t c = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; c < static_cast<size_t>(cols);
         c += stride) {
        gamma[c] = from_float<T>(1.5f * unit(seed + 3, c));
        beta[c] = from_float<T>(0.5f * unit(seed + 4, c));
    }
}

template <typename T> inline beaver::Tolerance tolerance();
template <> inline beaver::Tolerance tolerance<float>() { return {2e-5, 2e-5}; }
template <> inline beaver::Tolerance tolerance<__half>() { return {2e-3, 1e-2}; }
template <> inline beaver::Tolerance tolerance<__nv_bfloat16>() { return {1.6e-2, 2e-2}; }

template <typename T> inline const char* dtype_name();
template <> inline const char* dtype_name<float>() { return "fp32"; }
template <> inline const char* dtype_name<__half>() { return "fp16"; }
template <> inline const char* dtype_name<__nv_bfloat16>() { return "bf16"; }

// Compare rows 0, step, 2*step, ... of y with the double-precision layer norm of x.
template <typename T>
bool check(const char* what, const beaver::DeviceBuffer<T>& x, const beaver::DeviceBuffer<T>& gamma,
           const beaver::DeviceBuffer<T>& beta, const beaver::DeviceBuffer<T>& y, Shape s, int step) {
    const std::vector<float> hx = beaver::widen(x.download());
    const std::vector<float> hg = beaver::widen(gamma.download());
    const std::vector<float> hb = beaver::widen(beta.download());
    const std::vector<float> hy = beaver::widen(y.download());
    std::vector<float> got;
    std::vector<double> ref;
    int checked_rows = 0;
    for (int r = 0; r < s.rows; r += step, ++checked_rows) {
        const float* xr = hx.data() + static_cast<size_t>(r) * s.cols;
        double mean = 0.0;
        for (int c = 0; c < s.cols; ++c) mean += xr[c];
        mean /= s.cols;
        double var = 0.0;
        for (int c = 0; c < s.cols; ++c) var += (xr[c] - mean) * (xr[c] - mean);
        var /= s.cols;
        const double rstd = 1.0 / std::sqrt(var + static_cast<double>(kEps));
        for (int c = 0; c < s.cols; ++c) {
            ref.push_back((xr[c] - mean) * rstd * hg[c] + hb[c]);
            got.push_back(hy[static_cast<size_t>(r) * s.cols + c]);
        }
    }
    std::printf("checking %s: %d of %d rows x %d cols (%s)\n", what, checked_rows, s.rows, s.cols, dtype_name<T>());
    return beaver::compare(what, got, ref, tolerance<T>(), {checked_rows, s.cols});
}

template <typename T>
int run(int argc, char** argv, Shape check_shape, Shape bench_shape) {
    const beaver::Args a = beaver::parse_args(argc, argv);
    const Shape s = a.bench ? bench_shape : check_shape;
    const size_t n = static_cast<size_t>(s.rows) * s.cols;
    std::printf("layernorm_forward %s rows=%d cols=%d eps=%g seed=%llu\n", dtype_name<T>(), s.rows, s.cols, kEps,
                static_cast<unsigned long long>(a.seed));
    beaver::DeviceBuffer<T> x(n), y(n), gamma(s.cols), beta(s.cols);
    uint64_t seed = a.seed;
    auto prepare = [&] {
        gen_inputs<T><<<1024, 256>>>(x.ptr, gamma.ptr, beta.ptr, s.rows, s.cols, seed);
        seed += 8;
        BEAVER_CHECK(cudaGetLastError());
        y.poison();
    };
    auto launch = [&] { layernorm_forward(x.ptr, gamma.ptr, beta.ptr, y.ptr, s.rows, s.cols, kEps, 0); };
    prepare();
    BEAVER_CHECK(cudaDeviceSynchronize());
    launch();
    beaver::sync_check("layernorm_forward");
    beaver::poison_left("y", y.ptr, y.n);
    bool ok = check("layernorm", x, gamma, beta, y, s, 1);
    if (!ok || !a.bench) return beaver::finish(ok);
    beaver::bench(a, launch, prepare);
    beaver::sync_check("layernorm_forward (timed)");
    beaver::poison_left("y_timed", y.ptr, y.n);
    ok = check("layernorm after timing", x, gamma, beta, y, s, 61);
    return beaver::finish(ok);
}

}  // namespace layernorm_task
