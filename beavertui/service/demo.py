"""The bundled demos as sessions to run again: ``live --demo NAME`` and ``batch --demo``.

A demo is one of the bundled sessions (sessions/demo, inside the package once installed) whose replies ship
beside it: run again, its task, its protocol and its hand-written replies meet the outcomes recorded with it
on the H200 (the ``demo`` toolchain), so a whole session runs with no GPU and no key.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from beavertui.engine import bundled
from beavertui.engine.errors import BeaverError
from beavertui.engine.session.protocol import Protocol

#: The toolchain of a demo: the outcomes recorded in the bundled demo sessions.
TOOLCHAIN = "demo"


@dataclass(frozen=True)
class Demo:
    """What running the demo ``name`` again needs."""

    name: str
    task_id: str
    protocol: Protocol
    replies: Path
    """The script of the hand-written replies (``scripted:`` + this path is the model)."""

    @property
    def model(self) -> str:
        return f"scripted:{self.replies}"

    @property
    def notes(self) -> str:
        return f"demo {self.name}: outcomes replayed from its recording, nothing built or run"


def demo(name: str) -> Demo:
    """The demo ``name``; a one-line error naming the demos there are."""
    from beavertui.engine.session.store import read_session

    names = bundled.demo_names()
    if name not in names:
        raise BeaverError(f"--demo {name}: no such bundled demo (there are: {', '.join(names)})")
    header, _events, problem = read_session(bundled.demo_sessions() / f"{name}.jsonl")
    if header is None:
        raise BeaverError(f"--demo {name}: the bundled session cannot be read: {problem}")
    return Demo(name, header.task.id, header.protocol, bundled.demo_replies(name))
