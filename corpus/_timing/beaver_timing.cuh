// beaver_timing.cuh: one timing process for a reference and a candidate (beavertui's in-process timing).
//
// The test binary (test_main.cu + solution.cu) is unchanged: it is what decides correctness. For timing,
// the family's file in this folder (<family>.cu, which includes the family harness and the task's
// test_main.cu unchanged, the family namespace renamed so that test_main.cu's run() call with the task's
// sizes reaches the timing side's run()) is built twice more:
// - as a side library, once per solution:
//     nvcc ... -Xcompiler -fPIC -shared -DBEAVER_LIBRARY -o solution.so solution.cu _timing/<family>.cu
//   It only hands out the address of the entry point its task calls (the overload the test binary would
//   call), through beaver_test_main(2, {"beaver-export", &slot}) (test_main.cu's main, renamed). Nothing
//   else runs.
// - as the timing driver, once per task (no solution linked in):
//     nvcc ... -DBEAVER_TIMING_DRIVER -o timing.out _timing/<family>.cu -ldl
//   `./timing.out --bench N --reference ref/solution.so [--candidate cand/solution.so] --rounds R` loads
//   both libraries with dlopen(RTLD_NOW | RTLD_LOCAL) (each binds to its own symbols, neither is visible
//   to the other) into one process and one CUDA context, builds the family's problem once (its buffers,
//   and inputs that are costly to make, such as spmv's matrix, drawn on the device), then:
//     1. per side: fresh inputs, poisoned output, one call, BEAVER_POISON_LEFT, the family's full check
//        at the timing size (a side that fails here fails before any timed launch);
//     2. R rounds of (reference, candidate): per side, warm-up launches (3 in the first round, 1 after),
//        then N timed launches, each after fresh inputs, a poisoned output and a 256 MiB L2 flush, timed
//        alone between two CUDA events on the legacy default stream (BEAVER_TIME_MS; the start event and
//        the launch are queued while the flush runs, so the host's launch latency is not in it) with the
//        host time from the start event to a full device synchronisation (BEAVER_HOST_MS); then
//        BEAVER_POISON_LEFT of the last timed launch and the family's check of its output against its own
//        inputs (a side that fails here failed after its samples: a cached or replayed result);
//     3. with --stop-below X (both sides): after the first round, when median(ref) / median(cand) < X and
//        both CVs are at most --cv-limit, the remaining rounds are skipped (BEAVER_STOPPED).
//     4. with --side-budget-ms B: a side whose launches are slow (hundreds of ms each) stops early within a
//        round, so that one slow side cannot make the stage last many seconds: its warm-up launches stop
//        after the first once they took B/4 ms of host time, and its timed launches stop once the round took
//        B ms and at least --min-iters (default 5) were timed. The round then ends with
//        `BEAVER_CAPPED <timed> of <N> launches after <ms> ms` before the check of its last output, which
//        is the same as in a full round. Launches of a few ms never reach it.
//   Every section of the output starts with `BEAVER_SIDE <reference|candidate> <load|check|round K>`, so the
//   reader attributes each line, sample and failure to its side, and ends with `BEAVER_THREADS <n>` (host
//   threads of the process then: a side that leaves threads running shows). The last line of a complete
//   run is `BEAVER_DONE rounds <k> iters <N>` then PASS. Exit status: 0 all checks passed, 1 a check failed
//   (the last BEAVER_SIDE line names the side), 3 a CUDA error, 4 a library could not be loaded.
// It never decides what a task computes: the family harness provides the problem (inputs, call, checks).
#pragma once

#if defined(BEAVER_LIBRARY) || defined(BEAVER_TIMING_DRIVER)

#include <dirent.h>
#include <dlfcn.h>

#include <algorithm>
#include <memory>
#include <typeinfo>

#include "beaver.cuh"

#if defined(BEAVER_LIBRARY)
// test_main.cu's main() becomes this function (-Dmain=beaver_test_main); C linkage, exported.
extern "C" __attribute__((visibility("default"))) int beaver_test_main(int argc, char** argv);
#endif

