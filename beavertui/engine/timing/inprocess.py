"""The native contract timed in one process (native.py), with one process per side and round as fallback.

``beaver_time_ms`` with TimingConfig.inprocess on a task that declares ``timing_driver``: both sides in one
timing process (TimingResult.method ``native_inprocess``). Anything that keeps a task from that path (a
build it needs fails, the process fails outside the candidate's sections) falls back to the process contract
(interleaved.py), and the result's note says why."""

from __future__ import annotations

from beavertui.engine.session.events import StageResult, TimingResult
from beavertui.engine.stage import stages
from beavertui.engine.timing import native
from beavertui.engine.timing.interleaved import CONTRACT, Interleaved
from beavertui.engine.timing.reference import ReferenceTiming
from beavertui.engine.timing.runs import TimedRuns
from beavertui.engine.timing.samples import (
    CV_LIMIT,
    IMPLAUSIBLE,
    CandidateTimingFailed,
    parse_times,
    stats,
)

#: What the in-process path (native.py) shares with the process contract.
RULES = native.Rules(
    parse_times=parse_times,
    stats=stats,
    cv_limit=CV_LIMIT,
    implausible=IMPLAUSIBLE,
    candidate_failed=CandidateTimingFailed,
)


def _fallback(why: object) -> str:
    return f"in-process timing unavailable ({why}): one process per side and round"


class InProcess(Interleaved):
    """The native contract: in one process where it applies, else one process per side and round."""

    def __init__(self, ctx: TimedRuns, name: str) -> None:
        super().__init__(ctx, name)
        self.library: StageResult | None = None
        """The candidate's side library when the caller built it before timing (prepare_candidate)."""
        self.native = True
        """False once the in-process method is known not to apply here (a build it needs failed)."""
        self.native_why: str | None = None
        """Why, then (the timing's note says it)."""

    @property
    def inprocess(self) -> bool:
        """Whether measure() times both sides in one process (native.py); it still falls back to one process
        per side and round, saying so, when that process cannot run."""
        return (
            self.name == CONTRACT
            and self.ctx.tcfg.method is None
            and self.ctx.tcfg.inprocess
            and self.native
            and self.ctx.task.timing_driver is not None
        )

    def prepared(self, ref: stages.WorkDir) -> None:
        """The driver and the reference's side library, once per task beside the reference build; a failure
        is remembered beside the build, and the process contract times instead."""
        if not self.inprocess:
            return
        try:
            native.reference_side(self.ctx.task, ref, self.ctx.config)
        except native.NativeUnavailable as exc:
            self.native, self.native_why = False, str(exc)

    def prepare_candidate(self, cand: stages.WorkDir, park: bool = True) -> None:
        """The candidate's side library, built before the GPU is held."""
        if self.inprocess:
            self.library = native.build_library(self.ctx.task, cand, self.ctx.config)

    def measure(self, cand: stages.WorkDir, gate: float | None) -> TimingResult:
        fallback: str | None = None
        if self.native_why is not None and self.name == CONTRACT:
            fallback = _fallback(self.native_why)
        ref = self.ctx.reference()
        if self.inprocess:
            try:
                return native.measure(self.ctx, RULES, ref, cand, gate, self.library)
            except native.NativeUnavailable as exc:
                fallback = _fallback(exc)
        return self.measure_processes(ref, cand, gate, fallback)

    def time_reference(self) -> ReferenceTiming:
        if self.inprocess:
            try:
                got, why = native.time_reference(self.ctx, RULES, self.ctx.reference())
                med, cv = stats(got)
                return ReferenceTiming(native.METHOD, med, cv, got, cv > CV_LIMIT, why)
            except native.NativeUnavailable:
                pass  # timed through the process contract
        return super().time_reference()
