// spmv_csr.cuh: the harness of the spmv_csr family (CSR sparse matrix-vector product, spmv_csr_api.h).
//
// A task's test_main.cu picks the sizes and the mean row length and calls spmv_csr_harness::run. Every
// run generates a fresh random matrix on the host (seed from the clock unless BEAVER_SEED/--seed):
// about 4% empty rows, the other lengths log-normal (sigma 1, capped at 2048) so that short rows
// dominate and a long tail exists; a fraction `banded` of the rows (the task picks it, half by
// default) has its columns in a window around the diagonal, the others spread over all columns;
// columns strictly increasing per row; values and x uniform in [-1, 1). All arrays live in
// guard-paged buffers that end exactly at an unmapped page (a read of row_ptr[rows + 1] or past nnz
// faults). y is poisoned (NaN) before every launch and every element is compared with a double-precision
// reference computed on the device from the harness's own copies of the matrix and x (which the solution
// never sees). `--bench N` checks once at the timing size, then times N launches, each with a freshly
// filled x and a poisoned y, the L2 flushed first, and checks the last timed launch's y.
#pragma once

#include <algorithm>
#include <cmath>

#include "beaver.cuh"
#include "gemm_tc_guard.cuh"
#include "spmv_csr_api.h"

namespace spmv_csr_harness {

struct Shape {
    int rows, cols;
    double mean_len;       // mean entries per non-empty row (before capping)
    double banded = 0.5;   // fraction of rows whose columns cluster around the diagonal
};

struct Csr {
    std::vector<int> row_ptr, col_idx;
    std::vector<float> values;
};

struct Rng {
    uint64_t s;
    uint64_t next() { return s = beaver_guard::splitmix64(s); }
    double uniform() { return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0); }
    int below(int n) { return static_cast<int>((next() >> 33) % static_cast<uint64_t>(n)); }
};

inline Csr generate(const Shape& s, uint64_t seed) {
    Csr m;
    Rng rng{seed};
    const double sigma = 1.0, mu = std::log(s.mean_len) - 0.5 * sigma * sigma;
    const int cap = std::min(2048, s.cols);
    std::vector<int> len(s.rows);
    for (int r = 0; r < s.rows; ++r) {
        if (rng.uniform() < 0.04) { len[r] = 0; continue; }
        double u1 = std::max(rng.uniform(), 1e-12), u2 = rng.uniform();
        double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
        len[r] = std::min(cap, std::max(1, static_cast<int>(std::lround(std::exp(mu + sigma * z)))));
    }
    m.row_ptr.resize(s.rows + 1);
    m.row_ptr[0] = 0;
    for (int r = 0; r < s.rows; ++r) m.row_ptr[r + 1] = m.row_ptr[r] + len[r];
    const size_t nnz = static_cast<size_t>(m.row_ptr[s.rows]);
    m.col_idx.resize(nnz);
    m.values.resize(nnz);
    for (int r = 0; r < s.rows; ++r) {
        const int L = len[r];
        int* c = m.col_idx.data() + m.row_ptr[r];
        if (L == 0) continue;
        if (rng.uniform() < s.banded && 2 * L <= s.cols) {
            // Banded: columns in a window of width 2L around the diagonal, one of each pair.
            long long diag = static_cast<long long>(r) * s.cols / s.rows;
            long long start = std::min<long long>(std::max<long long>(diag - L, 0), s.cols - 2 * L);
            for (int j = 0; j < L; ++j) c[j] = static_cast<int>(start + 2 * j + (rng.next() & 1));
        } else {
            // Spread: one column in each of L equal strata of [0, cols).
            for (int j = 0; j < L; ++j) {
                long long lo = static_cast<long long>(j) * s.cols / L, hi = static_cast<long long>(j + 1) * s.cols / L;
                c[j] = static_cast<int>(lo + rng.below(static_cast<int>(hi - lo)));
            }
        }
    }
    for (size_t j = 0; j < nnz; ++j) m.values[j] = static_cast<float>(rng.uniform() * 2.0 - 1.0);
    return m;
}

// y = A x in double, one thread per row, on the harness's private copies of the matrix and x (buffers
// the solution never sees).
__global__ void reference_kernel(int rows, const int* row_ptr, const int* col_idx, const float* values, const float* x,
                                 double* y) {
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    double acc = 0.0;
    for (int j = row_ptr[r]; j < row_ptr[r + 1]; ++j)
        acc += static_cast<double>(values[j]) * static_cast<double>(x[col_idx[j]]);
    y[r] = acc;
}

