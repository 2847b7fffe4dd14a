// FlashAttention-2 forward: tensor-core MMA (mma.sync m16n8k16, fp32 accumulation), ldmatrix from
// XOR-swizzled shared memory, cp.async double-buffered K/V tiles, Q fragments held in registers, online
// softmax in the exp2 domain, causal and non-causal, fp16 and bf16, head_dim 64 and 128.
//
// One CTA computes a 64-row query tile of one (batch, head); each of its 4 warps owns 16 query rows and
// sweeps the key/value tiles of 64 rows. Tails (seqlen not a multiple of 64) are zero-filled on load and
// masked in the scores; rows past seqlen are never stored.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>

#include "flashattn_api.h"

namespace {

#ifndef FA_BLOCK_M
#define FA_BLOCK_M 64
#endif
constexpr int kBlockM = FA_BLOCK_M;  // query rows per CTA, 16 per warp
constexpr int kBlockN = 64;          // keys per K/V tile
constexpr int kWarps = kBlockM / 16;
constexpr int kThreads = kWarps * 32;

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void cp_async_16(uint32_t dst, const void* src, bool valid) {
    const int src_bytes = valid ? 16 : 0;  // 0: nothing is read, the 16 bytes are zero-filled
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

template <typename T>
struct Mma;

template <>
struct Mma<__half> {
    static __device__ __forceinline__ void run(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
            "{%0, %1, %2, %3};\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    }
    static __device__ __forceinline__ uint32_t pack(float lo, float hi) {
        __half2 h = __floats2half2_rn(lo, hi);
        return *reinterpret_cast<uint32_t*>(&h);
    }
};

template <>
struct Mma<__nv_bfloat16> {
    static __device__ __forceinline__ void run(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
            "{%0, %1, %2, %3};\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    }
    static __device__ __forceinline__ uint32_t pack(float lo, float hi) {
        __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
        return *reinterpret_cast<uint32_t*>(&h);
    }
};

// Element offset of (row, 16-byte chunk) in a [rows][D] tile whose chunks are XOR-swizzled by row,
// so that ldmatrix over 8 consecutive rows of one chunk column hits 8 different bank groups.
template <int D>
__device__ __forceinline__ int swz(int row, int chunk) {
    return row * D + ((chunk ^ (row & 7)) << 3);
}

// Asynchronously copy a [ROWS][D] tile (rows >= valid_rows are zero-filled, never read).
template <typename T, int D, int ROWS>
__device__ __forceinline__ void load_tile(T* s, const T* g, int valid_rows, int tid) {
    constexpr int kChunks = D / 8;
#pragma unroll
    for (int it = 0; it < ROWS * kChunks / kThreads; ++it) {
        const int idx = tid + it * kThreads;
        const int r = idx / kChunks, c = idx % kChunks;
        const bool valid = r < valid_rows;
        const T* src = g + static_cast<size_t>(valid ? r : 0) * D + c * 8;
        cp_async_16(smem_addr(s + swz<D>(r, c)), src, valid);
    }
}

template <typename T, int D>
__global__ void __launch_bounds__(kThreads, (D == 128 ? 2 : 3) * 64 / kBlockM)
    flash_fwd_kernel(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v, T* __restrict__ o,
                     int seqlen, bool causal, float scale_log2) {
    extern __shared__ __align__(128) unsigned char smem_raw[];
    T* sQ = reinterpret_cast<T*>(smem_raw);
    T* sK = sQ + kBlockM * D;      // [2][kBlockN][D]
    T* sV = sK + 2 * kBlockN * D;  // [2][kBlockN][D]

    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    // Causal: the longest query tiles start first, so the short ones fill the tail of the grid.
    const int m_block = causal ? gridDim.x - 1 - blockIdx.x : blockIdx.x;
    const size_t head_off = static_cast<size_t>(blockIdx.y) * seqlen * D;
    const T* qh = q + head_off;
    const T* kh = k + head_off;
    const T* vh = v + head_off;
    T* oh = o + head_off;

    const int m_start = m_block * kBlockM;
    const int n_tiles_all = (seqlen + kBlockN - 1) / kBlockN;
    const int n_tiles = causal ? min(n_tiles_all, (m_start + kBlockM + kBlockN - 1) / kBlockN) : n_tiles_all;

    load_tile<T, D, kBlockM>(sQ, qh + static_cast<size_t>(m_start) * D, seqlen - m_start, tid);
    load_tile<T, D, kBlockN>(sK, kh, seqlen, tid);
    load_tile<T, D, kBlockN>(sV, vh, seqlen, tid);
    cp_async_commit();

    constexpr int kK = D / 16;        // k-steps of Q K^T
    constexpr int kNT = kBlockN / 8;  // n8 tiles of S
    constexpr int kDT = D / 8;        // n8 tiles of O
    uint32_t qf[kK][4];
    float acc[kDT][4];
#pragma unroll
    for (int i = 0; i < kDT; ++i) acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = 0.f;
    float row_max[2] = {-INFINITY, -INFINITY};
    float row_sum[2] = {0.f, 0.f};

    const int g = lane / 4, t = lane % 4;
    const int row0 = m_start + warp * 16 + g;  // this thread's rows: row0 and row0 + 8

    for (int n = 0; n < n_tiles; ++n) {
        const int buf = n & 1;
        if (n + 1 < n_tiles) {
            const int next = (n + 1) * kBlockN;
            load_tile<T, D, kBlockN>(sK + (buf ^ 1) * kBlockN * D, kh + static_cast<size_t>(next) * D, seqlen - next, tid);
            load_tile<T, D, kBlockN>(sV + (buf ^ 1) * kBlockN * D, vh + static_cast<size_t>(next) * D, seqlen - next, tid);
            cp_async_commit();
            cp_async_wait<1>();
        } else {
            cp_async_wait<0>();
        }
        __syncthreads();

        if (n == 0) {
#pragma unroll
            for (int kk = 0; kk < kK; ++kk)
                ldmatrix_x4(qf[kk], smem_addr(sQ + swz<D>(warp * 16 + (lane & 15), kk * 2 + (lane >> 4))));
        }

        const T* Kt = sK + buf * kBlockN * D;
        const T* Vt = sV + buf * kBlockN * D;

        // S = Q K^T for this warp's 16 rows and the tile's 64 keys.
        float s[kNT][4];
#pragma unroll
        for (int j = 0; j < kNT; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.f;
#pragma unroll
        for (int kk = 0; kk < kK; ++kk) {
#pragma unroll
            for (int np = 0; np < kNT / 2; ++np) {
                uint32_t b[4];
                ldmatrix_x4(b, smem_addr(Kt + swz<D>(np * 16 + (lane & 7) + ((lane >> 4) << 3), kk * 2 + ((lane >> 3) & 1))));
                Mma<T>::run(s[2 * np], qf[kk], b[0], b[1]);
                Mma<T>::run(s[2 * np + 1], qf[kk], b[2], b[3]);
            }
        }

        // Mask keys past seqlen and, for causal, keys after the query.
        const int n_start = n * kBlockN;
        if (n_start + kBlockN > seqlen || (causal && n_start + kBlockN - 1 > m_start)) {
#pragma unroll
            for (int j = 0; j < kNT; ++j) {
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const int col = n_start + j * 8 + 2 * t + (e & 1);
                    const int row = row0 + (e >> 1) * 8;
                    if (col >= seqlen || (causal && col > row)) s[j][e] = -INFINITY;
                }
            }
        }

        // Online softmax: new running max, rescale the accumulator and the running sum by
        // exp(m_old - m_new), then P = exp(S - m_new).
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            float mx = row_max[r];
#pragma unroll
            for (int j = 0; j < kNT; ++j) mx = fmaxf(mx, fmaxf(s[j][2 * r], s[j][2 * r + 1]));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
            const float m_scaled = mx == -INFINITY ? 0.f : mx * scale_log2;
            const float alpha = exp2f(row_max[r] * scale_log2 - m_scaled);
            row_max[r] = mx;
            float sum = 0.f;
#pragma unroll
            for (int j = 0; j < kNT; ++j) {
                s[j][2 * r] = exp2f(fmaf(s[j][2 * r], scale_log2, -m_scaled));
                s[j][2 * r + 1] = exp2f(fmaf(s[j][2 * r + 1], scale_log2, -m_scaled));
                sum += s[j][2 * r] + s[j][2 * r + 1];
            }
            row_sum[r] = row_sum[r] * alpha + sum;
#pragma unroll
            for (int i = 0; i < kDT; ++i) {
                acc[i][2 * r] *= alpha;
                acc[i][2 * r + 1] *= alpha;
            }
        }

        // O += P V: the S accumulators of two adjacent n8 tiles are exactly one A fragment.
#pragma unroll
        for (int kk = 0; kk < kBlockN / 16; ++kk) {
            uint32_t a[4];
            a[0] = Mma<T>::pack(s[2 * kk][0], s[2 * kk][1]);
            a[1] = Mma<T>::pack(s[2 * kk][2], s[2 * kk][3]);
            a[2] = Mma<T>::pack(s[2 * kk + 1][0], s[2 * kk + 1][1]);
            a[3] = Mma<T>::pack(s[2 * kk + 1][2], s[2 * kk + 1][3]);
#pragma unroll
            for (int dp = 0; dp < kDT / 2; ++dp) {
                uint32_t b[4];
                ldmatrix_x4_trans(b, smem_addr(Vt + swz<D>(kk * 16 + (lane & 7) + (((lane >> 3) & 1) << 3), dp * 2 + (lane >> 4))));
                Mma<T>::run(acc[2 * dp], a, b[0], b[1]);
                Mma<T>::run(acc[2 * dp + 1], a, b[2], b[3]);
            }
        }
        __syncthreads();  // everyone is done with this buffer before it is refilled
    }

    // Epilogue: normalise, stage the tile in shared memory (sQ is free now), store 16-byte rows.
    float inv[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        float l = row_sum[r];
        l += __shfl_xor_sync(0xffffffffu, l, 1);
        l += __shfl_xor_sync(0xffffffffu, l, 2);
        inv[r] = l > 0.f ? 1.f / l : 0.f;
    }
#pragma unroll
    for (int i = 0; i < kDT; ++i) {
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            const int row = warp * 16 + g + r * 8;
            uint32_t packed = Mma<T>::pack(acc[i][2 * r] * inv[r], acc[i][2 * r + 1] * inv[r]);
            *reinterpret_cast<uint32_t*>(sQ + swz<D>(row, i) + 2 * t) = packed;
        }
    }
    __syncthreads();
    constexpr int kChunks = D / 8;
#pragma unroll
    for (int it = 0; it < kBlockM * kChunks / kThreads; ++it) {
        const int idx = tid + it * kThreads;
        const int r = idx / kChunks, c = idx % kChunks;
        if (m_start + r < seqlen)
            *reinterpret_cast<uint4*>(oh + static_cast<size_t>(m_start + r) * D + c * 8) =
                *reinterpret_cast<const uint4*>(sQ + swz<D>(r, c));
    }
}

template <typename T, int D>
void launch(const void* q, const void* k, const void* v, void* o, int batch, int heads, int seqlen, bool causal,
            cudaStream_t stream) {
    constexpr size_t smem = static_cast<size_t>(kBlockM + 4 * kBlockN) * D * sizeof(T);
    static bool configured = false;
    if (!configured) {
        cudaFuncSetAttribute(flash_fwd_kernel<T, D>, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
        configured = true;
    }
    const dim3 grid((seqlen + kBlockM - 1) / kBlockM, batch * heads);
    const float scale_log2 = static_cast<float>(1.4426950408889634 / std::sqrt(static_cast<double>(D)));
    flash_fwd_kernel<T, D><<<grid, kThreads, smem, stream>>>(static_cast<const T*>(q), static_cast<const T*>(k),
                                                             static_cast<const T*>(v), static_cast<T*>(o), seqlen,
                                                             causal, scale_log2);
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
