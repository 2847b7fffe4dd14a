// CSR SpMV y = A x (spmv_csr_api.h): a persistent grid of warps (a few blocks per SM) walks the rows;
// warp w handles rows w, w + W, w + 2W, ... (W = warps in the grid), so launch cost is paid once and
// the load stays balanced. Within a row the 32 lanes read col_idx/values in coalesced runs; the
// partial sums are reduced with shuffles. Empty rows are written as 0 without touching the arrays.
#include "spmv_csr_api.h"

#define THREADS 256

__global__ void __launch_bounds__(THREADS)
    spmv_persistent(int rows, const int* __restrict__ row_ptr, const int* __restrict__ col_idx,
                    const float* __restrict__ values, const float* __restrict__ x, float* __restrict__ y) {
    const int lane = threadIdx.x & 31;
    const int warps = gridDim.x * (THREADS / 32);
    int row = blockIdx.x * (THREADS / 32) + (threadIdx.x >> 5);
    while (row < rows) {
        const int start = row_ptr[row], end = row_ptr[row + 1];
        if (start == end) {
            if (lane == 0) y[row] = 0.f;
            continue;
        }
        float sum = 0.f;
        for (int j = start + lane; j < end; j += 32) sum += values[j] * __ldg(x + col_idx[j]);
        for (int off = 16; off > 0; off >>= 1) sum += __shfl_xor_sync(0xffffffff, sum, off);
        if (lane == 0) y[row] = sum;
        row += warps;
    }
}

void spmv_csr_f32(int rows, int cols, int nnz, const int* row_ptr, const int* col_idx, const float* values,
                  const float* x, float* y, cudaStream_t stream) {
    static int sms = 0;
    if (sms == 0) {
        int dev = 0;
        cudaGetDevice(&dev);
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    }
    spmv_persistent<<<sms * 8, THREADS, 0, stream>>>(rows, row_ptr, col_idx, values, x, y);
}
