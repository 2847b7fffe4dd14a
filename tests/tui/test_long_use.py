"""Long use of the screens: opening and closing sessions, moving the focus, keeps no widget alive.

Before: every time the browser was shown again (a session closed with esc) or the focus moved, Textual's
key bar built its keys anew and the old ones stayed in memory, bound to the footer (Textualize/textual#6666):
twelve more live widgets per session opened, without end. beavertui/tui/footer.py drops them. Each metrics
screen opened from the browser (m) kept its two plots alive, subscribed to the app's theme signal by
textual-plotext; the screen unsubscribes them when it closes.
"""

from __future__ import annotations

import gc
from pathlib import Path

import pytest
from textual.widget import Widget

from beavertui.tui.app import BeaverApp
from beavertui.tui.browser import BrowserScreen
from beavertui.tui.metrics_screen import MetricsScreen
from beavertui.tui.session_screen import SessionScreen
from tests.tui.conftest import wait_for

# 41 s in a serial run on a loaded 2-core machine: a parallel run starts it early
pytestmark = pytest.mark.slow


def live_widgets() -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, Widget))


async def test_switching_sessions_keeps_no_widget_alive(run_dir: Path) -> None:
    app = BeaverApp(lambda: BrowserScreen(run_dir, watch=False))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, BrowserScreen) and app.screen.loaded)
        browser = app.screen
        counts = []
        for _ in range(3):
            for row in range(2):
                await pilot.press("home", *["down"] * row, "enter")
                await pilot.pause()
                assert isinstance(app.screen, SessionScreen)
                await pilot.press("end", "tab", "escape")
                await pilot.pause()
                assert app.screen is browser
            counts.append(live_widgets())
        assert counts[-1] == counts[1], counts  # flat after the first round (which builds what stays)


async def test_moving_the_focus_keeps_no_widget_alive(run_dir: Path) -> None:
    app = BeaverApp(lambda: BrowserScreen(run_dir, watch=False))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, BrowserScreen) and app.screen.loaded)
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, SessionScreen)
        await pilot.press(*["tab"] * 6)  # once round the panes
        await pilot.pause()
        before = live_widgets()
        await pilot.press(*["tab"] * 6)
        await pilot.pause()
        assert live_widgets() == before


async def test_opening_the_metrics_screen_again_keeps_no_plot_alive(run_dir: Path) -> None:
    app = BeaverApp(lambda: BrowserScreen(run_dir, watch=False))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, BrowserScreen) and app.screen.loaded)
        counts = []
        for _ in range(3):
            await pilot.press("m")
            await wait_for(pilot, lambda: isinstance(app.screen, MetricsScreen) and bool(app.screen.series))
            await pilot.press("escape")
            await pilot.pause()
            counts.append(live_widgets())
        assert counts[2] == counts[1], counts
