"""The interface every timing method implements (TimingMethod), and the method of a family with no reference.

A method times a candidate work dir against the task's reference (measure) and the reference alone
(time_reference, for baselines). What it can do before the GPU is held for timing is split out so that a
batch does it on a build slot: prepare (the reference built, libraries built) and prepare_candidate (a
side library, a driver or runs started ahead of the hold); close ends what was started ahead and not used.
The methods are chosen by name in registry.py; all share one TimedRuns (runs.py)."""

from __future__ import annotations

from beavertui.engine.corpus import families
from beavertui.engine.session.events import TimingResult
from beavertui.engine.stage import stages
from beavertui.engine.timing.reference import ReferenceTiming
from beavertui.engine.timing.runs import TimedRuns
from beavertui.engine.timing.samples import SpeedupUnavailable


class TimingMethod:
    """One way of timing; the defaults are a method that needs nothing built and starts nothing ahead."""

    builds = False
    """Whether measure() needs the reference built in its own work dir first (prepare())."""
    warms = False
    """Whether prepare_candidate starts a timing driver ahead of the GPU hold (kernelbench)."""

    def __init__(self, ctx: TimedRuns, name: str) -> None:
        self.ctx = ctx
        self.name = name
        """TimingResult.method of what this method measures (a fallback may change it: cupti to ncu)."""

    @property
    def prepares(self) -> bool:
        """Whether prepare() builds anything."""
        return self.builds

    @property
    def parks(self) -> bool:
        """Whether prepare_candidate starts timed runs ahead of the GPU hold, parked before CUDA."""
        return False

    @property
    def inprocess(self) -> bool:
        """Whether measure() times both sides in one process (native.py)."""
        return False

    @property
    def gated(self) -> bool:
        """Whether runs are started ahead of their turn, each parked before CUDA until the one before ended."""
        return False

    def prepare(self) -> None:
        """Build what measure() needs, so that it builds nothing while the GPU is held for timing."""

    def prepare_candidate(self, cand: stages.WorkDir, park: bool = True) -> None:
        """What the candidate's timing can do before the GPU is held (nothing by default)."""

    def prepare_reference(self, wait: bool = True) -> None:
        """time_reference's counterpart of prepare_candidate (nothing by default)."""

    def measure(self, cand: stages.WorkDir, gate: float | None) -> TimingResult:
        raise NotImplementedError

    def time_reference(self) -> ReferenceTiming:
        raise NotImplementedError

    def close(self) -> None:
        """End what was started ahead of the GPU hold and not used (nothing by default)."""


class NoReference(TimingMethod):
    """A family with no reference to time against: every timing says so."""

    def measure(self, cand: stages.WorkDir, gate: float | None) -> TimingResult:
        raise SpeedupUnavailable(families.NO_REFERENCE)

    def time_reference(self) -> ReferenceTiming:
        raise SpeedupUnavailable(families.NO_REFERENCE)
