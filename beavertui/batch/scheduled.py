"""Toolchains under the scheduler: the same attempt, with each stage waiting for its resource.

``ScheduledLocalToolchain`` is LocalToolchain's attempt with the build behind a CPU slot and the compile
cache, correctness and sanitizer runs holding a shared GPU slot (``CUDA_VISIBLE_DEVICES`` set to it), and
timing holding a GPU alone. Classification, sanitizer policy and verdicts are LocalToolchain's own
methods, so a batch judges exactly as ``beavertui live`` does. ``ScheduledToolchain`` wraps any other
toolchain (recorded, remote) and gates its whole run phase on a GPU slot. Neither decides what runs.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import replace

from beavertui.batch.cache import CompileCache, cache_key, changed, snapshot, toolkit_id
from beavertui.batch.resources import BuildSlots, GpuPool, GpuState
from beavertui.engine import runner
from beavertui.engine.adapt import adapt_command
from beavertui.engine.classify import classify
from beavertui.engine.errors import BeaverError
from beavertui.engine.events import (
    Built,
    Event,
    GpuSignature,
    InfraError,
    Ran,
    Sanitized,
    StageResult,
    Timed,
    TimingResult,
    Verdict,
)
from beavertui.engine.localtool import LocalConfig, LocalToolchain
from beavertui.engine.task import Task
from beavertui.engine.timing import Timer
from beavertui.engine.toolchain import AttemptOptions, Toolchain


class ScheduledLocalToolchain(LocalToolchain):
    """LocalToolchain whose stages run where the pool says."""

    def __init__(
        self,
        pool: GpuPool,
        builds: BuildSlots,
        cache: CompileCache | None,
        config: LocalConfig | None = None,
    ) -> None:
        super().__init__(config)
        self.pool, self.builds, self.cache = pool, builds, cache
        self.toolkit = toolkit_id() if cache is not None else ""
        self._harness: dict[str, str] = {}
        self._gpu: GpuSignature | None = None
        self._gpu_known = False

    def gpu(self) -> GpuSignature | None:
        if not self._gpu_known:
            self._gpu, self._gpu_known = super().gpu(), True
        return self._gpu

    def _harness_hash(self, task: Task) -> str:
        if task.id not in self._harness:
            self._harness[task.id] = runner.harness_hash(task)
        return self._harness[task.id]

    def _build(self, task: Task, code: str, work: runner.WorkDir, cfg: runner.RunnerConfig) -> StageResult:
        with self.builds.hold():
            key = None
            if self.cache is not None:
                command = adapt_command(task.build_command, cfg.sm)
                key = cache_key(code, self._harness_hash(task), command, self.toolkit)
                hit = self.cache.get(key, work.path)
                if hit is not None:
                    return hit
            before = snapshot(work.path)
            build = runner.build(work, cfg)
            if self.cache is not None and key is not None and not build.timed_out:
                self.cache.put(key, build, work.path, changed(before, snapshot(work.path)))
            return build

    @staticmethod
    def _on(cfg: runner.RunnerConfig, g: GpuState) -> runner.RunnerConfig:
        base = dict(cfg.env if cfg.env is not None else os.environ)
        base["CUDA_VISIBLE_DEVICES"] = g.index
        return replace(cfg, env=base)

    def attempt(self, task: Task, code: str, options: AttemptOptions) -> Iterator[Event]:
        it = options.iteration
        cfg = self._runner_config()
        with runner.workdir(task, code, cfg, keep=options.keep_workdir) as work:
            build = self._build(task, code, work, cfg)
            yield Built(iteration=it, result=build)
            tampered = work.note_build()
            run: StageResult | None = None
            gpu_cfg = cfg
            used: GpuState | None = None
            sanitized: list[Sanitized] = []
            memcheck_log: str | None = None
            timed_out = build.timed_out
            verdict = classify(build.rc, build.log, None, "", timed_out)
            if build.rc == 0 and not build.timed_out:
                with self.pool.hold() as g:
                    used, gpu_cfg = g, self._on(cfg, g)
                    run = runner.test(work, gpu_cfg)
                    tampered += work.verify()
                    timed_out = build.timed_out or run.timed_out
                    verdict = classify(build.rc, build.log, run.rc, run.log, timed_out)
                    sanitized = list(self._sanitize(task, work, gpu_cfg, options, run, verdict))
                lost = _gpu_lost(run.log)
                self.pool.report(g, ok=not lost, detail=_first_line(run.log) if lost else "")
            else:
                tampered += work.verify()
            if run is not None:
                yield Ran(iteration=it, result=run)
            for event in sanitized:
                yield event
                if (
                    event.tool == "memcheck"
                    and event.result.stage == "sanitize"
                    and not event.result.timed_out
                ):
                    memcheck_log = event.result.log
            if memcheck_log is not None and run is not None:
                verdict = classify(build.rc, build.log, run.rc, run.log, timed_out, memcheck_log)
            flags = [f"harness_modified: {rel}" for rel in sorted(set(tampered))]
            correct = verdict.category == "passed" and not tampered
            timing: TimingResult | None = None
            if correct and options.time_if_correct and self.gpu() is not None:
                with self.pool.hold(exclusive=True) as g:
                    try:
                        timing = Timer(task, self._on(cfg, g), self.config.timing).measure(work)
                        self.pool.report(g, ok=True)
                    except BeaverError as exc:
                        self.pool.report(g, ok=False, detail=str(exc))
                        yield InfraError(
                            iteration=it, source="gpu", detail=f"timing failed on GPU {g.index}: {exc}"
                        )
                if timing is not None:
                    yield Timed(iteration=it, result=timing)
            del used
            yield self._verdict(it, verdict, correct, timing, options.gate, flags)


#: Driver messages that mean the GPU itself is gone or broken, not the candidate.
_LOST = (
    "no CUDA-capable device is detected",
    "CUDA driver version is insufficient",
    "GPU has fallen off the bus",
    "uncorrectable ECC error",
    "all CUDA-capable devices are busy or unavailable",
)


def _gpu_lost(log: str) -> bool:
    return any(s in log for s in _LOST)


def _first_line(log: str) -> str:
    return next((ln.strip() for ln in log.splitlines() if any(s in ln for s in _LOST)), "GPU failure")[:200]


class ScheduledToolchain:
    """Any toolchain, with its run phase (everything after the build) holding a GPU slot."""

    def __init__(self, inner: Toolchain, pool: GpuPool, builds: BuildSlots) -> None:
        self.inner, self.pool, self.builds = inner, pool, builds
        self.stage_s = {"build": 0.0, "run": 0.0}

    def gpu(self) -> GpuSignature | None:
        return self.inner.gpu()

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
