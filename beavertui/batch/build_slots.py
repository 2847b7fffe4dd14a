"""CPU build slots of a batch, granted oldest session first, stopped while a GPU is held alone for timing."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from beavertui.batch.rank import Pausable, next_seq, session_rank


class BuildSlots:
    """Parallel builds on CPU cores, granted oldest session first.

    With ``stop_for_timing``, nothing is built while a GPU is held alone for timing (``stopped``): the build
    processes that registered (``running``, through StageConfig.pausable) are stopped (SIGSTOP) for the
    hold and continued after it, a build that starts its process meanwhile is stopped at once, and no slot
    is granted until the hold ends. A stop counts in neither a build's time limit nor its duration
    (sandbox.Started.pause). Builds beside a timing make its timed processes slower (docs/lab/h200-2026-12-04.md)."""

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
        self.on_request: Callable[[int], None] | None = None
        """Called with the session rank of every request (Admission.reached)."""
        self.on_change: Callable[[], None] | None = None
        """Called whenever a build ends (Admission.changed)."""
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
        me = (session_rank(), next_seq())
        if self.on_request is not None:
            self.on_request(me[0])
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
            if self.on_change is not None:
                self.on_change()

    def queued(self) -> int:
        """Builds waiting for a slot now."""
        with self._cv:
            return len(self._waiting)

    def wait_queued(self, n: int, timeout: float = 60.0) -> bool:
        """Block until at least ``n`` builds wait for a slot."""
        with self._cv:
            return self._cv.wait_for(lambda: len(self._waiting) >= n, timeout)
