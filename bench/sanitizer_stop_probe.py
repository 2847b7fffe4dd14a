"""Whether a compute-sanitizer run survives being stopped (SIGSTOP) and continued (SIGCONT) the way a batch stops
the runs on a GPU for a timing stage (sandbox.Started.pause and resume), stopped early (while the sanitizer
and the processes it checks connect) or later, with and without the sanitizer's own launch timeout raised.

    python3 bench/sanitizer_stop_probe.py [--out DIR] [--stop-for 15] [--limit 60] [--cases a,b,...]

On a GPU machine with nvcc, compute-sanitizer and torch (the Python target imports torch, as the release's
Python harnesses do). Every case runs at once, each in its own sandbox as a batch's sanitizer stage runs;
one line per case says how it ended, its duration (stops not counted, as a stage records it) and how long it
was stopped. ``--out`` keeps probe.json (every case's record and the last lines of its output).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from beavertui.engine.host import sandbox  # noqa: E402
from beavertui.engine.judge import sanitizer  # noqa: E402

KERNEL = r"""
#include <cstdio>
__global__ void fill(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] = 2.0f * i; }
int main() {
  const int n = 1 << 20; float* x; cudaMalloc(&x, n * sizeof(float));
  fill<<<(n + 255) / 256, 256>>>(x, n); cudaError_t e = cudaDeviceSynchronize();
  printf("native: %s\n", cudaGetErrorString(e)); cudaFree(x); return e == cudaSuccess ? 0 : 1;
}
"""

PYTHON = "import torch; x = torch.ones(1 << 20, device='cuda'); print('python:', float(x.sum()))"

#: A Python target that starts processes for its first 6 s (as the release's applied runner does while it
#: builds: ps, ninja), then runs one kernel through torch.
FORKING = (
    "import subprocess, time; t = time.time()\n"
    "while time.time() - t < 6: subprocess.run(['ps', '-eo', 'pid='], stdout=subprocess.DEVNULL)\n"
    "import torch; x = torch.ones(1 << 20, device='cuda'); print('forking:', float(x.sum()))"
)


@dataclass(frozen=True)
class Case:
    name: str
    target: str  # native, python or forking
    stop_at: float | None  # seconds after the start (None: never stopped)
    launch_timeout: int | None  # compute-sanitizer --launch-timeout (None: its default)


CASES = [
    Case("native", "native", None, None),
    Case("native-stop-early", "native", 0.1, None),
    Case("native-stop-early-lt0", "native", 0.1, 0),
    Case("python", "python", None, None),
    Case("python-stop-early", "python", 0.5, None),
    Case("python-stop-early-lt0", "python", 0.5, 0),
    Case("python-stop-3s", "python", 3.0, None),
    Case("python-stop-3s-lt0", "python", 3.0, 0),
    Case("forking", "forking", None, None),
    *(Case(f"forking-stop-{t:g}s", "forking", t, None) for t in (1.0, 2.0, 3.0, 4.0)),
    *(Case(f"forking-stop-{t:g}s-lt0", "forking", t, 0) for t in (1.0, 2.0, 3.0, 4.0)),
]


def _command(case: Case, folder: Path) -> str:
    extra = () if case.launch_timeout is None else ("--launch-timeout", str(case.launch_timeout))
    if case.target == "native":
        test = "./probe"
    else:  # a script file: the test is one simple command, run through bash as a harness's would be
        (folder / f"{case.name}.py").write_text(PYTHON if case.target == "python" else FORKING)
        test = f"{sys.executable} {case.name}.py"
    return sanitizer.wrap(test, "memcheck", extra=extra)


def _one(case: Case, work: Path, stop_for: float, limit: float, out: dict[str, object]) -> None:
    cmd = _command(case, work)
    began = time.monotonic()
    proc = sandbox.start(cmd, work, dict(os.environ), limit)
    stopped = False
    if case.stop_at is not None:
        time.sleep(case.stop_at)
        stopped = proc.pause()
        time.sleep(stop_for)
        proc.resume()
    res = proc.finish()
    tail = res.log.strip().splitlines()[-6:]
    out[case.name] = {
        "command": cmd,
        "stop_at_s": case.stop_at,
        "stopped": stopped,
        "launch_timeout": case.launch_timeout,
        "rc": res.rc,
        "timed_out": res.timed_out,
        "duration_s": round(res.duration_s, 2),
        "paused_s": res.paused_s,
        "wall_s": round(time.monotonic() - began, 2),
        "tail": tail,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=None, help="folder for probe.json")
    ap.add_argument("--stop-for", type=float, default=15.0, help="seconds each stopped case stays stopped")
    ap.add_argument("--limit", type=float, default=60.0, help="each run's time limit, stops not counted (s)")
    ap.add_argument("--cases", default="", help="comma-separated case names (default: all)")
    args = ap.parse_args(argv)
    if shutil.which("compute-sanitizer") is None or shutil.which("nvcc") is None:
        print("sanitizer_stop_probe: needs compute-sanitizer and nvcc on PATH", file=sys.stderr)
        return 2
    chosen = [c for c in CASES if not args.cases or c.name in args.cases.split(",")]
    work = Path(tempfile.mkdtemp(prefix="beaver-sanprobe-"))
    (work / "probe.cu").write_text(KERNEL)
    subprocess.run(["nvcc", "-o", str(work / "probe"), str(work / "probe.cu")], check=True)
    got: dict[str, object] = {}
    threads = [
        threading.Thread(target=_one, args=(c, work, args.stop_for, args.limit, got), daemon=True)
        for c in chosen
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for c in chosen:
        r = got.get(c.name)
        if not isinstance(r, dict):
            print(f"{c.name:24} no record")
            continue
        end = "timed out" if r["timed_out"] else f"exit {r['rc']}"
        stop = "" if c.stop_at is None else f", stopped at {c.stop_at:g} s for {r['paused_s']} s"
        lt = "" if c.launch_timeout is None else f", --launch-timeout {c.launch_timeout}"
        print(f"{c.name:24} {end:9} in {r['duration_s']:7.2f} s{stop}{lt}")
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "probe.json").write_text(json.dumps(got, indent=1))
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
