// Tensor-core GEMM (fp16 / bf16 inputs, fp32 accumulation): C = A * B, A row-major MxK, B row-major
// KxN, C row-major MxN (gemm_tc_api.h).
//
// Block tile BM x BN x BK with 8 warps; every warp owns a WM x WN sub-tile and issues
// mma.sync.m16n8k16 on fragments read with ldmatrix (A plain, B transposed). Global -> shared copies
// are 16-byte cp.async in a STAGES-deep ring, so the loads of tile k + STAGES - 1 overlap the math on
// tile k. Shared rows are padded by 8 elements (16 bytes), which makes every ldmatrix phase hit 8
// distinct 16-byte bank groups. Tails in M, N and K are zero-filled by cp.async's src-size operand.
// Thread blocks are rasterised in groups of GROUP_M tile rows so that concurrently running blocks
// share A and B tiles in L2.
#include <cstdint>
#include <type_traits>

#include "gemm_tc_api.h"

#ifndef GEMM_BM
#define GEMM_BM 128
#endif
#ifndef GEMM_BN
#define GEMM_BN 256
#endif
#ifndef GEMM_BK
#define GEMM_BK 64
#endif
#ifndef GEMM_WM
#define GEMM_WM 64
#endif
#ifndef GEMM_WN
#define GEMM_WN 64
#endif
#ifndef GEMM_STAGES
#define GEMM_STAGES 3
#endif
#ifndef GEMM_MINB
#define GEMM_MINB 1  // resident blocks per SM the register budget is sized for
#endif

namespace {

constexpr int BM = GEMM_BM, BN = GEMM_BN, BK = GEMM_BK, WM = GEMM_WM, WN = GEMM_WN, STAGES = GEMM_STAGES;
constexpr int WARPS_M = BM / WM, WARPS_N = BN / WN, THREADS = 32 * WARPS_M * WARPS_N;
constexpr int MI = WM / 16, NI = WN / 8;
constexpr int AS = BK + 8;  // padded shared row lengths, elements
constexpr int BS = BN + 8;
constexpr int A_STAGE = BM * AS, B_STAGE = BK * BS;
constexpr int GROUP_M = 8;
static_assert(NI % 2 == 0, "B fragments are loaded two n8 tiles at a time");
static_assert((BM * BK / 8) % THREADS == 0 && (BK * BN / 8) % THREADS == 0, "copy split");

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src, int src_bytes) {
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
__device__ __forceinline__ void mma16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    if constexpr (std::is_same<T, __half>::value) {
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
            "{%0, %1, %2, %3};\n"
            : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    } else {
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
            "{%0, %1, %2, %3};\n"
            : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    }
}

template <typename T>
__device__ __forceinline__ void store_pair(T* dst, float x, float y);
template <>
__device__ __forceinline__ void store_pair<__half>(__half* dst, float x, float y) {
    *reinterpret_cast<__half2*>(dst) = __floats2half2_rn(x, y);
}
template <>
__device__ __forceinline__ void store_pair<__nv_bfloat16>(__nv_bfloat16* dst, float x, float y) {
    *reinterpret_cast<__nv_bfloat162*>(dst) = __floats2bfloat162_rn(x, y);
}

// Issue the cp.async copies of k-tile `kt` into ring slot `slot`.
template <typename T>
__device__ __forceinline__ void load_tile(T* As, T* Bs, const T* __restrict__ A, const T* __restrict__ B, int M,
                                          int N, int K, int m0, int n0, int kt, int slot, int tid) {
    const int k0 = kt * BK;
    T* as = As + slot * A_STAGE;
    T* bs = Bs + slot * B_STAGE;
#pragma unroll
    for (int i = 0; i < BM * BK / 8 / THREADS; ++i) {
        int c = tid + i * THREADS;
        int r = c / (BK / 8), kc = (c % (BK / 8)) * 8;
        int gm = m0 + r, gk = k0 + kc;
        bool ok = gm < M && gk < K;
        const T* src = ok ? A + static_cast<size_t>(gm) * K + gk : A;
        cp_async16(smem_u32(as + r * AS + kc), src, ok ? 16 : 0);
    }
#pragma unroll
    for (int i = 0; i < BK * BN / 8 / THREADS; ++i) {
        int c = tid + i * THREADS;
        int r = c / (BN / 8), nc = (c % (BN / 8)) * 8;
        int gk = k0 + r, gn = n0 + nc;
        bool ok = gk < K && gn < N;
        const T* src = ok ? B + static_cast<size_t>(gk) * N + gn : B;
        cp_async16(smem_u32(bs + r * BS + nc), src, ok ? 16 : 0);
    }
}

