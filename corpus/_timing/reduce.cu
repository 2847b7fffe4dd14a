// reduce.cu: the "reduce" family's side of beavertui's in-process timing (beaver_timing.cuh says how
// a timing process runs). The correctness harness (reduce.cuh, the task's test_main.cu) is used unchanged:
// this file includes it, then includes the task's test_main.cu with the family's namespace renamed to
// beaver_timing_side, so that test_main.cu's call of run() with the task's sizes reaches the run() below:
//   -DBEAVER_LIBRARY        built with a solution into a side library; run() hands out the entry point
//                           that test_main.cu's sizes and types select (main() becomes beaver_test_main)
//   -DBEAVER_TIMING_DRIVER  built alone into the task's timing driver; run() times the loaded sides at the
//                           task's timing size
#include "reduce.cuh"
#include "beaver_timing.cuh"

namespace beaver_timing_side {
using namespace ::reduce_task;

using Entry = void (*)(const float*, size_t, float*, cudaStream_t);

#if defined(BEAVER_LIBRARY)
inline int run(int argc, char** argv, size_t, size_t) {
    return beaver::timing::export_entry<Entry>(argc, argv, &reduce_sum);
}
#elif defined(BEAVER_TIMING_DRIVER)
// The timing size's buffers, shared by both sides; inputs drawn afresh from the seed before every call.
struct Timed {
    size_t n;
    beaver::DeviceBuffer<float> x, out, xr;
    uint64_t seed, last;
    Timed(size_t count, uint64_t seed0) : n(count), x(count), out(1), xr(count), seed(seed0), last(seed0) {
        std::printf("reduce_sum fp32 n=%zu (timing size)\n", n);
    }
    const char* name() const { return "reduce_sum"; }
    void prepare() {
        gen_inputs<<<2048, 256>>>(x.ptr, n, seed);
        BEAVER_CHECK(cudaGetLastError());
        last = seed++;
        out.poison();
    }
    void launch(Entry f) { f(x.ptr, n, out.ptr, 0); }
    // Two calls on new inputs, as the test does: the launcher must leave its workspace ready.
    bool first_check(Entry f) {
        bool ok = true;
        for (int call = 0; call < 2 && ok; ++call) {
            prepare();
            BEAVER_CHECK(cudaDeviceSynchronize());
            launch(f);
            beaver::sync_check("reduce_sum");
            if (call == 0) beaver::poison_left("out", out.ptr, out.n);
            ok = check(call == 0 ? "reduce at the timing size" : "reduce (second call)", xr, last, out);
        }
        return ok;
    }
    bool last_check() {
        beaver::poison_left("out_timed", out.ptr, out.n);
        return check("reduce after timing", xr, last, out);
    }
};

inline int run(int argc, char** argv, size_t, size_t bench_n) {
    return beaver::timing::drive<Entry>(argc, argv,
                                        [&](uint64_t seed) { return std::make_unique<Timed>(bench_n, seed); });
}
#endif

}  // namespace beaver_timing_side

#if defined(BEAVER_LIBRARY)
#define main beaver_test_main
#endif
#define reduce_task beaver_timing_side
#include "test_main.cu"
