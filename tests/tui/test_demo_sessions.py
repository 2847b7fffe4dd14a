"""Every bundled demo session (sessions/demo, recorded on a GPU) opens in the browser and in the session
screen, at every iteration and in every diff mode, without a damaged line. Skipped while none are bundled."""

from __future__ import annotations

from pathlib import Path

import pytest

from beavertui.commands.browse import demo_dir
from beavertui.engine.session.store import read_session
from beavertui.service.catalog import read_row, session_files
from beavertui.tui.app import BeaverApp
from beavertui.tui.session_screen import SessionScreen
from tests.tui.conftest import SIZE

# 40 s in a serial run on a loaded 2-core machine: a parallel run starts it early
pytestmark = pytest.mark.slow

DEMO = sorted(session_files(demo_dir())) if demo_dir().is_dir() else []


@pytest.mark.skipif(not DEMO, reason="no demo sessions bundled in sessions/demo yet")
@pytest.mark.parametrize("path", DEMO, ids=lambda p: Path(p).stem)
async def test_demo_session_opens_everywhere(path: Path) -> None:
    header, events, problem = read_session(path)
    assert problem is None and header is not None
    row = read_row(path)
    assert row.outcome in ("success", "failed") and row.task == header.task.id
    app = BeaverApp(lambda: SessionScreen(header, events))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("home")
        screen = app.screen
        for _ in range(len(screen.view.state.attempts)):
            for _mode in range(4):
                await pilot.press("d")
            await pilot.press("r", "r", "right")
        assert screen.view.cursor == screen.view.state.attempts[-1].iteration


@pytest.mark.skipif(
    not (demo_dir() / "degenerate_repair.jsonl").is_file(), reason="degenerate demo not bundled"
)
async def test_degeneration_in_the_h200_demo_is_found_with_the_keyboard_alone() -> None:
    """From the browser on the bundled demos: filter to the softmax session, open it, step to the collapse
    (iteration 2: correct, 0.08x, below the gate) and read the diff that caused it (the tiled kernel
    replaced by one thread per row)."""
    from beavertui.tui.browser import BrowserScreen
    from tests.tui.conftest import wait_for

    app = BeaverApp(lambda: BrowserScreen(demo_dir(), watch=False))
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, BrowserScreen) and app.screen.loaded)
        await pilot.press("slash", *"softmax", "enter")
        await pilot.pause()
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, SessionScreen))
        await pilot.press("home", "right")
        await pilot.pause()
        screen = app.screen
        assert screen.view.cursor == 2
        assert "softmax_00" in screen.query_one("#header").render().plain
        speed = screen.query_one("#speedup").text
        assert "0.08x" in speed and "BELOW GATE" in speed
        diff = screen.query_one("#diff").text
        assert "iteration 2 against iteration 1" in diff
        assert "one thread per row" in diff
