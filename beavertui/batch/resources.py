"""Where stages run: CPU build slots and the GPUs, shared for correctness runs, exclusive for timing.

A GPU admits up to ``shared`` correctness/sanitizer runs at once, or one timing run alone. Every request
waits in one queue per resource and is served in this order: timing first, then a run made again alone (it
ran out of memory beside other runs), then any shared run; within each, the oldest session first (its rank:
the order in which the batch started the sessions), then first come. So:

- a timing stage never starves: while one waits, the GPU it waits for (the one with the fewest long runs,
  then the fewest runs, in flight) admits no new shared run and drains; it takes any GPU that is idle first;
- a drain does not leave the GPU's other slots idle behind a run that turns out long: once a run that was
  in flight when the timing stage began to wait has been running ``patience_s``, the GPU admits short runs
  again (never a long one). A run admitted so may hang itself (a kernel that runs to its time limit): once
  it has run ``hang_s``, the GPU admits short runs again too, but those never hold the drain open in turn,
  so a stream of long runs cannot starve the timing stage. Long runs (sanitizers) wait out a drain, unless
  the run it waits for has run ``hang_s`` itself: then it is likely to run to its time limit, and a long
  run of a session older than every session whose timing waits starts beside it (never holding the drain
  open) rather than wait for it and then for the timing stage. A newer session's long run waits: beside a
  run that only looked hung it held older sessions' timing stages for minutes (H200, kernelbench: check
  sanitizer runs of 300 s held four timing stages for 267 to 446 s). Once no such run is left, the GPU drains what it admitted meanwhile. The timing stage cannot
  start before a long run ends (its kernels would share the GPU with it), but the other sessions'
  correctness runs go on;
- given a way to see a GPU idle (``quiet``), a timing stage does not wait for long runs at all: when every
  run in flight on the GPU has registered its process (``running``), none is a sanitizer or profiler run
  (those are stopped too only with ``pause_instrumented``: a sanitizer run stopped in its first seconds
  was seen never to go on), and one of them is long or has run ``patience_s``, they are all stopped
  (SIGSTOP), the timing stage waits until the GPU runs no kernel (``idle_wait_s``, or
  ``idle_wait_instrumented_s`` when a sanitizer or profiler run was stopped), holds it alone, and the runs
  are continued when it is given back; a stop counts in neither a run's time limit
  nor its duration (sandbox.Started.pause). When the GPU does not go idle, the runs are continued and the
  timing stage waits for the drain below, as without stops, and while any of those runs is in flight no
  other timing stage stops them again (a kernel that hangs runs on with its host stopped: on the H200 each
  of the timing stages waiting behind one stopped the GPU in turn, for the whole idle wait each, and no run
  was admitted in between, for minutes);
- a run whose length is expected (the same task's last run of that kind here, passed as ``expect_s``) is
  admitted during a drain when it is expected to end before the runs the drain already waits for (a
  backfill: it keeps a slot busy and delays the timing stage by nothing, as far as the expectations hold),
  and such a run counts as hung only once it has run ``hang_s`` and twice its expected length, so that a
  task whose runs take a minute by nature (kernelbench's) does not open the drain to long runs that then
  hold the timing stage for another minute;
- a run made again alone for its memory waits for the GPU's runs to end and never stops them: a stopped
  process keeps its GPU memory (H200, kernelbench: two runs stopped beside such a rerun held 42.6 and
  49.6 GiB, and two reruns, of 8.5 and 67 s, went before a younger session's timing stage, which waited
  141 s);
- such a run, once it holds its GPU and has registered its process, is stopped in turn for a timing stage
  (given ``quiet``), as a long shared run is, rather than waited for: its memory stays allocated, and a
  timing that finds too little left beside it runs out of memory and is made again once the run has ended
  (batch/scheduled.py), so the timing loses one try at most, where waiting lost the rerun's whole length
  (H200, kernelbench: a timing stage waited 52 s behind a start check's run, likely such a rerun, holding
  50.9 GB with the GPU 0% busy; not yet run on a GPU);
- a long run is a sanitizer or profiler run, or a correctness run of a task whose last run here outlasted
  ``patience_s`` (batch/scheduled.py: a test command that compiles at test time runs for a minute, and
  admitted as a short run during every stuck drain it would keep the timing stage waiting run after run);
- the other GPUs go on admitting shared runs, and a long run (a sanitizer) is placed on the GPU with the
  fewest long runs and no timing waiting for it, so a timing stage seldom waits for one to finish;
- among equally loaded GPUs the one that ran fewest stages is taken, so work spreads over idle GPUs;
- sessions that are further along (started earlier) are served first at every resource, so finishing
  sessions comes before starting new ones;
- ``Admission`` says when the batch may start another session: while no stage waits for a build slot (and
  fewer sessions are starting than there are slots) and fewer GPU stages wait than the GPUs run at once
  (timing stages held up behind a long run do not count: new sessions build and run meanwhile).

A GPU on which ``fail_limit`` runs in a row end in an infrastructure failure is taken out of the schedule.
This module only counts and waits; every decision is made under one lock, when a request, a release or the
moment a run in flight reaches ``patience_s`` happens (no polling).
"""

