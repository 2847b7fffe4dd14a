"""The one attribute a session screen hands down to its panes: the folded state plus the cursor and modes.

A View is an immutable value; a step or a mode switch makes a new one and every pane re-renders from it.
Helpers here answer questions about the session *as of the cursor* (code before it, timings so far) so
that panes never reach into each other. No widgets here.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from beavertui.engine.session.state import AttemptState, SessionState

DIFF_MODES: tuple[str, ...] = ("previous", "broken", "reference", "file")
#: The Diff pane's tab for a session with plans or feedback summaries (docs/protocols.md).
PLAN_MODE = "plan"
DIFF_MODE_LABEL = {
    "previous": "vs previous attempt",
    "broken": "vs broken start",
    "reference": "vs reference",
    "file": "whole file",
    PLAN_MODE: "plan and feedback summary",
}


def diff_modes(state: SessionState) -> tuple[str, ...]:
    """The Diff pane's modes for this session: the plan tab only where a plan or summary is recorded (or
    the protocol makes them, for a session still running)."""
    p = state.header.protocol
    planned = p.planning == "plan" or p.feedback == "L3S"
    if planned or any(a.plan is not None or a.summary is not None for a in state.attempts):
        return (*DIFF_MODES, PLAN_MODE)
    return DIFF_MODES


SANITIZER_TOOLS: tuple[str | None, ...] = (None, "memcheck", "racecheck", "synccheck", "initcheck")


@dataclass(frozen=True)
class View:
    """What every pane renders from."""

    state: SessionState
    cursor: int = 0
    """The iteration shown (1-based); 0 before the first attempt exists."""
    diff_mode: str = "previous"
    raw_log: bool = False
    sanitizer_tool: str | None = None
    """Only this tool's records; None shows every tool."""
    search: str = ""
    problem: str | None = None
    """What is wrong with a damaged session file (its valid prefix is shown)."""
    following: bool = False
    """New events are still arriving (follow mode or live)."""
    status: str = ""
    """A short line from the screen, e.g. 'paused' in live mode."""
    reading: str = ""
    """How far a large file has been read and folded ('' once it is, or when it never needed to be)."""

    def with_(self, **changes: object) -> View:
        return replace(self, **changes)  # type: ignore[arg-type]

    @property
    def attempt(self) -> AttemptState | None:
        return self.state.attempt(self.cursor)

    @property
    def budget(self) -> int:
        return self.state.header.protocol.budget

    def code_before(self, iteration: int) -> tuple[str, str]:
        """The code the attempt at ``iteration`` changed: the latest earlier candidate, else the broken start."""
        for a in reversed(self.state.attempts):
            if a.iteration < iteration and a.candidate is not None and a.candidate.code is not None:
                return a.candidate.code, f"iteration {a.iteration}"
        return self.state.header.task.broken_start, "broken start"

    def attempts_upto(self) -> tuple[AttemptState, ...]:
        return tuple(a for a in self.state.attempts if a.iteration <= self.cursor)
