"""The schedule around timing (batch/gpu_pool.py, batch/build_slots.py, batch/admission.py, batch/local_executor.py), with stand-in stages.

Every stage here is a thread that asks the real GpuPool or BuildSlots for its resource and holds it until the
test lets it go; the test orders events by waiting for requests to be queued or granted, never by sleeping,
so the outcome is the same however slow or loaded the machine (the waits' timeouts only turn a hang into a
failure). What is shown:

- a session waiting to time is served before any further correctness run is admitted to the GPU it waits
  for, even one of an older session: timing never starves;
- a drain admits nothing new however long the runs it waits for take (only a backfill: a run expected to
  end before them);
- with two GPUs or more, the first serves timing: a timing stage takes it (or another GPU that is idle) and
  drains only it, while the other GPUs keep taking runs, which take the timing GPU only when the others are
  full and no timing waits for it; with the first out of the schedule, the next healthy GPU serves timing;
- a sanitizer or profiler run (which a timing stage waits for, not stops) is one per GPU and never placed
  where a timing stage waits; several sessions that all want one on one GPU take turns, and all finish;
- while one GPU is held alone, runs go on on the other and builds go on on the build slots, unless the
  build slots stop builds for timing: then every build process is stopped for the measurement (a real one
  in a real attempt's timing), no slot is granted meanwhile, and builds go on once the last hold ends;
- every resource serves the oldest session first;
- the admission gate bounds the sessions in flight by what the build slots and GPUs can take, and
  run_local follows it (sessions start as work drains, not all at once);
- the batch's scheduled toolchain builds everything timing needs (the reference, the CUPTI library) before
  it holds the GPU alone, and builds nothing while it does;
- it runs sanitizers and profiles in a long slot of their own, after the correctness run's slot is given
  back, and builds the reference it profiles before it holds a GPU; a task whose last correctness run
  took long has its next one in a long slot too;
- a stage interrupted while it waits (Ctrl-C) leaves no request behind that would hold others back.
"""

from __future__ import annotations

import contextlib
import itertools
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest

from beavertui.batch.admission import Admission
from beavertui.batch.build_slots import BuildSlots
from beavertui.batch.gpu_pool import GpuPool
from beavertui.batch.rank import SESSION_RANK

WAIT = 60.0


class Stage:
    """A stage in its own thread: asks for a resource as session ``rank`` and holds it until ``done()``."""

    def __init__(self, enter: Callable[[], AbstractContextManager[Any]], rank: int) -> None:
        self.granted = threading.Event()
        self.release = threading.Event()
        self.got: Any = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, args=(enter, rank), daemon=True)
        self.thread.start()

    def _run(self, enter: Callable[[], AbstractContextManager[Any]], rank: int) -> None:
        SESSION_RANK.set(rank)
        try:
            with enter() as got:
                self.got = got
                self.granted.set()
                assert self.release.wait(WAIT)
        except BaseException as exc:
            self.error = exc
            self.granted.set()

    def wait(self) -> Stage:
        assert self.granted.wait(WAIT) and self.error is None, self.error
        return self

    def done(self) -> None:
        self.release.set()
        self.thread.join(WAIT)
        assert not self.thread.is_alive() and self.error is None, self.error


