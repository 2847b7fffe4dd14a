// Cheat: no kernel of its own; the transpose is cuBLAS's geam (C = A^T). The task's build links no
// cuBLAS, so this does not build or link; the static check names the call either way.
#include <cublas_v2.h>

#include "transpose_api.h"

void transpose_f32(const float* in, float* out, int rows, int cols, cudaStream_t stream) {
    static cublasHandle_t handle = [] {
        cublasHandle_t h;
        cublasCreate(&h);
        return h;
    }();
    cublasSetStream(handle, stream);
    const float one = 1.f, zero = 0.f;
    // column-major view: in is a cols x rows matrix; out = in^T is rows x cols column-major.
    cublasSgeam(handle, CUBLAS_OP_T, CUBLAS_OP_N, rows, cols, &one, in, cols, &zero, out, rows, out, rows);
}

void transpose_f16(const __half* in, __half* out, int rows, int cols, cudaStream_t stream) {
    (void)in, (void)out, (void)rows, (void)cols, (void)stream;
}
