// softmax.cuh: harness of the "softmax" family. A task's test_main.cu picks the storage type and the
// two shapes (correctness, timing) and calls softmax_task::run<T>(...).
//
// Inputs are generated on the device from the run's seed (fresh for every run and every timed launch):
// each row gets its own offset in [-120, 120] plus values spread over +-6, so exp() of an unshifted
// logit overflows or underflows fp32 and a softmax that does not subtract the row maximum fails. The
// output is poisoned before every launch and every element is compared with a double-precision softmax
// computed on the device from the same inputs drawn again from their seed. Timing mode checks the timing
// shape in full before timing and the last timed launch in full after it.
#pragma once

#include "beaver.cuh"
#include "softmax_api.h"

namespace softmax_task {

struct Shape {
    int rows;
    int cols;
};

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
__global__ void gen_logits(T* x, int rows, int cols, uint64_t seed) {
    const size_t n = static_cast<size_t>(rows) * cols;
    for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<size_t>(gridDim.x) * blockDim.x) {
        const size_t r = i / cols;
        const float shift = 120.0f * unit(seed + 1, r);
        x[i] = from_float<T>(shift + 6.0f * unit(seed, i));
    }
}

template <typename T> inline beaver::Tolerance tolerance();
template <> inline beaver::Tolerance tolerance<float>() { return {1e-7, 1e-4}; }
template <> inline beaver::Tolerance tolerance<__half>() { return {1e-5, 1e-2}; }
template <> inline beaver::Tolerance tolerance<__nv_bfloat16>() { return {1e-6, 2e-2}; }

template <typename T> inline const char* dtype_name();
template <> inline const char* dtype_name<float>() { return "fp32"; }
template <> inline const char* dtype_name<__half>() { return "fp16"; }
template <> inline const char* dtype_name<__nv_bfloat16>() { return "bf16"; }

// Block-wide reduction of one double per thread (blockDim.x == 256): max or sum.
template <bool kMax>
__device__ inline double block_reduce(double v, double* red) {
    red[threadIdx.x] = v;
    __syncthreads();
    for (unsigned w = blockDim.x / 2; w > 0; w /= 2) {
        if (threadIdx.x < w) red[threadIdx.x] = kMax ? fmax(red[threadIdx.x], red[threadIdx.x + w]) : red[threadIdx.x] + red[threadIdx.x + w];
        __syncthreads();
    }
    const double out = red[0];
    __syncthreads();
    return out;
}

// The double-precision softmax of every row, one block of 256 threads per row.
template <typename T>
__global__ void reference_softmax(const T* x, double* ref, int cols) {
    __shared__ double red[256];
    const T* xr = x + static_cast<size_t>(blockIdx.x) * cols;
    double* out = ref + static_cast<size_t>(blockIdx.x) * cols;
    double m = -INFINITY;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmax(m, beaver::device_value(xr[c]));
    m = block_reduce<true>(m, red);
    double sum = 0.0;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) sum += exp(beaver::device_value(xr[c]) - m);
    sum = block_reduce<false>(sum, red);
    for (int c = threadIdx.x; c < cols; c += blockDim.x) out[c] = exp(beaver::device_value(xr[c]) - m) / sum;
}

// Compare every element of y with the double-precision softmax of the checked launch's inputs, drawn
// again from their seed into xr (a buffer the solution never sees); computed and compared on the device.
template <typename T>
bool check(const char* what, beaver::DeviceBuffer<T>& xr, uint64_t input_seed, const beaver::DeviceBuffer<T>& y,
           Shape s) {
    gen_logits<T><<<1024, 256>>>(xr.ptr, s.rows, s.cols, input_seed);
    BEAVER_CHECK(cudaGetLastError());
    beaver::DeviceBuffer<double> ref(y.n);
    reference_softmax<T><<<s.rows, 256>>>(xr.ptr, ref.ptr, s.cols);
    beaver::sync_check("the double-precision reference softmax");
    std::printf("checking %s: %d of %d rows x %d cols (%s)\n", what, s.rows, s.rows, s.cols, dtype_name<T>());
    return beaver::compare_device(what, y.ptr, ref.ptr, y.n, tolerance<T>(), {s.rows, s.cols});
}

template <typename T>
int run(int argc, char** argv, Shape check_shape, Shape bench_shape) {
    const beaver::Args a = beaver::parse_args(argc, argv);
    const Shape s = a.bench ? bench_shape : check_shape;
    const size_t n = static_cast<size_t>(s.rows) * s.cols;
    std::printf("softmax_rows %s rows=%d cols=%d seed=%llu\n", dtype_name<T>(), s.rows, s.cols,
                static_cast<unsigned long long>(a.seed));
    beaver::DeviceBuffer<T> x(n), y(n), xr(n);
    uint64_t seed = a.seed;
    auto prepare = [&] {
        gen_logits<T><<<1024, 256>>>(x.ptr, s.rows, s.cols, seed);
        seed += 8;
        BEAVER_CHECK(cudaGetLastError());
        y.poison();
    };
    prepare();
    BEAVER_CHECK(cudaDeviceSynchronize());
    softmax_rows(x.ptr, y.ptr, s.rows, s.cols, 0);
    beaver::sync_check("softmax_rows");
    beaver::poison_left("y", y.ptr, y.n);
    bool ok = check("softmax", xr, seed - 8, y, s);
    if (!ok || !a.bench) return beaver::finish(ok);
    beaver::bench(a, [&] { softmax_rows(x.ptr, y.ptr, s.rows, s.cols, 0); }, prepare);
    beaver::sync_check("softmax_rows (timed)");
    beaver::poison_left("y_timed", y.ptr, y.n);
    ok = check("softmax after timing", xr, seed - 8, y, s);
    return beaver::finish(ok);
}

}  // namespace softmax_task