namespace beaver {
namespace timing {

// What a side library hands out: the entry point and the name of its type (checked by the driver).
struct Export {
    void* entry = nullptr;
    const char* type = nullptr;
};

constexpr const char* kExportTag = "beaver-export";

// Library mode: the family's run() calls this with the entry point its task's harness calls.
template <typename F>
int export_entry(int argc, char** argv, F fn) {
    if (argc != 2 || argv == nullptr || argv[0] == nullptr || std::strcmp(argv[0], kExportTag) != 0) {
        std::fprintf(stderr, "this library is one side of beavertui's timing process, not a program\n");
        return 2;
    }
    Export* out = reinterpret_cast<Export*>(argv[1]);
    out->entry = reinterpret_cast<void*>(fn);
    out->type = typeid(F).name();
    return 0;
}

#if defined(BEAVER_TIMING_DRIVER)

struct Options {
    const char* reference = nullptr;
    const char* candidate = nullptr;
    int rounds = 3;
    double stop_below = 0.0;
    double cv_limit = 0.03;
    double side_budget_ms = 0.0;  // 0: every side times all N launches of every round
    int min_iters = 5;
};

inline Options parse_options(int argc, char** argv) {
    Options o;
    for (int i = 1; i + 1 < argc; ++i) {
        if (std::strcmp(argv[i], "--reference") == 0) o.reference = argv[++i];
        else if (std::strcmp(argv[i], "--candidate") == 0) o.candidate = argv[++i];
        else if (std::strcmp(argv[i], "--rounds") == 0) o.rounds = std::atoi(argv[++i]);
        else if (std::strcmp(argv[i], "--stop-below") == 0) o.stop_below = std::atof(argv[++i]);
        else if (std::strcmp(argv[i], "--cv-limit") == 0) o.cv_limit = std::atof(argv[++i]);
        else if (std::strcmp(argv[i], "--side-budget-ms") == 0) o.side_budget_ms = std::atof(argv[++i]);
        else if (std::strcmp(argv[i], "--min-iters") == 0) o.min_iters = std::atoi(argv[++i]);
    }
    if (o.rounds < 1) o.rounds = 1;
    if (o.min_iters < 2) o.min_iters = 2;
    return o;
}

inline void section(const char* side, const char* phase, int round = -1) {
    if (round >= 0) std::printf("BEAVER_SIDE %s %s %d\n", side, phase, round + 1);
    else std::printf("BEAVER_SIDE %s %s\n", side, phase);
    std::fflush(stdout);
}

// Host threads of this process now (entries of /proc/self/task), -1 when unknown.
inline int host_threads() {
    DIR* d = opendir("/proc/self/task");
    if (d == nullptr) return -1;
    int n = 0;
    while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

inline void end_section() {
    std::printf("BEAVER_THREADS %d\n", host_threads());
    std::fflush(stdout);
}

template <typename F>
F load_side(const char* side, const char* path) {
    section(side, "load");
    void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
        const char* why = dlerror();
        std::fprintf(stderr, "BEAVER_LOAD_FAILED %s: cannot load %s: %s\n", side, path, why ? why : "?");
        std::exit(4);
    }
    using Main = int (*)(int, char**);
    Main m = reinterpret_cast<Main>(dlsym(h, "beaver_test_main"));
    if (m == nullptr) {
        std::fprintf(stderr, "BEAVER_LOAD_FAILED %s: %s exports no beaver_test_main\n", side, path);
        std::exit(4);
    }
    Export e;
    char tag[32];
    std::snprintf(tag, sizeof(tag), "%s", kExportTag);
    char* args[3] = {tag, reinterpret_cast<char*>(&e), nullptr};
    if (m(2, args) != 0 || e.entry == nullptr || e.type == nullptr || std::strcmp(e.type, typeid(F).name()) != 0) {
        std::fprintf(stderr, "BEAVER_LOAD_FAILED %s: %s does not export this task's entry point (%s)\n", side, path,
                     e.type ? e.type : "none");
        std::exit(4);
    }
    end_section();
    return reinterpret_cast<F>(e.entry);
}

inline void stats(std::vector<double> v, double& median, double& cv) {
    median = 0.0;
    cv = 0.0;
    if (v.empty()) return;
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    double mean = 0.0;
    for (double x : v) mean += x;
    mean /= static_cast<double>(n);
    if (n < 2 || mean <= 0.0) return;
    double ss = 0.0;
    for (double x : v) ss += (x - mean) * (x - mean);
    cv = std::sqrt(ss / static_cast<double>(n - 1)) / mean;
}

// The timed launches of one side in one round; the event times are appended to `samples`. The same loop
// as beaver::bench (beaver.cuh), which prints its samples but does not return them: the driver needs them
// for the early stop, and beaver.cuh is the correctness harness, which stays as it is (every harness hash,
// and what is keyed on it, depends on it).
struct Clock {
    L2Flusher l2;
    cudaEvent_t flushed = nullptr, start = nullptr, stop = nullptr;
    Clock() {
        BEAVER_CHECK(cudaEventCreate(&flushed));
        BEAVER_CHECK(cudaEventCreate(&start));
        BEAVER_CHECK(cudaEventCreate(&stop));
    }
    ~Clock() {
        cudaEventDestroy(flushed);
        cudaEventDestroy(start);
        cudaEventDestroy(stop);
    }
    // budget_ms > 0: the warm-ups stop after the first once they took budget_ms / 4 of host time, and the
    // timed launches once the whole call took budget_ms and at least min_iters were timed (BEAVER_CAPPED).
    template <typename Prepare, typename Launch>
    void run(int warmup, int iters, Prepare&& prepare, Launch&& launch, std::vector<double>& samples,
             double budget_ms = 0.0, int min_iters = 5) {
        const auto begin = std::chrono::steady_clock::now();
        auto spent = [&] {
            return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin).count();
        };
        int timed = 0;
        for (int i = 0; i < warmup + iters; ++i) {
            if (budget_ms > 0.0 && i > 0 && i < warmup && spent() >= budget_ms / 4) {
                i = warmup - 1;  // the remaining warm-ups are skipped; the next launch is the first timed one
                continue;
            }
            if (budget_ms > 0.0 && timed >= min_iters && spent() >= budget_ms) {
                std::printf("BEAVER_CAPPED %d of %d launches after %.1f ms\n", timed, iters, spent());
                break;
            }
            prepare();
            BEAVER_CHECK(cudaDeviceSynchronize());
            // The start event is queued behind the L2 flush, and the launch behind it while the flush still
            // runs, so the events hold the kernels and not the host's launch latency (with the GPU idle at
            // the start event, a 0.2 ms launch measured tens of microseconds of host jitter). The host time
            // counts from the start event: the flush's part (flushed -> start) is taken off.
            const auto host0 = std::chrono::steady_clock::now();
            BEAVER_CHECK(cudaEventRecord(flushed));
            l2.flush();
            BEAVER_CHECK(cudaEventRecord(start));
            launch();
            BEAVER_CHECK(cudaEventRecord(stop));
            BEAVER_CHECK(cudaEventSynchronize(stop));
            BEAVER_CHECK(cudaDeviceSynchronize());
            BEAVER_CHECK(cudaGetLastError());
            float ms = 0.f, flush_ms = 0.f;
            BEAVER_CHECK(cudaEventElapsedTime(&ms, start, stop));
            BEAVER_CHECK(cudaEventElapsedTime(&flush_ms, flushed, start));
            const double host_ms =
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - host0).count() -
                flush_ms;
            if (i >= warmup) {
                std::printf("BEAVER_TIME_MS %.6f\nBEAVER_HOST_MS %.6f\n", ms, host_ms);
                samples.push_back(ms);
                ++timed;
            }
        }
        std::fflush(stdout);
    }
};