class Clock:
    """The pool's clock in tests: it moves only when the test moves it (a backfill compares expected ends)."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def queued(pool: GpuPool | BuildSlots, n: int) -> None:
    assert pool.wait_queued(n, WAIT)


def grants(pool: GpuPool) -> list[tuple[str, int, str]]:
    assert pool.log is not None
    return [(kind, rank, gpu) for what, kind, rank, gpu in pool.log if what == "grant"]


def test_a_waiting_timing_stage_is_served_before_more_correctness_runs() -> None:
    pool = GpuPool(["0"], shared=2, clock=Clock())
    pool.log = []
    s1, s2 = Stage(pool.hold, 0).wait(), Stage(pool.hold, 1).wait()
    timing = Stage(lambda: pool.hold(exclusive=True), 5)
    queued(pool, 1)
    later = Stage(pool.hold, 2)  # an older session's correctness run, asked for after the timing stage
    queued(pool, 2)
    s1.done()  # a slot is free, but the GPU drains for the timing stage: nothing new is admitted
    assert grants(pool) == [("shared", 0, "0"), ("shared", 1, "0")]
    s2.done()
    timing.wait()
    assert not later.granted.is_set()
    timing.done()
    later.wait().done()
    assert grants(pool) == [("shared", 0, "0"), ("shared", 1, "0"), ("exclusive", 5, "0"), ("shared", 2, "0")]


def test_a_drain_admits_nothing_new_however_long_the_run_it_waits_for_takes() -> None:
    """A timing stage waits for the runs in flight on its GPU, however long they run: their time limits follow
    from the task's reference (engine/corpus/run_limit.py), so even a hung kernel holds it for seconds, not
    minutes. Runs asked for meanwhile, short or long, of older sessions or newer ones, wait for the timing."""
    clock = Clock()
    pool = GpuPool(["0"], shared=3, clock=clock)
    pool.log = []
    slow = Stage(pool.hold, 0).wait()  # a correctness run that will run to its time limit
    clock.now = 1.0
    timing = Stage(lambda: pool.hold(exclusive=True), 2)
    queued(pool, 1)
    clock.now = 500.0  # the run has run 499 s; each request below makes the pool decide again
    short = Stage(pool.hold, 3)
    sanitizer = Stage(lambda: pool.hold(long=True), 1)  # of a session older than the timing stage's
    newer = Stage(lambda: pool.hold(long=True), 5)
    queued(pool, 4)
    assert not any(s.granted.is_set() for s in (timing, short, sanitizer, newer))
    slow.done()
    timing.wait()
    assert not any(s.granted.is_set() for s in (short, sanitizer, newer))
    timing.done()
    for s in (sanitizer.wait(), short.wait(), newer.wait()):
        s.done()
    assert [(k, r) for k, r, _g in grants(pool)] == [
        ("shared", 0), ("exclusive", 2), ("long", 1), ("shared", 3), ("long", 5)
    ]  # fmt: skip


def test_a_run_expected_to_end_before_the_drain_does_is_admitted_meanwhile() -> None:
    """Seen on the H200: kernelbench runs take 75 to 135 s by nature, and a timing stage waited a median of
    203 s while the GPU drained. A run whose expected length ends before the runs the drain waits for are
    expected to end keeps a free slot busy (a backfill) and delays the timing stage by nothing; one that
    would end later waits, and so does one whose length is not known."""
    clock = Clock()
    pool = GpuPool(["0"], shared=4, clock=clock)
    pool.log = []
    a = Stage(lambda: pool.hold(long=True, expect_s=75.0), 0).wait()  # ends at 75 s, as expected
    clock.now = 60.0
    b = Stage(lambda: pool.hold(long=True, expect_s=75.0), 1).wait()  # ends at 135 s
    timing = Stage(lambda: pool.hold(exclusive=True), 2)
    queued(pool, 1)
    clock.now = 61.0
    fits = Stage(lambda: pool.hold(long=True, expect_s=70.0), 3).wait()  # 61 + 70 <= 135: admitted
    too_long = Stage(lambda: pool.hold(long=True, expect_s=80.0), 4)  # 61 + 80 > 135
    unknown = Stage(lambda: pool.hold(long=True), 5)
    queued(pool, 3)
    assert pool.queued() == 3  # the timing stage, and the two runs that do not fit
    for s in (a, b, fits):
        s.done()
    timing.wait().done()  # the timing stage waited for nothing the backfill added
    too_long.wait().done()
    unknown.wait().done()
    assert [(k, r) for k, r, _g in grants(pool)] == [
        ("long", 0), ("long", 1), ("long", 3), ("exclusive", 2), ("long", 4), ("long", 5)
    ]  # fmt: skip


def test_with_two_gpus_the_first_serves_timing_and_runs_go_to_the_others() -> None:
    """The first GPU is the timing GPU: runs take it only when the others are full and no timing stage waits
    for it or holds it; a timing stage drains only it (the other GPU keeps taking runs meanwhile)."""
    pool = GpuPool(["0", "1"], shared=2, clock=Clock())
    pool.log = []
    a, b = Stage(pool.hold, 0).wait(), Stage(pool.hold, 1).wait()
    assert (a.got.index, b.got.index) == ("1", "1")  # the other GPU first, though GPU 0 runs nothing
    c = Stage(pool.hold, 2).wait()
    assert c.got.index == "0"  # GPU 1 is full and no timing waits: the timing GPU takes the run
    timing = Stage(lambda: pool.hold(exclusive=True), 3)
    queued(pool, 1)  # it waits for GPU 0 (one short run), not for GPU 1 (two)
    d = Stage(pool.hold, 4)
    queued(pool, 2)
    a.done()  # a slot of GPU 1: the run takes it; GPU 0 stays drained for the timing stage
    assert d.wait().got.index == "1" and not timing.granted.is_set()
    e = Stage(pool.hold, 5)
    queued(pool, 2)  # GPU 1 is full again, GPU 0 drains: it waits
    c.done()
    assert timing.wait().got.index == "0" and not e.granted.is_set()
    timing.done()
    assert e.wait().got.index == "0"  # GPU 1 full, no timing waits: the timing GPU again
    for s in (b, d, e):
        s.done()
    assert [g for k, _r, g in grants(pool) if k == "exclusive"] == ["0"]


def test_with_two_gpus_a_timing_stage_takes_another_gpu_only_when_it_is_idle() -> None:
    """A second timing stage takes GPU 1 when GPU 1 runs nothing (no run to wait for, none delayed), and
    otherwise waits for the timing GPU rather than drain GPU 1."""
    pool = GpuPool(["0", "1"], shared=2, clock=Clock())
    t1 = Stage(lambda: pool.hold(exclusive=True), 0).wait()
    assert t1.got.index == "0"
    t2 = Stage(lambda: pool.hold(exclusive=True), 1).wait()
    assert t2.got.index == "1"  # GPU 1 was idle
    t2.done()
    run = Stage(pool.hold, 2).wait()
    assert run.got.index == "1"
    t3 = Stage(lambda: pool.hold(exclusive=True), 3)
    queued(pool, 1)
    more = Stage(pool.hold, 4).wait()
    assert more.got.index == "1"  # GPU 1 is not drained for the timing stage that waits for GPU 0
    t1.done()
    assert t3.wait().got.index == "0"
    for s in (t3, run, more):
        s.done()


def test_with_the_timing_gpu_out_of_the_schedule_the_next_healthy_gpu_serves_timing() -> None:
    pool = GpuPool(["0", "1", "2"], shared=2, fail_limit=1, clock=Clock())
    pool.report(pool.gpus[0], ok=False, detail="sticky error")
    run = Stage(pool.hold, 0).wait()
    assert run.got.index == "2"
    timing = Stage(lambda: pool.hold(exclusive=True), 1).wait()
    assert timing.got.index == "1"
    for s in (run, timing):
        s.done()
    pool.report(pool.gpus[1], ok=False, detail="sticky error")
    only = Stage(pool.hold, 2).wait()  # one GPU left: it takes everything
    assert only.got.index == "2"
    only.done()


def test_timing_does_not_wait_for_a_long_run_that_can_go_on_elsewhere() -> None:
    """A sanitizer run goes to a GPU other than the timing GPU; a timing stage waits for the timing GPU's
    short run only, and meanwhile runs and builds go on on the other GPU and the build slots."""
    pool = GpuPool(["0", "1"], shared=1, clock=Clock())
    pool.log = []
    sanitizer = Stage(lambda: pool.hold(long=True, instrumented=True), 0).wait()
    run = Stage(pool.hold, 1).wait()
    assert (sanitizer.got.index, run.got.index) == ("1", "0")
    timing = Stage(lambda: pool.hold(exclusive=True), 2)
    queued(pool, 1)
    long2 = Stage(lambda: pool.hold(long=True, instrumented=True), 4)
    queued(pool, 2)  # GPU 1 runs a sanitizer run, GPU 0 drains for the timing stage: it waits
    run.done()
    timing.wait()
    assert timing.got.index == "0" and not sanitizer.release.is_set()  # the sanitizer run is still going
    builds = BuildSlots(2)
    build = Stage(builds.hold, 6).wait()  # builds go on while GPU 0 is held alone
    sanitizer.done()
    assert long2.wait().got.index == "1"  # GPU 1 again: GPU 0 is held for timing
    for s in (build, timing, long2):
        s.done()
    assert ("exclusive", 2, "0") in grants(pool)


def test_an_unpausable_run_is_one_per_gpu_and_never_placed_where_timing_waits() -> None:
    """A sanitizer or profiler run is waited for by a timing stage, not stopped: a GPU runs at most one, and a
    GPU that a timing stage waits for takes none, not even one expected to end before the drain does (a
    backfill). Short runs are admitted beside it as before."""
    clock = Clock()
    pool = GpuPool(["0"], shared=4, clock=clock)
    pool.log = []
    san1 = Stage(lambda: pool.hold(long=True, instrumented=True), 5).wait()
    san2 = Stage(lambda: pool.hold(long=True, instrumented=True, expect_s=1.0), 1)  # an older session's
    queued(pool, 1)
    short = Stage(pool.hold, 2).wait()  # a correctness run goes beside the sanitizer run
    assert not san2.granted.is_set()
    san1.done()
    san2.wait()
    short2 = Stage(lambda: pool.hold(expect_s=100.0), 3).wait()
    timing = Stage(lambda: pool.hold(exclusive=True), 0)
    queued(pool, 1)  # it drains the GPU: san2, short and short2 in flight
    san3 = Stage(lambda: pool.hold(long=True, instrumented=True, expect_s=1.0), 4)
    backfill = Stage(lambda: pool.hold(expect_s=1.0), 6).wait()  # a short run that fits the drain
    queued(pool, 2)
    assert not san3.granted.is_set()  # it would fit too, but a timing stage could not stop it
    for s in (san2, short, short2, backfill):
        s.done()
    timing.wait().done()
    san3.wait().done()
    assert [(k, r) for k, r, _g in grants(pool)] == [
        ("long", 5), ("shared", 2), ("long", 1), ("shared", 3), ("shared", 6), ("exclusive", 0), ("long", 4)
    ]  # fmt: skip


def test_with_pause_instrumented_sanitizer_runs_share_a_gpu() -> None:
    """Where sanitizer and profiler runs are stopped for timing (``--pause-for-timing all``), they are no
    longer unpausable: several run on one GPU."""
    pool = GpuPool(["0"], shared=4, quiet=lambda _g, _s: 0.0, pause_instrumented=True)
    runs = [Stage(lambda: pool.hold(long=True, instrumented=True), r).wait() for r in range(3)]
    for s in runs:
        s.done()


def test_several_sessions_all_wanting_sanitizer_runs_on_one_gpu_all_finish() -> None:
    """Six sessions, each a correctness run then a sanitizer run, twice, with a timing stage after each
    session's first sanitizer run, on one GPU: the sanitizer runs go one at a time, the oldest waiting
    session's first, while correctness runs and timing stages go on, and every session finishes (no waiting
    sanitizer run holds back anything else, and none waits for ever)."""
    pool = GpuPool(["0"], shared=4, clock=Clock())
    pool.log = []
    busy = threading.Lock()
    seen = {"now": 0, "most": 0}
    errors: list[BaseException] = []

    def session(rank: int) -> None:
        SESSION_RANK.set(rank)
        try:
            for attempt in range(2):
                with pool.hold():
                    pass
                with pool.hold(long=True, instrumented=True):
                    with busy:
                        seen["now"] += 1
                        seen["most"] = max(seen["most"], seen["now"])
                    with busy:
                        seen["now"] -= 1
                if attempt == 0:
                    with pool.hold(exclusive=True):
                        pass
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=session, args=(r,), daemon=True) for r in range(6)]
    holder = Stage(lambda: pool.hold(long=True, instrumented=True), 99).wait()  # holds the sanitizer slot
    for t in threads:
        t.start()
    queued(pool, 6)  # every session's first sanitizer run waits for the one in flight
    assert [k for k, _r, _g in grants(pool)].count("long") == 1
    holder.done()
    for t in threads:
        t.join(WAIT)
    assert not any(t.is_alive() for t in threads) and not errors, errors
    assert seen["most"] == 1 and pool.queued() == 0
    longs = [r for k, r, _g in grants(pool) if k == "long"]
    assert longs[:3] == [99, 0, 1]  # once the slot is free: the oldest waiting session first, then the next
    assert sorted(longs[1:]) == sorted([*range(6)] * 2)  # every session's two sanitizer runs


def test_build_slots_serve_the_oldest_session_first() -> None:
    builds = BuildSlots(1)
    builds.log = []
    first = Stage(builds.hold, 9).wait()
    waiting = []
    for i, rank in enumerate((5, 2, 7)):
        waiting.append(Stage(builds.hold, rank))
        queued(builds, i + 1)
    first.done()
    by_rank = {5: waiting[0], 2: waiting[1], 7: waiting[2]}
    for rank in (2, 5, 7):  # one slot: each release lets exactly the oldest waiting session in
        by_rank[rank].wait()
        assert [r for what, r in builds.log if what == "grant"][-1] == rank
        by_rank[rank].done()
    assert [r for what, r in builds.log if what == "grant"] == [9, 2, 5, 7]


def test_gpu_runs_serve_the_oldest_session_first() -> None:
    pool = GpuPool(["0"], shared=1)
    pool.log = []
    first = Stage(pool.hold, 9).wait()
    young = Stage(pool.hold, 4)
    queued(pool, 1)
    old = Stage(pool.hold, 1)
    queued(pool, 2)
    first.done()
    old.wait().done()
    young.wait().done()
    assert [rank for _k, rank, _g in grants(pool)] == [9, 1, 4]


def test_admission_waits_for_the_build_slots_and_the_gpus() -> None:
    pool, builds = GpuPool(["0"], shared=1), BuildSlots(2)
    gate = Admission(pool, builds)
    assert gate.ready()
    gate.started(0)
    gate.started(1)
    assert not gate.ready()  # two sessions starting: as many as there are build slots
    gate.reached(0)
    assert gate.ready()
    gate.reached(1)
    held = [Stage(builds.hold, 0).wait(), Stage(builds.hold, 1).wait()]
    waiting = Stage(builds.hold, 2)
    queued(builds, 1)
    assert not gate.ready()  # a build waits for a slot
    for s in held:
        s.done()
    waiting.wait().done()
    assert gate.ready()
    run = Stage(pool.hold, 3).wait()
    queued_run = Stage(pool.hold, 4)
    queued(pool, 1)
    assert not gate.ready()  # as many GPU stages wait as the GPU runs at once
    run.done()
    queued_run.wait().done()
    assert gate.ready()


@contextlib.contextmanager
def _interrupted_when_queued(pool: GpuPool | BuildSlots) -> Iterator[None]:
    """Ctrl-C in the main thread once it waits at ``pool`` as the second request: a KeyboardInterrupt raised
    by a signal handler, as Python raises it on SIGINT. The signal is sent again until the request is gone (a
    signal that arrives just before the thread blocks only takes effect at its next wake-up); the handler
    raises once."""
    import signal

    main = threading.main_thread().ident
    assert main is not None and threading.get_ident() == main
    raised = threading.Event()

    def handler(_signum: int, _frame: Any) -> None:
        if not raised.is_set():
            raised.set()
            raise KeyboardInterrupt

    def fire() -> None:
        queued(pool, 2)
        while pool.queued() >= 2 and not raised.wait(0.05):
            signal.pthread_kill(main, signal.SIGUSR1)

    previous = signal.signal(signal.SIGUSR1, handler)
    t = threading.Thread(target=fire, daemon=True)
    t.start()
    try:
        yield
    finally:
        t.join(WAIT)
        signal.signal(signal.SIGUSR1, previous)


def test_a_stage_interrupted_while_it_waits_leaves_nothing_behind() -> None:
    pool = GpuPool(["0"], shared=1)
    held, other = Stage(pool.hold, 0).wait(), Stage(pool.hold, 1)
    queued(pool, 1)
    with _interrupted_when_queued(pool), pytest.raises(KeyboardInterrupt), pool.hold(exclusive=True):
        pass
    assert pool.queued() == 1 and pool.gpus[0].waiting_exclusive == 0  # its request is gone: no drain
    held.done()
    other.wait().done()  # the shared run it would have held back
    builds = BuildSlots(1)
    held, other = Stage(builds.hold, 0).wait(), Stage(builds.hold, 1)
    queued(builds, 1)
    with _interrupted_when_queued(builds), pytest.raises(KeyboardInterrupt), builds.hold():
        pass
    assert builds.queued() == 1
    held.done()
    other.wait().done()


# ------------------------------------------------------------------ run_local under the admission gate


class GatedToolchain:
    """The recorded toolchain, with each attempt's build holding a build slot and its run a GPU slot until
    the test opens that session's gate."""

    def __init__(self, inner: Any, pool: GpuPool, builds: BuildSlots) -> None:
        self.inner, self.pool, self.builds = inner, pool, builds
        self.gates: dict[int, threading.Event] = {}
        self.lock = threading.Lock()

    def gate(self, rank: int) -> threading.Event:
        with self.lock:
            return self.gates.setdefault(rank, threading.Event())

    def gpu(self) -> None:
        return None

    def attempt(self, task: Any, code: str, options: Any) -> Iterator[Any]:
        rank = SESSION_RANK.get()
        assert rank is not None
        with self.builds.hold():
            assert self.gate(rank).wait(WAIT)
        events = list(self.inner.attempt(task, code, options))
        with self.pool.hold():
            pass
        yield from events


