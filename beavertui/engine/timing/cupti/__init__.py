"""Build and use the CUPTI injection library that times the kernels of an unmodified test command.

The C source lives beside this file; it is compiled on first use with gcc against the CUPTI of the
CUDA toolkit that nvcc belongs to, into a cache dir keyed by source and toolkit. Running the command
and computing statistics is timing.py's job; this module only builds the library and parses its file.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

from beavertui.engine.errors import BeaverError
from beavertui.engine.host.gpu import cuda_root
from beavertui.engine.paths import cache_dir

SOURCE = Path(__file__).with_name("beaver_cupti.c")


def cupti_paths(root: Path) -> tuple[Path, Path] | None:
    """(include dir, lib dir) of CUPTI under a toolkit root, or None."""
    for inc, lib in (
        (root / "targets" / "x86_64-linux" / "include", root / "targets" / "x86_64-linux" / "lib"),
        (root / "include", root / "lib64"),
        (root / "include", root / "lib"),
        (root / "extras" / "CUPTI" / "include", root / "extras" / "CUPTI" / "lib64"),
    ):
        if (inc / "cupti.h").is_file() and any(lib.glob("libcupti.so*")):
            return inc, lib
    return None


#: One build at a time in this process (the batch's sessions share one temporary name per process).
_BUILD_LOCK = threading.Lock()


def build_library(cache: Path | None = None) -> Path:
    """The injection library, compiled on first use; raises BeaverError when CUPTI is unavailable."""
    with _BUILD_LOCK:
        return _build_library(cache)


def _build_library(cache: Path | None) -> Path:
    root = cuda_root()
    if root is None:
        raise BeaverError("CUPTI timing needs the CUDA toolkit (nvcc not found)")
    paths = cupti_paths(root)
    if paths is None:
        raise BeaverError(f"CUPTI headers or libcupti not found under {root}")
    inc, lib = paths
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        raise BeaverError("CUPTI timing needs a C compiler (gcc)")
    key = hashlib.sha256(SOURCE.read_bytes() + str(root.resolve()).encode()).hexdigest()[:16]
    out_dir = (cache or cache_dir()) / "cupti"
    out = out_dir / f"libbeavercupti-{key}.so"
    if out.is_file():
        return out
    out_dir.mkdir(parents=True, exist_ok=True)
    errors = []
    for version in (11, 10, 9):
        tmp = out.with_suffix(f".{os.getpid()}.tmp")
        cmd = [
            cc, "-shared", "-fPIC", "-O2", f"-DBEAVER_KERNEL_T=CUpti_ActivityKernel{version}",
            f"-I{inc}", str(SOURCE), f"-L{lib}", f"-Wl,-rpath,{lib}", "-lcupti", "-ldl", "-o", str(tmp),
        ]  # fmt: skip
        proc = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)
        if proc.returncode == 0:
            tmp.replace(out)
            return out
        errors.append(
            proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"rc {proc.returncode}"
        )
    raise BeaverError(f"cannot build the CUPTI injection library: {errors[-1]}")


@dataclass(frozen=True)
class KernelRecord:
    """One kernel execution seen by CUPTI."""

    name: str
    start_ns: int
    end_ns: int
    pid: int

    @property
    def ms(self) -> float:
        return (self.end_ns - self.start_ns) / 1e6


def parse(text: str) -> tuple[list[KernelRecord], list[str]]:
    """Kernel records and error/dropped lines of an injection output file."""
    recs: list[KernelRecord] = []
    problems: list[str] = []
    for line in text.splitlines():
        parts = line.split("\t")
        if parts[0] == "K" and len(parts) >= 5:
            try:
                recs.append(KernelRecord(parts[4], int(parts[1]), int(parts[2]), int(parts[3])))
            except ValueError:
                problems.append(line)
        elif parts[0] in ("E", "D"):
            problems.append(line)
    return recs, problems


#: ``0``: the library records no kernels (the gate and the phase marks only).
ACTIVITY_ENV = "BEAVER_CUPTI_ACTIVITY"


def marks(text: str) -> dict[str, int]:
    """The phase marks of an injection output file: ``init``, ``gate``, ``go``, ``exit`` -> monotonic ns
    (the clock of time.monotonic()); the first of each."""
    found: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split("\t")
        if parts[0] == "M" and len(parts) >= 3 and parts[1] not in found:
            try:
                found[parts[1]] = int(parts[2])
            except ValueError:
                continue
    return found


def clock_offset_ns(text: str) -> int | None:
    """Monotonic ns minus CUPTI ns, from the first clock line of an injection output file (``C``: the CUPTI
    timestamp and the monotonic time read beside it): what places a kernel record among the marks. None
    where the file has none (kernels not recorded, or a library from before the clock line)."""
    for line in text.splitlines():
        parts = line.split("\t")
        if parts[0] == "C" and len(parts) >= 3:
            try:
                return int(parts[2]) - int(parts[1])
            except ValueError:
                continue
    return None


def lock_counts(text: str) -> tuple[int, int, int] | None:
    """The kernel lock's line of an injection output file (``L``, written at exit when BEAVER_KERNEL_LOCK was
    set): (calls held, ns waiting for the lock, ns holding it); None where the file has none."""
    for line in text.splitlines():
        parts = line.split("\t")
        if parts[0] == "L" and len(parts) >= 4:
            try:
                return int(parts[1]), int(parts[2]), int(parts[3])
            except ValueError:
                continue
    return None


def busy_ns(recs: list[KernelRecord]) -> int:
    """How long at least one of the kernels ran: the length of the union of their intervals, in ns."""
    total, end = 0, None
    for r in sorted(recs, key=lambda r: r.start_ns):
        if end is None or r.start_ns > end:
            total += r.end_ns - r.start_ns
            end = r.end_ns
        elif r.end_ns > end:
            total += r.end_ns - end
            end = r.end_ns
    return total


def gate_environment(folder: Path, limit_s: float) -> dict[str, str]:
    """Variables that park the process in the library, before CUDA makes a context, until a file ``go``
    exists in ``folder`` (gate_file); it exits with status 97 when that has not happened within ``limit_s``
    seconds. A folder, made before the process starts: a sandbox keeps the paths the environment names, so
    the process sees the file made later inside it."""
    return {"BEAVER_GATE": str(folder), "BEAVER_GATE_S": f"{limit_s:g}"}


def gate_file(folder: Path) -> Path:
    """The file whose appearance lets a process parked by gate_environment(folder) go on."""
    return folder / "go"


def environment(library: Path, out_file: Path) -> dict[str, str]:
    """Variables that make a CUDA process load the library and write to ``out_file``."""
    return {"CUDA_INJECTION64_PATH": str(library), "BEAVER_CUPTI_OUT": str(out_file)}
