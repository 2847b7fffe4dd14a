// flashattn.cuh: the harness of the flashattn_v2 family (FlashAttention-2 forward). A task's
// test_main.cu fills a fa::Config (dtype, head_dim, causal, sizes) and calls fa::run().
//
// What it checks, and how:
// - Inputs are fresh per run: q, k, v are filled on the device from a counter-based hash of the run's
//   seed (beaver::parse_args: the clock unless BEAVER_SEED/--seed). q, k ~ U(-2, 2), v ~ U(-1, 1).
// - Every tensor lives at the very end of a mapped device range followed by an unmapped guard range
//   (CUDA virtual memory management, driver entry points fetched through the runtime, no -lcuda), so a
//   read or write even one row past the end of q, k, v or o faults instead of silently reading a
//   neighbour allocation. If the machine cannot do that, plain cudaMalloc is used and a note printed.
// - The output is poisoned (NaN) before every launch.
// - The expected output comes from a plain GPU kernel in double precision: one block per query row,
//   scores, then max, then sum of exponentials, then the weighted sum of v (a three-pass softmax, no
//   tiling tricks). The correctness configuration checks EVERY element of o; the optional long-context
//   configuration and the output of the last timed run are checked on 256 sampled rows (every element
//   of those rows), because a double-precision reference of the whole long problem would take minutes.
//   Before every check q, k and v are drawn again from their seed, so the reference sees the inputs the
//   launch was given even if the solution wrote into its inputs.
// - Timing mode (`--bench N`): first the full correctness check, then beaver::bench on the larger
//   benchmark configuration with fresh inputs and a poisoned output before every timed launch.
// It never decides how a solution computes attention, and it never edits beaver.cuh's contract.
#pragma once

#include <cuda.h>

#include <algorithm>
#include <vector>

#include "beaver.cuh"
#include "flashattn_api.h"

namespace fa {

struct Config {
    DType dtype = DType::kFloat16;
    int head_dim = 128;
    bool causal = false;
    // Correctness configuration: every output element is checked.
    int batch = 2, heads = 4, seqlen = 1024;
    // Timing configuration (`--bench N`).
    int bench_batch = 4, bench_heads = 16, bench_seqlen = 4096;
    // Optional long-context configuration (0 = none): run after the correctness one, sampled rows checked.
    int long_batch = 0, long_heads = 0, long_seqlen = 0;
};

inline const char* dtype_name(DType t) { return t == DType::kFloat16 ? "fp16" : "bf16"; }

// ------------------------------------------------------------------ guarded device memory

struct Vmm {
    using GranFn = CUresult (*)(size_t*, const CUmemAllocationProp*, CUmemAllocationGranularity_flags);
    using CreateFn = CUresult (*)(CUmemGenericAllocationHandle*, size_t, const CUmemAllocationProp*, unsigned long long);
    using ReserveFn = CUresult (*)(CUdeviceptr*, size_t, size_t, CUdeviceptr, unsigned long long);
    using MapFn = CUresult (*)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long);
    using AccessFn = CUresult (*)(CUdeviceptr, size_t, const CUmemAccessDesc*, size_t);
    using UnmapFn = CUresult (*)(CUdeviceptr, size_t);
    using FreeFn = CUresult (*)(CUdeviceptr, size_t);
    using ReleaseFn = CUresult (*)(CUmemGenericAllocationHandle);
    GranFn gran = nullptr;
    CreateFn create = nullptr;
    ReserveFn reserve = nullptr;
    MapFn map = nullptr;
    AccessFn access = nullptr;
    UnmapFn unmap = nullptr;
    FreeFn addr_free = nullptr;
    ReleaseFn release = nullptr;
    bool ok = false;

    template <typename F>
    static bool get(const char* name, F& fn) {
        void* p = nullptr;
        cudaDriverEntryPointQueryResult q{};
        if (cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault, &q) != cudaSuccess ||
            q != cudaDriverEntryPointSuccess || p == nullptr)
            return false;
        fn = reinterpret_cast<F>(p);
        return true;
    }
    static Vmm& instance() {
        static Vmm v = [] {
            Vmm x;
            x.ok = get("cuMemGetAllocationGranularity", x.gran) && get("cuMemCreate", x.create) &&
                   get("cuMemAddressReserve", x.reserve) && get("cuMemMap", x.map) &&
                   get("cuMemSetAccess", x.access) && get("cuMemUnmap", x.unmap) &&
                   get("cuMemAddressFree", x.addr_free) && get("cuMemRelease", x.release);
            return x;
        }();
        return v;
    }
};

