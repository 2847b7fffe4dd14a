// beaver.cuh: the shared harness of beavertui's bundled corpus. Every native task's test_main.cu includes
// it; the runner copies corpus/_common/ into each work dir as _common/ (build with -I _common).
//
// What it gives a harness: CUDA error checks that name the call; seeded random inputs (fresh per run:
// the seed comes from the clock unless BEAVER_SEED is set); output poisoning before every launch; a
// comparison against a higher-precision host reference that says where and by how much; and the timing
// mode of the native contract (shared/spec/timing.md): `./test.out --bench N` warms up, flushes the L2
// with a 256 MiB write before every timed launch, times each launch with CUDA events and prints one
// `BEAVER_TIME_MS <ms>` line per timed run, followed by `BEAVER_HOST_MS <ms>`: the host's time from the
// launch to a full device synchronisation, which exposes work hidden on side streams or host threads.
// It never decides what a task computes.
//
// Anti-cheat contract (what beavertui reads from a harness's output):
// - `BEAVER_POISON_LEFT <what> <k> of <n>` (poison_left below): after the checked launch, how many of
//   the n output elements still hold the poison bytes. All n: the output was never written; some: the
//   launch covered part of the output only.
// - Results cached across calls: every harness checks the output of the LAST timed launch of `--bench`
//   against the fresh inputs of that launch (each timed launch gets new inputs and a poisoned output),
//   and exits non-zero when it is wrong. A solution that computes once and then replays a stored result
//   therefore fails its timing run; beavertui turns that into the `cached_result` flag and never scores
//   the attempt. Some families also call the solution twice with different inputs in the correctness
//   run (reduce, histogram, scan), which fails such a solution even when it is not timed.
// - Side streams and host threads: BEAVER_HOST_MS against BEAVER_TIME_MS per timed run (see bench).
#pragma once

#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#define BEAVER_CHECK(call)                                                                         \
    do {                                                                                           \
        cudaError_t beaver_err_ = (call);                                                          \
        if (beaver_err_ != cudaSuccess) {                                                          \
            std::fprintf(stderr, "CUDA error %s (%s) at %s:%d in %s\n", cudaGetErrorName(beaver_err_), \
                         cudaGetErrorString(beaver_err_), __FILE__, __LINE__, #call);              \
            std::exit(3);                                                                          \
        }                                                                                          \
    } while (0)

namespace beaver {

struct Args {
    bool bench = false;   // timing mode
    int iters = 20;       // timed runs in timing mode
    int warmup = 3;       // untimed runs before timing
    uint64_t seed = 0;    // input seed
};

inline Args parse_args(int argc, char** argv) {
    Args a;
    const char* env_seed = std::getenv("BEAVER_SEED");
    a.seed = env_seed ? std::strtoull(env_seed, nullptr, 10)
                      : static_cast<uint64_t>(std::chrono::high_resolution_clock::now().time_since_epoch().count());
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--bench") == 0) {
            a.bench = true;
            if (i + 1 < argc && argv[i + 1][0] != '-') a.iters = std::atoi(argv[++i]);
        } else if (std::strcmp(argv[i], "--warmup") == 0 && i + 1 < argc) {
            a.warmup = std::atoi(argv[++i]);
        } else if (std::strcmp(argv[i], "--seed") == 0 && i + 1 < argc) {
            a.seed = std::strtoull(argv[++i], nullptr, 10);
        }
    }
    if (a.iters < 1) a.iters = 1;
    return a;
}

// ------------------------------------------------------------------ inputs

inline void fill_uniform(std::vector<float>& v, uint64_t seed, float lo = -1.f, float hi = 1.f) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> d(lo, hi);
    for (auto& x : v) x = d(rng);
}

inline void fill_int(std::vector<int>& v, uint64_t seed, int lo, int hi) {
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<int> d(lo, hi);
    for (auto& x : v) x = d(rng);
}

