"""What this machine has: the GPU signature of docs/metrics.md (speedup), the CUDA toolkit, torch, and arch families.

Probes use nvidia-smi and nvcc only (never torch or the CUDA runtime in this process), each once per
process. Nothing here builds or runs a candidate.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from beavertui.engine.session.events import GpuSignature


@dataclass(frozen=True)
class Machine:
    """What the local machine offers to tasks."""

    gpu: GpuSignature | None
    """The first visible GPU, or None."""
    nvcc: str | None
    """Path of nvcc, or None."""
    cuda: str | None
    """Toolkit version from ``nvcc --version``, e.g. ``13.0``."""
    torch: bool
    """torch is importable by the current interpreter."""

    @property
    def sm(self) -> int | None:
        """Compute capability as an integer (9.0 -> 90)."""
        if self.gpu is None:
            return None
        major, _, minor = self.gpu.compute_capability.partition(".")
        return int(major) * 10 + int(minor or 0)


def _run(cmd: list[str], timeout: float = 30.0) -> str | None:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout if out.returncode == 0 else None


@cache
def nvcc_version() -> str | None:
    """``major.minor`` of the nvcc on PATH, or None."""
    if shutil.which("nvcc") is None:
        return None
    out = _run(["nvcc", "--version"])
    m = re.search(r"release (\d+)\.(\d+)", out or "")
    return f"{m.group(1)}.{m.group(2)}" if m else None


def slug(name: str) -> str:
    """Lower-case GPU name with runs of other characters folded to ``_``."""
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def signature_slug(name: str, compute_capability: str, cuda: str) -> str:
    """``<gpu name slug>_sm_<major><minor>_cuda_<major>_<minor>`` (docs/metrics.md (speedup))."""
    major, _, minor = compute_capability.partition(".")
    cmaj, _, cmin = cuda.partition(".")
    return f"{slug(name)}_sm_{major}{minor or 0}_cuda_{cmaj or 0}_{cmin or 0}"


def parse_smi(line: str, cuda: str) -> GpuSignature:
    """Parse one ``name, compute_cap, driver_version`` CSV line of nvidia-smi."""
    parts = [p.strip() for p in line.split(",")]
    if len(parts) < 3:
        raise ValueError(f"unexpected nvidia-smi line: {line!r}")
    name, cc, driver = parts[0], parts[1], parts[2]
    return GpuSignature(
        slug=signature_slug(name, cc, cuda), name=name, compute_capability=cc, driver=driver, cuda=cuda
    )


def _first_visible(fields: str, *options: str) -> str | None:
    """nvidia-smi's line of ``fields`` for the first visible GPU (the one index CUDA_VISIBLE_DEVICES names,
    when it names one); None when nvidia-smi is missing or says nothing."""
    if shutil.which("nvidia-smi") is None:
        return None
    cmd = ["nvidia-smi", f"--query-gpu={fields}", *options]
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").strip()
    if visible.isdigit():
        cmd.append(f"--id={visible}")
    out = _run(cmd)
    return out.strip().splitlines()[0].strip() if out and out.strip() else None


@cache
def gpu_signature() -> GpuSignature | None:
    """Signature of the first visible GPU (honours CUDA_VISIBLE_DEVICES when it is one index)."""
    line = _first_visible("name,compute_cap,driver_version", "--format=csv,noheader")
    if line is None:
        return None
    try:
        return parse_smi(line, nvcc_version() or "0.0")
    except ValueError:
        return None


def memory_total_bytes() -> int | None:
    """The total memory of the first visible GPU (as gpu_signature picks it), bytes, as nvidia-smi reports
    it (``memory.total``, MiB); None when nvidia-smi cannot tell."""
    line = _first_visible("memory.total", "--format=csv,noheader,nounits")
    return int(line) << 20 if line is not None and line.isdigit() else None


def clocks() -> str:
    """Current SM and memory clocks as nvidia-smi reports them (recorded with every timing)."""
    out = _run(["nvidia-smi", "--query-gpu=clocks.sm,clocks.mem,temperature.gpu", "--format=csv,noheader"])
    return out.strip().splitlines()[0] if out and out.strip() else ""


def utilization(index: str) -> int | None:
    """The share of nvidia-smi's last sample period (1/6 s to 1 s) in which GPU ``index`` ran a kernel,
    percent; None when nvidia-smi cannot tell."""
    out = _run(["nvidia-smi", "-i", index, "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits"])
    first = out.strip().splitlines()[0].strip() if out and out.strip() else ""
    return int(first) if first.isdigit() else None


def wait_idle(index: str, max_s: float = 30.0, poll_s: float = 0.25) -> float | None:
    """Wait until GPU ``index`` runs no kernel: two readings of its utilization in a row at 0 %. The seconds
    waited; None when nvidia-smi cannot tell, or the GPU was still running kernels after ``max_s``."""
    began = time.monotonic()
    zeros = 0
    while True:
        seen = utilization(index)
        if seen is None:
            return None
        zeros = zeros + 1 if seen == 0 else 0
        if zeros >= 2:
            return time.monotonic() - began
        if time.monotonic() - began >= max_s:
            return None
        time.sleep(poll_s)


@cache
def visible_gpus(spec: str | None = None) -> list[str]:
    """GPU indices to use: ``spec`` ("0,1"), else ``CUDA_VISIBLE_DEVICES``, else every GPU nvidia-smi lists."""
    if spec:
        return [g.strip() for g in spec.split(",") if g.strip()]
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None:
        return [g.strip() for g in env.split(",") if g.strip() and g.strip() != "-1"]
    out = _run(["nvidia-smi", "-L"])
    return [str(i) for i, ln in enumerate((out or "").splitlines()) if ln.startswith("GPU ")]


def probe() -> Machine:
    """Probe this machine once."""
    nvcc = shutil.which("nvcc")
    return Machine(
        gpu=gpu_signature(),
        nvcc=nvcc,
        cuda=nvcc_version(),
        torch=importlib.util.find_spec("torch") is not None,
    )


#: Architecture family names used by the release's ``set_gpu_arch([...])``, by compute capability major.
_FAMILIES = {7: "Volta", 8: "Ampere", 9: "Hopper", 10: "Blackwell", 12: "Blackwell"}


def arch_family(sm: int) -> str:
    """KernelBench architecture family of a compute capability (86 -> Ampere, 89 -> Ada)."""
    if sm == 75:
        return "Turing"
    if sm == 89:
        return "Ada"
    return _FAMILIES.get(sm // 10, "Hopper")


def tk_gpu(sm: int) -> str:
    """ThunderKittens ``make GPU=...`` name of a compute capability."""
    if sm >= 120:
        return "RTX5070"
    if sm >= 100:
        return "B200"
    if sm >= 90:
        return "H100"
    if sm == 89:
        return "4090"
    return "A100"


def cuda_root() -> Path | None:
    """The CUDA toolkit folder: $CUDA_HOME, the folder above nvcc's bin/, or /usr/local/cuda."""
    candidates: list[Path] = []
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            candidates.append(Path(os.environ[var]))
    nvcc = shutil.which("nvcc")
    if nvcc:
        real = Path(nvcc).resolve()
        candidates.append(real.parent.parent)
        try:  # a wrapper script: `exec /usr/local/cuda-X/bin/nvcc "$@"`
            m = re.search(r"(/\S+)/bin/nvcc", real.read_text(errors="replace")[:2000])
            if m:
                candidates.append(Path(m.group(1)))
        except OSError:
            pass
    candidates.append(Path("/usr/local/cuda"))
    for c in candidates:
        headers = (
            c / "include" / "cuda_runtime.h",
            c / "targets" / "x86_64-linux" / "include" / "cuda_runtime.h",
        )
        if (c / "bin" / "nvcc").exists() and any(h.is_file() for h in headers):
            return c
    return None
