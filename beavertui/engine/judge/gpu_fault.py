"""Whose failure a failed run is: the candidate's, or the GPU's.

Every mode asks this of every GPU run whose log shows a failure (the correctness run, and a timing run that
failed): ``live``, ``check``, ``branch``, ``batch`` and ``corpus validate`` alike (toolchain/local.py).

- A log that says the GPU itself is gone or broken (evidence.py ``GPU_LOST``: no device, the driver
  insufficient, fallen off the bus, an uncorrectable ECC error, busy or unavailable) is the GPU's failure:
  the machine's GPU was seen when the session started (every mode that runs on one asks for it first), and no
  candidate makes it vanish. On a machine with no GPU at all, the toolchain does not ask: the log is the
  machine's lack (``environment_dependency``).
- A sticky CUDA error (evidence.py ``STICKY``: an illegal memory access, an unspecified launch failure...)
  leaves the process's context unusable and comes from the candidate or from a failing GPU. A known-good
  probe kernel then runs on the same GPU: if it fails too, the GPU is to blame; if it passes, or no probe
  can be built here, the candidate is (it is never blamed on a guess, nor is the GPU).
- Anything else is the candidate's.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Mapping

from beavertui.engine.judge.evidence import GPU_LOST, STICKY, out_of_memory


def _first_line(log: str, patterns: list[re.Pattern[str]], default: str) -> str:
    return next((ln.strip() for ln in log.splitlines() if any(p.search(ln) for p in patterns)), default)[:200]


def gpu_lost(log: str) -> str | None:
    """The line of ``log`` that says the GPU is gone or broken, or None."""
    if not any(p.search(log) for p in GPU_LOST):
        return None
    return _first_line(log, GPU_LOST, "GPU failure")


def sticky_error(log: str) -> str | None:
    """The line of ``log`` with a sticky CUDA error (the candidate's or the GPU's), or None."""
    if not any(p.search(log) for p in STICKY):
        return None
    return _first_line(log, STICKY, "sticky CUDA error")


def oom_line(log: str) -> str:
    """The first line of a log that says the GPU ran out of memory (for the note of a run made again)."""
    line = next((ln.strip() for ln in log.splitlines() if out_of_memory(ln)), "out of memory")
    return line[:200]


def gpu_fault(log: str, env: Mapping[str, str] | None, probe: GpuProbe) -> str | None:
    """Why a run's failure is the GPU's (one line), or None when the GPU is not to blame. ``env``: the run's
    environment (its ``CUDA_VISIBLE_DEVICES`` names the GPU the probe runs on)."""
    lost = gpu_lost(log)
    if lost is not None:
        return lost
    sticky = sticky_error(log)
    if sticky is None:
        return None
    why = probe.check(env)
    if why is None:
        return None
    return f"{sticky}; a known-good probe kernel then failed on it too: {why}"


_PROBE_CU = r"""
#include <cstdio>
__global__ void fill(int* a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] = 2 * i + 1;
}
static int fail(const char* what, cudaError_t e) {
    std::printf("%s: %s\n", what, cudaGetErrorString(e));
    return 1;
}
int main() {
    const int n = 1 << 20;
    static int h[1 << 20];
    int* d = nullptr;
    cudaError_t e = cudaMalloc(&d, n * sizeof(int));
    if (e != cudaSuccess) return fail("cudaMalloc", e);
    fill<<<(n + 255) / 256, 256>>>(d, n);
    if ((e = cudaDeviceSynchronize()) != cudaSuccess) return fail("kernel", e);
    if ((e = cudaMemcpy(h, d, n * sizeof(int), cudaMemcpyDeviceToHost)) != cudaSuccess) return fail("copy", e);
    for (int i = 0; i < n; ++i)
        if (h[i] != 2 * i + 1) { std::printf("wrong value at %d\n", i); return 1; }
    std::printf("probe ok\n");
    return 0;
}
"""


_PROBE_LOCK = threading.Lock()
_PROBE_DIRS: dict[str, str] = {}


class GpuProbe:
    """A known-good kernel run on one GPU: None when it passes, else why it failed (one line).

    Built once per process with nvcc (no ``-arch``: PTX for the toolkit's default, JIT-compiled for any newer
    GPU); ``command`` replaces it (a tool of the site's own, or a test's stand-in). ``runs`` counts its runs.
    """

    def __init__(self, command: list[str] | None = None, timeout_s: float = 60.0) -> None:
        self.command = command
        self.timeout_s = timeout_s
        self.runs = 0

    def _built(self) -> list[str] | str:
        with _PROBE_LOCK:  # one build per process, shared by every toolchain in it
            if self.command is not None:
                return self.command
            nvcc = shutil.which("nvcc")
            if nvcc is None:
                return "nvcc not found, cannot build the probe kernel"
            if nvcc not in _PROBE_DIRS:
                _PROBE_DIRS[nvcc] = tempfile.mkdtemp(prefix="beavertui-probe-")
            exe = os.path.join(_PROBE_DIRS[nvcc], "probe")
            if not os.path.exists(exe):
                src = os.path.join(_PROBE_DIRS[nvcc], "probe.cu")
                with open(src, "w", encoding="utf-8") as fh:
                    fh.write(_PROBE_CU)
                try:
                    out = subprocess.run(
                        [nvcc, "-O2", "-o", exe, src], capture_output=True, text=True, timeout=300
                    )
                except (OSError, subprocess.TimeoutExpired) as exc:
                    return f"the probe kernel did not build: {exc}"
                if out.returncode != 0:
                    return "the probe kernel did not build: " + _one_line(out.stderr or out.stdout)
            self.command = [exe]
            return self.command

    def check(self, env: Mapping[str, str] | None) -> str | None:
        cmd = self._built()
        if isinstance(cmd, str):
            return None  # no probe available: the verdict stands (the candidate is not blamed on a guess)
        self.runs += 1
        try:
            out = subprocess.run(
                cmd,
                capture_output=True,
                text=True,
                timeout=self.timeout_s,
                env=dict(env) if env is not None else None,
                stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired:
            return f"the probe kernel did not finish within {self.timeout_s:g} s"
        except OSError as exc:
            return f"the probe kernel did not start: {exc}"
        if out.returncode == 0:
            return None
        return _one_line(out.stdout + out.stderr) or f"the probe kernel exited with {out.returncode}"


def _one_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return (lines[-1] if lines else "")[:200]
