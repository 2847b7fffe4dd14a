// scan.cuh: harness of the "scan" family. A task's test_main.cu picks the element type and the two sizes
// (correctness, timing) and calls scan_task::run<T>(...).
//
// Inputs are generated on the device from the run's seed (fresh for every run and every timed launch):
// int32 uniform in [-1000, 1000] (prefix sums stay far inside int32, checked exactly against an int64
// scan), fp32 uniform in [-1, 1) (checked against a double scan with tolerance
// 1e-7 * sum_{j<=i} |x[j]| + 1e-5 * |ref| + 1e-5). The output is poisoned before every launch and every
// element is checked, on the device, against the inputs drawn again from their seed (check_device).
// The harness calls the launcher twice before timing (its workspace must be ready for the next call);
// timing mode checks the last timed launch in full too.
#pragma once

#include <type_traits>

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

// The device check: the checked launch's inputs are drawn again from their seed into a buffer the
// solution never sees; each thread sums one chunk of kChunk elements (int64 or double), the host turns
// the chunk sums into chunk offsets, and each thread walks its chunk again comparing every element with
// the running sum, exactly as the host check does. A failure is then reported by the host check.
constexpr size_t kChunk = 2048;

__global__ void chunk_sums(const int* x, size_t n, long long* part, double*) {
    const size_t c = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x, lo = c * kChunk;
    if (lo >= n) return;
    const size_t hi = lo + kChunk < n ? lo + kChunk : n;
    long long acc = 0;
    for (size_t i = lo; i < hi; ++i) acc += x[i];
    part[c] = acc;
}
__global__ void chunk_sums(const float* x, size_t n, double* part, double* abs_part) {
    const size_t c = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x, lo = c * kChunk;
    if (lo >= n) return;
    const size_t hi = lo + kChunk < n ? lo + kChunk : n;
    double acc = 0.0, abs_acc = 0.0;
    for (size_t i = lo; i < hi; ++i) {
        acc += x[i];
        abs_acc += fabs(static_cast<double>(x[i]));
    }
    part[c] = acc;
    abs_part[c] = abs_acc;
}
__global__ void chunk_check(const int* x, const int* got, size_t n, const long long* offset, const double*,
                            unsigned long long* bad, unsigned long long*) {
    const size_t c = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x, lo = c * kChunk;
    if (lo >= n) return;
    const size_t hi = lo + kChunk < n ? lo + kChunk : n;
    long long acc = offset[c];
    unsigned long long mine = 0;
    for (size_t i = lo; i < hi; ++i) {
        acc += x[i];
        mine += got[i] != acc;
    }
    if (mine) atomicAdd(bad, mine);
}
__global__ void chunk_check(const float* x, const float* got, size_t n, const double* offset,
                            const double* abs_offset, unsigned long long* bad, unsigned long long* worst_bits) {
    const size_t c = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x, lo = c * kChunk;
    if (lo >= n) return;
    const size_t hi = lo + kChunk < n ? lo + kChunk : n;
    double acc = offset[c], abs_acc = abs_offset[c], worst = 0.0;
    unsigned long long mine = 0;
    for (size_t i = lo; i < hi; ++i) {
        acc += x[i];
        abs_acc += fabs(static_cast<double>(x[i]));
        const double err = fabs(static_cast<double>(got[i]) - acc);
        if (!(err <= 1e-7 * abs_acc + 1e-5 * fabs(acc) + 1e-5)) ++mine;
        else if (err > worst) worst = err;
    }
    if (mine) atomicAdd(bad, mine);
    if (worst > 0.0) atomicMax(worst_bits, static_cast<unsigned long long>(__double_as_longlong(worst)));
}

template <typename T>
bool check_device(const char* what, beaver::DeviceBuffer<T>& xr, uint64_t input_seed,
                  const beaver::DeviceBuffer<T>& out) {
    using Acc = typename std::conditional<std::is_same<T, int>::value, long long, double>::type;
    const size_t n = xr.n, chunks = (n + kChunk - 1) / kChunk;
    gen_inputs<T><<<2048, 256>>>(xr.ptr, n, input_seed);
    BEAVER_CHECK(cudaGetLastError());
    beaver::DeviceBuffer<Acc> part(chunks + 1);
    beaver::DeviceBuffer<double> abs_part(chunks + 1);
    beaver::DeviceBuffer<unsigned long long> flags(2);
    BEAVER_CHECK(cudaMemset(flags.ptr, 0, 2 * sizeof(unsigned long long)));
    const unsigned blocks = static_cast<unsigned>((chunks + 127) / 128);
    chunk_sums<<<blocks, 128>>>(xr.ptr, n, part.ptr, abs_part.ptr);
    beaver::sync_check("the reference scan (chunk sums)");
    std::vector<Acc> p = part.download();
    std::vector<double> ap = abs_part.download();
    Acc run = 0;
    double abs_run = 0.0;
    for (size_t c = 0; c < chunks; ++c) {  // chunk sums -> offsets (exclusive scan)
        const Acc v = p[c];
        const double a = ap[c];
        p[c] = run;
        ap[c] = abs_run;
        run += v;
        abs_run += a;
    }
    part.upload(p);
    abs_part.upload(ap);
    chunk_check<<<blocks, 128>>>(xr.ptr, out.ptr, n, part.ptr, abs_part.ptr, flags.ptr, flags.ptr + 1);
    beaver::sync_check("the reference scan (check)");
    const std::vector<unsigned long long> f = flags.download();
    if (f[0] == 0) {
        if (std::is_same<T, int>::value) {
            std::printf("OK %s: %zu elements exact\n", what, n);
        } else {
            double worst = 0.0;
            std::memcpy(&worst, &f[1], sizeof(worst));
            std::printf("OK %s: %zu elements, max abs err %.3g\n", what, n, worst);
        }
        return true;
    }
    return check(what, xr.download(), out.download());  // reports where and by how much
}

template <typename T>
int run(int argc, char** argv, size_t check_n, size_t bench_n) {
    const beaver::Args a = beaver::parse_args(argc, argv);
    const size_t n = a.bench ? bench_n : check_n;
    std::printf("inclusive_scan %s n=%zu seed=%llu\n", dtype_name(T{}), n, static_cast<unsigned long long>(a.seed));
    beaver::DeviceBuffer<T> x(n), out(n), xr(n);
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
        ok = check_device(call == 0 ? "scan" : "scan (second call)", xr, seed - 1, out);
    }
    if (!ok || !a.bench) return beaver::finish(ok);
    beaver::bench(a, launch, prepare);
    beaver::sync_check("inclusive_scan (timed)");
    beaver::poison_left("out_timed", out.ptr, out.n);
    ok = check_device("scan after timing", xr, seed - 1, out);
    return beaver::finish(ok);
}

}  // namespace scan_task
