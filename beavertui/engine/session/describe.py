"""Words for a stage result and a session's end, shared by every view: an unrecorded value is never shown as a
measured one, and a session that missed the speed gate is never shown as passed.

A session imported from another program's records (``beavertui import``) may lack a stage's exit status,
duration or command; those are null in the file and listed in ``StageResult.unrecorded``. These helpers
say "not recorded" for them instead of printing ``None`` or a zero duration. Plain strings only.
"""

from __future__ import annotations

from beavertui.engine.session.events import SessionEnd, StageResult


def stage_status(r: StageResult) -> str:
    """How the stage ended: ``rc 0``, ``killed (time limit)``, ``signal 9``, or for an imported stage
    without an exit status ``ok (exit status not recorded)`` / ``failed (...)``."""
    if r.timed_out:
        return "killed (time limit)"
    if r.signal:
        return f"signal {r.signal}"
    if r.rc is None and "rc" in r.unrecorded:
        said = {True: "ok", False: "failed", None: "outcome"}[r.ok]
        return f"{said} (exit status not recorded)"
    return f"rc {r.rc}"


def stage_failed(r: StageResult) -> bool:
    """Whether the stage failed, from its exit status or, where only that was recorded, its outcome."""
    return bool(r.rc or r.timed_out) or (r.rc is None and r.ok is False)


def duration_text(r: StageResult, digits: int = 2) -> str:
    """``1.23 s``, or ``duration not recorded``; with the time a batch's timing stage kept it stopped."""
    text = "duration not recorded" if r.duration_s is None else f"{r.duration_s:.{digits}f} s"
    return f"{text}, {paused_text(r)}" if r.paused_s else text


def paused_text(r: StageResult) -> str:
    """``stopped 4.5 s for a timing stage, not counted`` for a run a batch stopped (``paused_s``), else empty."""
    return f"stopped {r.paused_s:.1f} s for a timing stage, not counted" if r.paused_s else ""


def command_text(r: StageResult) -> str:
    """The command as run, or ``(command not recorded)``."""
    return "(command not recorded)" if r.command is None else r.command


#: Shown beside a stage that was not run for its attempt (``StageResult.reused``).
REUSED = "from the start check, not run again"


def reuse_text(r: StageResult) -> str:
    """``REUSED`` for a stage an attempt took from the check of its broken start, else empty."""
    return REUSED if r.reused else ""


FAILED_GATE = "failed gate"
"""How every view names a session that stopped at a correct attempt slower than its gate: the loop's stop
reason is ``passed`` (a protocol that applies the gate after the run stops at the first correct attempt),
but the session is not a success."""


TIMING_PENDING = "timing pending"
"""How every view names a session whose loop ended with a correct attempt the batch's timing lane has yet to
time (``SessionEnd.timing_pending``): whether it passes its gate is not known yet."""


def stop_text(stop_reason: str, success: bool, pending: int = 0) -> str:
    """The stop reason as every view shows it: ``timing pending`` while the timing lane has timings of it to
    append (``pending``), ``failed gate`` for a correct stop that missed the speed gate, else the recorded
    reason."""
    if pending:
        return TIMING_PENDING
    return FAILED_GATE if stop_reason == "passed" and not success else stop_reason


def ended_text(end: SessionEnd, gate: float | None = None) -> str:
    """``passed after 2, best 0.94x``; a gate failure says so first: ``failed gate after 2, best 0.02x <
    gate 0.70x`` (its best attempt was correct, and slower than the gate)."""
    best = "—" if end.best_speedup is None else f"{end.best_speedup:.2f}x"
    stop = stop_text(end.stop_reason, end.success, end.timing_pending)
    if stop == FAILED_GATE and gate is not None:
        return f"{stop} after {end.iterations}, best {best} < gate {gate:.2f}x"
    return f"{stop} after {end.iterations}, best {best}"


TOKEN_LIMIT = "the reply stopped at its completion token limit (finish reason length)"
"""How every view says that a reply ended because the endpoint's token limit cut it."""

TOKEN_LIMIT_FIX = (
    "set or raise --max-tokens N (max_tokens in the models file or a protocol file's [[models]])"
)
"""What the user does about it: a cut reply usually ends inside its code block, so it has no code."""


def token_limit_text(finish_reason: str | None) -> str | None:
    """``the reply stopped at its completion token limit (...): set or raise --max-tokens N (...)`` for a reply
    whose finish reason is ``length``, else None."""
    return f"{TOKEN_LIMIT}: {TOKEN_LIMIT_FIX}" if finish_reason == "length" else None
