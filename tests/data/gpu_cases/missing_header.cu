#include "common.cuh"
#include <cutlass/gemm/device/gemm.h>
int main() { return 0; }
