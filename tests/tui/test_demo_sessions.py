"""Every bundled demo session (sessions/demo, recorded on a GPU) opens in the browser and in the session
screen, at every iteration and in every diff mode, without a damaged line. Skipped while none are bundled."""

from __future__ import annotations

from pathlib import Path

import pytest

from beavertui.commands.browse import demo_dir
from beavertui.engine.session import read_session
from beavertui.tui.app import BeaverApp
from beavertui.tui.catalog import read_row, session_files
from beavertui.tui.session_screen import SessionScreen
from tests.tui.conftest import SIZE

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
