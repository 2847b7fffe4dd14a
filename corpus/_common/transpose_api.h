// transpose_api.h: the interface a transpose solution implements (the harness includes it and calls it).
//
//   out = in^T
//   in:  rows x cols, row-major (element (r, c) at in[r * cols + c])
//   out: cols x rows, row-major (element (c, r) at out[c * rows + r])
//
// Requirements on the arguments: rows >= 1, cols >= 1; for transpose_f16 both rows and cols are even.
// in and out are distinct, non-overlapping, 16-byte aligned device pointers. Every element of out must
// be written with the exact bits of its input element. The call is asynchronous on `stream` and does
// not synchronise the device.
//
// A solution defines BOTH functions; each task's harness tests and times one of them.
#pragma once

#include <cuda_runtime.h>
#include <cuda_fp16.h>

void transpose_f32(const float* in, float* out, int rows, int cols, cudaStream_t stream);
void transpose_f16(const __half* in, __half* out, int rows, int cols, cudaStream_t stream);
