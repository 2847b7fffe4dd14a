"""Which session a stage belongs to, so that every resource serves the oldest session first.

A batch sets SESSION_RANK in each session's thread (lower: started earlier); the GPU pool and the build slots
read it with every request. ``Pausable`` is what a stage's process offers them: stop and continue.
"""

from __future__ import annotations

import contextvars
import itertools
from typing import Protocol

#: The rank of the session whose stages run in this thread (lower: started earlier, served first).
SESSION_RANK: contextvars.ContextVar[int | None] = contextvars.ContextVar("beaver_session_rank", default=None)

#: The rank of the timing lane's stages (timing_lane.py): before every session's. A lane's timing is the last
#: step of a session whose loop has ended, and what it builds first (on a build slot) keeps the GPU's timing
#: holds coming; behind the sessions' builds it waited, with the GPU free of timing, while new sessions built.
LANE_RANK = -1

_SEQ = itertools.count()


def session_rank() -> int:
    """The rank of this thread's session; outside a batch session, after every session (first come)."""
    r = SESSION_RANK.get()
    return r if r is not None else 1 << 62


def next_seq() -> int:
    """A number for each request, increasing: first come, first served among equals."""
    return next(_SEQ)


class Pausable(Protocol):
    """A stage's process that can be stopped and continued (sandbox.Started)."""

    def pause(self) -> bool: ...

    def resume(self) -> None: ...
