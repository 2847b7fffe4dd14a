"""What a batch's builds do to the processes of a timing stage, on a GPU machine: the same small probes timed
with the machine idle and while N threads compile CUDA sources with nvcc, one build after another.

    python3 bench/load_probe.py [--threads 12] [--reps 15] [--out FILE]

The probes, each run ``--reps`` times per condition, in turn:
- ``cpu``: a fixed loop of Python arithmetic in this process (the cores' speed for one thread);
- ``spawn``: 50 starts of ``/bin/true`` (what starting and reaping a process costs);
- ``cuda``: one process that makes a CUDA context and ends (``cudaFree(0)``: the part of every timing run
  that is not the test itself), built once before anything is timed.
The builds compile ``corpus/transpose_00/reference.cu`` to an object, each in its own temporary folder, at
the caller's priority. The result: each probe's median and spread per condition and the ratio of the
medians, and where the machine reports them, the cores' clock (``/proc/cpuinfo``) during each condition.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "corpus" / "transpose_00" / "reference.cu"
CONTEXT = "#include <cuda_runtime.h>\nint main() { return cudaFree(0) == cudaSuccess ? 0 : 1; }\n"


def cpu_probe() -> float:
    t0 = time.perf_counter()
    x = 0
    for i in range(2_000_000):
        x = (x * 31 + i) % 1_000_003
    return time.perf_counter() - t0


def spawn_probe() -> float:
    t0 = time.perf_counter()
    for _ in range(50):
        subprocess.run(["/bin/true"], check=True)
    return time.perf_counter() - t0


def clocks_mhz() -> float | None:
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
        mhz = [float(ln.split(":")[1]) for ln in lines if ln.startswith("cpu MHz")]
    except OSError:
        return None
    return round(statistics.mean(mhz), 1) if mhz else None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=12, help="build threads of the loaded condition")
    ap.add_argument("--reps", type=int, default=15, help="runs of each probe per condition")
    ap.add_argument("--out", type=Path, help="also write the result as JSON to this file")
    a = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="beaver-load-probe-"))
    (work / "ctx.cu").write_text(CONTEXT)
    built = subprocess.run(
        ["nvcc", "-o", str(work / "ctx"), str(work / "ctx.cu")], capture_output=True, text=True
    )
    ctx = str(work / "ctx") if built.returncode == 0 else None

    def cuda_probe() -> float | None:
        if ctx is None:
            return None
        t0 = time.perf_counter()
        ok = subprocess.run([ctx]).returncode == 0
        return time.perf_counter() - t0 if ok else None

    probes = {"cpu": cpu_probe, "spawn": spawn_probe, "cuda": cuda_probe}
    stop = threading.Event()
    builds: list[float] = []
    failed: list[str] = []

    def build_load(k: int) -> None:
        d = work / f"load{k}"
        d.mkdir()
        while not stop.is_set():
            t0 = time.perf_counter()
            out = subprocess.run(
                [
                    "nvcc",
                    "-c",
                    "-O3",
                    "-std=c++17",
                    "-I",
                    str(ROOT / "corpus" / "_common"),
                    "-o",
                    str(d / "r.o"),
                    str(SOURCE),
                ],
                capture_output=True,
            )
            if out.returncode != 0:
                failed.append(out.stderr.decode(errors="replace").strip()[-200:])
                return
            builds.append(time.perf_counter() - t0)

    res: dict[str, Any] = {"cpus": os.cpu_count(), "threads": a.threads, "reps": a.reps, "conditions": {}}
    if ctx is None:
        res["cuda_probe"] = f"not built: {built.stderr.strip()[-200:]}"
    for cond in ("idle", "load", "idle_again"):
        threads = []
        if cond == "load":
            threads = [threading.Thread(target=build_load, args=(k,), daemon=True) for k in range(a.threads)]
            for t in threads:
                t.start()
            time.sleep(3.0)  # the builds under way
        got: dict[str, list[float]] = {k: [] for k in probes}
        mhz = []
        for _ in range(a.reps):
            for name, probe in probes.items():
                v = probe()
                if v is not None:
                    got[name].append(v)
            mhz.append(clocks_mhz())
        stop.set()
        for t in threads:
            t.join()
        stop.clear()
        res["conditions"][cond] = {
            name: {
                "median_s": round(statistics.median(v), 4),
                "min_s": round(min(v), 4),
                "max_s": round(max(v), 4),
                "n": len(v),
            }
            for name, v in got.items()
            if v
        }
        seen = [m for m in mhz if m is not None]
        res["conditions"][cond]["cpu_mhz_mean"] = round(statistics.mean(seen), 1) if seen else None
    if failed:
        raise SystemExit(f"a load build failed: {failed[0]}")
    if builds:
        res["load_builds"] = {"count": len(builds), "median_s": round(statistics.median(builds), 2)}
    idle, load = res["conditions"]["idle"], res["conditions"]["load"]
    res["load_over_idle"] = {
        k: round(load[k]["median_s"] / idle[k]["median_s"], 3) for k in probes if k in idle and k in load
    }
    print(f"{a.threads} build threads on {res['cpus']} CPUs, {a.reps} runs of each probe per condition")
    print("| probe | idle | load | idle again | load / idle |")
    print("|---|---:|---:|---:|---:|")
    for k in probes:
        if k in idle:
            row = [res["conditions"][c][k]["median_s"] for c in ("idle", "load", "idle_again")]
            print(f"| {k} | {row[0]} s | {row[1]} s | {row[2]} s | {res['load_over_idle'].get(k)}x |")
    if builds:
        print(f"load: {len(builds)} builds, median {res['load_builds']['median_s']} s")
    print(
        "cores' clock, mean MHz (/proc/cpuinfo): "
        + ", ".join(f"{c} {res['conditions'][c]['cpu_mhz_mean']}" for c in ("idle", "load", "idle_again"))
    )
    if a.out:
        a.out.write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
