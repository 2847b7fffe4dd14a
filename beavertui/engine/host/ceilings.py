"""Measured hardware ceilings of this GPU: device copy bandwidth and the bf16 tensor-core rate.

Achieved throughput of a reference is only meaningful next to what the GPU can do, so `corpus
validate` reports it as a fraction of these. Copy bandwidth comes from a small CUDA program built with
nvcc; the bf16 rate from a torch matrix product when torch is importable. Both are cached per GPU
signature in the user cache. Nothing here classifies or times candidates.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

from pydantic import BaseModel, ValidationError

from beavertui.engine.fileio import write_atomic
from beavertui.engine.paths import cache_dir
from beavertui.engine.session.events import GpuSignature

COPY_CU = r"""
#include <cstdio>
#include <cuda_runtime.h>
__global__ void copy4(const float4* __restrict__ a, float4* __restrict__ b, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        b[i] = a[i];
}
int main() {
    const size_t bytes = 1ull << 31, n = bytes / sizeof(float4);
    float4 *a, *b;
    if (cudaMalloc(&a, bytes) != cudaSuccess || cudaMalloc(&b, bytes) != cudaSuccess) { std::printf("alloc failed\n"); return 1; }
    cudaMemset(a, 1, bytes);
    int sms = 0; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    cudaEvent_t s, e; cudaEventCreate(&s); cudaEventCreate(&e);
    float best = 1e30f;
    for (int r = 0; r < 12; ++r) {
        cudaEventRecord(s);
        copy4<<<sms * 8, 512>>>(a, b, n);
        cudaEventRecord(e); cudaEventSynchronize(e);
        float ms; cudaEventElapsedTime(&ms, s, e);
        if (r >= 2 && ms < best) best = ms;
    }
    std::printf("COPY_GBPS %.1f\n", 2.0 * bytes / (best * 1e-3) / 1e9);
    return 0;
}
"""

BF16_PY = """
import torch
n = 8192
a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
for _ in range(3):
    a @ b
torch.cuda.synchronize()
s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
best = 1e30
for _ in range(10):
    s.record(); a @ b; e.record(); e.synchronize()
    best = min(best, s.elapsed_time(e))
print(f"BF16_TFLOPS {2 * n**3 / (best * 1e-3) / 1e12:.1f}")
"""


class Ceilings(BaseModel):
    """What this GPU reaches on simple streaming and tensor-core work."""

    gpu: GpuSignature
    """Where it was measured."""
    copy_gbps: float | None = None
    """Device-to-device copy, GB/s counting bytes read and written (best of 10 runs, 2 GiB buffers)."""
    bf16_tflops: float | None = None
    """bf16 8192^3 matrix product through torch, TFLOP/s (best of 10), None without torch."""
    notes: list[str] = []
    """Why a ceiling is missing."""


def _path(gpu: GpuSignature, cache: Path | None) -> Path:
    return (cache or cache_dir()) / "ceilings" / f"{gpu.slug}.json"


def cached(gpu: GpuSignature, cache: Path | None = None) -> Ceilings | None:
    """The stored ceilings of ``gpu`` without measuring, or None."""
    p = _path(gpu, cache)
    try:
        return Ceilings.model_validate_json(p.read_text()) if p.is_file() else None
    except (OSError, ValidationError):
        return None


def floor_ms(ceilings: Ceilings, flop: float | None, nbytes: float | None) -> float | None:
    """The least time one call can take: its bytes at copy bandwidth, its FLOPs at the bf16 rate."""
    floors = []
    if nbytes and ceilings.copy_gbps:
        floors.append(nbytes / (ceilings.copy_gbps * 1e9) * 1e3)
    if flop and ceilings.bf16_tflops:
        floors.append(flop / (ceilings.bf16_tflops * 1e12) * 1e3)
    return max(floors) if floors else None


def measure(gpu: GpuSignature, cache: Path | None = None, torch_ok: bool = True) -> Ceilings:
    """Cached ceilings of ``gpu``; measured on first use."""
    p = _path(gpu, cache)
    if p.is_file():
        try:
            return Ceilings.model_validate_json(p.read_text())
        except (OSError, ValidationError):
            pass
    notes: list[str] = []
    copy = None
    with tempfile.TemporaryDirectory(prefix="beaver-ceiling-") as d:
        src = Path(d) / "copy.cu"
        src.write_text(COPY_CU)
        try:
            subprocess.run(["nvcc", "-O2", "-arch=native", "-o", str(Path(d) / "copy"), str(src)],
                           capture_output=True, text=True, timeout=180, check=True)  # fmt: skip
            out = subprocess.run([str(Path(d) / "copy")], capture_output=True, text=True, timeout=120).stdout
            m = re.search(r"COPY_GBPS ([\d.]+)", out)
            copy = float(m.group(1)) if m else None
            if copy is None:
                notes.append(f"copy program printed no result: {out.strip()[:100]}")
        except (OSError, subprocess.SubprocessError) as exc:
            notes.append(f"copy bandwidth not measured: {exc}")
    tflops = None
    if torch_ok:
        try:
            proc = subprocess.run(
                [sys.executable, "-c", BF16_PY], capture_output=True, text=True, timeout=300
            )
            m = re.search(r"BF16_TFLOPS ([\d.]+)", proc.stdout)
            tflops = float(m.group(1)) if m else None
            if tflops is None:
                notes.append(f"bf16 rate not measured: {(proc.stderr or proc.stdout).strip()[-120:]}")
        except (OSError, subprocess.SubprocessError) as exc:
            notes.append(f"bf16 rate not measured: {exc}")
    else:
        notes.append("bf16 rate not measured: torch is not importable")
    result = Ceilings(gpu=gpu, copy_gbps=copy, bf16_tflops=tflops, notes=notes)
    if copy is not None:
        p.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(p, result.model_dump_json(indent=2) + "\n")
    return result
