"""`replay --follow` on screen: a followed file that grows past a session file's 64 MiB (here one line
that never gets its newline, sparse) stops the follow, and the screen says why in its header."""

from __future__ import annotations

from pathlib import Path

from beavertui.engine.session.store import MAX_SESSION_BYTES, SessionWriter, read_session
from beavertui.tui.app import BeaverApp
from beavertui.tui.session_screen import SessionScreen
from tests.tui.conftest import DATA, SIZE, wait_for


async def test_following_a_file_past_the_bound_stops_and_says_why(tmp_path: Path) -> None:
    header, events, _ = read_session(DATA / "degenerate.jsonl")
    assert header is not None
    path = tmp_path / "growing.jsonl"
    first = events[:3]
    with SessionWriter(path, header) as writer:
        for e in first:
            writer.append(e)
    app = BeaverApp(lambda: SessionScreen(header, first, follow=path))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, SessionScreen) and screen.view.following
        with open(path, "r+b") as fh:  # a line that grows past the bound and never ends
            fh.seek(0, 2)
            fh.write(b'{"kind":"reply","iteration":1,"content":"')
            fh.truncate(MAX_SESSION_BYTES + (1 << 20))
        await wait_for(pilot, lambda: screen.view.problem is not None)
        assert screen.view.problem == (
            f"{path}: grew past the {MAX_SESSION_BYTES:,} bytes a session file may have; stopped following it"
        )
        assert not screen.view.following
        await pilot.pause()
        shown = " ".join(screen.query_one("#header").render().plain.split())
        assert f"grew past the {MAX_SESSION_BYTES:,} bytes a session file may have" in shown
