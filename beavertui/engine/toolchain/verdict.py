"""An attempt's verdict from what its stages left behind: the one place a verdict is made.

LocalToolchain.attempt, the attempt of every mode (``live``, ``check``, ``branch``, ``batch``,
``corpus validate``), runs the stages and hands their results here:

- ``run_category``: the category of the build and the correctness run (judge/classify.py), overruled by the
  family's own oracle;
- ``timing_failure``: whose failure a failed timing is: the candidate's (a flag, the attempt keeps its
  category), the reference's (no speedup), the GPU's or the machine's (an infrastructure failure, the
  attempt is judged without a speedup);
- ``judge``: the Verdict, from the category, the sanitizer records (a memcheck record can change the
  category), the anti-cheat flags, the timing and the gate.

Whether a failed correctness run is the GPU's rather than the candidate's is judge/gpu_fault.py's
``gpu_fault``; the toolchain asks it of every run before anything here, and a run that is the GPU's gets no
verdict. Nothing here runs anything but the probe kernel of ``timing_failure``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, cast

from beavertui.engine.corpus import families
from beavertui.engine.corpus.task import Task
from beavertui.engine.errors import BeaverError, ToolchainError
from beavertui.engine.judge import anticheat
from beavertui.engine.judge.categories import Category
from beavertui.engine.judge.classify import Classification, classify
from beavertui.engine.judge.gpu_fault import GpuProbe, gpu_fault
from beavertui.engine.session.events import Flag, Sanitized, StageResult, TimingResult, Verdict
from beavertui.engine.timing.speedup import CandidateTimingFailed, SpeedupUnavailable


def family_oracle(task: Task, verdict: Classification, run: StageResult | None) -> Classification:
    """A passing classification overruled by the family's own oracle (cudabench's compare_output prints
    ``F`` and still exits 0)."""
    if run is None or verdict.category != "passed":
        return verdict
    wrong = families.oracle_failure(task, run.rc, run.log)
    if wrong is None:
        return verdict
    return Classification("functional_correctness", wrong, (wrong,), "run")


def run_category(task: Task, build: StageResult, run: StageResult | None) -> Classification:
    """The category of a build and its correctness run (None: it did not run), with the family's oracle."""
    timed_out = build.timed_out or (run is not None and run.timed_out)
    c = classify(build.rc, build.log, run.rc if run else None, run.log if run else "", timed_out)
    return family_oracle(task, c, run)


Who = Literal["candidate", "reference", "gpu", "machine"]


@dataclass(frozen=True)
class TimingFailure:
    """Whose failure a failed timing is, and in words."""

    who: Who
    detail: str


def timing_failure(exc: BeaverError, env: Mapping[str, str] | None, probe: GpuProbe) -> TimingFailure:
    """Whose failure ``exc`` (raised by a timing, ``env`` its environment) is. A candidate's timing run that
    failed is the candidate's unless its log says the GPU failed (gpu_fault, as for a correctness run); a
    reference that cannot be timed is the reference's; a failure to prepare or run the timing tools is the
    machine's (ToolchainError ``toolchain``); any other failure during the timing is the GPU's."""
    if isinstance(exc, CandidateTimingFailed):
        fault = gpu_fault(exc.result.log, env, probe)
        return TimingFailure("gpu", fault) if fault is not None else TimingFailure("candidate", exc.evidence)
    if isinstance(exc, SpeedupUnavailable):
        return TimingFailure("reference", str(exc))
    if isinstance(exc, ToolchainError) and exc.source == "toolchain":
        return TimingFailure("machine", str(exc))
    return TimingFailure("gpu", str(exc))


@dataclass(frozen=True)
class Evidence:
    """What an attempt's stages left behind."""

    build: StageResult
    run: StageResult | None
    category: Classification
    """run_category of the build and the run."""
    sanitized: Sequence[Sanitized] = ()
    tampered: Sequence[str] = ()
    """Harness files changed by the build or the run."""
    timing: TimingResult | None = None
    timing_failed: TimingFailure | None = None
    tampered_in_timing: Sequence[str] = field(default_factory=tuple)
    """Harness files changed during the timing (and not before)."""


def classification(task: Task, ev: Evidence) -> Classification:
    """The attempt's category: the run's, unless a memcheck run of the candidate says otherwise."""
    memcheck = [
        s.result.log
        for s in ev.sanitized
        if s.tool == "memcheck" and s.result.stage == "sanitize" and not s.result.timed_out
    ]
    if not memcheck or ev.run is None:
        return ev.category
    run = ev.run
    c = classify(
        ev.build.rc,
        ev.build.log,
        run.rc,
        run.log,
        ev.build.timed_out or run.timed_out,
        memcheck[-1],
        run.signal,
    )
    return family_oracle(task, c, run)


def _harness_skipped(run: StageResult | None) -> str | None:
    """Why the run's harness proof says the harness did not run to its end (judge/harness_proof.py), or None.

    Only a run that exited 0 is held to it: a run that failed fails on its own, and a harness that ends a
    failure with ``exit(1)`` (as the release's do) keeps the category of its failure."""
    if run is None or run.rc != 0 or run.timed_out or not (run.harness_proof or "").startswith("skipped"):
        return None
    return (run.harness_proof or "").removeprefix("skipped: ")


