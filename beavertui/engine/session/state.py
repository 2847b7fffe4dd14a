"""The one reducer: ``apply(state, event) -> state``.

Live view, replay, follow mode, the stagnation detectors and the attempts table all fold the same events
with this function, so they can never disagree about what happened. States are immutable; ``apply``
returns a new state and never mutates its input (a replay cursor can keep every intermediate state).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields, replace

from beavertui.engine.session.events import (
    Built,
    Candidate,
    Event,
    InfraError,
    Plan,
    Profiled,
    Ran,
    Reply,
    ReplyDelta,
    Request,
    Sanitized,
    SessionEnd,
    SessionHeader,
    Stalled,
    Summary,
    Timed,
    Verdict,
)


@dataclass(frozen=True)
class AttemptState:
    """Everything recorded about one iteration."""

    iteration: int
    plan: Plan | None = None
    """The plan the coding call of this iteration was given (protocol ``planning = "plan"``)."""
    request: Request | None = None
    streaming: str = ""
    reply: Reply | None = None
    candidate: Candidate | None = None
    build: Built | None = None
    run: Ran | None = None
    sanitize: tuple[Sanitized, ...] = ()
    timing: Timed | None = None
    profile: Profiled | None = None
    verdict: Verdict | None = None
    stalls: tuple[Stalled, ...] = ()
    infra_errors: tuple[InfraError, ...] = ()
    summary: Summary | None = None
    """The summariser's condensed feedback on this attempt (feedback level L3S)."""

    @property
    def stage(self) -> str:
        """The furthest stage reached: request, reply, candidate, build, run, sanitize, timing, verdict."""
        for name in ("verdict", "timing", "run", "build", "candidate", "reply"):
            if getattr(self, name) is not None:
                return name
        if self.sanitize:
            return "sanitize"
        if self.request is not None:
            return "request"
        return "plan" if self.plan is not None else "pending"


@dataclass(frozen=True)
class SessionState:
    """A session as far as its events go."""

    header: SessionHeader
    attempts: tuple[AttemptState, ...] = ()
    stalls: tuple[Stalled, ...] = ()
    end: SessionEnd | None = None
    events: int = 0
    """Number of events folded (the header not counted)."""

    @property
    def done(self) -> bool:
        return self.end is not None

    @property
    def iteration(self) -> int:
        """The latest iteration seen (0 before the first)."""
        return self.attempts[-1].iteration if self.attempts else 0

    def attempt(self, iteration: int) -> AttemptState | None:
        """The attempt of a 1-based iteration, if recorded."""
        for a in self.attempts:
            if a.iteration == iteration:
                return a
        return None

    @property
    def verdicts(self) -> tuple[Verdict, ...]:
        """Verdicts in iteration order."""
        return tuple(a.verdict for a in self.attempts if a.verdict is not None)

    @property
    def hashes(self) -> tuple[str | None, ...]:
        """Candidate hashes in iteration order (None where no code was extracted)."""
        return tuple(a.candidate.sha256 for a in self.attempts if a.candidate is not None)

    @property
    def success(self) -> bool:
        return any(v.success for v in self.verdicts)

    @property
    def best_speedup(self) -> float | None:
        speeds = [v.speedup for v in self.verdicts if v.correct and v.speedup is not None]
        return max(speeds) if speeds else None


_ATTEMPT_FIELDS = tuple(f.name for f in fields(AttemptState) if f.name != "iteration")
#: Fields a Request does not clear: the plan is made before the request of its iteration.
_KEPT_BY_REQUEST = ("plan",)


def initial(header: SessionHeader) -> SessionState:
    """The state before any event."""
    return SessionState(header=header)


def _with_attempt(state: SessionState, iteration: int, **changes: object) -> SessionState:
    attempts = list(state.attempts)
    for i, a in enumerate(attempts):
        if a.iteration == iteration:
            attempts[i] = replace(a, **changes)  # type: ignore[arg-type]
            break
    else:
        attempts.append(replace(AttemptState(iteration=iteration), **changes))  # type: ignore[arg-type]
        attempts.sort(key=lambda a: a.iteration)
    return replace(state, attempts=tuple(attempts), events=state.events + 1)


