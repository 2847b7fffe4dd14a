// scan_api.h: the interface an inclusive prefix-sum solution implements (corpus family "scan").
//
//   out[i] = x[0] + x[1] + ... + x[i]          for every i < n
//
// x and out: device pointers to n elements (from cudaMalloc; they do not overlap). int32 sums are exact
// (the harness keeps them in range); fp32 sums may add in any order. The launcher enqueues its work on
// `stream` and returns without synchronising; it may keep its own device workspace between calls but
// must leave it ready for the next call. A task names the one overload its harness calls.
#pragma once

#include <cstddef>
#include <cuda_runtime.h>

void inclusive_scan(const int* x, int* out, size_t n, cudaStream_t stream);
void inclusive_scan(const float* x, float* out, size_t n, cudaStream_t stream);
