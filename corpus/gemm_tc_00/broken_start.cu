// Tensor-core GEMM: C = A * B with fp16/bf16 inputs and fp32 accumulation (gemm_tc_api.h).
// 128x128x32 block tiles, 8 warps (2 x 4); each warp computes a 64x32 tile with mma.sync m16n8k16
// on ldmatrix fragments. A and B tiles are double-buffered in shared memory with cp.async, so the
// copy of the next k-tile overlaps the math on the current one.
#include <cstdint>
#include <type_traits>

#include "gemm_tc_api.h"

#define BLOCK_M 128
#define BLOCK_N 128
#define BLOCK_K 32
#define NSTAGE 2
#define NTHREADS 256
#define SA (BLOCK_K + 8)  // padded row of the A tile (avoids ldmatrix bank conflicts)
#define SB (BLOCK_N + 8)  // padded row of the B tile

__device__ __forceinline__ void cp_async_16(void* smem, const void* gmem, bool pred) {
    unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem));
    int n = pred ? 16 : 0;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(gmem), "r"(n));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

// ldmatrix reads shared memory, so the tile pointer goes straight into a 32-bit register operand.
template <typename T>
__device__ __forceinline__ void ldmatrix_x4(unsigned* r, const T* smem) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem));
}
template <typename T>
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned* r, const T* smem) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem));
}

template <typename T>
__device__ __forceinline__ void mma_16816(float* c, const unsigned* a, const unsigned* b) {
    if constexpr (std::is_same<T, __half>::value) {
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
            : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    } else {
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
            : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
}

// Copies the k-tile starting at k0 into one shared stage. Chunks outside the matrices are
// zero-filled (src-size 0) so the edge tiles compute on zeros.
template <typename T>
__device__ __forceinline__ void load_stage(T* sA, T* sB, const T* A, const T* B, int M, int N, int K, int bm, int bn,
                                           int k0, int tid) {
#pragma unroll
    for (int i = 0; i < 2; ++i) {  // A tile: 128 rows x 4 chunks of 8 elements
        int c = tid + i * NTHREADS;
        int r = c >> 2, kc = (c & 3) * 8;
        bool ok = bm + r < M && k0 + kc < K;
        cp_async_16(&sA[r * SA + kc], ok ? A + static_cast<size_t>(bm + r) * K + k0 + kc : A, ok);
    }
#pragma unroll
    for (int i = 0; i < 2; ++i) {  // B tile: 32 rows x 16 chunks of 8 elements
        int c = tid + i * NTHREADS;
        int r = c >> 4, nc = (c & 15) * 8;
        bool ok = bn + nc < N && k0 + r < K;
        cp_async_16(&sB[r * SB + nc], ok ? B + static_cast<size_t>(k0 + r) * N + bn + nc : B, ok);
    }
}

// The math on one shared stage: two k16 steps of a 64x32 warp tile.
template <typename T>
__device__ __forceinline__ void compute_stage(const T* sA, const T* sB, float (*acc)[4][4], int wm, int wn, int lane) {
#pragma unroll
    for (int kk = 0; kk < BLOCK_K; kk += 16) {
        unsigned a[4][4], b[4][2];
#pragma unroll
        for (int i = 0; i < 4; ++i)
            ldmatrix_x4(a[i], &sA[(wm + i * 16 + (lane & 15)) * SA + kk + (lane >> 4) * 8]);
#pragma unroll
        for (int j = 0; j < 2; ++j) {
            unsigned t[4];
            ldmatrix_x4_trans(t, &sB[(kk + (lane & 15)) * SB + wn + j * 16 + (lane >> 4) * 8]);
            b[2 * j][0] = t[0];
            b[2 * j][1] = t[1];
            b[2 * j + 1][0] = t[2];
            b[2 * j + 1][1] = t[3];
        }
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
            for (int j = 0; j < 4; ++j) mma_16816<T>(acc[i][j], a[i], b[j]);
    }
}

template <typename T>
__device__ __forceinline__ void store_pair(T* p, float x, float y) {
    if constexpr (std::is_same<T, __half>::value)
        *reinterpret_cast<__half2*>(p) = __floats2half2_rn(x, y);
    else
        *reinterpret_cast<__nv_bfloat162*>(p) = __floats2bfloat162_rn(x, y);
}

template <typename T>
__global__ void __launch_bounds__(NTHREADS) gemm_kernel(const T* __restrict__ A, const T* __restrict__ B,
                                                        T* __restrict__ C, int M, int N, int K) {
    __shared__ __align__(16) T sA[NSTAGE][BLOCK_M * SA];
    __shared__ __align__(16) T sB[NSTAGE][BLOCK_K * SB];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int bm = blockIdx.y * BLOCK_M, bn = blockIdx.x * BLOCK_N;
    const int wm = (warp >> 2) * 64, wn = (warp & 3) * 32;

    float acc[4][4][4] = {};
    const int num_k = (K + BLOCK_K - 1) / BLOCK_K;

    load_stage<T>(sA[0], sB[0], A, B, M, N, K, bm, bn, 0, tid);
    cp_async_commit();
    for (int kt = 0; kt < num_k; ++kt) {
        cp_async_wait<0>();
        __syncthreads();
        if (kt + 1 < num_k) load_stage<T>(sA[(kt + 1) & 1], sB[(kt + 1) & 1], A, B, M, N, K, bm, bn, (kt + 1) * BLOCK_K, tid);
        cp_async_commit();
        compute_stage<T>(sA[kt & 1], sB[kt & 1], acc, wm, wn, lane);
        __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < 4; ++i) {
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            int row = bm + wm + i * 16 + (lane >> 2);
            int col = bn + wn + j * 8 + (lane & 3) * 2;
            if (col >= N) continue;
            if (row < M) store_pair<T>(C + static_cast<size_t>(row) * N + col, acc[i][j][0], acc[i][j][1]);
            if (row + 8 < M) store_pair<T>(C + static_cast<size_t>(row + 8) * N + col, acc[i][j][2], acc[i][j][3]);
        }
    }
}

template <typename T>
static void launch_gemm(const T* A, const T* B, T* C, int M, int N, int K, cudaStream_t stream) {
    dim3 grid((N + BLOCK_N - 1) / BLOCK_N, (M + BLOCK_M - 1) / BLOCK_M);
    gemm_kernel<T><<<grid, NTHREADS, 0, stream>>>(A, B, C, M, N, K);
}

void gemm_tc_f16(const __half* A, const __half* B, __half* C, int M, int N, int K, cudaStream_t stream) {
    launch_gemm<__half>(A, B, C, M, N, K, stream);
}

void gemm_tc_bf16(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int M, int N, int K,
                  cudaStream_t stream) {
    launch_gemm<__nv_bfloat16>(A, B, C, M, N, K, stream);
}
