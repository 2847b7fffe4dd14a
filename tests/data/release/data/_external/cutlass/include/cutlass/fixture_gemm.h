#pragma once
// The test fixture's stand-in for the CUTLASS kernel a release cutlass testbench compiles in as its reference:
// a shared-memory tiled SGEMM (row-major), timed against the solution in the same binary.
#include <cutlass/fixture_tile.h>

namespace cutlass_fixture {

__global__ void reference_sgemm(int M, int N, int K, const float* A, const float* B, float* C) {
    __shared__ float a_tile[kTile][kTile], b_tile[kTile][kTile];
    const int r = blockIdx.y * kTile + threadIdx.y, c = blockIdx.x * kTile + threadIdx.x;
    float sum = 0.f;
    for (int base = 0; base < K; base += kTile) {
        const int ka = base + threadIdx.x, kb = base + threadIdx.y;
        a_tile[threadIdx.y][threadIdx.x] = (r < M && ka < K) ? A[r * K + ka] : 0.f;
        b_tile[threadIdx.y][threadIdx.x] = (c < N && kb < K) ? B[kb * N + c] : 0.f;
        __syncthreads();
#pragma unroll
        for (int i = 0; i < kTile; ++i) sum += a_tile[threadIdx.y][i] * b_tile[i][threadIdx.x];
        __syncthreads();
    }
    if (r < M && c < N) C[r * N + c] = sum;
}

inline void reference_gemm(int M, int N, int K, const float* A, const float* B, float* C) {
    reference_sgemm<<<dim3(ceil_div(N, kTile), ceil_div(M, kTile)), dim3(kTile, kTile)>>>(M, N, K, A, B, C);
}

}  // namespace cutlass_fixture
