"""A correctness run's time limit, from the task's own reference run on this GPU (docs/metrics.md, Time limits).

A task ships one flat limit for its test command (the release: 300 s for every instance), sized for its
slowest instance. A kernel that hangs holds its GPU for all of it, and on a shared GPU a timing stage waits
for it. Where the reference's correctness run on this GPU has a measured wall time (its validation record,
this machine's or the package's known set, ``reference_run_s``), the limit is that time times ``FACTOR``,
at least ``FLOOR_S``, never above the task's own limit. The protocol's ``run_limit = "flat"`` keeps the
task's limit, as the release ran. Nothing here runs anything.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from beavertui.engine.corpus import verdicts
from beavertui.engine.corpus.task import Task
from beavertui.engine.session.protocol import RunLimit

FACTOR = 10.0
"""A run may take this many times the reference's run."""
FLOOR_S = 20.0
"""And at least this many seconds (process and CUDA start-up, a loaded machine)."""


@dataclass(frozen=True)
class Limit:
    """A correctness run's limit in seconds, and where it came from, in words."""

    seconds: float
    source: str


def run_limit(task: Task, gpu: str | None, mode: RunLimit, cache: Path | None = None) -> Limit:
    """The limit of ``task``'s correctness runs on ``gpu`` (a signature slug; None: no GPU known)."""
    own = task.timeouts.own_run_s or task.timeouts.run_s
    if mode == "flat":
        return Limit(own, f"the task's own limit ({own:g} s; protocol run_limit flat)")
    record = verdicts.load(task, gpu, cache) if gpu else None
    ref = record.reference_run_s if record is not None else None
    if record is None or ref is None:
        where = gpu or "this machine"
        return Limit(own, f"the task's own limit ({own:g} s): no reference run time known on {where}")
    return from_reference(task, gpu or "this machine", ref, ", the package's known verdicts" if record.known else "")


def from_reference(task: Task, gpu: str, ref: float, where: str = "") -> Limit:
    """The limit from a reference run of ``ref`` seconds on ``gpu`` (``where``: more of where that time
    comes from, said after the GPU)."""
    own = task.timeouts.own_run_s or task.timeouts.run_s
    seconds = min(own, max(FLOOR_S, FACTOR * ref))
    return Limit(
        round(seconds, 3),
        f"{FACTOR:g} x the reference's run of {ref:.2f} s on {gpu}{where}, at least {FLOOR_S:g} s, "
        f"at most the task's own {own:g} s",
    )


def with_run_limit(task: Task, limit: Limit) -> Task:
    """The task with its correctness runs (and the sanitizer runs sized from them) under ``limit``."""
    own = task.timeouts.own_run_s or task.timeouts.run_s
    return replace(
        task, timeouts=replace(task.timeouts, run_s=limit.seconds, run_from=limit.source, own_run_s=own)
    )
