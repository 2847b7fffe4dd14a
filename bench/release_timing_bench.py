"""The release's timing stage, measured on a GPU machine: each instance's reference submission timed against
the reference, the GPU to itself, with every run started ahead of its turn and without, side by side.

    python3 bench/release_timing_bench.py run --corpus DIR --out DIR [--tasks FILE] [--task ID ...]
                                              [--modes on,off] [--budget-s S] [--jobs N] [--after DIR ...]
                                              [--klock K]
    python3 bench/release_timing_bench.py summary [--json FILE] DIR [DIR ...]
    python3 bench/release_timing_bench.py compare [--mode on] [--json FILE] DIR_A DIR_B

``run``: first, on the CPU (``--jobs`` threads, as build slots would), each task's reference work dir and
timing prerequisites (``Timer.prepare``: the reference build, the CUPTI injection library) and a candidate
work dir with the reference submission (families.reference_submission: what ``scripted:@alternate``
submits), built with the task's own build command. Then one task at a time, the GPU to itself:
``Timer.measure`` (gate 0.7) in each mode of ``--modes`` (``on``: TimingConfig.prestart, each run started
while the one before it runs and parked before CUDA; ``off``: each run started in its turn), the first mode
alternating from task to task so that neither always comes first. Per timing: its wall time, the method, the
runs a side, the speedup (about 1: the same source on both sides), both CVs, the note, and where each run's
time went (Timer.phases). ``--build-load N``: meanwhile N threads build the candidates again in fresh work
dirs, one build after another, as a batch's other sessions build while a GPU is held for timing (the count
of those builds is recorded); mode ``stop`` is ``on`` with those builds stopped (SIGSTOP) while it measures,
as ``batch --builds-in-timing stop`` does (how many were stopped is recorded); mode ``park`` is ``on`` with a
testbench's runs started and parked before the stage's clock starts, as a batch on one GPU parks them on a
build slot before its hold (Timer.park; how long that took is recorded; for CUPTI tasks the same as ``on``). The result file (``DIR/release-stage.json``) is written again after every task, so
a run cut by its time limit keeps what it measured; tasks not reached are listed as such, and a later run
with ``--after`` that folder times only the tasks it did not finish.

``run --klock K``: the hold per call against the hold per process (beaver_cupti.c, BEAVER_KERNEL_LOCK). The
tasks are taken in rounds of K; each round times its tasks one stage at a time as a batch does today (mode
``on``, the GPU to one stage for whole processes), and all K stages at once, every timed process taking an
exclusive lock on one shared file around each call that puts work on the GPU, so that their host work
overlaps and their device work never does; the design that goes first alternates round by round, so that a
drift of the machine weighs on both. A round starts only within ``--budget-s``, and then runs both designs.
Each task's row holds one timing per design (with its samples, for the speedup's 95% interval), and
``rounds`` the wall time of each design per round.

``summary``: the results of the given folders in one Markdown table on stdout (and as JSON with ``--json``):
(the folders must share one ``--build-load``) per mode and family the number timed, the median and largest wall time of a timing stage, the largest CV,
the speedups' range; whether the median over every task of the runs, the untimed included, is within
``--target-s`` (3 s), beyond it, or not known from the ones timed; the tasks timed in both modes side by side (the median ratio of their walls); the
median phases of a run; and, where the kernels were placed on the monotonic clock, how much of the time the
runs held the GPU a kernel of theirs ran. For a ``--klock`` folder: per design the wall time for the set and
the median stage, per task both speedups and their ratio, how many tasks' speedups differ by more than the
95% interval of their difference, and whether the set shows what adopting the lock needs (klock_summary).

``compare``: one folder against another in one mode, on the tasks timed in both (a load against the GPU
alone, one build priority against another): the median stage, the median wall per process and the median
phases of each, and the medians of the per-task ratios.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import math
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from timing_floor_bench import gpu_info  # noqa: E402

RESULT = "release-stage.json"
#: The bench's modes: how TimingConfig times in each (``on``: runs started ahead, let go once the run before
#: has ended; ``exit``: let go at its exit mark, TimingConfig.go_at_exit; ``off``: runs started in turn;
#: ``stop``: as ``on``, with the ``--build-load`` builds stopped while it measures, BuildSlots.stopped;
#: ``park``: as ``on``, with a testbench's runs started and parked before the stage's clock starts, as a batch
#: on one GPU does before its hold, Timer.park; the same as ``on`` for CUPTI tasks).
MODES: dict[str, dict[str, Any]] = {
    "on": {"prestart": "all", "go_at_exit": False},
    "exit": {"prestart": "all", "go_at_exit": True},
    "off": {"prestart": "off", "go_at_exit": False},
    "stop": {"prestart": "all", "go_at_exit": False},
    "park": {"prestart": "all", "go_at_exit": False},
}
#: The modes that stop the load's builds while they measure (a batch's --builds-in-timing stop).
STOPS = {"stop"}
#: The modes that park a testbench's runs before the stage (a batch's hold on a machine with one GPU).
PARKS = {"park"}
#: The modes held side by side in the summary, each with the mode it is held against: (key, mode, against).
#: The first pair is always computed; each other one when a folder timed its mode.
PAIRS = (("paired", "on", "off"), ("paired_exit", "exit", "on"), ("paired_stop", "stop", "on"),
         ("paired_park", "park", "on"))  # fmt: skip


def wanted(a: argparse.Namespace, ids: list[str]) -> list[str]:
    picks: list[str] = list(a.task or [])
    if a.tasks:
        picks += [
            ln.strip() for ln in a.tasks.read_text().splitlines() if ln.strip() and not ln.startswith("#")
        ]
    out: list[str] = []
    for pat in picks:
        hit = [i for i in ids if fnmatch.fnmatchcase(i, pat)]
        if not hit:
            raise SystemExit(f"no task of the corpus matches {pat!r}")
        out += [i for i in hit if i not in out]
    return out


def timed_before(dirs: list[Path], modes: list[str]) -> set[str]:
    """Tasks that the results in ``dirs`` timed in every one of ``modes``."""
    out: set[str] = set()
    for d in dirs:
        f = d / RESULT
        if not f.is_file():
            raise SystemExit(f"--after {d}: no {RESULT} there")
        for tid, row in json.loads(f.read_text())["tasks"].items():
            if all(isinstance(row.get(m), dict) and "speedup" in row[m] for m in modes):
                out.add(tid)
    return out


def median_bounds(walls: list[float], n: int) -> list[float] | None:
    """The least and the most the median of ``n`` stages can be when ``walls`` are the timed ones: the
    untimed taking no time at all, and taking forever. None when the most is unbounded (half or more of
    the ``n`` untimed) or nothing is timed."""
    if not walls or len(walls) > n:
        return None
    untimed = n - len(walls)
    low = statistics.median([0.0] * untimed + walls)
    high = statistics.median(walls + [math.inf] * untimed)
    return None if math.isinf(high) else [round(low, 3), round(high, 3)]


def run(a: argparse.Namespace) -> int:
    from beavertui.batch.build_slots import BuildSlots
    from beavertui.engine.corpus import families
    from beavertui.engine.corpus.load import load_corpus
    from beavertui.engine.host.gpu import probe
    from beavertui.engine.stage import stages
    from beavertui.engine.timing.speedup import Timer
    from beavertui.service.environment import stage_config, timing_config

    t_start = time.perf_counter()
    a.out.mkdir(parents=True, exist_ok=True)
    modes = [m.strip() for m in a.modes.split(",") if m.strip()]
    if not modes or any(m not in MODES for m in modes):
        raise SystemExit(f"--modes {a.modes!r}: expected a comma-separated list of {', '.join(MODES)}")
    machine = probe()
    cfg = stage_config(sm=machine.sm)
    cache = Path(tempfile.mkdtemp(prefix="beaver-release-stage-cache-"))
    tcfg = timing_config(cache=cache)
    corpus = load_corpus(a.corpus)
    ids = wanted(a, sorted(t.id for t in corpus.tasks))
    if a.klock is not None and a.klock < 2:
        raise SystemExit(f"--klock {a.klock}: expected 2 or more stages at once")
    if a.klock and a.build_load:
        raise SystemExit("--klock times the GPU's share alone: without --build-load")
    done = timed_before(a.after or [], list(DESIGNS) if a.klock else modes)
    if done:
        print(
            f"{len([i for i in ids if i in done])} task(s) timed in every mode by an earlier run: skipped",
            flush=True,
        )
        ids = [i for i in ids if i not in done]
    base = Path(tempfile.mkdtemp(prefix="beaver-release-stage-work-"))
    res: dict[str, Any] = {"machine": gpu_info(), "gpu": machine.gpu.slug if machine.gpu else None}
    res.update(modes=modes, tasks={}, order=ids, build_load=a.build_load, build_priority=priority(cfg))

    def save() -> None:
        res["bench_wall_s"] = round(time.perf_counter() - t_start, 1)
        (a.out / RESULT).write_text(json.dumps(res, indent=1))

    def prebuild(tid: str) -> tuple[str, Any, float, str | None]:
        t0 = time.perf_counter()
        try:
            task = corpus.get(tid)
            Timer(task, cfg, tcfg).prepare()
            code = families.reference_submission(task)
            if code is None:
                return tid, None, time.perf_counter() - t0, families.why_no_reference_submission(task)
            cand = stages.prepare(task, code, base)
            b = stages.build(cand, cfg)
            if b.rc != 0:
                tail = [ln for ln in b.log.splitlines() if ln.strip()][-1:] or ["no output"]
                return (
                    tid,
                    None,
                    time.perf_counter() - t0,
                    f"candidate build failed (rc {b.rc}): {tail[0][:200]}",
                )
            return tid, cand, time.perf_counter() - t0, None
        except Exception as exc:  # recorded, the bench goes on
            return tid, None, time.perf_counter() - t0, f"{type(exc).__name__}: {exc}"

    with ThreadPoolExecutor(max(1, a.jobs or (os.cpu_count() or 2) // 2)) as ex:
        built = list(ex.map(prebuild, ids))
    res["build_wall_s"] = round(time.perf_counter() - t_start, 1)
    print(f"built {len(built)} in {res['build_wall_s']} s", flush=True)
    if a.klock:
        run_klock(a, corpus, cfg, tcfg, built, res, t_start)
        save()
        return 0
    stop = threading.Event()
    loads: list[int] = []
    # the load's builds hold slots of their own and register their processes, as a batch's builds do, so
    # that a mode of STOPS can stop them while it measures
    slots = BuildSlots(max(1, a.build_load), stop_for_timing=True)
    building = replace(cfg, pausable=slots.running)

    def build_load(k: int) -> None:
        """Build the built candidates again, one after another in fresh work dirs, until stopped: the
        builds a batch runs on its other cores while a GPU is held for timing."""
        pool = [(tid, cand) for tid, cand, _, err in built if err is None and cand is not None]
        n = k
        while pool and not stop.is_set():
            tid, cand = pool[n % len(pool)]
            n += 1
            work = stages.prepare(
                corpus.get(tid), (cand.path / corpus.get(tid).solution_file).read_text(), load_base
            )
            with slots.hold():
                stages.build(work, building)
            shutil.rmtree(work.path, ignore_errors=True)
            loads.append(1)

    load_base = Path(tempfile.mkdtemp(prefix="beaver-release-stage-load-"))
    threads = [threading.Thread(target=build_load, args=(k,), daemon=True) for k in range(a.build_load)]
    for th in threads:
        th.start()
    for n, (tid, cand, build_s, err) in enumerate(built):
        row: dict[str, Any] = {"family": corpus.get(tid).family, "build_s": round(build_s, 2)}
        res["tasks"][tid] = row
        if err is not None or cand is None:
            row["error"] = err
            continue
        task = corpus.get(tid)
        for mode in modes if n % 2 == 0 else modes[::-1]:
            if time.perf_counter() - t_start > a.budget_s:
                row.setdefault("not_reached", []).append(mode)
                continue
            timer = Timer(task, cfg, replace(tcfg, **MODES[mode]))
            timer.prepare()
            parked_s = None
            if mode in PARKS and timer.parks:  # before the clock, as on a build slot before the hold
                t0 = time.perf_counter()
                timer.park(cand)
                parked_s = round(time.perf_counter() - t0, 3)
            t0 = time.perf_counter()
            stopped = 0
            try:
                with slots.stopped() if mode in STOPS else nullcontext(0) as stopped:
                    t = timer.measure(cand, 0.7)
            except Exception as exc:
                row[mode] = {
                    "error": f"{type(exc).__name__}: {exc}",
                    "wall_s": round(time.perf_counter() - t0, 3),
                }
                continue
            finally:
                timer.close()  # runs parked ahead that the timing did not use
            row[mode] = timing_row(t, timer, time.perf_counter() - t0)
            if mode in STOPS:
                row[mode]["builds_stopped"] = stopped
            if parked_s is not None:
                row[mode]["parked_ahead_s"] = parked_s
            print(
                f"{tid} [{mode}]: {row[mode]['wall_s']} s, {t.method}, {t.runs} runs, speedup {t.speedup:.3f}, "
                f"CVs {100 * t.reference_cv:.2f}% / {100 * t.candidate_cv:.2f}%",
                flush=True,
            )
        save()
    stop.set()
    res["load_builds"] = len(loads)
    save()
    for th in threads:
        th.join(timeout=60)
    return 0


def timing_row(t: Any, timer: Any, wall_s: float) -> dict[str, Any]:
    """What the result file keeps of one timing (a TimingResult and the Timer that made it)."""
    return {
        "wall_s": round(wall_s, 3),
        "method": t.method,
        "runs": t.runs,
        "speedup": round(t.speedup, 4),
        "reference_ms": t.reference_ms,
        "candidate_ms": t.candidate_ms,
        "reference_cv": round(t.reference_cv, 4),
        "candidate_cv": round(t.candidate_cv, 4),
        "reference_samples": list(t.reference_samples),
        "candidate_samples": list(t.candidate_samples),
        "unstable": t.unstable,
        "note": t.note,
        "processes": [round(r.duration_s or 0.0, 3) for _, r in timer.runs],
        "phases": timer.phases,
    }


#: ``run --klock K``: the two designs timed side by side. ``alone``: one timing stage at a time, the GPU to
#: itself for whole processes (mode ``on``, as a batch times today); ``klock``: K stages at once, every timed
#: process holding the GPU per call that puts work on it (beaver_cupti.c, BEAVER_KERNEL_LOCK, mode ex) on one
#: lock file shared by all of them.
DESIGNS = ("alone", "klock")
#: The lock file's mode for the timed processes of design ``klock``.
KLOCK_MODE = "ex"


def klock_rounds(ids: list[str], k: int) -> list[list[str]]:
    """The tasks in rounds of ``k``, in their order: the last round may be shorter."""
    return [ids[i : i + k] for i in range(0, len(ids), k)]


def design_order(r: int) -> tuple[str, ...]:
    """The order of the two designs in round ``r``: one at a time first in even rounds, the kernel lock
    first in odd ones, so that a drift of the machine over the run weighs on both alike."""
    return DESIGNS if r % 2 == 0 else DESIGNS[::-1]


def klock_environment(lock: Path, base: dict[str, str]) -> dict[str, str]:
    """A stage environment (``base``: what a stage inherits) whose timed processes hold the GPU per call on
    ``lock``."""
    return {**base, "BEAVER_KERNEL_LOCK": str(lock), "BEAVER_KERNEL_LOCK_MODE": KLOCK_MODE}


def klock_schedule(
    ids: list[str],
    k: int,
    may_start: Callable[[], bool],
    time_one: Callable[[str, str], None],
    on_round: Callable[[dict[str, Any]], None],
) -> list[str]:
    """Time ``ids`` in rounds of ``k`` (klock_rounds), each round in both designs in design_order's order:
    ``time_one(task, "alone")`` for its tasks one after another, then (or first) ``time_one(task, "klock")``
    for all of them at once, one thread each. A round starts only while ``may_start()``; ``on_round`` gets
    each round's record (its tasks, the order of the designs, each design's wall clock seconds). Returns the
    tasks of the rounds not started."""
    left: list[str] = []
    for r, group in enumerate(klock_rounds(ids, k)):
        if left or not may_start():
            left += group
            continue
        rec: dict[str, Any] = {"tasks": group, "order": list(design_order(r))}
        for design in design_order(r):
            t0 = time.perf_counter()
            if design == "alone":
                for tid in group:
                    time_one(tid, design)
            else:
                threads = [threading.Thread(target=time_one, args=(tid, design)) for tid in group]
                for th in threads:
                    th.start()
                for th in threads:
                    th.join()
            rec[f"{design}_wall_s"] = round(time.perf_counter() - t0, 3)
        on_round(rec)
    return left


def run_klock(
    a: argparse.Namespace,
    corpus: Any,
    cfg: Any,
    tcfg: Any,
    built: list[Any],
    res: dict[str, Any],
    t_start: float,
) -> None:
    """Time the built tasks in rounds of ``a.klock``: in each round the same tasks one stage at a time and
    all at once under the kernel lock, in the order design_order gives; a round starts only while the budget
    lasts, and both of its designs run. Each task's row gets one timing per design; ``res["rounds"]`` each
    round's tasks, order and the wall time of each design."""
    from beavertui.engine.host import sandbox
    from beavertui.engine.timing.speedup import Timer

    lock_dir = Path(tempfile.mkdtemp(prefix="beaver-klock-"))
    lock = lock_dir / "gpu.lock"
    lock.touch()  # made before any stage: the sandbox keeps the paths the environment names
    # both designs from the same inherited environment, without a lock this process may have been given
    base = {
        k: v for k, v in sandbox.inherited_env(os.environ).items() if not k.startswith("BEAVER_KERNEL_LOCK")
    }
    plain, locked = replace(cfg, env=base), replace(cfg, env=klock_environment(lock, base))
    timing = replace(tcfg, **MODES["on"])
    res.update(klock=a.klock, klock_mode=KLOCK_MODE, rounds=[])
    ok = {tid: cand for tid, cand, _, err in built if err is None and cand is not None}
    for tid, _cand, build_s, err in built:
        res["tasks"][tid] = {"family": corpus.get(tid).family, "build_s": round(build_s, 2)}
        if err is not None or tid not in ok:
            res["tasks"][tid]["error"] = err or "no candidate"

    def one(tid: str, design: str) -> None:
        row = res["tasks"][tid]
        timer = Timer(corpus.get(tid), locked if design == "klock" else plain, timing)
        t0 = time.perf_counter()
        try:
            timer.prepare()  # built before the rounds: found in the cache
            t0 = time.perf_counter()  # a stage's wall, as the modes' (the round's wall counts both)
            t = timer.measure(ok[tid], 0.7)
            row[design] = timing_row(t, timer, time.perf_counter() - t0)
            print(
                f"{tid} [{design}]: {row[design]['wall_s']} s, {t.runs} runs, speedup {t.speedup:.3f}, "
                f"CVs {100 * t.reference_cv:.2f}% / {100 * t.candidate_cv:.2f}%",
                flush=True,
            )
        except Exception as exc:  # recorded, the bench goes on
            row[design] = {
                "error": f"{type(exc).__name__}: {exc}",
                "wall_s": round(time.perf_counter() - t0, 3),
            }
        finally:
            timer.close()

    def saved(rec: dict[str, Any]) -> None:
        res["rounds"].append(rec)
        walls = ", ".join(f"{d} {rec[f'{d}_wall_s']} s" for d in DESIGNS)
        print(f"round {len(res['rounds']) - 1}: {walls}", flush=True)
        res["bench_wall_s"] = round(time.perf_counter() - t_start, 1)
        (a.out / RESULT).write_text(json.dumps(res, indent=1))

    left = klock_schedule(
        [t for t in res["order"] if t in ok],
        a.klock,
        lambda: time.perf_counter() - t_start <= a.budget_s,
        one,
        saved,
    )
    for tid in left:
        res["tasks"][tid]["not_reached"] = list(DESIGNS)
    shutil.rmtree(lock_dir, ignore_errors=True)


