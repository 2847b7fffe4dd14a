"""Static degeneration features on small but realistic kernels: tiled, tensor-core, async-copy and naive."""

from __future__ import annotations

import pytest

from beavertui.engine.analysis.degeneration import compare, degeneration, runtime_geometry
from beavertui.engine.code.features import extract, launches, strip_source

TILED = r"""
#include <cuda_runtime.h>
#define TILE 16

// C = A * B, row-major, n x n; one 16x16 tile of C per block.
__global__ void sgemm_tiled(const float* __restrict__ A, const float* __restrict__ B, float* C, int n) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.f;
    for (int t = 0; t < n / TILE; ++t) {
        As[threadIdx.y][threadIdx.x] = A[row * n + t * TILE + threadIdx.x];
        Bs[threadIdx.y][threadIdx.x] = B[(t * TILE + threadIdx.y) * n + col];
        __syncthreads();
        #pragma unroll
        for (int k = 0; k < TILE; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    C[row * n + col] = acc;
}

void launch(const float* A, const float* B, float* C, int n, cudaStream_t s) {
    dim3 block(TILE, TILE);
    dim3 grid(n / TILE, n / TILE);
    sgemm_tiled<<<grid, block, 0, s>>>(A, B, C, n);
}
"""

NAIVE = r"""
#include <cuda_runtime.h>
/* A tiled version would use __shared__ memory and __syncthreads(); this one does not. */
__global__ void sgemm_tiled(const float* A, const float* B, float* C, int n) {
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= n || col >= n) return;
    float acc = 0.f;
    for (int k = 0; k < n; ++k) acc += A[row * n + k] * B[k * n + col];
    C[row * n + col] = acc;
    printf("__shfl_down_sync float4* cp.async\n");
}

void launch(const float* A, const float* B, float* C, int n, cudaStream_t s) {
    dim3 block(16, 16);
    dim3 grid((n + 15) / 16, (n + 15) / 16);
    sgemm_tiled<<<grid, block, 0, s>>>(A, B, C, n);
}
"""

WMMA = r"""
#include <mma.h>
using namespace nvcuda;
__global__ void hgemm_wmma(const half* A, const half* B, float* C, int n) {
    int warp_m = (blockIdx.y * blockDim.y + threadIdx.y) * 16;
    int warp_n = (blockIdx.x * blockDim.x + threadIdx.x) / 32 * 16;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;
    wmma::fill_fragment(c, 0.0f);
    for (int k = 0; k < n; k += 16) {
        wmma::load_matrix_sync(a, A + warp_m * n + k, n);
        wmma::load_matrix_sync(b, B + warp_n * n + k, n);
        wmma::mma_sync(c, a, b, c);
    }
    wmma::store_matrix_sync(C + warp_m * n + warp_n, c, n, wmma::mem_row_major);
}
"""

PTX = r"""
__global__ void hgemm_ptx(const half* __restrict__ A, const half* __restrict__ B, float* C, int n) {
    extern __shared__ __align__(16) half smem[];
    unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem + threadIdx.x * 8));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" :: "r"(s), "l"(A + threadIdx.x * 8));
    asm volatile("cp.async.wait_all;\n" ::);
    __syncthreads();
    unsigned a0, a1, a2, a3;
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(a0), "=r"(a1), "=r"(a2), "=r"(a3) : "r"(s));
    float d0 = 0, d1 = 0, d2 = 0, d3 = 0;
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3) : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(a0), "r"(a1));
    reinterpret_cast<float4*>(C)[blockIdx.x * blockDim.x + threadIdx.x] = make_float4(d0, d1, d2, d3);
}
"""

REDUCE = r"""
__global__ void row_sum(const float* __restrict__ x, float* out, int cols) {
    float v = 0.f;
    const float4* row = reinterpret_cast<const float4*>(x + blockIdx.x * cols);
    for (int i = threadIdx.x; i < cols / 4; i += 32) { float4 q = row[i]; v += q.x + q.y + q.z + q.w; }
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffff, v, off);
    if (threadIdx.x == 0) out[blockIdx.x] = v;
}
"""

CUBLAS = r"""
#include <cublas_v2.h>
void launch(const float* A, const float* B, float* C, int n, cudaStream_t s) {
    static cublasHandle_t h = nullptr;
    if (!h) cublasCreate(&h);
    cublasSetStream(h, s);
    const float one = 1.f, zero = 0.f;
    cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, B, n, A, n, &zero, C, n);
}
"""

