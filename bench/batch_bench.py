"""Benchmark of the batch machinery without a GPU.

1. ``overhead``: 40 tasks x 5 iterations with the scripted model over the recorded toolchain (recorded
   outcomes are replayed instantly, so every second measured is harness: prompts, the loop, the reducer,
   stagnation checks, session writes, scheduling). Reported as milliseconds per attempt.
2. ``simulate``: the scheduler's own resource objects (GpuPool, BuildSlots) driving sessions whose stages
   sleep for recorded stage times, scaled down in time: naive (one session at a time, build then run, no
   cache) against scheduled (concurrent sessions, parallel builds, shared correctness runs, exclusive
   timing, compile cache), and how wall time grows with tasks, iterations and GPUs (1..8).

Stage times: builds are the fixture's real nvcc build times (tests/data/recorded, measured on a CPU machine);
run and sanitizer times of the fixture are hand-composed (0.41 s, 3.2 s); a timing stage is taken as
``--timing-s`` (default 2.0 s) and a model reply as ``--model-s`` (default 0, the scripted model).

    python3 bench/batch_bench.py overhead
    python3 bench/batch_bench.py simulate [--scale 0.01]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from beavertui.batch.protocol_file import ModelSpec  # noqa: E402
from beavertui.batch.resources import BuildSlots, GpuPool  # noqa: E402
from beavertui.batch.rundir import ProtocolEntry, RunManifest  # noqa: E402
from beavertui.batch.scheduler import Tracker, plan, run_local  # noqa: E402
from beavertui.engine.corpus import load_corpus  # noqa: E402
from beavertui.engine.events import Built, Event, Ran, StageResult, Timed, TimingResult, Verdict  # noqa: E402
from beavertui.engine.protocol import Protocol, StagnationSettings  # noqa: E402
from beavertui.engine.recorded import RecordedToolchain  # noqa: E402
from beavertui.engine.stagnation import code_hash  # noqa: E402
from beavertui.engine.task import Task  # noqa: E402
from beavertui.engine.toolchain import AttemptOptions  # noqa: E402

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


def manifest(corpus: Path, tasks: list[str], script_path: Path, iterations: int, run_id: str) -> RunManifest:
    return RunManifest(
        run_id=run_id,
        name="bench",
        created="now",
        corpus=str(corpus),
        tasks=tasks,
        protocols=[ProtocolEntry(slug="bench", protocol=bench_protocol(iterations))],
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

    def gpu(self) -> None:
        return None

    def attempt(self, task: Task, code: str, options: AttemptOptions) -> Iterator[Event]:
        key = code_hash(code, task.language)
        st = self.stages[key]
        it = options.iteration
        time.sleep(self.model_s * self.scale)
        with self.builds.hold():
            with self.lock:
                hit = self.cache and (task.id, key) in self.built
                self.hits += hit
            if not hit:
                time.sleep(st["build"] * self.scale)
                with self.lock:
                    self.built.add((task.id, key))
        ok_build = st["build_rc"] == 0
        yield Built(
            iteration=it, result=StageResult(stage="build", command="b", rc=0 if ok_build else 1, cached=hit)
        )
        if not ok_build:
            yield Verdict(
                iteration=it, category="buildability", signature="x", correct=False, gate=options.gate
            )
            return
        with self.pool.hold():
            time.sleep((st["run"] + st["sanitize"]) * self.scale)
        yield Ran(iteration=it, result=StageResult(stage="run", command="r", rc=0 if st["correct"] else 1))
        speed = None
        if st["correct"]:
            with self.pool.hold(exclusive=True):
                time.sleep(self.timing_s * self.scale)
            speed = 1.0
            yield Timed(
                iteration=it,
                result=TimingResult(
                    method="sim", candidate_ms=1, reference_ms=1, candidate_cv=0, reference_cv=0, speedup=1.0
                ),
            )
        yield Verdict(
            iteration=it,
            category="passed" if st["correct"] else "functional_correctness",
            signature="",
            correct=bool(st["correct"]),
            speedup=speed,
            gate=options.gate,
            success=bool(st["correct"]),
        )


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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=("overhead", "simulate"))
    ap.add_argument("--tasks", type=int, default=40)
    ap.add_argument("--iterations", type=int, default=5)
    ap.add_argument("--scale", type=float, default=0.01, help="simulated seconds -> real seconds")
    ap.add_argument("--timing-s", type=float, default=2.0)
    ap.add_argument("--model-s", type=float, default=0.0)
    ap.add_argument("--gpu-share", type=int, default=4)
    ap.add_argument("--cores-per-gpu", type=int, default=16)
    a = ap.parse_args()
    result = overhead(a) if a.mode == "overhead" else simulate(a)
    print(
        json.dumps(
            {"mode": a.mode, "cpus": os.cpu_count(), "load": os.getloadavg(), "result": result}, indent=1
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
