"""Where stages run: CPU build slots and the GPUs, shared for correctness runs, exclusive for timing.

A GPU admits up to ``shared`` correctness/sanitizer runs at once, or one timing run alone; a waiting
timing run blocks new shared runs so it cannot starve. A GPU on which ``fail_limit`` runs in a row end
in an infrastructure failure is taken out of the schedule. This module only counts and waits.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from beavertui.engine.errors import ToolchainError

#: The failure of a stage that found every GPU taken out of the schedule (the session is left resumable).
NO_GPU_LEFT = "no healthy GPU left in the schedule"


@dataclass
class GpuState:
    """Bookkeeping of one GPU."""

    index: str
    shared: int = 0
    exclusive: bool = False
    waiting_exclusive: int = 0
    consecutive_failures: int = 0
    healthy: bool = True
    busy_since: float | None = None
    busy_s: float = 0.0
    runs: int = 0
    failures: list[str] = field(default_factory=list)


class GpuPool:
    """The visible GPUs of this node."""

    def __init__(self, gpus: Sequence[str], *, shared: int = 4, fail_limit: int = 3) -> None:
        self.gpus = [GpuState(str(g)) for g in gpus]
        self.shared_limit = max(1, shared)
        self.fail_limit = fail_limit
        self._cv = threading.Condition()
        self.exhausted = threading.Event()
        """Set once every GPU has been taken out of the schedule."""

    def _pick(self, exclusive: bool) -> GpuState | None:
        best: GpuState | None = None
        for g in self.gpus:
            if not g.healthy or g.exclusive:
                continue
            if exclusive:
                if g.shared:
                    continue
            elif g.shared >= self.shared_limit or g.waiting_exclusive:
                continue
            if best is None or g.shared < best.shared:
                best = g
        return best

    def _mark_busy(self, g: GpuState, now: float) -> None:
        if g.busy_since is None:
            g.busy_since = now

    def _mark_idle(self, g: GpuState, now: float) -> None:
        if g.shared == 0 and not g.exclusive and g.busy_since is not None:
            g.busy_s += now - g.busy_since
            g.busy_since = None

    @contextmanager
    def hold(self, *, exclusive: bool = False, prefer: str | None = None) -> Iterator[GpuState]:
        """Hold a GPU (shared or exclusive) for one stage; ``prefer`` keeps an attempt on its GPU."""
        with self._cv:
            while True:
                if not any(g.healthy for g in self.gpus):
                    raise ToolchainError(NO_GPU_LEFT, source="gpu")
                g = None
                if prefer is not None:
                    cand = next((x for x in self.gpus if x.index == prefer and x.healthy), None)
                    if (
                        cand is not None
                        and not cand.exclusive
                        and (
                            (exclusive and cand.shared == 0)
                            or (
                                not exclusive
                                and cand.shared < self.shared_limit
                                and not cand.waiting_exclusive
                            )
                        )
                    ):
                        g = cand
                    elif cand is not None and exclusive:
                        cand.waiting_exclusive += 1
                        try:
                            while cand.healthy and (cand.exclusive or cand.shared):
                                self._cv.wait()
                        finally:
                            cand.waiting_exclusive -= 1
                        if cand.healthy:
                            g = cand
                    elif cand is None:
                        prefer = None
                if g is None and prefer is None:
                    g = self._pick(exclusive)
                if g is not None:
                    break
                self._cv.wait()
            now = time.monotonic()
            self._mark_busy(g, now)
            if exclusive:
                g.exclusive = True
            else:
                g.shared += 1
            g.runs += 1
        try:
            yield g
        finally:
            with self._cv:
                if exclusive:
                    g.exclusive = False
                else:
                    g.shared -= 1
                self._mark_idle(g, time.monotonic())
                self._cv.notify_all()

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
                self._cv.notify_all()

    def busy_fraction(self, wall_s: float) -> dict[str, float]:
        now = time.monotonic()
        out = {}
        with self._cv:
            for g in self.gpus:
                busy = g.busy_s + (now - g.busy_since if g.busy_since is not None else 0.0)
                out[g.index] = busy / wall_s if wall_s > 0 else 0.0
        return out


class BuildSlots:
    """Parallel builds on CPU cores."""

    def __init__(self, n: int) -> None:
        self.n = max(1, n)
        self._sem = threading.BoundedSemaphore(self.n)

    @contextmanager
    def hold(self) -> Iterator[None]:
        with self._sem:
            yield