// Round a float through half / bf16 so the host reference sees exactly what the device sees.
inline std::vector<__half> to_half(const std::vector<float>& v) {
    std::vector<__half> out(v.size());
    for (size_t i = 0; i < v.size(); ++i) out[i] = __float2half_rn(v[i]);
    return out;
}
inline std::vector<__nv_bfloat16> to_bf16(const std::vector<float>& v) {
    std::vector<__nv_bfloat16> out(v.size());
    for (size_t i = 0; i < v.size(); ++i) out[i] = __float2bfloat16_rn(v[i]);
    return out;
}
inline float as_float(float x) { return x; }
inline float as_float(__half x) { return __half2float(x); }
inline float as_float(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename T>
std::vector<float> widen(const std::vector<T>& v) {
    std::vector<float> out(v.size());
    for (size_t i = 0; i < v.size(); ++i) out[i] = as_float(v[i]);
    return out;
}

// ------------------------------------------------------------------ device buffers

template <typename T>
struct DeviceBuffer {
    T* ptr = nullptr;
    size_t n = 0;
    explicit DeviceBuffer(size_t count) : n(count) { BEAVER_CHECK(cudaMalloc(&ptr, count * sizeof(T) + 1)); }
    ~DeviceBuffer() { cudaFree(ptr); }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    void upload(const std::vector<T>& h) { BEAVER_CHECK(cudaMemcpy(ptr, h.data(), n * sizeof(T), cudaMemcpyHostToDevice)); }
    std::vector<T> download() const {
        std::vector<T> h(n);
        BEAVER_CHECK(cudaMemcpy(h.data(), ptr, n * sizeof(T), cudaMemcpyDeviceToHost));
        return h;
    }
    // Fill with 0xFF bytes: NaN for float, half and bf16, -1 for ints. An output the kernel never
    // writes stays NaN and fails the comparison.
    void poison() { BEAVER_CHECK(cudaMemset(ptr, 0xFF, n * sizeof(T))); }
    size_t bytes() const { return n * sizeof(T); }
};

// ------------------------------------------------------------------ output coverage

// Counts the elements of `n` items of `elem` bytes that are still entirely 0xFF (the poison pattern).
template <int Unused = 0>
__global__ void count_poison_kernel(const unsigned char* p, size_t n, unsigned elem, unsigned long long* left) {
    unsigned long long mine = 0;
    for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<size_t>(gridDim.x) * blockDim.x) {
        const unsigned char* e = p + i * elem;
        bool all = true;
        for (unsigned b = 0; b < elem; ++b) all = all && e[b] == 0xFF;
        mine += all;
    }
    if (mine) atomicAdd(left, mine);
}

// After a checked launch (and after device synchronisation): how many of the n output elements still
// hold the poison written by DeviceBuffer::poison(). Prints `BEAVER_POISON_LEFT <what> <k> of <n>`,
// which beavertui reads (all n left: output never written; 0 < k < n: partial coverage). No legitimate
// output of the bundled tasks is all-ones bits (that is NaN for floating types, -1 for counters).
template <typename T>
size_t poison_left(const char* what, const T* ptr, size_t n) {
    unsigned long long* d = nullptr;
    BEAVER_CHECK(cudaMalloc(&d, sizeof(unsigned long long)));
    BEAVER_CHECK(cudaMemset(d, 0, sizeof(unsigned long long)));
    if (n) {
        const unsigned blocks = static_cast<unsigned>(std::min<size_t>((n + 255) / 256, 4096));
        count_poison_kernel<<<blocks, 256>>>(reinterpret_cast<const unsigned char*>(ptr), n, sizeof(T), d);
    }
    unsigned long long left = 0;
    BEAVER_CHECK(cudaMemcpy(&left, d, sizeof(left), cudaMemcpyDeviceToHost));
    BEAVER_CHECK(cudaFree(d));
    std::printf("BEAVER_POISON_LEFT %s %llu of %zu\n", what, left, n);
    std::fflush(stdout);
    return static_cast<size_t>(left);
}

