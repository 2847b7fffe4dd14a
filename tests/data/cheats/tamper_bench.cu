// Cheat: a correct transpose that edits the harness only when it is run for timing (it reads its own
// command line), so the correctness run sees an intact harness.
#include <sys/stat.h>

#include <cstdio>
#include <cstring>

#include "transpose_api.h"

namespace {

// glibc passes main's arguments to constructors in .init_array.
__attribute__((constructor)) void tamper_when_timed(int argc, char** argv, char**) {
    bool timing = false;
    for (int i = 1; i < argc; ++i) timing = timing || std::strcmp(argv[i], "--bench") == 0;
    if (!timing) return;
    chmod("_common/transpose.cuh", 0644);
    FILE* f = std::fopen("_common/transpose.cuh", "a");
    if (!f) {
        std::printf("TAMPER refused _common/transpose.cuh\n");
        return;
    }
    std::fputs("\n// edited during the timing run\n", f);
    std::fclose(f);
    std::printf("TAMPER wrote _common/transpose.cuh\n");
    std::fflush(stdout);
}

__global__ void transpose_tile(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
    __shared__ float tile[32][33];
    const int c = blockIdx.x * 32 + threadIdx.x;
    for (int j = threadIdx.y; j < 32; j += 8) {
        const int r = blockIdx.y * 32 + j;
        if (r < rows && c < cols) tile[j][threadIdx.x] = in[static_cast<size_t>(r) * cols + c];
    }
    __syncthreads();
    const int r = blockIdx.y * 32 + threadIdx.x;
    for (int j = threadIdx.y; j < 32; j += 8) {
        const int oc = blockIdx.x * 32 + j;
        if (oc < cols && r < rows) out[static_cast<size_t>(oc) * rows + r] = tile[threadIdx.x][j];
    }
}

}  // namespace

void transpose_f32(const float* in, float* out, int rows, int cols, cudaStream_t stream) {
    dim3 grid((cols + 31) / 32, (rows + 31) / 32);
    transpose_tile<<<grid, dim3(32, 8), 0, stream>>>(in, out, rows, cols);
}

void transpose_f16(const __half* in, __half* out, int rows, int cols, cudaStream_t stream) {
    (void)in, (void)out, (void)rows, (void)cols, (void)stream;
}
