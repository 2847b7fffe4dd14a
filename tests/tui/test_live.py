"""Live mode driven by real engine parts: the scripted model replays the degenerate session's replies and
the recorded toolchain replays that session's recorded GPU outcomes; the loop runs in a thread worker."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from beavertui.engine.session.events import ReplyDelta
from beavertui.engine.session.state import fold
from beavertui.engine.session.store import read_session
from beavertui.tui.app import BeaverApp
from beavertui.tui.live import LiveScreen
from beavertui.tui.session_screen import SessionEvent
from tests.tui.conftest import SIZE, wait_for
from tests.tui.live_setup import live_parts
from tests.tui.sessions_data import src


def live_app(tmp_path: Path, **kw: object) -> tuple[BeaverApp, list[LiveScreen]]:
    task, model, toolchain, protocol = live_parts(tmp_path)
    screens: list[LiveScreen] = []

    def first() -> LiveScreen:
        s = LiveScreen(task, model, toolchain, protocol, tmp_path / "live.jsonl", **kw)  # type: ignore[arg-type]
        screens.append(s)
        return s

    return BeaverApp(first), screens


async def test_live_session_runs_to_the_end_and_is_saved(tmp_path: Path) -> None:
    app, screens = live_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: bool(screens) and screens[0].finished.is_set(), timeout=20)
        await pilot.pause()
        view = screens[0].view
        assert [v.category for v in view.state.verdicts] == [
            "illegal_memory_access",
            "passed",
            "buildability",
            "passed",
        ]
        assert [v.success for v in view.state.verdicts] == [False, False, False, True]
        assert view.state.end is not None and view.state.end.stop_reason == "passed"
        assert view.cursor == 4 and not view.following
        assert "ended: passed after 4" in app.screen.query_one("#header").render().plain
    header, events, problem = read_session(tmp_path / "live.jsonl")
    assert problem is None and header is not None
    assert all(e.kind != "reply_delta" for e in events)
    saved = fold(header, events)
    assert [v.speedup for v in saved.verdicts] == [None, 0.0797, None, 0.9419]


async def test_streaming_reply_shows_before_the_candidate(tmp_path: Path) -> None:
    app, screens = live_app(tmp_path, paused=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = screens[0]
        screen.post_message(SessionEvent(ReplyDelta(iteration=1, text="The loads of A run past ")))
        screen.post_message(SessionEvent(ReplyDelta(iteration=1, text="the last column.")))
        await wait_for(pilot, lambda: "the last column." in screen.query_one("#diff").text)
        text = screen.query_one("#diff").text
        assert text.splitlines()[0] == "model reply (streaming)"
        assert "The loads of A run past the last column." in text


async def test_pause_single_step_resume(tmp_path: Path) -> None:
    app, screens = live_app(tmp_path, paused=True)
    async with app.run_test(size=SIZE) as pilot:
        screen = screens[0]
        await wait_for(pilot, lambda: screen.control.waiting)
        assert screen.view.state.iteration == 0
        assert "paused" in screen.view.status
        await pilot.press("space")
        await wait_for(pilot, lambda: len(screen.view.state.verdicts) == 1 and screen.control.waiting)
        await pilot.pause(0.2)
        assert screen.view.state.iteration == 1  # holds before iteration 2's request
        await pilot.press("p")
        await wait_for(pilot, lambda: screen.finished.is_set(), timeout=20)
        await pilot.pause()
        assert screen.view.state.end is not None and screen.view.state.end.stop_reason == "passed"


async def test_stop_ends_the_session_as_stopped(tmp_path: Path) -> None:
    app, screens = live_app(tmp_path, paused=True)
    async with app.run_test(size=SIZE) as pilot:
        screen = screens[0]
        await wait_for(pilot, lambda: screen.control.waiting)
        await pilot.press("x")
        await wait_for(pilot, lambda: screen.finished.is_set())
        await pilot.pause()
        assert screen.view.state.end is not None and screen.view.state.end.stop_reason == "stopped"


async def test_edit_before_build_uses_the_edited_candidate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fixed = tmp_path / "fixed.cu"
    fixed.write_text(src("it4"))
    editor = tmp_path / "editor.py"
    editor.write_text(f"import shutil, sys\nshutil.copy({str(fixed)!r}, sys.argv[1])\n")
    monkeypatch.setenv("EDITOR", f"{sys.executable} {editor}")
    monkeypatch.delenv("VISUAL", raising=False)
    app, screens = live_app(tmp_path, paused=True)
    async with app.run_test(size=SIZE) as pilot:
        screen = screens[0]
        await wait_for(pilot, lambda: screen.control.waiting)
        await pilot.press("e")
        assert "edit armed" in screen.view.status
        await pilot.press("space")
        await wait_for(pilot, lambda: screen.finished.is_set(), timeout=20)
        await pilot.pause()
        a = screen.view.state.attempt(1)
        assert a is not None and a.candidate is not None
        assert a.candidate.edited and a.candidate.code == src("it4")
        assert a.verdict is not None and a.verdict.success and a.verdict.speedup == 0.9419
        assert "edited by the user before the build" in screen.query_one("#diff").text


async def test_rerun_sanitizer_on_the_current_attempt(tmp_path: Path) -> None:
    app, screens = live_app(tmp_path, paused=True)
    async with app.run_test(size=SIZE) as pilot:
        screen = screens[0]
        await wait_for(pilot, lambda: screen.control.waiting)
        await pilot.press("space")
        await wait_for(pilot, lambda: len(screen.view.state.verdicts) == 1 and screen.control.waiting)
        assert len(screen.view.state.attempt(1).sanitize) == 1
        await pilot.press("z")
        await wait_for(pilot, lambda: len(screen.view.state.attempt(1).sanitize) == 2)
        assert [s.tool for s in screen.view.state.attempt(1).sanitize] == ["memcheck", "memcheck"]
        assert screen.query_one("#sanitizer").text.count("Invalid __global__ read of size 4 ×3") == 2