def _jobs(tmp_path: Path, n: int) -> tuple[list[Any], dict[str, Any], Path]:
    from beavertui.batch.local_executor import plan
    from beavertui.batch.protocol_file import ModelSpec
    from beavertui.batch.rundir import ProtocolEntry, RunManifest
    from beavertui.engine.corpus.load import load_corpus
    from beavertui.engine.session.protocol import Protocol

    corpus = Path(__file__).parents[1] / "data" / "recorded"
    manifest = RunManifest(
        run_id="a", name="a", created="now", corpus=str(corpus), tasks=["vec_scale"],
        protocols=[ProtocolEntry(slug="p", protocol=Protocol(budget=1))],
        models=[ModelSpec(model="scripted:vec_scale_demo.toml")], samples=n, retries=0,
    )  # fmt: skip
    run_dir = tmp_path / "a"
    return plan(manifest, run_dir), {t.id: t for t in load_corpus(corpus).tasks}, run_dir


def started(tracker: Any) -> int:
    with tracker.lock:
        return sum(g.done + g.running for g in tracker.groups.values())


def until(condition: Callable[[], bool]) -> None:
    """Wait for a state the sessions reach by themselves (the condition is the event, the pause paces)."""
    import time

    deadline = time.monotonic() + WAIT
    while not condition():
        assert time.monotonic() < deadline, "the state was never reached"
        time.sleep(0.01)


@pytest.mark.parametrize("gated", [True, False])
def test_sessions_start_as_the_build_slots_and_gpus_can_take_them(tmp_path: Path, gated: bool) -> None:
    from beavertui.batch.local_executor import Tracker, run_local
    from beavertui.engine.toolchain.recorded import RecordedToolchain

    recordings = Path(__file__).parents[1] / "data" / "recorded" / "vec_scale.recordings.jsonl"
    pool, builds = GpuPool(["0"], shared=1), BuildSlots(1)
    tool = GatedToolchain(RecordedToolchain.load(recordings), pool, builds)
    jobs, tasks, run_dir = _jobs(tmp_path, 6)
    tracker = Tracker(jobs)
    admission = Admission(pool, builds) if gated else None
    out: dict[Path, Any] = {}
    batch = threading.Thread(
        target=lambda: out.update(
            run_local(jobs, tasks, tool, run_dir, parallel=8, retries=0, tracker=tracker, admission=admission)
        ),
        daemon=True,
    )
    batch.start()
    if not gated:  # every session starts at once; five wait for the one build slot
        queued(builds, 5)
        assert tracker.totals()["running"] == 6
    else:
        # session 0 builds, session 1 waits for the slot: a build waits, so nothing more starts
        queued(builds, 1)
        assert tracker.totals()["running"] == 2
        tool.gate(0).set()  # session 0 builds, runs and ends; session 1 builds; one more starts and waits
        until(lambda: started(tracker) == 3 and builds.queued() == 1)
        assert started(tracker) == 3  # and no more: a build waits again
    for rank in range(6):
        tool.gate(rank).set()
    batch.join(WAIT)
    assert not batch.is_alive()
    assert len(out) == 6 and all(o.status == "ran" for o in out.values())


# ------------------------------------------------------------------ the scheduled toolchain's holds


@pytest.fixture
def sleepy() -> Any:
    from beavertui.engine.corpus.load import load_corpus

    return load_corpus(Path(__file__).parents[1] / "data" / "cpu").get("sleepy")


def _scheduled(tmp_path: Path, **config: Any) -> Any:
    from beavertui.batch.placement import scheduled_local
    from beavertui.engine.session.events import GpuSignature
    from beavertui.engine.timing.speedup import TimingConfig
    from beavertui.engine.toolchain.local import LocalConfig

    timing = TimingConfig(cache=tmp_path / "cache", rounds=1, method=config.pop("method", None))
    gpus = config.pop("gpus", ["0"])
    tool = scheduled_local(
        GpuPool(gpus), BuildSlots(2), None, LocalConfig(base_dir=tmp_path / "work", timing=timing, **config)
    )
    tool.gpu = lambda: GpuSignature(slug="t_sm_90", name="Test GPU", compute_capability="9.0")
    tool.placement.pool.log = []
    return tool


def _watch_stages(tool: Any, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, ...]]:
    """The pool's grants and releases, with every stage run in between: ("stage", stage, side). A command
    started on its own (start_stage outside run_stage: the CUPTI timing runs) is a benchmark stage."""
    import threading

    from beavertui.engine.stage import stages

    order = tool.placement.pool.log
    refs = tool.config.timing.cache / "refbuild"
    run_stage, start_stage = stages.run_stage, stages.start_stage
    inside = threading.local()

    def side(work: Any) -> str:
        return "reference" if work.path.is_relative_to(refs) else "candidate"

    def watched(work: Any, stage: str, *a: Any, **kw: Any) -> Any:
        order.append(("stage", stage, side(work)))
        inside.on = True
        try:
            return run_stage(work, stage, *a, **kw)
        finally:
            inside.on = False

    def started(work: Any, *a: Any, **kw: Any) -> Any:
        if not getattr(inside, "on", False):
            order.append(("stage", "benchmark", side(work)))
        return start_stage(work, *a, **kw)

    monkeypatch.setattr(stages, "run_stage", watched)
    monkeypatch.setattr(stages, "start_stage", started)
    return order  # type: ignore[no-any-return]


def _held(order: list[tuple[str, ...]], kind: str) -> list[tuple[str, ...]]:
    """The stages run while a hold of ``kind`` was granted (one such hold in ``order``)."""
    start = next(i for i, e in enumerate(order) if e[:2] == ("grant", kind))
    end = next(i for i, e in enumerate(order) if e[:2] == ("release", kind))
    return [e for e in order[start:end] if e[0] == "stage"]


GOOD = "compute() { echo $(($1 * $2)); }\ncost() { echo 1.0; }\n"


def test_the_batch_builds_the_reference_before_it_holds_the_gpu_alone(
    sleepy: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from beavertui.engine.toolchain.base import AttemptOptions

    tool = _scheduled(tmp_path)
    order = _watch_stages(tool, monkeypatch)
    events = list(tool.attempt(sleepy, GOOD, AttemptOptions(iteration=1, gate=0.7)))
    assert events[-1].success and events[-1].speedup == pytest.approx(2.0)
    exclusive = next(i for i, e in enumerate(order) if e[:2] == ("grant", "exclusive"))
    assert ("stage", "build", "reference") in order[:exclusive], order  # the cold cache: built first
    held = _held(order, "exclusive")
    # held alone: the benchmark runs of both sides and nothing else (no build)
    assert held and set(held) == {("stage", "benchmark", "reference"), ("stage", "benchmark", "candidate")}
    # the next attempt finds the reference built and builds nothing more for timing
    order.clear()
    list(tool.attempt(sleepy, GOOD, AttemptOptions(iteration=2, gate=0.7)))
    assert ("stage", "build", "reference") not in order and ("grant", "exclusive", 1 << 62, "0") in order


@pytest.mark.parametrize("library", ["builds", "fails, ncu to fall back to", "fails, no ncu"])
def test_the_batch_builds_the_cupti_library_before_it_holds_the_gpu_alone(
    sleepy: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, library: str
) -> None:
    import dataclasses

    from beavertui.engine.errors import BeaverError
    from beavertui.engine.timing import cupti
    from beavertui.engine.toolchain.base import AttemptOptions

    sleepy = dataclasses.replace(sleepy, benchmark_command=None)  # no native contract: timed by CUPTI
    tool = _scheduled(tmp_path)
    order = _watch_stages(tool, monkeypatch)
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "ncu").write_text("#!/bin/sh\nexit 0\n")
    (fake / "ncu").chmod(0o755)
    monkeypatch.setenv(
        "PATH", f"{fake}:/usr/bin:/bin" if library == "fails, ncu to fall back to" else "/usr/bin:/bin"
    )

    def build_library(cache: Path | None = None) -> Path:
        order.append(("cupti library",))
        if library == "builds":
            return tmp_path / "libbeavercupti.so"
        raise BeaverError("CUPTI headers or libcupti not found")

    monkeypatch.setattr(cupti, "build_library", build_library)
    events = list(tool.attempt(sleepy, GOOD, AttemptOptions(iteration=1, gate=0.7)))
    assert order.count(("cupti library",)) == 1, order  # once, and never again while the GPU is held
    v, infra = events[-1], [e for e in events if e.kind == "infra_error"]
    if library == "fails, no ncu":  # nothing to time with: said before any GPU is held, the GPU not blamed
        assert ("grant", "exclusive", 1 << 62, "0") not in order
        assert len(infra) == 1 and infra[0].source == "toolchain"
        assert "CUPTI headers or libcupti not found" in infra[0].detail
        assert tool.placement.pool.gpus[0].consecutive_failures == 0
        return
    exclusive = order.index(("grant", "exclusive", 1 << 62, "0"))
    assert order.index(("cupti library",)) < exclusive
    # held alone: only the timing runs (the stand-in library records no kernel; the stand-in ncu prints none).
    # CUPTI runs are started ahead of their turn (TimingConfig.prestart): the candidate's first run was
    # started while the reference's ran, and ended unused when the reference gave no samples.
    held = _held(order, "exclusive")
    expected = [("stage", "benchmark", "reference")]
    if library == "builds":
        expected.append(("stage", "benchmark", "candidate"))
    assert held == expected, order
    assert not infra and v.correct and v.speedup is None and "produced no samples" in v.speedup_note


