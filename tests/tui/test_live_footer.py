"""The live screen's footer at 80x24 shows every key of the loop: p, space, e, z and x.

Before: the footer listed the session screen's keys first (back, forward, first, last, diff mode, raw log,
sanitizer tool, search, help) and cut what did not fit, so at 80 columns none of the loop's keys showed,
and at 120 columns it ended in "p Paus". The loop's keys now come first, with short names (the help says
them in full), then help; every key the screen had is still bound."""

from __future__ import annotations

from pathlib import Path

from beavertui.tui.app import BeaverApp
from beavertui.tui.live import LiveScreen
from beavertui.tui.session_screen import SessionScreen
from tests.tui.conftest import open_session, wait_for
from tests.tui.live_setup import live_parts

LOOP = ("p Pause", "space Step", "e Edit", "z Sanitize", "x Stop")


def _footer(app: BeaverApp) -> str:
    return app.screen._compositor.render_strips()[-1].text


async def test_every_loop_key_shows_at_80_columns_and_works(tmp_path: Path) -> None:
    task, model, toolchain, protocol = live_parts(tmp_path)
    app = BeaverApp(lambda: LiveScreen(task, model, toolchain, protocol, None, paused=True))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        assert isinstance(screen, LiveScreen)
        await wait_for(pilot, lambda: screen.control.waiting)
        footer = _footer(app)
        for key in (*LOOP, "? Help"):
            assert key in footer, footer
        assert footer.index("x Stop") < footer.index("? Help")
        live_keys = set(screen.active_bindings)
        await pilot.press("space")  # one approved step, as the footer says
        await wait_for(pilot, lambda: len(screen.view.state.verdicts) == 1 and screen.control.waiting)
        await pilot.press("p")
        await wait_for(pilot, lambda: not screen.control.paused)
    # nothing of the session screen's keys was lost by listing the loop's first
    app = open_session("quick")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, SessionScreen)
        assert live_keys == set(app.screen.active_bindings) | {"p", "space", "e", "z", "x"}


async def test_at_120_columns_the_loop_keys_show_and_the_session_keys_follow(tmp_path: Path) -> None:
    task, model, toolchain, protocol = live_parts(tmp_path)
    app = BeaverApp(lambda: LiveScreen(task, model, toolchain, protocol, None, paused=True))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.screen
        await wait_for(pilot, lambda: screen.control.waiting)
        footer = _footer(app)
        assert all(key in footer for key in (*LOOP, "? Help", "← Back", "→ Forward")), footer


async def test_a_replayed_session_shows_its_help_key_at_80_columns() -> None:
    """The replay screen's footer listed stepping, diff, raw log and sanitizer keys first and, at 80
    columns, was cut at "s" before "? Help": nothing on screen said how to find the other keys."""
    app = open_session("quick")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, SessionScreen)
        footer = _footer(app)
        assert footer.startswith(" ? Help  ← Back  → Forward"), footer


async def test_a_paused_live_session_says_so_at_80_columns(tmp_path: Path) -> None:
    """The header's "[paused: space steps, p resumes]" came after task, model, protocol and "running…",
    and at 80 columns was cut to "[p": nothing on screen said the loop waited for a key."""
    task, model, toolchain, protocol = live_parts(tmp_path)
    app = BeaverApp(lambda: LiveScreen(task, model, toolchain, protocol, None, paused=True))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        assert isinstance(screen, LiveScreen)
        await wait_for(pilot, lambda: screen.control.waiting)
        await pilot.pause()
        top = screen.query_one("#header").render().plain.splitlines()[0]
        assert top.rstrip().endswith("· iteration 0/5   [paused: space steps, p resumes]"), top
        assert top.startswith(f" {task.id[:15]}")
