"""A correct attempt whose timing is pending (a gate applied after the run; the batch's timing lane has not
timed it) is neither passed nor below the gate: every view says "pending".

Before: its verdict (category passed, success false, no speedup) read as a gate failure everywhere but the
Speedup pane: "FAILED: BELOW GATE" in the header and the log, "2 below gate" in the timeline, "below gate"
in the stagnation track, "gate fail" in the browser's category column, and ``below_gate`` true in
``browse --format json``. The run is a real batch on the recorded H200 outcomes of tests/data/release_fresh
whose late timings fail on the machine's side, so its sessions end with their timing pending.
"""

from __future__ import annotations

import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from beavertui.cli import main
from beavertui.engine.errors import ToolchainError
from beavertui.engine.session.store import read_session
from beavertui.engine.toolchain.recorded import RecordedToolchain
from beavertui.service.catalog import read_row
from beavertui.tui.app import BeaverApp
from beavertui.tui.browser import BrowserScreen, cells
from beavertui.tui.session_screen import SessionScreen
from tests.tui.conftest import SIZE, wait_for

ROOT = Path(__file__).resolve().parents[2]
ARCHIVE = ROOT / "tests" / "data" / "release_fresh" / "release_fresh.tar.gz"
PROTOCOL = ROOT / "scripts" / "release-alternate.toml"


class _Failing(RecordedToolchain):
    """The recorded outcomes, but every late timing fails on the machine's side (a GPU taken away)."""

    def time_later(self, *args: Any, **kwargs: Any) -> Iterator[Any]:
        raise ToolchainError("GPU 0 failed: the probe kernel did not finish", source="gpu")


@pytest.fixture
def pending_session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    import beavertui.engine.toolchain.recorded as recorded

    with tarfile.open(ARCHIVE) as tar:
        tar.extractall(tmp_path / "release", filter="data")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(recorded, "RecordedToolchain", _Failing)
    assert main(["batch", "--protocol", str(PROTOCOL), "--corpus", str(tmp_path / "release"),
                 "--toolchain", f"recorded:{tmp_path / 'release' / 'sessions'}",
                 "--sessions-dir", str(tmp_path / "runs"), "--run-id", "cut", "--tasks", "cuda_110*",
                 "--quiet", "--no-cache"]) == 0  # fmt: skip
    (path,) = (tmp_path / "runs" / "cut").rglob("*__s*.jsonl")
    return path


def test_the_browser_row_says_pending_not_gate_fail(pending_session: Path) -> None:
    row = read_row(pending_session)
    assert row.stop == "timing pending" and row.timing_pending and not row.below_gate
    assert cells(row)[8][0] == "pending"


async def test_the_session_screen_says_pending_not_below_gate(pending_session: Path) -> None:
    header, events, problem = read_session(pending_session)
    assert header is not None
    app = BeaverApp(lambda: SessionScreen(header, events, problem=problem))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        assert screen.view.cursor == 2 and screen.view.attempt.verdict.timing_pending  # type: ignore[attr-defined]
        shown = "\n".join(strip.text for strip in screen._compositor.render_strips())
        assert "below gate" not in shown.lower()
        assert "TIMING PENDING" in screen.query_one("#header").render().plain
        assert "2 pending" in str(screen.query_one("#timeline").render())
        assert screen.query_one("#log").text.startswith(" TIMING PENDING\n── build")  # type: ignore[attr-defined]
        assert "track    wrong   timing pending" in screen.query_one("#stagnation").text  # type: ignore[attr-defined]


async def test_the_browser_opens_it_from_the_run(pending_session: Path) -> None:
    app = BeaverApp(lambda: BrowserScreen(pending_session.parents[2], watch=False))
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, BrowserScreen) and app.screen.loaded)
        assert "pending" in app.screen.query_one("#sessions").row_text(0)  # type: ignore[attr-defined]


def test_the_exported_page_says_pending_not_below_gate(pending_session: Path, tmp_path: Path) -> None:
    """The session's page (``export --html``) shows what the session screen shows: it read the pending
    verdict as "FAILED: BELOW GATE" and "2 below gate" too."""
    page = tmp_path / "s.html"
    assert main(["export", str(pending_session), "--html", "-o", str(page)]) == 0
    html = page.read_text()
    assert "below gate" not in html.lower()
    assert html.count("TIMING PENDING") == 2 and ">2 pending" in html and "— timing pending" in html
