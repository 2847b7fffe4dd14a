// Shared by the crafted GPU cases: a checked-call macro that prints the CUDA error and exits 1.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#define CK(call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) { \
    std::fprintf(stderr, "CUDA error %s: %s at %s:%d\n", cudaGetErrorName(e_), cudaGetErrorString(e_), __FILE__, __LINE__); \
    std::exit(1); } } while (0)