from __future__ import annotations

import contextvars
import itertools
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Protocol

from beavertui.engine.errors import ToolchainError

#: The failure of a stage that found every GPU taken out of the schedule (the session is left resumable).
NO_GPU_LEFT = "no healthy GPU left in the schedule"

#: The rank of the session whose stages run in this thread (lower: started earlier, served first).
SESSION_RANK: contextvars.ContextVar[int | None] = contextvars.ContextVar("beaver_session_rank", default=None)

_SEQ = itertools.count()


def _rank() -> int:
    r = SESSION_RANK.get()
    return r if r is not None else 1 << 62  # outside a batch session: after every session, first come


@dataclass
class GpuState:
    """Bookkeeping of one GPU."""

    index: str
    shared: int = 0
    exclusive: bool = False
    waiting_exclusive: int = 0
    """Timing requests now waiting for this GPU to drain (it admits no new shared run meanwhile, unless the
    drain is stuck behind a run found in flight: GpuPool.patience_s)."""
    long_runs: int = 0
    """Shared runs in flight that were asked for as long (sanitizer runs)."""
    instrumented: int = 0
    """Shared runs in flight whose kernels run instrumented (sanitizer and profiler runs): stopped, their
    kernels in flight may run on for tens of seconds."""
    started: dict[int, float] = field(default_factory=dict)
    """When each shared run in flight was granted (by request number), on the pool's clock."""
    expect: dict[int, float] = field(default_factory=dict)
    """The expected seconds of the shared runs in flight that came with an expectation (by request number)."""
    late: dict[int, int] = field(default_factory=dict)
    """Shared runs in flight that were admitted while a drain was stuck: 1 (behind a run found in flight when
    the drain began: it may hold the drain open itself after ``hang_s``) or 2 (behind such a run: it never
    holds the drain open)."""
    drain_since: float | None = None
    """When the earliest timing request now waiting for this GPU arrived (None: no drain)."""
    waiting_rank: int | None = None
    """The oldest session (lowest rank) whose timing request now waits for this GPU (None: no drain)."""
    consecutive_failures: int = 0
    healthy: bool = True
    busy_since: float | None = None
    busy_s: float = 0.0
    runs: int = 0
    failures: list[str] = field(default_factory=list)
    attached: dict[int, Pausable] = field(default_factory=dict)
    """The processes of shared runs in flight that the pool may stop, registered by each run's stage while it
    runs (GpuPool.running)."""
    paused: list[Pausable] = field(default_factory=list)
    """Those stopped now for the timing stage that holds the GPU alone (continued when it is released)."""
    memory_hold: bool = False
    """The GPU is held alone by a run made again alone for its memory (its process, once registered, is in
    ``attached``)."""
    over_memory: bool = False
    """A timing stage holds the GPU over that run, stopped for it (the run's hold goes on after the timing's)."""
    pause_note: str | None = None
    """For the timing stage that holds the GPU: what was stopped for it, in words (None: nothing was)."""
    futile: set[int] = field(default_factory=set)
    """The registered processes (by key) that were stopped once while the GPU did not go idle: a kernel of
    theirs kept running with its host stopped (one that hangs, likely). While one of them runs, no timing
    stage stops the GPU's runs again: each would wait out the idle check in turn, holding the GPU alone and
    every other run off it, and the hung run's time limit, which a stop extends, would never come."""


class Pausable(Protocol):
    """A stage's process that can be stopped and continued (sandbox.Started)."""

    def pause(self) -> bool: ...

    def resume(self) -> None: ...


