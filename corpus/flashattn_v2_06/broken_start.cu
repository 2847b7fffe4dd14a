// Attention forward in two passes over a materialised fp32 score matrix:
//   1. scores = q k^T * scale for every (batch, head) with a shared-memory tiled kernel (masked entries
//      are written as -inf under the causal mask),
//   2. one block per query row: row max, sum of exponentials, then o = softmax(row) v.
// Keeping the scores in fp32 avoids the precision loss of re-deriving them, and the two kernels are
// simple enough to be obviously correct. The workspace is cached across calls.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>

#include "flashattn_api.h"

namespace {

constexpr int kTile = 32;

__device__ __forceinline__ float to_f(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_f(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ void store_f(__half* p, float x) { *p = __float2half_rn(x); }
__device__ __forceinline__ void store_f(__nv_bfloat16* p, float x) { *p = __float2bfloat16_rn(x); }

// scores[bh][i][j] for a 32x32 tile; block (32, 8), each thread 4 rows of one column.
template <typename T, int D>
__global__ void scores_kernel(const T* __restrict__ q, const T* __restrict__ k, float* __restrict__ scores,
                              int seqlen, bool causal, float scale) {
    __shared__ float sq[kTile][D + 1];
    __shared__ float sk[kTile][D + 1];
    const int bh = blockIdx.z;
    const int i0 = blockIdx.y * kTile, j0 = blockIdx.x * kTile;
    const T* qh = q + static_cast<size_t>(bh) * seqlen * D;
    const T* kh = k + static_cast<size_t>(bh) * seqlen * D;
    const int tid = threadIdx.y * kTile + threadIdx.x;
    for (int idx = tid; idx < kTile * D; idx += kTile * 8) {
        const int r = idx / D, c = idx % D;
        sq[r][c] = i0 + r < seqlen ? to_f(qh[static_cast<size_t>(i0 + r) * D + c]) : 0.f;
        sk[r][c] = j0 + r < seqlen ? to_f(kh[static_cast<size_t>(j0 + r) * D + c]) : 0.f;
    }
    __syncthreads();
    const int j = j0 + threadIdx.x;
    for (int rr = 0; rr < 4; ++rr) {
        const int r = threadIdx.y * 4 + rr, i = i0 + r;
        float acc = 0.f;
#pragma unroll 16
        for (int c = 0; c < D; ++c) acc = fmaf(sq[r][c], sk[threadIdx.x][c], acc);
        if (i < seqlen && j < seqlen)
            scores[(static_cast<size_t>(bh) * seqlen + i) * seqlen + j] = (causal && j > i) ? -INFINITY : acc * scale;
    }
}

__device__ float block_max(float x, float* red) {
    for (int off = 16; off > 0; off >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, off));
    __syncthreads();
    if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = x;
    __syncthreads();
    float r = red[0];
    for (int w = 1; w < blockDim.x / 32; ++w) r = fmaxf(r, red[w]);
    return r;
}

__device__ float block_sum(float x, float* red) {
    for (int off = 16; off > 0; off >>= 1) x += __shfl_xor_sync(0xffffffffu, x, off);
    __syncthreads();
    if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = x;
    __syncthreads();
    float r = 0.f;
    for (int w = 0; w < blockDim.x / 32; ++w) r += red[w];
    return r;
}

// One block of D threads per query row: softmax of the score row in place, then o = p v.
template <typename T, int D>
__global__ void softmax_pv_kernel(float* __restrict__ scores, const T* __restrict__ v, T* __restrict__ o,
                                  int seqlen) {
    __shared__ float red[32];
    const size_t row = blockIdx.x;  // bh * seqlen + i
    const size_t bh = row / seqlen;
    float* s = scores + row * seqlen;
    float m = -INFINITY;
    for (int j = threadIdx.x; j < seqlen; j += D) m = fmaxf(m, s[j]);
    m = block_max(m, red);
    float l = 0.f;
    for (int j = threadIdx.x; j < seqlen; j += D) {
        const float p = __expf(s[j] - m);
        s[j] = p;
        l += p;
    }
    l = block_sum(l, red);  // ends after a barrier: every p is written
    const T* vh = v + bh * seqlen * D;
    float acc = 0.f;
    for (int j = 0; j < seqlen; ++j) acc = fmaf(s[j], to_f(vh[static_cast<size_t>(j) * D + threadIdx.x]), acc);
    store_f(o + row * D + threadIdx.x, acc / l);
}

float* g_workspace = nullptr;
size_t g_workspace_bytes = 0;

template <typename T, int D>
void launch(const void* q, const void* k, const void* v, void* o, int batch, int heads, int seqlen, bool causal,
            cudaStream_t stream) {
    const size_t bytes = static_cast<size_t>(batch) * heads * seqlen * seqlen * sizeof(float);
    if (bytes > g_workspace_bytes) {
        if (g_workspace) cudaFree(g_workspace);
        g_workspace = nullptr;
        g_workspace_bytes = 0;
        const cudaError_t err = cudaMalloc(&g_workspace, bytes);
        if (err != cudaSuccess) {
            std::fprintf(stderr, "flash_attn_fwd: cannot allocate the %.1f GB score workspace: %s\n", bytes / 1e9,
                         cudaGetErrorString(err));
            return;
        }
        g_workspace_bytes = bytes;
    }
    const float scale = 1.f / std::sqrt(static_cast<float>(D));
    const dim3 grid_s((seqlen + kTile - 1) / kTile, (seqlen + kTile - 1) / kTile, batch * heads);
    scores_kernel<T, D><<<grid_s, dim3(kTile, 8), 0, stream>>>(static_cast<const T*>(q), static_cast<const T*>(k),
                                                               g_workspace, seqlen, causal, scale);
    softmax_pv_kernel<T, D><<<static_cast<unsigned>(static_cast<size_t>(batch) * heads * seqlen), D, 0, stream>>>(
        g_workspace, static_cast<const T*>(v), static_cast<T*>(o), seqlen);
}

}  // namespace

void flash_attn_fwd(const void* q, const void* k, const void* v, void* o, int batch, int heads, int seqlen,
                    int head_dim, bool causal, DType dtype, cudaStream_t stream) {
    if (seqlen <= 0 || batch <= 0 || heads <= 0) return;
    if (dtype == DType::kFloat16) {
        if (head_dim == 64) return launch<__half, 64>(q, k, v, o, batch, heads, seqlen, causal, stream);
        if (head_dim == 128) return launch<__half, 128>(q, k, v, o, batch, heads, seqlen, causal, stream);
    } else {
        if (head_dim == 64) return launch<__nv_bfloat16, 64>(q, k, v, o, batch, heads, seqlen, causal, stream);
        if (head_dim == 128) return launch<__nv_bfloat16, 128>(q, k, v, o, batch, heads, seqlen, causal, stream);
    }
    std::fprintf(stderr, "flash_attn_fwd: unsupported head_dim %d (64 or 128)\n", head_dim);
}
