// layernorm.cuh: harness of the "layernorm" family. A task's test_main.cu picks the storage type and
// the two shapes (correctness, timing) and calls layernorm_task::run<T>(...).
//
// Inputs are generated on the device from the run's seed (fresh for every run and every timed launch):
// each row has its own mean in [-5, 5] and spread in [0.5, 3.5], gamma in [-1.5, 1.5] and beta in
// [-0.5, 0.5]. The output is poisoned before every launch and every element is compared with a double
// reference (biased variance, eps inside the square root) computed on the device from the same inputs
// drawn again from their seed. Timing mode checks the timing shape in full before timing and the last
// timed launch in full after it.
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

// Block-wide sum of one double per thread (blockDim.x == 256).
__device__ inline double block_sum(double v, double* red) {
    red[threadIdx.x] = v;
    __syncthreads();
    for (unsigned w = blockDim.x / 2; w > 0; w /= 2) {
        if (threadIdx.x < w) red[threadIdx.x] += red[threadIdx.x + w];
        __syncthreads();
    }
    const double out = red[0];
    __syncthreads();
    return out;
}

// The double-precision layer norm of every row (biased variance, eps inside the square root), one block
// of 256 threads per row.
template <typename T>
__global__ void reference_layernorm(const T* x, const T* gamma, const T* beta, double* ref, int cols) {
    __shared__ double red[256];
    const T* xr = x + static_cast<size_t>(blockIdx.x) * cols;
    double* out = ref + static_cast<size_t>(blockIdx.x) * cols;
    double mean = 0.0;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) mean += beaver::device_value(xr[c]);
    mean = block_sum(mean, red) / cols;
    double var = 0.0;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        const double d = beaver::device_value(xr[c]) - mean;
        var += d * d;
    }
    var = block_sum(var, red) / cols;
    const double rstd = 1.0 / sqrt(var + static_cast<double>(kEps));
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        out[c] = (beaver::device_value(xr[c]) - mean) * rstd * beaver::device_value(gamma[c]) +
                 beaver::device_value(beta[c]);
}

// Compare every element of y with the double-precision layer norm of the checked launch's inputs, drawn
// again from their seed into xr, gr, br (buffers the solution never sees); computed and compared on the
// device.
template <typename T>
bool check(const char* what, beaver::DeviceBuffer<T>& xr, beaver::DeviceBuffer<T>& gr, beaver::DeviceBuffer<T>& br,
           uint64_t input_seed, const beaver::DeviceBuffer<T>& y, Shape s) {
    gen_inputs<T><<<1024, 256>>>(xr.ptr, gr.ptr, br.ptr, s.rows, s.cols, input_seed);
    BEAVER_CHECK(cudaGetLastError());
    beaver::DeviceBuffer<double> ref(y.n);
    reference_layernorm<T><<<s.rows, 256>>>(xr.ptr, gr.ptr, br.ptr, ref.ptr, s.cols);
    beaver::sync_check("the double-precision reference layer norm");
    std::printf("checking %s: %d of %d rows x %d cols (%s)\n", what, s.rows, s.rows, s.cols, dtype_name<T>());
    return beaver::compare_device(what, y.ptr, ref.ptr, y.n, tolerance<T>(), {s.rows, s.cols});
}

template <typename T>
int run(int argc, char** argv, Shape check_shape, Shape bench_shape) {
    const beaver::Args a = beaver::parse_args(argc, argv);
    const Shape s = a.bench ? bench_shape : check_shape;
    const size_t n = static_cast<size_t>(s.rows) * s.cols;
    std::printf("layernorm_forward %s rows=%d cols=%d eps=%g seed=%llu\n", dtype_name<T>(), s.rows, s.cols, kEps,
                static_cast<unsigned long long>(a.seed));
    beaver::DeviceBuffer<T> x(n), y(n), gamma(s.cols), beta(s.cols);
    beaver::DeviceBuffer<T> xr(n), gr(s.cols), br(s.cols);
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
    bool ok = check("layernorm", xr, gr, br, seed - 8, y, s);
    if (!ok || !a.bench) return beaver::finish(ok);
    beaver::bench(a, launch, prepare);
    beaver::sync_check("layernorm_forward (timed)");
    beaver::poison_left("y_timed", y.ptr, y.n);
    ok = check("layernorm after timing", xr, gr, br, seed - 8, y, s);
    return beaver::finish(ok);
}

}  // namespace layernorm_task
