"""A testbench's own speed lines: the task's test command prints the speedup over its sizes (corpus/families/,
parse_speed_lines); ``rounds`` runs of it alone on the GPU, the median of their speedups.

With TimingConfig.prestart ``all`` (and the injection library built), the runs start at once and park before
CUDA, then are let go one after another: their starts (seconds of a Python harness's imports each) overlap.
On a machine with one GPU a batch starts them before the GPU is held (park). A run that fails its check is
the candidate's failure when the test command, run again as the correctness run ran it, fails again."""

from __future__ import annotations

import statistics
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from beavertui.engine.corpus import families
from beavertui.engine.errors import BeaverError
from beavertui.engine.session.events import StageResult, TimingResult
from beavertui.engine.stage import stages
from beavertui.engine.timing.method import TimingMethod
from beavertui.engine.timing.parked import Run
from beavertui.engine.timing.reference import ReferenceTiming
from beavertui.engine.timing.runs import TimedRuns
from beavertui.engine.timing.samples import (
    CandidateNoSamples,
    SpeedupUnavailable,
    timing_command,
    timing_result,
)


@dataclass
class _Ahead:
    """A testbench's timed runs started ahead of the GPU hold and parked before CUDA (TestbenchLines.park)."""

    work: Path
    runs: list[Run]
    cuda_env: dict[str, str]
    """The CUDA_ variables they were started with (CUDA_VISIBLE_DEVICES: the GPU they will use)."""
    parking_s: float = 0.0
    """Seconds from their start until all were parked at their gates (or the wait's end), before the hold."""


