#pragma once
#include <cutlass/fixture_tile.h>

// Shared-memory tiled GEMM.
__global__ void gemm_tiled(int M, int N, int K, const float* A, const float* B, float* C) {
    constexpr int T = cutlass_fixture::kTile;
    __shared__ float As[T][T], Bs[T][T];
    int row = blockIdx.y * T + threadIdx.y, col = blockIdx.x * T + threadIdx.x;
    float acc = 0.f;
    for (int k0 = 0; k0 < K; k0 += T) {
        As[threadIdx.y][threadIdx.x] = (row < M && k0 + threadIdx.x < K) ? A[row * K + k0 + threadIdx.x] : 0.f;
        Bs[threadIdx.y][threadIdx.x] = (col < N && k0 + threadIdx.y < K) ? B[(k0 + threadIdx.y) * N + col] : 0.f;
        __syncthreads();
        for (int k = 0; k < T; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = acc;
}

inline void run_gemm(int M, int N, int K, const float* A, const float* B, float* C) {
    constexpr int T = cutlass_fixture::kTile;
    dim3 block(T, T), grid(cutlass_fixture::ceil_div(N, T), cutlass_fixture::ceil_div(M, T));
    gemm_tiled<<<grid, block>>>(M, N, K, A, B, C);
}