// A device buffer whose last byte is the last mapped byte before an unmapped guard range.
struct GuardedBuffer {
    void* ptr = nullptr;
    size_t bytes = 0;
    CUdeviceptr base = 0;
    size_t mapped = 0, reserved = 0;
    CUmemGenericAllocationHandle handle = 0;
    bool guarded = false;

    explicit GuardedBuffer(size_t n_bytes) : bytes(n_bytes) {
        BEAVER_CHECK(cudaFree(nullptr));  // make sure a context exists
        Vmm& v = Vmm::instance();
        int dev = 0;
        BEAVER_CHECK(cudaGetDevice(&dev));
        CUmemAllocationProp prop{};
        prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
        prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        prop.location.id = dev;
        size_t g = 0;
        if (v.ok && v.gran(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) == CUDA_SUCCESS && g > 0) {
            mapped = (bytes + g - 1) / g * g;
            reserved = mapped + 2 * g;  // at least one whole granule of guard after the data
            bool made = false, reserved_ok = false, mapped_ok = false;
            if (v.create(&handle, mapped, &prop, 0) == CUDA_SUCCESS) {
                made = true;
                if (v.reserve(&base, reserved, g, 0, 0) == CUDA_SUCCESS) {
                    reserved_ok = true;
                    if (v.map(base, mapped, 0, handle, 0) == CUDA_SUCCESS) {
                        mapped_ok = true;
                        CUmemAccessDesc acc{};
                        acc.location = prop.location;
                        acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
                        if (v.access(base, mapped, &acc, 1) == CUDA_SUCCESS) {
                            // 16-byte aligned, ending at most 15 bytes before the guard (0 for the
                            // tensor sizes of this family, which are multiples of 16 bytes).
                            ptr = reinterpret_cast<void*>(base + ((mapped - bytes) & ~size_t(15)));
                            guarded = true;
                            return;
                        }
                    }
                }
            }
            if (mapped_ok) v.unmap(base, mapped);
            if (reserved_ok) v.addr_free(base, reserved);
            if (made) v.release(handle);
            base = 0;
        }
        static bool warned = false;
        if (!warned) {
            std::printf("note: guarded allocation unavailable here, using cudaMalloc (overreads may go unnoticed)\n");
            warned = true;
        }
        BEAVER_CHECK(cudaMalloc(&ptr, bytes));
    }
    ~GuardedBuffer() {
        if (guarded) {
            Vmm& v = Vmm::instance();
            v.unmap(base, mapped);
            v.addr_free(base, reserved);
            v.release(handle);
        } else {
            cudaFree(ptr);
        }
    }
    GuardedBuffer(const GuardedBuffer&) = delete;
    GuardedBuffer& operator=(const GuardedBuffer&) = delete;
    void poison() { BEAVER_CHECK(cudaMemset(ptr, 0xFF, bytes)); }
};

// ------------------------------------------------------------------ device kernels of the harness

__device__ __forceinline__ uint64_t splitmix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

template <typename T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ __half from_float<__half>(float x) { return __float2half_rn(x); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

__device__ __forceinline__ double to_double(__half x) { return static_cast<double>(__half2float(x)); }
__device__ __forceinline__ double to_double(__nv_bfloat16 x) { return static_cast<double>(__bfloat162float(x)); }

template <typename T>
__global__ void fill_uniform_kernel(T* p, size_t n, uint64_t seed, float lo, float hi) {
    for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
        float u = static_cast<float>(splitmix64(seed * 0x2545F4914F6CDD1Dull + i) >> 40) * (1.0f / 16777216.0f);
        p[i] = from_float<T>(lo + (hi - lo) * u);
    }
}

__device__ double block_reduce(double x, bool is_max, double* scratch) {
    for (int o = 16; o > 0; o >>= 1) {
        double y = __shfl_xor_sync(0xffffffffu, x, o);
        x = is_max ? fmax(x, y) : x + y;
    }
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, nwarps = blockDim.x / 32;
    __syncthreads();
    if (lane == 0) scratch[warp] = x;
    __syncthreads();
    double r = scratch[0];
    for (int w = 1; w < nwarps; ++w) r = is_max ? fmax(r, scratch[w]) : r + scratch[w];
    return r;
}

