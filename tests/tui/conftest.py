"""Fixtures of the TUI tests: the recorded sessions under tests/data/sessions and helpers to open them."""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from beavertui.engine.session.store import read_session

DATA = Path(__file__).resolve().parents[1] / "data" / "sessions"
SIZE = (120, 40)
OLD = 1_780_000_000.0
"""A fixed modification time: old enough that files without an end line list as incomplete."""


def open_session(name: str, **kw: object):  # type: ignore[no-untyped-def]
    from beavertui.tui.app import BeaverApp
    from beavertui.tui.session_screen import SessionScreen

    header, events, problem = read_session(DATA / f"{name}.jsonl")
    assert header is not None
    return BeaverApp(lambda: SessionScreen(header, events, problem=problem, **kw))  # type: ignore[arg-type]


async def wait_for(pilot, condition: Callable[[], bool], timeout: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    """Let the app run until a condition holds (workers post messages asynchronously)."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not condition():
        if loop.time() > end:
            raise AssertionError("condition not reached in time")
        await pilot.pause(0.02)


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    """The four test sessions in a run folder, with fixed modification times."""
    root = tmp_path / "run"
    root.mkdir()
    for name in ("degenerate", "stuck", "quick", "damaged"):
        shutil.copy(DATA / f"{name}.jsonl", root / f"{name}.jsonl")
        os.utime(root / f"{name}.jsonl", (OLD, OLD))
    return root
