// flashattn.cu: the "flashattn" family's side of beavertui's in-process timing (beaver_timing.cuh says how
// a timing process runs). The correctness harness (flashattn.cuh, the task's test_main.cu) is used unchanged:
// this file includes it, then includes the task's test_main.cu with the family's namespace renamed to
// beaver_timing_side, so that test_main.cu's call of run() with the task's sizes reaches the run() below:
//   -DBEAVER_LIBRARY        built with a solution into a side library; run() hands out the entry point
//                           that test_main.cu's sizes and types select (main() becomes beaver_test_main)
//   -DBEAVER_TIMING_DRIVER  built alone into the task's timing driver; run() times the loaded sides at the
//                           task's timing size
#include "flashattn.cuh"
#include "beaver_timing.cuh"

namespace beaver_timing_side {
using namespace ::fa;

using Entry = void (*)(const void*, const void*, const void*, void*, int, int, int, int, bool, DType, cudaStream_t);

#if defined(BEAVER_LIBRARY)
inline int run(int argc, char** argv, const Config&) {
    return beaver::timing::export_entry<Entry>(argc, argv, &flash_attn_fwd);
}
#elif defined(BEAVER_TIMING_DRIVER)
// The benchmark configuration's guard-paged tensors, shared by both sides; q, k, v drawn afresh before every
// call. The checks are those of the benchmark output in the test binary: 256 sampled rows, every element.
struct Timed {
    Shape sh;
    Tensors t;
    uint64_t seed, iter = 0;
    Timed(const Shape& s, uint64_t seed0) : sh(s), t(s), seed(seed0) { describe("benchmark (timing)", sh); }
    const char* name() const { return "flash_attn_fwd"; }
    uint64_t input_seed() const { return seed + 1000 + iter; }
    void prepare() {
        ++iter;
        t.fill(input_seed());
        BEAVER_CHECK(cudaDeviceSynchronize());
    }
    void launch(Entry f) {
        f(t.q.ptr, t.k.ptr, t.v.ptr, t.o.ptr, sh.batch, sh.heads, sh.seqlen, sh.head_dim, sh.causal, sh.dtype, 0);
    }
    bool checked(const char* what) {
        t.fill_inputs(input_seed());
        return t.check(what, sample_rows(sh, input_seed()));
    }
    bool first_check(Entry f) {
        prepare();
        launch(f);
        beaver::sync_check("flash_attn_fwd");
        beaver::poison_left("o", static_cast<const uint16_t*>(t.o.ptr), sh.elems());
        return checked("benchmark configuration (sampled rows)");
    }
    bool last_check() {
        beaver::poison_left("o_timed", static_cast<const uint16_t*>(t.o.ptr), sh.elems());
        return checked("benchmark output");
    }
};

inline int run(int argc, char** argv, const Config& cfg) {
    const Shape big{cfg.bench_batch, cfg.bench_heads, cfg.bench_seqlen, cfg.head_dim, cfg.causal, cfg.dtype};
    return beaver::timing::drive<Entry>(argc, argv, [&](uint64_t seed) { return std::make_unique<Timed>(big, seed); });
}
#endif

}  // namespace beaver_timing_side

#if defined(BEAVER_LIBRARY)
#define main beaver_test_main
#endif
#define fa beaver_timing_side
#include "test_main.cu"
