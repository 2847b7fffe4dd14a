// GEMM C = A * B (gemm_tc_api.h): one thread per output element, fp32 accumulation.
// Threads of a warp take consecutive columns, so the B row reads are coalesced and the A element is
// a broadcast; the accumulator stays in a register for the whole dot product.
#include "gemm_tc_api.h"

template <typename T>
__device__ __forceinline__ float to_f32(T x);
template <>
__device__ __forceinline__ float to_f32<__half>(__half x) { return __half2float(x); }
template <>
__device__ __forceinline__ float to_f32<__nv_bfloat16>(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename T>
__device__ __forceinline__ T from_f32(float x);
template <>
__device__ __forceinline__ __half from_f32<__half>(float x) { return __float2half_rn(x); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

template <typename T>
__global__ void gemm_kernel(const T* __restrict__ A, const T* __restrict__ B, T* __restrict__ C, int M, int N, int K) {
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M || col >= N) return;
    const T* a = A + static_cast<size_t>(row) * K;
    float acc = 0.f;
#pragma unroll 8
    for (int k = 0; k < K; ++k) acc = fmaf(to_f32(a[k]), to_f32(B[static_cast<size_t>(k) * N + col]), acc);
    C[static_cast<size_t>(row) * N + col] = from_f32<T>(acc);
}

template <typename T>
static void launch_gemm(const T* A, const T* B, T* C, int M, int N, int K, cudaStream_t stream) {
    dim3 block(32, 8);
    dim3 grid((N + block.x - 1) / block.x, (M + block.y - 1) / block.y);
    gemm_kernel<T><<<grid, block, 0, stream>>>(A, B, C, M, N, K);
}

void gemm_tc_f16(const __half* A, const __half* B, __half* C, int M, int N, int K, cudaStream_t stream) {
    launch_gemm<__half>(A, B, C, M, N, K, stream);
}

void gemm_tc_bf16(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int M, int N, int K,
                  cudaStream_t stream) {
    launch_gemm<__nv_bfloat16>(A, B, C, M, N, K, stream);
}
