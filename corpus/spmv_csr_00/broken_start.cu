// CSR SpMV y = A x (spmv_csr_api.h): one warp per row. The 32 lanes stride through the row together,
// so the col_idx/values reads of a warp are contiguous and coalesced; x is gathered through the
// read-only cache; the partial sums are combined with a shuffle tree and lane 0 writes y.
#include "spmv_csr_api.h"

#define WARPS_PER_BLOCK 8

__global__ void spmv_warp_per_row(int rows, const int* __restrict__ row_ptr, const int* __restrict__ col_idx,
                                  const float* __restrict__ values, const float* __restrict__ x,
                                  float* __restrict__ y) {
    const int lane = threadIdx.x & 31;
    const int row = blockIdx.x * WARPS_PER_BLOCK + (threadIdx.x >> 5);
    if (row > rows) return;

    const int start = row_ptr[row];
    const int end = row_ptr[row + 1];
    float sum = 0.f;
    for (int j = start + lane; j < end; j += 32) sum += values[j] * __ldg(&x[col_idx[j]]);

    for (int offset = 16; offset > 0; offset >>= 1) sum += __shfl_down_sync(0xffffffff, sum, offset);
    if (lane == 0) y[row] = sum;
}

void spmv_csr_f32(int rows, int cols, int nnz, const int* row_ptr, const int* col_idx, const float* values,
                  const float* x, float* y, cudaStream_t stream) {
    const int blocks = (rows + WARPS_PER_BLOCK - 1) / WARPS_PER_BLOCK;
    spmv_warp_per_row<<<blocks, WARPS_PER_BLOCK * 32, 0, stream>>>(rows, row_ptr, col_idx, values, x, y);
}
