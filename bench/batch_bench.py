"""Benchmark of the batch machinery without a GPU.

1. ``overhead``: 40 tasks x 5 iterations with the scripted model over the recorded toolchain (recorded
   outcomes are replayed instantly, so every second measured is harness: prompts, the loop, the reducer,
   stagnation checks, session writes, scheduling). Reported as milliseconds per attempt.
2. ``simulate``: the scheduler's own resource objects (GpuPool, BuildSlots) driving sessions whose stages
   sleep for recorded stage times, scaled down in time: naive (one session at a time, build then run, no
   cache) against scheduled (concurrent sessions, parallel builds, shared correctness runs, exclusive
   timing, compile cache), and how wall time grows with tasks, iterations and GPUs (1..8).

3. ``h200``: naive against scheduled over the real per-attempt stage times of the complete 40-task batch run
   recorded on an H200 (tests/data/h200_batch_run_40.tar.gz): build, run and sanitizer durations as
   recorded, a timing stage as profiled per family (bench/timing_profile.py) plus the candidate's slower
   launches; once as the run was timed, once with the engine's early stop for candidates below half the gate.
4. ``lane``: the scheduled batch as ``beavertui batch`` runs it (admission, 32 sessions per GPU at most),
   each correct attempt timed inside its session against timed by the timing lane (batch/timing_lane.py,
   ``WORKERS_PER_GPU`` workers per GPU) after the session's loop: the fixture's stage times (``--stages
   fixture``, as ``simulate``), the H200 run's (``--stages h200``, as ``h200``), or the release's (``--stages
   release``: the H200 release batch of 2026-12-05, 65 instances, K = 2, its builds, runs and sanitizer runs
   as recorded, each correct attempt's timing stage as the release timing bench timed it alone on the H200
   on 2026-12-04: ``release_stages``). The protocol is the
   repeated method with the gate applied after the run, every sample spent, so both designs run the same
   attempts and only where the timing happens differs. A lane timing first holds a build slot for what it
   prepares (the candidate's build time: the candidate again and the reference), then the GPU alone.

Every mode but ``overhead`` also reports, per kind of GPU stage (``run``: a correctness run with its
sanitizer run, shared; ``timing``: a timing stage, alone), how many there were and their median and longest
wait for the GPU, in simulated seconds, and ``runs_to_timing``: how many times a GPU went from correctness
runs to a timing stage (each such switch drains the GPU); ``lane`` also says how many stages of each kind
each GPU was given (``by_gpu``). The simulation holds a GPU once for a correctness run and its sanitizer run
together, as a shared run: it does not model sanitizer runs apart, nor the one-per-GPU rule for them.

Stage times (``simulate``): builds are the fixture's real nvcc build times (tests/data/recorded, measured on a CPU machine);
run and sanitizer times of the fixture are hand-composed (0.41 s, 3.2 s); a timing stage is taken as
``--timing-s`` (default 2.0 s) and a model reply as ``--model-s`` (default 0, the scripted model).

    python3 bench/batch_bench.py overhead
    python3 bench/batch_bench.py simulate [--scale 0.01]
    python3 bench/batch_bench.py h200 [--run RUN] [--profile PROFILE] [--two-gpus]
    python3 bench/batch_bench.py lane [--stages fixture|h200|release] [--gpus N] [--timing-s S]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import release_lane_bench  # noqa: E402

from beavertui.batch.admission import Admission  # noqa: E402
from beavertui.batch.build_slots import BuildSlots  # noqa: E402
from beavertui.batch.gpu_pool import GpuPool  # noqa: E402
from beavertui.batch.local_executor import Tracker, plan, run_local  # noqa: E402
from beavertui.batch.protocol_file import ModelSpec  # noqa: E402
from beavertui.batch.rundir import ProtocolEntry, RunManifest  # noqa: E402
from beavertui.batch.timing_lane import WORKERS_PER_GPU, TimingLane  # noqa: E402
from beavertui.engine.code.hashing import code_hash  # noqa: E402
from beavertui.engine.corpus.load import load_corpus  # noqa: E402
from beavertui.engine.corpus.task import Task  # noqa: E402
from beavertui.engine.session.events import Built, Event, Ran, StageResult, Timed, TimingResult, Verdict  # noqa: E402
from beavertui.engine.session.protocol import Protocol, StagnationSettings  # noqa: E402
from beavertui.engine.toolchain.base import AttemptOptions  # noqa: E402
from beavertui.engine.toolchain.recorded import RecordedToolchain  # noqa: E402

FIXTURE = ROOT / "tests" / "data" / "recorded"
RECORDINGS = FIXTURE / "vec_scale.recordings.jsonl"
#: Five replies: a syntax error, a wrong result, an out-of-bounds read, a slow repair, the reference.
REPLIES = ("syntax", "wrong", "oob2", "slow", "reference")


def make_corpus(dest: Path, n_tasks: int) -> Path:
    """n copies of the fixture task (same harness, so the recorded outcomes apply to each)."""
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copytree(FIXTURE / "_common", dest / "_common", dirs_exist_ok=True)
    for i in range(n_tasks):
        tid = f"vec_scale_{i:03d}"
        d = dest / tid
        if not d.exists():
            shutil.copytree(FIXTURE / "vec_scale", d, ignore=shutil.ignore_patterns("candidates"))
            inst = json.loads((d / "instance.json").read_text())
            inst["id"] = tid
            (d / "instance.json").write_text(json.dumps(inst))
            spec = json.loads((d / "input.json").read_text())
            spec["task_id"] = tid
            (d / "input.json").write_text(json.dumps(spec))
    return dest


def script(dest: Path, iterations: int) -> Path:
    replies = []
    for i in range(iterations):
        code = (FIXTURE / "vec_scale" / "candidates" / f"{REPLIES[i % len(REPLIES)]}.cu").read_text()
        replies.append(f"```cuda\n{code}\n```\n")
    path = dest / f"five_{iterations}.json"
    path.write_text(json.dumps(replies))
    return path


def bench_protocol(iterations: int) -> Protocol:
    return Protocol(
        budget=iterations, continue_after_pass=True, stagnation=StagnationSettings(stop=False), gate=0.7
    )


def lane_protocol(iterations: int) -> Protocol:
    """Every sample spent, the gate applied after the run: the timing steers nothing, so the timing lane may
    time the correct attempts (engine/loop/run.py timing_steers_nothing), and a session runs the same
    attempts whether its timings are inline or in the lane."""
    return bench_protocol(iterations).model_copy(update={"method": "repeated", "gate_mode": "after_run"})


def manifest(
    corpus: Path,
    tasks: list[str],
    script_path: Path,
    iterations: int,
    run_id: str,
    protocol: Protocol | None = None,
) -> RunManifest:
    return RunManifest(
        run_id=run_id,
        name="bench",
        created="now",
        corpus=str(corpus),
        tasks=tasks,
        protocols=[ProtocolEntry(slug="bench", protocol=protocol or bench_protocol(iterations))],
        models=[ModelSpec(model=f"scripted:{script_path}", max_concurrency=64)],
    )


def overhead(args: argparse.Namespace) -> dict[str, object]:
    work = Path(tempfile.mkdtemp(prefix="beaver-bench-"))
    corpus = make_corpus(work / "corpus", args.tasks)
    sp = script(work, args.iterations)
    loaded = load_corpus(corpus)
    tasks = {t.id: t for t in loaded.tasks}
    out: dict[str, object] = {}
    for jobs in (1, 4):
        m = manifest(corpus, sorted(tasks), sp, args.iterations, f"overhead-j{jobs}")
        run_dir = work / m.run_id
        js = plan(m, run_dir)
        tracker = Tracker(js)
        tc = RecordedToolchain.load(RECORDINGS)
        t0, c0 = time.perf_counter(), time.process_time()
        run_local(js, tasks, tc, run_dir, parallel=jobs, retries=0, tracker=tracker)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        attempts = tracker.totals()["attempts"]
        out[f"jobs={jobs}"] = {
            "sessions": len(js),
            "attempts": attempts,
            "wall_s": round(wall, 3),
            "cpu_s": round(cpu, 3),
            "wall_ms_per_attempt": round(1000 * wall / attempts, 2),
            "cpu_ms_per_attempt": round(1000 * cpu / attempts, 2),
        }
    shutil.rmtree(work, ignore_errors=True)
    return out


class SleepToolchain:
    """Replays recorded stage times as sleeps, under the scheduler's resources (scaled time)."""

    def __init__(
        self,
        stages: dict[str, dict[str, float]],
        pool: GpuPool,
        builds: BuildSlots,
        *,
        scale: float,
        cache: bool,
        timing_s: float,
        model_s: float,
    ) -> None:
        self.stages, self.pool, self.builds = stages, pool, builds
        self.scale, self.cache, self.timing_s, self.model_s = scale, cache, timing_s, model_s
        self.built: set[tuple[str, str]] = set()
        self.lock = threading.Lock()
        self.hits = 0
        self.waits: list[tuple[str, float]] = []
        """(``run`` or ``timing``, real seconds it waited for its GPU) of every GPU stage."""

    def gpu(self) -> None:
        return None

    def _build(self, task_id: str, key: str, seconds: float) -> bool:
        """A build slot held for the build's time, or nothing with a cache hit; True on a hit."""
        with self.builds.hold():
            with self.lock:
                hit = self.cache and (task_id, key) in self.built
                self.hits += hit
            if not hit:
                time.sleep(seconds * self.scale)
                with self.lock:
                    self.built.add((task_id, key))
        return hit

    @contextmanager
    def _gpu(self, stage: str, exclusive: bool = False) -> Iterator[None]:
        """The pool's hold, its wait for the GPU noted as ``stage``'s."""
        asked = time.perf_counter()
        with self.pool.hold(exclusive=exclusive):
            with self.lock:
                self.waits.append((stage, time.perf_counter() - asked))
            yield

    def _verdict(self, it: int, gate: float, correct: bool, pending: bool = False) -> Verdict:
        return Verdict(
            iteration=it,
            category="passed" if correct else "functional_correctness",
            signature="",
            correct=correct,
            speedup=1.0 if correct and not pending else None,
            gate=gate,
            success=correct and not pending,
            reason="timing pending" if pending else "",
            timing_pending=pending,
        )

    def _stages(self, task: Task, code: str, it: int) -> tuple[str, dict[str, float]]:
        """(cache key, stages) of one attempt: build, build_rc, run, sanitize, correct, timing seconds."""
        key = code_hash(code, task.language)
        st = self.stages[key]
        return key, {**st, "timing": self.timing_s if st["correct"] else 0.0}

    def attempt(self, task: Task, code: str, options: AttemptOptions) -> Iterator[Event]:
        it = options.iteration
        key, st = self._stages(task, code, it)
        time.sleep(self.model_s * self.scale)
        hit = self._build(task.id, key, st["build"])
        ok_build = st["build_rc"] == 0
        yield Built(
            iteration=it, result=StageResult(stage="build", command="b", rc=0 if ok_build else 1, cached=hit)
        )
        if not ok_build:
            yield Verdict(
                iteration=it, category="buildability", signature="x", correct=False, gate=options.gate
            )
            return
        timed = bool(st["correct"])
        with self._gpu("run"):
            time.sleep((st["run"] + st["sanitize"]) * self.scale)
        yield Ran(iteration=it, result=StageResult(stage="run", command="r", rc=0 if timed else 1))
        if timed and options.defer_timing:  # the timing lane times it after the loop (time_later)
            yield self._verdict(it, options.gate, True, pending=True)
            return
        if timed:
            yield from self._timing(it, st)
        yield self._verdict(it, options.gate, timed)

    def _timing(self, it: int, st: dict[str, float]) -> Iterator[Event]:
        """A timing stage, the GPU held alone; its Timed event's wall time is the hold's (real seconds)."""
        with self._gpu("timing", exclusive=True):
            began = time.perf_counter()
            time.sleep(st["timing"] * self.scale)
            wall = time.perf_counter() - began
        result = TimingResult(
            method="sim",
            candidate_ms=1,
            reference_ms=1,
            candidate_cv=0,
            reference_cv=0,
            speedup=1.0,
            wall_s=wall,
        )
        yield Timed(iteration=it, result=result)

    def time_later(self, task: Task, code: str, pending: Verdict, gate: float) -> Iterator[Event]:
        """The timing lane's timing of a correct attempt: a build slot for what it prepares (taken as the
        candidate's build time: the candidate again and the reference), then the GPU alone."""
        it = pending.iteration
        _key, st = self._stages(task, code, it)
        with self.builds.hold():
            time.sleep(st["build"] * self.scale)
        yield from self._timing(it, st)
        yield Verdict(
            iteration=it, category="passed", signature="", correct=True, speedup=1.0, gate=gate, success=True
        )


