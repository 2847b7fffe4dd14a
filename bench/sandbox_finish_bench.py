"""How long a stage's end takes once its command has exited: ``Started.finish`` after the stage's first
process is gone (reading the last output, the wait, the sweeps for leftovers, the pids cgroup), the part
of every timed run that lies between one run's end and the next run's go.

    python3 bench/sandbox_finish_bench.py [--runs 30] [--others 0,300]

For each count of ``--others`` (idle ``sleep`` processes started beside it, as a busy machine has: the
sweeps without a PID namespace read every process's ``/proc`` entry), ``--runs`` stages of ``true`` are
started, waited for until their process has exited, and ended with ``finish``; printed: the median and the
largest time of that ``finish``, with every namespace this machine allows and with none
(``BEAVERTUI_NAMESPACES=0``), and how many processes the machine had.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from beavertui.engine.host import sandbox


def finish_ms(runs: int, bare: bool) -> list[float]:
    work = tempfile.mkdtemp(prefix="beaver-finish-bench-")
    env = dict(os.environ)
    if bare:
        os.environ[sandbox.NAMESPACES_SWITCH] = "0"
    try:
        out = []
        for _ in range(runs):
            s = sandbox.start("true", work, env, 10.0)
            while s.proc.poll() is None:
                time.sleep(0.0005)
            t0 = time.perf_counter()
            s.finish()
            out.append((time.perf_counter() - t0) * 1000)
        return out
    finally:
        os.environ.pop(sandbox.NAMESPACES_SWITCH, None)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument(
        "--others", default="0,300", help="counts of idle processes started beside, comma-separated"
    )
    a = ap.parse_args()
    print(
        "| idle processes beside | processes on the machine | sandbox | finish after exit, median | largest |"
    )
    print("|---:|---:|---|---:|---:|")
    for n in (int(x) for x in a.others.split(",")):
        others = [subprocess.Popen(["sleep", "600"]) for _ in range(n)]
        try:
            total = sum(1 for e in os.listdir("/proc") if e.isdigit())
            for bare in (False, True):
                ms = finish_ms(a.runs, bare)
                what = "no namespaces" if bare else "every namespace allowed here"
                print(f"| {n} | {total} | {what} | {statistics.median(ms):.2f} ms | {max(ms):.2f} ms |")
        finally:
            for p in others:
                p.kill()
                p.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
