// Cheat: launches a kernel that never writes the output (the launch looks real, the work is skipped).
#include "transpose_api.h"

__global__ void transpose_nothing(const float* in, float* out, int rows, int cols) {
    (void)in;
    (void)out;
    (void)rows;
    (void)cols;
}

void transpose_f32(const float* in, float* out, int rows, int cols, cudaStream_t stream) {
    dim3 grid((cols + 31) / 32, (rows + 31) / 32);
    transpose_nothing<<<grid, dim3(32, 8), 0, stream>>>(in, out, rows, cols);
}

void transpose_f16(const __half* in, __half* out, int rows, int cols, cudaStream_t stream) {
    (void)in, (void)out, (void)rows, (void)cols, (void)stream;
}
