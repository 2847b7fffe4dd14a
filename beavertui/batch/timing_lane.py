"""The timing lane: correct attempts timed beside the sessions, after their loops have ended.

Under a gate applied after the run the speedup steers nothing (engine/loop/run.py timing_steers_nothing), so
a batch's session does not wait for its timing stage: its correct attempt's verdict says ``timing_pending``
and the session ends when its loop ends. The lane takes each such attempt, times it through the batch's
toolchain (``time_later``: the candidate rebuilt from the compile cache, timed holding a GPU alone, as a
timing stage is), and appends the timing to the session file (engine/session/late.py: once, resume-safe).
``WORKERS_PER_GPU`` workers per GPU: a timing holds its GPU alone, but what it builds first (the candidate
again, the reference, a driver started up to its go) runs on a build slot, so while one worker holds the
GPU the others prepare the next timings. The lane's stages come before every session's at the build slots
and the GPUs (``LANE_RANK``). What is pending is read from the files, so a batch resumed after a
kill times what its lane had not appended; a timing the machine failed stays pending for the next resume.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from pathlib import Path

from beavertui.batch.rank import LANE_RANK, SESSION_RANK
from beavertui.engine.corpus.task import Task
from beavertui.engine.errors import BeaverError
from beavertui.engine.session.events import InfraError, SessionEnd, Timed, Verdict
from beavertui.engine.session.late import append_timing, pending
from beavertui.engine.toolchain.base import Toolchain

WORKERS_PER_GPU = 4
"""Lane workers per GPU. On the H200 over the release's nvcc families one worker per GPU spent 4 to 10 s
preparing each timing (builds) for a 2.4 s hold (median), one after the other: 19 of 65 timings were
appended in 258 s, though every loop had ended at 129 s. Four keep a prepared timing waiting for the GPU
while builds take about three times the hold."""


class TimingLane:
    """Workers that time the pending attempts of finished sessions and append their timings."""

    on_done: Callable[[Path, SessionEnd | None], None] | None
    """Told of each timing the lane is through with: the session's new end (None: nothing appended)."""

    def __init__(
        self,
        toolchain: Toolchain,
        tasks: dict[str, Task],
        workers: int = 1,
        on_done: Callable[[Path, SessionEnd | None], None] | None = None,
    ) -> None:
        self.toolchain, self.tasks, self.on_done = toolchain, tasks, on_done
        self._queue: queue.Queue[tuple[Path, int] | None] = queue.Queue()
        self._lock = threading.Lock()
        self.queued = 0
        """Timings handed to the lane so far."""
        self.appended = 0
        """Timings appended to their sessions."""
        self.done = 0
        """Queued timings the lane is through with (appended, failed, or found appended already)."""
        self.failed: list[str] = []
        """Timings that failed on the machine's side, with why (they stay pending in their files)."""
        self._threads = [
            threading.Thread(target=self._work, name=f"timing-lane-{i}", daemon=True) for i in range(workers)
        ]
        for t in self._threads:
            t.start()

    def submit(self, path: Path) -> int:
        """Queue every pending timing of the finished session at ``path``; how many."""
        found = pending(path)
        if found is None:
            return 0
        for iteration in found[2]:
            self._queue.put((path, iteration))
        with self._lock:
            self.queued += len(found[2])
        return len(found[2])

    def outstanding(self) -> int:
        """Timings queued and not yet done (appended or failed)."""
        with self._lock:
            return self.queued - self.done

    def close(self) -> None:
        """Wait until every queued timing is done, then stop the workers."""
        for _ in self._threads:
            self._queue.put(None)
        for t in self._threads:
            t.join()

    def _work(self) -> None:
        SESSION_RANK.set(LANE_RANK)  # served before every session at the build slots and the GPUs
        while True:
            item = self._queue.get()
            if item is None:
                return
            path, iteration = item
            end: SessionEnd | None = None
            try:
                end = self._time(path, iteration)
            except BeaverError as exc:
                with self._lock:
                    self.failed.append(f"{path.name} attempt {iteration}: {exc}")
            except Exception as exc:  # a defect: said, and the timing stays pending for a resume
                with self._lock:
                    self.failed.append(f"{path.name} attempt {iteration}: {type(exc).__name__}: {exc}")
            with self._lock:
                self.done += 1
            if self.on_done is not None:
                self.on_done(path, end)

    def _time(self, path: Path, iteration: int) -> SessionEnd | None:
        """The session's new end once this timing is appended (None: not appended)."""
        found = pending(path)
        if found is None or iteration not in found[2]:
            return None  # appended already (a resumed batch queued it twice)
        header, state, _ = found
        attempt = state.attempt(iteration)
        task = self.tasks.get(header.task.id)
        if attempt is None or attempt.verdict is None or attempt.candidate is None or task is None:
            raise BeaverError(f"cannot time it: its task or candidate is not at hand ({header.task.id})")
        code = attempt.candidate.code or ""
        time_later = getattr(self.toolchain, "time_later", None)
        if not callable(time_later):
            raise BeaverError(f"{type(self.toolchain).__name__} cannot time a candidate later")
        events = list(time_later(task, code, attempt.verdict, header.protocol.gate))
        trouble = [e for e in events if isinstance(e, InfraError)]
        if trouble:
            with self._lock:
                self.failed.append(f"{path.name} attempt {iteration}: {trouble[0].detail}")
            return None
        late = [e for e in events if isinstance(e, Timed | Verdict)]
        written = append_timing(path, iteration, late)
        if written is not None:
            with self._lock:
                self.appended += 1
        return written