def wait_summary(tc: SleepToolchain, scale: float) -> dict[str, dict[str, float]]:
    """Per kind of GPU stage: how many, and their median and longest wait for the GPU (simulated seconds)."""
    out = {}
    for stage in ("run", "timing"):
        waits = [w / scale for k, w in tc.waits if k == stage]
        if waits:
            out[stage] = {
                "n": len(waits),
                "median_s": round(statistics.median(waits), 1),
                "max_s": round(max(waits), 1),
            }
    return out


def drains(pool: GpuPool) -> int:
    """How many times a GPU went from correctness runs to a timing stage (each such switch drains the GPU: the
    timing stage waits for the runs in flight to end), from the pool's log (``pool.log = []`` before the run)."""
    last: dict[str, str] = {}
    n = 0
    for what, kind, _rank, gpu in pool.log or []:
        if what == "grant":
            n += kind == "exclusive" and last.get(gpu, "exclusive") != "exclusive"
            last[gpu] = kind
    return n


def grants_by_gpu(pool: GpuPool) -> dict[str, dict[str, int]]:
    """Per kind of GPU stage (``run``: shared; ``timing``: alone), how many each GPU was granted, from the
    pool's log: where the placement put them."""
    out: dict[str, dict[str, int]] = {"run": {}, "timing": {}}
    for what, kind, _rank, gpu in pool.log or []:
        if what == "grant":
            by = out["timing" if kind == "exclusive" else "run"]
            by[gpu] = by.get(gpu, 0) + 1
    return out


