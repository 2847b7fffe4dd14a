#include "common.cuh"
__global__ void k(float* v) { int i = threadIdx.x v[i] = 1.0f; }
int main() { return 0; }