@dataclass
class _Request:
    exclusive: bool
    long: bool
    prefer: str | None
    rank: int
    expect_s: float | None = None
    instrumented: bool = False
    memory: bool = False
    """An exclusive hold for a run made again alone because it ran out of memory beside other runs: it never
    stops the GPU's runs (a stopped process keeps its GPU memory) and comes after every timing request."""
    seq: int = field(default_factory=lambda: next(_SEQ))
    arrived: float = 0.0
    granted: GpuState | None = None
    failed: bool = False
    paused: int = 0
    """Shared runs stopped for this timing request when it was granted."""
    no_pause: bool = False
    """The GPU did not go idle after stopping its runs once: this request waits for a drain."""
    over_memory: bool = False
    """This timing request was granted over a run made again alone for its memory, stopped for it."""
    idle_s: float = 0.0
    """How long to wait for the GPU to go idle after stopping its runs (GpuPool.idle_wait_s)."""

    def order(self) -> tuple[bool, bool, int, int]:
        return (not self.exclusive, self.memory, self.rank, self.seq)


class GpuPool:
    """The visible GPUs of this node."""

    def __init__(
        self,
        gpus: Sequence[str],
        *,
        shared: int = 4,
        fail_limit: int = 3,
        patience_s: float = 10.0,
        hang_s: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        quiet: Callable[[str, float], float | None] | None = None,
        idle_wait_s: float = 5.0,
        idle_wait_instrumented_s: float = 30.0,
        pause_instrumented: bool = False,
    ) -> None:
        self.gpus = [GpuState(str(g)) for g in gpus]
        self.quiet = quiet
        """Waits until a GPU runs no kernel, at most the seconds given, and returns the seconds it waited (None:
        it cannot tell, or the GPU stayed busy). Given, a timing stage need not wait for long runs to end: they
        are stopped instead (``_pausable``); None: never stopped."""
        self.idle_wait_s = idle_wait_s
        """How long a timing stage waits for its GPU to go idle after stopping runs whose kernels run at full
        speed (kernels of a few milliseconds: H200, 0.3 to 0.6 s); a kernel still running after that hangs,
        likely, and the stop is given up (the runs are continued and drained)."""
        self.idle_wait_instrumented_s = idle_wait_instrumented_s
        """The same wait when a sanitizer or profiler run was stopped (H200, the kernelbench batch's stops beside
        its sanitizer runs: idle up to 28 s after the stop)."""
        self.pause_instrumented = pause_instrumented
        """Whether sanitizer and profiler runs are stopped for a timing stage too. False (the default): a GPU
        running one is drained, not stopped. On the H200 (2026-12-04) two of the cufft_samples start checks'
        sanitizer runs, stopped 4 and 7 s after they began, never went on past the harness's build step
        (their Python process busy, no CUDA context) until their 300 s limit, in a batch where a sanitizer
        run stopped 11 s in and those not stopped took 8 to 14 s; a wedged sanitizer run loses what it would
        have found and holds a slot for its whole limit."""
        self.shared_limit = max(1, shared)
        self.fail_limit = fail_limit
        self.patience_s = patience_s
        """How long a run found in flight by a waiting timing stage may run before the drain stops
        holding the GPU's other slots idle for it (a timing stage takes a few seconds; most runs less)."""
        self.hang_s = hang_s
        """How long a run admitted during a stuck drain may run before the drain counts as stuck behind it."""
        self.clock = clock
        self._cv = threading.Condition()
        self._waiting: list[_Request] = []
        self.exhausted = threading.Event()
        """Set once every GPU has been taken out of the schedule."""
        self.admission: Admission | None = None
        """Told of every request's session (set by Admission)."""
        self.log: list[tuple[str, str, int, str]] | None = None
        """When a list: every grant and release as (what, kind, rank, gpu), in order (tests, benches)."""

    # ------------------------------------------------------------------ scheduling (under the lock)

    def _schedule(self) -> None:
        """Grant what can be granted, in priority order; mark the GPUs that timing requests wait for."""
        healthy = [g for g in self.gpus if g.healthy]
        for g in self.gpus:
            g.waiting_exclusive = 0
            g.waiting_rank = None
            g.drain_since = None
        now = self.clock()
        granted = False
        for req in sorted(self._waiting, key=_Request.order):
            if not healthy:
                req.failed = True
                granted = True
                continue
            if req.exclusive:
                idle = [g for g in healthy if not g.exclusive and g.shared == 0 and g.waiting_exclusive == 0]
                waits = idle or req.no_pause or req.memory  # a memory hold never stops runs: they keep theirs
                stoppable = [] if waits else [g for g in healthy if self._pausable(g, now)]
                over = [] if waits or stoppable else [g for g in healthy if self._stoppable_memory_hold(g)]
                if idle:
                    g = next((x for x in idle if x.index == req.prefer), None) or min(
                        idle, key=lambda x: x.runs
                    )
                    g.exclusive = True
                    g.memory_hold = req.memory
                    self._grant(req, g)
                    granted = True
                elif over and (stopped := self._stop_memory_hold(req, over)) is not None:
                    self._grant(req, stopped)
                    granted = True
                elif stoppable:  # its runs in flight are stopped for the timing stage, not waited for
                    g = min(stoppable, key=lambda x: (x.shared, x.runs))
                    self._stop_runs(req, g)
                    g.exclusive = True
                    if self.log is not None:
                        self.log.append(("pause", "exclusive", req.rank, g.index))
                    self._grant(req, g)
                    granted = True
                else:  # drain the GPU whose runs in flight end soonest, as far as one can tell
                    target = min(
                        healthy, key=lambda x: (x.waiting_exclusive, x.exclusive, x.long_runs, x.shared)
                    )
                    target.waiting_exclusive += 1
                    if target.waiting_rank is None or req.rank < target.waiting_rank:
                        target.waiting_rank = req.rank
                    if target.drain_since is None or req.arrived < target.drain_since:
                        target.drain_since = req.arrived
                continue
            by_rule = [
                g
                for g in healthy
                if not g.exclusive
                and g.shared < self.shared_limit
                and (
                    g.waiting_exclusive == 0
                    or (
                        self._stuck(g, now) and (not req.long or (self._hung(g, now) and self._older(req, g)))
                    )
                )
            ]
            open_ = by_rule or [  # else a backfill
                g
                for g in healthy
                if not g.exclusive and g.shared < self.shared_limit and self._fits(g, req, now)
            ]
            if not open_:
                continue
            if req.long:
                g = min(open_, key=lambda x: (x.long_runs, x.shared, x.runs))
            else:
                g = next((x for x in open_ if x.index == req.prefer), None) or min(
                    open_, key=lambda x: (x.shared, x.runs)
                )
            if g.waiting_exclusive:  # admitted while the drain is stuck (behind a first run, or a late one),
                # or as a backfill (it never holds the drain open)
                first = bool(by_rule) and self._stuck_first(g, now) and not req.long
                g.late[req.seq] = 1 if first else 2
            g.shared += 1
            g.long_runs += req.long
            g.instrumented += req.instrumented
            g.started[req.seq] = now
            if req.expect_s is not None:
                g.expect[req.seq] = req.expect_s
            self._grant(req, g)
            granted = True
        self._waiting = [r for r in self._waiting if r.granted is None and not r.failed]
        if granted:
            self._cv.notify_all()

    def _pausable(self, g: GpuState, now: float) -> bool:
        """Whether a timing stage may take ``g`` by stopping its runs in flight instead of waiting for them:
        the pool can tell when a GPU is idle, every run in flight has registered its process, none of them is
        a sanitizer or profiler run (unless ``pause_instrumented``), and one of them is a long run (a run
        whose task runs long, a sanitizer run where those are stopped) or has run ``patience_s`` (short runs
        drain on their own in less)."""
        if self.quiet is None or g.exclusive or g.shared == 0 or len(g.attached) < g.shared:
            return False
        if g.instrumented and not self.pause_instrumented:  # a sanitizer or profiler run is waited for
            return False
        if g.futile.intersection(g.attached):  # stopping them did not idle the GPU before
            return False
        return g.long_runs > 0 or any(now - t >= self.patience_s for t in g.started.values())

    def _stop_runs(self, req: _Request, g: GpuState) -> int:
        """Stop (Pausable.pause) the registered processes of ``g`` for timing request ``req``, which then waits
        up to its idle wait for the GPU to run no kernel: how many were stopped (not those that had ended)."""
        g.paused = [p for p in g.attached.values() if p.pause()]
        req.paused = len(g.paused)
        req.idle_s = self.idle_wait_instrumented_s if g.instrumented else self.idle_wait_s
        return req.paused

    def _stoppable_memory_hold(self, g: GpuState) -> bool:
        """Whether a timing stage may take ``g`` by stopping the run made again alone for its memory that
        holds it: the pool can tell when a GPU is idle, the run has registered its process, no timing holds
        the GPU over it already, and stopping it did not fail to idle the GPU before."""
        return (
            self.quiet is not None
            and g.memory_hold
            and not g.over_memory
            and bool(g.attached)
            and not g.futile.intersection(g.attached)
        )

    def _stop_memory_hold(self, req: _Request, over: list[GpuState]) -> GpuState | None:
        """Stop the run that holds one of ``over`` for its memory, for timing request ``req``: the GPU, or
        None when the run had ended already (the request then waits for its hold to end)."""
        g = min(over, key=lambda x: x.runs)
        if not self._stop_runs(req, g):
            return None
        g.over_memory = req.over_memory = True
        if self.log is not None:
            self.log.append(("pause", "memory", req.rank, g.index))
        return g

    @contextmanager
    def running(self, g: GpuState, process: Pausable) -> Iterator[None]:
        """Register the process of a shared run on ``g`` (or of a run made again alone for its memory) for as
        long as it runs (StageConfig.pausable): a timing stage that waits for ``g`` may stop it
        (Pausable.pause) and continues it when done."""
        key = id(process)
        with self._cv:
            g.attached[key] = process
            self._schedule()
        try:
            yield
        finally:
            with self._cv:
                g.attached.pop(key, None)
                g.futile.discard(key)
                if process in g.paused:
                    g.paused.remove(process)
                self._schedule()

    @staticmethod
    def _older(req: _Request, g: GpuState) -> bool:
        """Whether ``req``'s session started before every session whose timing stage waits for ``g``: only
        then may its long run start beside a hung run (a newer session's sanitizer run would hold an older
        session's timing stage for its whole length, up to minutes: finishing sessions comes first)."""
        return g.waiting_rank is None or req.rank < g.waiting_rank

    def _stuck_first(self, g: GpuState, now: float) -> bool:
        """Whether the drain of ``g`` waits for a run that was in flight when it began and has been running
        at least ``patience_s``."""
        since = g.drain_since
        return since is not None and any(
            t <= since and now - t >= self.patience_s for t in g.started.values()
        )

    def _hang_at(self, g: GpuState, seq: int, t: float) -> float:
        """When run ``seq`` of ``g``, granted at ``t``, counts as hung: ``hang_s`` after it began, or twice
        its expected length when it came with one and that is longer."""
        e = g.expect.get(seq)
        return t + (self.hang_s if e is None else max(self.hang_s, 2.0 * e))

    def _fits(self, g: GpuState, req: _Request, now: float) -> bool:
        """Whether ``req`` can run on ``g`` while it drains without delaying the timing stage: it has an
        expected length, and it is expected to end before the latest expected end of the runs in flight."""
        if g.waiting_exclusive == 0 or req.expect_s is None:
            return False
        ends = [g.started[seq] + e for seq, e in g.expect.items()]  # both kept for exactly the runs in flight
        return bool(ends) and now + req.expect_s <= max(ends)

    def _stuck(self, g: GpuState, now: float) -> bool:
        """Whether the drain of ``g`` waits for a run whose end is not in sight, so that the GPU's other slots
        are not kept idle for it: a run found in flight when the drain began that has run ``patience_s``, or
        a run admitted behind such a run (``late`` 1) that has run ``hang_s`` (it hangs itself)."""
        if self._stuck_first(g, now):
            return True
        since = g.drain_since
        return since is not None and any(
            t > since and g.late.get(seq) == 1 and now >= self._hang_at(g, seq, t)
            for seq, t in g.started.items()
        )

    def _hung(self, g: GpuState, now: float) -> bool:
        """Whether the drain of ``g`` waits for a run that has run ``hang_s`` (found in flight when the drain
        began, or admitted behind such a run): it is likely to run to its time limit, so a long run (a
        sanitizer) may start beside it rather than wait for it and then for the timing stage."""
        since = g.drain_since
        return since is not None and any(
            (t <= since or g.late.get(seq) == 1) and now >= self._hang_at(g, seq, t)
            for seq, t in g.started.items()
        )

    def _deadline(self) -> float | None:
        """Seconds until a run that a drain waits for reaches its patience or ``hang_s`` (None: no such
        moment ahead)."""
        now = self.clock()
        out: float | None = None
        for g in self.gpus:
            if g.drain_since is None:
                continue
            for seq, t in g.started.items():
                moments: tuple[float, ...]
                if t <= g.drain_since:
                    moments = (t + self.patience_s, self._hang_at(g, seq, t))
                elif g.late.get(seq) == 1:
                    moments = (self._hang_at(g, seq, t),)
                else:
                    continue
                for m in moments:
                    if m > now:
                        out = m - now if out is None else min(out, m - now)
        return out

    def reschedule(self) -> None:
        """Decide again now (a test that moves the pool's clock; the waiting stages do it when a run that a
        drain waits for reaches ``patience_s``)."""
        with self._cv:
            self._schedule()

    def _grant(self, req: _Request, g: GpuState) -> None:
        req.granted = g
        now = time.monotonic()
        if g.busy_since is None:
            g.busy_since = now
        g.runs += 1
        if self.log is not None:
            self.log.append(("grant", _kind(req), req.rank, g.index))

    def _mark_idle(self, g: GpuState, now: float) -> None:
        if g.shared == 0 and not g.exclusive and g.busy_since is not None:
            g.busy_s += now - g.busy_since
            g.busy_since = None

    # ------------------------------------------------------------------ public

    @contextmanager
    def hold(
        self,
        *,
        exclusive: bool = False,
        prefer: str | None = None,
        long: bool = False,
        expect_s: float | None = None,
        instrumented: bool = False,
        memory: bool = False,
    ) -> Iterator[GpuState]:
        """Hold a GPU (shared or exclusive) for one stage; ``prefer`` names the GPU to take when it is open,
        ``long`` marks a shared run expected to take long (a sanitizer run), ``expect_s`` is how long a shared
        run is expected to take (None: not known), ``instrumented`` a sanitizer or profiler run, ``memory`` an
        exclusive hold for the GPU's memory (a run made again alone after it ran out of memory beside others):
        it waits for the GPU's runs to end instead of stopping them, and after every waiting timing stage."""
        req = _Request(
            exclusive,
            long and not exclusive,
            prefer,
            _rank(),
            expect_s,
            instrumented and not exclusive,
            memory=memory and exclusive,
            arrived=self.clock(),
        )
        if self.admission is not None:
            self.admission.reached(req.rank)
        g = self._wait_for_grant(req)
        if req.paused:
            g = self._quiet_or_wait(req, g)
        try:
            yield g
        finally:
            with self._cv:
                self._release(req, g)
            if self.admission is not None:
                self.admission.changed.set()

    def _wait_for_grant(self, req: _Request) -> GpuState:
        with self._cv:
            if not any(g.healthy for g in self.gpus):
                raise ToolchainError(NO_GPU_LEFT, source="gpu")
            self._waiting.append(req)
            self._schedule()
            self._cv.notify_all()  # wait_queued() watchers
            try:
                while req.granted is None and not req.failed:
                    if not self._cv.wait(self._deadline()):
                        self._schedule()  # a run that a drain waits for has now run patience_s
                        if self.admission is not None:  # its timing stages no longer hold new sessions back
                            self.admission.changed.set()
            except BaseException:  # interrupted while waiting: leave no request or grant behind
                if req.granted is not None:
                    self._release(req, req.granted)
                elif req in self._waiting:
                    self._waiting.remove(req)
                    self._schedule()
                raise
            if req.granted is None:
                raise ToolchainError(NO_GPU_LEFT, source="gpu")
            return req.granted

    def _quiet_or_wait(self, req: _Request, g: GpuState) -> GpuState:
        """After stopping ``g``'s runs for timing request ``req``: wait until the GPU runs none of their
        kernels (those already launched run to their end), and say so on ``g``; when it does not go idle,
        continue them and wait for a drain instead, as without stopping."""
        assert self.quiet is not None
        try:
            waited = self.quiet(g.index, req.idle_s)
        except BaseException:
            with self._cv:
                self._release(req, g)
            raise
        n = req.paused
        if waited is not None:
            what = (
                "the run made again alone for its memory"
                if req.over_memory
                else f"{n} run{'s' if n != 1 else ''}"
            )
            g.pause_note = (
                f"{what} on GPU {g.index} stopped (SIGSTOP) for this timing, continued "
                f"after it; no kernel ran on the GPU {waited:.1f} s after the stop"
            )
            return g
        with self._cv:  # still busy: give the GPU back to its runs and drain it as usual
            g.futile.update(k for k, p in g.attached.items() if p in g.paused)
            self._release(req, g)
            req.granted, req.paused, req.no_pause, req.over_memory = None, 0, True, False
        return self._wait_for_grant(req)

    def _release(self, req: _Request, g: GpuState) -> None:
        """Give back what ``req`` was granted on ``g`` and grant what that frees (under the lock)."""
        if req.exclusive and g.over_memory and not req.over_memory:
            g.memory_hold = False  # a memory hold ended under the timing over it: the timing keeps the GPU
        elif req.exclusive:
            g.over_memory = False
            g.exclusive = g.memory_hold = req.over_memory and g.memory_hold  # over one: that hold goes on
            g.pause_note = None
            for p in g.paused:
                p.resume()
            g.paused = []
        else:
            g.shared -= 1
            g.long_runs -= req.long
            g.instrumented -= req.instrumented
            g.started.pop(req.seq, None)
            g.expect.pop(req.seq, None)
            g.late.pop(req.seq, None)
        self._mark_idle(g, time.monotonic())
        if self.log is not None:
            self.log.append(("release", _kind(req), req.rank, g.index))
        self._schedule()
        self._cv.notify_all()

    def sole_gpu(self) -> GpuState | None:
        """The one healthy GPU, when there is exactly one (then every hold gets it); else None."""
        with self._cv:
            healthy = [g for g in self.gpus if g.healthy]
        return healthy[0] if len(healthy) == 1 else None

    def queued(self) -> int:
        """GPU stages waiting for a GPU now."""
        with self._cv:
            return len(self._waiting)

    def backlog(self) -> int:
        """GPU stages waiting that the GPUs will serve as soon as the runs in flight end: every waiting
        stage but the timing stages whose GPU's drain is stuck behind a long run (they wait for that run,
        not for the queue)."""
        with self._cv:
            now = self.clock()
            blocked = sum(g.waiting_exclusive for g in self.gpus if self._stuck(g, now))
            return len(self._waiting) - blocked

    def wait_queued(self, n: int, timeout: float = 60.0) -> bool:
        """Block until at least ``n`` GPU stages wait (for tests and benches that order events)."""
        with self._cv:
            return self._cv.wait_for(lambda: len(self._waiting) >= n, timeout)

    def capacity(self) -> int:
        """GPU stages the healthy GPUs run at once (shared runs)."""
        with self._cv:
            return self.shared_limit * sum(g.healthy for g in self.gpus)

    def report(self, g: GpuState, ok: bool, detail: str = "") -> None:
        """Record a run's health; ``fail_limit`` infrastructure failures in a row remove the GPU."""
        with self._cv:
            if ok:
                g.consecutive_failures = 0
                return
            g.consecutive_failures += 1
            g.failures.append(detail)
            if g.consecutive_failures >= self.fail_limit and g.healthy:
                g.healthy = False
                if not any(x.healthy for x in self.gpus):
                    self.exhausted.set()
                self._schedule()
                self._cv.notify_all()

    def busy_fraction(self, wall_s: float) -> dict[str, float]:
        now = time.monotonic()
        out = {}
        with self._cv:
            for g in self.gpus:
                busy = g.busy_s + (now - g.busy_since if g.busy_since is not None else 0.0)
                out[g.index] = busy / wall_s if wall_s > 0 else 0.0
        return out


