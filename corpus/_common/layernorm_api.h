// layernorm_api.h: the interface a layer-norm forward solution implements (corpus family "layernorm").
//
//   mean_r = (1/cols) sum_c x[r][c]
//   var_r  = (1/cols) sum_c (x[r][c] - mean_r)^2              (biased, as in torch.nn.LayerNorm)
//   y[r][c] = (x[r][c] - mean_r) / sqrt(var_r + eps) * gamma[c] + beta[c]
//
// x and y: device pointers to rows x cols elements, row-major and contiguous (row stride = cols
// elements, so a row need not start on a 16-byte boundary when cols is odd); gamma, beta: cols
// elements. Base pointers come from cudaMalloc. Accumulate in fp32 (or wider), round the result to the
// storage type. The launcher enqueues its work on `stream` and returns without synchronising. A task
// names the one overload (storage type) its harness calls.
#pragma once

#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>

void layernorm_forward(const float* x, const float* gamma, const float* beta, float* y, int rows, int cols,
                       float eps, cudaStream_t stream);
void layernorm_forward(const __half* x, const __half* gamma, const __half* beta, __half* y, int rows, int cols,
                       float eps, cudaStream_t stream);
void layernorm_forward(const __nv_bfloat16* x, const __nv_bfloat16* gamma, const __nv_bfloat16* beta,
                       __nv_bfloat16* y, int rows, int cols, float eps, cudaStream_t stream);
