"""The local executor: every session of a batch run on this machine, concurrently, resumably.

Sessions run in threads (their work is model calls and subprocesses, which release the GIL); how many run
at once is bounded by ``jobs`` and, with an admission (admission.py), by what the GPUs and build slots can
take; model calls by each endpoint's ``max_concurrency`` (models.py), builds by CPU slots (build_slots.py)
and GPU stages by the GPU pool (gpu_pool.py), both asked through the toolchain's placement (placement.py);
every resource serves the oldest session first. Jobs are ordered so that every (model, protocol) group
advances together. The executor decides when a session runs, never what it does.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from beavertui.batch.admission import Admission
from beavertui.batch.job import JobOutcome, JobSpec, Prefix, drive
from beavertui.batch.models import ReplyCaches, build_model, helper_models, session_protocol
from beavertui.batch.rank import SESSION_RANK
from beavertui.batch.rundir import RunManifest, session_path
from beavertui.batch.timing_lane import TimingLane
from beavertui.engine.corpus.task import Task
from beavertui.engine.loop.run import run_session
from beavertui.engine.session.events import Event, Ran, SessionEnd
from beavertui.engine.toolchain.base import Toolchain
from beavertui.engine.validation.on_the_run import Usable, UsableCheck


def plan(manifest: RunManifest, run_dir: Path) -> list[JobSpec]:
    """Every session of the batch, interleaved: sample, then task, then protocol, then model."""
    jobs = []
    for sample in range(manifest.samples):
        for task_id in manifest.tasks:
            for entry in manifest.protocols:
                for model in manifest.models:
                    path = session_path(run_dir, model.name, entry.slug, task_id, sample)
                    jobs.append(
                        JobSpec(
                            manifest.run_id,
                            model,
                            entry.slug,
                            entry.protocol,
                            task_id,
                            sample,
                            path,
                            manifest.reply_cache,
                            manifest.reply_cache_sampled,
                        )
                    )
    return jobs


@dataclass
class GroupCount:
    """Progress of one (model, protocol) group."""

    total: int = 0
    done: int = 0
    passed: int = 0
    running: int = 0
    skipped: int = 0
    failed: int = 0
    attempts: int = 0
    infra: int = 0
    infra_ended: int = 0
    """Sessions that ended by an infrastructure failure (stop reason ``error``) after their retries."""
    timing_pending: int = 0
    """Correct attempts of ended sessions that the timing lane has yet to time."""
    token_limit: int = 0
    """Attempts without code whose reply stopped at its completion token limit (finish reason ``length``)."""
    started: float = field(default_factory=time.monotonic)
    durations: list[float] = field(default_factory=list)


class Tracker:
    """Counts per group, fed by the executors from any thread; the progress display reads it."""

    def __init__(self, jobs: Sequence[JobSpec]) -> None:
        self.lock = threading.Lock()
        self.groups: dict[tuple[str, str], GroupCount] = {}
        for j in jobs:
            self.groups.setdefault(j.group, GroupCount()).total += 1
        self.t0 = time.monotonic()
        self._started: dict[Path, tuple[JobSpec, float]] = {}
        self._last: dict[Path, tuple[str, int | None, float]] = {}
        self._lane: dict[Path, JobSpec] = {}
        self._passed_late: set[Path] = set()
        self._cut_reply: set[Path] = set()
        """Sessions whose latest reply stopped at its completion token limit."""

    def start(self, job: JobSpec) -> None:
        with self.lock:
            self.groups[job.group].running += 1
            self._started[job.path] = (job, time.monotonic())

    def event(self, job: JobSpec, event: Event) -> None:
        with self.lock:
            self._last[job.path] = (event.kind, getattr(event, "iteration", None), time.monotonic())
            if event.kind == "verdict":
                self.groups[job.group].attempts += 1
            elif event.kind == "reply":
                if getattr(event, "finish_reason", None) == "length":
                    self._cut_reply.add(job.path)
                else:
                    self._cut_reply.discard(job.path)
            elif (
                event.kind == "candidate"
                and getattr(event, "code", "") is None
                and job.path in self._cut_reply
            ):
                self.groups[job.group].token_limit += 1

    def in_flight(self) -> list[str]:
        """One line per session running now, longest first: its task, model (and protocol, where the batch
        runs several: a grid's arms share their tasks and samples) and sample, how long it has run, and its
        last event (none yet: its broken start's check or its first reply)."""
        now = time.monotonic()
        with self.lock:
            several = len({slug for _model, slug in self.groups}) > 1
            out = []
            for job, t in sorted(self._started.values(), key=lambda jt: jt[1]):
                ran = now - t
                last = self._last.get(job.path)
                if last is None or last[0] == "header":
                    where = "no attempt yet (its broken start's check, or its first reply)"
                else:
                    kind, it, at = last
                    where = (
                        f"last: {kind}"
                        + (f" of attempt {it}" if it is not None else "")
                        + f", {now - at:.0f} s ago"
                    )
                arm = f", {job.protocol.short()}" if several else ""
                out.append(
                    f"{job.task_id} ({job.model.name}{arm}, sample {job.sample}): {ran:.0f} s in flight; {where}"
                )
            return out

    def finish(self, job: JobSpec, out: JobOutcome) -> None:
        with self.lock:
            g = self.groups[job.group]
            started = self._started.pop(job.path, None)
            self._last.pop(job.path, None)
            if started is not None:
                g.running -= 1
                if out.status == "ran":
                    g.durations.append(time.monotonic() - started[1])
            g.done += 1
            g.passed += out.passed
            g.skipped += out.status == "skipped"
            g.failed += out.status == "failed"
            g.infra += len(out.infra)
            g.infra_ended += out.status != "failed" and out.stop_reason == "error"

    def pending(self, job: JobSpec, n: int) -> None:
        """``n`` timings of the session of ``job`` went to the timing lane."""
        with self.lock:
            self.groups[job.group].timing_pending += n
            self._lane[job.path] = job

    def timed(self, path: Path, end: SessionEnd | None) -> None:
        """The timing lane is through with one timing of the session at ``path``; ``end``: its new end."""
        with self.lock:
            job = self._lane.get(path)
            if job is None:
                return
            g = self.groups[job.group]
            g.timing_pending -= 1  # (for a moment below its count: the lane may finish before it is told)
            if end is not None and end.success and path not in self._passed_late:
                self._passed_late.add(path)  # its loop ended before its speedup was known
                g.passed += 1

    def eta_s(self, key: tuple[str, str], parallel: int) -> float | None:
        g = self.groups[key]
        if not g.durations:
            return None
        per = sum(g.durations) / len(g.durations)
        left = g.total - g.done
        return per * left / max(1, min(parallel, left or 1))

    def totals(self) -> dict[str, int]:
        with self.lock:
            keys = (
                "total",
                "done",
                "passed",
                "running",
                "skipped",
                "failed",
                "attempts",
                "infra",
                "infra_ended",
                "timing_pending",
                "token_limit",
            )
            return {k: sum(getattr(g, k) for g in self.groups.values()) for k in keys}


class Flag(Protocol):
    """Anything with ``is_set()``: a threading.Event, or several of them read as one."""

    def is_set(self) -> bool: ...


def local_starter(
    job: JobSpec,
    task: Task,
    toolchain: Toolchain,
    usable: Usable | None = None,
    defer_timing: bool = False,
    replies: ReplyCaches | None = None,
) -> Callable[[Prefix | None], tuple[Any, tuple[str, ...]]]:
    """Starts (or resumes) the session of ``job``; its models take their reply cache from ``replies``, the
    run's caches (None: caches of this session's own)."""
    caches = replies if replies is not None else ReplyCaches()

    def start(prefix: Prefix | None) -> tuple[Any, tuple[str, ...]]:
        learn = getattr(toolchain, "learn_run_seconds", None)
        if prefix is not None and learn is not None:
            for e in prefix[1]:
                if isinstance(e, Ran) and e.result.duration_s is not None:  # the resumed attempts' runs
                    learn(task.id, e.result.duration_s, timed_out=e.result.timed_out)
        model = build_model(job.model, task, job.protocol, job=job, replies=caches)
        protocol = session_protocol(job.model, task, job.protocol)
        planner, summariser = helper_models(job.model, task, job.protocol, job=job, replies=caches)
        stream = run_session(
            task, model, toolchain, protocol, run_id=job.run_id, sample=job.sample, resume_from=prefix,
            usable=usable, defer_timing=defer_timing, models_file=job.model.models_file, planner=planner,
            summariser=summariser,
        )  # fmt: skip
        helpers = tuple(k for h in (planner, summariser) if h is not None for k in h.secrets())
        return stream, model.secrets() + helpers

    return start


def run_local(
    jobs: Sequence[JobSpec],
    tasks: dict[str, Task],
    toolchain: Toolchain,
    run_dir: Path,
    *,
    parallel: int,
    retries: int,
    tracker: Tracker,
    stop: Flag | None = None,
    admission: Admission | None = None,
    lane: TimingLane | None = None,
    replies: ReplyCaches | None = None,
) -> dict[Path, JobOutcome]:
    """Run the jobs with at most ``parallel`` sessions at once; returns each job's outcome.

    Every session takes its reply cache from ``replies``, the run's caches, whose counts are then this
    call's (None: caches of this call's own).

    With ``admission``, a session beyond the first starts only when the admission says the GPUs and build
    slots can take more work (admission.py). Each session's stages are served by its rank (the order
    in which sessions started), so sessions further along finish first. A task never validated on this GPU
    is checked by its first session (its reference run once); a session of a task found unusable ends before
    its first turn, with the reason. With ``lane``, a session whose correct attempts the protocol lets be
    timed after its loop ends when its loop ends, and the lane times them beside the sessions (timing_lane.py;
    a resumed run's pending timings first); it is drained before this returns."""
    outcomes: dict[Path, JobOutcome] = {}
    wake = admission.changed if admission is not None else threading.Event()
    # a task never validated on this GPU is validated by its first session here (validation/on_the_run.py)
    usable = UsableCheck(toolchain)
    caches = replies if replies is not None else ReplyCaches()

    def one(job: JobSpec, rank: int) -> JobOutcome:
        SESSION_RANK.set(rank)
        tracker.start(job)
        try:
            out = drive(
                job,
                run_dir,
                retries,
                local_starter(
                    job, tasks[job.task_id], toolchain, usable, defer_timing=lane is not None, replies=caches
                ),
                tracker.event,
            )
            if lane is not None:
                tracker.pending(job, 0)  # known to the tracker before the lane may finish with it
                tracker.pending(job, lane.submit(job.path))
        except BaseException:
            tracker.finish(job, JobOutcome(status="failed"))
            raise
        finally:
            if admission is not None:
                admission.finished(rank)
        tracker.finish(job, out)
        return out

    if lane is not None:  # a resumed run: what its lane had not appended when it was cut
        lane.on_done = tracker.timed
        for job in jobs:
            if job.path.is_file():
                tracker.pending(job, 0)
                tracker.pending(job, lane.submit(job.path))
    pending = list(reversed(jobs))
    running: dict[Future[JobOutcome], JobSpec] = {}
    pool = ThreadPoolExecutor(max_workers=max(1, parallel), thread_name_prefix="session")
    ranks = itertools.count()
    interrupted = False
    try:
        while pending or running:
            wake.clear()
            for fut in [f for f in running if f.done()]:
                job = running.pop(fut)
                outcomes[job.path] = fut.result()
            while (
                pending
                and len(running) < parallel
                and not (stop and stop.is_set())
                and (admission is None or not running or admission.ready())
            ):
                job = pending.pop()
                rank = next(ranks)
                if admission is not None:
                    admission.started(rank)
                fut = pool.submit(one, job, rank)
                fut.add_done_callback(lambda _f: wake.set())
                running[fut] = job
            if not running:
                break
            wake.wait(timeout=0.5)  # a finished session or a change at a resource wakes it earlier
    except KeyboardInterrupt:  # must not wait for sessions blocked on an endpoint
        interrupted = True
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    finally:
        if not interrupted:
            pool.shutdown(wait=True)
            if lane is not None:
                lane.close()
    return outcomes
