"""Search across a session's iterations: which attempts mention a text, and where.

Matches the candidate code, the reply, every stage log, the category, signature and reason, and the
plan and the feedback summary of a planned or L3S session. Pure; the screen moves the cursor to the
result.
"""

from __future__ import annotations

from beavertui.engine.session.state import AttemptState, SessionState


def where(attempt: AttemptState, query: str) -> str | None:
    """The first place in an attempt that contains the query (case-insensitive), or None."""
    q = query.lower()
    places: list[tuple[str, str]] = []
    if attempt.candidate is not None and attempt.candidate.code:
        places.append(("code", attempt.candidate.code))
    if attempt.verdict is not None:
        v = attempt.verdict
        places.append(
            ("verdict", f"{v.category} {v.signature or ''} {v.reason} {' '.join(map(str, v.flags))}")
        )
    for stage in (attempt.build, attempt.run, *attempt.sanitize):
        if stage is not None:
            places.append((stage.result.stage, stage.result.log))
    if attempt.reply is not None:
        places.append(("reply", attempt.reply.content))
    if attempt.plan is not None:
        places.append(("plan", attempt.plan.content))
    if attempt.summary is not None:
        places.append(("summary", attempt.summary.content))
    for name, text in places:
        if q in text.lower():
            return name
    return None


def find(state: SessionState, query: str, after: int, *, backwards: bool = False) -> tuple[int, str] | None:
    """The next iteration after ``after`` (wrapping around) that contains the query, and where."""
    if not query or not state.attempts:
        return None
    its = [a.iteration for a in state.attempts]
    order = [i for i in its if i > after] + [i for i in its if i <= after]
    if backwards:
        order = [i for i in reversed(its) if i < after] + [i for i in reversed(its) if i >= after]
    for it in order:
        a = state.attempt(it)
        place = where(a, query) if a is not None else None
        if place is not None:
            return it, place
    return None