// The expected output, in double precision: one block per listed query row (rows == nullptr: block b
// is row b). A plain three-pass softmax: scores, their maximum, the sum of exponentials, then the
// weighted sum of v. Shared memory: head_dim + seqlen + 32 doubles.
template <typename T>
__global__ void reference_attention_kernel(const T* q, const T* k, const T* v, double* out, const long long* rows,
                                           int seqlen, int head_dim, bool causal, double scale) {
    extern __shared__ double sm[];
    double* sq = sm;
    double* s = sm + head_dim;
    double* scratch = s + seqlen;
    const long long row = rows ? rows[blockIdx.x] : static_cast<long long>(blockIdx.x);
    const long long bh = row / seqlen;
    const int i = static_cast<int>(row % seqlen);
    const T* kb = k + bh * seqlen * head_dim;
    const T* vb = v + bh * seqlen * head_dim;
    for (int c = threadIdx.x; c < head_dim; c += blockDim.x) sq[c] = to_double(q[row * head_dim + c]);
    __syncthreads();
    const int n_keys = causal ? i + 1 : seqlen;
    for (int j = threadIdx.x; j < n_keys; j += blockDim.x) {
        double acc = 0.0;
        for (int c = 0; c < head_dim; ++c) acc += sq[c] * to_double(kb[static_cast<long long>(j) * head_dim + c]);
        s[j] = acc * scale;
    }
    __syncthreads();
    double m = -INFINITY;
    for (int j = threadIdx.x; j < n_keys; j += blockDim.x) m = fmax(m, s[j]);
    m = block_reduce(m, true, scratch);
    double l = 0.0;
    for (int j = threadIdx.x; j < n_keys; j += blockDim.x) {
        const double p = exp(s[j] - m);
        s[j] = p;
        l += p;
    }
    l = block_reduce(l, false, scratch);  // ends with a barrier: every p is visible
    for (int c = threadIdx.x; c < head_dim; c += blockDim.x) {
        double acc = 0.0;
        for (int j = 0; j < n_keys; ++j) acc += s[j] * to_double(vb[static_cast<long long>(j) * head_dim + c]);
        out[static_cast<long long>(blockIdx.x) * head_dim + c] = acc / l;
    }
}

// ------------------------------------------------------------------ one problem

struct Shape {
    int batch, heads, seqlen, head_dim;
    bool causal;
    DType dtype;
    long long rows() const { return static_cast<long long>(batch) * heads * seqlen; }
    size_t elems() const { return static_cast<size_t>(rows()) * head_dim; }
    size_t bytes() const { return elems() * 2; }
    double flop() const {
        double f = 4.0 * batch * heads * double(seqlen) * double(seqlen) * head_dim;
        return causal ? f / 2 : f;
    }
};

struct Tensors {
    Shape sh;
    GuardedBuffer q, k, v, o;
    explicit Tensors(const Shape& s) : sh(s), q(s.bytes()), k(s.bytes()), v(s.bytes()), o(s.bytes()) {}

    void fill(uint64_t seed) {
        fill_inputs(seed);
        o.poison();
    }

    // q, k, v from the seed; the checks call it again after the launch, so the reference sees the inputs
    // the launch was given even if the solution wrote into them.
    void fill_inputs(uint64_t seed) {
        const int grid = 1024, block = 256;
        if (sh.dtype == DType::kFloat16) {
            fill_uniform_kernel<<<grid, block>>>(static_cast<__half*>(q.ptr), sh.elems(), seed * 3 + 0, -2.f, 2.f);
            fill_uniform_kernel<<<grid, block>>>(static_cast<__half*>(k.ptr), sh.elems(), seed * 3 + 1, -2.f, 2.f);
            fill_uniform_kernel<<<grid, block>>>(static_cast<__half*>(v.ptr), sh.elems(), seed * 3 + 2, -1.f, 1.f);
        } else {
            using B = __nv_bfloat16;
            fill_uniform_kernel<<<grid, block>>>(static_cast<B*>(q.ptr), sh.elems(), seed * 3 + 0, -2.f, 2.f);
            fill_uniform_kernel<<<grid, block>>>(static_cast<B*>(k.ptr), sh.elems(), seed * 3 + 1, -2.f, 2.f);
            fill_uniform_kernel<<<grid, block>>>(static_cast<B*>(v.ptr), sh.elems(), seed * 3 + 2, -1.f, 1.f);
        }
        BEAVER_CHECK(cudaGetLastError());
    }

