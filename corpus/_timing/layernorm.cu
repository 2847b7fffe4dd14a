// layernorm.cu: the "layernorm" family's side of beavertui's in-process timing (beaver_timing.cuh says how
// a timing process runs). The correctness harness (layernorm.cuh, the task's test_main.cu) is used unchanged:
// this file includes it, then includes the task's test_main.cu with the family's namespace renamed to
// beaver_timing_side, so that test_main.cu's call of run() with the task's sizes reaches the run() below:
//   -DBEAVER_LIBRARY        built with a solution into a side library; run() hands out the entry point
//                           that test_main.cu's sizes and types select (main() becomes beaver_test_main)
//   -DBEAVER_TIMING_DRIVER  built alone into the task's timing driver; run() times the loaded sides at the
//                           task's timing size
#include "layernorm.cuh"
#include "beaver_timing.cuh"

namespace beaver_timing_side {
using namespace ::layernorm_task;

template <typename T>
using Entry = void (*)(const T*, const T*, const T*, T*, int, int, float, cudaStream_t);

#if defined(BEAVER_LIBRARY)
template <typename T>
int run(int argc, char** argv, Shape, Shape) {
    return beaver::timing::export_entry<Entry<T>>(argc, argv, &layernorm_forward);
}
#elif defined(BEAVER_TIMING_DRIVER)
// The timing shape's buffers, shared by both sides; inputs drawn afresh from the seed before every call.
template <typename T>
struct Timed {
    Shape s;
    beaver::DeviceBuffer<T> x, y, gamma, beta, xr, gr, br;
    uint64_t seed, last;
    Timed(Shape shape, uint64_t seed0)
        : s(shape), x(static_cast<size_t>(shape.rows) * shape.cols), y(x.n), gamma(shape.cols), beta(shape.cols),
          xr(x.n), gr(shape.cols), br(shape.cols), seed(seed0), last(seed0) {
        std::printf("layernorm_forward %s rows=%d cols=%d eps=%g (timing shape)\n", dtype_name<T>(), s.rows, s.cols,
                    kEps);
    }
    const char* name() const { return "layernorm_forward"; }
    void prepare() {
        gen_inputs<T><<<1024, 256>>>(x.ptr, gamma.ptr, beta.ptr, s.rows, s.cols, seed);
        BEAVER_CHECK(cudaGetLastError());
        last = seed;
        seed += 8;
        y.poison();
    }
    void launch(Entry<T> f) { f(x.ptr, gamma.ptr, beta.ptr, y.ptr, s.rows, s.cols, kEps, 0); }
    bool first_check(Entry<T> f) {
        prepare();
        BEAVER_CHECK(cudaDeviceSynchronize());
        launch(f);
        beaver::sync_check("layernorm_forward");
        beaver::poison_left("y", y.ptr, y.n);
        return check("layernorm at the timing shape", xr, gr, br, last, y, s);
    }
    bool last_check() {
        beaver::poison_left("y_timed", y.ptr, y.n);
        return check("layernorm after timing", xr, gr, br, last, y, s);
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
#define layernorm_task beaver_timing_side
#include "test_main.cu"