def recorded_stages() -> dict[str, dict[str, float]]:
    out = {}
    for line in RECORDINGS.read_text().splitlines():
        d = json.loads(line)
        st = {"build": 0.0, "run": 0.0, "sanitize": 0.0, "build_rc": 1, "correct": 0}
        for e in d["events"]:
            if e["kind"] == "build":
                st["build"], st["build_rc"] = e["result"]["duration_s"], e["result"]["rc"]
            elif e["kind"] == "run":
                st["run"] = e["result"]["duration_s"]
            elif e["kind"] == "sanitize":
                st["sanitize"] += e["result"]["duration_s"]
            elif e["kind"] == "verdict":
                st["correct"] = int(e["correct"])
        out[code_hash(d["code"], "cuda")] = st
    return out


def simulate_one(
    corpus: Path,
    tasks: dict[str, Task],
    n_tasks: int,
    iterations: int,
    gpus: int,
    naive: bool,
    a: argparse.Namespace,
) -> dict[str, float]:
    work = Path(tempfile.mkdtemp(prefix="beaver-sim-"))
    sp = script(work, iterations)
    ids = sorted(tasks)[:n_tasks]
    m = manifest(corpus, ids, sp, iterations, "sim")
    js = plan(m, work / "sim")
    cores = a.cores_per_gpu * gpus
    pool = GpuPool([str(i) for i in range(gpus)], shared=1 if naive else a.gpu_share)
    pool.log = []
    builds = BuildSlots(1 if naive else cores)
    tc = SleepToolchain(
        recorded_stages(),
        pool,
        builds,
        scale=a.scale,
        cache=not naive,
        timing_s=a.timing_s,
        model_s=a.model_s,
    )
    parallel = 1 if naive else max(4 * gpus + cores, 8)
    t0 = time.perf_counter()
    tracker = Tracker(js)
    run_local(js, tasks, tc, work / "sim", parallel=parallel, retries=0, tracker=tracker)
    wall = time.perf_counter() - t0
    busy = pool.busy_fraction(wall)
    shutil.rmtree(work, ignore_errors=True)
    return {
        "sim_wall_s": round(wall / a.scale, 1),
        "attempts": tracker.totals()["attempts"],
        "gpu_busy": round(sum(busy.values()) / len(busy), 3),
        "cache_hits": tc.hits,
        "wait_s": wait_summary(tc, a.scale),
        "runs_to_timing": drains(pool),
    }