    void launch(cudaStream_t stream = 0) {
        flash_attn_fwd(q.ptr, k.ptr, v.ptr, o.ptr, sh.batch, sh.heads, sh.seqlen, sh.head_dim, sh.causal, sh.dtype,
                       stream);
    }

    // Compare o with the double reference on `rows` (empty: all rows). Prints where and by how much.
    bool check(const char* what, const std::vector<long long>& rows) {
        const long long n_rows = rows.empty() ? sh.rows() : static_cast<long long>(rows.size());
        long long* d_rows = nullptr;
        if (!rows.empty()) {
            BEAVER_CHECK(cudaMalloc(&d_rows, rows.size() * sizeof(long long)));
            BEAVER_CHECK(cudaMemcpy(d_rows, rows.data(), rows.size() * sizeof(long long), cudaMemcpyHostToDevice));
        }
        double* d_ref = nullptr;
        BEAVER_CHECK(cudaMalloc(&d_ref, n_rows * sh.head_dim * sizeof(double)));
        const size_t smem = (sh.head_dim + sh.seqlen + 32) * sizeof(double);
        const double scale = 1.0 / std::sqrt(static_cast<double>(sh.head_dim));
        if (sh.dtype == DType::kFloat16) {
            using T = __half;
            BEAVER_CHECK(cudaFuncSetAttribute(reference_attention_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                              static_cast<int>(smem)));
            reference_attention_kernel<T><<<static_cast<unsigned>(n_rows), 128, smem>>>(
                static_cast<const T*>(q.ptr), static_cast<const T*>(k.ptr), static_cast<const T*>(v.ptr), d_ref,
                d_rows, sh.seqlen, sh.head_dim, sh.causal, scale);
        } else {
            using T = __nv_bfloat16;
            BEAVER_CHECK(cudaFuncSetAttribute(reference_attention_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                              static_cast<int>(smem)));
            reference_attention_kernel<T><<<static_cast<unsigned>(n_rows), 128, smem>>>(
                static_cast<const T*>(q.ptr), static_cast<const T*>(k.ptr), static_cast<const T*>(v.ptr), d_ref,
                d_rows, sh.seqlen, sh.head_dim, sh.causal, scale);
        }
        beaver::sync_check("the double-precision reference kernel");
        std::vector<double> ref(n_rows * sh.head_dim);
        BEAVER_CHECK(cudaMemcpy(ref.data(), d_ref, ref.size() * sizeof(double), cudaMemcpyDeviceToHost));
        cudaFree(d_ref);
        if (d_rows) cudaFree(d_rows);

        std::vector<uint16_t> raw(sh.elems());
        BEAVER_CHECK(cudaMemcpy(raw.data(), o.ptr, sh.bytes(), cudaMemcpyDeviceToHost));
        const beaver::Tolerance tol = sh.dtype == DType::kFloat16 ? beaver::tol_fp16() : beaver::tol_bf16();
        size_t bad = 0, shown = 0;
        double worst = 0.0;
        long long worst_row = 0;
        int worst_c = 0;
        for (long long r = 0; r < n_rows; ++r) {
            const long long row = rows.empty() ? r : rows[r];
            for (int c = 0; c < sh.head_dim; ++c) {
                const uint16_t bits = raw[row * sh.head_dim + c];
                float g;
                if (sh.dtype == DType::kFloat16) {
                    __half_raw hr;
                    hr.x = bits;
                    g = __half2float(__half(hr));
                } else {
                    __nv_bfloat16_raw br;
                    br.x = bits;
                    g = __bfloat162float(__nv_bfloat16(br));
                }
                const double e = ref[r * sh.head_dim + c];
                double err = std::fabs(g - e);
                const bool ok = std::isfinite(g) && err <= tol.atol + tol.rtol * std::fabs(e);
                if (!std::isfinite(g)) err = INFINITY;
                if (err > worst) { worst = err; worst_row = row; worst_c = c; }
                if (!ok) {
                    if (shown < 5) {
                        const long long i = row % sh.seqlen, h = (row / sh.seqlen) % sh.heads,
                                        b = row / (static_cast<long long>(sh.seqlen) * sh.heads);
                        std::fprintf(stderr, "MISMATCH %s at o[b=%lld, h=%lld, i=%lld, c=%d]: got %.6g expected %.6g (abs err %.3g)\n",
                                     what, b, h, i, c, g, e, std::fabs(g - e));
                        ++shown;
                    }
                    ++bad;
                }
            }
        }
        const size_t checked = static_cast<size_t>(n_rows) * sh.head_dim;
        if (bad) {
            std::fprintf(stderr, "FAILED %s: %zu of %zu checked elements out of tolerance (atol %.1e, rtol %.1e); "
                         "max abs err %.3g at query row %lld (of b*h*seqlen), column %d\n",
                         what, bad, checked, tol.atol, tol.rtol, worst, worst_row, worst_c);
            return false;
        }
        std::printf("OK %s: %zu elements checked%s, max abs err %.3g\n", what, checked,
                    rows.empty() ? " (all)" : " (sampled rows)", worst);
        return true;
    }
};

