"""Benchmark: `beavertui metrics` and `export --html` over a run directory of a protocol grid.

Builds a grid from the recorded H200 release run of tests/data (release_batch_final.tar.gz: 77 sessions of
the release, scripted:@alternate): the same sessions under MODELS models x 8 protocols (feedback L0 to L3,
history 2 and 4), each copy's candidates made distinct by a comment line (a real grid's candidates differ,
and the analysis caches by text). Then times, in a fresh process each, `beavertui metrics RUN` (every
table, with the edit and degeneration analysis read from the sessions), `metrics RUN --paper` and
`export RUN --html`: wall time from the parent, peak resident memory of the child (ru_maxrss). Usage:

    python3 bench/metrics_run_bench.py [--models 3] [--runs 3] [--dir /tmp/beaver-metrics-run-bench]
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUN = ROOT / "tests" / "data" / "release_batch_final.tar.gz"
PROTOCOLS = [(f"L{level}", history) for level in range(4) for history in (2, 4)]


def build(out: Path, models: int) -> tuple[Path, int]:
    """The grid under ``out``/run and its number of sessions."""
    src = out / "src"
    if src.exists():
        shutil.rmtree(src)
    with tarfile.open(RUN) as tar:
        tar.extractall(src, filter="data")
    files = sorted((src / "run").rglob("*__s*.jsonl"))
    run = out / "run"
    if run.exists():
        shutil.rmtree(run)
    run.mkdir(parents=True)
    manifest = json.loads((src / "run" / "run.json").read_text(encoding="utf-8"))
    manifest["withdrawn_tasks"] = {}
    (run / "run.json").write_text(json.dumps(manifest), encoding="utf-8")
    n = 0
    for m in range(models):
        for level, history in PROTOCOLS:
            folder = run / f"model{m}" / f"{level}-H{history}"
            folder.mkdir(parents=True)
            tag = f"model{m} {level} H{history}"
            for f in files:
                lines = []
                for i, line in enumerate(f.read_text(encoding="utf-8").splitlines()):
                    e = json.loads(line)
                    if i == 0:
                        e["model"]["name"] = f"model{m}"
                        e["protocol"]["feedback"], e["protocol"]["history"] = level, history
                    elif e.get("kind") == "candidate" and e.get("code"):
                        e["code"] += f"\n// {tag}\n"
                    lines.append(json.dumps(e))
                (folder / f.name).write_text("\n".join(lines) + "\n", encoding="utf-8")
                n += 1
    return run, n


def timed(args: list[str]) -> tuple[float, int]:
    """Wall seconds and the child's peak RSS in KiB of one `beavertui` command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "beavertui", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"beavertui {' '.join(args)}: exit {done.returncode}: {done.stderr.strip()[-300:]}")
    return wall, max(before, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", type=int, default=3)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/beaver-metrics-run-bench"))
    args = ap.parse_args()
    run, n = build(args.dir, args.models)
    print(f"grid: {n} sessions ({args.models} models x {len(PROTOCOLS)} protocols x 77) in {run}")
    page = args.dir / "run.html"
    for name, cmd in (
        ("metrics", ["metrics", str(run)]),
        ("metrics --paper", ["metrics", str(run), "--paper"]),
        ("export --html", ["export", str(run), "--html", "-o", str(page)]),
    ):
        got = [timed(cmd) for _ in range(args.runs)]
        walls = ", ".join(f"{w:.2f}" for w, _ in got)
        print(f"{name}: {walls} s; peak RSS {max(r for _, r in got) / 1024:.0f} MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