def simulate(a: argparse.Namespace) -> dict[str, object]:
    work = Path(tempfile.mkdtemp(prefix="beaver-simcorpus-"))
    corpus = make_corpus(work / "corpus", 80)
    tasks = {t.id: t for t in load_corpus(corpus).tasks}
    out: dict[str, object] = {}
    naive = simulate_one(corpus, tasks, 40, 5, 1, True, a)
    sched = simulate_one(corpus, tasks, 40, 5, 1, False, a)
    out["40x5_1gpu"] = {
        "naive": naive,
        "scheduled": sched,
        "speedup": round(naive["sim_wall_s"] / sched["sim_wall_s"], 2),
    }
    out["gpus"] = {g: simulate_one(corpus, tasks, 40, 5, g, False, a) for g in (1, 2, 4, 8)}
    out["tasks"] = {n: simulate_one(corpus, tasks, n, 5, 1, False, a) for n in (10, 20, 40, 80)}
    out["iterations"] = {k: simulate_one(corpus, tasks, 40, k, 1, False, a) for k in (1, 2, 3, 4, 5)}
    shutil.rmtree(work, ignore_errors=True)
    return out


# ------------------------------------------------------------------ replay of a recorded GPU run

H200_RUN = ROOT / "tests" / "data" / "h200_batch_run_40.tar.gz"
H200_PROFILE = ROOT / "docs" / "data" / "h200-2026-11-30b" / "timing_profile-after.json"
#: launches per benchmark process (3 warm-up + 20 timed) and processes per side in a timing stage
LAUNCHES, ROUNDS = 23, 3