// The driver. `make(seed)` builds the family's problem P once both sides are loaded; P provides
//   const char* name();                  // the entry point, for error messages
//   bool first_check(F f);               // fresh inputs, poisoned output, one call, POISON_LEFT, full check
//   void prepare();                      // fresh inputs and a poisoned output (untimed)
//   void launch(F f);                    // one call of the entry point on the prepared inputs
//   bool last_check();                   // POISON_LEFT of the last launch and the check of its output
template <typename F, typename Make>
int drive(int argc, char** argv, Make&& make) {
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    const Args a = parse_args(argc, argv);
    const Options o = parse_options(argc, argv);
    if (o.reference == nullptr) {
        std::fprintf(stderr,
                     "usage: %s --bench N --reference LIB [--candidate LIB] [--rounds R] [--stop-below X]"
                     " [--cv-limit C] [--side-budget-ms B] [--min-iters M]\n",
                     argv[0]);
        return 2;
    }
    BEAVER_CHECK(cudaFree(nullptr));  // one context, made before either side is loaded
    struct Side {
        const char* name;
        F entry;
        std::vector<double> samples;
    };
    std::vector<Side> sides;
    sides.push_back({"reference", load_side<F>("reference", o.reference), {}});
    if (o.candidate != nullptr) sides.push_back({"candidate", load_side<F>("candidate", o.candidate), {}});
    std::printf("BEAVER_DRIVER sides %zu rounds %d iters %d warmup %d seed %llu side-budget-ms %g min-iters %d\n",
                sides.size(), o.rounds, a.iters, a.warmup, static_cast<unsigned long long>(a.seed), o.side_budget_ms,
                o.min_iters);
    auto problem = make(a.seed);
    for (Side& s : sides) {
        section(s.name, "check");
        if (!problem->first_check(s.entry)) return finish(false);
        end_section();
    }
    Clock clock;
    int done = 0;
    for (int r = 0; r < o.rounds; ++r) {
        for (Side& s : sides) {
            section(s.name, "round", r);
            clock.run(
                r == 0 ? a.warmup : 1, a.iters, [&] { problem->prepare(); }, [&] { problem->launch(s.entry); },
                s.samples, o.side_budget_ms, o.min_iters);
            sync_check(problem->name());
            if (!problem->last_check()) return finish(false);
            end_section();
        }
        done = r + 1;
        if (r == 0 && o.stop_below > 0.0 && sides.size() == 2 && o.rounds > 1) {
            double rm, rcv, cm, ccv;
            stats(sides[0].samples, rm, rcv);
            stats(sides[1].samples, cm, ccv);
            if (cm > 0.0 && rm / cm < o.stop_below && std::max(rcv, ccv) <= o.cv_limit) {
                std::printf("BEAVER_STOPPED after 1 of %d rounds: %.4g below %.4g, CVs %.4g and %.4g\n", o.rounds,
                            rm / cm, o.stop_below, rcv, ccv);
                break;
            }
        }
    }
    std::printf("BEAVER_DONE rounds %d iters %d\n", done, a.iters);
    return finish(true);
}

#endif  // BEAVER_TIMING_DRIVER

}  // namespace timing
}  // namespace beaver

#endif  // BEAVER_LIBRARY || BEAVER_TIMING_DRIVER