def speedup_interval(timed: dict[str, Any]) -> float | None:
    """The half-width of a timing's 95% speedup interval on the log scale (adaptive.interval, from its
    samples), or None without two samples a side."""
    from beavertui.engine.timing.adaptive import interval

    got = interval(list(timed.get("reference_samples") or []), list(timed.get("candidate_samples") or []))
    return None if got is None else math.log(got[1])


def klock_summary(
    rounds: list[dict[str, Any]], rows: dict[str, dict[str, Any]]
) -> tuple[list[str], dict[str, Any]]:
    """The two designs of ``run --klock`` side by side: per design the wall time for the set (the rounds
    where both ran), the median stage and the largest CV; per task both speedups, their 95% intervals and
    their ratio, and whether the two differ by more than the 95% interval of their difference (the two
    half-widths combined in quadrature, log scale); and whether the set shows what adopting it needs."""
    full = [r for r in rounds if all(f"{d}_wall_s" in r for d in DESIGNS)]
    out: dict[str, Any] = {
        "rounds": len(full),
        "stages_at_once": max((len(r["tasks"]) for r in full), default=0),
    }
    sums = {d: sum(float(r[f"{d}_wall_s"]) for r in full) for d in DESIGNS}
    walls = {d: round(v, 1) for d, v in sums.items()}
    names = {"alone": "one stage at a time", "klock": "stages at once, kernel lock"}
    lines = [
        f"Kernel lock: {len(full)} rounds of up to {out['stages_at_once']} tasks, each timed one stage at a time "
        "and all at once with every timed process holding the GPU per call (BEAVER_KERNEL_LOCK, ex), the designs "
        "alternated round by round.",
        "",
        "| design | tasks timed | wall for the set | median stage | largest CV |",
        "|---|---:|---:|---:|---:|",
    ]
    for d in DESIGNS:
        timed = {t: r[d] for t, r in rows.items() if isinstance(r.get(d), dict) and "speedup" in r[d]}
        cvs = [max(v["reference_cv"], v["candidate_cv"]) for v in timed.values()]
        out[d] = {
            "timed": len(timed),
            "wall_s": walls[d],
            "median_wall_s": _median([v["wall_s"] for v in timed.values()]),
            "max_cv": max(cvs) if cvs else None,
        }
        lines.append(
            f"| {names[d]} | {len(timed)} | {walls[d]:.1f} s | {out[d]['median_wall_s']} s | "
            + (f"{100 * max(cvs):.2f}% |" if cvs else "- |")
        )
    both = [
        t for t, r in rows.items() if all(isinstance(r.get(d), dict) and "speedup" in r[d] for d in DESIGNS)
    ]
    out["wall_klock_over_alone"] = round(sums["klock"] / sums["alone"], 3) if sums["alone"] else None
    held = [
        p for r in rows.values() if isinstance(r.get("klock"), dict) for p in r["klock"].get("phases") or []
        if "lock_wait_s" in p
    ]  # fmt: skip
    if held:
        out["lock"] = {
            "runs": len(held),
            "calls": sum(int(p["lock_calls"]) for p in held),
            "median_wait_s": _median([float(p["lock_wait_s"]) for p in held]),
            "wait_s": round(sum(float(p["lock_wait_s"]) for p in held), 3),
            "held_s": round(sum(float(p["lock_held_s"]) for p in held), 3),
        }
    lines += [
        "",
        f"Wall for the set, stages at once over one at a time: {out['wall_klock_over_alone']}x "
        f"({walls['klock']:.1f} s against {walls['alone']:.1f} s, wall clock of each round's design summed)",
    ]
    if held:
        lk = out["lock"]
        lines.append(
            f"Under the lock, {lk['runs']} runs held the GPU for {lk['calls']} calls, {lk['held_s']} s in all, and "
            f"waited for it {lk['wait_s']} s in all (a median {lk['median_wait_s']} s a run; the L line of "
            "beaver_cupti.c)"
        )
    lines += [
        "",
        "| task | speedup one at a time | 95% | speedup at once | 95% | at once / one at a time | differs |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    per: dict[str, Any] = {}
    differ = 0
    for t in sorted(both):
        x, y = rows[t]["alone"], rows[t]["klock"]
        hx, hy = speedup_interval(x), speedup_interval(y)
        ratio = y["speedup"] / x["speedup"]
        bound = None if hx is None or hy is None else math.hypot(hx, hy)
        off = bound is not None and abs(math.log(ratio)) > bound
        differ += off
        per[t] = {"alone": x["speedup"], "klock": y["speedup"], "ratio": round(ratio, 4),
                  "interval": None if bound is None else round(math.exp(bound) - 1, 4), "differs": off}  # fmt: skip

        def pm(h: float | None) -> str:
            return "-" if h is None else f"+/-{100 * (math.exp(h) - 1):.1f}%"

        lines.append(
            f"| {t} | {x['speedup']:.4f} | {pm(hx)} | {y['speedup']:.4f} | {pm(hy)} | {ratio:.4f} | "
            + ("yes" if off else ("not known" if bound is None else "no"))
            + " |"
        )
    out["tasks"] = per
    out["differ"] = differ
    unknown = sum(v["interval"] is None for v in per.values())
    lines.append(
        f"\n{differ} of {len(per)} tasks' speedups differ between the designs by more than the 95% interval of "
        "their difference" + (f" ({unknown} without an interval)" if unknown else "")
    )
    ok = bool(per) and differ == 0 and unknown == 0 and sums["klock"] < sums["alone"]
    out["adoptable"] = ok
    lines.append(
        "The kernel lock "
        + ("meets" if ok else "does not meet")
        + " what adopting it needs on this set: every speedup unchanged within its interval, and a lower wall "
        "time for the set"
    )
    return lines, out


def _median(xs: list[float]) -> float | None:
    return round(statistics.median(xs), 3) if xs else None


def paired(rows: dict[str, dict[str, Any]], x: str, y: str) -> dict[str, Any]:
    """Mode ``x`` against mode ``y`` on the tasks timed in both ({} when none)."""
    both = [
        t for t, r in rows.items() if all(isinstance(r.get(m), dict) and "speedup" in r[m] for m in (x, y))
    ]
    if not both:
        return {}

    def med(f: Any) -> float | None:
        return _median([f(rows[t]) for t in both])

    ratio = [rows[t][y]["wall_s"] / rows[t][x]["wall_s"] for t in both]
    return {
        "tasks": len(both),
        f"median_{y}_over_{x}": _median(ratio),
        "range": [round(min(ratio), 3), round(max(ratio), 3)],
        f"median_wall_{x}_s": med(lambda r: r[x]["wall_s"]),
        f"median_wall_{y}_s": med(lambda r: r[y]["wall_s"]),
        f"speedup_{x}_over_{y}": med(lambda r: r[x]["speedup"] / r[y]["speedup"]),
        f"reference_ms_{x}_over_{y}": med(lambda r: r[x]["reference_ms"] / r[y]["reference_ms"]),
        # a stage's wall over the processes it ran: what the mode changes, apart from how many runs the
        # adaptive rule took
        f"wall_per_run_{x}_s": med(lambda r: _per_process(r[x])),
        f"wall_per_run_{y}_s": med(lambda r: _per_process(r[y])),
    }


def _per_process(timed: dict[str, Any]) -> float:
    """A stage's wall over the processes it ran: every one of them, a measurement re-made for its CV
    included; a testbench's own speed lines (``runs`` None) run both sides in each process."""
    n = len(timed.get("processes") or ()) or 2 * int(timed["runs"])
    return float(timed["wall_s"]) / n


def priority(cfg: Any) -> dict[str, Any]:
    """What a run records as its ``build_priority``: the build stages' CPU priority of a run (StageConfig.build_nice, build_cpus) and the CPUs of its
    timed processes (timing_cpus)."""
    return {"nice": cfg.build_nice, "cpus": cfg.build_cpus, "timing_cpus": cfg.timing_cpus}


def build_priority(doc: dict[str, Any]) -> dict[str, Any]:
    """A result file's ``priority``, every key present: a folder from before these settings ran everything
    at the caller's own priority, on every CPU."""
    p = doc.get("build_priority") or {}
    return {"nice": int(p.get("nice", 0)), "cpus": p.get("cpus"), "timing_cpus": p.get("timing_cpus")}


def priority_words(p: dict[str, Any]) -> str:
    words = f"niceness +{p['nice']}, " + (f"CPUs {p['cpus']}" if p["cpus"] else "every CPU")
    return words + (f"; timed processes on CPUs {p['timing_cpus']}" if p["timing_cpus"] else "")


#: Where a run's time went (Timer.phases), in the order they are printed.
PHASES = (
    "to_cuda_s", "parked_s", "cuda_to_exit_s", "to_first_kernel_s", "kernels_s", "last_kernel_to_exit_s",
    "exit_to_end_s", "held_s",
)  # fmt: skip


def kernel_share(timed: list[dict[str, Any]]) -> dict[str, float | int] | None:
    """Over the runs whose kernels were placed on the monotonic clock (a ``kernels_s`` phase): how many, the
    seconds they held the GPU in all, the seconds a kernel of theirs ran in all, and the share of the one in
    the other: how much of a timing stage's hold the GPU had work of the timed process. None where no run
    has one (a library from before the clock line, or kernels not recorded)."""
    runs = [p for v in timed for p in v.get("phases", []) if "kernels_s" in p and "held_s" in p]
    held = sum(float(p["held_s"]) for p in runs)
    if not runs or held <= 0:
        return None
    kernels = sum(float(p["kernels_s"]) for p in runs)
    return {"runs": len(runs), "held_s": round(held, 3), "kernels_s": round(kernels, 3),
            "share": round(kernels / held, 4)}  # fmt: skip


def median_phases(timed: list[dict[str, Any]]) -> dict[str, float | None]:
    """The median of each phase over every run of the given timings."""
    phases = [p for v in timed for p in v.get("phases", [])]
    return {k: _median([float(p[k]) for p in phases if k in p]) for k in PHASES}


def merged(earlier: dict[str, Any] | None, later: dict[str, Any]) -> dict[str, Any]:
    """A task's row from two folders: the later folder's timing of a mode (or a --klock design) replaces the
    earlier one's, a mode only the earlier folder timed stays, and a mode is not reached only where neither
    timed it nor tried (a timing that failed keeps its error)."""
    if earlier is None:
        return dict(later)
    out = {**earlier, **{k: v for k, v in later.items() if k != "not_reached"}}
    gone = [
        m
        for m in (*MODES, *DESIGNS)
        if m in {*earlier.get("not_reached", ()), *later.get("not_reached", ())}
        and not isinstance(out.get(m), dict)  # timed, or tried and failed (its error says why)
    ]
    out.pop("not_reached", None)
    if gone:
        out["not_reached"] = gone
    if any("speedup" in (out.get(m) or {}) for m in (*MODES, *DESIGNS)):
        out.pop("error", None)  # a build that failed once and was timed in a later folder
    return out


def summarize(a: argparse.Namespace) -> int:
    rows: dict[str, dict[str, Any]] = {}
    loads: set[int] = set()
    priorities: dict[tuple[Any, ...], dict[str, Any]] = {}
    rounds: list[dict[str, Any]] = []
    for d in a.dirs:
        doc = _rows(Path(d))
        rounds += doc.get("rounds") or []
        loads.add(int(doc.get("build_load", 0)))
        p = build_priority(doc)
        priorities[tuple(p.values())] = p
        for tid, row in doc["tasks"].items():
            rows[tid] = merged(rows.get(tid), row)
    if len(loads) > 1:
        raise SystemExit(
            f"these folders were timed under different build loads ({sorted(loads)}): one at a time"
        )
    if len(priorities) > 1:
        raise SystemExit(
            "these folders built at different priorities ("
            + "; ".join(priority_words(p) for _, p in sorted(priorities.items(), key=str))
            + "): one at a time"
        )
    out: dict[str, Any] = {
        "modes": {},
        "paired": {},
        "left_out": {},
        "build_load": loads.pop() if loads else 0,
        "build_priority": next(iter(priorities.values()), build_priority({})),
    }
    for tid, row in rows.items():
        if row.get("error"):
            out["left_out"][tid] = row["error"]
        elif row.get("not_reached"):
            out["left_out"][tid] = (
                f"not reached in mode(s) {', '.join(row['not_reached'])} (the run's budget)"
            )
    # a timing that failed, in a mode or (a --klock folder) a design: left out, with why
    for key in (*MODES, *DESIGNS):
        for t, r in rows.items():
            if isinstance(r.get(key), dict) and "error" in r[key]:
                out["left_out"][f"{t} [{key}]"] = r[key]["error"]
    lines = [
        "| mode | family | timed | median stage | largest stage | largest CV | speedups |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for mode in MODES:
        timed = {
            t: r[mode]
            for t, r in rows.items()
            if isinstance(r.get(mode), dict) and "wall_s" in r[mode] and "speedup" in r[mode]
        }
        if not timed:
            continue
        fams = sorted({rows[t]["family"] for t in timed})
        per: dict[str, Any] = {}
        for fam in [*fams, "all"]:
            got = [v for t, v in timed.items() if fam == "all" or rows[t]["family"] == fam]
            walls = [v["wall_s"] for v in got]
            cvs = [max(v["reference_cv"], v["candidate_cv"]) for v in got]
            sps = [v["speedup"] for v in got]
            per[fam] = {
                "timed": len(got),
                "median_wall_s": _median(walls),
                "max_wall_s": max(walls),
                "max_cv": max(cvs),
                "speedups": [min(sps), max(sps)],
                "median_runs": _median([float(v["runs"]) for v in got if v.get("runs")]),
            }
            lines.append(
                f"| {mode} | {fam} | {len(got)} | {per[fam]['median_wall_s']:.2f} s | {max(walls):.2f} s | "
                f"{100 * max(cvs):.2f}% | {min(sps):.3f}x to {max(sps):.3f}x |"
            )
        per["phases"] = median_phases(list(timed.values()))
        per["kernel_share"] = kernel_share(list(timed.values()))
        out["modes"][mode] = per
    for i, (key, x, y) in enumerate(PAIRS):
        if i == 0 or any(x in r for r in rows.values()):
            out[key] = paired(rows, x, y)
    # the median stage over every task of the runs (timed or not), as far as the timed ones decide it
    for mode in MODES:
        walls = [
            r[mode]["wall_s"] for r in rows.values() if isinstance(r.get(mode), dict) and "speedup" in r[mode]
        ]
        n, under = len(rows), sum(w <= a.target_s for w in walls)
        over = len(walls) - under
        # more than half on one side decides it whatever the untimed take; an even count split in two
        # halves is decided by the two middle values' mean, known only when every task is timed
        if len(walls) == n and walls:
            verdict = (
                f"<= {a.target_s:g} s" if statistics.median(walls) <= a.target_s else f"> {a.target_s:g} s"
            )
        else:
            verdict = (
                f"<= {a.target_s:g} s"
                if under > n / 2
                else f"> {a.target_s:g} s"
                if over > n / 2
                else "not known"
            )
        bounds = median_bounds(walls, n)
        out.setdefault("target", {})[mode] = {
            "tasks": n, "timed": len(walls), "at_most_target": under, "median_of_all": verdict,
        }  # fmt: skip
        out.setdefault("median_of_all_between_s", {})[mode] = bounds
        if walls:
            # every stage holds the GPU alone: one GPU times these tasks in no less than their sum
            out.setdefault("held_alone_s", {})[mode] = {"timed": len(walls), "sum": round(sum(walls), 1)}
            lines.append(
                f"\nmode {mode}: the {len(walls)} stages timed held the GPU alone {sum(walls):.1f} s in all, "
                "the least time one GPU takes to time them"
            )
        if walls:
            lines.append(
                f"\nmode {mode}: {len(walls)} of {n} tasks timed, {under} in {a.target_s:g} s or less: the median "
                f"over all {n} is {verdict}"
                + (
                    " (whatever the untimed ones take)"
                    if verdict != "not known"
                    else f" ({n - len(walls)} not timed)"
                )
                + (
                    f"; whatever they take, it lies between {bounds[0]:.3f} s and {bounds[1]:.3f} s"
                    if bounds and len(walls) < n
                    else ""
                )
            )
    if out["build_load"]:
        lines.insert(
            0,
            f"Timed while {out['build_load']} threads built candidates again, one build after another "
            f"({priority_words(out['build_priority'])})"
            + ("; in mode stop, they were stopped while it measured" if "stop" in out["modes"] else "")
            + ".\n",
        )
    # a --klock folder times no mode: its table is the kernel lock's
    head = "\n".join(lines if out["modes"] or not rounds else lines[2:]).strip("\n")
    if head:
        print(head)
    if rounds or any(d in r for r in rows.values() for d in DESIGNS):
        klines, out["klock"] = klock_summary(rounds, rows)
        print(("\n" if head else "") + "\n".join(klines))
    for key, x, y in PAIRS:
        p = out.get(key) or {}
        if p:
            print(
                f"\nTimed in modes {x} and {y}: {p['tasks']} tasks; median stage {p[f'median_wall_{x}_s']} s "
                f"({x}), {p[f'median_wall_{y}_s']} s ({y}); {y} / {x} {p[f'median_{y}_over_{x}']}x (median; "
                f"{p['range'][0]}x to {p['range'][1]}x); a stage's wall per run {p[f'wall_per_run_{x}_s']} s "
                f"({x}), {p[f'wall_per_run_{y}_s']} s ({y}) (medians); reference times {x} / {y} "
                f"{p[f'reference_ms_{x}_over_{y}']}, speedups {x} / {y} {p[f'speedup_{x}_over_{y}']} (medians)"
            )
    for mode, per in out["modes"].items():
        ph = per["phases"]
        print(
            f"\nmode {mode}, median phases of a run: "
            + ", ".join(f"{k} {v}" for k, v in ph.items() if v is not None)
        )
        share = per.get("kernel_share")
        if share:
            print(
                f"mode {mode}: over the {share['runs']} runs whose kernels are on the monotonic clock, a kernel "
                f"of the timed process ran {share['kernels_s']} s of the {share['held_s']} s they held the GPU "
                f"({100 * share['share']:.1f}%; CUPTI kernel records, the union of their intervals)"
            )
    if out["left_out"]:
        print(f"\nLeft out ({len(out['left_out'])}):")
        for k, v in sorted(out["left_out"].items()):
            print(f"- {k}: {v}")
    if a.json:
        a.json.write_text(json.dumps(out, indent=1))
    return 0


def _rows(d: Path) -> dict[str, Any]:
    """The result file of folder ``d``."""
    f = Path(d) / RESULT
    if not f.is_file():
        raise SystemExit(f"{f}: no result file")
    return dict(json.loads(f.read_text()))


def compare(a: argparse.Namespace) -> int:
    """Folder ``b`` against folder ``a`` in one mode, on the tasks both timed in it: the median stage, the
    median of a stage's wall per process, the median ratio of the two per task, and the median phases."""
    docs = [_rows(a.a), _rows(a.b)]
    both = [
        t
        for t in docs[0]["tasks"]
        if all("speedup" in (d["tasks"].get(t) or {}).get(a.mode, {}) for d in docs)
    ]
    if not both:
        raise SystemExit(f"no task was timed in mode {a.mode} in both folders")
    out: dict[str, Any] = {"mode": a.mode, "tasks": len(both), "folders": {}}
    for key, d, doc in (("a", a.a, docs[0]), ("b", a.b, docs[1])):
        timed = [doc["tasks"][t][a.mode] for t in both]
        out["folders"][key] = {
            "dir": str(d),
            "build_load": int(doc.get("build_load", 0)),
            "build_priority": build_priority(doc),
            "median_wall_s": _median([v["wall_s"] for v in timed]),
            "median_wall_per_process_s": _median([_per_process(v) for v in timed]),
            "median_runs": _median([float(v["runs"]) for v in timed if v.get("runs")]),
            "phases": median_phases(timed),
        }
    ta, tb = ([d["tasks"][t][a.mode] for t in both] for d in docs)
    out["median_wall_b_over_a"] = _median([y["wall_s"] / x["wall_s"] for x, y in zip(ta, tb, strict=True)])
    out["median_per_process_b_over_a"] = _median(
        [_per_process(y) / _per_process(x) for x, y in zip(ta, tb, strict=True)]
    )
    out["median_speedup_b_over_a"] = _median(
        [y["speedup"] / x["speedup"] for x, y in zip(ta, tb, strict=True)]
    )
    lines = [
        f"Mode {a.mode}, {len(both)} tasks timed in both folders.",
        "",
        "| folder | build load | builds at | median stage | median wall per process | median runs a side |",
        "|---|---:|---|---:|---:|---:|",
    ]
    for key in ("a", "b"):
        f = out["folders"][key]
        lines.append(
            f"| {key}: {f['dir']} | {f['build_load']} | {priority_words(f['build_priority'])} | "
            f"{f['median_wall_s']} s | {f['median_wall_per_process_s']} s | {f['median_runs']} |"
        )
    lines += [
        "",
        f"b / a, medians over the tasks: stage {out['median_wall_b_over_a']}x, wall per process "
        f"{out['median_per_process_b_over_a']}x, speedup {out['median_speedup_b_over_a']}x",
    ]
    for key in ("a", "b"):
        ph = out["folders"][key]["phases"]
        lines.append(
            f"{key}, median phases of a run: " + ", ".join(f"{k} {v}" for k, v in ph.items() if v is not None)
        )
    print("\n".join(lines))
    if a.json:
        a.json.write_text(json.dumps(out, indent=1))
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--corpus", type=Path, required=True)
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--tasks", type=Path, help="a file of task ids or globs, one a line")
    r.add_argument("--task", action="append", help="a task id or glob (repeatable)")
    r.add_argument(
        "--modes", default="on,off", help="on, exit, off, or several side by side (default on,off)"
    )
    r.add_argument("--budget-s", type=float, default=480.0, help="start no timing after this many seconds")
    r.add_argument("--jobs", type=int, help="build threads (default: half the cores)")
    r.add_argument(
        "--build-load", type=int, default=0,
        help="while timing, this many threads build the candidates again, one build after another (0: none)",
    )  # fmt: skip
    r.add_argument(
        "--after", type=Path, action="append",
        help="an earlier run's folder: the tasks it timed in every mode are not timed again (repeatable)",
    )  # fmt: skip
    r.add_argument(
        "--klock", type=int, metavar="K",
        help="time the tasks in rounds of K: one stage at a time, and K stages at once with every timed process "
        "holding the GPU per call on one lock file (BEAVER_KERNEL_LOCK, ex), alternated round by round "
        "(--modes, --build-load not used)",
    )  # fmt: skip
    m = sub.add_parser("summary")
    m.add_argument("--json", type=Path, help="also write the summary as JSON to this file")
    m.add_argument("--target-s", type=float, default=3.0, help="the stage time the median is held against")
    m.add_argument("dirs", nargs="+")
    c = sub.add_parser("compare", help="folder b against folder a, one mode, the tasks timed in both")
    c.add_argument("--mode", default="on", choices=sorted(MODES))
    c.add_argument("--json", type=Path, help="also write the comparison as JSON to this file")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    a = ap.parse_args()
    return {"run": run, "summary": summarize, "compare": compare}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