Stages = dict[tuple[str, int], dict[str, float | str]]
"""Per (task, iteration): ``sha``, ``build``, ``build_rc``, ``run``, ``sanitize``, ``timing`` (and others)."""


def attempt_stages(
    run: Path, other: Callable[[Any, Any, dict[str, float | str]], None], **more: float
) -> Stages:
    """Per (task, iteration) of the session files of a recorded run: the candidate's hash, its build time
    without the cache (a cached build is charged what the same candidate's uncached build took in that run),
    build rc, run and sanitizer time (``more``: further keys and their starting values); every other event
    of an attempt is given to ``other(header, event, stages_of_its_attempt)``. An attempt asked again after
    a cut starts afresh."""
    from beavertui.engine.session.store import read_session

    stages: Stages = {}
    uncached: dict[tuple[str, str], float] = {}
    for path in sorted(run.rglob("*__s*.jsonl")):
        header, events, _ = read_session(path)
        assert header is not None
        tid, sha = header.task.id, ""
        for e in events:
            it = getattr(e, "iteration", 0)
            if not it:
                continue
            if e.kind == "request" or (tid, it) not in stages:
                stages[(tid, it)] = {
                    "sha": "", "build": 0.0, "build_rc": 1, "run": 0.0, "sanitize": 0.0, "timing": 0.0, **more,
                }  # fmt: skip
            st = stages[(tid, it)]
            if e.kind == "candidate":
                sha = e.sha256 or ""
                st["sha"] = sha
            elif e.kind == "build":
                st["build_rc"] = e.result.rc
                if not e.result.cached:
                    st["build"] = e.result.duration_s
                    uncached[(tid, sha)] = max(uncached.get((tid, sha), 0.0), e.result.duration_s)
            elif e.kind == "run":
                st["run"] = e.result.duration_s
            elif e.kind == "sanitize":
                st["sanitize"] = float(st["sanitize"]) + e.result.duration_s
            else:
                other(header, e, st)
    for (tid, _it), st in stages.items():
        if not st["build"] and st["sha"]:
            st["build"] = uncached.get((tid, str(st["sha"])), 0.0)
    return stages


def h200_stages(run: Path, profile: Path) -> tuple[list[str], Stages]:
    """Per (task, iteration) of a recorded batch run (attempt_stages), with a timing-stage time: the profiled
    stage of the task's family (reference against itself, 6 sandboxed benchmark processes) plus what the
    candidate's slower launches add."""
    prof = json.loads(profile.read_text())["tasks"]
    family_stage = {t.rsplit("_", 1)[0]: r["stage"]["wall_s"] for t, r in prof.items() if "stage" in r}

    def timing(header: Any, e: Any, st: dict[str, float | str]) -> None:
        if e.kind != "timing":
            return
        r = e.result
        extra = ROUNDS * LAUNCHES * max(0.0, r.candidate_ms - r.reference_ms) / 1000
        base = family_stage[header.task.id.rsplit("_", 1)[0]]
        st["timing"] = (base + extra) * (2 if r.note and "re-measured" in r.note else 1)
        # the engine now stops after the first of 3 rounds below half the gate
        early = r.speedup < header.protocol.gate / 2
        st["timing_early"] = float(st["timing"]) / ROUNDS if early else st["timing"]

    stages = attempt_stages(run, timing, timing_early=0.0)
    return sorted({t for t, _ in stages}), stages