def _kind(req: _Request) -> str:
    return "exclusive" if req.exclusive else "long" if req.long else "shared"


class BuildSlots:
    """Parallel builds on CPU cores, granted oldest session first.

    With ``stop_for_timing``, nothing is built while a GPU is held alone for timing (``stopped``): the build
    processes that registered (``running``, through StageConfig.pausable) are stopped (SIGSTOP) for the
    hold and continued after it, a build that starts its process meanwhile is stopped at once, and no slot
    is granted until the hold ends. A stop counts in neither a build's time limit nor its duration
    (sandbox.Started.pause). On the H200, builds on the other cores made every timed process slower (a CUDA
    context's start and teardown, docs/performance.md), which lower priorities and separate CPUs did not
    give back."""

    def __init__(self, n: int, stop_for_timing: bool = False) -> None:
        self.n = max(1, n)
        self.stop_for_timing = stop_for_timing
        self._cv = threading.Condition()
        self._busy = 0
        self._waiting: list[tuple[int, int]] = []
        self._attached: dict[int, Pausable] = {}
        self._holds = 0
        """Timing stages holding a GPU alone now (``stopped``): while any, nothing is built."""
        self._paused: list[Pausable] = []
        self.admission: Admission | None = None
        """Told of every request's session (set by Admission)."""
        self.log: list[tuple[str, int]] | None = None
        """When a list: every grant and release as (what, rank), in order."""

    def _next(self) -> tuple[int, int] | None:
        if self._holds:
            return None
        return min(self._waiting) if self._waiting and self._busy < self.n else None

    @contextmanager
    def running(self, process: Pausable) -> Iterator[None]:
        """Register a build's process for as long as it runs (StageConfig.pausable); one that starts while a
        GPU is held alone for timing is stopped at once."""
        key = id(process)
        with self._cv:
            self._attached[key] = process
            if self._holds and process.pause():
                self._paused.append(process)
        try:
            yield
        finally:
            with self._cv:
                self._attached.pop(key, None)
                if process in self._paused:  # left while stopped (a process that goes on unregistered,
                    self._paused.remove(process)  # one started ahead of its hold): continued, not left so
                    process.resume()

    @contextmanager
    def stopped(self) -> Iterator[int]:
        """For a timing stage holding a GPU alone: with ``stop_for_timing``, stop every build process until
        it ends (the stages of several GPUs overlap: builds go on once the last one ends) and yield how many
        were stopped now; otherwise nothing is stopped and it yields 0."""
        if not self.stop_for_timing:
            yield 0
            return
        with self._cv:
            self._holds += 1
            n = 0
            for p in self._attached.values():
                if p not in self._paused and p.pause():
                    self._paused.append(p)
                    n += 1
        try:
            yield n
        finally:
            with self._cv:
                self._holds -= 1
                if not self._holds:
                    for p in self._paused:
                        p.resume()
                    self._paused = []
                self._cv.notify_all()  # builds that waited for the hold to end

    @contextmanager
    def hold(self) -> Iterator[None]:
        me = (_rank(), next(_SEQ))
        if self.admission is not None:
            self.admission.reached(me[0])
        with self._cv:
            self._waiting.append(me)
            self._cv.notify_all()  # wait_queued() watchers
            try:
                while self._next() != me:
                    self._cv.wait()
            finally:
                self._waiting.remove(me)
                self._cv.notify_all()  # the next in line may fit too (or goes first, when this one gave up)
            self._busy += 1
            if self.log is not None:
                self.log.append(("grant", me[0]))
        try:
            yield
        finally:
            with self._cv:
                self._busy -= 1
                if self.log is not None:
                    self.log.append(("release", me[0]))
                self._cv.notify_all()
            if self.admission is not None:
                self.admission.changed.set()

    def queued(self) -> int:
        """Builds waiting for a slot now."""
        with self._cv:
            return len(self._waiting)

    def wait_queued(self, n: int, timeout: float = 60.0) -> bool:
        """Block until at least ``n`` builds wait for a slot."""
        with self._cv:
            return self._cv.wait_for(lambda: len(self._waiting) >= n, timeout)


