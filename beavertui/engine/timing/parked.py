"""A process-level timing run started ahead of its turn and parked before CUDA (beaver_cupti.c's gate).

The timer (speedup.Timer) starts each run of the test command under the injection library, maybe before the
run ahead of it has ended; the library holds the run inside InitializeInjection, before CUDA has made a
context, until a file ``go`` appears in the run's own folder. This module is that run: its folder, its go,
the waits on its marks (gate, go, exit) and where its time went. The order of the runs (a chain one ahead, or
all parked at once) is the timer's.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from beavertui.engine.errors import BeaverError
from beavertui.engine.fileio import remove_tree
from beavertui.engine.stage import stages
from beavertui.engine.timing import cupti

#: A run let go that has reached its gate (its ``gate`` mark written) but not taken its go within this many
#: seconds cannot see the go file here: runs then start in turn (speedup.Timer.gate_broken).
GATE_CHECK_S = 5.0


class GateBroken(BeaverError):
    """A parked run did not take its go (Run.await_go)."""


@dataclass
class Run:
    """A run of the test command under the injection library (speedup.Timer._start_run), maybe started
    ahead of its turn and parked before CUDA until its go (a file in its folder, cupti.gate_file)."""

    who: str
    stage: stages.StartedStage
    folder: Path
    """Its own temporary folder: the injection library's file (kernel records and phase marks) and the go."""
    gated: bool
    started: float
    let_go_at: float | None = None

    @property
    def out(self) -> Path:
        return self.folder / "kernels.txt"

    def marks(self) -> dict[str, int]:
        """The phase marks its injection file holds so far (cupti.marks)."""
        return cupti.marks(self.out.read_text(errors="replace")) if self.out.exists() else {}

    def let_go(self) -> None:
        if self.gated and self.let_go_at is None:
            self.let_go_at = time.monotonic()
            cupti.gate_file(self.folder).touch()

    def await_go(self, limit_s: float) -> None:
        """Once let go: wait until the run has passed its gate (its ``go`` mark), has ended, or ``limit_s``
        has passed, reading its output meanwhile. Raises GateBroken (the run ended) when it was parked at
        the gate and did not take its go within GATE_CHECK_S."""
        assert self.let_go_at is not None
        process = self.stage.process
        while process.alive() and time.monotonic() - self.let_go_at < limit_s:
            marks = self.marks()
            if "go" in marks:
                return
            if "gate" in marks and time.monotonic() - self.let_go_at > GATE_CHECK_S:
                self.discard()
                raise GateBroken(f"a run parked before CUDA did not see its go within {GATE_CHECK_S:g} s")
            process.until(b"\0", 0.005)  # reads what it printed, so that a full pipe never stops it

    def await_gate(self, deadline: float) -> None:
        """Wait until the run is parked at its gate (its ``gate`` mark), has ended, or the monotonic clock
        is past ``deadline``, reading its output meanwhile."""
        process = self.stage.process
        while process.alive() and time.monotonic() < deadline:
            if "gate" in self.marks():
                return
            process.until(b"\0", 0.005)

    def await_exit(self) -> str | None:
        """Once past its go: wait until the run has written its exit mark (the injection file's text then) or
        ended (None), reading its output meanwhile."""
        process = self.stage.process
        while process.alive():
            try:
                with self.out.open("rb") as fh:
                    fh.seek(max(0, self.out.stat().st_size - 64))
                    tail = fh.read()
            except OSError:
                tail = b""
            if b"M\texit\t" in tail:
                return self.out.read_text(errors="replace")
            process.until(b"\0", 0.002)
        return None

    def discard(self) -> None:
        """End it (a no-op once finished) and remove its folder."""
        self.stage.process.stop()
        remove_tree(self.folder)

    def phases(self, text: str, ended: float) -> dict[str, object]:
        """Where the run's time went, in seconds on the monotonic clock: from its start to the injection's
        init (``to_cuda_s``: the process's start, libraries, anything before its first CUDA call), its wait
        at the gate (``parked_s``), from its go (or init) to its exit, and its turn (``held_s``: from its go,
        or its start when not gated, to its end). Where its kernels were recorded with the CUPTI clock
        (cupti.clock_offset_ns): from its go (or init) to its first kernel's start (``to_first_kernel_s``),
        how long a kernel of it ran (``kernels_s``: the union of their intervals) and from its last kernel's
        end to its exit (``last_kernel_to_exit_s``): how much of its turn the GPU had work of it. Where it
        held the GPU per call (BEAVER_KERNEL_LOCK, cupti.lock_counts): the calls held (``lock_calls``), the
        time it waited for the lock (``lock_wait_s``) and held it (``lock_held_s``)."""
        marks = cupti.marks(text)
        ns = 1e-9
        init, gate, go, exit_ = (marks.get(k) for k in ("init", "gate", "go", "exit"))
        turn = self.let_go_at if self.gated else self.started
        row: dict[str, object] = {
            "who": self.who,
            "gated": self.gated,
            "held_s": round(ended - (turn or ended), 4),
        }
        if init is not None:
            row["to_cuda_s"] = round(init * ns - self.started, 4)
        if gate is not None and go is not None:
            row["parked_s"] = round((go - gate) * ns, 4)
        if exit_ is not None:
            row["cuda_to_exit_s"] = round((exit_ - (go or init or exit_)) * ns, 4)
            row["exit_to_end_s"] = round(ended - exit_ * ns, 4)
        offset = cupti.clock_offset_ns(text)
        recs = cupti.parse(text)[0] if offset is not None else []
        if offset is not None and recs:
            began = go or init
            first = min(r.start_ns for r in recs) + offset
            last = max(r.end_ns for r in recs) + offset
            if began is not None:
                row["to_first_kernel_s"] = round((first - began) * ns, 4)
            row["kernels_s"] = round(cupti.busy_ns(recs) * ns, 4)
            if exit_ is not None:
                row["last_kernel_to_exit_s"] = round((exit_ - last) * ns, 4)
        lock = cupti.lock_counts(text)
        if lock is not None:
            row["lock_calls"] = lock[0]
            row["lock_wait_s"] = round(lock[1] * ns, 4)
            row["lock_held_s"] = round(lock[2] * ns, 4)
        return row
