"""``browse`` and the batch summary say each folder they left out, one line each, as ``metrics`` does.

Before, both walked a run with the shared walk but asked it for nothing: a folder it could not read, or
one deeper than 64 folders, and the sessions in it, were missing from the table without a word (while
``metrics`` and ``export`` said ``left out PATH: why``).
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import pytest

from beavertui.batch.rundir import read_manifest
from beavertui.cli import main
from beavertui.commands.batch_overview import show_summary
from beavertui.engine.fileio import MAX_WALK_DEPTH
from beavertui.tui.app import BeaverApp
from beavertui.tui.browser import BrowserScreen
from tests.tui.conftest import SIZE, wait_for

ROOT = Path(__file__).resolve().parents[2]
H200 = ROOT / "tests" / "data" / "h200_batch_run"
PROTO = "scripted_alternate/iterative-K5-L3-H2-T0-p0.7-bd892733"


@pytest.fixture
def run(tmp_path: Path) -> tuple[Path, str]:
    """A copy of a real batch run with one more session 65 folders down: (the run, the line said)."""
    run = tmp_path / "run"
    shutil.copytree(H200, run)
    deep = run / "extra"
    for _ in range(MAX_WALK_DEPTH):
        deep = deep / "d"
    deep.mkdir(parents=True)
    shutil.copy(H200 / PROTO / "scan_01__s0.jsonl", deep / "scan_01__s0.jsonl")
    said = f"left out {deep}: folder not read: more than {MAX_WALK_DEPTH} folders below {run}"
    return run, said


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    try:
        code = main(list(args))
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_browse_says_each_folder_it_left_out(
    run: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    folder, said = run
    sessions = len(list((H200 / PROTO).glob("*.jsonl")))
    for fmt in ([], ["--format", "json"], ["--format", "csv"]):  # piped: one line a session; and tables
        code, out, err = _cli(capsys, "browse", str(folder), *fmt)
        assert code == 0, err
        assert err.splitlines() == [f"beavertui: {said}"], (fmt, err)
        assert sum(".jsonl" in line for line in out.splitlines()) == sessions, fmt


async def test_the_browser_screen_says_each_folder_it_left_out(run: tuple[Path, str]) -> None:
    folder, said = run
    app = BeaverApp(lambda: BrowserScreen(folder, watch=False))
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, BrowserScreen) and app.screen.loaded)
        screen = app.screen
        left = screen.query_one("#browser-left-out")
        assert left.display and str(left.render()).splitlines() == [said]
        assert "1 folder(s) left out" in str(screen.query_one("#browser-status").render())


def test_the_batch_summary_says_each_folder_it_left_out(
    run: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    folder, said = run
    manifest = read_manifest(folder)
    show_summary(manifest, folder, argparse.Namespace(format=None, json=False))
    out = capsys.readouterr()
    assert out.err.splitlines() == [f"beavertui: {said}"]
    assert "scripted:@alternate" in out.out
    show_summary(manifest, folder, argparse.Namespace(format=None, json=True))
    out = capsys.readouterr()
    assert json.loads(out.out)["left_out"] == [said.removeprefix("left out ")]
    assert out.err.splitlines() == [f"beavertui: {said}"]


def test_a_whole_folder_says_nothing_left_out(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _cli(capsys, "browse", str(H200))
    assert code == 0 and err == "" and out


@pytest.mark.parametrize(
    "argv", [(), ("--format", "json"), ("--format", "table")], ids=["piped", "json", "table"]
)
def test_browse_of_a_folder_without_sessions_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: tuple[str, ...]
) -> None:
    """Before: piped or as JSON, an empty folder (a mistyped run path) printed nothing at all; the screen
    says "no session files". Standard output keeps its one line a session (none)."""
    assert main(["browse", str(tmp_path), *argv]) == 0
    out = capsys.readouterr()
    assert out.err == f"beavertui: {tmp_path}: no session files\n"
    assert argv == ("--format", "table") or out.out == ""