class Admission:
    """When a batch may start one more session: the GPUs and the build slots can take its work soon.

    A new session starts only while (1) no build waits for a slot and fewer sessions are starting (started,
    but not yet at any build slot or GPU) than there are slots, and (2) fewer GPU stages wait than the
    healthy GPUs run at once (GpuPool.backlog: timing stages stuck behind a long run do not count).
    Sessions in flight are thus bounded by what the GPUs and build slots can
    finish, not by a count of cores; ``changed`` is set whenever the answer may have changed.
    """

    def __init__(self, pool: GpuPool, builds: BuildSlots) -> None:
        self.pool, self.builds = pool, builds
        pool.admission = self
        builds.admission = self
        self._lock = threading.Lock()
        self._starting: set[int] = set()
        self.changed = threading.Event()

    def started(self, rank: int) -> None:
        with self._lock:
            self._starting.add(rank)

    def reached(self, rank: int) -> None:
        """A session asked for a resource: it no longer counts as starting."""
        with self._lock:
            self._starting.discard(rank)
        self.changed.set()

    def finished(self, rank: int) -> None:
        self.reached(rank)

    def ready(self) -> bool:
        with self._lock:
            starting = len(self._starting)
        return (
            self.builds.queued() == 0
            and starting < self.builds.n
            and self.pool.backlog() < max(1, self.pool.capacity())
        )
