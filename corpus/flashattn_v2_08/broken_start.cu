// Flash attention forward (FA2 schedule) with fp32 math throughout: a CTA owns 64 query rows, streams
// 64-key K/V tiles through shared memory (converted to fp32 once on load), computes the 64x64 score tile
// with register-blocked FMAs, runs the online softmax (running max and sum, accumulator rescale) and
// accumulates P V, all in fp32 for accuracy. 256 threads: each owns a 4x4 block of S and of O per
// 64-column slab.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>

#include "flashattn_api.h"

namespace {

constexpr int kBM = 64, kBN = 64, kThreads = 256;

__device__ __forceinline__ float to_f(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_f(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ void store_f(__half* p, float x) { *p = __float2half_rn(x); }
__device__ __forceinline__ void store_f(__nv_bfloat16* p, float x) { *p = __float2bfloat16_rn(x); }

template <typename T, int D>
__global__ void __launch_bounds__(kThreads) flash_fwd_fp32_kernel(const T* __restrict__ q, const T* __restrict__ k,
                                                                  const T* __restrict__ v, T* __restrict__ o,
                                                                  int seqlen, bool causal, float scale) {
    extern __shared__ float smem[];
    float* sQ = smem;                   // [kBM][D + 1]
    float* sK = sQ + kBM * (D + 1);     // [kBN][D + 1]
    float* sV = sK + kBN * (D + 1);     // [kBN][D]
    float* sP = sV + kBN * D;           // [kBM][kBN + 1]
    float* sAlpha = sP + kBM * (kBN + 1);  // [kBM]
    float* sM = sAlpha + kBM;              // [kBM]
    float* sL = sM + kBM;                  // [kBM]

    const int tid = threadIdx.x, ty = tid / 16, tx = tid % 16;  // rows ty*4..ty*4+3, columns tx + 16*c
    const int m_start = blockIdx.x * kBM;
    const size_t head = static_cast<size_t>(blockIdx.y) * seqlen * D;

    for (int idx = tid; idx < kBM * D; idx += kThreads) {
        const int r = idx / D, c = idx % D;
        sQ[r * (D + 1) + c] = m_start + r < seqlen ? to_f(q[head + static_cast<size_t>(m_start + r) * D + c]) * scale : 0.f;
    }
    if (tid < kBM) {
        sM[tid] = -INFINITY;
        sL[tid] = 0.f;
    }
    constexpr int kOC = D / 16;  // output columns per thread
    float acc[4][kOC];
#pragma unroll
    for (int r = 0; r < 4; ++r)
#pragma unroll
        for (int c = 0; c < kOC; ++c) acc[r][c] = 0.f;

    const int n_end = causal ? min(seqlen, m_start + kBM) : seqlen;
    for (int n_start = 0; n_start < n_end; n_start += kBN) {
        __syncthreads();  // previous tile fully consumed (and sQ/sM/sL initialised)
        for (int idx = tid; idx < kBN * D; idx += kThreads) {
            const int r = idx / D, c = idx % D;
            const bool in = n_start + r < seqlen;
            const size_t off = head + static_cast<size_t>(n_start + r) * D + c;
            sK[r * (D + 1) + c] = in ? to_f(k[off]) : 0.f;
            sV[r * D + c] = in ? to_f(v[off]) : 0.f;
        }
        __syncthreads();

        // S tile: 4 rows x 4 columns per thread.
        float s[4][4];
#pragma unroll
        for (int r = 0; r < 4; ++r)
#pragma unroll
            for (int c = 0; c < 4; ++c) s[r][c] = 0.f;
        for (int d = 0; d < D; ++d) {
            float a[4], b[4];
#pragma unroll
            for (int r = 0; r < 4; ++r) a[r] = sQ[(ty * 4 + r) * (D + 1) + d];
#pragma unroll
            for (int c = 0; c < 4; ++c) b[c] = sK[(tx + 16 * c) * (D + 1) + d];
#pragma unroll
            for (int r = 0; r < 4; ++r)
#pragma unroll
                for (int c = 0; c < 4; ++c) s[r][c] = fmaf(a[r], b[c], s[r][c]);
        }
#pragma unroll
        for (int r = 0; r < 4; ++r)
#pragma unroll
            for (int c = 0; c < 4; ++c) {
                const int i = m_start + ty * 4 + r, j = n_start + tx + 16 * c;
                sP[(ty * 4 + r) * (kBN + 1) + tx + 16 * c] = (j >= seqlen || (causal && j > i)) ? -INFINITY : s[r][c];
            }
        __syncthreads();

        // Online softmax: 4 threads per row (256 threads, 64 rows), 16 columns each.
        {
            const int row = tid / 4, part = tid % 4;
            float* pr = sP + row * (kBN + 1);
            float mx = -INFINITY;
            for (int c = part * 16; c < part * 16 + 16; ++c) mx = fmaxf(mx, pr[c]);
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
            const float m_old = sM[row];
            const float m_new = fmaxf(m_old, mx);
            const float m_use = m_new == -INFINITY ? 0.f : m_new;
            float sum = 0.f;
            for (int c = part * 16; c < part * 16 + 16; ++c) {
                const float p = __expf(pr[c] - m_use);
                pr[c] = p;
                sum += p;
            }
            sum += __shfl_xor_sync(0xffffffffu, sum, 1);
            sum += __shfl_xor_sync(0xffffffffu, sum, 2);
            __syncwarp();
            if (part == 0) {
                const float alpha = __expf(m_old - m_use);
                sAlpha[row] = alpha;
                sL[row] = sL[row] * alpha + sum;
                sM[row] = m_new;
            }
        }
        __syncthreads();

        // O = O * alpha + P V.
#pragma unroll
        for (int r = 0; r < 4; ++r) {
            const float alpha = sAlpha[ty * 4 + r];
#pragma unroll
            for (int c = 0; c < kOC; ++c) acc[r][c] *= alpha;
        }
        for (int j = 0; j < kBN; ++j) {
            float p[4];
#pragma unroll
            for (int r = 0; r < 4; ++r) p[r] = sP[(ty * 4 + r) * (kBN + 1) + j];
#pragma unroll
            for (int c = 0; c < kOC; ++c) {
                const float vv = sV[j * D + tx + 16 * c];
#pragma unroll
                for (int r = 0; r < 4; ++r) acc[r][c] = fmaf(p[r], vv, acc[r][c]);
            }
        }
    }
    __syncthreads();
#pragma unroll
    for (int r = 0; r < 4; ++r) {
        const int row = ty * 4 + r, i = m_start + row;
        if (i >= seqlen) continue;
        const float inv = 1.f / sL[row];
#pragma unroll
        for (int c = 0; c < kOC; ++c) store_f(o + head + static_cast<size_t>(i) * D + tx + 16 * c, acc[r][c] * inv);
    }
}

template <typename T, int D>
void launch(const void* q, const void* k, const void* v, void* o, int batch, int heads, int seqlen, bool causal,
            cudaStream_t stream) {
    const size_t smem = (kBM * (D + 1) + kBN * (D + 1) + kBN * D + kBM * (kBN + 1) + 3 * kBM) * sizeof(float);
    cudaFuncSetAttribute(flash_fwd_fp32_kernel<T, D>, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
    const dim3 grid((seqlen + kBM - 1) / kBM, batch * heads);
    flash_fwd_fp32_kernel<T, D><<<grid, kThreads, smem, stream>>>(
        static_cast<const T*>(q), static_cast<const T*>(k), static_cast<const T*>(v), static_cast<T*>(o), seqlen,
        causal, 1.f / std::sqrt(static_cast<float>(D)));
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
