// CSR SpMV y = A x (spmv_csr_api.h): "CSR-vector" with 8 lanes per row, which suits matrices whose rows
// hold a few dozen entries: a warp works on four rows at once, each group of 8 lanes reads its row's
// col_idx/values in coalesced runs and gathers x through the read-only cache. The 8 partial sums of
// a row are combined with an xor-butterfly inside the group.
#include "spmv_csr_api.h"

#define LANES_PER_ROW 8
#define THREADS 256

__global__ void __launch_bounds__(THREADS)
    spmv_csr_vector(int rows, const int* __restrict__ row_ptr, const int* __restrict__ col_idx,
                    const float* __restrict__ values, const float* __restrict__ x, float* __restrict__ y) {
    const int tid = blockIdx.x * THREADS + threadIdx.x;
    const int row = tid / LANES_PER_ROW;
    const int lane = threadIdx.x % LANES_PER_ROW;

    float sum = 0.f;
    if (row < rows) {
        const int start = row_ptr[row], end = row_ptr[row + 1];
        for (int j = start + lane; j < end; j += LANES_PER_ROW) sum += values[j] * __ldg(x + col_idx[j]);
    }
    // Butterfly over the group: after log2(LANES_PER_ROW) steps every lane holds the row sum.
    for (int mask = 1; mask < LANES_PER_ROW / 2; mask <<= 1) sum += __shfl_xor_sync(0xffffffff, sum, mask);
    if (row < rows && lane == 0) y[row] = sum;
}

void spmv_csr_f32(int rows, int cols, int nnz, const int* row_ptr, const int* col_idx, const float* values,
                  const float* x, float* y, cudaStream_t stream) {
    const long long threads = static_cast<long long>(rows) * LANES_PER_ROW;
    const int blocks = static_cast<int>((threads + THREADS - 1) / THREADS);
    spmv_csr_vector<<<blocks, THREADS, 0, stream>>>(rows, row_ptr, col_idx, values, x, y);
}