class ReplayToolchain(SleepToolchain):
    """SleepToolchain over per-(task, iteration) stage times of a recorded run."""

    def __init__(  # type: ignore[no-untyped-def]
        self,
        names: dict[str, str],
        per_attempt: dict[tuple[str, int], dict[str, float | str]],
        timing: str,
        *a,
        **kw,
    ):
        super().__init__({}, *a, **kw)
        self.names, self.per_attempt, self.timing = names, per_attempt, timing

    def _stages(self, task: Task, code: str, it: int) -> tuple[str, dict[str, float]]:
        st = self.per_attempt[(self.names[task.id], it)]
        return str(st["sha"]), {
            "build": float(st["build"]),
            "build_rc": float(st["build_rc"]),
            "run": float(st["run"]),
            "sanitize": float(st["sanitize"]),
            "timing": float(st[self.timing]),
            "correct": float(st[self.timing] > 0),  # the recorded run timed exactly its correct attempts
        }


def h200_replay(
    a: argparse.Namespace, work: Path
) -> tuple[dict[tuple[str, int], dict[str, float | str]], Path, dict[str, Task], dict[str, str], int]:
    """The recorded H200 run's per-attempt stages, a corpus of as many fixture copies, its tasks, the copies'
    names of the recorded tasks, and the run's iterations."""
    run = Path(a.run)
    if run.is_file():
        import tarfile

        with tarfile.open(run) as tar:
            tar.extractall(work / "rec", filter="data")
        run = work / "rec"
    ids, per_attempt = h200_stages(run, Path(a.profile))
    corpus = make_corpus(work / "corpus", len(ids))
    tasks = {t.id: t for t in load_corpus(corpus).tasks}
    names = dict(zip(sorted(tasks), ids, strict=True))
    return per_attempt, corpus, tasks, names, max(it for _, it in per_attempt)


def h200(a: argparse.Namespace) -> dict[str, object]:
    """Naive against scheduled over the stage times of the complete 40-task batch run recorded on the H200."""
    work = Path(tempfile.mkdtemp(prefix="beaver-h200sim-"))
    per_attempt, corpus, tasks, names, iterations = h200_replay(a, work)
    ids = sorted(set(names.values()))
    serial = sum(
        float(st["build"]) + float(st["run"]) + float(st["sanitize"]) + float(st["timing"])
        for st in per_attempt.values()
    )

    def one(gpus: int, naive: bool, timing: str = "timing") -> dict[str, float]:
        sp = script(work, iterations)
        m = manifest(corpus, sorted(tasks), sp, iterations, f"h200-{gpus}-{naive}-{timing}")
        js = plan(m, work / m.run_id)
        cores = a.cores_per_gpu * gpus
        pool = GpuPool([str(i) for i in range(gpus)], shared=1 if naive else a.gpu_share)
        pool.log = []
        builds = BuildSlots(1 if naive else cores)
        tc = ReplayToolchain(
            names,
            per_attempt,
            timing,
            pool,
            builds,
            scale=a.scale,
            cache=not naive,
            timing_s=0.0,
            model_s=0.0,
        )
        t0 = time.perf_counter()
        tracker = Tracker(js)
        parallel = 1 if naive else max(4 * gpus + cores, 8)
        run_local(js, tasks, tc, work / m.run_id, parallel=parallel, retries=0, tracker=tracker)
        wall = time.perf_counter() - t0
        busy = pool.busy_fraction(wall)
        return {
            "sim_wall_s": round(wall / a.scale, 1),
            "attempts": tracker.totals()["attempts"],
            "gpu_busy": round(sum(busy.values()) / len(busy), 3),
            "cache_hits": tc.hits,
            "wait_s": wait_summary(tc, a.scale),
            "runs_to_timing": drains(pool),
        }

    if a.two_gpus:  # only the scheduled run on one GPU and on two: the two-GPU throughput over one
        on1, on2 = one(1, False), one(2, False)
        shutil.rmtree(work, ignore_errors=True)
        return {
            "tasks": len(ids),
            "attempts": len(per_attempt),
            "scheduled_1gpu": on1,
            "scheduled_2gpus": on2,
            "throughput_2_over_1": round(on1["sim_wall_s"] / on2["sim_wall_s"], 2),
        }
    naive = one(1, True)
    sched = one(1, False)
    stage_sums = {
        k: round(sum(float(st[k]) for st in per_attempt.values()), 1)
        for k in ("build", "run", "sanitize", "timing")
    }
    out: dict[str, object] = {
        "tasks": len(ids),
        "attempts": len(per_attempt),
        "stage_sums_s": stage_sums,
        "naive_sum_of_stages_s": round(serial, 1),
        "40x5_1gpu": {
            "naive": naive,
            "scheduled": sched,
            "speedup": round(naive["sim_wall_s"] / sched["sim_wall_s"], 2),
        },
        "gpus": {g: one(g, False) for g in (2, 4, 8)},
    }
    early_naive, early_sched = one(1, True, "timing_early"), one(1, False, "timing_early")
    out["with_early_stop"] = {
        "timing_sum_s": round(sum(float(st["timing_early"]) for st in per_attempt.values()), 1),
        "naive": early_naive,
        "scheduled": early_sched,
        "speedup": round(early_naive["sim_wall_s"] / early_sched["sim_wall_s"], 2),
    }
    shutil.rmtree(work, ignore_errors=True)
    return out


