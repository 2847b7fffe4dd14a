"""GPU benchmark of `beavertui batch` on one machine: scheduled vs naive, overhead, GPU busy, kill and resume.

Runs on a GPU machine from the repository root:

    python3 bench/batch_gpu_bench.py --out $OUT/gpu_bench [--tasks 40] [--naive-tasks 4] [--budget-s 540]

What it does, all with the bundled corpus and the scripted model ``scripted:@alternate`` (replies with the
broken start and the reference in turn, so every attempt really builds, runs and, when correct, is timed):
1. the scheduled batch of N tasks x 5 iterations (every stagnation detector off, the whole budget spent),
   SIGKILLed after ``--kill-after`` seconds and resumed; every session file is then checked (one header,
   each iteration once, one end) and ``beavertui metrics`` is run on it;
2. the naive way on a subset (one session at a time, no compile cache, one run per GPU at a time) and the
   scheduled way on the same subset with a cold cache, for an apples-to-apples speedup;
3. harness overhead per attempt from the naive sessions' own time stamps: session wall time minus the
   stage durations (build, run, sanitizer, benchmark) minus the timing stages, divided by attempts.
Results: ``<out>/gpu_bench.json`` (and metrics.md, metrics.json) — what docs/lab/h200-2026-11-30b.md quotes.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PROTOCOL = """name = "bench"
description = "5 attempts per task, whole budget spent"
[protocol]
method = "iterative"
budget = 5
feedback = "L3"
history = 2
gate = 0.7
continue_after_pass = true
[protocol.stagnation]
stop = false
"""


def beaver(*args: str) -> list[str]:
    return [sys.executable, "-m", "beavertui", *args]


def runnable_tasks() -> list[str]:
    sys.path.insert(0, str(ROOT))
    from beavertui.engine.corpus.load import load_corpus
    from beavertui.service.environment import default_corpus

    corpus = load_corpus(default_corpus())
    return sorted(t.id for t in corpus.tasks if t.runnable)


def spread(ids: list[str], n: int) -> list[str]:
    """n ids spread over the sorted list (so every family is represented)."""
    if n >= len(ids):
        return ids
    step = len(ids) / n
    return [ids[int(i * step)] for i in range(n)]


EXTRA: list[str] = []


def batch_cmd(out: Path, run_id: str, tasks: list[str], *extra: str) -> list[str]:
    return beaver(
        "batch",
        "--protocol",
        str(out / "bench.toml"),
        "--models",
        "scripted:@alternate",
        "--tasks",
        ",".join(tasks),
        "--sessions-dir",
        str(out / "sessions"),
        "--run-id",
        run_id,
        "--quiet",
        *extra,
        *EXTRA,
    )


def timed(cmd: list[str], log: Path, kill_after: float | None = None) -> tuple[float, int, bool]:
    t0 = time.perf_counter()
    with log.open("a") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            rc = proc.wait(timeout=kill_after)
            killed = False
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            rc = proc.wait()
            killed = True
    return time.perf_counter() - t0, rc, killed


class BusySampler:
    """GPU busy fraction while a phase runs: `nvidia-smi` utilization.gpu (percent of the sample period in
    which a kernel ran) every 500 ms on the GPUs the batch sees, averaged over the phase."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> BusySampler:
        ids = os.environ.get("CUDA_VISIBLE_DEVICES")
        cmd = [
            "nvidia-smi",
            "--query-gpu=index,utilization.gpu",
            "--format=csv,noheader,nounits",
            "-lms",
            "500",
        ]
        if ids:
            cmd += ["-i", ids]
        try:
            with self.path.open("w") as fh:
                self.proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.DEVNULL)
        except OSError:
            self.proc = None
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait()

    def fraction(self) -> float | None:
        vals = []
        for line in self.path.read_text().splitlines() if self.path.exists() else []:
            parts = [p.strip() for p in line.split(",")]
            if len(parts) == 2 and parts[1].isdigit():
                vals.append(int(parts[1]))
        return round(sum(vals) / len(vals) / 100.0, 3) if vals else None


def session_stats(run_dir: Path) -> dict[str, Any]:
    """Consistency of every session and the harness overhead per attempt from the events' time stamps."""
    from beavertui.engine.session.store import read_session

    bad, attempts, overhead, stage, timing, sessions = [], 0, 0.0, 0.0, 0.0, 0
    walls, timings = 0.0, 0
    for path in sorted(run_dir.rglob("*__s*.jsonl")):
        header, events, problem = read_session(path)
        verdicts = [e.iteration for e in events if e.kind == "verdict"]
        ok = (
            header is not None
            and problem is None
            and verdicts == list(range(1, len(verdicts) + 1))
            and [e.kind for e in events].count("end") == 1
            and events[-1].kind == "end"
            and path.read_text().count('"kind":"header"') == 1
        )
        if not ok:
            bad.append(str(path.relative_to(run_dir)))
            continue
        sessions += 1
        attempts += len(verdicts)
        st = sum(
            e.result.duration_s for e in events if hasattr(e, "result") and hasattr(e.result, "duration_s")
        )
        tm = 0.0
        prev = header.t
        for e in events:
            if e.kind == "timing":
                tm += e.t - prev
                timings += 1
            prev = e.t
        wall = events[-1].t - header.t
        walls += wall
        stage += st
        timing += tm
        overhead += wall - st - tm
    return {
        "sessions_ok": sessions,
        "sessions_bad": bad,
        "attempts": attempts,
        "stage_s": round(stage, 2),
        "timing_s": round(timing, 2),
        "timing_stages": timings,
        # with one session at a time (naive) a timing stage's duration; with many it includes waiting for the GPU
        "timing_s_per_stage": round(timing / timings, 2) if timings else None,
        "session_wall_s_sum": round(walls, 1),
        # with one session at a time (naive) this is the harness overhead; with many it includes queueing
        "wall_minus_stages_ms_per_attempt": round(1000 * overhead / attempts, 1) if attempts else None,
    }