// ------------------------------------------------------------------ checking

struct Tolerance {
    double atol;
    double rtol;
};
inline Tolerance tol_fp32() { return {1e-4, 1e-4}; }
inline Tolerance tol_fp16() { return {2e-3, 1e-2}; }
inline Tolerance tol_bf16() { return {1.6e-2, 2e-2}; }

// Compare got[i] with ref[i] for every element; report the count, the first mismatches with their
// coordinates (row-major over dims) and the largest error. Returns true when every element is within
// atol + rtol * |ref| and finite.
inline bool compare(const char* what, const std::vector<float>& got, const std::vector<double>& ref, Tolerance t,
                    const std::vector<long long>& dims = {}) {
    if (got.size() != ref.size()) {
        std::fprintf(stderr, "MISMATCH %s: size %zu, expected %zu\n", what, got.size(), ref.size());
        return false;
    }
    size_t bad = 0, shown = 0, worst_i = 0;
    double worst = 0.0;
    for (size_t i = 0; i < got.size(); ++i) {
        double g = got[i], r = ref[i];
        double err = std::fabs(g - r);
        bool ok = std::isfinite(g) && err <= t.atol + t.rtol * std::fabs(r);
        if (!std::isfinite(g)) err = INFINITY;
        if (err > worst || (!ok && worst == 0.0)) { worst = err; worst_i = i; }
        if (!ok) {
            if (shown < 5) {
                std::string coord;
                if (!dims.empty()) {
                    size_t rem = i;
                    std::vector<long long> c(dims.size());
                    for (size_t d = dims.size(); d-- > 0;) { c[d] = rem % dims[d]; rem /= dims[d]; }
                    coord = "[";
                    for (size_t d = 0; d < c.size(); ++d) coord += (d ? "," : "") + std::to_string(c[d]);
                    coord += "]";
                }
                std::fprintf(stderr, "MISMATCH %s at index %zu%s: got %.6g expected %.6g (abs err %.3g)\n", what, i,
                             coord.c_str(), g, r, std::fabs(g - r));
                ++shown;
            }
            ++bad;
        }
    }
    if (bad) {
        std::fprintf(stderr, "FAILED %s: %zu of %zu elements out of tolerance (atol %.1e, rtol %.1e); max abs err %.3g at index %zu\n",
                     what, bad, got.size(), t.atol, t.rtol, worst, worst_i);
        return false;
    }
    std::printf("OK %s: %zu elements, max abs err %.3g\n", what, got.size(), worst);
    return true;
}

// The same check as compare(), on the device: got (device, n elements of T) against ref (device, double),
// for outputs too large to copy to the host and compare there in a timing run's budget. When every
// element is within tolerance it prints the same OK line as compare(); otherwise it copies both to the
// host and lets compare() report where and by how much.
__device__ inline double device_value(float x) { return x; }
__device__ inline double device_value(__half x) { return __half2float(x); }
__device__ inline double device_value(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename T>
__global__ void compare_kernel(const T* got, const double* ref, size_t n, double atol, double rtol,
                               unsigned long long* bad, unsigned long long* worst_bits) {
    unsigned long long mine = 0;
    double worst = 0.0;
    for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<size_t>(gridDim.x) * blockDim.x) {
        const double g = device_value(got[i]), r = ref[i];
        const double err = fabs(g - r);
        if (!(isfinite(g) && err <= atol + rtol * fabs(r))) ++mine;
        else if (err > worst) worst = err;
    }
    if (mine) atomicAdd(bad, mine);
    // non-negative doubles order like their bit patterns
    if (worst > 0.0) atomicMax(worst_bits, static_cast<unsigned long long>(__double_as_longlong(worst)));
}

