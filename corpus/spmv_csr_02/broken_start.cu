// CSR SpMV y = A x (spmv_csr_api.h): one thread per row ("CSR-scalar"). Each thread walks its own row
// sequentially, so there is no inter-thread reduction, no shuffles and no shared memory; the loop is
// unrolled by 4 to keep several loads in flight, and x is gathered through the read-only cache.
#include "spmv_csr_api.h"

__global__ void spmv_csr_scalar(int rows, const int* __restrict__ row_ptr, const int* __restrict__ col_idx,
                                const float* __restrict__ values, const float* __restrict__ x,
                                float* __restrict__ y) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const int start = row_ptr[row], end = row_ptr[row + 1];
    float sum = 0.f;
#pragma unroll 4
    for (int j = start; j < end; ++j) sum += values[j] * __ldg(x + col_idx[j]);
    y[row] = sum;
}

void spmv_csr_f32(int rows, int cols, int nnz, const int* row_ptr, const int* col_idx, const float* values,
                  const float* x, float* y, cudaStream_t stream) {
    const int threads = 256;
    spmv_csr_scalar<<<(rows + threads - 1) / threads, threads, 0, stream>>>(rows, row_ptr, col_idx, values, x, y);
}
