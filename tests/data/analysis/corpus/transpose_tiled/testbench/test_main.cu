// Harness of the transpose_tiled fixture: checks out == in^T; `--bench N` prints BEAVER_TIME_MS lines.
#include <cuda_runtime.h>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include "transpose.h"

#define CHECK(call)                                                                              \
    do {                                                                                         \
        cudaError_t e_ = (call);                                                                 \
        if (e_ != cudaSuccess) {                                                                 \
            std::fprintf(stderr, "CUDA error %s (%s) at %s:%d\n", cudaGetErrorName(e_),          \
                         cudaGetErrorString(e_), __FILE__, __LINE__);                           \
            return 3;                                                                            \
        }                                                                                        \
    } while (0)

int main(int argc, char** argv) {
    const int n = 4096;
    std::vector<float> h(size_t(n) * n), got(size_t(n) * n);
    for (size_t i = 0; i < h.size(); ++i) h[i] = float((i * 2654435761u) % 1000) / 1000.f - 0.5f;
    float *in, *out, *flush;
    CHECK(cudaMalloc(&in, h.size() * sizeof(float)));
    CHECK(cudaMalloc(&out, h.size() * sizeof(float)));
    CHECK(cudaMemcpy(in, h.data(), h.size() * sizeof(float), cudaMemcpyHostToDevice));
    if (argc > 2 && std::strcmp(argv[1], "--bench") == 0) {
        int iters = std::atoi(argv[2]);
        CHECK(cudaMalloc(&flush, 256u << 20));
        cudaEvent_t a, b;
        CHECK(cudaEventCreate(&a));
        CHECK(cudaEventCreate(&b));
        for (int i = 0; i < iters + 3; ++i) {
            CHECK(cudaMemset(flush, i, 256u << 20));
            CHECK(cudaDeviceSynchronize());
            CHECK(cudaEventRecord(a));
            launch_transpose(in, out, n);
            CHECK(cudaEventRecord(b));
            CHECK(cudaEventSynchronize(b));
            CHECK(cudaGetLastError());
            float ms = 0.f;
            CHECK(cudaEventElapsedTime(&ms, a, b));
            if (i >= 3) std::printf("BEAVER_TIME_MS %.6f\n", ms);
        }
        return 0;
    }
    CHECK(cudaMemset(out, 0xff, h.size() * sizeof(float)));
    launch_transpose(in, out, n);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(got.data(), out, got.size() * sizeof(float), cudaMemcpyDeviceToHost));
    size_t bad = 0, first = 0;
    for (int r = 0; r < n; ++r)
        for (int c = 0; c < n; ++c)
            if (!(got[size_t(r) * n + c] == h[size_t(c) * n + r]) && bad++ == 0) first = size_t(r) * n + c;
    if (bad) {
        std::printf("MISMATCH out: %zu of %zu elements wrong, first at [%zu,%zu]: got %f want %f\n", bad, got.size(),
                    first / n, first % n, got[first], h[(first % n) * n + first / n]);
        return 1;
    }
    std::printf("OK out: %zu elements\n", got.size());
    return 0;
}
