// transpose.cuh: the harness of the transpose family (see transpose_api.h).
//
// A task's test_main.cu picks the element type and the sizes and calls transpose_harness::run. The
// input is filled on the device with fresh seeded uniform values in [-1, 1) (seed from the clock
// unless BEAVER_SEED/--seed); input and output live in guard-paged buffers (a write or read past
// their ends faults); the output is poisoned (all-ones bits, NaN) before every launch and every
// element is compared bit for bit with its input element by a plain checking kernel, which reports
// how many elements differ and the first ones with their coordinates and values. `--bench N` checks
// once at the timing size, then times N launches on freshly filled inputs with the L2 flushed first,
// and checks the last timed launch's output against its own inputs. The checks read the harness's own
// copy of the inputs, drawn again from their seeds, never the buffer the solution was given.
#pragma once

#include <type_traits>

#include "beaver.cuh"
#include "gemm_tc_guard.cuh"
#include "transpose_api.h"

namespace transpose_harness {

struct Shape {
    int rows, cols;
};

constexpr int kShown = 5;

struct Mismatches {
    unsigned long long count;
    unsigned long long slot;
    unsigned long long index[kShown];  // output linear indices of the first mismatches seen
};

template <typename T>
__device__ inline unsigned bits_of(T x) {
    if constexpr (sizeof(T) == 4) return __float_as_uint(x);
    else return static_cast<unsigned>(__half_as_ushort(x));
}

// out[c][r] must equal in[r][c] bit for bit. One thread per output element, grid-stride.
template <typename T>
__global__ void check_kernel(const T* in, const T* out, int rows, int cols, Mismatches* mm) {
    size_t total = static_cast<size_t>(rows) * cols;
    size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
    for (size_t o = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; o < total; o += stride) {
        size_t c = o / rows, r = o % rows;
        if (bits_of(out[o]) != bits_of(in[r * cols + c])) {
            atomicAdd(&mm->count, 1ull);
            unsigned long long s = atomicAdd(&mm->slot, 1ull);
            if (s < kShown) mm->index[s] = o;
        }
    }
}

inline void call(const float* in, float* out, const Shape& s) { transpose_f32(in, out, s.rows, s.cols, 0); }
inline void call(const __half* in, __half* out, const Shape& s) { transpose_f16(in, out, s.rows, s.cols, 0); }

template <typename T>
bool check(const T* in, const beaver_guard::GuardedBuffer<T>& out, const Shape& s) {
    beaver::DeviceBuffer<Mismatches> mm(1);
    BEAVER_CHECK(cudaMemset(mm.ptr, 0, sizeof(Mismatches)));
    check_kernel<T><<<132 * 8, 256>>>(in, out.ptr, s.rows, s.cols, mm.ptr);
    beaver::sync_check("check_kernel");
    Mismatches h = mm.download()[0];
    const size_t total = static_cast<size_t>(s.rows) * s.cols;
    if (h.count == 0) {
        std::printf("OK out: %zu elements equal their input elements bit for bit\n", total);
        return true;
    }
    for (unsigned long long i = 0; i < h.slot && i < static_cast<unsigned long long>(kShown); ++i) {
        size_t o = h.index[i], c = o / s.rows, r = o % s.rows;
        T got, want;
        BEAVER_CHECK(cudaMemcpy(&got, out.ptr + o, sizeof(T), cudaMemcpyDeviceToHost));
        BEAVER_CHECK(cudaMemcpy(&want, in + r * s.cols + c, sizeof(T), cudaMemcpyDeviceToHost));
        double g = beaver::as_float(got), w = beaver::as_float(want);
        std::fprintf(stderr, "MISMATCH out at [%zu,%zu] (= in[%zu,%zu]): got %.6g expected %.6g (abs err %.3g)\n", c, r,
                     r, c, g, w, std::fabs(g - w));
    }
    std::fprintf(stderr, "FAILED out: %llu of %zu elements differ from their input elements\n", h.count, total);
    return false;
}

template <typename T>
int run(int argc, char** argv, Shape test, Shape timed) {
    beaver::Args args = beaver::parse_args(argc, argv);
    const Shape s = args.bench ? timed : test;
    const char* name = std::is_same<T, float>::value ? "transpose_f32" : "transpose_f16";
    std::printf("%s: in %d x %d row-major -> out %d x %d row-major, seed=%llu\n", name, s.rows, s.cols, s.cols,
                s.rows, static_cast<unsigned long long>(args.seed));
    const size_t n = static_cast<size_t>(s.rows) * s.cols;
    beaver_guard::GuardedBuffer<T> in(n), out(n);
    beaver_guard::fill_uniform_device(in.ptr, n, args.seed);
    out.poison();
    BEAVER_CHECK(cudaDeviceSynchronize());
    call(in.ptr, out.ptr, s);
    beaver::sync_check(name);
    beaver::poison_left("out", out.ptr, n);
    // The harness's own copy of the inputs (the solution never sees it), drawn from the same seed.
    beaver::DeviceBuffer<T> own(n);
    beaver_guard::fill_uniform_device(own.ptr, n, args.seed);
    bool ok = check(own.ptr, out, s);
    if (!ok || !args.bench) return beaver::finish(ok);

    uint64_t round = 0;
    beaver::bench(
        args, [&] { call(in.ptr, out.ptr, s); },
        [&] {
            ++round;
            beaver_guard::fill_uniform_device(in.ptr, n, args.seed + 1000003ull * round);
            out.poison();
        });
    std::printf("%s: %.3e bytes moved per call (read + write)\n", name, 2.0 * n * sizeof(T));
    // The last timed launch's output, against the inputs that launch was given (drawn again from their seed).
    beaver::sync_check(name);
    beaver::poison_left("out_timed", out.ptr, n);
    beaver_guard::fill_uniform_device(own.ptr, n, args.seed + 1000003ull * round);
    return beaver::finish(check(own.ptr, out, s));
}

}  // namespace transpose_harness