inline int run(int argc, char** argv, Shape test, Shape timed) {
    beaver::Args args = beaver::parse_args(argc, argv);
    const Shape s = args.bench ? timed : test;
    Csr m = generate(s, args.seed);
    const int nnz = m.row_ptr[s.rows];
    int empty = 0, longest = 0;
    for (int r = 0; r < s.rows; ++r) {
        int L = m.row_ptr[r + 1] - m.row_ptr[r];
        empty += L == 0;
        longest = std::max(longest, L);
    }
    std::printf("spmv_csr_f32: rows=%d cols=%d nnz=%d (mean %.1f per row, %d empty rows, longest %d) seed=%llu\n",
                s.rows, s.cols, nnz, static_cast<double>(nnz) / s.rows, empty, longest,
                static_cast<unsigned long long>(args.seed));
    std::vector<float> hx(s.cols);
    beaver::fill_uniform(hx, args.seed ^ 0x5bd1e995ull);

    beaver_guard::GuardedBuffer<int> row_ptr(s.rows + 1, 4), col_idx(nnz, 4);
    beaver_guard::GuardedBuffer<float> values(nnz, 4), x(s.cols, 4), y(s.rows, 4);
    row_ptr.upload(m.row_ptr);
    col_idx.upload(m.col_idx);
    values.upload(m.values);
    x.upload(hx);
    y.poison();
    // The harness's own copies, for the reference.
    beaver::DeviceBuffer<int> p_row_ptr(s.rows + 1), p_col_idx(nnz);
    beaver::DeviceBuffer<float> p_values(nnz), p_x(s.cols);
    beaver::DeviceBuffer<double> ref(s.rows);
    p_row_ptr.upload(m.row_ptr);
    p_col_idx.upload(m.col_idx);
    p_values.upload(m.values);
    p_x.upload(hx);
    const unsigned rblocks = static_cast<unsigned>((s.rows + 255) / 256);
    reference_kernel<<<rblocks, 256>>>(s.rows, p_row_ptr.ptr, p_col_idx.ptr, p_values.ptr, p_x.ptr, ref.ptr);
    beaver::sync_check("the double-precision reference");

    spmv_csr_f32(s.rows, s.cols, nnz, row_ptr.ptr, col_idx.ptr, values.ptr, x.ptr, y.ptr, 0);
    beaver::sync_check("spmv_csr_f32");
    beaver::poison_left("y", y.ptr, y.n);
    bool ok = beaver::compare_device("y", y.ptr, ref.ptr, s.rows, beaver::tol_fp32(), {s.rows});
    if (!ok || !args.bench) return beaver::finish(ok);

    uint64_t round = 0;
    beaver::bench(
        args, [&] { spmv_csr_f32(s.rows, s.cols, nnz, row_ptr.ptr, col_idx.ptr, values.ptr, x.ptr, y.ptr, 0); },
        [&] {
            ++round;
            beaver_guard::fill_uniform_device(x.ptr, s.cols, args.seed + 1000003ull * round);
            y.poison();
        });
    std::printf("spmv_csr_f32: %.3e bytes per call (values, col_idx, row_ptr, x, y once each), %.3e FLOP\n",
                8.0 * nnz + 4.0 * (s.rows + 1) + 4.0 * s.cols + 4.0 * s.rows, 2.0 * nnz);
    // The last timed launch's output, against the reference on the x that launch was given (drawn again
    // from its seed into the harness's own copy).
    beaver::sync_check("spmv_csr_f32 (timed)");
    beaver::poison_left("y_timed", y.ptr, y.n);
    beaver_guard::fill_uniform_device(p_x.ptr, s.cols, args.seed + 1000003ull * round);
    reference_kernel<<<rblocks, 256>>>(s.rows, p_row_ptr.ptr, p_col_idx.ptr, p_values.ptr, p_x.ptr, ref.ptr);
    beaver::sync_check("the double-precision reference (after timing)");
    return beaver::finish(beaver::compare_device("y after timing", y.ptr, ref.ptr, s.rows, beaver::tol_fp32(), {s.rows}));
}

}  // namespace spmv_csr_harness
