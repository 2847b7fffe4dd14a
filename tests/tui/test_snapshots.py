"""SVG snapshots of every screen at a fixed 120x40 terminal (pytest-textual-snapshot).

Everything shown comes from recorded events (durations included), so the pictures are deterministic.
Update after an intended change with `pytest tests/tui/test_snapshots.py --snapshot-update` and look at
the report it writes before committing.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from textual.widgets import Input

from beavertui.commands.compare import load
from beavertui.tui.app import BeaverApp
from beavertui.tui.browser import BrowserScreen
from beavertui.tui.compare import CompareScreen
from tests.tui.conftest import DATA, OLD, SIZE, open_session, wait_for


async def _still(pilot) -> None:  # type: ignore[no-untyped-def]
    for box in pilot.app.screen.query(Input):
        box.cursor_blink = False
    await pilot.pause()


def test_collapse_at_iteration_2(snap_compare) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(
        open_session("degenerate"), terminal_size=SIZE, press=["home", "right"], run_before=_still
    )


def test_memcheck_and_raw_log(snap_compare) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(
        open_session("degenerate"), terminal_size=SIZE, press=["home", "r"], run_before=_still
    )


def test_whole_file_of_the_repair(snap_compare) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(
        open_session("degenerate"), terminal_size=SIZE, press=["d", "d", "d"], run_before=_still
    )


def test_stagnation_fired(snap_compare) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(open_session("stuck"), terminal_size=SIZE, run_before=_still)


def test_damaged_file(snap_compare) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(open_session("damaged"), terminal_size=SIZE, run_before=_still)


def test_help(snap_compare) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(open_session("quick"), terminal_size=SIZE, press=["question_mark"], run_before=_still)


def test_compare(snap_compare) -> None:  # type: ignore[no-untyped-def]
    a, b = load(DATA / "degenerate.jsonl"), load(DATA / "stuck.jsonl")
    assert snap_compare(
        BeaverApp(lambda: CompareScreen(a, b)), terminal_size=SIZE, press=["right"], run_before=_still
    )


def test_browser(snap_compare, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "run").mkdir()
    for name in ("degenerate", "stuck", "quick", "damaged"):
        shutil.copy(DATA / f"{name}.jsonl", tmp_path / "run" / f"{name}.jsonl")
        os.utime(tmp_path / "run" / f"{name}.jsonl", (OLD, OLD))
    monkeypatch.chdir(tmp_path)

    async def loaded(pilot) -> None:  # type: ignore[no-untyped-def]
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, BrowserScreen) and pilot.app.screen.loaded)
        await _still(pilot)

    app = BeaverApp(lambda: BrowserScreen(Path("run"), watch=False))
    assert snap_compare(app, terminal_size=SIZE, press=["6"], run_before=loaded)


def test_live_paused_after_one_step(snap_compare, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from beavertui.tui.live import LiveScreen
    from tests.tui.live_setup import live_parts

    task, model, toolchain, protocol = live_parts(tmp_path)
    app = BeaverApp(lambda: LiveScreen(task, model, toolchain, protocol, None, paused=True))

    async def one_step(pilot) -> None:  # type: ignore[no-untyped-def]
        screen = pilot.app.screen
        await wait_for(pilot, lambda: screen.control.waiting)
        await pilot.press("space")
        await wait_for(pilot, lambda: len(screen.view.state.verdicts) == 1 and screen.control.waiting)
        await _still(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=one_step)
