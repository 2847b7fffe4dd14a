// gemm_tc_guard.cuh: guard-paged device buffers and seeded on-device input fills, used by the gemm_tc,
// transpose and spmv_csr harnesses (it is family-neutral; it lives under this name because those
// families own it).
//
// Why guard pages: cudaMalloc rounds allocations up (2 MiB pages), so a kernel that reads a few rows
// past the end of an input usually reads harmless padding or a neighbouring allocation and is never
// caught. GuardedBuffer reserves virtual address space, maps physical memory for the buffer only, and
// places the buffer's last byte at the very end of the mapping: the next byte is reserved but
// unmapped, so any access past the end faults with "an illegal memory access was encountered". The
// driver entry points are fetched through the runtime (cudaGetDriverEntryPointByVersion), so the build
// needs no -lcuda. It never decides what a task computes.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "beaver.cuh"

namespace beaver_guard {

#define BEAVER_GUARD_DRV(call)                                                                        \
    do {                                                                                              \
        CUresult beaver_res_ = (call);                                                                \
        if (beaver_res_ != CUDA_SUCCESS) {                                                            \
            std::fprintf(stderr, "CUDA driver error %d at %s:%d in %s\n", static_cast<int>(beaver_res_), \
                         __FILE__, __LINE__, #call);                                                  \
            std::exit(3);                                                                             \
        }                                                                                             \
    } while (0)

struct Driver {
    decltype(&cuMemGetAllocationGranularity) granularity = nullptr;
    decltype(&cuMemAddressReserve) reserve = nullptr;
    decltype(&cuMemAddressFree) address_free = nullptr;
    decltype(&cuMemCreate) create = nullptr;
    decltype(&cuMemRelease) release = nullptr;
    decltype(&cuMemMap) map = nullptr;
    decltype(&cuMemUnmap) unmap = nullptr;
    decltype(&cuMemSetAccess) set_access = nullptr;
};

template <typename F>
inline bool load_entry(const char* name, F& fn) {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    if (cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault, &q) != cudaSuccess || p == nullptr ||
        q != cudaDriverEntryPointSuccess) {
        cudaGetLastError();
        return false;
    }
    fn = reinterpret_cast<F>(p);
    return true;
}

// The driver's virtual-memory entry points, or nullptr members when they are unavailable (then the
// buffers fall back to cudaMalloc without a guard, and say so).
inline const Driver& driver() {
    static Driver d = [] {
        Driver x;
        BEAVER_CHECK(cudaFree(nullptr));  // make the primary context current
        bool ok = load_entry("cuMemGetAllocationGranularity", x.granularity) && load_entry("cuMemAddressReserve", x.reserve) &&
                  load_entry("cuMemAddressFree", x.address_free) && load_entry("cuMemCreate", x.create) &&
                  load_entry("cuMemRelease", x.release) && load_entry("cuMemMap", x.map) &&
                  load_entry("cuMemUnmap", x.unmap) && load_entry("cuMemSetAccess", x.set_access);
        if (!ok) {
            std::fprintf(stderr, "note: CUDA virtual-memory entry points unavailable; buffers are not guard-paged\n");
            x = Driver{};
        }
        return x;
    }();
    return d;
}

// A device buffer of n elements whose end touches an unmapped guard region. `align` is the alignment
// of the returned pointer in bytes; the buffer ends exactly at the guard when n * sizeof(T) is a
// multiple of it (otherwise up to align - 1 bytes of slack stay readable).
template <typename T>
struct GuardedBuffer {
    T* ptr = nullptr;
    size_t n = 0;
    CUdeviceptr base = 0;
    size_t reserved = 0, mapped = 0;
    CUmemGenericAllocationHandle handle = 0;

    bool guarded = false;

    explicit GuardedBuffer(size_t count, size_t align = 16) : n(count) {
        const Driver& d = driver();
        const size_t bytes = count * sizeof(T);
        size_t padded = (bytes + align - 1) / align * align;
        if (padded == 0) padded = align;
        if (d.create == nullptr || !map_guarded(d, bytes, padded)) {
            BEAVER_CHECK(cudaMalloc(&ptr, padded));
            return;
        }
        guarded = true;
    }
    ~GuardedBuffer() {
        // Errors are ignored here: after a kernel fault the context is gone and nothing can be freed.
        if (!guarded) {
            cudaFree(ptr);
            return;
        }
        const Driver& d = driver();
        d.unmap(base, mapped);
        d.release(handle);
        d.address_free(base, reserved);
    }

