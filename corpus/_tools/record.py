#!/usr/bin/env python3
"""Record a native corpus on a GPU: build and run every task's reference and broken start.

Standard library only, so that it runs on a bare GPU machine before beavertui itself is installed there.
For each task it copies testbench/ and corpus/_common/ into a fresh work dir, writes the candidate to the
solution file, runs build_command, test_command and (for the reference) benchmark_command with the task's
time limits, and writes one JSON line per task with every exit code, log and BEAVER_TIME_MS sample.
`record.py apply RESULTS.jsonl` then writes each broken start's log into its task's error_log.txt.
`beavertui corpus validate` is the full check (classifier, interleaved timing, baselines); this script is
how the recorded error logs are made.

    python3 corpus/_tools/record.py run [--corpus corpus] [--task ID ...] --out results.jsonl
    python3 corpus/_tools/record.py apply results.jsonl [--corpus corpus]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TIME_RE = re.compile(r"^BEAVER_TIME_MS\s+([0-9.eE+-]+)\s*$", re.M)


def sh(cmd: str, cwd: Path, limit: float) -> dict:
    t0 = time.monotonic()
    proc = subprocess.Popen(
        cmd, shell=True, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=limit)
        timed_out = False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        timed_out = True
    text = out.decode("utf-8", "replace")
    if len(text) > 200_000:
        text = text[:100_000] + "\n[... output cut ...]\n" + text[-100_000:]
    return {"cmd": cmd, "rc": None if timed_out else proc.returncode, "timed_out": timed_out,
            "seconds": round(time.monotonic() - t0, 3), "log": text}


def workdir(task: Path, corpus: Path, solution_file: str, code: str) -> Path:
    wd = Path(tempfile.mkdtemp(prefix=f"beaver-{task.name}-"))
    shutil.copytree(task / "testbench", wd, dirs_exist_ok=True)
    if (corpus / "_common").is_dir():
        shutil.copytree(corpus / "_common", wd / "_common")
    (wd / solution_file).parent.mkdir(parents=True, exist_ok=True)
    (wd / solution_file).write_text(code)
    return wd


def attempt(task: Path, corpus: Path, meta: dict, code: str, bench: bool) -> dict:
    limits = meta.get("timeouts") or {}
    build_s, run_s = float(limits.get("build_s", 300)), float(limits.get("run_s", 60))
    wd = workdir(task, corpus, meta["solution_file"], code)
    try:
        res = {"build": sh(meta["build_command"], wd, build_s)}
        if res["build"]["rc"] == 0:
            res["run"] = sh(meta["test_command"], wd, run_s)
            if bench and res["run"]["rc"] == 0 and meta.get("benchmark_command"):
                b = sh(meta["benchmark_command"], wd, max(run_s, 120))
                samples = [float(x) for x in TIME_RE.findall(b["log"])]
                b["log"] = b["log"][-2000:]
                res["bench"] = b
                res["samples_ms"] = samples
                if len(samples) >= 2:
                    med = statistics.median(samples)
                    res["median_ms"] = med
                    res["cv"] = statistics.pstdev(samples) / statistics.mean(samples)
        return res
    finally:
        shutil.rmtree(wd, ignore_errors=True)


def error_log(res: dict) -> str:
    parts = []
    for stage in ("build", "run"):
        r = res.get(stage)
        if r is None:
            continue
        parts.append(f"$ {r['cmd']}\n{r['log'].rstrip()}\n")
        if r["timed_out"]:
            parts.append(f"[beavertui: killed by the time limit after {r['seconds']:.0f} s]\n")
        else:
            parts.append(f"[exit status {r['rc']}]\n")
    return "".join(parts)


def cmd_run(args: argparse.Namespace) -> int:
    corpus = Path(args.corpus)
    tasks = [corpus / t for t in args.task] if args.task else sorted(
        p for p in corpus.iterdir() if p.is_dir() and not p.name.startswith("_") and (p / "input.json").is_file())
    with open(args.out, "w") as out:
        for task in tasks:
            meta = json.loads((task / "input.json").read_text())
            ext = Path(meta["solution_file"]).suffix
            row: dict = {"id": task.name}
            if not args.broken_only:
                row["reference"] = attempt(task, corpus, meta, (task / f"reference{ext}").read_text(), bench=True)
            row["broken"] = attempt(task, corpus, meta, (task / f"broken_start{ext}").read_text(), bench=args.bench_broken)
            out.write(json.dumps(row) + "\n")
            out.flush()
            ref = row.get("reference", {})
            print(f"{task.name}: reference build={ref.get('build', {}).get('rc')} run={ref.get('run', {}).get('rc')} "
                  f"median={ref.get('median_ms')} cv={ref.get('cv')} | broken build={row['broken']['build']['rc']} "
                  f"run={row['broken'].get('run', {}).get('rc')} timed_out={row['broken'].get('run', {}).get('timed_out')}",
                  flush=True)
    return 0


def cmd_apply(args: argparse.Namespace) -> int:
    corpus = Path(args.corpus)
    for line in Path(args.results).read_text().splitlines():
        row = json.loads(line)
        (corpus / row["id"] / "error_log.txt").write_text(error_log(row["broken"]))
        print(f"wrote {row['id']}/error_log.txt")
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--corpus", default=str(Path(__file__).resolve().parents[1]))
    r.add_argument("--task", action="append")
    r.add_argument("--out", required=True)
    r.add_argument("--broken-only", action="store_true")
    r.add_argument("--bench-broken", action="store_true", help="also time the broken start (perf_broken tasks)")
    r.set_defaults(func=cmd_run)
    a = sub.add_parser("apply")
    a.add_argument("results")
    a.add_argument("--corpus", default=str(Path(__file__).resolve().parents[1]))
    a.set_defaults(func=cmd_apply)
    args = p.parse_args()
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