RELEASE_RUN = ROOT / "docs" / "data" / "h200-2026-12-05" / "release-lane" / "lane-out.tgz"
#: The release timing bench's folders of 2026-12-04 that time every CUPTI instance alone on the H200 (a later
#: folder's timing of a task replaces an earlier one's), as performance.md sums them.
RELEASE_STAGE_DIRS = tuple(
    ROOT / "docs" / "data" / "h200-2026-12-04" / d
    for d in ("release-stage", "release-stage-rest", "release-stage-long", "release-stage-216")
)


def release_stages(
    run: Path, stage_dirs: tuple[Path, ...] = RELEASE_STAGE_DIRS
) -> tuple[list[str], Stages, dict[str, int]]:
    """Per (instance, iteration) of the H200 release batch with the timing lane (2026-12-05, every session's
    loop ended; attempt_stages), and for the correct attempt a timing stage: the instance's stage timed
    alone on the H200 with its runs started ahead (the release timing bench, mode ``on``), else the batch's
    own timing of it, else the median of those (counted in ``sources``)."""
    alone: dict[str, float] = {}
    for d in stage_dirs:
        for tid, row in json.loads((d / "release-stage.json").read_text())["tasks"].items():
            on = row.get("on") or {}
            if "speedup" in on and "wall_s" in on:
                alone[tid] = float(on["wall_s"])
    timed_here: dict[str, float] = {}

    def mark(header: Any, e: Any, st: dict[str, float | str]) -> None:
        if e.kind == "timing":
            timed_here[header.task.id] = e.result.wall_s or 0.0
        elif e.kind == "verdict" and e.correct:
            st["timing"] = -1.0  # correct: its timing stage is filled in below

    stages = attempt_stages(run, mark)
    fallback = statistics.median([*alone.values(), *timed_here.values()])
    sources = {"alone": 0, "batch": 0, "median": 0}
    for (tid, _it), st in stages.items():
        if st["timing"] == -1.0:
            source = "alone" if tid in alone else "batch" if timed_here.get(tid) else "median"
            sources[source] += 1
            st["timing"] = alone.get(tid) or timed_here.get(tid) or fallback
    return sorted({t for t, _ in stages}), stages, sources


def release_replay(
    a: argparse.Namespace, work: Path
) -> tuple[
    dict[tuple[str, int], dict[str, float | str]], Path, dict[str, Task], dict[str, str], int, dict[str, int]
]:
    """As h200_replay, over the release batch's stages (release_stages)."""
    import tarfile

    with tarfile.open(RELEASE_RUN) as tar:
        tar.extractall(work / "rel", filter="data")
    ids, per_attempt, sources = release_stages(work / "rel" / "sessions" / "lane")
    corpus = make_corpus(work / "corpus", len(ids))
    tasks = {t.id: t for t in load_corpus(corpus).tasks}
    names = dict(zip(sorted(tasks), ids, strict=True))
    return per_attempt, corpus, tasks, names, max(it for _, it in per_attempt), sources