TORCH = r"""
#include <torch/extension.h>
torch::Tensor forward(torch::Tensor a, torch::Tensor b) {
    auto out = torch::empty({a.size(0), b.size(1)}, a.options());
    out.copy_(at::matmul(a, b));
    return out;
}
"""

SERIAL = NAIVE.replace("sgemm_tiled<<<grid, block, 0, s>>>", "sgemm_tiled<<<1, 1, 0, s>>>")


def test_comments_and_strings_are_stripped_but_asm_strings_kept() -> None:
    code, asm = strip_source(NAIVE)
    assert "__shared__" not in code and "__shfl_down_sync" not in code and "cp.async" not in code
    assert asm == ""
    code, asm = strip_source(PTX)
    assert "cp.async.cg.shared.global" in asm and "ldmatrix" in asm and "mma.sync" in asm
    assert "cp.async" not in code


def test_tiled_kernel_features() -> None:
    f = extract(TILED)
    assert f.present == {"shared_memory", "barriers", "kernel", "parallel_launch"}
    assert f.evidence["shared_memory"] == ("__shared__",)
    [launch] = f.launches
    assert (launch.grid_size, launch.block_threads) == (None, 256)


def test_naive_kernel_has_only_a_kernel_and_a_launch() -> None:
    assert extract(NAIVE).present == {"kernel", "parallel_launch"}


def test_tensor_core_and_async_kernels() -> None:
    assert extract(WMMA).present == {"tensor_cores", "kernel", "parallel_launch"}
    f = extract(PTX)
    assert f.present == {
        "shared_memory",
        "tensor_cores",
        "async_copy",
        "vector_loads",
        "barriers",
        "kernel",
        "parallel_launch",
    }
    assert "ldmatrix" in f.evidence["tensor_cores"]
    assert "mma.sync" in f.evidence["tensor_cores"]


def test_vector_loads_and_shuffles() -> None:
    f = extract(REDUCE)
    assert {"vector_loads", "warp_shuffle"} <= f.present
    assert "shared_memory" not in f.present and "barriers" not in f.present


def test_library_calls_and_torch_utilities() -> None:
    assert extract(CUBLAS).library_calls == ("cublasCreate", "cublasSetStream", "cublasSgemm")
    assert "kernel" not in extract(CUBLAS).present
    assert extract(TORCH).library_calls == ("at::matmul",)  # torch::empty and torch::Tensor are not ops


def test_static_launch_sizes_from_defines_and_literals() -> None:
    code, _ = strip_source(SERIAL)
    [launch] = launches(code)
    assert (launch.grid_size, launch.block_threads) == (1, 1)
    code, _ = strip_source(
        "#define BS 128\nconstexpr int G = 4;\nk<<<G * 2, BS>>>(x);\nk<<<dim3(2, 3), dim3(32, 4)>>>(x);"
    )
    assert [(x.grid_size, x.block_threads) for x in launches(code)] == [(8, 128), (6, 128)]


def test_naive_repair_of_tiled_reference_is_degenerate() -> None:
    broken = TILED.replace("t < n / TILE", "t <= n / TILE")
    lost, degenerate = degeneration(NAIVE, broken, TILED)
    assert lost == ["shared_memory", "barriers"]
    assert degenerate is True
    result = compare(NAIVE, broken, TILED)
    assert result.removed == ("shared_memory", "barriers")


def test_faithful_repair_is_not_degenerate() -> None:
    broken = TILED.replace("t < n / TILE", "t <= n / TILE")
    assert degeneration(TILED, broken, TILED) == ([], False)


def test_lost_barrier_alone_is_reported_but_not_degenerate() -> None:
    racy = TILED.replace("        __syncthreads();\n    }", "    }")
    assert degeneration(racy, TILED, TILED) == ([], False)  # one barrier is still there
    no_barriers = TILED.replace("__syncthreads();", ";")
    assert degeneration(no_barriers, TILED, TILED) == (["barriers"], False)


def test_tensor_core_reference_repaired_without_tensor_cores() -> None:
    lost, degenerate = degeneration(NAIVE, WMMA, WMMA)
    assert lost == ["tensor_cores"]
    assert degenerate