// 256 query rows spread over every (batch, head), including the first and last row of the sequence.
inline std::vector<long long> sample_rows(const Shape& sh, uint64_t seed) {
    std::vector<long long> rows;
    std::vector<int> pick(256);
    beaver::fill_int(pick, seed, 0, sh.seqlen - 1);
    const long long bh_count = static_cast<long long>(sh.batch) * sh.heads;
    for (int r = 0; r < 256; ++r) {
        const long long bh = (r * 7919LL) % bh_count;
        const int i = r == 0 ? 0 : r == 1 ? sh.seqlen - 1 : pick[r];
        rows.push_back(bh * sh.seqlen + i);
    }
    return rows;
}

inline void describe(const char* what, const Shape& s) {
    std::printf("%s: batch %d, heads %d, seqlen %d, head_dim %d, %s, %s (%.3g GFLOP per call)\n", what, s.batch,
                s.heads, s.seqlen, s.head_dim, s.causal ? "causal" : "non-causal", dtype_name(s.dtype), s.flop() / 1e9);
    std::fflush(stdout);  // in order with stderr, and still in the log if the run is killed by a time limit
}

inline bool run_check(const char* what, const Shape& sh, uint64_t seed, bool sampled) {
    describe(what, sh);
    Tensors t(sh);
    t.fill(seed);
    BEAVER_CHECK(cudaDeviceSynchronize());
    t.launch();
    beaver::sync_check("flash_attn_fwd");
    beaver::poison_left(sampled ? "o_long" : "o", static_cast<const uint16_t*>(t.o.ptr), sh.elems());
    t.fill_inputs(seed);
    return t.check(what, sampled ? sample_rows(sh, seed) : std::vector<long long>{});
}

inline int run(int argc, char** argv, const Config& cfg) {
    const beaver::Args args = beaver::parse_args(argc, argv);
    std::printf("seed %llu\n", static_cast<unsigned long long>(args.seed));
    const Shape small{cfg.batch, cfg.heads, cfg.seqlen, cfg.head_dim, cfg.causal, cfg.dtype};
    if (!run_check("correctness", small, args.seed, false)) return beaver::finish(false);
    if (cfg.long_seqlen > 0) {
        const Shape lng{cfg.long_batch, cfg.long_heads, cfg.long_seqlen, cfg.head_dim, cfg.causal, cfg.dtype};
        if (!run_check("long-context", lng, args.seed + 1, true)) return beaver::finish(false);
    }
    if (!args.bench) return beaver::finish(true);

    const Shape big{cfg.bench_batch, cfg.bench_heads, cfg.bench_seqlen, cfg.head_dim, cfg.causal, cfg.dtype};
    describe("benchmark", big);
    Tensors t(big);
    uint64_t iter = 0;
    beaver::bench(
        args, [&] { t.launch(); },
        [&] {
            t.fill(args.seed + 1000 + iter++);  // fresh inputs and a poisoned output before every launch
            BEAVER_CHECK(cudaDeviceSynchronize());
        });
    beaver::sync_check("flash_attn_fwd (benchmark)");
    beaver::poison_left("o_timed", static_cast<const uint16_t*>(t.o.ptr), big.elems());
    // The last timed launch's output, on the inputs it was given (drawn again from their seed).
    t.fill_inputs(args.seed + 1000 + iter - 1);
    return beaver::finish(t.check("benchmark output", sample_rows(big, args.seed + 999 + iter)));
}

}  // namespace fa