def summary(run_dir: Path) -> dict[str, Any]:
    try:
        return dict(json.loads((run_dir / "run.json").read_text()).get("summary", {}))
    except (OSError, ValueError):
        return {}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--tasks", type=int, default=40)
    ap.add_argument("--naive-tasks", type=int, default=4)
    ap.add_argument("--kill-after", type=float, default=45.0)
    ap.add_argument(
        "--budget-s", type=float, default=540.0, help="stop starting phases after this many seconds"
    )
    ap.add_argument("--batch-arg", action="append", default=[], help="extra argument for every batch command")
    ap.add_argument(
        "--phases",
        default="main,subset",
        help="comma list: main (the scheduled batch, killed and resumed), subset (naive vs scheduled on the "
        "subset); two GPU lanes can run one each",
    )
    a = ap.parse_args()
    EXTRA.extend(a.batch_arg)
    t_start = time.perf_counter()
    out = a.out
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench.toml").write_text(PROTOCOL)
    log = out / "batch.log"
    ids = runnable_tasks()
    tasks = spread(ids, a.tasks)
    subset = spread(tasks, a.naive_tasks)
    try:
        gpu = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        gpu = "none"
    res: dict[str, Any] = {"tasks": tasks, "subset": subset, "gpu": gpu, "cpus": os.cpu_count()}

    def left() -> float:
        return a.budget_s - (time.perf_counter() - t_start)

    phases = set(a.phases.split(","))
    # 1. scheduled, killed, resumed
    cache = ["--cache", str(out / "cache-main")]
    if "main" in phases:
        main_phase(a, out, log, tasks, cache, res, left)
    # 2. naive vs scheduled on the subset
    if "subset" in phases:
        subset_phase(a, out, log, subset, res, left)
    res["bench_wall_s"] = round(time.perf_counter() - t_start, 1)
    name = "gpu_bench.json" if phases == {"main", "subset"} else f"gpu_bench_{'_'.join(sorted(phases))}.json"
    (out / name).write_text(json.dumps(res, indent=1))
    print(json.dumps(res, indent=1))
    return 0


def main_phase(
    a: argparse.Namespace,
    out: Path,
    log: Path,
    tasks: list[str],
    cache: list[str],
    res: dict[str, Any],
    left: Any,
) -> None:
    """The scheduled batch of every task, SIGKILLed after --kill-after seconds and resumed (the resumed run is
    cut when the budget runs out: ``resume_cut``)."""
    with BusySampler(out / "busy.csv") as busy:
        w1, rc1, killed = timed(batch_cmd(out, "sched", tasks, *cache), log, kill_after=a.kill_after)
        w2, rc2, cut2 = timed(
            beaver("batch", "--resume", str(out / "sessions" / "sched"), "--quiet", *cache, *EXTRA),
            log,
            kill_after=max(30.0, left() - 15),
        )
    run_dir = out / "sessions" / "sched"
    res["scheduled"] = {
        "killed_after_s": round(w1, 1) if killed else None,
        "first_rc": rc1,
        "resume_wall_s": round(w2, 1),
        "resume_rc": rc2,
        "resume_cut": cut2,
        "wall_s_total": round(w1 + w2, 1),
        "gpu_busy_fraction": busy.fraction(),
        "summary_after_resume": summary(run_dir),
        **session_stats(run_dir),
    }
    with (out / "metrics.md").open("w") as fh:
        subprocess.run(beaver("metrics", str(run_dir), "--format", "markdown"), stdout=fh, check=False)
    with (out / "metrics.json").open("w") as fh:
        subprocess.run(beaver("metrics", str(run_dir), "--json"), stdout=fh, check=False)


def subset_phase(
    a: argparse.Namespace, out: Path, log: Path, subset: list[str], res: dict[str, Any], left: Any
) -> None:
    """The naive way and the scheduled way on the same subset, each with a cold cache."""
    if left() > 60:
        ws, rcs, _ = timed(batch_cmd(out, "sched_subset", subset, "--cache", str(out / "cache-subset")), log)
        res["subset_scheduled"] = {
            "wall_s": round(ws, 1),
            "rc": rcs,
            "summary": summary(out / "sessions" / "sched_subset"),
        }
    if left() > 60:
        wn, rcn, cut = timed(
            batch_cmd(out, "naive", subset, "--jobs", "1", "--no-cache", "--gpu-share", "1"),
            log,
            kill_after=max(30.0, left() - 20),
        )
        nd = out / "sessions" / "naive"
        res["subset_naive"] = {"wall_s": round(wn, 1), "rc": rcn, "cut_by_budget": cut, **session_stats(nd)}
        if not cut and "subset_scheduled" in res:
            res["speedup_subset"] = round(wn / res["subset_scheduled"]["wall_s"], 2)


if __name__ == "__main__":
    sys.exit(main())
