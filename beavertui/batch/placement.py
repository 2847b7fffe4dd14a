"""The batch's placement: each stage of a local attempt waits for its resource in the pool.

``PoolPlacement`` is the placement (engine/toolchain/placement.py) LocalToolchain asks in a batch: the build
behind a CPU slot and the compile cache, the correctness run holding a shared GPU slot (``CUDA_VISIBLE_DEVICES``
set to it), sanitizer and profiler runs a shared slot of their own (marked long and instrumented: the pool
runs at most one on a GPU, never where timing waits), a run made again alone for its memory the GPU's
memory, and timing the GPU alone once everything it needs is built (nothing is built for it while a GPU is
held alone, and where the build slots stop builds for timing, BuildSlots.stop_for_timing, the other
sessions' builds are stopped during the measurement too). What runs and how it is judged are
LocalToolchain's, as in every mode; this module only says where and when, and tells ``on_stage`` (the run's
stage log, rundir.log_stage) of every stage it placed: its task, what it was (``build``, ``prepare``: a
build slot for what a timing needs; ``run``, ``alone``, ``sanitize``, ``profile``, ``timing``,
``timing_memory``: a GPU hold), the GPU, the session's rank (rank.LANE_RANK, -1, for the timing lane's
stages; none outside a batch's threads) and when it was asked for, granted and given back (epoch seconds,
as session events). ``ScheduledToolchain`` wraps any other toolchain (recorded, remote) and gates its whole
run phase on a GPU slot.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from functools import partial
from typing import Any

from beavertui.batch.build_slots import BuildSlots
from beavertui.batch.cache import CompileCache, cache_key, changed, snapshot, toolkit_id
from beavertui.batch.gpu_pool import GpuPool
from beavertui.batch.gpu_state import GpuState
from beavertui.batch.rank import SESSION_RANK
from beavertui.engine.corpus import families, harness
from beavertui.engine.corpus.task import Task
from beavertui.engine.host.adapt import adapt_command
from beavertui.engine.judge.gpu_fault import GpuProbe
from beavertui.engine.session.events import Event, GpuSignature, InfraError, StageResult, Verdict
from beavertui.engine.stage import stages
from beavertui.engine.toolchain.base import AttemptOptions, Toolchain, profiler_unavailable
from beavertui.engine.toolchain.local import LocalConfig, LocalToolchain
from beavertui.engine.toolchain.placement import GpuUse, Lease, Placement


def scheduled_local(
    pool: GpuPool,
    builds: BuildSlots,
    cache: CompileCache | None,
    config: LocalConfig | None = None,
    probe: GpuProbe | None = None,
    on_stage: Callable[[dict[str, Any]], None] | None = None,
) -> LocalToolchain:
    """The local toolchain of a batch: its stages placed by ``pool`` and ``builds``, builds through ``cache``;
    ``on_stage`` is told of each stage placed (PoolPlacement)."""
    return LocalToolchain(config, PoolPlacement(pool, builds, cache, on_stage), probe)


class _PoolLease(Lease):
    """A GPU slot of the pool, for one stage."""

    def __init__(
        self, place: PoolPlacement, g: GpuState, use: GpuUse, task_id: str, config: stages.StageConfig
    ):
        super().__init__(config, g.index)
        self.place, self.g, self.use, self.task_id = place, g, use, task_id
        self._before = (g.shared, g.runs)

    def took(self, *results: StageResult) -> None:
        g, (shared, runs) = self.g, self._before
        if self.use == "run":
            self.shared = shared > 1 or g.shared > 1 or g.runs != runs
        if self.use in ("run", "alone") and results:
            run = results[-1]
            self.place._run_s[self.task_id] = run.duration_s or 0.0
            self.place._learn(self.task_id, "run", run.duration_s, run.timed_out)
        elif self.use in ("sanitize", "profile") and results:
            took = [r.duration_s for r in results]
            total = sum(t for t in took if t is not None) if None not in took else None
            self.place._learn(self.task_id, "sanitize", total, any(r.timed_out for r in results))


class PoolPlacement(Placement):
    """Stages placed by the batch's GPU pool and build slots; builds through the compile cache."""

    long_run_s: float = 10.0
    """A task whose latest correctness run here took longer than this (a timing stage takes a few seconds;
    most runs less) has its next runs asked for as long runs: a timing stage that finds one on its GPU stops
    the GPU's runs instead of waiting for it, and picks another GPU to drain where it can."""

    def __init__(
        self,
        pool: GpuPool,
        builds: BuildSlots,
        cache: CompileCache | None,
        on_stage: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        self.pool, self.builds, self.cache, self.on_stage = pool, builds, cache, on_stage
        self.toolkit = toolkit_id() if cache is not None else ""
        self._harness: dict[str, str] = {}
        self._run_s: dict[str, float] = {}
        """The seconds of each task's latest correctness run here: a task whose runs outlast ``long_run_s``
        is run in a long slot, like a sanitizer."""
        self._expect: dict[tuple[str, str], float] = {}
        """(task, "run" or "sanitize"): the seconds the task's latest such stage took here, when it ended
        before its time limit: what the pool expects the next one to take (GpuPool.hold's ``expect_s``). A
        stage that ran to its limit leaves no expectation: how long a hang lasts says nothing of the next."""

    def learn_run_seconds(self, task_id: str, seconds: float, timed_out: bool = False) -> None:
        self._run_s[task_id] = seconds
        self._learn(task_id, "run", seconds, timed_out)

    def _learn(self, task_id: str, kind: str, seconds: float | None, timed_out: bool) -> None:
        if seconds is None or timed_out:
            self._expect.pop((task_id, kind), None)
        else:
            self._expect[(task_id, kind)] = seconds

    def _harness_hash(self, task: Task) -> str:
        if task.id not in self._harness:
            self._harness[task.id] = harness.harness_hash(task)
        return self._harness[task.id]

    def build(
        self, task: Task, code: str, work: stages.WorkDir, cfg: stages.StageConfig,
        run: Callable[[stages.StageConfig], StageResult],
    ) -> StageResult:  # fmt: skip
        with self._logged("build", task.id) as note, self.builds.hold():
            note["began"] = time.time()
            key = None
            # a build whose outputs are bound to its work dir's path is made again, not restored elsewhere
            if self.cache is not None and not families.build_is_path_bound(task):
                command = adapt_command(task.build_command, cfg.sm)
                key = cache_key(code, self._harness_hash(task), command, self.toolkit)
                hit = self.cache.get(key, work.path)
                if hit is not None:
                    note["cached"] = True
                    return hit
            unseen: list[str] = []  # folders the snapshots could not walk: outputs there are not known
            before = snapshot(work.path, unseen)
            build = run(self._building(cfg))
            after = snapshot(work.path, unseen)
            if self.cache is not None and key is not None and not build.timed_out and not unseen:
                self.cache.put(key, build, work.path, changed(before, after))
            return build

    def _building(self, cfg: stages.StageConfig) -> stages.StageConfig:
        """A build's configuration: its processes are registered with the build slots while they run, so
        that a timing stage holding a GPU alone may stop them (BuildSlots.stopped)."""
        return replace(cfg, pausable=self.builds.running)

    @contextmanager
    def build_slot(self, cfg: stages.StageConfig) -> Iterator[stages.StageConfig]:
        with self._logged("prepare", None) as note, self.builds.hold():
            note["began"] = time.time()
            yield self._building(cfg)

    @contextmanager
    def _logged(self, stage: str, task_id: str | None) -> Iterator[dict[str, Any]]:
        """Tell ``on_stage`` of one stage when it ends: the caller notes ``began`` once granted (and whatever
        else it learns: the GPU, whether the build was cached); ``asked`` and ``ended`` are noted here."""
        rank = SESSION_RANK.get()
        note: dict[str, Any] = {"stage": stage, "task": task_id, "rank": rank, "asked": time.time()}
        try:
            yield note
        finally:
            if self.on_stage is not None:
                note["ended"] = time.time()
                for k in ("asked", "began", "ended"):
                    if k in note:
                        note[k] = round(note[k], 3)
                # the stage log is for looking back: a full disk must not fail the stage
                with contextlib.suppress(OSError):
                    self.on_stage(note)

    @staticmethod
    def _on(cfg: stages.StageConfig, g: GpuState) -> stages.StageConfig:
        base = dict(cfg.env if cfg.env is not None else os.environ)
        base["CUDA_VISIBLE_DEVICES"] = g.index
        return replace(cfg, env=base)

    def _shared_on(self, cfg: stages.StageConfig, g: GpuState) -> stages.StageConfig:
        """A correctness or sanitizer run's configuration on ``g``: its processes are registered with the pool
        while they run, so that a timing stage waiting for ``g`` may stop them instead of waiting for them to
        end (a shared run's, or a run's made again alone for its memory)."""
        return replace(self._on(cfg, g), pausable=partial(self.pool.running, g))

    @contextmanager
    def gpu(self, use: GpuUse, cfg: stages.StageConfig, task: Task) -> Iterator[Lease]:
        with self._logged(use, task.id) as note, self._gpu(use, cfg, task) as lease:
            note["began"], note["gpu"] = time.time(), lease.gpu
            if lease.pause is not None:
                note["stopped_runs"] = lease.pause.runs
            yield lease

    @contextmanager
    def _gpu(self, use: GpuUse, cfg: stages.StageConfig, task: Task) -> Iterator[Lease]:
        if use in ("timing", "timing_memory"):
            with self.pool.hold(exclusive=True, memory=use == "timing_memory") as g:
                lease = _PoolLease(self, g, use, task.id, self._on(cfg, g))
                lease.pause = g.pause
                yield lease
            return
        if use in ("run", "alone"):
            # A run expected to take long (the task's last run here did: a test command that compiles for a
            # minute) is a long run: a timing stage stops it rather than wait for it (GpuPool._pausable).
            alone = use == "alone"
            long = not alone and self._run_s.get(task.id, 0.0) > self.long_run_s
            expect = self._expect.get((task.id, "run"))
            hold = self.pool.hold(exclusive=alone, long=long, expect_s=expect, memory=alone)
        else:  # sanitizer and profiler runs: a slot of their own, one per GPU, never where timing waits
            expect = self._expect.get((task.id, "sanitize")) if use == "sanitize" else None
            hold = self.pool.hold(long=True, expect_s=expect, instrumented=True)
        with hold as g:  # a rerun alone for its memory too: a timing stage may stop it
            yield _PoolLease(self, g, use, task.id, self._shared_on(cfg, g))

    @contextmanager
    def builds_stopped(self) -> Iterator[int]:
        with self.builds.stopped() as n:
            yield n

    def ahead(self, cfg: stages.StageConfig) -> stages.StageConfig | None:
        sole = self.pool.sole_gpu()  # with one GPU, every hold gets it
        return self._on(cfg, sole) if sole is not None else None

    def report(self, lease: Lease, ok: bool, detail: str = "") -> None:
        if isinstance(lease, _PoolLease):
            self.pool.report(lease.g, ok=ok, detail=detail)


class ScheduledToolchain:
    """Any toolchain, with its run phase (everything after the build) holding a GPU slot."""

    def __init__(self, inner: Toolchain, pool: GpuPool, builds: BuildSlots) -> None:
        self.inner, self.pool, self.builds = inner, pool, builds
        self.stage_s = {"build": 0.0, "run": 0.0}

    def gpu(self) -> GpuSignature | None:
        return self.inner.gpu()

    def time_later(self, task: Task, code: str, pending: Verdict, gate: float) -> Iterator[Event]:
        """The inner toolchain's late timing, holding a GPU alone as a timing stage does."""
        with self.pool.hold(exclusive=True) as g:
            events = list(self.inner.time_later(task, code, pending, gate))  # type: ignore[attr-defined]
            infra = any(isinstance(e, InfraError) and e.source == "gpu" for e in events)
        self.pool.report(g, ok=not infra)
        yield from events

    def judges(self, task: Task, code: str) -> bool:
        """Whether the inner toolchain can judge this candidate (a replay: whether it is recorded)."""
        judges = getattr(self.inner, "judges", None)
        return bool(judges(task, code)) if callable(judges) else True

    def profiler_unavailable(self) -> str | None:
        return profiler_unavailable(self.inner)

    def attempt(self, task: Task, code: str, options: AttemptOptions) -> Iterator[Event]:
        events = self.inner.attempt(task, code, options)
        with self.builds.hold():
            first = next(events, None)
        if first is None:
            return
        yield first
        if isinstance(first, Verdict):
            return
        with self.pool.hold() as g:
            t0 = time.monotonic()
            rest = list(events)
            self.stage_s["run"] += time.monotonic() - t0
            infra = any(isinstance(e, InfraError) and e.source == "gpu" for e in rest)
        self.pool.report(g, ok=not infra)
        yield from rest
