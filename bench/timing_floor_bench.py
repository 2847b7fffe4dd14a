"""Timing at the floor, measured on a GPU machine: the native timing stage, and the batch around it.

    python3 bench/timing_floor_bench.py stage   --out DIR [--task ID ...] [--compare-old] [--budget-s S]
                                                [--candidate reference|broken] [--side-budget-ms MS]
    python3 bench/timing_floor_bench.py batch   --out DIR --mode scheduled|naive [--tasks 40] [--slice I/K]
                                                [--budget-s S] [--timing inprocess|process]
    python3 bench/timing_floor_bench.py summary [--json FILE] DIR [DIR ...]

``stage``: the timing stage of every bundled task as the batch runs it, with in-process timing (the
default; ``BEAVERTUI_TIMING=process`` is the old way). First, on the CPU (a thread per core,
as build slots would): the reference with its side library and the task's timing driver, and a candidate
(the reference's source in its own work dir) built as a side library. Then, one task at a time with the GPU
to itself: ``Timer.measure`` (sandboxed, one in-process timing process, gate 0.7), its wall time, the
speedup (about 1: the same source on both sides), both CVs, the samples and the note. With
``--compare-old``, one task per family is also timed the way it was before (``beaver_time_ms``: 3 rounds,
one process per side and round; its test binary built first), on the same machine in the same run.
``--candidate broken`` times each task's broken start instead (tasks whose broken start fails the timing
size's check are reported as errors), ``--side-budget-ms`` sets the driver's per-side budget for a round (0:
off, the engine's default), so that a slow broken start such as reduce_01's can be timed with and without it
in one run. Result: ``DIR/stage.json``.

``batch``: ``beavertui batch`` over the bundled corpus's first N tasks spread over every family
(``scripted:@alternate``: broken start and reference in turn, so every attempt is built and run and every
correct one timed; 5 iterations, stagnation stops off, the whole budget spent). ``scheduled``: the batch as
shipped, a fresh compile cache; ``--builds-in-timing go|stop`` gives it that setting (its run id and result
say which; the default, ``auto``, stops builds on one GPU) and ``--pause-for-timing runs|all|none`` its rule for
runs on a GPU that a timing stage waits for (default ``runs``, the batch's; its result records it).
``naive``: one session at a time, no compile
cache, one GPU stage at a time (``--jobs 1 --no-cache --gpu-share 1``): build then run, each attempt waiting
for the last. ``--slice I/K``
runs the I-th of K equal slices of the N tasks (a naive run of 40 tasks does not fit one 10-minute command;
the slices' walls are summed by ``summary``); ``--slice I-J/K`` runs slices I to J one after another, each
in its own process and result file, and starts none with less than ``--min-left-s`` of the budget left (so a
command cut by its end loses one slice, and the next command goes on from there: ``--slice 6-40/40`` is task
6 onwards, one task a slice). Every command gets a fresh cache folder (XDG_CACHE_HOME) that its slices
share, so no command reuses another's reference builds. Result: ``DIR/batch-<mode>[-I-of-K].json``.

``summary``: every result under the given folders in one Markdown table on stdout (and as JSON in ``--json FILE``):
the stage's median and maximum wall time and every CV, the scheduled wall and the naive walls with how they
were summed, and the ratio only when finished naive slices (not cut, exit 0, every session well formed)
cover the same tasks as the scheduled run, each task once, timed the same way (in one process or not, the same
side budget; until then, the lower bound that the naive tasks run so far give: the naive side can only grow). The naive side of the ratio is the sum of the
slices' session walls (first event to last, one session at a time, so the sessions' own time without each
process's start); the sum of the processes' walls is shown beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from batch_gpu_bench import PROTOCOL, beaver, runnable_tasks, session_stats, spread, summary, timed  # noqa: E402

from beavertui.service.environment import INPROCESS_ENV, SIDE_BUDGET_ENV, side_budget_setting  # noqa: E402

#: One task per family, for --compare-old.
ONE_PER_FAMILY = [
    "flashattn_v2_00", "gemm_tc_00", "softmax_01", "layernorm_02", "reduce_01",
    "scan_01", "histogram_02", "transpose_00", "spmv_csr_01",
]  # fmt: skip


def gpu_info() -> dict[str, Any]:
    def run(cmd: list[str]) -> str:
        try:
            return subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            return "unavailable"

    return {
        "gpus": run(["nvidia-smi", "-L"]),
        "clocks": run(
            ["nvidia-smi", "--query-gpu=index,clocks.sm,clocks.mem,temperature.gpu", "--format=csv,noheader"]
        ),
        "cpus": os.cpu_count(),
        "nvcc": run(["nvcc", "--version"]).splitlines()[-1:] or ["none"],
    }


# ------------------------------------------------------------------ stage


def stage(a: argparse.Namespace) -> int:
    from beavertui.engine.corpus.load import load_corpus
    from beavertui.engine.host.gpu import probe
    from beavertui.engine.stage import stages
    from beavertui.engine.timing import native
    from beavertui.engine.timing.inprocess import InProcess
    from beavertui.engine.timing.speedup import Timer, TimingConfig, reference_workdir
    from beavertui.service.environment import default_corpus, stage_config, timing_config

    t_start = time.perf_counter()
    a.out.mkdir(parents=True, exist_ok=True)
    machine = probe()
    cfg = stage_config(sm=machine.sm)
    cache = Path(tempfile.mkdtemp(prefix="beaver-stage-cache-"))
    budget = {} if a.side_budget_ms is None else {"side_budget_ms": a.side_budget_ms}
    tcfg = timing_config(cache=cache, inprocess=True, **budget)
    corpus = load_corpus(default_corpus())
    tasks = [corpus.get(t) for t in a.task] if a.task else sorted(corpus.tasks, key=lambda t: t.id)
    base = Path(tempfile.mkdtemp(prefix="beaver-stage-work-"))
    res: dict[str, Any] = {
        "machine": gpu_info(),
        "gpu": machine.gpu.slug if machine.gpu else None,
        "candidate": a.candidate,
        "side_budget_ms": tcfg.side_budget_ms,
        "tasks": {},
    }

    def prebuild(task: Any) -> tuple[Any, Any, Any, float, str | None]:
        t0 = time.perf_counter()
        try:
            native.reference_side(task, reference_workdir(task, cfg, tcfg), cfg)
            code = task.broken_start() if a.candidate == "broken" else task.reference() or ""
            cand = stages.prepare(task, code, base)
            lib = native.build_library(task, cand, cfg)
            return task, cand, lib, time.perf_counter() - t0, None
        except Exception as exc:  # recorded, the bench goes on
            return task, None, None, time.perf_counter() - t0, f"{type(exc).__name__}: {exc}"

    with ThreadPoolExecutor(max(1, (os.cpu_count() or 2) // 2)) as ex:
        built = list(ex.map(prebuild, tasks))
    res["build_wall_s"] = round(time.perf_counter() - t_start, 1)
    for task, cand, lib, build_s, err in built:
        row: dict[str, Any] = {"build_s": round(build_s, 2)}
        res["tasks"][task.id] = row
        if err is not None or cand is None:
            row["error"] = err
            continue
        if time.perf_counter() - t_start > a.budget_s:
            row["skipped"] = "budget"
            continue
        timer = Timer(task, cfg, tcfg)
        assert isinstance(timer.how, InProcess)
        timer.how.library = lib  # built above, beside the others: the timing builds nothing
        t0 = time.perf_counter()
        try:
            t = timer.measure(cand, 0.7)
        except Exception as exc:
            row.update(error=f"{type(exc).__name__}: {exc}", wall_s=round(time.perf_counter() - t0, 3))
            continue
        row.update(
            wall_s=round(time.perf_counter() - t0, 3),
            processes=[round(r.duration_s, 3) for _, r in timer.runs],
            method=t.method,
            speedup=round(t.speedup, 4),
            reference_ms=t.reference_ms,
            candidate_ms=t.candidate_ms,
            reference_cv=round(t.reference_cv, 4),
            candidate_cv=round(t.candidate_cv, 4),
            samples=len(t.candidate_samples),
            unstable=t.unstable,
            flags=[str(f) for f in t.flags],
            note=t.note,
            timed_launch_s=round((sum(t.reference_samples) + sum(t.candidate_samples)) / 1000, 4),
        )
        print(f"{task.id}: {row['wall_s']} s, {t.method}, speedup {t.speedup:.3f}, CVs "
              f"{100 * t.reference_cv:.2f}% / {100 * t.candidate_cv:.2f}%", flush=True)  # fmt: skip
    if a.compare_old:
        old = TimingConfig(cache=cache, method="beaver_time_ms", inprocess=False)
        res["old"] = {}
        for tid in ONE_PER_FAMILY:
            task, cand = corpus.get(tid), None
            cand = next((c for t, c, *_ in built if t.id == tid), None)
            if cand is None or time.perf_counter() - t_start > a.budget_s:
                continue
            # the process contract times the candidate's test binary: built here (the in-process part above
            # built only its side library)
            b = stages.build(cand, cfg)
            if b.rc != 0:
                res["old"][tid] = {"error": f"build failed (rc {b.rc})"}
                continue
            timer = Timer(task, cfg, old)
            t0 = time.perf_counter()
            try:
                t = timer.measure(cand, 0.7)
                res["old"][tid] = {
                    "wall_s": round(time.perf_counter() - t0, 3),
                    "processes": len(timer.runs),
                    "reference_cv": round(t.reference_cv, 4),
                    "candidate_cv": round(t.candidate_cv, 4),
                }
            except Exception as exc:
                res["old"][tid] = {"error": f"{type(exc).__name__}: {exc}"}
    walls = [r["wall_s"] for r in res["tasks"].values() if "speedup" in r]
    cvs = [max(r["reference_cv"], r["candidate_cv"]) for r in res["tasks"].values() if "speedup" in r]
    res["summary"] = {
        "timed": len(walls),
        "of": len(tasks),
        "median_wall_s": round(statistics.median(walls), 3) if walls else None,
        "max_wall_s": max(walls) if walls else None,
        "max_cv": max(cvs) if cvs else None,
        "cv_over_3pct": sum(c > 0.03 for c in cvs),
        "methods": sorted({r.get("method") for r in res["tasks"].values() if r.get("method")}),
        "candidate": a.candidate,
        "side_budget_ms": tcfg.side_budget_ms,
    }
    res["bench_wall_s"] = round(time.perf_counter() - t_start, 1)
    (a.out / "stage.json").write_text(json.dumps(res, indent=1))
    print(json.dumps(res["summary"], indent=1))
    shutil.rmtree(base, ignore_errors=True)
    shutil.rmtree(cache, ignore_errors=True)
    return 0


# ------------------------------------------------------------------ batch


def slices(spec: str | None) -> list[tuple[int, int]]:
    """``I/K`` (the I-th of K slices) or ``I-J/K`` (slices I to J of K, one after another)."""
    if not spec:
        return [(0, 0)]
    first, k = spec.split("/")
    lo, _, hi = first.partition("-")
    return [(i, int(k)) for i in range(int(lo), int(hi or lo) + 1)]


def batch(a: argparse.Namespace) -> int:
    """One batch, or several slices of it one after another: each slice its own ``beavertui batch`` process
    with its own result file, all of this command's slices sharing one cache folder (as one run of them
    all would); a slice is not started with less than ``--min-left-s`` of the budget left."""
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "bench.toml").write_text(PROTOCOL)
    every = spread(runnable_tasks(), a.tasks)
    parts = slices(a.slice)
    cache_home = Path(tempfile.mkdtemp(prefix=f"beaver-{a.mode}-"))
    t0 = time.perf_counter()
    try:
        for i, k in parts:
            left = a.budget_s - (time.perf_counter() - t0)
            if len(parts) > 1 and left < a.min_left_s:
                print(json.dumps({"mode": a.mode, "slice": f"{i}/{k}", "not_started": f"{left:.0f} s left"}))
                break
            one_batch(a, every, i, k, cache_home, left)
    finally:
        shutil.rmtree(cache_home, ignore_errors=True)
    return 0


def one_batch(a: argparse.Namespace, every: list[str], i: int, k: int, cache_home: Path, left: float) -> None:
    tasks, part, label = every, "", None
    if k:
        size = -(-len(every) // k)
        tasks = every[(i - 1) * size : i * size]
        part, label = f"-{i}-of-{k}", f"{i}/{k}"
    builds = a.builds_in_timing
    gpus = a.gpus if a.mode == "scheduled" else None
    run_id = f"{a.mode}{part}" + (f"-builds-{builds}" if a.mode == "scheduled" and builds != "auto" else "")
    run_id += f"-gpus-{gpus.replace(',', '-')}" if gpus else ""
    extra = ["--jobs", "1", "--no-cache", "--gpu-share", "1"] if a.mode == "naive" else []
    if a.mode == "scheduled":
        extra += ["--cache", str(cache_home / "builds"), "--builds-in-timing", builds]
        extra += ["--pause-for-timing", a.pause_for_timing]
        extra += ["--gpus", gpus] if gpus else []
    cmd = beaver(
        "batch", "--protocol", str(a.out / "bench.toml"), "--models", "scripted:@alternate",
        "--tasks", ",".join(tasks), "--sessions-dir", str(a.out / "sessions"), "--run-id", run_id, "--quiet",
        *extra,
    )  # fmt: skip
    saved = {k: os.environ.get(k) for k in ("XDG_CACHE_HOME", INPROCESS_ENV, SIDE_BUDGET_ENV)}
    os.environ["XDG_CACHE_HOME"] = str(cache_home)  # fresh reference builds and baselines for this command
    os.environ[INPROCESS_ENV] = a.timing  # how the batch's native timing stages run (service/environment.py)
    if a.side_budget_ms is not None:
        os.environ[SIDE_BUDGET_ENV] = f"{a.side_budget_ms:g}"
    budget_ms = side_budget_setting()  # what the batch's timing stages use
    try:
        wall, rc, cut = timed(cmd, a.out / f"batch-{run_id}.log", kill_after=left)
    finally:
        for key, v in saved.items():
            if v is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = v
    run_dir = a.out / "sessions" / run_id
    out = {
        "mode": a.mode,
        "timing": a.timing,
        "side_budget_ms": budget_ms,
        "builds_in_timing": builds if a.mode == "scheduled" else None,
        "pause_for_timing": a.pause_for_timing if a.mode == "scheduled" else None,
        "gpus_asked": gpus,
        "slice": label,
        "tasks": tasks,
        "wall_s": round(wall, 1),
        "rc": rc,
        "cut_by_budget": cut,
        "machine": gpu_info(),
        "summary": summary(run_dir),
        **session_stats(run_dir),
    }
    (a.out / f"batch-{run_id}.json").write_text(json.dumps(out, indent=1))
    print(json.dumps({k: out[k] for k in ("mode", "slice", "wall_s", "rc", "cut_by_budget")}), flush=True)


# ------------------------------------------------------------------ summary


def builds_words(b: dict[str, Any]) -> str:
    """`` (builds stopped for timing)`` and the like for a scheduled run; a result written before the setting
    existed says nothing, and its builds went on."""
    how = b.get("builds_in_timing") or "go"
    words = {"stop": " (builds stopped for timing)", "go": " (builds going on during timing)"}
    if how == "auto":  # the batch's default: stopped on one GPU, going on with more
        many = len(gpus_of(b)) > 1
        said = f"{words['go' if many else 'stop'][:-1]}: auto, on {'several GPUs' if many else 'one GPU'})"
    else:
        said = words[how]
    rule = PAUSE_WORDS.get(b.get("pause_for_timing") or "")
    return f"{said[:-1]}; {rule})" if rule else said


#: A scheduled result's --pause-for-timing, in words (a result written before the setting was recorded says
#: nothing of it).
PAUSE_WORDS = {
    "runs": "runs stopped for timing, sanitizer runs waited for",
    "all": "runs and sanitizer runs stopped for timing",
    "none": "nothing stopped for timing",
}


def gpus_of(b: dict[str, Any]) -> list[str]:
    """The GPUs a batch ran on: those its summary measured busy (every result file has them)."""
    return sorted((b.get("summary") or {}).get("gpu_busy_fraction") or {})


def gpu_words(b: dict[str, Any]) -> str:
    """`` on 2 GPUs`` for a batch on more than one GPU (empty on one)."""
    n = len(gpus_of(b))
    return f" on {n} GPUs" if n > 1 else ""


def scaling(sched: list[dict[str, Any]]) -> tuple[list[str], list[dict[str, Any]]]:
    """Finished scheduled runs on several GPUs against finished runs of the same tasks on one GPU, timed
    alike: finished sessions per minute, and the ratio (with every session finished, the walls' ratio)."""
    lines: list[str] = []
    got: list[dict[str, Any]] = []
    done = [b for b in sched if finished(b) and b["summary"].get("done") == len(b["tasks"])]
    for many in (b for b in sched if len(gpus_of(b)) > 1):
        if many not in done:
            lines.append(
                f"| sessions per minute{gpu_words(many)} over one GPU, run of {many['wall_s']} s | not claimed: that "
                f"run was cut, failed or left sessions unfinished (rc {many['rc']}, cut {many['cut_by_budget']}) |"
            )
            continue
        ones = [
            b for b in done
            if len(gpus_of(b)) == 1 and sorted(b["tasks"]) == sorted(many["tasks"]) and timed_alike(b, many)
        ]  # fmt: skip
        if not ones:
            lines.append(
                f"| sessions per minute{gpu_words(many)} over one GPU ({len(many['tasks'])} tasks) | not claimed: "
                "no finished run of the same tasks on one GPU, timed alike |"
            )
            continue
        n = len(many["tasks"])
        for one in ones:
            rate_many, rate_one = 60 * n / many["wall_s"], 60 * n / one["wall_s"]
            ratio = round(rate_many / rate_one, 2)
            same = many["machine"].get("gpus") == one["machine"].get("gpus")
            where = "the same machine" if same else "different machines"
            lines.append(
                f"| sessions per minute{gpu_words(many)} over one GPU, {n} tasks ({where}; "
                f"{many['machine'].get('cpus')} and {one['machine'].get('cpus')} CPUs) | "
                f"{rate_many:.2f} / {rate_one:.2f} per minute ({many['wall_s']} s and {one['wall_s']} s) = "
                f"**{ratio}x** |"
            )
            got.append(
                {"tasks": n, "gpus": len(gpus_of(many)), "wall_s": many["wall_s"], "one_gpu_wall_s": one["wall_s"],
                 "sessions_per_min": round(rate_many, 2), "one_gpu_sessions_per_min": round(rate_one, 2),
                 "ratio": ratio, "same_machine": same}
            )  # fmt: skip
    return lines, got


def finished(b: dict[str, Any]) -> bool:
    """A batch that ran to its end: not cut by the budget, exit 0, every session it started well formed."""
    return not b["cut_by_budget"] and b["rc"] == 0 and not b.get("sessions_bad")


def disjoint(want: list[str], pieces: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Slices of the wanted tasks that share no task (the first of repeats)."""
    chosen: list[dict[str, Any]] = []
    seen: set[str] = set()
    for b in pieces:
        if set(b["tasks"]) <= set(want) and not seen & set(b["tasks"]):
            chosen.append(b)
            seen |= set(b["tasks"])
    return chosen


def cover(want: list[str], pieces: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Finished slices that cover the wanted tasks exactly once (the first of repeats), or none."""
    chosen = disjoint(want, pieces)
    return chosen if sorted(t for b in chosen for t in b["tasks"]) == want else []


def timed_alike(b: dict[str, Any], other: dict[str, Any]) -> bool:
    """Both batches timed their native stages the same way (in one process or not, the same side budget; a
    result file written before the side budget existed timed every launch, as a budget of 0 does)."""
    return b.get("timing", "inprocess") == other.get("timing", "inprocess") and b.get(
        "side_budget_ms", 0.0
    ) == other.get("side_budget_ms", 0.0)


def slice_key(b: dict[str, Any]) -> tuple[str, int, int]:
    """Order batches by mode, then by their slices' numbers (2/40 before 10/40), whole runs first."""
    if not b.get("slice"):
        return (b["mode"], 0, 0)
    first, k = b["slice"].split("/")
    return (b["mode"], int(k), int(first))


def summarize(a: argparse.Namespace) -> int:
    stages, batches = [], []
    for d in a.dirs:
        for p in sorted(Path(d).rglob("stage.json")):
            stages.append(json.loads(p.read_text()))
        for p in sorted(Path(d).rglob("batch-*.json")):
            batches.append(json.loads(p.read_text()))
    batches.sort(key=slice_key)
    out: dict[str, Any] = {"stage": [s["summary"] for s in stages]}
    lines = ["| what | measured |", "|---|---|"]
    for s in stages:
        m = s["summary"]
        what = (
            ""
            if m.get("candidate", "reference") == "reference"
            else f" ({m['candidate']} start as candidate)"
        )
        if "side_budget_ms" in m:
            what += f", side budget {m['side_budget_ms']:g} ms" if m["side_budget_ms"] else ", no side budget"
        lines.append(
            f"| native timing stage{what}, {m['timed']} of {m['of']} tasks | median {m['median_wall_s']} s, max "
            f"{m['max_wall_s']} s; largest CV {100 * (m['max_cv'] or 0):.2f}%, {m['cv_over_3pct']} over 3% |"
        )
        if len(s["tasks"]) <= 3:  # a run of a few tasks (--part cap): each task's stage as measured
            for tid, r in s["tasks"].items():
                got = (
                    f"{r['wall_s']} s, speedup {r['speedup']}, {r['samples']} candidate samples"
                    f"{'; ' + r['note'] if r.get('note') else ''}"
                    if "speedup" in r
                    else f"error: {r.get('error') or r.get('skipped')}"
                )
                lines.append(f"| {tid}{what} | {got} |")
        for tid, r in (s.get("old") or {}).items():
            new = s["tasks"].get(tid, {})
            before = (
                f"{r['wall_s']} s" if "wall_s" in r else f"not measured ({r.get('error', 'budget')[:120]})"
            )
            after = (
                f"{new['wall_s']} s" if "speedup" in new else f"not measured ({new.get('error', 'budget')})"
            )
            lines.append(f"| {tid}: before / after | {before} / {after} |")
    sched = [b for b in batches if b["mode"] == "scheduled" and not b.get("slice")]
    naive = [b for b in batches if b["mode"] == "naive"]
    for b in sched:
        lines.append(
            f"| scheduled{builds_words(b)}{gpu_words(b)}, {len(b['tasks'])} tasks | {b['wall_s']} s (rc {b['rc']}, "
            f"cut {b['cut_by_budget']}) |"
        )
    for b in naive:
        lines.append(
            f"| naive{', slice ' + b['slice'] if b.get('slice') else ''}, {len(b['tasks'])} tasks | "
            f"{b['wall_s']} s (rc {b['rc']}, cut {b['cut_by_budget']}) |"
        )
    out["ratios"] = []
    for sc in (b for b in sched if len(gpus_of(b)) <= 1):  # the naive side runs on one GPU
        want = sorted(sc["tasks"])
        if not finished(sc):
            lines.append(
                f"| ratio for the scheduled run{builds_words(sc)} of {sc['wall_s']} s | not claimed: that run was "
                f"cut or failed "
                f"(rc {sc['rc']}, cut {sc['cut_by_budget']}) |"
            )
            continue
        same = [b for b in naive if finished(b) and timed_alike(b, sc)]
        whole = [b for b in same if not b.get("slice") and sorted(b["tasks"]) == want]
        pieces = [b for b in same if b.get("slice")]
        runs = whole[:1] or cover(want, pieces)
        if not runs:
            part = disjoint(want, pieces)
            n = sum(len(b["tasks"]) for b in part)
            part_s = round(sum(b["session_wall_s_sum"] for b in part), 1)
            at_least = round(part_s / sc["wall_s"], 2) if part else None
            bound = (
                f"; the {n} naive tasks run so far took {part_s} s (sessions' walls), so the ratio is at least "
                f"{at_least}x (the other tasks can only add to the naive side)"
                if part
                else ""
            )
            lines.append(
                f"| ratio for the scheduled run{builds_words(sc)} of {sc['wall_s']} s ({len(want)} tasks) | not "
                f"claimed: finished "
                f"naive slices cover {n} of its {len(want)} tasks{bound} |"
            )
            out["ratios"].append(
                {"tasks": len(want), "scheduled_s": sc["wall_s"], "naive_tasks_run": n, "naive_s_so_far": part_s,
                 "at_least": at_least}
            )  # fmt: skip
            continue
        walls = round(sum(b["wall_s"] for b in runs), 1)
        total = round(sum(b["session_wall_s_sum"] for b in runs), 1)
        how = "one run" if whole else f"sum of {len(runs)} slices ({', '.join(b['slice'] for b in runs)})"
        entry = {
            "tasks": len(want), "scheduled_s": sc["wall_s"], "naive_s": total, "naive_process_walls_s": walls,
            "naive_summed": how,
        }  # fmt: skip
        entry["speedup"] = round(total / sc["wall_s"], 2)
        lines.append(f"| naive ({how}: the sessions' walls; the processes' walls sum to {walls} s) / "
                     f"scheduled{builds_words(sc)}, {len(want)} tasks | {total} s / {sc['wall_s']} s = "
                     f"**{entry['speedup']}x** |")  # fmt: skip
        entry["builds_in_timing"] = sc.get("builds_in_timing") or "go"
        out["ratios"].append(entry)
    more, out["scaling"] = scaling(sched)
    lines += more
    out["batches"] = [{k: b[k] for k in ("mode", "slice", "wall_s", "rc", "cut_by_budget")} for b in batches]
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1))
    print("\n".join(lines))
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("stage")
    s.add_argument("--out", type=Path, required=True)
    s.add_argument("--task", action="append")
    s.add_argument("--compare-old", action="store_true")
    s.add_argument("--budget-s", type=float, default=300.0)
    s.add_argument("--candidate", choices=("reference", "broken"), default="reference")
    s.add_argument("--side-budget-ms", type=float, help="the driver's per-side budget of a round (0: off)")
    b = sub.add_parser("batch")
    b.add_argument("--out", type=Path, required=True)
    b.add_argument("--mode", choices=("scheduled", "naive"), required=True)
    b.add_argument("--tasks", type=int, default=40)
    b.add_argument("--slice")
    b.add_argument("--budget-s", type=float, default=540.0)
    b.add_argument(
        "--min-left-s", type=float, default=100.0,
        help="with several slices: do not start one with less than this left of the budget",
    )  # fmt: skip
    b.add_argument(
        "--timing", choices=("inprocess", "process"), default="inprocess",
        help="native timing stages in one process (default) or one process per side and round",
    )  # fmt: skip
    b.add_argument(
        "--side-budget-ms", type=float,
        help="in-process timing: a side's most host time a round (BEAVERTUI_SIDE_BUDGET_MS; 0: off)",
    )  # fmt: skip
    b.add_argument(
        "--builds-in-timing", choices=("auto", "go", "stop"), default="auto",
        help="scheduled: the batch's --builds-in-timing (go or stop: the run's id says which)",
    )  # fmt: skip
    b.add_argument(
        "--pause-for-timing", choices=("runs", "all", "none"), default="runs",
        help="scheduled: the batch's --pause-for-timing (its result records it)",
    )  # fmt: skip
    b.add_argument(
        "--gpus",
        help="scheduled: the batch's --gpus, e.g. 0 or 0,1 (the run's id and result say which; default: every "
        "GPU the batch sees)",
    )
    m = sub.add_parser("summary")
    m.add_argument("--json", type=Path, help="also write the table's content as JSON to this file")
    m.add_argument("dirs", nargs="+")
    a = ap.parse_args()
    if a.cmd == "stage":
        return stage(a)
    if a.cmd == "batch":
        return batch(a)
    return summarize(a)


if __name__ == "__main__":
    sys.exit(main())
