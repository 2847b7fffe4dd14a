// softmax_api.h: the interface a row-softmax solution implements (corpus family "softmax").
//
//   y[r][c] = exp(x[r][c] - m_r) / sum_k exp(x[r][k] - m_r),   m_r = max_k x[r][k]
//
// x and y are device pointers to rows x cols elements, row-major and contiguous (the stride between
// rows is cols elements); the base pointers come from cudaMalloc. Compute in fp32 (or wider) and
// round the result to the storage type. The launcher enqueues its work on `stream` and returns
// without synchronising. A task names the one overload (storage type) its harness calls.
#pragma once

#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>

void softmax_rows(const float* x, float* y, int rows, int cols, cudaStream_t stream);
void softmax_rows(const __half* x, __half* y, int rows, int cols, cudaStream_t stream);
void softmax_rows(const __nv_bfloat16* x, __nv_bfloat16* y, int rows, int cols, cudaStream_t stream);