def lane(a: argparse.Namespace) -> dict[str, object]:
    """The scheduled batch with each correct attempt timed inside its session against timed by the timing lane
    after the session's loop, on ``--gpus`` GPUs, over the fixture's or the H200 run's stage times."""
    work = Path(tempfile.mkdtemp(prefix="beaver-lanesim-"))
    names: dict[str, str] = {}
    per_attempt: dict[tuple[str, int], dict[str, float | str]] = {}
    sources: dict[str, int] = {}
    if a.stages == "h200":
        per_attempt, corpus, tasks, names, iterations = h200_replay(a, work)
        ids = sorted(tasks)
    elif a.stages == "release":
        per_attempt, corpus, tasks, names, iterations, sources = release_replay(a, work)
        ids = sorted(tasks)
    else:
        corpus = make_corpus(work / "corpus", a.tasks)
        tasks = {t.id: t for t in load_corpus(corpus).tasks}
        ids, iterations = sorted(tasks)[: a.tasks], a.iterations

    def one(timing_lane: bool) -> dict[str, object]:
        sp = script(work, iterations)
        run_id = "lane" if timing_lane else "inline"
        m = manifest(corpus, ids, sp, iterations, run_id, lane_protocol(iterations))
        js = plan(m, work / run_id)
        pool = GpuPool([str(i) for i in range(a.gpus)], shared=a.gpu_share)
        pool.log = []
        builds = BuildSlots(a.cores_per_gpu * a.gpus)
        kw = {"scale": a.scale, "cache": True, "model_s": a.model_s}
        tc: SleepToolchain = (
            ReplayToolchain(names, per_attempt, "timing", pool, builds, timing_s=0.0, **kw)
            if a.stages in ("h200", "release")
            else SleepToolchain(recorded_stages(), pool, builds, timing_s=a.timing_s, **kw)
        )
        timings = TimingLane(tc, tasks, workers=a.gpus * WORKERS_PER_GPU) if timing_lane else None
        tracker = Tracker(js)
        t0 = time.perf_counter()
        run_local(
            js, tasks, tc, work / run_id, parallel=32 * a.gpus, retries=0, tracker=tracker,
            admission=Admission(pool, builds), lane=timings,
        )  # fmt: skip
        wall = time.perf_counter() - t0
        busy = pool.busy_fraction(wall)
        totals = tracker.totals()
        out: dict[str, object] = {
            "sim_wall_s": round(wall / a.scale, 1),
            "attempts": totals["attempts"],
            "passed": totals["passed"],
            "gpu_busy": round(sum(busy.values()) / len(busy), 3),
            "wait_s": wait_summary(tc, a.scale),
            "runs_to_timing": drains(pool),
            "by_gpu": grants_by_gpu(pool),
        }
        # what bench/release_lane_bench.py reads from a GPU run's session files, in simulated seconds
        files = release_lane_bench.summary(work / run_id, scale=a.scale)
        finals: list[float] = files["final_s"]  # type: ignore[assignment]
        out["sessions"] = {
            "final": files["final"],
            "final_median_s": round(statistics.median(finals), 1),
            "last_final_s": files["last_final_s"],
            "loop_end_s": files["loop_end_s"],
            "longest_wait_without_timing_s": files["longest_wait_without_timing_s"],
        }
        if timings is not None:
            out["lane"] = {"appended": timings.appended, "failed": len(timings.failed)}
        return out

    result: dict[str, object] = {
        "stages": a.stages,
        **({"timing_stages_from": sources} if sources else {}),
        "gpus": a.gpus,
        "tasks": len(ids),
        "iterations": iterations,
        "inline": one(False),
        "lane": one(True),
    }
    shutil.rmtree(work, ignore_errors=True)
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=("overhead", "simulate", "h200", "lane"))
    ap.add_argument("--run", default=str(H200_RUN), help="h200: the recorded run (folder or .tar.gz)")
    ap.add_argument("--profile", default=str(H200_PROFILE), help="h200: bench/timing_profile.py output")
    ap.add_argument("--tasks", type=int, default=40)
    ap.add_argument("--iterations", type=int, default=5)
    ap.add_argument("--scale", type=float, default=0.01, help="simulated seconds -> real seconds")
    ap.add_argument("--timing-s", type=float, default=2.0)
    ap.add_argument("--model-s", type=float, default=0.0)
    ap.add_argument("--gpu-share", type=int, default=4)
    ap.add_argument("--cores-per-gpu", type=int, default=16)
    ap.add_argument(
        "--two-gpus",
        action="store_true",
        help="h200: only the scheduled run on one GPU and on two, and their ratio",
    )
    ap.add_argument(
        "--stages",
        choices=("fixture", "h200", "release"),
        default="fixture",
        help="lane: the fixture's stage times (as simulate), the H200 run's (as h200), or the H200 release "
        "batch's with each instance's timing stage timed alone (release)",
    )
    ap.add_argument("--gpus", type=int, default=1, help="lane: GPUs")
    a = ap.parse_args()
    result = {"overhead": overhead, "simulate": simulate, "h200": h200, "lane": lane}[a.mode](a)
    print(
        json.dumps(
            {"mode": a.mode, "cpus": os.cpu_count(), "load": os.getloadavg(), "result": result}, indent=1
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
