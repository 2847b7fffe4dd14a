"""The seam between the repair loop and whatever builds and runs candidates.

The loop only ever calls ``Toolchain.attempt``; the real engine (runner.py on a local GPU), a recorded
toolchain (replaying real GPU outputs for tests and demos) and the batch scheduler's remote workers all
implement it. An attempt yields its events as they happen (build, run, sanitize..., timing) and ends with
exactly one Verdict.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol as TypingProtocol

from beavertui.engine.corpus.task import Task
from beavertui.engine.session.events import Event, GpuSignature
from beavertui.engine.session.protocol import SanitizerTool


@dataclass(frozen=True)
class AttemptOptions:
    """How one attempt is run."""

    iteration: int
    gate: float = 0.7
    sanitize_on_failure: bool = True
    sanitize_tools: tuple[SanitizerTool, ...] = ()
    time_if_correct: bool = True
    keep_workdir: bool = False
    profile: bool = False
    """Profile every candidate that ran with ncu, beside the reference (a Profiled event; level L4)."""
    defer_timing: bool = False
    """A correct candidate is not timed now: its verdict says ``timing_pending`` and ``time_later`` times it
    (a batch's timing lane, for a gate applied after the run)."""


def profiler_unavailable(toolchain: object) -> str | None:
    """Why this toolchain cannot profile for feedback level L4 (None: it can). A toolchain without a
    ``profiler_unavailable`` method cannot."""
    check = getattr(toolchain, "profiler_unavailable", None)
    if not callable(check):
        return f"{type(toolchain).__name__} does not profile"
    reason = check()
    return None if reason is None else str(reason)


class Toolchain(TypingProtocol):
    """Builds, runs, sanitizes and times one candidate against a task."""

    def attempt(self, task: Task, code: str, options: AttemptOptions) -> Iterator[Event]:
        """Yield Built, Ran, Sanitized*, Timed? and finally one Verdict for this candidate."""
        ...

    def gpu(self) -> GpuSignature | None:
        """The GPU this toolchain runs on, or None (recorded runs without a GPU)."""
        ...
