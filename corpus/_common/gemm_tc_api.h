// gemm_tc_api.h: the interface a gemm_tc solution implements (the harness includes it and calls it).
//
//   C = A * B, accumulated in fp32, rounded once to the output type.
//   A: M x K, row-major (element (m, k) at A[m * K + k])
//   B: K x N, row-major (element (k, n) at B[k * N + n])
//   C: M x N, row-major (element (m, n) at C[m * N + n]), same element type as A and B
//
// Requirements on the arguments: M >= 1, N >= 8, K >= 8, N % 8 == 0 and K % 8 == 0 (every row
// starts on a 16-byte boundary); A, B and C are 16-byte aligned device pointers; K need NOT be a
// multiple of any tile size, and M and N need not be multiples of a tile either. Every element of
// C must be written. The call is asynchronous on `stream`, allocates no memory and does not
// synchronise the device.
//
// A solution defines BOTH functions; each task's harness tests and times one of them.
#pragma once

#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>

void gemm_tc_f16(const __half* A, const __half* B, __half* C, int M, int N, int K, cudaStream_t stream);
void gemm_tc_bf16(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int M, int N, int K,
                  cudaStream_t stream);
