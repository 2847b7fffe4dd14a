// scan.cu: the "scan" family's side of beavertui's in-process timing (beaver_timing.cuh says how
// a timing process runs). The correctness harness (scan.cuh, the task's test_main.cu) is used unchanged:
// this file includes it, then includes the task's test_main.cu with the family's namespace renamed to
// beaver_timing_side, so that test_main.cu's call of run() with the task's sizes reaches the run() below:
//   -DBEAVER_LIBRARY        built with a solution into a side library; run() hands out the entry point
//                           that test_main.cu's sizes and types select (main() becomes beaver_test_main)
//   -DBEAVER_TIMING_DRIVER  built alone into the task's timing driver; run() times the loaded sides at the
//                           task's timing size
#include "scan.cuh"
#include "beaver_timing.cuh"

namespace beaver_timing_side {
using namespace ::scan_task;

template <typename T>
using Entry = void (*)(const T*, T*, size_t, cudaStream_t);

#if defined(BEAVER_LIBRARY)
template <typename T>
int run(int argc, char** argv, size_t, size_t) {
    return beaver::timing::export_entry<Entry<T>>(argc, argv, &inclusive_scan);
}
#elif defined(BEAVER_TIMING_DRIVER)
// The timing size's buffers, shared by both sides; inputs drawn afresh from the seed before every call.
template <typename T>
struct Timed {
    size_t n;
    beaver::DeviceBuffer<T> x, out, xr;
    uint64_t seed, last;
    Timed(size_t count, uint64_t seed0) : n(count), x(count), out(count), xr(count), seed(seed0), last(seed0) {
        std::printf("inclusive_scan %s n=%zu (timing size)\n", dtype_name(T{}), n);
    }
    const char* name() const { return "inclusive_scan"; }
    void prepare() {
        gen_inputs<T><<<2048, 256>>>(x.ptr, n, seed);
        BEAVER_CHECK(cudaGetLastError());
        last = seed++;
        out.poison();
    }
    void launch(Entry<T> f) { f(x.ptr, out.ptr, n, 0); }
    bool first_check(Entry<T> f) {
        bool ok = true;
        for (int call = 0; call < 2 && ok; ++call) {
            prepare();
            BEAVER_CHECK(cudaDeviceSynchronize());
            launch(f);
            beaver::sync_check("inclusive_scan");
            if (call == 0) beaver::poison_left("out", out.ptr, out.n);
            ok = check_device(call == 0 ? "scan at the timing size" : "scan (second call)", xr, last, out);
        }
        return ok;
    }
    bool last_check() {
        beaver::poison_left("out_timed", out.ptr, out.n);
        return check_device("scan after timing", xr, last, out);
    }
};

template <typename T>
int run(int argc, char** argv, size_t, size_t bench_n) {
    return beaver::timing::drive<Entry<T>>(
        argc, argv, [&](uint64_t seed) { return std::make_unique<Timed<T>>(bench_n, seed); });
}
#endif

}  // namespace beaver_timing_side

#if defined(BEAVER_LIBRARY)
#define main beaver_test_main
#endif
#define scan_task beaver_timing_side
#include "test_main.cu"
