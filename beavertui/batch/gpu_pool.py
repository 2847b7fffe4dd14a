"""The GPUs of a batch: shared by correctness runs, held alone for timing.

The rules, each decided under one lock when a request, a release or a deadline happens (no polling):

- A GPU admits up to ``shared`` shared runs at once (correctness, sanitizer and profiler runs), or one
  exclusive hold (a timing stage, or a run made again alone because it ran out of memory beside others).
- Requests wait in one queue: timing first, then runs made again alone, then shared runs; within each, the
  oldest session first (rank.py), then first come. A run goes to an open GPU other than the timing GPU
  (below) where there is one; a long run (sanitizer, profiler, and the correctness runs of a task whose runs
  take long: placement.py) then to the one with the fewest long runs; then the one with the fewest runs in
  flight, then the one that ran the fewest stages.
- A run that cannot be stopped for timing (a sanitizer or profiler run, unless ``pause_instrumented``) is
  at most one per GPU, and is never placed on a GPU that a timing stage waits for: it waits for one.
- With two healthy GPUs or more, the first is the timing GPU: a timing stage takes it, or another GPU that
  is idle, and drains (or stops) only it; every run goes to another GPU when one is open.
- A waiting timing stage drains one GPU: it admits no new shared run until the timing stage has it, but for
  a run expected to end before the runs in flight are (a backfill, ``_fits``).
- Given ``quiet`` (a way to see a GPU idle), a timing stage stops (SIGSTOP) the registered runs of a GPU
  instead of waiting for them, where one of them is long and none is a sanitizer or profiler run (unless
  ``pause_instrumented``); it holds the GPU once no kernel runs (``idle_wait_s``) and continues them when
  done. A stop counts in neither a run's time limit nor its duration. If the GPU does not go idle, the runs
  are continued and drained, and not stopped again.
- A run made again alone for its memory waits for the GPU's runs to end and never stops them (a stopped
  process keeps its memory); a timing stage may stop it in turn, and is timed again if it then runs out of
  memory (engine/toolchain/local.py).
- A GPU on which ``fail_limit`` runs in a row fail for the GPU's reasons is taken out of the schedule.

``on_request`` and ``on_change`` tell whoever admits sessions (admission.py) that a session reached the pool,
and that the answer to "may another session start?" may have changed.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from beavertui.batch.gpu_state import GpuState, Request, kind
from beavertui.batch.rank import Pausable, session_rank
from beavertui.engine.errors import ToolchainError
from beavertui.engine.toolchain.placement import Pause

#: The failure of a stage that found every GPU taken out of the schedule (the session is left resumable).
NO_GPU_LEFT = "no healthy GPU left in the schedule"


class GpuPool:
    """The visible GPUs of this node."""

    def __init__(
        self,
        gpus: Sequence[str],
        *,
        shared: int = 4,
        fail_limit: int = 3,
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
        speed; a kernel still running after that likely hangs, and the stop is given up (the runs are continued
        and drained)."""
        self.idle_wait_instrumented_s = idle_wait_instrumented_s
        """The same wait when a sanitizer or profiler run was stopped (its instrumented kernels run on longer)."""
        self.pause_instrumented = pause_instrumented
        """Whether sanitizer and profiler runs are stopped for a timing stage too. False (the default): a GPU
        running one is drained, not stopped (a sanitizer run stopped in its first seconds was seen to wedge)."""
        self.shared_limit = max(1, shared)
        self.fail_limit = fail_limit
        self.clock = clock
        self._cv = threading.Condition()
        self._waiting: list[Request] = []
        self.exhausted = threading.Event()
        """Set once every GPU has been taken out of the schedule."""
        self.on_request: Callable[[int], None] | None = None
        """Called with the session rank of every request (Admission.reached)."""
        self.on_change: Callable[[], None] | None = None
        """Called whenever a stage ends (Admission.changed)."""
        self.log: list[tuple[str, str, int, str]] | None = None
        """When a list: every grant and release as (what, kind, rank, gpu), in order (tests, benches)."""

    # ------------------------------------------------------------------ scheduling (under the lock)

    def _schedule(self) -> None:
        """Grant what can be granted, in priority order; mark the GPUs that timing requests wait for."""
        healthy = [g for g in self.gpus if g.healthy]
        first = healthy[0] if len(healthy) > 1 else None  # the timing GPU (none with one GPU)
        for g in self.gpus:
            g.waiting_exclusive = 0
        now = self.clock()
        granted = False
        for req in sorted(self._waiting, key=Request.order):
            if not healthy:
                req.failed = True
                granted = True
                continue
            if req.exclusive:
                timing = not req.memory
                own = [first] if timing and first is not None else healthy  # what it may stop or drain
                idle = [g for g in healthy if not g.exclusive and g.shared == 0 and g.waiting_exclusive == 0]
                waits = idle or req.no_pause or req.memory  # a memory hold never stops runs: they keep theirs
                stoppable = [] if waits else [g for g in own if self._pausable(g)]
                over = [] if waits or stoppable else [g for g in own if self._stoppable_memory_hold(g)]
                if idle:  # timing: the timing GPU first; a run made again alone: the others first
                    g = min(idle, key=lambda x: ((x is first) != timing, x.runs))
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
                else:  # drain the timing GPU (a memory hold: the GPU whose runs end soonest, it seems)
                    target = min(own, key=lambda x: (x.waiting_exclusive, x.exclusive, x.long_runs, x.shared))
                    target.waiting_exclusive += 1
                continue
            free = [g for g in healthy if not g.exclusive and g.shared < self.shared_limit]
            if req.instrumented and not self.pause_instrumented:  # one per GPU, never where timing waits
                open_ = [g for g in free if g.waiting_exclusive == 0 and not g.instrumented]
            else:
                open_ = [g for g in free if g.waiting_exclusive == 0] or [  # else a backfill
                    g for g in free if self._fits(g, req, now)
                ]
            if not open_:
                continue
            g = min(open_, key=lambda x: (x is first, req.long and x.long_runs, x.shared, x.runs))
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

    @staticmethod
    def _fits(g: GpuState, req: Request, now: float) -> bool:
        """Whether ``req`` can run on ``g`` while it drains without delaying the timing stage: it has an
        expected length, and it is expected to end before the latest expected end of the runs in flight."""
        if g.waiting_exclusive == 0 or req.expect_s is None:
            return False
        ends = [g.started[seq] + e for seq, e in g.expect.items()]  # both kept for exactly the runs in flight
        return bool(ends) and now + req.expect_s <= max(ends)

    def _pausable(self, g: GpuState) -> bool:
        """Whether a timing stage may take ``g`` by stopping its runs in flight instead of waiting for them:
        the pool can tell when a GPU is idle, every run in flight has registered its process, none of them is
        a sanitizer or profiler run (unless ``pause_instrumented``), and one of them is a long run (a run
        whose task runs long, a sanitizer run where those are stopped); short runs drain on their own."""
        if self.quiet is None or g.exclusive or g.shared == 0 or len(g.attached) < g.shared:
            return False
        if g.instrumented and not self.pause_instrumented:  # a sanitizer or profiler run is waited for
            return False
        if g.futile.intersection(g.attached):  # stopping them did not idle the GPU before
            return False
        return g.long_runs > 0

    def _stop_runs(self, req: Request, g: GpuState) -> int:
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

    def _stop_memory_hold(self, req: Request, over: list[GpuState]) -> GpuState | None:
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

    def _grant(self, req: Request, g: GpuState) -> None:
        req.granted = g
        now = time.monotonic()
        if g.busy_since is None:
            g.busy_since = now
        g.runs += 1
        if self.log is not None:
            self.log.append(("grant", kind(req), req.rank, g.index))

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
        long: bool = False,
        expect_s: float | None = None,
        instrumented: bool = False,
        memory: bool = False,
    ) -> Iterator[GpuState]:
        """Hold a GPU (shared or exclusive) for one stage; ``long`` marks a shared run expected to take long
        (a sanitizer run), ``expect_s`` is how long a shared run is expected to take (None: not known),
        ``instrumented`` a sanitizer or profiler run, ``memory`` an exclusive hold for the GPU's memory (a run
        made again alone after it ran out of memory beside others): it waits for the GPU's runs to end instead
        of stopping them, and after every waiting timing stage."""
        req = Request(
            exclusive,
            long and not exclusive,
            session_rank(),
            expect_s,
            instrumented and not exclusive,
            memory=memory and exclusive,
        )
        if self.on_request is not None:
            self.on_request(req.rank)
        g = self._wait_for_grant(req)
        if req.paused:
            g = self._quiet_or_wait(req, g)
        try:
            yield g
        finally:
            with self._cv:
                self._release(req, g)
            if self.on_change is not None:
                self.on_change()

    def _wait_for_grant(self, req: Request) -> GpuState:
        with self._cv:
            if not any(g.healthy for g in self.gpus):
                raise ToolchainError(NO_GPU_LEFT, source="gpu")
            self._waiting.append(req)
            self._schedule()
            self._cv.notify_all()  # wait_queued() watchers
            try:
                while req.granted is None and not req.failed:
                    self._cv.wait()
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

    def _quiet_or_wait(self, req: Request, g: GpuState) -> GpuState:
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
            g.pause = Pause(g.index, runs=1 if req.over_memory else n, rerun=req.over_memory, idle_s=waited)
            return g
        with self._cv:  # still busy: give the GPU back to its runs and drain it as usual
            g.futile.update(k for k, p in g.attached.items() if p in g.paused)
            self._release(req, g)
            req.granted, req.paused, req.no_pause, req.over_memory = None, 0, True, False
        return self._wait_for_grant(req)

    def _release(self, req: Request, g: GpuState) -> None:
        """Give back what ``req`` was granted on ``g`` and grant what that frees (under the lock)."""
        if req.exclusive and g.over_memory and not req.over_memory:
            g.memory_hold = False  # a memory hold ended under the timing over it: the timing keeps the GPU
        elif req.exclusive:
            g.over_memory = False
            g.exclusive = g.memory_hold = req.over_memory and g.memory_hold  # over one: that hold goes on
            g.pause = None
            for p in g.paused:
                p.resume()
            g.paused = []
        else:
            g.shared -= 1
            g.long_runs -= req.long
            g.instrumented -= req.instrumented
            g.started.pop(req.seq, None)
            g.expect.pop(req.seq, None)
        self._mark_idle(g, time.monotonic())
        if self.log is not None:
            self.log.append(("release", kind(req), req.rank, g.index))
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
