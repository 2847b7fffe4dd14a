"""A session that stopped at a correct attempt slower than its gate is a failure in every TUI view: the
session header, the browser's stop and category columns, the compare label, badges, the replay summary.
The session is a real one (tests/gate_session.py); the loop's recorded stop reason is ``passed``.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from beavertui.engine.session.store import read_session
from beavertui.reports.palette import CATEGORY_COLOUR
from beavertui.service.catalog import read_row
from beavertui.tui.app import BeaverApp
from beavertui.tui.browser import BrowserScreen
from beavertui.tui.compare import side_label
from beavertui.tui.session_screen import SessionScreen
from beavertui.tui.style import STOP_COLOUR, badge
from beavertui.tui.summary import summary_lines
from tests.gate_session import gate_failure
from tests.tui.conftest import SIZE, wait_for


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return gate_failure(tmp_path_factory.mktemp("gate"))


def plain(text: object) -> str:
    con = Console(width=300, file=io.StringIO(), record=True)
    con.print(text)
    return con.export_text()


def test_the_browser_row_and_the_replay_summary(session: Path) -> None:
    row = read_row(session)
    assert (row.outcome, row.stop) == ("failed", "failed gate")
    assert "red" in STOP_COLOUR[row.stop]
    header, events, problem = read_session(session)
    assert header is not None
    ended = summary_lines(header, events, problem)[-1]
    assert ended == "  ended: failed gate after 2, best 0.02x < gate 0.70x"
    assert "passed" not in ended


def test_the_badge_of_a_correct_attempt_below_the_gate_reads_as_a_failure() -> None:
    text = badge("passed", False)
    assert "FAILED: BELOW GATE" in text.plain and "PASSED" not in text.plain
    assert str(text.style).split(" on ")[-1] != CATEGORY_COLOUR["passed"]
    assert "PASSED" in badge("passed", True).plain


def test_compare_side_label(session: Path) -> None:
    from beavertui.engine.session.state import fold

    header, events, _ = read_session(session)
    assert header is not None
    label = side_label(fold(header, events))
    assert "failed gate after 2" in label.plain and "passed" not in label.plain
    assert any("red" in str(span.style) for span in label.spans)


async def test_the_session_header_and_the_browser_column(session: Path) -> None:
    header, events, problem = read_session(session)
    assert header is not None
    for width in (SIZE[0], 160):
        app = BeaverApp(lambda: SessionScreen(header, events, problem=problem))
        async with app.run_test(size=(width, SIZE[1])) as pilot:
            await pilot.pause()
            top = plain(app.screen.query_one("#header").render()).splitlines()[0]
            assert "ended: failed gate after 2" in top and "passed" not in top
            if width == 160:
                assert "ended: failed gate after 2, best 0.02x < gate 0.70x" in top
    app = BeaverApp(lambda: BrowserScreen(session.parent, watch=False))
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, BrowserScreen) and app.screen.loaded)
        table = app.screen.query_one("#sessions")
        await wait_for(pilot, lambda: table.row_count == 1)
        row = table.row_text(0)
        assert " failed " in row and "failed gate" in row and "gate fail " in row and "passed" not in row