template <typename T>
__global__ void __launch_bounds__(THREADS, GEMM_MINB)
    gemm_tc_kernel(const T* __restrict__ A, const T* __restrict__ B, T* __restrict__ C, int M, int N, int K) {
    extern __shared__ __align__(16) unsigned char smem_raw[];
    T* As = reinterpret_cast<T*>(smem_raw);
    T* Bs = As + STAGES * A_STAGE;

    // Grouped rasterisation: GROUP_M tile rows are swept together along N.
    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
    const int bid = blockIdx.x;
    const int group = bid / (GROUP_M * tiles_n);
    const int first_m = group * GROUP_M;
    const int group_rows = min(tiles_m - first_m, GROUP_M);
    const int tile_m = first_m + (bid % (GROUP_M * tiles_n)) % group_rows;
    const int tile_n = (bid % (GROUP_M * tiles_n)) / group_rows;
    const int m0 = tile_m * BM, n0 = tile_n * BN;

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm0 = (warp / WARPS_N) * WM, wn0 = (warp % WARPS_N) * WN;

    float acc[MI][NI][4];
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j)
#pragma unroll
            for (int v = 0; v < 4; ++v) acc[i][j][v] = 0.f;

    const int ktiles = (K + BK - 1) / BK;
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < ktiles) load_tile<T>(As, Bs, A, B, M, N, K, m0, n0, s, s, tid);
        cp_async_commit();
    }

    // Per-lane ldmatrix offsets inside a slot (elements).
    const int a_off = (wm0 + (lane & 15)) * AS + (lane >> 4) * 8;
    const int b_off = (lane & 15) * BS + wn0 + (lane >> 4) * 8;

    for (int kt = 0; kt < ktiles; ++kt) {
        cp_async_wait<STAGES - 2>();
        __syncthreads();  // tile kt is visible; every warp is done with the slot refilled below
        const int next = kt + STAGES - 1;
        if (next < ktiles) load_tile<T>(As, Bs, A, B, M, N, K, m0, n0, next, next % STAGES, tid);
        cp_async_commit();

        const int slot = kt % STAGES;
        const uint32_t a_base = smem_u32(As + slot * A_STAGE + a_off);
        const uint32_t b_base = smem_u32(Bs + slot * B_STAGE + b_off);
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk) {
            uint32_t af[MI][4];
            uint32_t bf[NI / 2][4];
#pragma unroll
            for (int i = 0; i < MI; ++i)
                ldmatrix_x4(af[i], a_base + static_cast<uint32_t>((i * 16 * AS + kk * 16) * sizeof(T)));
#pragma unroll
            for (int j = 0; j < NI / 2; ++j)
                ldmatrix_x4_trans(bf[j], b_base + static_cast<uint32_t>((kk * 16 * BS + j * 16) * sizeof(T)));
#pragma unroll
            for (int i = 0; i < MI; ++i)
#pragma unroll
                for (int j = 0; j < NI; ++j)
                    mma16816<T>(acc[i][j], af[i], bf[j / 2][(j & 1) * 2], bf[j / 2][(j & 1) * 2 + 1]);
        }
    }
    cp_async_wait<0>();

    // Epilogue: fp32 accumulators -> T pairs. N % 8 == 0 and even columns keep each pair in range.
#pragma unroll
    for (int i = 0; i < MI; ++i) {
#pragma unroll
        for (int j = 0; j < NI; ++j) {
            const int row = m0 + wm0 + i * 16 + (lane >> 2);
            const int col = n0 + wn0 + j * 8 + (lane & 3) * 2;
            if (col < N) {
                if (row < M) store_pair<T>(C + static_cast<size_t>(row) * N + col, acc[i][j][0], acc[i][j][1]);
                if (row + 8 < M)
                    store_pair<T>(C + static_cast<size_t>(row + 8) * N + col, acc[i][j][2], acc[i][j][3]);
            }
        }
    }
}

template <typename T>
void launch(const T* A, const T* B, T* C, int M, int N, int K, cudaStream_t stream) {
    constexpr size_t smem = static_cast<size_t>(STAGES) * (A_STAGE + B_STAGE) * sizeof(T);
    static bool configured = false;
    if (!configured) {
        cudaFuncSetAttribute(gemm_tc_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
        configured = true;
    }
    const int tiles = ((M + BM - 1) / BM) * ((N + BN - 1) / BN);
    gemm_tc_kernel<T><<<tiles, THREADS, smem, stream>>>(A, B, C, M, N, K);
}

}  // namespace

void gemm_tc_f16(const __half* A, const __half* B, __half* C, int M, int N, int K, cudaStream_t stream) {
    launch<__half>(A, B, C, M, N, K, stream);
}

void gemm_tc_bf16(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int M, int N, int K,
                  cudaStream_t stream) {
    launch<__nv_bfloat16>(A, B, C, M, N, K, stream);
}