template <typename T>
bool compare_device(const char* what, const T* got, const double* ref, size_t n, Tolerance t,
                    const std::vector<long long>& dims = {}) {
    unsigned long long* d = nullptr;
    BEAVER_CHECK(cudaMalloc(&d, 2 * sizeof(unsigned long long)));
    BEAVER_CHECK(cudaMemset(d, 0, 2 * sizeof(unsigned long long)));
    if (n) {
        const unsigned blocks = static_cast<unsigned>(std::min<size_t>((n + 255) / 256, 8192));
        compare_kernel<T><<<blocks, 256>>>(got, ref, n, t.atol, t.rtol, d, d + 1);
        BEAVER_CHECK(cudaGetLastError());
    }
    unsigned long long h[2] = {0, 0};
    BEAVER_CHECK(cudaMemcpy(h, d, sizeof(h), cudaMemcpyDeviceToHost));
    BEAVER_CHECK(cudaFree(d));
    if (h[0] == 0) {
        double worst = 0.0;
        std::memcpy(&worst, &h[1], sizeof(worst));
        std::printf("OK %s: %zu elements, max abs err %.3g\n", what, n, worst);
        return true;
    }
    std::vector<T> hg(n);
    std::vector<double> hr(n);
    BEAVER_CHECK(cudaMemcpy(hg.data(), got, n * sizeof(T), cudaMemcpyDeviceToHost));
    BEAVER_CHECK(cudaMemcpy(hr.data(), ref, n * sizeof(double), cudaMemcpyDeviceToHost));
    return compare(what, widen(hg), hr, t, dims);
}

// ------------------------------------------------------------------ timing

// Writes a buffer larger than the L2 (H200: 60 MB) so that every timed launch starts cold.
struct L2Flusher {
    void* buf = nullptr;
    size_t bytes = 256ull << 20;
    L2Flusher() { BEAVER_CHECK(cudaMalloc(&buf, bytes)); }
    ~L2Flusher() { cudaFree(buf); }
    void flush(cudaStream_t s = 0) { BEAVER_CHECK(cudaMemsetAsync(buf, 0, bytes, s)); }
};

// Timing mode: `prepare` (untimed: fresh inputs, poisoning) runs before every launch, then the L2 is
// flushed, then `launch` is timed alone between two events. One BEAVER_TIME_MS line per timed run.
inline void bench(const Args& a, const std::function<void()>& launch, const std::function<void()>& prepare = {}) {
    L2Flusher l2;
    cudaEvent_t start, stop;
    BEAVER_CHECK(cudaEventCreate(&start));
    BEAVER_CHECK(cudaEventCreate(&stop));
    for (int i = 0; i < a.warmup + a.iters; ++i) {
        if (prepare) prepare();
        l2.flush();
        BEAVER_CHECK(cudaDeviceSynchronize());
        const auto host0 = std::chrono::steady_clock::now();
        BEAVER_CHECK(cudaEventRecord(start));
        launch();
        BEAVER_CHECK(cudaEventRecord(stop));
        BEAVER_CHECK(cudaEventSynchronize(stop));
        // Work the candidate left running elsewhere (side streams, host threads) is not between the two
        // events: the host time to a full device synchronisation exposes it (BEAVER_HOST_MS).
        BEAVER_CHECK(cudaDeviceSynchronize());
        const double host_ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - host0).count();
        BEAVER_CHECK(cudaGetLastError());
        float ms = 0.f;
        BEAVER_CHECK(cudaEventElapsedTime(&ms, start, stop));
        if (i >= a.warmup) std::printf("BEAVER_TIME_MS %.6f\nBEAVER_HOST_MS %.6f\n", ms, host_ms);
    }
    std::fflush(stdout);
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
}

// Launch, then surface both launch-configuration errors and asynchronous kernel faults.
inline void sync_check(const char* what) {
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
        std::fprintf(stderr, "CUDA error %s (%s) after %s\n", cudaGetErrorName(e), cudaGetErrorString(e), what);
        std::exit(3);
    }
}

inline int finish(bool ok) {
    std::printf(ok ? "PASS\n" : "FAIL\n");
    std::fflush(stdout);
    return ok ? 0 : 1;
}

}  // namespace beaver
