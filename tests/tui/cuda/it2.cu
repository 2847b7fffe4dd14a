// kernel.cu: C = A * B for row-major float matrices (M x K times K x N).
// One thread per output element; every operand is read straight from global memory.
#include <cuda_runtime.h>

__global__ void sgemm_naive(const float* __restrict__ A, const float* __restrict__ B,
                            float* __restrict__ C, int M, int N, int K) {
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= M || col >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = acc;
}

extern "C" void launch_sgemm(const float* A, const float* B, float* C, int M, int N, int K,
                             cudaStream_t stream) {
    dim3 block(16, 16);
    dim3 grid((N + block.x - 1) / block.x, (M + block.y - 1) / block.y);
    sgemm_naive<<<grid, block, 0, stream>>>(A, B, C, M, N, K);
}
