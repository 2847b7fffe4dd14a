// histogram.cu: the "histogram" family's side of beavertui's in-process timing (beaver_timing.cuh says how
// a timing process runs). The correctness harness (histogram.cuh, the task's test_main.cu) is used unchanged:
// this file includes it, then includes the task's test_main.cu with the family's namespace renamed to
// beaver_timing_side, so that test_main.cu's call of run() with the task's sizes reaches the run() below:
//   -DBEAVER_LIBRARY        built with a solution into a side library; run() hands out the entry point
//                           that test_main.cu's sizes and types select (main() becomes beaver_test_main)
//   -DBEAVER_TIMING_DRIVER  built alone into the task's timing driver; run() times the loaded sides at the
//                           task's timing size
#include "histogram.cuh"
#include "beaver_timing.cuh"

namespace beaver_timing_side {
using namespace ::histogram_task;

using Entry = void (*)(const uint8_t*, size_t, unsigned int*, cudaStream_t);

#if defined(BEAVER_LIBRARY)
inline int run(int argc, char** argv, size_t, size_t) {
    return beaver::timing::export_entry<Entry>(argc, argv, &histogram256);
}
#elif defined(BEAVER_TIMING_DRIVER)
// The timing size's buffers, shared by both sides; bytes drawn afresh from the seed before every call.
struct Timed {
    size_t n;
    beaver::DeviceBuffer<uint8_t> data;
    beaver::DeviceBuffer<unsigned int> bins;
    uint64_t seed, last;
    Timed(size_t count, uint64_t seed0) : n(count), data(count), bins(256), seed(seed0), last(seed0) {
        std::printf("histogram256 n=%zu bytes (timing size)\n", n);
    }
    const char* name() const { return "histogram256"; }
    void prepare() {
        gen_bytes<<<2048, 256>>>(data.ptr, n, seed);
        BEAVER_CHECK(cudaGetLastError());
        last = seed++;
        bins.poison();
    }
    void launch(Entry f) { f(data.ptr, n, bins.ptr, 0); }
    bool first_check(Entry f) {
        bool ok = true;
        for (int call = 0; call < 2 && ok; ++call) {
            prepare();
            BEAVER_CHECK(cudaDeviceSynchronize());
            launch(f);
            beaver::sync_check("histogram256");
            if (call == 0) beaver::poison_left("bins", bins.ptr, bins.n);
            ok = check(call == 0 ? "histogram at the timing size" : "histogram (second call)", n, last, bins);
        }
        return ok;
    }
    bool last_check() {
        beaver::poison_left("bins_timed", bins.ptr, bins.n);
        return check("histogram after timing", n, last, bins);
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
#define histogram_task beaver_timing_side
#include "test_main.cu"