class TestbenchLines(TimingMethod):
    """``testbench_lines``: the reference is timed inside every candidate's testbench run."""

    def __init__(self, ctx: TimedRuns, name: str) -> None:
        super().__init__(ctx, name)
        self._ahead: _Ahead | None = None
        self.lines_started = ""
        """How the latest lines_rounds() started its runs (the timing's note says it)."""

    @property
    def prepares(self) -> bool:
        """The injection library that parks the runs (TimingConfig.prestart ``all``)."""
        return self.ctx.tcfg.prestart == "all"

    @property
    def parks(self) -> bool:
        """Whether prepare_candidate starts the timed runs ahead of the GPU hold, parked before CUDA
        (TimingConfig.prestart ``all`` and the injection library built: park)."""
        ctx = self.ctx
        return ctx.tcfg.prestart == "all" and ctx.lib is not None and ctx.gate_broken is None

    def prepare(self) -> None:
        """With TimingConfig.prestart ``all``, the injection library, built once; a failure is remembered, and
        the runs then start in turn."""
        if self.ctx.tcfg.prestart == "all":
            self.ctx.build_library()

    def prepare_candidate(self, cand: stages.WorkDir, park: bool = True) -> None:
        if park and self.parks:
            self.park(cand)

    def close(self) -> None:
        """End the runs park() started that no timing used."""
        ahead, self._ahead = self._ahead, None
        for run in ahead.runs if ahead is not None else []:
            run.discard()

    def park(self, work: stages.WorkDir) -> bool:
        """Start the testbench's ``rounds`` timed runs in ``work`` ahead of the GPU hold, all at once, and wait
        (at most stage_s) until each is parked at its gate before CUDA: their starts (for a Python harness,
        seconds of imports and extension loads each) then happen before the hold, and the hold lets them go
        one after another (lines_rounds). A run waits at its gate up to go_s longer than it would parked
        inside the hold. They are started with the timer's config as it is now: a hold whose CUDA_ variables
        differ (another GPU) ends them and parks its own. False (nothing kept) when they cannot start here."""
        self.close()
        if not self.parks:
            return False
        ctx, tcfg = self.ctx, self.ctx.tcfg
        runs: list[Run] = []
        try:
            for i in range(max(1, tcfg.rounds)):
                runs.append(
                    ctx.start_run(
                        work, "candidate", gated=True, kernels=False, behind=i + 1, extra_wait_s=tcfg.go_s
                    )
                )
        except (OSError, BeaverError):
            for run in runs:
                run.discard()
            return False
        began = time.monotonic()
        deadline = began + tcfg.stage_s
        with ExitStack() as starting:  # starting, they count as builds (a batch may stop them for a timing)
            if ctx.config.pausable is not None:
                for run in runs:
                    starting.enter_context(ctx.config.pausable(run.stage.process))
            for run in runs:
                run.await_gate(deadline)
        self._ahead = _Ahead(work.path, runs, ctx.cuda_env(), round(time.monotonic() - began, 3))
        return True

    def _parked_ahead(self, work: stages.WorkDir) -> _Ahead | None:
        """The runs park() started for ``work``, when they still wait at their gates and the hold's CUDA_
        variables are theirs; otherwise they are ended and None (the hold parks its own)."""
        ahead, self._ahead = self._ahead, None
        if ahead is None:
            return None
        if (
            ahead.work == work.path
            and ahead.cuda_env == self.ctx.cuda_env()
            and all(run.stage.process.alive() for run in ahead.runs)
        ):
            return ahead
        for run in ahead.runs:
            run.discard()
        return None

    def lines_rounds(self, work: stages.WorkDir) -> list[families.SpeedLines]:
        """The testbench's speed lines of ``rounds`` runs of the test command, alone on the GPU; with
        TimingConfig.prestart ``all`` (and the injection library built, prepare()), all of them started at
        once and parked before CUDA, recording no kernels, then let go one after another
        (TimedRuns.parked_together)."""
        ctx, tcfg = self.ctx, self.ctx.tcfg
        rounds = max(1, tcfg.rounds)
        out: list[families.SpeedLines] = []

        def take(who: str, _text: str, res: StageResult) -> bool:
            ctx.runs.append((who, res))
            lines = families.parse_speed_lines(res.log)
            if res.rc != 0 or lines.speedup is None:
                tail = [ln for ln in res.log.splitlines() if ln.strip()][-1:] or ["no output"]
                error = SpeedupUnavailable(
                    f"the testbench printed no usable Speedup line (rc {res.rc}): {tail[0][:200]}"
                )
                raise CandidateNoSamples(error, res) if res.rc else error  # its check failed: whose doing?
            out.append(lines)
            return False

        def in_turn() -> list[families.SpeedLines]:
            out.clear()
            self.lines_started = f"its {rounds} runs started one after another"
            command = timing_command(ctx.task.test_command)
            for _ in range(rounds):
                take("candidate", "", stages.run_stage(work, "benchmark", command, tcfg.stage_s, ctx.config))
            return out

        def gated() -> list[families.SpeedLines]:
            ahead = self._parked_ahead(work)
            if ahead is not None:  # started and parked before the hold (park)
                self.lines_started = (
                    f"its {len(ahead.runs)} runs started before the GPU was held and waited before CUDA "
                    f"({ahead.parking_s:.1f} s to start, not in this stage's wall); the hold let them go one "
                    "after another"
                )
                ctx.one_after_another(ahead.runs, take)
            else:
                self.lines_started = (
                    f"its {rounds} runs started at once with the GPU held and waited before CUDA; let go one "
                    "after another"
                )
                ctx.parked_together(((work, "candidate"),), rounds, take, kernels=False)
            return out

        self.prepare()  # when prepare() was not called
        if self.parks:
            return ctx.gated_or_in_turn(gated, in_turn)
        return in_turn()

    def measure(self, cand: stages.WorkDir, gate: float | None) -> TimingResult:
        ctx = self.ctx
        ctx.runs = []
        try:
            rounds = self.lines_rounds(cand)
        except CandidateNoSamples as exc:  # its runs have ended: the candidate's failure, or not?
            raise ctx.candidate_failure(self.name, cand, exc.result, exc.error) from None
        note = (
            f"the testbench's own speed lines, median of {len(rounds)} runs of the geometric mean over its "
            f"sizes; {self.lines_started}"
            + (f"; runs started in turn: {ctx.gate_broken}" if ctx.gate_broken else "")
        )
        return timing_result(
            self.name,
            [x.reference for x in rounds if x.reference is not None],
            [x.candidate for x in rounds if x.candidate is not None],
            speedup=statistics.median([x.speedup for x in rounds if x.speedup is not None]),
            note=note,
        )

    def time_reference(self) -> ReferenceTiming:
        raise SpeedupUnavailable("the reference is timed inside every candidate's testbench run")
