// gemm_tc.cuh: the harness of the gemm_tc family (tensor-core GEMM, see gemm_tc_api.h).
//
// A task's test_main.cu picks the element type and the problem sizes and calls gemm_tc_harness::run.
// What it does: A and B are filled on the device with fresh seeded uniform values in [-1, 1) (the
// seed comes from the clock unless BEAVER_SEED/--seed), placed in guard-paged buffers so that any
// read past their ends faults; C is poisoned (NaN) before every launch; every element of C is
// compared with a double-accumulation GPU reference (a plain shared-memory tiled kernel) using the
// tolerance of the output type. `--bench N` checks once at the timing size, then times N launches,
// each on freshly filled inputs, with the L2 flushed first (beaver::bench), and checks the output of
// the last timed launch against its own inputs (drawn again from their seeds). Both checks run on the
// device (beaver::compare_device).
#pragma once

#include <type_traits>

#include "beaver.cuh"
#include "gemm_tc_api.h"
#include "gemm_tc_guard.cuh"

namespace gemm_tc_harness {

struct Shape {
    int M, N, K;
};

// Reference: C[m][n] = sum_k A[m][k] * B[k][n] in double, 16x16 shared-memory tiles, one output per
// thread. Deliberately simple.
template <typename T>
__global__ void reference_kernel(const T* A, const T* B, double* C, int M, int N, int K) {
    __shared__ double as[16][17];
    __shared__ double bs[16][17];
    int tx = threadIdx.x, ty = threadIdx.y;
    int m = blockIdx.y * 16 + ty, n = blockIdx.x * 16 + tx;
    double acc = 0.0;
    for (int k0 = 0; k0 < K; k0 += 16) {
        as[ty][tx] = (m < M && k0 + tx < K) ? static_cast<double>(beaver_guard::to_float(A[static_cast<size_t>(m) * K + k0 + tx])) : 0.0;
        bs[ty][tx] = (n < N && k0 + ty < K) ? static_cast<double>(beaver_guard::to_float(B[static_cast<size_t>(k0 + ty) * N + n])) : 0.0;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < 16; ++k) acc += as[ty][k] * bs[k][tx];
        __syncthreads();
    }
    if (m < M && n < N) C[static_cast<size_t>(m) * N + n] = acc;
}

inline void call(const __half* A, const __half* B, __half* C, const Shape& s) {
    gemm_tc_f16(A, B, C, s.M, s.N, s.K, 0);
}
inline void call(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, const Shape& s) {
    gemm_tc_bf16(A, B, C, s.M, s.N, s.K, 0);
}

template <typename T>
const char* type_name();
template <>
inline const char* type_name<__half>() { return "fp16"; }
template <>
inline const char* type_name<__nv_bfloat16>() { return "bf16"; }

template <typename T>
beaver::Tolerance tolerance();
template <>
inline beaver::Tolerance tolerance<__half>() { return beaver::tol_fp16(); }
template <>
inline beaver::Tolerance tolerance<__nv_bfloat16>() { return beaver::tol_bf16(); }

template <typename T>
int run(int argc, char** argv, Shape test, Shape timed) {
    beaver::Args args = beaver::parse_args(argc, argv);
    const Shape s = args.bench ? timed : test;
    std::printf("gemm_tc %s: M=%d N=%d K=%d (A row-major MxK, B row-major KxN, C row-major MxN) seed=%llu\n",
                type_name<T>(), s.M, s.N, s.K, static_cast<unsigned long long>(args.seed));
    const size_t na = static_cast<size_t>(s.M) * s.K, nb = static_cast<size_t>(s.K) * s.N,
                 nc = static_cast<size_t>(s.M) * s.N;
    beaver_guard::GuardedBuffer<T> A(na), B(nb), C(nc);
    beaver::DeviceBuffer<double> R(nc);

    beaver_guard::fill_uniform_device(A.ptr, na, args.seed * 2 + 1);
    beaver_guard::fill_uniform_device(B.ptr, nb, args.seed * 2 + 2);
    C.poison();
    dim3 rgrid((s.N + 15) / 16, (s.M + 15) / 16);
    reference_kernel<T><<<rgrid, dim3(16, 16)>>>(A.ptr, B.ptr, R.ptr, s.M, s.N, s.K);
    beaver::sync_check("reference_kernel");

    call(A.ptr, B.ptr, C.ptr, s);
    beaver::sync_check(std::is_same<T, __half>::value ? "gemm_tc_f16" : "gemm_tc_bf16");
    beaver::poison_left("C", C.ptr, nc);
    bool ok = beaver::compare_device("C", C.ptr, R.ptr, nc, tolerance<T>(), {s.M, s.N});
    if (!ok || !args.bench) return beaver::finish(ok);

    uint64_t round = 0;
    beaver::bench(
        args, [&] { call(A.ptr, B.ptr, C.ptr, s); },
        [&] {
            ++round;
            beaver_guard::fill_uniform_device(A.ptr, na, args.seed * 2 + 1 + 1000003ull * round);
            beaver_guard::fill_uniform_device(B.ptr, nb, args.seed * 2 + 2 + 1000003ull * round);
            C.poison();
        });
    beaver::sync_check("gemm_tc (timed)");
    std::printf("gemm_tc: %.3e FLOP per call (2*M*N*K)\n", 2.0 * s.M * s.N * s.K);
    // The last timed launch's output, against a reference on the inputs that launch was given, drawn
    // again from their seeds into fresh buffers (so a solution cannot pass by restoring old inputs).
    beaver::poison_left("C_timed", C.ptr, nc);
    {
        beaver::DeviceBuffer<T> A2(na), B2(nb);
        beaver_guard::fill_uniform_device(A2.ptr, na, args.seed * 2 + 1 + 1000003ull * round);
        beaver_guard::fill_uniform_device(B2.ptr, nb, args.seed * 2 + 2 + 1000003ull * round);
        reference_kernel<T><<<rgrid, dim3(16, 16)>>>(A2.ptr, B2.ptr, R.ptr, s.M, s.N, s.K);
        beaver::sync_check("reference_kernel (after timing)");
    }
    return beaver::finish(beaver::compare_device("C after timing", C.ptr, R.ptr, nc, tolerance<T>(), {s.M, s.N}));
}

}  // namespace gemm_tc_harness
