// spmv_csr.cu: the "spmv_csr" family's side of beavertui's in-process timing (beaver_timing.cuh says how
// a timing process runs). The correctness harness (spmv_csr.cuh, the task's test_main.cu) is used unchanged:
// this file includes it, then includes the task's test_main.cu with the family's namespace renamed to
// beaver_timing_side, so that test_main.cu's call of run() with the task's sizes reaches the run() below:
//   -DBEAVER_LIBRARY        built with a solution into a side library; run() hands out the entry point
//                           that test_main.cu's sizes and types select (main() becomes beaver_test_main)
//   -DBEAVER_TIMING_DRIVER  built alone into the task's timing driver; run() times the loaded sides at the
//                           task's timing size
#include "spmv_csr.cuh"
#include "beaver_timing.cuh"

namespace beaver_timing_side {
using namespace ::spmv_csr_harness;

using Entry = void (*)(int, int, int, const int*, const int*, const float*, const float*, float*, cudaStream_t);

#if defined(BEAVER_LIBRARY)
inline int run(int argc, char** argv, Shape, Shape) {
    return beaver::timing::export_entry<Entry>(argc, argv, &spmv_csr_f32);
}
#elif defined(BEAVER_TIMING_DRIVER)
// The timing process draws its matrix once, on the device, with the distribution generate() draws on the
// host (about 4% empty rows, log-normal lengths with sigma 1 capped at min(2048, cols), a fraction `banded`
// of the rows clustered around the diagonal, columns strictly increasing per row, values in [-1, 1)), each
// row from its own counter-based stream. The row lengths come back to the host for the row pointers (one
// prefix sum) and the statistics line.
struct DevRng {
    uint64_t s;
    __device__ uint64_t next() { return s = beaver_guard::splitmix64(s); }
    __device__ double uniform() { return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0); }
    __device__ int below(int n) { return static_cast<int>((next() >> 33) % static_cast<uint64_t>(n)); }
};

__device__ inline uint64_t row_stream(uint64_t seed, int r, uint64_t which) {
    return beaver_guard::splitmix64(seed ^ beaver_guard::splitmix64(static_cast<uint64_t>(r) * 4 + which));
}

__global__ void gen_lengths(int rows, int cap, double mu, double sigma, uint64_t seed, int* len) {
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    DevRng rng{row_stream(seed, r, 1)};
    if (rng.uniform() < 0.04) {
        len[r] = 0;
        return;
    }
    const double u1 = fmax(rng.uniform(), 1e-12), u2 = rng.uniform();
    const double z = sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
    const long long l = llround(exp(mu + sigma * z));
    len[r] = static_cast<int>(l < 1 ? 1 : (l > cap ? cap : l));
}

__global__ void gen_entries(int rows, int cols, double banded, uint64_t seed, const int* row_ptr, int* col_idx,
                            float* values) {
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    const int L = row_ptr[r + 1] - row_ptr[r];
    if (L == 0) return;
    DevRng rng{row_stream(seed, r, 2)};
    int* c = col_idx + row_ptr[r];
    float* v = values + row_ptr[r];
    if (rng.uniform() < banded && 2 * L <= cols) {
        const long long diag = static_cast<long long>(r) * cols / rows;
        long long start = diag - L;
        if (start < 0) start = 0;
        if (start > cols - 2 * L) start = cols - 2 * L;
        for (int j = 0; j < L; ++j) c[j] = static_cast<int>(start + 2 * j + (rng.next() & 1));
    } else {
        for (int j = 0; j < L; ++j) {
            const long long lo = static_cast<long long>(j) * cols / L, hi = static_cast<long long>(j + 1) * cols / L;
            c[j] = static_cast<int>(lo + rng.below(static_cast<int>(hi - lo)));
        }
    }
    for (int j = 0; j < L; ++j) v[j] = static_cast<float>(rng.uniform() * 2.0 - 1.0);
}

inline std::vector<int> device_row_ptr(const Shape& s, uint64_t seed) {
    beaver::DeviceBuffer<int> len(s.rows);
    const double sigma = 1.0, mu = std::log(s.mean_len) - 0.5 * sigma * sigma;
    gen_lengths<<<(s.rows + 255) / 256, 256>>>(s.rows, std::min(2048, s.cols), mu, sigma, seed, len.ptr);
    beaver::sync_check("the matrix's row lengths");
    const std::vector<int> h = len.download();
    std::vector<int> row_ptr(s.rows + 1, 0);
    for (int r = 0; r < s.rows; ++r) row_ptr[r + 1] = row_ptr[r] + h[r];
    return row_ptr;
}

