// gemm_tc.cu: the "gemm_tc" family's side of beavertui's in-process timing (beaver_timing.cuh says how
// a timing process runs). The correctness harness (gemm_tc.cuh, the task's test_main.cu) is used unchanged:
// this file includes it, then includes the task's test_main.cu with the family's namespace renamed to
// beaver_timing_side, so that test_main.cu's call of run() with the task's sizes reaches the run() below:
//   -DBEAVER_LIBRARY        built with a solution into a side library; run() hands out the entry point
//                           that test_main.cu's sizes and types select (main() becomes beaver_test_main)
//   -DBEAVER_TIMING_DRIVER  built alone into the task's timing driver; run() times the loaded sides at the
//                           task's timing size
#include "gemm_tc.cuh"
#include "beaver_timing.cuh"

namespace beaver_timing_side {
using namespace ::gemm_tc_harness;

template <typename T>
using Entry = void (*)(const T*, const T*, T*, int, int, int, cudaStream_t);

#if defined(BEAVER_LIBRARY)
template <typename T>
int run(int argc, char** argv, Shape, Shape) {
    if constexpr (std::is_same<T, __half>::value) return beaver::timing::export_entry<Entry<T>>(argc, argv, &gemm_tc_f16);
    else return beaver::timing::export_entry<Entry<T>>(argc, argv, &gemm_tc_bf16);
}
#elif defined(BEAVER_TIMING_DRIVER)
// The timing shape's guard-paged A, B, C, shared by both sides; A and B drawn afresh before every call.
template <typename T>
struct Timed {
    Shape s;
    size_t na, nb, nc;
    beaver_guard::GuardedBuffer<T> A, B, C;
    beaver::DeviceBuffer<double> R;
    uint64_t seed, round = 0;
    Timed(Shape shape, uint64_t seed0)
        : s(shape), na(static_cast<size_t>(shape.M) * shape.K), nb(static_cast<size_t>(shape.K) * shape.N),
          nc(static_cast<size_t>(shape.M) * shape.N), A(na), B(nb), C(nc), R(nc), seed(seed0) {
        std::printf("gemm_tc %s: M=%d N=%d K=%d (timing shape)\n", type_name<T>(), s.M, s.N, s.K);
    }
    const char* name() const { return std::is_same<T, __half>::value ? "gemm_tc_f16" : "gemm_tc_bf16"; }
    uint64_t seed_a() const { return seed * 2 + 1 + 1000003ull * round; }
    uint64_t seed_b() const { return seed * 2 + 2 + 1000003ull * round; }
    void prepare() {
        ++round;
        beaver_guard::fill_uniform_device(A.ptr, na, seed_a());
        beaver_guard::fill_uniform_device(B.ptr, nb, seed_b());
        C.poison();
    }
    void launch(Entry<T> f) { f(A.ptr, B.ptr, C.ptr, s.M, s.N, s.K, 0); }
    // The reference on the inputs of the last call, drawn again from their seeds into fresh buffers.
    bool checked(const char* what) {
        {
            beaver::DeviceBuffer<T> A2(na), B2(nb);
            beaver_guard::fill_uniform_device(A2.ptr, na, seed_a());
            beaver_guard::fill_uniform_device(B2.ptr, nb, seed_b());
            dim3 rgrid((s.N + 15) / 16, (s.M + 15) / 16);
            reference_kernel<T><<<rgrid, dim3(16, 16)>>>(A2.ptr, B2.ptr, R.ptr, s.M, s.N, s.K);
            beaver::sync_check("reference_kernel");
        }
        return beaver::compare_device(what, C.ptr, R.ptr, nc, tolerance<T>(), {s.M, s.N});
    }
    bool first_check(Entry<T> f) {
        prepare();
        BEAVER_CHECK(cudaDeviceSynchronize());
        launch(f);
        beaver::sync_check(name());
        beaver::poison_left("C", C.ptr, nc);
        return checked("C at the timing shape");
    }
    bool last_check() {
        beaver::poison_left("C_timed", C.ptr, nc);
        return checked("C after timing");
    }
};

template <typename T>
int run(int argc, char** argv, Shape, Shape timed) {
    return beaver::timing::drive<Entry<T>>(argc, argv,
                                           [&](uint64_t seed) { return std::make_unique<Timed<T>>(timed, seed); });
}
#endif

}  // namespace beaver_timing_side

#if defined(BEAVER_LIBRARY)
#define main beaver_test_main
#endif
#define gemm_tc_harness beaver_timing_side
#include "test_main.cu"
