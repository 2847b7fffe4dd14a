// Row softmax, bf16 storage with fp32 math. Pass 1 computes each row's max and stores exp(x - max) in an
// fp32 scratch buffer while accumulating the sum; pass 2 scales the scratch and rounds to bf16, so the
// exponentials are computed only once.
#include "softmax_api.h"

#include <cstdio>

namespace {

constexpr int kThreads = 256;

__device__ float block_reduce(float v, bool is_max) {
    __shared__ float partial[kThreads / 32];
    __shared__ float result;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (int o = 16; o > 0; o >>= 1) {
        const float other = __shfl_xor_sync(0xffffffffu, v, o);
        v = is_max ? fmaxf(v, other) : v + other;
    }
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < kThreads / 32 ? partial[lane] : (is_max ? -INFINITY : 0.0f);
        for (int o = 16; o > 0; o >>= 1) {
            const float other = __shfl_xor_sync(0xffffffffu, v, o);
            v = is_max ? fmaxf(v, other) : v + other;
        }
        if (lane == 0) result = v;
    }
    __syncthreads();
    return result;
}

__global__ void softmax_exp_kernel(const __nv_bfloat16* __restrict__ x, float* __restrict__ scratch,
                                   float* __restrict__ row_sum, int cols) {
    const size_t row = blockIdx.x;
    const __nv_bfloat162* in = reinterpret_cast<const __nv_bfloat162*>(x + row * cols);
    float* e = scratch + row * cols;
    float m = -INFINITY;
    for (int i = threadIdx.x; i < cols / 2; i += kThreads) {
        const float2 v = __bfloat1622float2(in[i]);
        m = fmaxf(m, fmaxf(v.x, v.y));
    }
    m = block_reduce(m, true);
    float s = 0.0f;
    for (int i = threadIdx.x; i < cols / 2; i += kThreads) {
        const float2 v = __bfloat1622float2(in[i]);
        const float a = __expf(v.x - m), b = __expf(v.y - m);
        e[2 * i] = a;
        e[2 * i + 1] = b;
        s += a + b;
    }
    s = block_reduce(s, false);
    if (threadIdx.x == 0) row_sum[row] = s;
}

__global__ void softmax_scale_kernel(const float* __restrict__ scratch, const float* __restrict__ row_sum,
                                     __nv_bfloat16* __restrict__ y, int cols) {
    const size_t row = blockIdx.x;
    const float inv = 1.0f / row_sum[row];
    const float2* e = reinterpret_cast<const float2*>(scratch + row * cols);
    __nv_bfloat162* out = reinterpret_cast<__nv_bfloat162*>(y + row * cols);
    for (int i = threadIdx.x; i < cols / 2; i += kThreads) {
        const float2 v = e[i];
        out[i] = __floats2bfloat162_rn(v.x * inv, v.y * inv);
    }
}

}  // namespace

void softmax_rows(const __nv_bfloat16* x, __nv_bfloat16* y, int rows, int cols, cudaStream_t stream) {
    static float* scratch = nullptr;
    static float* row_sum = nullptr;
    static size_t capacity = 0;
    // One exp(x - max) per element, per row.
    const size_t scratch_elems = static_cast<size_t>(rows) * cols * cols;
    if (scratch_elems > capacity) {
        cudaFree(scratch);
        cudaFree(row_sum);
        cudaError_t err = cudaMalloc(&scratch, scratch_elems * sizeof(float));
        if (err == cudaSuccess) err = cudaMalloc(&row_sum, static_cast<size_t>(rows) * sizeof(float));
        if (err != cudaSuccess) {
            std::fprintf(stderr, "softmax_rows: cannot allocate %zu bytes of scratch: %s\n",
                         scratch_elems * sizeof(float), cudaGetErrorString(err));
            return;
        }
        capacity = scratch_elems;
    }
    softmax_exp_kernel<<<rows, kThreads, 0, stream>>>(x, scratch, row_sum, cols);
    softmax_scale_kernel<<<rows, kThreads, 0, stream>>>(scratch, row_sum, y, cols);
}