def test_the_batch_runs_sanitizers_in_a_long_slot_of_their_own(
    sleepy: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from beavertui.engine.toolchain.base import AttemptOptions

    tool = _scheduled(tmp_path, sanitizer_exe="true")
    order = _watch_stages(tool, monkeypatch)
    wrong = "compute() { echo 41; }\ncost() { echo 1.0; }\n"
    events = list(tool.attempt(sleepy, wrong, AttemptOptions(iteration=1, gate=0.7)))
    assert events[-1].category == "functional_correctness"
    assert [e.tool for e in events if e.kind == "sanitize"] == ["memcheck"]
    grants = [e[1] for e in order if e[0] == "grant"]
    assert grants == ["shared", "long"]  # the correctness run's slot is given back before the sanitizer's
    assert _held(order, "shared") == [("stage", "run", "candidate")]
    assert _held(order, "long") == [("stage", "sanitize", "candidate")]


def test_the_batch_says_a_run_as_it_ends_before_its_sanitizer_runs(
    sleepy: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As the live toolchain does: the run's event comes when the run ends, not after the sanitizer runs
    that follow it, which may take minutes (a start check's record of what it has cost so far, and the
    TUI, show the run meanwhile). The events' order is unchanged."""
    from beavertui.engine.toolchain.base import AttemptOptions

    tool = _scheduled(tmp_path, sanitizer_exe="true")
    order = _watch_stages(tool, monkeypatch)
    wrong = "compute() { echo 41; }\ncost() { echo 1.0; }\n"
    events = tool.attempt(sleepy, wrong, AttemptOptions(iteration=1, gate=0.7))
    seen = []
    for e in events:
        seen.append(e.kind)
        if e.kind == "run":
            stages = [x[1] for x in order if x[0] == "stage"]
            assert "run" in stages and "sanitize" not in stages, order
    assert seen == ["build", "run", "sanitize", "verdict"]


def test_the_batch_runs_one_sanitizer_at_a_time_on_a_gpu_and_every_session_finishes(
    sleepy: Any, tmp_path: Path
) -> None:
    """Four sessions' attempts on one GPU, each with a sanitizer run (a stand-in sanitizer: a real process
    that says it started and waits until the test lets it go, through files in its work dir): the sanitizer
    runs go one at a time while the others wait (their correctness runs went on beside the first), and
    every attempt ends with its verdict."""
    from beavertui.engine.toolchain.base import AttemptOptions

    exe = tmp_path / "sanitizer.sh"
    exe.write_text("#!/bin/sh\ntouch started\nwhile [ ! -e go ]; do sleep 0.01; done\n")
    exe.chmod(0o755)
    tool = _scheduled(tmp_path, sanitizer_exe=str(exe))
    pool = tool.placement.pool
    verdicts: dict[int, Any] = {}

    def session(rank: int) -> None:
        SESSION_RANK.set(rank)
        wrong = f"compute() {{ echo {50 + rank}; }}\ncost() {{ echo 1.0; }}\n"  # one candidate per session
        verdicts[rank] = list(tool.attempt(sleepy, wrong, AttemptOptions(iteration=1, gate=0.7)))[-1]

    def running() -> list[Path]:
        """The work dirs' sanitizer runs started and not let go (an attempt's work dir goes as it ends)."""
        with contextlib.suppress(FileNotFoundError):
            return [m for m in (tmp_path / "work").glob("*/started") if not (m.parent / "go").exists()]
        return []

    threads = [threading.Thread(target=session, args=(r,), daemon=True) for r in range(4)]
    for t in threads:
        t.start()
    queued(pool, 3)  # the three other sanitizer runs wait for the one in flight
    assert [k for k, _r, _g in grants(pool)].count("shared") == 4  # every correctness run went on
    for i in range(4):
        until(lambda: bool(running()))
        (now,) = running()
        assert pool.queued() == 3 - i  # one sanitizer run in flight, the rest waiting
        (now.parent / "go").touch()
    for t in threads:
        t.join(WAIT)
    assert not any(t.is_alive() for t in threads)
    assert sorted(verdicts) == [0, 1, 2, 3]
    assert all(v.category == "functional_correctness" for v in verdicts.values())
    assert [k for k, _r, _g in grants(pool)].count("long") == 4


def test_with_two_gpus_the_batch_times_on_the_first_gpu_inline_and_in_the_lane(
    sleepy: Any, tmp_path: Path
) -> None:
    """The real scheduled toolchain on two GPUs: a correct attempt's run goes to GPU 1, its timing stage to
    GPU 0, whether timed inside the attempt or later by the timing lane (time_later)."""
    from beavertui.engine.toolchain.base import AttemptOptions

    tool = _scheduled(tmp_path, gpus=["0", "1"])
    events = list(tool.attempt(sleepy, GOOD, AttemptOptions(iteration=1, gate=0.7)))
    assert events[-1].success
    deferred = list(tool.attempt(sleepy, GOOD, AttemptOptions(iteration=2, gate=0.7, defer_timing=True)))
    assert deferred[-1].timing_pending
    late = list(tool.time_later(sleepy, GOOD, deferred[-1], 0.7))
    assert late[-1].success
    assert [(k, g) for k, _r, g in grants(tool.placement.pool)] == [
        ("shared", "1"), ("exclusive", "0"), ("shared", "1"), ("exclusive", "0")
    ]  # fmt: skip


@pytest.mark.parametrize("long_run_s", [0.0, 1e9])
def test_a_task_whose_runs_take_long_runs_in_a_long_slot(
    sleepy: Any, tmp_path: Path, long_run_s: float
) -> None:
    """A run that takes long (a test command that compiles for a minute) is one a timing stage stops rather
    than waits for: once a task's run took longer than the placement's ``long_run_s``, its next runs are
    long runs. Below it, runs stay short."""
    from beavertui.engine.toolchain.base import AttemptOptions

    tool = _scheduled(tmp_path, sanitizer_exe="true")
    tool.placement.long_run_s = long_run_s
    wrong = "compute() { echo 41; }\ncost() { echo 1.0; }\n"
    for it in (1, 2):
        events = list(tool.attempt(sleepy, wrong, AttemptOptions(iteration=it, gate=0.7)))
        assert events[-1].category == "functional_correctness"
    kinds = [kind for kind, _rank, _gpu in grants(tool.placement.pool)]
    # each attempt: its correctness run, then its sanitizer run (always long)
    assert kinds == (["shared", "long", "long", "long"] if long_run_s == 0.0 else ["shared", "long"] * 2)


def test_run_seconds_learned_before_the_first_run_place_it(sleepy: Any, tmp_path: Path) -> None:
    """A kept start check or a resumed session's earlier attempts say how long the task's runs take: the first
    run this toolchain makes of it is placed by that (here: longer than ``long_run_s``, so a long slot)."""
    from beavertui.batch.local_executor import local_starter
    from beavertui.engine.session.events import Ran, StageResult
    from beavertui.engine.toolchain.base import AttemptOptions

    tool = _scheduled(tmp_path)
    jobs, _tasks, _run_dir = _jobs(tmp_path, 1)
    ran = Ran(iteration=1, result=StageResult(stage="run", command="./t", rc=1, duration_s=61.5))
    header: Any = None
    local_starter(jobs[0], sleepy, tool)((header, [ran]))  # a resumed session: its prefix is read
    assert tool.placement._run_s == {"sleepy": 61.5}
    list(tool.attempt(sleepy, GOOD, AttemptOptions(iteration=2, gate=0.7)))
    assert next(kind for kind, _rank, _gpu in grants(tool.placement.pool)) == "long"


def test_each_run_and_sanitizer_run_is_expected_to_take_what_the_task_s_last_one_took(
    sleepy: Any, tmp_path: Path
) -> None:
    """The pool is told how long a run is expected to take: the same task's last run (or sanitizer run) here,
    or what a kept check or a resumed session says; a run that ran to its time limit leaves no expectation."""
    from beavertui.engine.toolchain.base import AttemptOptions

    tool = _scheduled(tmp_path, sanitizer_exe="true")
    asked: list[tuple[bool, float | None]] = []
    hold = tool.placement.pool.hold

    def watched(**kw: Any) -> Any:
        asked.append((bool(kw.get("long")), kw.get("expect_s")))
        return hold(**kw)

    tool.placement.pool.hold = watched
    wrong = "compute() { echo 41; }\ncost() { echo 1.0; }\n"
    first = list(tool.attempt(sleepy, wrong, AttemptOptions(iteration=1, gate=0.7)))
    run_s = next(e.result.duration_s for e in first if e.kind == "run")
    san_s = next(e.result.duration_s for e in first if e.kind == "sanitize")
    list(tool.attempt(sleepy, wrong, AttemptOptions(iteration=2, gate=0.7)))
    assert [e for _long, e in asked] == [None, None, run_s, san_s]
    tool.learn_run_seconds("sleepy", 300.0, timed_out=True)  # a kept check that hung: nothing to expect
    asked.clear()
    list(tool.attempt(sleepy, wrong, AttemptOptions(iteration=3, gate=0.7)))
    assert asked[0] == (True, None)  # a long run (300 s is over long_run_s), of no known length
    # a sanitizer run whose duration was not recorded says nothing of the next one (not: it takes 0 s)
    sanitize = tool._sanitize

    def unrecorded(*a: Any, **kw: Any) -> Any:
        for e in sanitize(*a, **kw):
            yield e.model_copy(update={"result": e.result.model_copy(update={"duration_s": None})})

    tool._sanitize = unrecorded
    list(tool.attempt(sleepy, wrong, AttemptOptions(iteration=4, gate=0.7)))
    asked.clear()
    list(tool.attempt(sleepy, wrong, AttemptOptions(iteration=5, gate=0.7)))
    assert asked[1] == (True, None)


def test_the_batch_builds_the_reference_to_profile_before_it_holds_a_gpu(
    sleepy: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from beavertui.engine.errors import ToolchainError
    from beavertui.engine.toolchain.base import AttemptOptions

    tool = _scheduled(tmp_path)
    order = _watch_stages(tool, monkeypatch)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no ncu: the profile run fails, after the build
    with pytest.raises(ToolchainError, match="ncu"):
        list(tool.attempt(sleepy, GOOD, AttemptOptions(iteration=1, gate=0.7, profile=True)))
    long = order.index(("grant", "long", 1 << 62, "0"))
    assert ("stage", "build", "reference") in order[:long], order
    assert _held(order, "long") == [("stage", "benchmark", "candidate")]  # the candidate's ncu run


#: Runs out of memory the first time it runs in a work dir, passes after (the harness runs in the work dir).
OOM_ONCE = (
    'compute() { if [ ! -e ran_once ]; then : >ran_once; echo "CUDA error: out of memory" >&2; exit 1; fi;'
    " echo $(($1 * $2)); }\ncost() { echo 1.0; }\n"
)


def test_a_run_out_of_memory_beside_other_runs_is_made_again_alone(sleepy: Any, tmp_path: Path) -> None:
    """Other sessions' runs share the GPU: an out-of-memory failure then may be theirs. The run is made again
    holding the GPU alone, and that run's result is the verdict (it is marked, with the first run's line)."""
    from beavertui.engine.toolchain.base import AttemptOptions

    tool = _scheduled(tmp_path)
    registered, running = [], tool.placement.pool.running

    def watched(g: Any, process: Any) -> Any:  # the rerun registers its process: a timing stage may stop it
        registered.append(g.memory_hold)
        return running(g, process)

    tool.placement.pool.running = watched
    other = Stage(
        tool.placement.pool.hold, 0
    ).wait()  # another session's correctness run, on the GPU throughout
    freed = threading.Thread(
        target=lambda: (queued(tool.placement.pool, 1), other.done())
    )  # once the rerun waits
    freed.start()
    events = list(tool.attempt(sleepy, OOM_ONCE, AttemptOptions(iteration=1, gate=0.7, keep_workdir=False)))
    freed.join(WAIT)
    assert registered[:2] == [False, True]  # the first run, shared; the rerun, holding the GPU for its memory
    [ran] = [e for e in events if e.kind == "run"]
    assert ran.result.rerun_alone is not None and "CUDA error: out of memory" in ran.result.rerun_alone
    assert ran.result.rc == 0 and events[-1].category == "passed"
    kinds = [kind for kind, _rank, _gpu in grants(tool.placement.pool)]
    assert kinds[:3] == ["shared", "shared", "exclusive"]  # the other run, the first run, the rerun alone


def test_a_run_out_of_memory_alone_on_its_gpu_is_the_verdict(sleepy: Any, tmp_path: Path) -> None:
    from beavertui.engine.toolchain.base import AttemptOptions

    tool = _scheduled(tmp_path)
    events = list(tool.attempt(sleepy, OOM_ONCE, AttemptOptions(iteration=1, gate=0.7)))
    [ran] = [e for e in events if e.kind == "run"]
    assert ran.result.rerun_alone is None and events[-1].category == "out_of_memory"
    assert [kind for kind, _rank, _gpu in grants(tool.placement.pool)] == ["shared"]


# ---------------------------------------------------------------- long runs stopped for a timing stage


class Proc:
    """A registered run's process: records being stopped and continued."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def pause(self) -> bool:
        self.calls.append("pause")
        return True

    def resume(self) -> None:
        self.calls.append("resume")


@contextlib.contextmanager
def _registered(pool: GpuPool, proc: Proc, **kw: Any) -> Iterator[Any]:
    """A shared run whose process registers with the pool as soon as the run is granted."""
    with pool.hold(**kw) as g, pool.running(g, proc):
        yield g


def test_a_timing_stage_stops_the_long_runs_on_its_gpu_instead_of_waiting_for_them() -> None:
    asked: list[str] = []
    pool = GpuPool(["0"], shared=2, clock=Clock(), quiet=lambda gpu, max_s: asked.append(gpu) or 0.4)
    pool.log = []
    p1, p2 = Proc(), Proc()
    long1 = Stage(lambda: _registered(pool, p1, long=True), 0).wait()
    long2 = Stage(lambda: _registered(pool, p2, long=True), 1).wait()
    timing = Stage(lambda: pool.hold(exclusive=True), 2).wait()  # granted with both still in flight
    assert p1.calls == p2.calls == ["pause"] and asked == ["0"]
    assert timing.got.pause.note() == (
        "2 runs on GPU 0 stopped (SIGSTOP) for this timing, continued after it; "
        "no kernel ran on the GPU 0.4 s after the stop"
    )
    later = Stage(pool.hold, 3)  # nothing new starts while the GPU is held alone
    queued(pool, 1)
    assert not later.granted.is_set()
    timing.done()
    assert p1.calls == p2.calls == ["pause", "resume"]
    long1.done()
    later.wait().done()
    long2.done()
    assert [w for w, *_ in pool.log or []].count("pause") == 1


def test_a_run_made_again_alone_for_memory_waits_for_the_gpu_s_runs_instead_of_stopping_them() -> None:
    """A stopped process keeps its GPU memory: stopping the other runs would not give a run that ran out of
    memory beside them the memory it is made again for. It waits for them to end, as a drain."""
    pool = GpuPool(["0"], shared=2, clock=Clock(), quiet=lambda gpu, max_s: 0.0)
    pool.log = []
    p1, p2 = Proc(), Proc()
    long1 = Stage(lambda: _registered(pool, p1, long=True), 0).wait()
    long2 = Stage(lambda: _registered(pool, p2, long=True), 1).wait()
    alone = Stage(lambda: pool.hold(exclusive=True, memory=True), 2)
    queued(pool, 1)
    later = Stage(pool.hold, 3)  # the GPU drains for it: nothing new is admitted meanwhile
    queued(pool, 2)
    assert not alone.granted.is_set() and p1.calls == p2.calls == []
    long1.done()
    assert not alone.granted.is_set() and not later.granted.is_set()
    long2.done()
    alone.wait()
    assert p1.calls == p2.calls == [] and alone.got.pause is None
    alone.done()
    later.wait().done()
    assert [w for w, *_ in pool.log].count("pause") == 0


def _memory_hold(pool: GpuPool, proc: Proc | None) -> Any:
    """A run made again alone for its memory, registering ``proc`` (None: no process registered)."""
    if proc is None:
        return pool.hold(exclusive=True, memory=True)

    @contextlib.contextmanager
    def held() -> Iterator[Any]:
        with pool.hold(exclusive=True, memory=True) as g, pool.running(g, proc):
            yield g

    return held()


def test_a_timing_stage_stops_a_run_made_again_alone_for_its_memory_instead_of_waiting_for_it() -> None:
    """Such a run may run for minutes (a kernelbench eval drawing its inputs on the host): the timing stops it,
    holds the GPU for its seconds, continues it, and the run holds the GPU alone again until it ends."""
    asked: list[float] = []
    pool = GpuPool(["0"], shared=2, clock=Clock(), quiet=lambda gpu, max_s: asked.append(max_s) or 0.2)
    pool.log = []
    p = Proc()
    alone = Stage(lambda: _memory_hold(pool, p), 0).wait()
    timing = Stage(lambda: pool.hold(exclusive=True), 5).wait()
    assert p.calls == ["pause"] and asked == [pool.idle_wait_s]
    assert timing.got.pause.note().startswith(
        "the run made again alone for its memory on GPU 0 stopped (SIGSTOP)"
    )
    second = Stage(lambda: pool.hold(exclusive=True), 6)  # another timing: the GPU is held, it waits
    queued(pool, 1)
    timing.done()
    second.wait()  # the run was continued, then stopped in turn for it
    assert p.calls == ["pause", "resume", "pause"]
    second.done()
    shared = Stage(pool.hold, 7)  # the rerun holds the GPU alone again: no shared run beside it
    queued(pool, 1)
    assert not shared.granted.is_set() and pool.gpus[0].exclusive and pool.gpus[0].pause is None
    alone.done()
    shared.wait().done()
    assert [x for x in pool.log if x[0] == "pause"] == [
        ("pause", "memory", 5, "0"),
        ("pause", "memory", 6, "0"),
    ]


def test_a_run_made_again_alone_is_waited_for_until_its_process_registers_or_without_a_way_to_see_idle() -> (
    None
):
    pool = GpuPool(["0"], shared=2, clock=Clock(), quiet=lambda gpu, max_s: 0.0)
    g_ready, go = threading.Event(), threading.Event()
    p = Proc()

    @contextlib.contextmanager
    def late_register() -> Iterator[Any]:
        with pool.hold(exclusive=True, memory=True) as g:
            g_ready.set()
            assert go.wait(WAIT)
            with pool.running(g, p):
                yield g

    alone = Stage(late_register, 0)
    assert g_ready.wait(WAIT)
    timing = Stage(lambda: pool.hold(exclusive=True), 5)
    queued(pool, 1)
    assert not timing.granted.is_set() and p.calls == []  # nothing to stop yet
    go.set()  # its process registers: the pool decides again
    timing.wait()
    assert p.calls == ["pause"]
    timing.done()
    alone.done()
    blind = GpuPool(["0"], shared=2, clock=Clock())  # cannot tell when the GPU is idle: never stops runs
    q = Proc()
    alone = Stage(lambda: _memory_hold(blind, q), 0).wait()
    timing = Stage(lambda: blind.hold(exclusive=True), 5)
    queued(blind, 1)
    assert not timing.granted.is_set()
    alone.done()
    timing.wait().done()
    assert q.calls == []


def test_a_run_made_again_alone_that_did_not_idle_the_gpu_when_stopped_is_waited_for() -> None:
    pool = GpuPool(["0"], shared=2, clock=Clock(), quiet=lambda gpu, max_s: None)  # its kernel runs on
    p = Proc()
    alone = Stage(lambda: _memory_hold(pool, p), 0).wait()
    timing = Stage(lambda: pool.hold(exclusive=True), 5)
    queued(pool, 1)
    assert p.calls == ["pause", "resume"] and not timing.granted.is_set()
    assert pool.gpus[0].exclusive and not pool.gpus[0].over_memory  # the rerun holds its GPU again
    other = Stage(lambda: pool.hold(exclusive=True), 6)  # not stopped again for another timing either
    queued(pool, 2)
    assert p.calls == ["pause", "resume"]
    alone.done()
    timing.wait().done()
    other.wait().done()


def test_a_run_made_again_alone_that_ends_under_a_timing_leaves_the_gpu_to_it_until_the_timing_ends() -> None:
    pool = GpuPool(["0"], shared=2, clock=Clock(), quiet=lambda gpu, max_s: 0.0)
    p = Proc()
    alone = Stage(lambda: _memory_hold(pool, p), 0).wait()
    timing = Stage(lambda: pool.hold(exclusive=True), 5).wait()
    alone.done()  # killed while stopped, say: its hold ends under the timing
    shared = Stage(pool.hold, 7)
    queued(pool, 1)
    assert not shared.granted.is_set() and pool.gpus[0].exclusive
    timing.done()
    shared.wait().done()
    g = pool.gpus[0]
    assert not (g.exclusive or g.memory_hold or g.over_memory) and g.shared == 0


def test_a_batch_timing_stops_a_real_process_made_again_alone_for_its_memory(
    sleepy: Any, tmp_path: Path
) -> None:
    """The GPU test's rerun (tests/engine/timing/test_timing_memory_gpu.py) with a shell loop for the process holding the
    memory: the batch's timing stage stops the real process (SIGSTOP), times, continues it, and says so."""
    from beavertui.engine.toolchain.base import AttemptOptions
    from tests.engine.timing.test_timing_memory_gpu import rerun_before_timing

    tool = _scheduled(tmp_path)
    tool.placement.pool.quiet = lambda gpu, max_s: 0.0
    folder = tmp_path / "rerun"
    folder.mkdir()
    ticks = folder / "ticks"
    # about 20 s at most: a timing that waits for its end instead finds it ended (and the test fails, not hangs)
    loop = (
        f"echo HOG READY; for i in $(seq 2000); do [ -e {folder / 'stop'} ] && break; date +%s.%N >>{ticks}; "
        "sleep 0.01; done; echo HOG DONE"
    )
    with rerun_before_timing(tool, loop, folder) as reruns:
        events = list(tool.attempt(sleepy, GOOD, AttemptOptions(iteration=1, gate=0.7)))
        [rerun] = reruns
        assert rerun.thread.is_alive() and rerun.started is not None  # timed while the rerun held the GPU
        stopped_s = rerun.started.paused_s()
        seen = len(ticks.read_text().split())
        until = time.monotonic() + WAIT
        while len(ticks.read_text().split()) < seen + 2 and time.monotonic() < until:  # it goes on after
            time.sleep(0.01)
        rerun.end()
    [timed] = [e for e in events if e.kind == "timing"]
    assert events[-1].success and events[-1].speedup == pytest.approx(2.0)
    assert timed.result.rerun_stopped and timed.result.runs_stopped == 1 and timed.result.gpu == "0"
    assert "HOG DONE" in rerun.outcome.log and stopped_s > 0
    t = [float(x) for x in ticks.read_text().split()]
    gaps = sorted(b - a for a, b in itertools.pairwise(t))
    assert gaps[-1] >= 0.8 * stopped_s, (stopped_s, gaps[-5:])  # it made no tick while stopped
    assert [x for x in tool.placement.pool.log or [] if x[0] == "pause"] == [
        ("pause", "memory", 1 << 62, "0")
    ]


def test_a_timing_stage_is_served_before_an_older_session_s_run_made_again_alone() -> None:
    """A run made again alone is a correctness run: a timing stage waiting for the same GPU (a few seconds,
    and it finishes its attempt) goes first, whichever session is older."""
    pool = GpuPool(["0"], shared=2, clock=Clock())
    pool.log = []
    run = Stage(pool.hold, 9).wait()
    alone = Stage(lambda: pool.hold(exclusive=True, memory=True), 0)  # the oldest session
    queued(pool, 1)
    timing = Stage(lambda: pool.hold(exclusive=True), 5)
    queued(pool, 2)
    run.done()
    timing.wait()
    assert not alone.granted.is_set()
    timing.done()
    alone.wait().done()
    assert grants(pool) == [("shared", 9, "0"), ("exclusive", 5, "0"), ("exclusive", 0, "0")]


def test_short_runs_drain_before_a_timing_stage_and_are_never_stopped() -> None:
    """Only a long run is stopped for a timing stage: short runs end on their own within a timing stage's
    seconds, however long the timing stage has waited for them (the pool's clock moved, other requests made)."""
    clock = Clock()
    pool = GpuPool(["0"], shared=3, clock=clock, quiet=lambda gpu, max_s: 0.0)
    p = Proc()
    short = Stage(lambda: _registered(pool, p), 0).wait()
    timing = Stage(lambda: pool.hold(exclusive=True), 1)
    queued(pool, 1)
    clock.now = 500.0
    other = Stage(pool.hold, 2)  # the pool decides again
    queued(pool, 2)
    assert not timing.granted.is_set() and p.calls == []
    q = Proc()
    slow = Stage(lambda: _registered(pool, q, long=True), 3)  # a slow task's run waits out the drain too
    queued(pool, 3)
    short.done()
    timing.wait()
    assert p.calls == [] and q.calls == [] and timing.got.pause is None
    timing.done()
    other.wait().done()
    slow.wait()
    timing = Stage(lambda: pool.hold(exclusive=True), 4).wait()  # a long run in flight: stopped at once
    assert q.calls == ["pause"] and timing.got.pause.runs == 1
    timing.done()
    slow.done()
    assert q.calls == ["pause", "resume"]


def test_a_run_that_has_not_registered_its_process_is_waited_for() -> None:
    pool = GpuPool(["0"], shared=2, clock=Clock(), quiet=lambda gpu, max_s: 0.0)
    p = Proc()
    registered = Stage(lambda: _registered(pool, p, long=True), 0).wait()
    unregistered = Stage(lambda: pool.hold(long=True), 1).wait()  # between two processes, or not started
    timing = Stage(lambda: pool.hold(exclusive=True), 2)
    queued(pool, 1)
    assert not timing.granted.is_set() and p.calls == []
    unregistered.done()  # now every run in flight can be stopped
    timing.wait()
    assert p.calls == ["pause"]
    timing.done()
    registered.done()


def test_a_gpu_still_busy_after_the_stop_is_given_back_and_drained_as_usual() -> None:
    pool = GpuPool(["0"], shared=2, clock=Clock(), quiet=lambda gpu, max_s: None)
    pool.log = []
    p = Proc()
    long = Stage(lambda: _registered(pool, p, long=True), 0).wait()
    timing = Stage(lambda: pool.hold(exclusive=True), 1)
    queued(pool, 1)
    assert not timing.granted.is_set()
    assert p.calls == ["pause", "resume"]  # stopped once, continued when the GPU did not go idle
    long.done()
    timing.wait()
    assert timing.got.pause is None
    timing.done()
    assert p.calls == ["pause", "resume"]


def test_without_a_way_to_see_the_gpu_idle_nothing_is_stopped() -> None:
    pool = GpuPool(["0"], shared=2, clock=Clock())
    p = Proc()
    long = Stage(lambda: _registered(pool, p, long=True), 0).wait()
    timing = Stage(lambda: pool.hold(exclusive=True), 1)
    queued(pool, 1)
    assert not timing.granted.is_set()
    long.done()
    timing.wait().done()
    assert p.calls == []


@contextlib.contextmanager
def _real_shared_run(
    sleepy: Any, tmp_path: Path, stage: str, **hold: Any
) -> Iterator[tuple[Any, dict[str, Any]]]:
    """The batch toolchain, its pool seeing the GPU idle at once, with one real one-second command holding a
    shared slot (``hold``) in a thread of its own, its process registered with the pool: yields (toolchain,
    got) once the process runs; ``got["r"]`` is the command's result and ``got["ended"]`` when it ended. The
    thread is joined on the way out."""
    import time

    from beavertui.engine.stage import stages

    tool = _scheduled(tmp_path)
    tool.placement.pool.quiet = lambda gpu, max_s: 0.0
    cfg = tool.stage_config()
    got: dict[str, Any] = {}

    def run() -> None:
        SESSION_RANK.set(0)
        with tool.placement.pool.hold(**hold) as g:
            got["r"] = stages.run_stage(
                work, stage, "echo begin; sleep 1; echo end", 30.0, tool.placement._shared_on(cfg, g)
            )
            got["ended"] = time.monotonic()

    with stages.workdir(sleepy, sleepy.broken_start(), cfg) as work:
        t = threading.Thread(target=run, daemon=True)
        t.start()
        deadline = time.monotonic() + WAIT
        while not tool.placement.pool.gpus[0].attached and time.monotonic() < deadline:
            time.sleep(0.01)
        yield tool, got
        t.join(WAIT)


def test_a_long_run_s_real_process_is_stopped_while_a_timing_stage_holds_its_gpu(
    sleepy: Any, tmp_path: Path
) -> None:
    import time

    with _real_shared_run(sleepy, tmp_path, "run", long=True) as (tool, got):
        timing = Stage(lambda: tool.placement.pool.hold(exclusive=True), 1).wait()
        assert timing.got.pause.note().startswith("1 run on GPU 0 stopped (SIGSTOP) for this timing")
        time.sleep(1.5)
        assert "r" not in got  # stopped: its one-second sleep cannot end the run
        timing.done()
    r = got["r"]
    assert r.rc == 0 and r.log == "begin\nend\n" and not r.timed_out
    assert r.paused_s is not None and r.paused_s >= 1.4
    assert r.duration_s is not None and r.duration_s < r.paused_s


def test_a_timing_stage_waits_for_a_sanitizer_run_on_its_gpu_instead_of_stopping_it() -> None:
    """A sanitizer or profiler run is drained, not stopped (unless pause_instrumented): on the H200 sanitizer
    runs stopped in their first seconds never went on. A correctness run beside it is not stopped either:
    the GPU cannot go idle while the sanitizer runs."""
    asked: list[str] = []
    pool = GpuPool(["0"], shared=3, clock=Clock(), quiet=lambda gpu, max_s: asked.append(gpu) or 0.1)
    san, plain = Proc(), Proc()
    sanitizer = Stage(lambda: _registered(pool, san, long=True, instrumented=True), 0).wait()
    slow = Stage(lambda: _registered(pool, plain, long=True), 1).wait()
    timing = Stage(lambda: pool.hold(exclusive=True), 2)
    queued(pool, 1)
    assert not timing.granted.is_set() and asked == [] and san.calls == plain.calls == []
    sanitizer.done()  # the sanitizer run ended: the correctness run left may be stopped now
    timing.wait()
    assert asked == ["0"] and san.calls == [] and plain.calls == ["pause"]
    assert timing.got.pause.note().startswith("1 run on GPU 0 stopped (SIGSTOP)")
    timing.done()
    slow.done()
    assert plain.calls == ["pause", "resume"]


def test_with_pause_instrumented_a_timing_stage_stops_a_sanitizer_run_too() -> None:
    pool = GpuPool(["0"], shared=2, clock=Clock(), quiet=lambda gpu, max_s: 0.1, pause_instrumented=True)
    san = Proc()
    sanitizer = Stage(lambda: _registered(pool, san, long=True, instrumented=True), 0).wait()
    timing = Stage(lambda: pool.hold(exclusive=True), 1).wait()
    assert san.calls == ["pause"]
    timing.done()
    sanitizer.done()
    assert san.calls == ["pause", "resume"]


def test_a_sanitizer_run_s_real_process_runs_on_while_a_timing_stage_waits_for_its_gpu(
    sleepy: Any, tmp_path: Path
) -> None:
    """Through the batch toolchain's own sanitizer hold (long, instrumented) and its registered process: the
    timing stage is granted only once the run has ended, and the run was never stopped."""
    import time

    with _real_shared_run(sleepy, tmp_path, "sanitize", long=True, instrumented=True) as (tool, got):
        timing = Stage(lambda: tool.placement.pool.hold(exclusive=True), 1).wait()
        granted = time.monotonic()
        assert timing.got.pause is None
        timing.done()
    r = got["r"]
    assert r.rc == 0 and r.log == "begin\nend\n" and not r.timed_out and r.paused_s is None
    assert granted >= got["ended"]


@pytest.mark.parametrize(
    ("flag", "stops", "instrumented"),
    [
        ([], True, False),
        (["--pause-for-timing", "all"], True, True),
        (["--pause-for-timing", "none"], False, False),
        (["--no-pause-for-timing"], False, False),
    ],
)
def test_the_batch_command_stops_runs_for_timing_as_asked(
    flag: list[str], stops: bool, instrumented: bool
) -> None:
    from beavertui.cli import build_parser
    from beavertui.commands.batch import options_of
    from beavertui.service.batch import make_toolchain

    args = build_parser().parse_args(["batch", "--no-cache", *flag])
    _tool, pool, _builds, _cache = make_toolchain("local", ["0"], options_of(args))
    assert (pool.quiet is not None) is stops and pool.pause_instrumented is instrumented
    with pytest.raises(SystemExit):
        build_parser().parse_args(["batch", "--pause-for-timing", "sanitizers"])


def test_a_timing_stage_interrupted_while_it_waits_for_the_gpu_to_go_idle_continues_the_runs() -> None:
    def interrupted(gpu: str, max_s: float) -> float | None:
        raise KeyboardInterrupt

    pool = GpuPool(["0"], shared=2, clock=Clock(), quiet=interrupted)
    p = Proc()
    long = Stage(lambda: _registered(pool, p, long=True), 0).wait()
    timing = Stage(lambda: pool.hold(exclusive=True), 1)
    assert timing.granted.wait(WAIT) and isinstance(timing.error, KeyboardInterrupt)
    timing.thread.join(WAIT)
    assert p.calls == ["pause", "resume"]
    g = pool.gpus[0]
    assert not g.exclusive and g.paused == [] and g.pause is None and g.shared == 1
    more = Stage(pool.hold, 2).wait()  # the GPU takes runs again
    more.done()
    long.done()


def test_runs_whose_stop_did_not_idle_the_gpu_are_not_stopped_again_while_they_run() -> None:
    asked: list[str] = []
    pool = GpuPool(["0"], shared=2, clock=Clock(), quiet=lambda gpu, max_s: asked.append(gpu) and None)
    p = Proc()
    hung = Stage(lambda: _registered(pool, p, long=True), 0).wait()  # its kernel runs on when stopped
    timings = [Stage(lambda: pool.hold(exclusive=True), r) for r in (1, 2, 3)]
    queued(pool, 3)
    assert asked == ["0"] and p.calls == ["pause", "resume"]  # one futile stop, not one per timing stage
    assert not any(t.granted.is_set() for t in timings)
    hung.done()
    for t in timings:
        t.wait().done()
    assert asked == ["0"] and p.calls == ["pause", "resume"]
    q = Proc()  # a new run on the GPU may be stopped again
    again = Stage(lambda: _registered(pool, q, long=True), 4).wait()
    last = Stage(lambda: pool.hold(exclusive=True), 5)
    queued(pool, 1)
    assert asked == ["0", "0"] and q.calls == ["pause", "resume"]
    again.done()
    last.wait().done()


def test_the_wait_for_idle_after_a_stop_is_short_unless_an_instrumented_run_was_stopped() -> None:
    limits: list[float] = []
    pool = GpuPool(
        ["0"], shared=2, clock=Clock(), quiet=lambda gpu, max_s: limits.append(max_s) or 0.1,
        idle_wait_s=5.0, idle_wait_instrumented_s=30.0, pause_instrumented=True,
    )  # fmt: skip
    plain = Stage(lambda: _registered(pool, Proc(), long=True), 0).wait()  # a slow task's correctness run
    Stage(lambda: pool.hold(exclusive=True), 1).wait().done()
    sanitizer = Stage(lambda: _registered(pool, Proc(), long=True, instrumented=True), 2).wait()
    Stage(lambda: pool.hold(exclusive=True), 3).wait().done()
    sanitizer.done()
    Stage(lambda: pool.hold(exclusive=True), 4).wait().done()  # the sanitizer run has ended
    plain.done()
    assert limits == [5.0, 30.0, 5.0]
    assert pool.gpus[0].instrumented == 0


KB_OOM = (
    "kernelbench timing failed on the candidate side: torch.OutOfMemoryError: CUDA out of memory. Tried to "
    "allocate 6.00 GiB. GPU 0 has a total capacity of 139.80 GiB of which 4.68 GiB is free."
)


#: A candidate's CUPTI run that ran out of memory: no samples, which alone would read as the machine's failure.
CUPTI_OOM = "cupti timing of the candidate produced no samples (rc 1): CUDA error: out of memory"


@pytest.mark.parametrize(("stopped", "cupti"), [(True, False), (False, False), (True, True)])
def test_a_timing_out_of_memory_beside_runs_stopped_for_it_is_made_again_once_they_end(
    sleepy: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stopped: bool, cupti: bool
) -> None:
    """Runs stopped for a timing stage keep their GPU memory: a timing that then runs out of memory is made
    again holding the GPU's memory (after the runs end), and says so. With nothing stopped for it, running
    out of memory alone on the GPU is the timing's own result."""
    from beavertui.engine.errors import BeaverError
    from beavertui.engine.timing.speedup import SpeedupUnavailable, Timer
    from beavertui.engine.toolchain.base import AttemptOptions

    tool = _scheduled(tmp_path)
    tool.placement.pool.quiet = lambda gpu, max_s: 0.0
    measure, calls = Timer.measure, []

    def first_out_of_memory(self: Any, *a: Any, **kw: Any) -> Any:
        calls.append(tool.placement.pool.gpus[0].pause)
        if len(calls) == 1:
            raise BeaverError(CUPTI_OOM) if cupti else SpeedupUnavailable(KB_OOM)
        return measure(self, *a, **kw)

    monkeypatch.setattr(Timer, "measure", first_out_of_memory)
    p = Proc()
    other = Stage(lambda: _registered(tool.placement.pool, p, long=True), 0).wait() if stopped else None
    if other is not None:  # another session's long run, in flight until the timing waits for its end
        ended = threading.Thread(target=lambda: (queued(tool.placement.pool, 1), other.done()))
        ended.start()
    events = list(tool.attempt(sleepy, GOOD, AttemptOptions(iteration=1, gate=0.7)))
    v = events[-1]
    if not stopped:
        assert len(calls) == 1 and v.correct and v.speedup is None and "out of memory" in v.speedup_note
        return
    ended.join(WAIT)
    assert calls[0] is not None and calls[1] is None  # the second timing stopped nothing: the run had ended
    assert p.calls == ["pause", "resume"]
    [timed] = [e for e in events if e.kind == "timing"]
    assert v.success and v.speedup == pytest.approx(2.0)
    assert timed.result.timed_again is not None and timed.result.gpu == "0"
    assert ("CUDA error: out of memory" if cupti else "CUDA out of memory") in timed.result.timed_again
    assert [k for k, _r, _g in grants(tool.placement.pool)].count("exclusive") == 2
    assert (
        tool.placement.pool.gpus[0].consecutive_failures == 0 and tool.placement.pool.gpus[0].failures == []
    )


@pytest.mark.parametrize("gpu_ok", [True, False], ids=["probe-passes", "probe-fails"])
def test_a_candidate_s_timing_run_that_fails_on_a_sticky_error_is_checked_against_the_probe(
    sleepy: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gpu_ok: bool
) -> None:
    """As for a correctness run: a candidate's timing run that failed on a sticky CUDA error is the
    candidate's (flagged timing_run_failed, the GPU's health untouched) unless a known-good probe kernel then
    fails on the same GPU too (the GPU's failure: an infrastructure error, counted against the GPU)."""
    from beavertui.engine.judge.gpu_fault import GpuProbe
    from beavertui.engine.session.events import StageResult
    from beavertui.engine.timing.speedup import CandidateTimingFailed, Timer
    from beavertui.engine.toolchain.base import AttemptOptions

    tool = _scheduled(tmp_path)
    tool.probe = GpuProbe(command=["true" if gpu_ok else "false"])
    log = "CUDA error at test_main.cu:41: an illegal memory access was encountered\n"
    failed = StageResult(stage="run", command="sh check.sh", rc=1, log=log)

    def sticky(self: Any, *a: Any, **kw: Any) -> Any:
        raise CandidateTimingFailed(failed, "CUDA error at test_main.cu:41: an illegal memory access")

    monkeypatch.setattr(Timer, "measure", sticky)
    events = list(tool.attempt(sleepy, GOOD, AttemptOptions(iteration=1, gate=0.7)))
    infra = [e for e in events if e.kind == "infra_error"]
    flags = [f for e in events if e.kind == "verdict" for f in e.flags]
    if gpu_ok:
        assert not infra and not events[-1].correct
        assert any(f.name == "timing_run_failed" and f.detail.startswith("CUDA error") for f in flags)
        assert tool.placement.pool.gpus[0].consecutive_failures == 0
    else:
        [lost] = infra
        assert lost.source == "gpu" and "probe kernel then failed on it too" in lost.detail
        assert not any(f.name == "timing_run_failed" for f in flags)
        assert tool.placement.pool.gpus[0].consecutive_failures == 1
    assert tool.probe.runs == 1


def test_builds_stopped_for_timing_wait_out_the_hold_and_go_on_after_it() -> None:
    builds = BuildSlots(2, stop_for_timing=True)
    builds.log = []
    first, late = Proc(), Proc()
    with builds.running(first):
        with builds.stopped() as n:
            assert n == 1 and first.calls == ["pause"]
            with builds.running(late):  # a build whose process starts during the hold: stopped at once
                assert late.calls == ["pause"]
            waiting = Stage(builds.hold, 3)  # no slot is granted while a GPU is held alone for timing
            queued(builds, 1)
            assert not waiting.granted.is_set() and builds.log == []
            with builds.stopped() as again:  # a second GPU's timing: nothing more to stop
                assert again == 0
            assert first.calls == ["pause"] and not waiting.granted.is_set()  # the first hold goes on
        waiting.wait()  # the last hold ended: builds go on
        # the late one was continued as it left (for one that has ended, a no-op), not again at the end
        assert first.calls == ["pause", "resume"] and late.calls == ["pause", "resume"]
        waiting.done()


def test_a_process_that_leaves_the_build_slots_while_stopped_is_continued() -> None:
    """A process registered only while it starts (a testbench's run parked ahead of its hold) may stop
    counting as a build while a timing holds it stopped: it goes on, not left stopped for good."""
    builds = BuildSlots(1, stop_for_timing=True)
    proc = Proc()
    with builds.stopped():
        with builds.running(proc):
            assert proc.calls == ["pause"]
        assert proc.calls == ["pause", "resume"]
    assert proc.calls == ["pause", "resume"]  # the hold's end does not continue it again


def test_builds_go_on_during_timing_unless_asked_to_stop() -> None:
    builds = BuildSlots(1)
    proc = Proc()
    with builds.running(proc), builds.stopped() as n:
        assert n == 0 and proc.calls == []
        Stage(builds.hold, 1).wait().done()


def test_a_real_build_is_stopped_while_the_batch_times_an_attempt(sleepy: Any, tmp_path: Path) -> None:
    import time

    from beavertui.engine.stage import stages
    from beavertui.engine.toolchain.base import AttemptOptions

    tool = _scheduled(tmp_path)
    tool.placement.builds.stop_for_timing = True
    cfg = tool.stage_config()
    got: dict[str, Any] = {}
    # another session's build, running until the test makes ``go`` in its work dir: in flight during the timing
    command = "echo begin; while [ ! -e go ]; do sleep 0.02; done; echo end"

    def build() -> None:
        SESSION_RANK.set(0)
        with tool.placement.builds.hold():
            got["r"] = stages.run_stage(work, "build", command, 60.0, tool.placement._building(cfg))

    with stages.workdir(sleepy, sleepy.broken_start(), cfg) as work:
        t = threading.Thread(target=build, daemon=True)
        t.start()
        deadline = time.monotonic() + WAIT
        while not tool.placement.builds._attached and time.monotonic() < deadline:
            time.sleep(0.01)
        events = list(tool.attempt(sleepy, GOOD, AttemptOptions(iteration=1, gate=0.7)))
        (work.path / "go").touch()
        t.join(WAIT)
    v, timed = events[-1], next(e for e in events if e.kind == "timing")
    assert v.success and v.speedup == pytest.approx(2.0)
    assert timed.result.builds_stopped == 1 and timed.result.runs_stopped == 0
    r = got["r"]
    assert r.rc == 0 and r.log == "begin\nend\n" and not r.timed_out
    assert r.paused_s is not None and r.paused_s > 0


@pytest.mark.parametrize(
    ("flag", "gpus", "stops"),
    [
        ([], ["0"], False),  # go, the default: a build load leaves the measured times as they are
        ([], ["0", "1"], False),
        (["--builds-in-timing", "auto"], ["0"], True),  # auto: stopped on one GPU
        (["--builds-in-timing", "auto"], ["0", "1"], False),  # the other GPU's sessions build meanwhile
        (["--builds-in-timing", "stop"], ["0", "1"], True),
    ],
)
def test_the_batch_command_stops_builds_for_timing_as_asked(
    flag: list[str], gpus: list[str], stops: bool
) -> None:
    from beavertui.cli import build_parser
    from beavertui.commands.batch import options_of
    from beavertui.service.batch import make_toolchain

    args = build_parser().parse_args(["batch", "--no-cache", *flag])
    _tool, _pool, builds, _cache = make_toolchain("local", gpus, options_of(args))
    assert builds.stop_for_timing is stops
    with pytest.raises(SystemExit):  # anything else is refused by the parser
        build_parser().parse_args(["batch", "--builds-in-timing", "pause"])


@pytest.mark.parametrize("gpus", [["0"], ["0", "1"]])
def test_the_batch_parks_a_testbench_s_runs_before_it_holds_its_only_gpu(
    sleepy: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gpus: list[str]
) -> None:
    """A testbench timed by its own speed lines starts its runs on a build slot and parks them before CUDA
    before the GPU is held, when the machine has one GPU (the hold can only give that one); with two, the
    hold parks them, as the GPU is not known before."""
    import dataclasses

    from beavertui.engine.errors import BeaverError
    from beavertui.engine.stage import stages
    from beavertui.engine.timing import cupti
    from beavertui.engine.toolchain.base import AttemptOptions
    from tests.engine.timing.test_timing_prestart import _app

    try:
        cupti.build_library(tmp_path / "cache")
    except BeaverError as exc:
        pytest.skip(f"the CUPTI injection library cannot be built here: {exc}")
    exe, marks = _app(tmp_path, rounds=3)
    task = dataclasses.replace(sleepy, test_command=f"{exe} {marks}")
    tool = _scheduled(tmp_path, method="testbench_lines")
    tool.config = dataclasses.replace(tool.config, timing=dataclasses.replace(tool.config.timing, rounds=3))
    tool.placement.pool = GpuPool(gpus)
    at_grant: dict[str, int] = {}
    hold = tool.placement.pool.hold

    @contextlib.contextmanager
    def watched(**kw: Any) -> Iterator[Any]:
        with hold(**kw) as g:
            if kw.get("exclusive"):
                at_grant.update(
                    parked=len(list(marks.glob("parked-*"))), began=len(list(marks.glob("began-*")))
                )
            yield g

    monkeypatch.setattr(tool.placement.pool, "hold", watched)
    cfg = tool.stage_config()
    work = stages.prepare(task, task.reference() or "", tmp_path / "work")
    t = tool._measure(task, work, cfg, AttemptOptions(iteration=1, gate=0.7))
    assert t.method == "testbench_lines" and t.speedup == pytest.approx(1.0)
    assert at_grant == {"parked": 3 if gpus == ["0"] else 0, "began": 0}
    started = "started before the GPU was held" if gpus == ["0"] else "started at once with the GPU held"
    assert started in (t.note or ""), t.note
    assert len(list(marks.glob("started-*"))) == 3 and len(list(marks.glob("began-*"))) == 3


def test_the_tracker_names_each_session_in_flight_and_where_it_is(tmp_path: Path) -> None:
    """What an interrupted batch says of each session it cuts: longest in flight first, with its last event;
    a session with none past its header is still in its broken start's check or waiting for its first
    reply. A finished session is no longer named."""
    from beavertui.batch.job import JobOutcome
    from beavertui.batch.local_executor import Tracker
    from beavertui.engine.session.events import Built, StageResult

    jobs, _tasks, _run_dir = _jobs(tmp_path, 3)
    tracker = Tracker(jobs)
    for job in jobs:
        tracker.start(job)
    tracker.event(jobs[1], Built(iteration=2, result=StageResult(stage="build", command="make", rc=0)))
    lines = tracker.in_flight()
    assert len(lines) == 3 and all(
        ln.startswith("vec_scale (scripted:vec_scale_demo.toml, sample ") for ln in lines
    )
    assert lines[0].startswith("vec_scale (scripted:vec_scale_demo.toml, sample 0): ")  # started first
    (building,) = [ln for ln in lines if "sample 1" in ln]
    assert re.search(r"s in flight; last: build of attempt 2, [0-9]+ s ago$", building), building
    assert (
        sum(ln.endswith("no attempt yet (its broken start's check, or its first reply)") for ln in lines) == 2
    )
    tracker.finish(jobs[0], JobOutcome(status="ran"))
    assert [ln for ln in tracker.in_flight() if "sample 0" in ln] == []