def correct_so_far(task: Task, ev: Evidence) -> bool:
    """Whether the attempt passes before any timing: then it is timed (where its family has a speed)."""
    return (
        classification(task, ev).category == "passed" and not ev.tampered and _harness_skipped(ev.run) is None
    )


def judge(task: Task, code: str, ev: Evidence, iteration: int, gate: float) -> Verdict:
    """The attempt's one Verdict."""
    c = classification(task, ev)
    run = ev.run
    flags = [Flag(name="harness_modified", detail=rel) for rel in sorted(set(ev.tampered))]
    flags += anticheat.static_flags(code, task.reference())
    allowed = f"{task.broken_start()}\n{task.reference() or ''}"
    flags += anticheat.include_flags(code, allowed, _protected_names(task))
    flags += anticheat.poison_flags(run.log) if run is not None else []
    skipped = _harness_skipped(run)
    if skipped is not None:
        flags.append(Flag(name="harness_skipped", detail=skipped))
    correct = c.category == "passed" and not ev.tampered and skipped is None
    if families.is_reference_submission(task, code):
        flags.append(
            Flag(name="reference_submission", detail="judged under the family's reference semantics")
        )
    speedup_note: str | None = None
    if correct and not families.family_of(task).timed:
        speedup_note = families.NO_REFERENCE
    failed = ev.timing_failed
    if failed is not None and failed.who == "candidate":
        flags.append(Flag(name="timing_run_failed", detail=failed.detail))
    elif failed is not None and failed.who == "reference":
        speedup_note = failed.detail
    flags += [Flag(name="harness_modified", detail=f"{rel} (during timing)") for rel in ev.tampered_in_timing]
    timing = ev.timing
    flags = anticheat.merge(flags, timing.flags if timing else [])
    final = _verdict(iteration, c, correct, timing, gate, flags)
    if speedup_note is not None and final.correct:
        final = final.model_copy(update={"speedup_note": speedup_note, "reason": "passed, no speedup"})
    return final


def _protected_names(task: Task) -> list[str]:
    """Base names a candidate may not include: the task's reference and its harness's own files."""
    names = [task.reference_path.name] if task.reference_path is not None else []
    with contextlib.suppress(OSError):
        names += [p.name for p in task.testbench.iterdir() if p.is_file()]
    return names


def _verdict(
    it: int, c: Classification, correct: bool, timing: TimingResult | None, gate: float, flags: list[Flag]
) -> Verdict:
    speedup = timing.speedup if timing else None
    if timing is not None:
        if timing.implausible:
            floor = timing.floor_ms
            why = f"{timing.speedup:.1f}x" if floor is None else floor_note(timing.candidate_ms, floor)
            flags.append(Flag(name="implausible_speedup", detail=why))
        if timing.unstable:
            cvs = f"CV {100 * timing.candidate_cv:.1f}% candidate, {100 * timing.reference_cv:.1f}% reference"
            flags.append(Flag(name="unstable_timing", detail=cvs))
    disqualified = [f.name for f in flags if f.name in anticheat.DISQUALIFYING]
    correct = correct and not disqualified
    success = correct and (gate == 0 or (speedup is not None and speedup >= gate))
    if disqualified:
        reason = disqualified[0].replace("_", " ")
    elif not correct:
        reason = c.category
    elif success:
        reason = "passed"
    elif speedup is None:
        reason = "passed, speedup not measured"
    else:
        reason = "below gate"
    category = c.category
    signature = c.signature
    if c.category == "passed" and not correct:
        category, signature = "functional_correctness", reason
    return Verdict(
        iteration=it,
        category=category,
        signature=signature,
        correct=correct,
        speedup=speedup,
        gate=gate,
        success=success,
        reason=reason,
        decisive=list(c.decisive),
        flags=flags,
    )


def judge_late(
    pending: Verdict,
    timing: TimingResult | None,
    failed: TimingFailure | None,
    tampered_in_timing: Sequence[str],
    gate: float,
) -> Verdict:
    """The verdict of a correct attempt whose timing was made after its session's loop (a batch's timing
    lane): its pending verdict with the timing's speedup, flags and failure applied as ``judge`` applies them
    (a failure of the GPU or the machine is not judged: the timing stays pending)."""
    flags = list(pending.flags)
    speedup_note: str | None = None
    if failed is not None and failed.who == "candidate":
        flags.append(Flag(name="timing_run_failed", detail=failed.detail))
    elif failed is not None and failed.who == "reference":
        speedup_note = failed.detail
    flags += [Flag(name="harness_modified", detail=f"{rel} (during timing)") for rel in tampered_in_timing]
    flags = anticheat.merge(flags, timing.flags if timing else [])
    category = cast("Category", pending.category)
    c = Classification(category, pending.signature or "", tuple(pending.decisive), "none")
    final = _verdict(pending.iteration, c, pending.correct, timing, gate, flags)
    if speedup_note is not None and final.correct:
        final = final.model_copy(update={"speedup_note": speedup_note, "reason": "passed, no speedup"})
    return final


def floor_note(candidate_ms: float, floor_ms: float) -> str:
    """Why a candidate's time is implausible on this GPU (its hardware floor, host/ceilings.py)."""
    return f"candidate {candidate_ms:.4g} ms is below the hardware floor {floor_ms:.4g} ms for this work"
