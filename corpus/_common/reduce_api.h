// reduce_api.h: the interface a sum-reduction solution implements (corpus family "reduce").
//
//   *out = sum_{i < n} x[i]
//
// x: device pointer to n floats (from cudaMalloc); out: device pointer to one float, which the launcher
// must overwrite (its previous content is garbage). Accumulate in fp32 or wider; the order of additions
// is free. The launcher enqueues its work on `stream` and returns without synchronising; it may keep
// its own device workspace between calls but must leave it ready for the next call.
#pragma once

#include <cstddef>
#include <cuda_runtime.h>

void reduce_sum(const float* x, size_t n, float* out, cudaStream_t stream);
