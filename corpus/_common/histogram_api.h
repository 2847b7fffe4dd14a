// histogram_api.h: the interface a 256-bin byte histogram solution implements (corpus family "histogram").
//
//   bins[b] = number of i < n with data[i] == b,   b = 0 .. 255
//
// data: device pointer to n bytes (from cudaMalloc); bins: device pointer to 256 counters, which the
// launcher must overwrite (their previous content is garbage). The launcher enqueues its work on
// `stream` and returns without synchronising.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cuda_runtime.h>

void histogram256(const uint8_t* data, size_t n, unsigned int* bins, cudaStream_t stream);