def apply(state: SessionState, event: Event) -> SessionState:
    """Fold one event into the state."""
    if isinstance(event, Request):
        # A re-sent request (resume, retry) starts the iteration afresh: nothing of a cut attempt is kept.
        fresh = {
            f: getattr(AttemptState(iteration=event.iteration), f)
            for f in _ATTEMPT_FIELDS
            if f not in _KEPT_BY_REQUEST
        }
        return _with_attempt(state, event.iteration, **{**fresh, "request": event})
    if isinstance(event, Plan):
        return _with_attempt(state, event.iteration, plan=event)
    if isinstance(event, Summary):
        return _with_attempt(state, event.iteration, summary=event)
    if isinstance(event, ReplyDelta):
        current = state.attempt(event.iteration)
        text = (current.streaming if current else "") + event.text
        return _with_attempt(state, event.iteration, streaming=text)
    if isinstance(event, Reply):
        return _with_attempt(state, event.iteration, reply=event, streaming="")
    if isinstance(event, Candidate):
        return _with_attempt(state, event.iteration, candidate=event)
    if isinstance(event, Built):
        return _with_attempt(state, event.iteration, build=event)
    if isinstance(event, Ran):
        return _with_attempt(state, event.iteration, run=event)
    if isinstance(event, Sanitized):
        current = state.attempt(event.iteration)
        sanitized = current.sanitize if current else ()
        return _with_attempt(state, event.iteration, sanitize=(*sanitized, event))
    if isinstance(event, Timed):
        return _with_attempt(state, event.iteration, timing=event)
    if isinstance(event, Profiled):
        return _with_attempt(state, event.iteration, profile=event)
    if isinstance(event, Verdict):
        return _with_attempt(state, event.iteration, verdict=event)
    if isinstance(event, Stalled):
        current = state.attempt(event.iteration)
        stalls = current.stalls if current else ()
        new = _with_attempt(state, event.iteration, stalls=(*stalls, event))
        return replace(new, stalls=(*state.stalls, event))
    if isinstance(event, InfraError):
        current = state.attempt(event.iteration)
        infra = current.infra_errors if current else ()
        return _with_attempt(state, event.iteration, infra_errors=(*infra, event))
    if isinstance(event, SessionEnd):
        return replace(state, end=event, events=state.events + 1)
    raise TypeError(f"unknown event {type(event).__name__}")


class _Open:
    """An attempt being folded by ``fold_more``: its fields, with lists where ``apply`` grows tuples."""

    __slots__ = ("fields", "infra_errors", "sanitize", "stalls", "streaming")

    def __init__(self, attempt: AttemptState) -> None:
        self.fields: dict[str, object] = {f: getattr(attempt, f) for f in _ATTEMPT_FIELDS}
        self.streaming: list[str] = [attempt.streaming] if attempt.streaming else []
        self.sanitize: list[Sanitized] = list(attempt.sanitize)
        self.stalls: list[Stalled] = list(attempt.stalls)
        self.infra_errors: list[InfraError] = list(attempt.infra_errors)

    def close(self, iteration: int) -> AttemptState:
        return AttemptState(
            iteration=iteration,
            **{  # type: ignore[arg-type]
                **self.fields,
                "streaming": "".join(self.streaming),
                "sanitize": tuple(self.sanitize),
                "stalls": tuple(self.stalls),
                "infra_errors": tuple(self.infra_errors),
            },
        )


#: The attempt field each event that replaces one is kept in.
_FIELD_OF: dict[type, str] = {
    Reply: "reply", Candidate: "candidate", Built: "build", Ran: "run",
    Timed: "timing", Profiled: "profile", Verdict: "verdict", Plan: "plan", Summary: "summary",
}  # fmt: skip


def fold_more(state: SessionState, events: Iterable[Event]) -> SessionState:
    """``apply`` of each event in turn, in time linear in their number.

    Equal to ``for e in events: state = apply(state, e)`` (a property test holds the two together); apply
    alone copies the tuples it grows, which is quadratic for many events of one iteration (100,000
    sanitizer runs or reply pieces in one file would take hours).
    """
    known = {a.iteration: a for a in state.attempts}
    open_: dict[int, _Open] = {}
    stalls = list(state.stalls)
    end, count = state.end, state.events

    def touch(iteration: int) -> _Open:
        o = open_.get(iteration)
        if o is None:
            o = open_[iteration] = _Open(known.get(iteration) or AttemptState(iteration=iteration))
        return o

    for event in events:
        if isinstance(event, Request):
            before = open_.get(event.iteration)
            plan = (
                before.fields["plan"]
                if before is not None
                else getattr(known.get(event.iteration), "plan", None)
            )
            o = open_[event.iteration] = _Open(AttemptState(iteration=event.iteration, plan=plan))  # type: ignore[arg-type]
            o.fields["request"] = event
        elif isinstance(event, ReplyDelta):
            touch(event.iteration).streaming.append(event.text)
        elif isinstance(event, Reply | Candidate | Built | Ran | Timed | Profiled | Verdict | Plan | Summary):
            o = touch(event.iteration)
            o.fields[_FIELD_OF[type(event)]] = event
            if isinstance(event, Reply):
                o.streaming = []
        elif isinstance(event, Sanitized):
            touch(event.iteration).sanitize.append(event)
        elif isinstance(event, Stalled):
            touch(event.iteration).stalls.append(event)
            stalls.append(event)
        elif isinstance(event, InfraError):
            touch(event.iteration).infra_errors.append(event)
        elif isinstance(event, SessionEnd):
            end = event
        else:
            raise TypeError(f"unknown event {type(event).__name__}")
        count += 1
    if not open_ and count == state.events:
        return state
    merged = {**known, **{it: o.close(it) for it, o in open_.items()}}
    attempts = tuple(merged[it] for it in sorted(merged))
    return replace(state, attempts=attempts, stalls=tuple(stalls), end=end, events=count)


def fold(header: SessionHeader, events: Iterable[Event]) -> SessionState:
    """Fold a whole event sequence (``apply`` of each in turn, see ``fold_more``)."""
    return fold_more(initial(header), events)
