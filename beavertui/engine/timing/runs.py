"""What the timing methods share: the runs of one timer, and starting and ending a timed process.

A process-level timing run is the task's test command under the CUPTI injection library (cupti/), either
started in its turn or started ahead and parked before CUDA at the library's gate (parked.py) until the run
before it has ended (chain, parked_together): one timed process is past its CUDA start at a time. When a
run parked there does not take its go (GateBroken), the timing is made again with each run started in its
turn (gated_or_in_turn) and ``gate_broken`` says why. A candidate's timing run that gave no samples is told
from the machine's failure by running its test command again as its correctness run ran it
(candidate_failure)."""

from __future__ import annotations

import re
import tempfile
import time
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import TypeVar

from beavertui.engine.corpus.task import Task
from beavertui.engine.errors import BeaverError
from beavertui.engine.fileio import remove_tree
from beavertui.engine.judge import anticheat
from beavertui.engine.judge.evidence import out_of_memory
from beavertui.engine.session.events import StageResult
from beavertui.engine.stage import stages
from beavertui.engine.timing import cupti, reference
from beavertui.engine.timing.config import TimingConfig
from beavertui.engine.timing.parked import GateBroken, Run
from beavertui.engine.timing.samples import CandidateTimingFailed, SpeedupUnavailable, timing_command

_T = TypeVar("_T")

#: The environment a process started ahead of the GPU hold may still take from its go: what the CUDA runtime
#: reads when it initialises, which the process does only after the go (``CUDA_VISIBLE_DEVICES``). Any other
#: difference (a path, the interpreter's own settings) would come too late: the process is started again.
LATE_ENV = re.compile(r"^CUDA_")

#: ``take(side, injection file's text, record)``: keeps a run, and says whether no more are needed.
Take = Callable[[str, str, StageResult], bool]


