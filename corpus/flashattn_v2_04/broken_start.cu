// Flash attention forward: every thread owns one query row and streams over the keys with an online
// softmax (running max and running sum, rescaling the accumulator), so no score matrix is ever stored
// and memory traffic stays O(seqlen * head_dim) per row. Accumulation is in fp32.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>

#include "flashattn_api.h"

namespace {

__device__ __forceinline__ float load_f(const __half* p) { return __half2float(*p); }
__device__ __forceinline__ float load_f(const __nv_bfloat16* p) { return __bfloat162float(*p); }
__device__ __forceinline__ void store_f(__half* p, float x) { *p = __float2half_rn(x); }
__device__ __forceinline__ void store_f(__nv_bfloat16* p, float x) { *p = __float2bfloat16_rn(x); }

template <typename T, int D>
__global__ void attention_row_kernel(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                                     T* __restrict__ o, int seqlen, bool causal, float scale) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;  // query row
    if (i >= seqlen) return;
    const size_t head = static_cast<size_t>(blockIdx.y) * seqlen * D;
    const T* qr = q + head + static_cast<size_t>(i) * D;
    const T* kh = k + head;
    const T* vh = v + head;

    float qv[D], acc[D];
#pragma unroll
    for (int c = 0; c < D; ++c) {
        qv[c] = load_f(qr + c) * scale;
        acc[c] = 0.f;
    }
    float m = -INFINITY, l = 0.f;
    const int n_keys = causal ? i + 1 : seqlen;
    for (int j = 0; j < n_keys; ++j) {
        const T* kr = kh + static_cast<size_t>(j) * D;
        float s = 0.f;
#pragma unroll
        for (int c = 0; c < D; ++c) s = fmaf(qv[c], load_f(kr + c), s);
        const float m_new = fmaxf(m, s);
        const float alpha = __expf(m - m_new);
        const float p = __expf(s - m_new);
        l = l * alpha + p;
        const T* vr = vh + static_cast<size_t>(j) * D;
#pragma unroll
        for (int c = 0; c < D; ++c) acc[c] = fmaf(p, load_f(vr + c), acc[c] * alpha);
        m = m_new;
    }
    T* orow = o + head + static_cast<size_t>(i) * D;
    const float inv = 1.f / l;
#pragma unroll
    for (int c = 0; c < D; ++c) store_f(orow + c, acc[c] * inv);
}

template <typename T, int D>
void launch(const void* q, const void* k, const void* v, void* o, int batch, int heads, int seqlen, bool causal,
            cudaStream_t stream) {
    const int threads = 128;
    const dim3 grid((seqlen + threads - 1) / threads, batch * heads);
    attention_row_kernel<T, D><<<grid, threads, 0, stream>>>(static_cast<const T*>(q), static_cast<const T*>(k),
                                                             static_cast<const T*>(v), static_cast<T*>(o), seqlen,
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
