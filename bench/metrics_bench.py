"""Benchmark: `beavertui metrics` over a synthetic attempts table of 1,000,000 rows.

Generates the table (8 models x 10 protocols x 2,500 tasks x 5 attempts, JSON Lines and CSV), then runs
`beavertui metrics FILE --json` and the human table (with bootstrap intervals) in a fresh process each,
measuring wall time and peak resident memory (ru_maxrss of the child). Usage:

    python3 bench/metrics_bench.py [--rows 1000000] [--dir /tmp/beaver-metrics-bench]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

DETECTORS = ("duplicate_code", "code_cycle", "category_oscillation", "no_progress")
CATEGORIES = ("buildability", "functional_correctness", "illegal_memory_access", "timeout", "passed")


def protocols() -> list[dict[str, object]]:
    base = {
        "method": "iterative",
        "feedback": "L3",
        "history": 2,
        "temperature": 0.0,
        "gate": 0.7,
        "budget": 5,
    }
    out = [dict(base, feedback=f) for f in ("L0", "L1", "L2", "L3", "L4")]
    out += [dict(base, history=h) for h in (1, 3, 4)]
    out.append(dict(base, gate=0.0))
    out.append(dict(base, method="repeated", temperature=0.8))
    return out


def generate(path: Path, rows: int, seed: int = 7) -> int:
    """Write about ``rows`` attempts; returns the exact number written."""
    rng = random.Random(seed)
    protos = protocols()
    models = [f"model-{i}" for i in range(8)]
    per_task = len(models) * len(protos) * 5
    n_tasks = max(1, rows // per_task)
    csv_mode = path.suffix == ".csv"
    written = 0
    with path.open("w") as f:
        if csv_mode:
            f.write(
                "run_id,model,task_id,protocol.method,protocol.feedback,protocol.history,"
                "protocol.temperature,protocol.gate,protocol.budget,sample,iteration,category,correct,"
                "speedup,stop_reason,self_source,family,label,infra_error\n"
            )
        for mi, model in enumerate(models):
            skill = 0.15 + 0.08 * mi
            for proto in protos:
                pj = json.dumps(proto)
                rep = proto["method"] == "repeated"
                for t in range(n_tasks):
                    task = f"task_{t:05d}"
                    family = f"fam{t % 12}"
                    selfsrc = t % 17 == mi
                    for s in range(5 if rep else 1):
                        stop = rng.choice((*DETECTORS, "budget", "passed"))
                        for it in range(1, 2 if rep else 6):
                            ok = rng.random() < skill * (1 + 0.2 * it)
                            cat = "passed" if ok else rng.choice(CATEGORIES[:-1])
                            sp = round(rng.lognormvariate(0, 0.5), 4) if ok else None
                            last = rep or it == 5
                            sr = stop if last else None
                            if csv_mode:
                                p = proto
                                f.write(
                                    f"r1,{model},{task},{p['method']},{p['feedback']},{p['history']},"
                                    f"{p['temperature']},{p['gate']},{p['budget']},{s if rep else 0},{it},"
                                    f"{cat},{'true' if ok else 'false'},{'' if sp is None else sp},"
                                    f"{sr or ''},{'true' if selfsrc else 'false'},{family},logic_error,false\n"
                                )
                            else:
                                f.write(
                                    f'{{"run_id": "r1", "model": "{model}", "task_id": "{task}", '
                                    f'"protocol": {pj}, "sample": {s if rep else 0}, "iteration": {it}, '
                                    f'"category": "{cat}", "correct": {"true" if ok else "false"}, '
                                    f'"speedup": {"null" if sp is None else sp}, '
                                    f'"stop_reason": {"null" if sr is None else json.dumps(sr)}, '
                                    f'"self_source": {"true" if selfsrc else "false"}, "family": "{family}", '
                                    f'"label": "logic_error", "infra_error": false}}\n'
                                )
                            written += 1
    return written


def measure(cmd: list[str]) -> tuple[float, float, int]:
    """Wall seconds and peak RSS (MiB) of a child process, and its exit status."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if proc.returncode != 0:
        print(proc.stderr, file=sys.stderr)
    return wall, max(peak, before) / 1024.0, proc.returncode


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/beaver-metrics-bench"))
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    results = []
    for ext in ("jsonl", "csv"):
        path = args.dir / f"attempts_{args.rows}.{ext}"
        if not path.exists():
            t0 = time.perf_counter()
            n = generate(path, args.rows)
            print(
                f"generated {path} ({n} rows, {path.stat().st_size / 1e6:.0f} MB) in {time.perf_counter() - t0:.1f} s"
            )
        for flags in (["--json"], []):
            cmd = [sys.executable, "-m", "beavertui", "metrics", str(path), *flags]
            for _ in range(args.repeat):
                # each run in its own process group so ru_maxrss of children is per run: use a wrapper
                wall, rss, rc = measure([sys.executable, __file__, "--child", *cmd])
                results.append(
                    {
                        "input": ext,
                        "flags": " ".join(flags) or "(table)",
                        "wall_s": wall,
                        "peak_rss_mib": rss,
                        "rc": rc,
                    }
                )
                print(json.dumps(results[-1]))
    print(f"cores visible: {os.cpu_count()}")
    return 0


def child(cmd: list[str]) -> int:
    """Run cmd and print nothing; used so that RUSAGE_CHILDREN peaks are per measurement."""
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL)
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    sys.stderr.write(f"peak_rss_kib={peak}\n")
    return proc.returncode


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        sys.exit(child(sys.argv[2:]))
    sys.exit(main())
