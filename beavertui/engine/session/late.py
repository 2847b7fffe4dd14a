"""Timings appended to a finished session by a batch's timing lane (docs/format.md, Timing after the loop).

Under a gate applied after the run, a batch's session may end with correct attempts whose verdicts say
``timing_pending``; its end says how many (``SessionEnd.timing_pending``). The lane times each one later and
appends, in one write, its ``Timed`` event (when it has one), its verdict again with the speedup and success
at the gate, and the session's end again with the count one less: the reducer folds them over the old ones,
and the last end of a file is the one that holds. Resume-safe: what is pending is read from the file
itself; a timing is appended once (the file is read again under a lock, and an attempt no longer pending is
left alone); a write cut by a kill leaves a damaged tail that the next append cuts off first, so a timing is
never lost and never written twice.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path

from beavertui.engine.errors import SessionFileError
from beavertui.engine.session.events import Event, SessionEnd, SessionHeader, Timed, Verdict, now
from beavertui.engine.session.state import SessionState, fold, fold_more
from beavertui.engine.session.store import _valid_prefix_bytes, dump_line, read_session

_LOCK = threading.Lock()
_LOCKS: dict[Path, threading.Lock] = {}


def _lock(path: Path) -> threading.Lock:
    with _LOCK:
        return _LOCKS.setdefault(path.resolve(), threading.Lock())


def pending(path: Path) -> tuple[SessionHeader, SessionState, list[int]] | None:
    """A finished session's header, state and the iterations whose timing is pending (None: the file is not
    a finished session)."""
    header, events, _problem = read_session(path)
    if header is None or not events or not isinstance(events[-1], SessionEnd):
        return None
    state = fold(header, events)
    return header, state, [a.iteration for a in state.attempts if a.verdict and a.verdict.timing_pending]


def append_timing(
    path: Path, iteration: int, events: Sequence[Event], *, fsync: bool = True
) -> SessionEnd | None:
    """Append the late timing of attempt ``iteration`` (``events``: its Timed, if any, then its Verdict) and
    the session's end again, and return that end; None when that attempt is no longer pending (appended
    before) or the file is not a finished session."""
    if (
        not events
        or not isinstance(events[-1], Verdict)
        or any(not isinstance(e, Timed | Verdict) or e.iteration != iteration for e in events)
    ):
        raise SessionFileError(
            f"{path}: a late timing is a Timed event and a verdict of iteration {iteration}"
        )
    with _lock(path):
        found = pending(path)
        if found is None or iteration not in found[2]:
            return None
        _header, state, _ = found
        late = list(events)
        after = fold_more(state, late)
        assert state.end is not None
        end = state.end.model_copy(
            update={
                "t": now(),
                "success": after.success,
                "best_speedup": after.best_speedup,
                "timing_pending": sum(1 for v in after.verdicts if v.timing_pending),
            }
        )
        text = "".join(dump_line(e) + "\n" for e in (*late, end)).encode("utf-8")
        valid = _valid_prefix_bytes(path)
        fd = os.open(path, os.O_WRONLY)
        try:
            os.ftruncate(fd, valid)  # a damaged tail: a write cut by a kill
            os.lseek(fd, valid, os.SEEK_SET)
            os.write(fd, text)
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
        return end


def split_late(events: Sequence[Event]) -> tuple[list[Event], list[Event]]:
    """(the events up to the loop's own end, the late timings appended after it): a check that a file holds
    each attempt once reads the first part as before, and each late timing once in the second."""
    first = next((i for i, e in enumerate(events) if isinstance(e, SessionEnd)), len(events) - 1)
    return list(events[: first + 1]), list(events[first + 1 :])
