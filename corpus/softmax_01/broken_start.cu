// Row softmax, fp16 storage with fp32 math: each thread owns one row and makes three passes over it
// (max, sum of exponentials, normalise), so no shared memory or synchronisation is needed.
#include "softmax_api.h"

namespace {

__global__ void softmax_rowwise_kernel(const __half* __restrict__ x, __half* __restrict__ y, int rows, int cols) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const __half* in = x + static_cast<size_t>(row) * cols;
    __half* out = y + static_cast<size_t>(row) * cols;

    float row_max = -INFINITY;
    for (int c = 0; c < cols; ++c) row_max = fmaxf(row_max, __half2float(in[c]));

    float sum = 0.0f;
    for (int c = 0; c < cols; ++c) sum += __expf(__half2float(in[c]) - row_max);

    const float inv = 1.0f / sum;
    for (int c = 0; c < cols; ++c) out[c] = __float2half_rn(__expf(__half2float(in[c]) - row_max) * inv);
}

}  // namespace

void softmax_rows(const __half* x, __half* y, int rows, int cols, cudaStream_t stream) {
    constexpr int kThreads = 128;
    const int blocks = (rows + kThreads - 1) / kThreads;
    softmax_rowwise_kernel<<<blocks, kThreads, 0, stream>>>(x, y, rows, cols);
}
