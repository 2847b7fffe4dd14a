// Two-pass matrix transpose (transpose_api.h).
// Pass 1 reads 32 x 32 tiles along input rows (coalesced) and stores every 32-row strip of the input
// transposed into a strip-major workspace: strip s holds, for each input column c, the 32 values
// in[32s .. 32s+31][c] contiguously. Pass 2 then streams each output row out of the workspace with
// fully contiguous reads and writes. The workspace is allocated once and reused between calls.
#include <cstdio>
#include <cstdlib>

#include "transpose_api.h"

#define TILE 32
#define CUDA_OK(call)                                                                              \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            std::fprintf(stderr, "%s failed: %s (%s)\n", #call, cudaGetErrorString(e_), cudaGetErrorName(e_)); \
            std::exit(1);                                                                          \
        }                                                                                          \
    } while (0)

// Pass 1: tile (by, bx) -> workspace strip by, columns bx*32 .. bx*32+31.
template <typename T>
__global__ void to_strips(const T* __restrict__ in, T* __restrict__ ws, int rows, int cols) {
    __shared__ T tile[TILE][TILE + 1];
    const int c = blockIdx.x * TILE + threadIdx.x;
    for (int j = threadIdx.y; j < TILE; j += blockDim.y) {
        int r = blockIdx.y * TILE + j;
        if (r < rows && c < cols) tile[j][threadIdx.x] = in[static_cast<size_t>(r) * cols + c];
    }
    __syncthreads();
    for (int j = threadIdx.y; j < TILE; j += blockDim.y) {
        int cc = blockIdx.x * TILE + j;
        if (cc < cols) ws[(static_cast<size_t>(blockIdx.y) * cols + cc) * TILE + threadIdx.x] = tile[threadIdx.x][j];
    }
}

// Pass 2: out[c][32s + k] = ws[s][c][k]; one output row per blockIdx.y, contiguous in both arrays.
template <typename T>
__global__ void from_strips(const T* __restrict__ ws, T* __restrict__ out, int rows, int cols) {
    const int c = blockIdx.y;
    for (int r = blockIdx.x * blockDim.x + threadIdx.x; r < rows; r += gridDim.x * blockDim.x) {
        int s = r / TILE, k = r % TILE;
        out[static_cast<size_t>(c) * rows + r] = ws[(static_cast<size_t>(s) * cols + c) * TILE + k];
    }
}

template <typename T>
static void launch_transpose(const T* in, T* out, int rows, int cols, cudaStream_t stream) {
    static void* workspace = nullptr;
    static size_t workspace_bytes = 0;
    const size_t strips = (rows + TILE - 1) / TILE;
    const size_t need = strips * static_cast<size_t>(cols) * rows * sizeof(T);  // one panel per strip
    if (need > workspace_bytes) {
        if (workspace) CUDA_OK(cudaFree(workspace));
        CUDA_OK(cudaMalloc(&workspace, need));
        workspace_bytes = need;
    }
    T* ws = static_cast<T*>(workspace);
    dim3 grid1((cols + TILE - 1) / TILE, static_cast<unsigned>(strips));
    to_strips<T><<<grid1, dim3(TILE, 8), 0, stream>>>(in, ws, rows, cols);
    dim3 grid2((rows + 255) / 256 < 8 ? (rows + 255) / 256 : 8, cols);
    from_strips<T><<<grid2, 256, 0, stream>>>(ws, out, rows, cols);
}

void transpose_f32(const float* in, float* out, int rows, int cols, cudaStream_t stream) {
    launch_transpose<float>(in, out, rows, cols, stream);
}

void transpose_f16(const __half* in, __half* out, int rows, int cols, cudaStream_t stream) {
    launch_transpose<__half>(in, out, rows, cols, stream);
}
