// softmax.cu: the "softmax" family's side of beavertui's in-process timing (beaver_timing.cuh says how
// a timing process runs). The correctness harness (softmax.cuh, the task's test_main.cu) is used unchanged:
// this file includes it, then includes the task's test_main.cu with the family's namespace renamed to
// beaver_timing_side, so that test_main.cu's call of run() with the task's sizes reaches the run() below:
//   -DBEAVER_LIBRARY        built with a solution into a side library; run() hands out the entry point
//                           that test_main.cu's sizes and types select (main() becomes beaver_test_main)
//   -DBEAVER_TIMING_DRIVER  built alone into the task's timing driver; run() times the loaded sides at the
//                           task's timing size
#include "softmax.cuh"
#include "beaver_timing.cuh"

namespace beaver_timing_side {
using namespace ::softmax_task;

template <typename T>
using Entry = void (*)(const T*, T*, int, int, cudaStream_t);

#if defined(BEAVER_LIBRARY)
template <typename T>
int run(int argc, char** argv, Shape, Shape) {
    return beaver::timing::export_entry<Entry<T>>(argc, argv, &softmax_rows);
}
#elif defined(BEAVER_TIMING_DRIVER)
// The timing shape's buffers, shared by both sides; inputs drawn afresh from the seed before every call.
template <typename T>
struct Timed {
    Shape s;
    beaver::DeviceBuffer<T> x, y, xr;
    uint64_t seed, last;
    Timed(Shape shape, uint64_t seed0)
        : s(shape), x(static_cast<size_t>(shape.rows) * shape.cols), y(x.n), xr(x.n), seed(seed0), last(seed0) {
        std::printf("softmax_rows %s rows=%d cols=%d (timing shape)\n", dtype_name<T>(), s.rows, s.cols);
    }
    const char* name() const { return "softmax_rows"; }
    void prepare() {
        gen_logits<T><<<1024, 256>>>(x.ptr, s.rows, s.cols, seed);
        BEAVER_CHECK(cudaGetLastError());
        last = seed;
        seed += 8;
        y.poison();
    }
    void launch(Entry<T> f) { f(x.ptr, y.ptr, s.rows, s.cols, 0); }
    bool first_check(Entry<T> f) {
        prepare();
        BEAVER_CHECK(cudaDeviceSynchronize());
        launch(f);
        beaver::sync_check("softmax_rows");
        beaver::poison_left("y", y.ptr, y.n);
        return check("softmax at the timing shape", xr, last, y, s);
    }
    bool last_check() {
        beaver::poison_left("y_timed", y.ptr, y.n);
        return check("softmax after timing", xr, last, y, s);
    }
};

template <typename T>
int run(int argc, char** argv, Shape, Shape bench_shape) {
    return beaver::timing::drive<Entry<T>>(
        argc, argv, [&](uint64_t seed) { return std::make_unique<Timed<T>>(bench_shape, seed); });
}
#endif

}  // namespace beaver_timing_side

#if defined(BEAVER_LIBRARY)
#define main beaver_test_main
#endif
#define softmax_task beaver_timing_side
#include "test_main.cu"
