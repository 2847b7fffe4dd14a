// transpose.cu: the "transpose" family's side of beavertui's in-process timing (beaver_timing.cuh says how
// a timing process runs). The correctness harness (transpose.cuh, the task's test_main.cu) is used unchanged:
// this file includes it, then includes the task's test_main.cu with the family's namespace renamed to
// beaver_timing_side, so that test_main.cu's call of run() with the task's sizes reaches the run() below:
//   -DBEAVER_LIBRARY        built with a solution into a side library; run() hands out the entry point
//                           that test_main.cu's sizes and types select (main() becomes beaver_test_main)
//   -DBEAVER_TIMING_DRIVER  built alone into the task's timing driver; run() times the loaded sides at the
//                           task's timing size
#include "transpose.cuh"
#include "beaver_timing.cuh"

namespace beaver_timing_side {
using namespace ::transpose_harness;

template <typename T>
using Entry = void (*)(const T*, T*, int, int, cudaStream_t);

#if defined(BEAVER_LIBRARY)
template <typename T>
int run(int argc, char** argv, Shape, Shape) {
    if constexpr (std::is_same<T, float>::value) return beaver::timing::export_entry<Entry<T>>(argc, argv, &transpose_f32);
    else return beaver::timing::export_entry<Entry<T>>(argc, argv, &transpose_f16);
}
#elif defined(BEAVER_TIMING_DRIVER)
// The timing shape's guard-paged buffers, shared by both sides; the input drawn afresh before every call.
template <typename T>
struct Timed {
    Shape s;
    size_t n;
    beaver_guard::GuardedBuffer<T> in, out;
    beaver::DeviceBuffer<T> own;
    uint64_t seed, round = 0;
    Timed(Shape shape, uint64_t seed0)
        : s(shape), n(static_cast<size_t>(shape.rows) * shape.cols), in(n), out(n), own(n), seed(seed0) {
        std::printf("%s: in %d x %d row-major -> out %d x %d row-major (timing shape)\n", name(), s.rows, s.cols,
                    s.cols, s.rows);
    }
    const char* name() const { return std::is_same<T, float>::value ? "transpose_f32" : "transpose_f16"; }
    uint64_t input_seed() const { return seed + 1000003ull * round; }
    void prepare() {
        ++round;
        beaver_guard::fill_uniform_device(in.ptr, n, input_seed());
        out.poison();
    }
    void launch(Entry<T> f) { f(in.ptr, out.ptr, s.rows, s.cols, 0); }
    // The check reads the harness's own copy of the inputs, drawn again from their seed.
    bool checked() {
        beaver_guard::fill_uniform_device(own.ptr, n, input_seed());
        return check(own.ptr, out, s);
    }
    bool first_check(Entry<T> f) {
        prepare();
        BEAVER_CHECK(cudaDeviceSynchronize());
        launch(f);
        beaver::sync_check(name());
        beaver::poison_left("out", out.ptr, n);
        return checked();
    }
    bool last_check() {
        beaver::poison_left("out_timed", out.ptr, n);
        return checked();
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
#define transpose_harness beaver_timing_side
#include "test_main.cu"