    // Reserve address space, back all but the trailing guard with memory, and place the buffer so that it
    // ends where the mapping ends. False (after a note) when the driver refuses anything but memory.
    bool map_guarded(const Driver& d, size_t bytes, size_t padded) {
        int dev = 0;
        BEAVER_CHECK(cudaGetDevice(&dev));
        CUmemAllocationProp prop = {};
        prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
        prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        prop.location.id = dev;
        size_t gran = 0;
        CUresult r = d.granularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
        if (r != CUDA_SUCCESS || gran == 0) return note(r, "cuMemGetAllocationGranularity");
        mapped = (padded + gran - 1) / gran * gran;
        reserved = mapped + 2 * gran;  // unmapped granules after the mapping
        r = d.reserve(&base, reserved, gran, 0, 0);
        if (r != CUDA_SUCCESS) return note(r, "cuMemAddressReserve");
        r = d.create(&handle, mapped, &prop, 0);
        if (r == CUDA_ERROR_OUT_OF_MEMORY) {
            std::fprintf(stderr, "CUDA error cudaErrorMemoryAllocation (out of memory) allocating %zu bytes\n", bytes);
            std::exit(3);
        }
        if (r != CUDA_SUCCESS) {
            d.address_free(base, reserved);
            return note(r, "cuMemCreate");
        }
        BEAVER_GUARD_DRV(d.map(base, mapped, 0, handle, 0));
        CUmemAccessDesc access = {};
        access.location = prop.location;
        access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
        BEAVER_GUARD_DRV(d.set_access(base, mapped, &access, 1));
        ptr = reinterpret_cast<T*>(base + (mapped - padded));
        return true;
    }
    static bool note(CUresult r, const char* what) {
        std::fprintf(stderr, "note: %s failed (%d); this buffer is not guard-paged\n", what, static_cast<int>(r));
        return false;
    }
    GuardedBuffer(const GuardedBuffer&) = delete;
    GuardedBuffer& operator=(const GuardedBuffer&) = delete;

    void upload(const std::vector<T>& h) {
        BEAVER_CHECK(cudaMemcpy(ptr, h.data(), n * sizeof(T), cudaMemcpyHostToDevice));
    }
    std::vector<T> download() const {
        std::vector<T> h(n);
        BEAVER_CHECK(cudaMemcpy(h.data(), ptr, n * sizeof(T), cudaMemcpyDeviceToHost));
        return h;
    }
    // 0xFF bytes: NaN for float/half/bf16, -1 for ints (as beaver::DeviceBuffer::poison).
    void poison() { BEAVER_CHECK(cudaMemset(ptr, 0xFF, n * sizeof(T))); }
    size_t bytes() const { return n * sizeof(T); }
};

// ------------------------------------------------------------------ seeded fills on the device

__host__ __device__ inline uint64_t splitmix64(uint64_t z) {
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// Uniform in [lo, hi) from (seed, index); 24 random bits.
__host__ __device__ inline float hash_uniform(uint64_t seed, uint64_t i, float lo, float hi) {
    uint64_t z = splitmix64(seed ^ splitmix64(i));
    float u = static_cast<float>(z >> 40) * (1.0f / 16777216.0f);
    return lo + (hi - lo) * u;
}

template <typename T>
__device__ inline T from_float(float x);
template <>
__device__ inline float from_float<float>(float x) { return x; }
template <>
__device__ inline __half from_float<__half>(float x) { return __float2half_rn(x); }
template <>
__device__ inline __nv_bfloat16 from_float<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

__host__ __device__ inline float to_float(float x) { return x; }
__device__ inline float to_float(__half x) { return __half2float(x); }
__device__ inline float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename T>
__global__ void fill_uniform_kernel(T* out, size_t n, uint64_t seed, float lo, float hi) {
    size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
    for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
        out[i] = from_float<T>(hash_uniform(seed, i, lo, hi));
}

// Fill n elements with uniform values in [lo, hi) derived from seed (asynchronous on the stream).
template <typename T>
inline void fill_uniform_device(T* out, size_t n, uint64_t seed, float lo = -1.f, float hi = 1.f,
                                cudaStream_t s = 0) {
    int blocks = static_cast<int>((n + 255) / 256);
    if (blocks > 132 * 16) blocks = 132 * 16;
    if (blocks < 1) blocks = 1;
    fill_uniform_kernel<T><<<blocks, 256, 0, s>>>(out, n, seed, lo, hi);
    BEAVER_CHECK(cudaGetLastError());
}

}  // namespace beaver_guard