class TimedRuns:
    """The state one timer's methods share: the task, its config (the batch sets the GPU held before each
    timing), every benchmark run of the latest measurement, where each spent its time, the injection
    library, and whether runs may still be started ahead of their turn."""

    def __init__(self, task: Task, config: stages.StageConfig, tcfg: TimingConfig) -> None:
        self.task = task
        self.config = config
        self.tcfg = tcfg
        self.runs: list[tuple[str, StageResult]] = []
        """Every benchmark run of the latest measure(): (``reference`` or ``candidate``, its stage result)."""
        self.phases: list[dict[str, object]] = []
        """Where each run of the latest measure() spent its time (process-level methods: Run.phases)."""
        self.gate_broken: str | None = None
        """Why runs are no longer started ahead of their turn (a run parked before CUDA did not take its
        go); the timing's note says it."""
        self.lib: Path | None = None
        self.lib_error: str | None = None

    def reference(self) -> stages.WorkDir:
        """The reference's work dir, built once per reference, harness and toolkit (reference.py)."""
        return reference.reference_workdir(self.task, self.config, self.tcfg)

    def build_library(self) -> None:
        """The injection library, built once (cached per cache folder); a failure is remembered, not raised."""
        if self.lib is not None or self.lib_error is not None:
            return
        try:
            self.lib = cupti.build_library(self.tcfg.cache)
        except BeaverError as exc:
            self.lib_error = str(exc)

    def library(self) -> Path:
        if self.lib is None:
            if self.lib_error is not None:
                raise BeaverError(self.lib_error)
            self.lib = cupti.build_library(self.tcfg.cache)
        return self.lib

    @property
    def python(self) -> bool:
        """Whether the harness is Python's (its framework's kernels are not the solution's)."""
        return self.task.language == "python" or "python" in self.task.test_command

    def cuda_env(self) -> dict[str, str]:
        """The CUDA_ variables a run started now would have (LATE_ENV: CUDA_VISIBLE_DEVICES, the GPU)."""
        env = stages.stage_env(self.task, self.config)
        return {k: v for k, v in env.items() if LATE_ENV.match(k)}

    def start_run(
        self,
        work: stages.WorkDir,
        who: str,
        gated: bool,
        kernels: bool = True,
        behind: int = 1,
        extra_wait_s: float = 0.0,
    ) -> Run:
        """One run of the test command under the injection library, not waited for: with ``gated``, parked
        before CUDA until ``Run.let_go``, which may be ``behind`` whole runs and ``extra_wait_s`` (the wait
        for the GPU of a run started before its hold, park) away; with ``kernels`` False, recording no
        kernels (the gate and the phase marks only)."""
        lib = self.library()
        folder = Path(tempfile.mkdtemp(prefix="beaver-cupti-"))
        out = folder / "kernels.txt"
        out.touch()  # made before the start, so that the sandbox keeps it (it keeps paths the environment names)
        env = {**stages.stage_env(self.task, self.config), **cupti.environment(lib, out)}
        if gated:
            env.update(cupti.gate_environment(folder, (behind + 1) * self.tcfg.stage_s + extra_wait_s))
        if not kernels:
            env[cupti.ACTIVITY_ENV] = "0"
        cfg = stages.StageConfig(**{**self.config.__dict__, "env": env})
        started = time.monotonic()
        # a gated run's life covers its wait; once let go, it has stage_s of its own (end_run)
        life = self.tcfg.stage_s * (behind + 2 if gated else 1) + (extra_wait_s if gated else 0.0)
        try:
            stage = stages.start_stage(
                work, timing_command(self.task.test_command), life, cfg, stage="benchmark"
            )
        except BaseException:
            remove_tree(folder)
            raise
        return Run(who, stage, folder, gated, started)

    def end_run(self, run: Run, on_exit: Callable[[str], None] | None = None) -> tuple[str, StageResult]:
        """Wait for a run that has its go (stage_s from then at most), record it and its phases; (the
        injection file's text, the run's record). ``on_exit`` is called with the file's text as soon as the
        run has written its exit mark, before its process has ended. Raises GateBroken as Run.await_go."""
        try:
            if run.gated:
                run.await_go(self.tcfg.stage_s)
            if on_exit is not None:
                at_exit = run.await_exit()
                if at_exit is not None:
                    on_exit(at_exit)
            with nullcontext() if self.config.pausable is None else self.config.pausable(run.stage.process):
                left = (
                    None if not run.gated else self.tcfg.stage_s - (time.monotonic() - (run.let_go_at or 0.0))
                )
                outcome = run.stage.finish(None if left is None else max(0.0, left))
            res = stages.stage_result("benchmark", run.stage.command, outcome)
            text = run.out.read_text(errors="replace") if run.out.exists() else ""
        finally:
            run.discard()
        ended = time.monotonic()
        if run.gated:  # the run's own time: from its go (the process before it had ended) to its end
            res = res.model_copy(update={"duration_s": round(ended - (run.let_go_at or run.started), 4)})
        self.phases.append(run.phases(text, ended))
        return text, res

    def gated_or_in_turn(self, gated: Callable[[], _T], in_turn: Callable[[], _T]) -> _T:
        """``gated()``; when a run there did not see its go (GateBroken), its runs are dropped, gate_broken
        says why, and ``in_turn()`` times again with each run started in its turn."""
        kept = len(self.runs)
        try:
            return gated()
        except GateBroken as exc:
            self.gate_broken = str(exc)
            del self.runs[kept:]
        return in_turn()

    @staticmethod
    def no_samples(method: str, who: str, res: StageResult) -> BeaverError:
        """The error of a timing run of ``who`` that gave no samples (SpeedupUnavailable for the reference)."""
        tail = [ln for ln in res.log.splitlines() if ln.strip()][-1:] or ["no output"]
        error = SpeedupUnavailable if who == "reference" else BeaverError
        return error(f"{method} timing of the {who} produced no samples (rc {res.rc}): {tail[0][:200]}")

    def candidate_failure(
        self,
        method: str,
        work: stages.WorkDir,
        res: StageResult,
        error: BeaverError | None = None,
        rerun: bool = True,
    ) -> BeaverError:
        """The error of a candidate's timing run that gave no samples, where that run is the task's own test
        command (CUPTI, ncu, a testbench's speed lines) or calls the candidate's code as the test command
        does (kernelbench's driver: ``rerun``), and the candidate passed that test command as its correctness
        run. When the run exited non-zero (not at its time limit), the test command is run once more as the
        correctness run ran it (no injection library, no profiler): failing again, the failure is the
        candidate's (CandidateTimingFailed with that run's record: a candidate that passes its check only at
        times, as one with a race does); passing, it is ``error`` (by default the machine's or the timing
        tool's, BeaverError; a testbench's or the kernelbench driver's, SpeedupUnavailable), as for a run
        that gave no samples otherwise. A run that ran out of GPU memory is not run again: the timing holds
        more than the check did (both sides, and runs stopped for it keep theirs), so that is ``error``."""
        error = error or self.no_samples(method, "candidate", res)
        if not rerun or not res.rc or res.timed_out:
            return error
        if out_of_memory(f"{error}\n{res.log}"):  # the timing's memory, not the check's: beside runs stopped
            return error  # for it, a batch times it again once they end (engine/toolchain/local.py)
        plain = stages.test(work, self.config)
        if plain.rc != 0 or plain.timed_out:
            why = "at its time limit" if plain.timed_out else anticheat.failure_evidence(plain.log, plain.rc)
            return CandidateTimingFailed(
                plain,
                f"{why} (its test command run again as its correctness run ran it, after its {method} "
                f"timing run exited with status {res.rc})",
            )
        return type(error)(f"{error}; its test command, run again as its correctness run ran it, passed")

    def chain(
        self,
        order: tuple[tuple[stages.WorkDir, str], ...],
        total: int,
        take: Take,
        kernels: bool = True,
        would_end: Callable[[str, str], bool] | None = None,
    ) -> None:
        """At most ``total`` runs of the sides in ``order``, in turn, each started while the run before it
        runs and let go once that run has ended, so that one timed process is past its CUDA start at a time.
        ``take`` keeps a run and says whether no more are needed; the run started ahead of one not needed is
        ended before its go. With ``would_end``, the run ahead is let go at the exit mark of the one before
        unless ``would_end(side, text at that mark)``."""
        current: Run | None = self.start_run(*order[0], gated=True, kernels=kernels)
        ahead: Run | None = None
        done = 0
        try:
            while current is not None:
                current.let_go()
                if done + 1 < total:
                    ahead = self.start_run(*order[(done + 1) % len(order)], gated=True, kernels=kernels)
                text, res = self.end_run(current, release_at_exit(current, ahead, would_end))
                done += 1
                if take(current.who, text, res):
                    break
                current, ahead = ahead, None
        finally:
            for run in (current, ahead):
                if run is not None:
                    run.discard()

    def parked_together(
        self,
        order: tuple[tuple[stages.WorkDir, str], ...],
        total: int,
        take: Take,
        kernels: bool = True,
    ) -> None:
        """``total`` runs of the sides in ``order``, all started at once and parked before CUDA; once every
        one is at its gate (or has ended, or stage_s has passed), let go one at a time, each once the one
        before has ended. For timings that take every run (the testbench's own speed lines): the starts,
        seconds of a Python harness's imports and extension loads each, overlap one another and no timed
        run. ``take`` as in chain."""
        runs: list[Run] = []
        try:
            for i in range(total):
                runs.append(self.start_run(*order[i % len(order)], gated=True, kernels=kernels, behind=i + 1))
            deadline = time.monotonic() + self.tcfg.stage_s
            for run in runs:
                run.await_gate(deadline)
        except BaseException:
            for run in runs:
                run.discard()
            raise
        self.one_after_another(runs, take)

    def one_after_another(self, runs: list[Run], take: Take) -> None:
        """Let parked ``runs`` go one at a time, each once the one before has ended, until ``take`` says no
        more are needed; every run is ended and its folder removed after."""
        try:
            for run in runs:
                run.let_go()
                text, res = self.end_run(run)
                if take(run.who, text, res):
                    break
        finally:
            for run in runs:
                run.discard()


def release_at_exit(
    current: Run, ahead: Run | None, would_end: Callable[[str, str], bool] | None
) -> Callable[[str], None] | None:
    """What lets ``ahead`` go at ``current``'s exit mark (None: it goes once ``current`` has ended)."""
    if would_end is None or ahead is None:
        return None

    def release(text: str) -> None:
        if not would_end(current.who, text):
            ahead.let_go()

    return release
