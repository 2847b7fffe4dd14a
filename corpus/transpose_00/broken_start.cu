// Tiled matrix transpose (transpose_api.h): a 32 x 32 tile goes through shared memory so that both the
// global reads (along input rows) and the global writes (along output rows) are coalesced. The tile is
// padded to 33 columns so reading it column-wise has no bank conflicts. 32 x 8 threads, 4 rows each.
#include "transpose_api.h"
#define TILE 32
#define BLOCK_ROWS 8

template <typename T>
__global__ void transpose_tiled(const T* __restrict__ in, T* __restrict__ out, int rows, int cols) {
    __shared__ T tile[TILE][TILE + 1];

    int x = blockIdx.x * TILE + threadIdx.x;  // input column
    int y = blockIdx.y * TILE + threadIdx.y;  // input row
    for (int j = 0; j < TILE; j += BLOCK_ROWS)
        if (x < cols && y + j < rows) tile[threadIdx.y + j][threadIdx.x] = in[static_cast<size_t>(y + j) * cols + x];

    x = blockIdx.y * TILE + threadIdx.x;  // output column = input row
    y = blockIdx.x * TILE + threadIdx.y;  // output row = input column
    for (int j = 0; j < TILE; j += BLOCK_ROWS)
        if (x < rows && y + j < cols) out[static_cast<size_t>(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
}

template <typename T>
static void launch_transpose(const T* in, T* out, int rows, int cols, cudaStream_t stream) {
    dim3 grid((cols + TILE - 1) / TILE, (rows + TILE - 1) / TILE);
    transpose_tiled<T><<<grid, dim3(TILE, BLOCK_ROWS), 0, stream>>>(in, out, rows, cols);
}

void transpose_f32(const float* in, float* out, int rows, int cols, cudaStream_t stream) {
    launch_transpose<float>(in, out, rows, cols, stream);
}

void transpose_f16(const __half* in, __half* out, int rows, int cols, cudaStream_t stream) {
    launch_transpose<__half>(in, out, rows, cols, stream);
}