def test_library_substitution_and_deleted_kernel() -> None:
    lost, degenerate = degeneration(CUBLAS, TILED, TILED)
    assert lost == ["shared_memory", "parallel_launch", "barriers", "kernel", "library_substitution"]
    assert degenerate
    lost, degenerate = degeneration(TORCH, TILED, TILED)
    assert "library_substitution" in lost and "kernel" in lost and degenerate


def test_serial_launch_loses_parallelism() -> None:
    lost, degenerate = degeneration(SERIAL, NAIVE, NAIVE)
    assert (lost, degenerate) == (["parallel_launch"], True)


def test_runtime_geometry_overrides_the_static_reading() -> None:
    log = "OK C: 1048576 elements\nlaunch sgemm grid=(64,64,1) block=(16,16,1)\n"
    assert runtime_geometry(log) == [(4096, 256)]
    serial_log = runtime_geometry("grid: 1 block: 1")
    assert serial_log == [(1, 1)]
    result = compare(
        NAIVE, NAIVE, NAIVE, candidate_runtime=serial_log, reference_runtime=runtime_geometry(log)
    )
    assert result.lost == ("parallel_launch",) and result.degenerate
    # The candidate's printed geometry alone is enough; a parallel one changes nothing.
    assert compare(NAIVE, NAIVE, NAIVE, candidate_runtime=serial_log).lost == ("parallel_launch",)
    assert compare(NAIVE, NAIVE, NAIVE, candidate_runtime=runtime_geometry(log)).lost == ()


def test_missing_reference_falls_back_to_the_broken_start() -> None:
    assert degeneration(NAIVE, TILED, None) == (["shared_memory", "barriers"], True)


def test_dynamic_shared_memory_from_launch_or_attribute() -> None:
    assert "shared_memory" in extract("void f() { k<<<g, b, bytes, s>>>(x); }").present
    assert "shared_memory" not in extract("void f() { k<<<g, b, 0, s>>>(x); }").present
    attr = "cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, 98304);"
    assert "shared_memory" in extract(attr).present


def test_python_torch_ops_count_as_library_calls() -> None:
    src = "import torch\ndef forward(q, k, v):\n    return torch.nn.functional.scaled_dot_product_attention(q, k, v)\n"
    assert extract(src).library_calls == ("scaled_dot_product_attention",)
    assert extract("y = torch.empty_like(x)\n").library_calls == ()


def test_needles_of_patterns() -> None:
    from beavertui.engine.code import features

    scans = features._CODE_SCANS + features._ASM_SCANS
    assert sum(n is not None for _, _, n in scans) >= len(scans) - 4  # nearly every pattern has one
    assert features.needle(r"\bab?c") == "a" and features.needle(r"\b(?:x|yz)") is None
    assert features.needle(r"(?i)\bfoo") is None and features.needle(r"foo|bar") is None


def _with_needle() -> list[tuple[str, str]]:
    from beavertui.engine.code import features

    return [(p.pattern, n) for _, p, n in features._CODE_SCANS + features._ASM_SCANS if n is not None]


@pytest.mark.parametrize(("pattern", "needle"), _with_needle(), ids=lambda v: v[:24])
def test_every_match_of_a_feature_pattern_holds_its_needle(pattern: str, needle: str) -> None:
    """A pattern is skipped when its needle is absent from the text: every string the pattern matches,
    generated from the pattern itself, must contain the needle, so skipping never loses a match."""
    import re

    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    compiled = re.compile(pattern)

    @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.from_regex(compiled, alphabet=st.characters(codec="ascii")))
    def holds(text: str) -> None:
        m = compiled.search(text)
        assert m is not None and needle in m.group(0), text

    holds()


def test_features_are_the_same_with_and_without_the_needles() -> None:
    import re

    from beavertui.engine.code import features

    for source in (TILED, NAIVE, WMMA, PTX, REDUCE, CUBLAS, TORCH):
        code, asm = strip_source(source)
        full: dict[str, list[str]] = {}
        for scans, text in ((features._CODE_SCANS, code), (features._ASM_SCANS, asm)):
            for name, pattern, _ in scans:
                for m in re.finditer(pattern, text):
                    full.setdefault(name, []).append(m.group(0))
        got = extract(source)
        assert (
            set(full) | ({"parallel_launch"} & got.present) | ({"library_call"} & got.present) == got.present
        )
