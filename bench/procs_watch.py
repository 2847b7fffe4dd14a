"""The compute-sanitizer runs a batch's process snapshots saw (procs.log, from scripts/gpu-common.sh's
watch_procs, e.g. WATCH=10 with scripts/gpu-release-batch.sh): for each, its work dir, when it was first and
last seen, every snapshot that found it stopped (SIGSTOP, state T) and how long it had run then, and the CPU
share of the process it checks (ps's %CPU: its CPU time over its life) when last seen.

    python3 bench/procs_watch.py PROCS_LOG [--json]

A snapshot is taken every few seconds, so a stop shorter than that interval may be missed, and "first seen"
is up to one interval after the start. A run still seen in the last snapshot had not ended when the watch
stopped (the batch's end or its cut).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

_SNAP = re.compile(r"^=== \[(\d+) s\]")
_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\d+)\s+([\d.]+)\s+(\S+)\s+(.*)$")
_WORK = re.compile(r"/tmp/beaver-([^;/ ]+)-[^-;/ ]{8}(?=[;/ ]|$)")


@dataclass
class SanitizerRun:
    pid: int
    work: str
    """The work dir's name: the task id, cut short as the batch names its work dirs."""
    first_seen_s: int
    """The snapshot (seconds since the watch began) that first saw it."""
    first_elapsed_s: int
    """How long it had run at that snapshot."""
    last_seen_s: int
    last_elapsed_s: int
    stops: list[tuple[int, int]] = field(default_factory=list)
    """(snapshot, seconds it had run) for every snapshot that found it stopped."""
    target_cpu_pct: float | None = None
    """The checked process's %CPU (CPU time over its life) when last seen; None when none was seen."""
    running_at_end: bool = False
    """Seen in the last snapshot: it had not ended when the watch stopped."""


def read(path: Path) -> list[SanitizerRun]:
    """Every compute-sanitizer front-end process the snapshots of ``path`` show, in order of first sight."""
    runs: dict[int, SanitizerRun] = {}
    last_snap = -1
    seen_last: set[int] = set()
    snap = -1
    rows: dict[int, tuple[int, int, float, str, str]] = {}

    def flush() -> None:
        nonlocal seen_last
        seen_now: set[int] = set()
        for pid, (_ppid, elapsed, _cpu, stat, args) in rows.items():
            if "compute-sanitizer --tool" not in args or "TreeLauncher" in args:
                continue
            seen_now.add(pid)
            run = runs.get(pid)
            if run is None:
                run = runs[pid] = SanitizerRun(pid, _work_of(pid, rows), snap, elapsed, snap, elapsed)
            run.last_seen_s, run.last_elapsed_s = snap, elapsed
            if stat.startswith("T"):
                run.stops.append((snap, elapsed))
            target = _target_of(pid, rows)
            if target is not None:
                run.target_cpu_pct = target
        seen_last = seen_now

    for line in path.read_text(errors="replace").splitlines():
        m = _SNAP.match(line)
        if m:
            if snap >= 0:
                flush()
            snap, last_snap, rows = int(m.group(1)), int(m.group(1)), {}
            continue
        r = _ROW.match(line)
        if r and snap >= 0:
            pid, ppid, elapsed = int(r.group(1)), int(r.group(2)), int(r.group(3))
            rows[pid] = (ppid, elapsed, float(r.group(4)), r.group(5), r.group(6))
    if snap >= 0:
        flush()
    for run in runs.values():
        run.running_at_end = run.last_seen_s == last_snap and run.pid in seen_last
    return sorted(runs.values(), key=lambda r: (r.first_seen_s - r.first_elapsed_s, r.pid))


def _work_of(pid: int, rows: dict[int, tuple[int, int, float, str, str]]) -> str:
    """The work dir named by the nearest ancestor of ``pid`` (within the snapshot) that names one."""
    at: int | None = pid
    for _ in range(8):
        if at is None or at not in rows:
            break
        m = _WORK.search(rows[at][4])
        if m:
            return m.group(1)
        at = rows[at][0]
    return "?"


def _target_of(pid: int, rows: dict[int, tuple[int, int, float, str, str]]) -> float | None:
    """The %CPU of the busiest process below the sanitizer front-end ``pid`` (the harness it checks)."""
    below = {pid}
    grew = True
    while grew:
        grew = False
        for p, row in rows.items():
            if row[0] in below and p not in below:
                below.add(p)
                grew = True
    below.discard(pid)
    return max((rows[p][2] for p in below), default=None)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("procs_log", type=Path)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if not args.procs_log.is_file():
        print(f"procs_watch: {args.procs_log}: no such file", file=sys.stderr)
        return 2
    runs = read(args.procs_log)
    if args.json:
        print(json.dumps([asdict(r) for r in runs], indent=1))
        return 0
    for r in runs:
        stops = ", ".join(f"at {s} s ({e} s in)" for s, e in r.stops) or "never"
        end = "still running at the last snapshot" if r.running_at_end else "ended"
        cpu = "-" if r.target_cpu_pct is None else f"{r.target_cpu_pct:.1f}%"
        print(
            f"{r.work}: seen {r.first_seen_s}-{r.last_seen_s} s ({r.first_elapsed_s}-{r.last_elapsed_s} s in), "
            f"stopped: {stops}; {end}; checked process CPU {cpu}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
