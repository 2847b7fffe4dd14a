// Matrix transpose through shared-memory tiles (transpose_api.h).
//
// fp32: 32 x 32 tiles, 32 x TP_ROWS threads; a warp reads 128 contiguous bytes of an input row and
// writes 128 contiguous bytes of an output row; the tile row is padded to 33 words so that reading a
// tile column touches 32 different banks. Every thread keeps 32 / TP_ROWS loads in flight.
// fp16: 64 x 64 tiles held as half2 pairs of one input row; each thread writes half2 pairs of one
// output row, assembled from two input rows with __lows2half2/__highs2half2, so reads and writes are
// 4-byte accesses, 128 contiguous bytes per warp.
#include "transpose_api.h"

#ifndef TP_ROWS
#define TP_ROWS 4
#endif

namespace {

constexpr int T32 = 32;

__global__ void __launch_bounds__(32 * TP_ROWS)
    transpose_f32_kernel(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
    __shared__ float tile[T32][T32 + 1];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int r0 = blockIdx.y * T32, c0 = blockIdx.x * T32;
    const int c = c0 + tx;
#pragma unroll
    for (int j = 0; j < T32; j += TP_ROWS) {
        int r = r0 + ty + j;
        if (r < rows && c < cols) tile[ty + j][tx] = __ldg(in + static_cast<size_t>(r) * cols + c);
    }
    __syncthreads();
    const int r = r0 + tx;  // output column
#pragma unroll
    for (int j = 0; j < T32; j += TP_ROWS) {
        int oc = c0 + ty + j;  // output row = input column
        if (oc < cols && r < rows) out[static_cast<size_t>(oc) * rows + r] = tile[ty + j][tx];
    }
}

constexpr int T16 = 64;

__global__ void __launch_bounds__(256)
    transpose_f16_kernel(const __half* __restrict__ in, __half* __restrict__ out, int rows, int cols) {
    // tile[r][p] = (in[r0 + r][c0 + 2p], in[r0 + r][c0 + 2p + 1]); rows padded to 33 words.
    __shared__ __half2 tile[T16][T16 / 2 + 1];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int r0 = blockIdx.y * T16, c0 = blockIdx.x * T16;
    const int c = c0 + 2 * tx;
    const __half2* in2 = reinterpret_cast<const __half2*>(in);
#pragma unroll
    for (int j = 0; j < T16; j += 8) {
        int r = r0 + ty + j;
        if (r < rows && c < cols) tile[ty + j][tx] = __ldg(in2 + (static_cast<size_t>(r) * cols + c) / 2);
    }
    __syncthreads();
    const int r = r0 + 2 * tx;  // first of the two output columns this thread writes
    __half2* out2 = reinterpret_cast<__half2*>(out);
#pragma unroll
    for (int j = 0; j < T16; j += 8) {
        int lc = ty + j;  // local input column = local output row
        int oc = c0 + lc;
        if (oc < cols && r < rows) {
            __half2 a = tile[2 * tx][lc >> 1], b = tile[2 * tx + 1][lc >> 1];
            __half2 v = (lc & 1) ? __highs2half2(a, b) : __lows2half2(a, b);
            out2[(static_cast<size_t>(oc) * rows + r) / 2] = v;
        }
    }
}

}  // namespace

void transpose_f32(const float* in, float* out, int rows, int cols, cudaStream_t stream) {
    dim3 grid((cols + T32 - 1) / T32, (rows + T32 - 1) / T32);
    transpose_f32_kernel<<<grid, dim3(32, TP_ROWS), 0, stream>>>(in, out, rows, cols);
}

void transpose_f16(const __half* in, __half* out, int rows, int cols, cudaStream_t stream) {
    dim3 grid((cols + T16 - 1) / T16, (rows + T16 - 1) / T16);
    transpose_f16_kernel<<<grid, dim3(32, 8), 0, stream>>>(in, out, rows, cols);
}
