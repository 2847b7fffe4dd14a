"""When a batch may start one more session: its GPU pool and build slots can take the work soon."""

from __future__ import annotations

import threading

from beavertui.batch.build_slots import BuildSlots
from beavertui.batch.gpu_pool import GpuPool


class Admission:
    """When a batch may start one more session: the GPUs and the build slots can take its work soon.

    A new session starts only while (1) no build waits for a slot and fewer sessions are starting (started,
    but not yet at any build slot or GPU) than there are slots, and (2) fewer GPU stages wait than the
    healthy GPUs run at once. Sessions in flight are thus bounded by what the GPUs and build slots can
    finish, not by a count of cores; ``changed`` is set whenever the answer may have changed.
    """

    def __init__(self, pool: GpuPool, builds: BuildSlots) -> None:
        self.pool, self.builds = pool, builds
        self._lock = threading.Lock()
        self._starting: set[int] = set()
        self.changed = threading.Event()
        pool.on_request = builds.on_request = self.reached
        pool.on_change = builds.on_change = self.changed.set

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
            and self.pool.queued() < max(1, self.pool.capacity())
        )
