"""Where the test suite's CPU time goes: each test's own CPU time and that of the child processes it waited
for, per test module, and when each worker ran each module.

Loaded into pytest as a plugin, it writes one JSON line a test (node id, worker, start time, wall time,
CPU of the worker itself and of its reaped children, from ``getrusage``) to a file a worker in
``$SUITE_CPU_DIR`` (default /tmp/suite-cpu); run as a script, it sums those files:

    rm -rf /tmp/suite-cpu; PYTHONPATH=bench python3 -m pytest -p no:cacheprovider -p suite_cpu
    python3 bench/suite_cpu.py [DIR] [--top 40]

A child counts where it was reaped: a process a test starts and waits for counts for that test; a daemon
reaped by nobody (a browser's helpers reaped by the browser count, the browser itself counts) does not.
Collection, before the first test, is not in these figures.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import resource
import sys
import time
from collections.abc import Generator
from pathlib import Path
from typing import Any


def _cpu() -> tuple[float, float]:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime


try:
    import pytest
except ImportError:  # summing needs no pytest
    pytest = None  # type: ignore[assignment]

if pytest is not None:

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(item: Any, nextitem: Any) -> Generator[None, None, None]:
        before, began = _cpu(), time.time()
        yield
        after = _cpu()
        folder = Path(os.environ.get("SUITE_CPU_DIR", "/tmp/suite-cpu"))
        folder.mkdir(parents=True, exist_ok=True)
        row = {
            "id": item.nodeid,
            "worker": os.environ.get("PYTEST_XDIST_WORKER", "main"),
            "start": began,
            "wall": time.time() - began,
            "self": after[0] - before[0],
            "kids": after[1] - before[1],
        }
        with open(folder / f"cpu-{os.getpid()}.jsonl", "a") as f:
            f.write(json.dumps(row) + "\n")


def summary(folder: Path, top: int) -> str:
    rows = [json.loads(line) for p in sorted(folder.glob("cpu-*.jsonl")) for line in p.open()]
    if not rows:
        return f"no test records in {folder}"
    t0 = min(r["start"] for r in rows)
    out = [f"{len(rows)} tests; CPU in the tests {sum(r['self'] + r['kids'] for r in rows):.1f} s"]
    for worker in sorted({r["worker"] for r in rows}):
        mine = sorted((r for r in rows if r["worker"] == worker), key=lambda r: r["start"])
        end = max(r["start"] + r["wall"] for r in mine) - t0
        cpu = sum(r["self"] + r["kids"] for r in mine)
        out.append(
            f"{worker}: {len(mine)} tests, first at {mine[0]['start'] - t0:.1f} s, last ends {end:.1f} s, CPU {cpu:.1f} s"
        )
    mods: dict[str, list[float]] = collections.defaultdict(lambda: [0, 0.0, 0.0, 0.0])
    for r in rows:
        m = mods[r["id"].split("::")[0]]
        m[0] += 1
        m[1] += r["self"]
        m[2] += r["kids"]
        m[3] += r["wall"]
    out.append("CPU s (self + children), wall s, tests, module:")
    for name, (n, me, kids, wall) in sorted(mods.items(), key=lambda kv: -(kv[1][1] + kv[1][2]))[:top]:
        out.append(f"{me + kids:7.1f} ({me:6.1f} + {kids:6.1f})  {wall:6.1f}  {int(n):4d}  {name}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", nargs="?", default=os.environ.get("SUITE_CPU_DIR", "/tmp/suite-cpu"))
    ap.add_argument("--top", type=int, default=40)
    args = ap.parse_args(argv)
    print(summary(Path(args.dir), args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