struct Timed {
    Shape s;
    std::vector<int> host_row_ptr;
    int nnz;
    beaver_guard::GuardedBuffer<int> row_ptr, col_idx;
    beaver_guard::GuardedBuffer<float> values, x, y;
    beaver::DeviceBuffer<int> p_row_ptr, p_col_idx;
    beaver::DeviceBuffer<float> p_values, p_x;
    beaver::DeviceBuffer<double> ref;
    uint64_t seed, round = 0;
    Timed(Shape shape, uint64_t seed0)
        : s(shape), host_row_ptr(device_row_ptr(shape, seed0)), nnz(host_row_ptr[shape.rows]),
          row_ptr(shape.rows + 1, 4), col_idx(nnz, 4), values(nnz, 4), x(shape.cols, 4), y(shape.rows, 4),
          p_row_ptr(shape.rows + 1), p_col_idx(nnz), p_values(nnz), p_x(shape.cols), ref(shape.rows), seed(seed0) {
        row_ptr.upload(host_row_ptr);
        gen_entries<<<(s.rows + 255) / 256, 256>>>(s.rows, s.cols, s.banded, seed, row_ptr.ptr, col_idx.ptr,
                                                  values.ptr);
        beaver::sync_check("the matrix's columns and values");
        // The harness's own copies, for the reference (the solution never sees them).
        BEAVER_CHECK(cudaMemcpy(p_row_ptr.ptr, row_ptr.ptr, (s.rows + 1) * sizeof(int), cudaMemcpyDeviceToDevice));
        BEAVER_CHECK(cudaMemcpy(p_col_idx.ptr, col_idx.ptr, nnz * sizeof(int), cudaMemcpyDeviceToDevice));
        BEAVER_CHECK(cudaMemcpy(p_values.ptr, values.ptr, nnz * sizeof(float), cudaMemcpyDeviceToDevice));
        int empty = 0, longest = 0;
        for (int r = 0; r < s.rows; ++r) {
            const int L = host_row_ptr[r + 1] - host_row_ptr[r];
            empty += L == 0;
            longest = std::max(longest, L);
        }
        std::printf("spmv_csr_f32: rows=%d cols=%d nnz=%d (mean %.1f per row, %d empty rows, longest %d), drawn on "
                    "the device (timing size)\n",
                    s.rows, s.cols, nnz, static_cast<double>(nnz) / s.rows, empty, longest);
    }
    const char* name() const { return "spmv_csr_f32"; }
    uint64_t x_seed() const { return seed + 1000003ull * round; }
    void prepare() {
        ++round;
        beaver_guard::fill_uniform_device(x.ptr, s.cols, x_seed());
        y.poison();
    }
    void launch(Entry f) { f(s.rows, s.cols, nnz, row_ptr.ptr, col_idx.ptr, values.ptr, x.ptr, y.ptr, 0); }
    // y against the double reference on the harness's copies, with x drawn again from its seed.
    bool checked(const char* what) {
        beaver_guard::fill_uniform_device(p_x.ptr, s.cols, x_seed());
        const unsigned rblocks = static_cast<unsigned>((s.rows + 255) / 256);
        reference_kernel<<<rblocks, 256>>>(s.rows, p_row_ptr.ptr, p_col_idx.ptr, p_values.ptr, p_x.ptr, ref.ptr);
        beaver::sync_check("the double-precision reference");
        return beaver::compare_device(what, y.ptr, ref.ptr, s.rows, beaver::tol_fp32(), {s.rows});
    }
    bool first_check(Entry f) {
        prepare();
        BEAVER_CHECK(cudaDeviceSynchronize());
        launch(f);
        beaver::sync_check("spmv_csr_f32");
        beaver::poison_left("y", y.ptr, y.n);
        return checked("y at the timing size");
    }
    bool last_check() {
        beaver::poison_left("y_timed", y.ptr, y.n);
        return checked("y after timing");
    }
};

inline int run(int argc, char** argv, Shape, Shape timed) {
    return beaver::timing::drive<Entry>(argc, argv, [&](uint64_t seed) { return std::make_unique<Timed>(timed, seed); });
}
#endif

}  // namespace beaver_timing_side

#if defined(BEAVER_LIBRARY)
#define main beaver_test_main
#endif
#define spmv_csr_harness beaver_timing_side
#include "test_main.cu"
